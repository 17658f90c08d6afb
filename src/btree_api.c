/*
 * btree_api.c: the public B+ tree calls. Arguments are checked once here
 * (NULL handles and arrays, enums, size overflow, memory space, overlap of
 * inputs with outputs), then the call goes through the tree's operation
 * table, taken from its context's backend when the tree was built.
 */
#include "backend.h"


/* One array argument of a call, for the overlap check. */
typedef struct arg {
  const char *name;
  const void *p;
  size_t bytes;
  int out;
} arg;

/* Fails when an output overlaps any other argument. */
static tdm_status check_overlap(const char *fn, const arg *a, int na) {
  int i, j;
  for (i = 0; i < na; i++)
    for (j = i + 1; j < na; j++)
      if ((a[i].out || a[j].out) && tdm__overlap(a[i].p, a[i].bytes, a[j].p, a[j].bytes))
        return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: %s and %s overlap", fn, a[i].name, a[j].name);
  return TDM_OK;
}

static tdm_status check_tree(const tdm_btree *t, const char *fn) {
  tdm__call_begin(); /* every entry on a tree checks it first */
  if (!t) return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: tree is NULL", fn);
  return TDM_OK;
}

/* Checks an optional output array: NULL is allowed (the output is not wanted). */
static tdm_status check_opt(const tdm_btree *t, const char *fn, const char *what, const void *p, size_t n,
                            size_t elem, size_t *bytes) {
  *bytes = 0;
  if (!p) return TDM_OK;
  return tdm__check_array(t->ctx, fn, what, p, n, elem, bytes);
}

tdm_status tdm_btree_build(tdm_ctx *ctx, const tdm_btree_opts *opts, const void *keys, const void *values,
                           size_t n, tdm_btree **out) {
  static const char fn[] = "tdm_btree_build";
  const tdm__btree_ops *ops;
  void *be;
  tdm_btree *t;
  tdm_status st;
  if ((st = tdm__check_ctx(ctx, fn)) != TDM_OK) return st;
  if (!opts) return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: opts is NULL", fn);
  if (!out) return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  if ((st = tdm__check_kv_opts(fn, opts->key_type, opts->value_type, (int)opts->on_duplicate)) != TDM_OK) return st;
  if ((st = tdm__check_array(ctx, fn, "keys", keys, n, tdm_type_size(opts->key_type), NULL)) != TDM_OK) return st;
  if ((st = tdm__check_array(ctx, fn, "values", values, n, tdm_type_size(opts->value_type), NULL)) != TDM_OK)
    return st;

  ops = ctx->be->btree;
  t = (tdm_btree *)tdm__ctx_handle_alloc(ctx, sizeof *t, ops->state_bytes, &be);
  if (!t) return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "%s: out of host memory for the tree handle", fn);
  t->ctx = ctx;
  t->ops = ops;
  t->be = be;
  t->key_type = opts->key_type;
  t->value_type = opts->value_type;
  t->dup = (int)opts->on_duplicate;
  t->kind = tdm__key_kind(opts->key_type);
  t->vkind = tdm__key_kind(opts->value_type);
  t->ks = (uint32_t)tdm_type_size(opts->key_type);
  t->vs = (uint32_t)tdm_type_size(opts->value_type);
  t->root = t->first_leaf = t->last_leaf = TDM_BT_NIL;
  st = ops->build(t, keys, values, n);
  if (st != TDM_OK) {
    tdm_btree_destroy(t);
    return st;
  }
  *out = t;
  return TDM_OK;
}

void tdm_btree_destroy(tdm_btree *t) {
  if (!t) return;
  t->ops->destroy(t);
  tdm__ctx_handle_free(t->ctx, t, sizeof *t, t->ops->state_bytes);
}

