/* oracle.c: the expected results of a sequence, computed by tandem.
 *
 * The map kinds replay the sequence one operation at a time on a tandem hash
 * table (kind map) or B+ tree (kind ordered) of u64 keys and values with the
 * KEEP_LAST policy, which is judge_map_insert's "replace the value"; an
 * insert is "new" when tandem's size grew. Sorts are tandem's stable radix
 * sort. tandem runs on one CPU thread: sequences are short, and the
 * candidate's children are forked from this process, which must not hold an
 * OpenMP thread pool.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tandem/tandem.h>

#include "jdg.h"

static tdm_ctx *oracle_ctx;

int jdg_oracle_init(char *err, size_t err_len) {
  tdm_ctx_opts o;
  memset(&o, 0, sizeof o);
  o.backend = TDM_BACKEND_CPU;
  o.cpu_threads = 1;
  if (tdm_ctx_create(&o, &oracle_ctx) != TDM_OK) {
    snprintf(err, err_len, "tandem: cannot create a CPU context: %s", tdm_last_error());
    return -1;
  }
  return 0;
}

void jdg_oracle_fini(void) {
  tdm_ctx_destroy(oracle_ctx);
  oracle_ctx = NULL;
}

/* The two structures behind one small interface. */
typedef struct model {
  jdg_kind kind;
  tdm_hash *h;
  tdm_btree *t;
} model;

static tdm_status model_create(model *m, jdg_kind kind) {
  memset(m, 0, sizeof *m);
  m->kind = kind;
  if (kind == JDG_MAP) {
    tdm_hash_opts o = {TDM_U64, TDM_U64, 0, 0.0, 0, TDM_DUP_KEEP_LAST};
    return tdm_hash_create(oracle_ctx, &o, &m->h);
  } else {
    tdm_btree_opts o = {TDM_U64, TDM_U64, TDM_DUP_KEEP_LAST};
    return tdm_btree_build(oracle_ctx, &o, NULL, NULL, 0, &m->t);
  }
}

static void model_destroy(model *m) {
  tdm_hash_destroy(m->h);
  tdm_btree_destroy(m->t);
}

static size_t model_size(const model *m) { return m->h ? tdm_hash_size(m->h) : tdm_btree_size(m->t); }

static tdm_status model_find(const model *m, const uint64_t *keys, uint64_t *vals, uint8_t *found, size_t n) {
  return m->h ? tdm_hash_find(m->h, keys, vals, found, n) : tdm_btree_find(m->t, keys, vals, found, n);
}

static tdm_status model_op(model *m, const jdg_op *op, uint64_t *w) {
  tdm_status s = TDM_OK;
  size_t before, erased, i;
  uint64_t v, cnt;
  uint8_t f;
  switch (op->code) {
  case JDG_OP_INSERT:
    before = model_size(m);
    s = m->h ? tdm_hash_insert(m->h, &op->a, &op->b, 1) : tdm_btree_insert(m->t, &op->a, &op->b, 1);
    w[0] = model_size(m) > before;
    break;
  case JDG_OP_FIND:
    s = model_find(m, &op->a, &v, &f, 1);
    w[0] = f;
    w[1] = f ? v : 0;
    break;
  case JDG_OP_ERASE:
    s = m->h ? tdm_hash_erase(m->h, &op->a, 1, &erased) : tdm_btree_erase(m->t, &op->a, 1, &erased);
    w[0] = erased;
    break;
  case JDG_OP_SIZE:
    w[0] = model_size(m);
    break;
  case JDG_OP_RANK:
    s = tdm_btree_rank(m->t, &op->a, &cnt, 1);
    w[0] = cnt;
    break;
  case JDG_OP_RANGE_COUNT:
    s = tdm_btree_range_count(m->t, &op->a, &op->b, &cnt, 1);
    w[0] = cnt;
    break;
  case JDG_OP_FIND_BULK:
    for (i = 0; i < op->n && s == TDM_OK; i++) {
      s = model_find(m, &op->arr[i], &v, &f, 1);
      w[2 * i] = f;
      w[2 * i + 1] = f ? v : 0;
    }
    break;
  default:
    s = TDM_ERR_INVALID_ARGUMENT;
    break;
  }
  return s;
}

static tdm_status sort_op(const jdg_op *op, uint64_t *w) {
  size_t i, n = op->n;
  tdm_status s;
  if (n == 0) return TDM_OK;
  if (op->code == JDG_OP_SORT_U32) {
    uint32_t *a = malloc(n * sizeof *a);
    if (!a) return TDM_ERR_OUT_OF_MEMORY;
    for (i = 0; i < n; i++) a[i] = (uint32_t)op->arr[i];
    s = tdm_sort(oracle_ctx, TDM_U32, a, n, 0);
    for (i = 0; i < n; i++) w[i] = a[i];
    free(a);
    return s;
  }
  memcpy(w, op->arr, n * sizeof *w);
  if (op->code == JDG_OP_SORT_U64) return tdm_sort(oracle_ctx, TDM_U64, w, n, 0);
  for (i = 0; i < n; i++) w[n + i] = i;
  return tdm_sort_pairs(oracle_ctx, TDM_U64, w, TDM_U64, w + n, n, 0);
}

int jdg_oracle_expect(jdg_kind kind, const jdg_seq *s, uint64_t **words_out, char *err, size_t err_len) {
  size_t nw = jdg_seq_words(s), i, at = 0;
  uint64_t *w = calloc(nw ? nw : 1, sizeof *w);
  model m;
  tdm_status st = TDM_OK;
  *words_out = NULL;
  if (!w) {
    snprintf(err, err_len, "out of memory for the expected results");
    return -1;
  }
  if (kind != JDG_SORT) {
    st = model_create(&m, kind);
    if (st != TDM_OK) {
      snprintf(err, err_len, "tandem: %s: %s", tdm_status_name(st), tdm_last_error());
      free(w);
      return -1;
    }
  }
  for (i = 0; i < s->n && st == TDM_OK; i++) {
    st = kind == JDG_SORT ? sort_op(&s->ops[i], w + at) : model_op(&m, &s->ops[i], w + at);
    at += jdg_op_words(&s->ops[i]);
  }
  if (kind != JDG_SORT) model_destroy(&m);
  if (st != TDM_OK) {
    snprintf(err, err_len, "tandem: %s: %s", tdm_status_name(st), tdm_last_error());
    free(w);
    return -1;
  }
  *words_out = w;
  return 0;
}

int jdg_op_agrees(const jdg_op *op, const uint64_t *e, const uint64_t *a) {
  size_t i;
  switch (op->code) {
  case JDG_OP_FIND:
    return e[0] == a[0] && (!e[0] || e[1] == a[1]);
  case JDG_OP_FIND_BULK:
    for (i = 0; i < op->n; i++)
      if (e[2 * i] != a[2 * i] || (e[2 * i] && e[2 * i + 1] != a[2 * i + 1])) return 0;
    return 1;
  default:
    return memcmp(e, a, jdg_op_words(op) * sizeof *e) == 0;
  }
}