tdm_status tdm_btree_find(const tdm_btree *t, const void *keys, void *values_out, uint8_t *found_out, size_t n) {
  static const char fn[] = "tdm_btree_find";
  size_t kb, vb, fb;
  arg a[3];
  tdm_status st;
  if ((st = check_tree(t, fn)) != TDM_OK) return st;
  if ((st = tdm__check_array(t->ctx, fn, "keys", keys, n, t->ks, &kb)) != TDM_OK) return st;
  if ((st = check_opt(t, fn, "values_out", values_out, n, t->vs, &vb)) != TDM_OK) return st;
  if ((st = check_opt(t, fn, "found_out", found_out, n, 1, &fb)) != TDM_OK) return st;
  a[0].name = "keys", a[0].p = keys, a[0].bytes = kb, a[0].out = 0;
  a[1].name = "values_out", a[1].p = values_out, a[1].bytes = vb, a[1].out = 1;
  a[2].name = "found_out", a[2].p = found_out, a[2].bytes = fb, a[2].out = 1;
  if ((st = check_overlap(fn, a, 3)) != TDM_OK) return st;
  if (n == 0 || (!values_out && !found_out)) return TDM_OK;
  return t->ops->find(t, keys, values_out, found_out, n);
}

tdm_status tdm_btree_rank(const tdm_btree *t, const void *keys, uint64_t *rank_out, size_t n) {
  static const char fn[] = "tdm_btree_rank";
  size_t kb, rb;
  arg a[2];
  tdm_status st;
  if ((st = check_tree(t, fn)) != TDM_OK) return st;
  if ((st = tdm__check_array(t->ctx, fn, "keys", keys, n, t->ks, &kb)) != TDM_OK) return st;
  if ((st = tdm__check_array(t->ctx, fn, "rank_out", rank_out, n, 8, &rb)) != TDM_OK) return st;
  a[0].name = "keys", a[0].p = keys, a[0].bytes = kb, a[0].out = 0;
  a[1].name = "rank_out", a[1].p = rank_out, a[1].bytes = rb, a[1].out = 1;
  if ((st = check_overlap(fn, a, 2)) != TDM_OK) return st;
  if (n == 0) return TDM_OK;
  return t->ops->rank(t, keys, rank_out, n);
}

tdm_status tdm_btree_range_count(const tdm_btree *t, const void *lo, const void *hi, uint64_t *count_out,
                                 size_t n) {
  static const char fn[] = "tdm_btree_range_count";
  size_t lb, hb, cb;
  arg a[3];
  tdm_status st;
  if ((st = check_tree(t, fn)) != TDM_OK) return st;
  if ((st = tdm__check_array(t->ctx, fn, "lo", lo, n, t->ks, &lb)) != TDM_OK) return st;
  if ((st = tdm__check_array(t->ctx, fn, "hi", hi, n, t->ks, &hb)) != TDM_OK) return st;
  if ((st = tdm__check_array(t->ctx, fn, "count_out", count_out, n, 8, &cb)) != TDM_OK) return st;
  a[0].name = "lo", a[0].p = lo, a[0].bytes = lb, a[0].out = 0;
  a[1].name = "hi", a[1].p = hi, a[1].bytes = hb, a[1].out = 0;
  a[2].name = "count_out", a[2].p = count_out, a[2].bytes = cb, a[2].out = 1;
  if ((st = check_overlap(fn, a, 3)) != TDM_OK) return st;
  if (n == 0) return TDM_OK;
  return t->ops->range_count(t, lo, hi, count_out, n);
}

tdm_status tdm_btree_range(const tdm_btree *t, const void *lo, const void *hi, size_t n, uint64_t *offsets_out,
                           void *keys_out, void *values_out, size_t cap) {
  static const char fn[] = "tdm_btree_range";
  size_t lb, hb, ob, kb, vb, n1;
  arg a[5];
  tdm_status st;
  if ((st = check_tree(t, fn)) != TDM_OK) return st;
  if (!tdm__add_ok(n, 1, &n1))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: n = %zu leaves no room for n + 1 offsets", fn, n);
  if ((st = tdm__check_array(t->ctx, fn, "lo", lo, n, t->ks, &lb)) != TDM_OK) return st;
  if ((st = tdm__check_array(t->ctx, fn, "hi", hi, n, t->ks, &hb)) != TDM_OK) return st;
  if (n > 0 && (st = tdm__check_array(t->ctx, fn, "offsets_out", offsets_out, n1, 8, &ob)) != TDM_OK) return st;
  if (n == 0) ob = offsets_out ? 8 : 0;
  if ((st = check_opt(t, fn, "keys_out", keys_out, cap, t->ks, &kb)) != TDM_OK) return st;
  if ((st = check_opt(t, fn, "values_out", values_out, cap, t->vs, &vb)) != TDM_OK) return st;
  a[0].name = "lo", a[0].p = lo, a[0].bytes = lb, a[0].out = 0;
  a[1].name = "hi", a[1].p = hi, a[1].bytes = hb, a[1].out = 0;
  a[2].name = "offsets_out", a[2].p = offsets_out, a[2].bytes = ob, a[2].out = 1;
  a[3].name = "keys_out", a[3].p = keys_out, a[3].bytes = kb, a[3].out = 1;
  a[4].name = "values_out", a[4].p = values_out, a[4].bytes = vb, a[4].out = 1;
  if ((st = check_overlap(fn, a, 5)) != TDM_OK) return st;
  if (n == 0) {
    /* One offset, 0, when the caller gave room for it. */
    if (offsets_out) return t->ops->range(t, lo, hi, 0, offsets_out, keys_out, values_out, cap);
    return TDM_OK;
  }
  return t->ops->range(t, lo, hi, n, offsets_out, keys_out, values_out, cap);
}

tdm_status tdm_btree_insert(tdm_btree *t, const void *keys, const void *values, size_t n) {
  static const char fn[] = "tdm_btree_insert";
  tdm_status st;
  if ((st = check_tree(t, fn)) != TDM_OK) return st;
  if ((st = tdm__check_array(t->ctx, fn, "keys", keys, n, t->ks, NULL)) != TDM_OK) return st;
  if ((st = tdm__check_array(t->ctx, fn, "values", values, n, t->vs, NULL)) != TDM_OK) return st;
  if (n == 0) return TDM_OK;
  return t->ops->insert(t, keys, values, n);
}

tdm_status tdm_btree_erase(tdm_btree *t, const void *keys, size_t n, size_t *erased_out) {
  static const char fn[] = "tdm_btree_erase";
  size_t kb;
  tdm_status st;
  if ((st = check_tree(t, fn)) != TDM_OK) return st;
  if ((st = tdm__check_array(t->ctx, fn, "keys", keys, n, t->ks, &kb)) != TDM_OK) return st;
  if (erased_out && tdm__overlap(keys, kb, erased_out, sizeof *erased_out))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: keys and erased_out overlap", fn);
  if (n == 0) {
    if (erased_out) *erased_out = 0;
    return TDM_OK;
  }
  return t->ops->erase(t, keys, n, erased_out);
}

size_t tdm_btree_size(const tdm_btree *t) { return t ? (size_t)t->size : 0; }

unsigned tdm_btree_height(const tdm_btree *t) { return t ? t->height : 0; }

tdm_status tdm_btree_export(const tdm_btree *t, void *keys_out, void *values_out, size_t cap, size_t *n_out) {
  static const char fn[] = "tdm_btree_export";
  size_t kb, vb;
  arg a[2];
  tdm_status st;
  if ((st = check_tree(t, fn)) != TDM_OK) return st;
  if ((st = check_opt(t, fn, "keys_out", keys_out, cap, t->ks, &kb)) != TDM_OK) return st;
  if ((st = check_opt(t, fn, "values_out", values_out, cap, t->vs, &vb)) != TDM_OK) return st;
  a[0].name = "keys_out", a[0].p = keys_out, a[0].bytes = kb, a[0].out = 1;
  a[1].name = "values_out", a[1].p = values_out, a[1].bytes = vb, a[1].out = 1;
  if ((st = check_overlap(fn, a, 2)) != TDM_OK) return st;
  if (n_out) *n_out = (size_t)t->size;
  if (cap < t->size)
    return tdm__fail(TDM_ERR_CAPACITY, "%s: the tree holds %llu keys, but cap is %zu", fn,
                     (unsigned long long)t->size, cap);
  if (t->size == 0 || (!keys_out && !values_out)) return TDM_OK;
  return t->ops->export_all(t, keys_out, values_out);
}

tdm_status tdm_btree_validate(const tdm_btree *t) {
  static const char fn[] = "tdm_btree_validate";
  tdm_status st;
  if ((st = check_tree(t, fn)) != TDM_OK) return st;
  return t->ops->validate(t);
}
