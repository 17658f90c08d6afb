/*
 * test_btree.c: the B+ tree against a sorted-array model, unit tests of the
 * classic algorithm (splits, borrows, merges, root split and collapse), the
 * validator against deliberately broken trees, argument errors, and
 * all-or-nothing behaviour under injected allocation failures.
 *
 * The model is a sorted array of (key, value) with keys compared by
 * prop_cmp_keys (the contract's order, float totalOrder included), updated one
 * element at a time: the batch semantics of every duplicate policy equal
 * applying the batch in input order.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cpu/cpu.h" /* node layout of CPU trees */
#include "hooks/hooks.h"
#include "prop.h"

static const tdm_type all_types[] = {TDM_U32, TDM_U64, TDM_I32, TDM_I64, TDM_F32, TDM_F64};

/* ---- the model ------------------------------------------------------------ */

typedef struct model {
  tdm_type kt, vt;
  tdm_dup dup;
  size_t n, cap;
  uint64_t *k, *v; /* raw bits, zero-extended from 4-byte types */
} model;

static uint64_t get(tdm_type t, const void *a, size_t i) {
  if (tdm_type_size(t) == 4) return ((const uint32_t *)a)[i];
  return ((const uint64_t *)a)[i];
}
static void put(tdm_type t, void *a, size_t i, uint64_t x) {
  if (tdm_type_size(t) == 4) ((uint32_t *)a)[i] = (uint32_t)x;
  else ((uint64_t *)a)[i] = x;
}
static int cmp(tdm_type t, uint64_t a, uint64_t b) { return prop_cmp_keys(t, &a, &b); }

/* Lower bound of key x in the model. */
static size_t model_lb(const model *m, uint64_t x) {
  size_t lo = 0, hi = m->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (cmp(m->kt, m->k[mid], x) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static uint64_t combine(const model *m, uint64_t old, uint64_t nw) {
  switch (m->dup) {
  case TDM_DUP_KEEP_FIRST: return old;
  case TDM_DUP_KEEP_LAST: return nw;
  case TDM_DUP_SUM: return tdm_type_size(m->vt) == 4 ? (uint32_t)(old + nw) : old + nw;
  case TDM_DUP_MIN: return cmp(m->vt, nw, old) < 0 ? nw : old;
  case TDM_DUP_MAX: return cmp(m->vt, nw, old) > 0 ? nw : old;
  }
  return old;
}

static void model_insert(model *m, const void *keys, const void *vals, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) {
    uint64_t x = get(m->kt, keys, i), y = get(m->vt, vals, i);
    size_t p = model_lb(m, x);
    if (p < m->n && m->k[p] == x) {
      m->v[p] = combine(m, m->v[p], y);
      continue;
    }
    if (m->n == m->cap) {
      m->cap = m->cap ? 2 * m->cap : 64;
      m->k = (uint64_t *)realloc(m->k, m->cap * 8);
      m->v = (uint64_t *)realloc(m->v, m->cap * 8);
      cr_assert(m->k && m->v);
    }
    memmove(m->k + p + 1, m->k + p, (m->n - p) * 8);
    memmove(m->v + p + 1, m->v + p, (m->n - p) * 8);
    m->k[p] = x;
    m->v[p] = y;
    m->n++;
  }
}

static size_t model_erase(model *m, const void *keys, size_t n) {
  size_t i, erased = 0;
  for (i = 0; i < n; i++) {
    uint64_t x = get(m->kt, keys, i);
    size_t p = model_lb(m, x);
    if (p < m->n && m->k[p] == x) {
      memmove(m->k + p, m->k + p + 1, (m->n - p - 1) * 8);
      memmove(m->v + p, m->v + p + 1, (m->n - p - 1) * 8);
      m->n--;
      erased++;
    }
  }
  return erased;
}

static void model_free(model *m) {
  free(m->k);
  free(m->v);
  memset(m, 0, sizeof *m);
}

/* ---- checks of a tree against the model ----------------------------------- */

#define CHECK_OK(call)                                                                                      \
  do {                                                                                                      \
    tdm_status s_ = (call);                                                                                 \
    cr_assert(s_ == TDM_OK, "%s -> %s: %s (seed %llu)", #call, tdm_status_name(s_), tdm_last_error(),      \
              (unsigned long long)prop_seed());                                                             \
  } while (0)

static void check_contents(const tdm_btree *t, const model *m, const char *when) {
  size_t ks = tdm_type_size(m->kt), vs = tdm_type_size(m->vt), n_out = 0, i;
  char *keys = (char *)malloc(m->n * ks + 8), *vals = (char *)malloc(m->n * vs + 8);
  tdm_status s = tdm_btree_validate(t);
  cr_assert(s == TDM_OK, "%s: validate: %s (seed %llu)", when, tdm_last_error(), (unsigned long long)prop_seed());
  cr_assert_eq(tdm_btree_size(t), m->n, "%s: size %zu, model %zu", when, tdm_btree_size(t), m->n);
  CHECK_OK(tdm_btree_export(t, keys, vals, m->n, &n_out));
  cr_assert_eq(n_out, m->n);
  for (i = 0; i < m->n; i++) {
    cr_assert(get(m->kt, keys, i) == m->k[i], "%s: export key %zu: %llx, model %llx (seed %llu)", when, i,
              (unsigned long long)get(m->kt, keys, i), (unsigned long long)m->k[i],
              (unsigned long long)prop_seed());
    cr_assert(get(m->vt, vals, i) == m->v[i], "%s: export value %zu: %llx, model %llx (seed %llu)", when, i,
              (unsigned long long)get(m->vt, vals, i), (unsigned long long)m->v[i],
              (unsigned long long)prop_seed());
  }
  if (m->n == 0) cr_assert_eq(tdm_btree_height(t), 0);
  free(keys);
  free(vals);
}

/* Queries: find, rank, range_count and range over keys drawn from q. */
static void check_queries(const tdm_btree *t, const model *m, const void *q, const void *q2, size_t n) {
  size_t ks = tdm_type_size(m->kt), vs = tdm_type_size(m->vt), i, total = 0;
  char *vals = (char *)malloc(n * vs + 8), *rk, *rv;
  uint8_t *found = (uint8_t *)malloc(n + 1);
  uint64_t *rank = (uint64_t *)malloc((n + 1) * 8), *cnt = (uint64_t *)malloc((n + 1) * 8);
  uint64_t *off = (uint64_t *)malloc((n + 1) * 8);
  CHECK_OK(tdm_btree_find(t, q, vals, found, n));
  CHECK_OK(tdm_btree_rank(t, q, rank, n));
  CHECK_OK(tdm_btree_range_count(t, q, q2, cnt, n));
  for (i = 0; i < n; i++) {
    uint64_t x = get(m->kt, q, i), y = get(m->kt, q2, i);
    size_t p = model_lb(m, x), e;
    int hit = p < m->n && m->k[p] == x;
    cr_assert_eq(found[i], hit, "find %zu (key %llx): found %d, model %d (seed %llu)", i, (unsigned long long)x,
                 found[i], hit, (unsigned long long)prop_seed());
    cr_assert_eq(get(m->vt, vals, i), hit ? m->v[p] : 0, "find %zu: value (seed %llu)", i,
                 (unsigned long long)prop_seed());
    cr_assert_eq(rank[i], p, "rank %zu: %llu, model %zu (seed %llu)", i, (unsigned long long)rank[i], p,
                 (unsigned long long)prop_seed());
    e = model_lb(m, y);
    if (e < m->n && m->k[e] == y) e++;
    cr_assert_eq(cnt[i], cmp(m->kt, x, y) <= 0 ? e - p : 0, "range_count %zu (seed %llu)", i,
                 (unsigned long long)prop_seed());
    total += cnt[i];
  }
  rk = (char *)malloc(total * ks + 8);
  rv = (char *)malloc(total * vs + 8);
  if (total > 0) {
    tdm_status s = tdm_btree_range(t, q, q2, n, off, rk, rv, total - 1);
    cr_assert_eq(s, TDM_ERR_CAPACITY);
    cr_assert_eq(off[n], total);
  }
  CHECK_OK(tdm_btree_range(t, q, q2, n, off, rk, rv, total));
  cr_assert_eq(off[0], 0);
  for (i = 0; i < n; i++) {
    size_t p = model_lb(m, get(m->kt, q, i)), j;
    cr_assert_eq(off[i + 1] - off[i], cnt[i]);
    for (j = 0; j < cnt[i]; j++) {
      cr_assert_eq(get(m->kt, rk, off[i] + j), m->k[p + j], "range %zu hit %zu key", i, j);
      cr_assert_eq(get(m->vt, rv, off[i] + j), m->v[p + j], "range %zu hit %zu value", i, j);
    }
  }
  free(vals); free(found); free(rank); free(cnt); free(off); free(rk); free(rv);
}

/* ---- model-based property test --------------------------------------------- */

/* Draws n keys from a pool of pn keys (so batches hit existing keys and carry
 * duplicates), and n values. */
static void draw(prop_rng *r, const model *m, const void *pool, size_t pn, void *keys, void *vals, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) put(m->kt, keys, i, get(m->kt, pool, prop_below(r, pn)));
  if (vals) prop_fill(r, m->vt, vals, n, prop_below(r, 2) ? PROP_UNIFORM : PROP_FEW_DISTINCT);
}

static void run_model(tdm_backend b, tdm_type kt, tdm_type vt, tdm_dup dup, uint64_t case_id) {
  prop_rng r;
  model m;
  tdm_ctx *ctx = prop_ctx(b, (int)(case_id % 2) + 1);
  tdm_btree_opts o;
  tdm_btree *t = NULL;
  size_t pn, n, step, erased;
  char *pool, *keys, *vals, *q2;
  prop_dist pd;

  prop_rng_init(&r, case_id);
  memset(&m, 0, sizeof m);
  m.kt = kt;
  m.vt = vt;
  m.dup = dup;
  pn = (size_t[]){4, 40, 600, 5000}[prop_below(&r, 4)];
  pd = (prop_dist[]){PROP_UNIFORM, PROP_BOUNDARY, PROP_ZIPF}[prop_below(&r, 3)];
  pool = (char *)malloc(pn * 8);
  keys = (char *)malloc(8 * 4096);
  vals = (char *)malloc(8 * 4096);
  q2 = (char *)malloc(8 * 4096);
  prop_fill(&r, kt, pool, pn, pd);
  o.key_type = kt;
  o.value_type = vt;
  o.on_duplicate = dup;

  n = (size_t)prop_below(&r, 3000);
  draw(&r, &m, pool, pn, keys, vals, n);
  CHECK_OK(tdm_btree_build(ctx, &o, keys, vals, n, &t));
  model_insert(&m, keys, vals, n);
  check_contents(t, &m, "after build");

  for (step = 0; step < 24; step++) {
    int op = (int)prop_below(&r, 3);
    n = (size_t)prop_below(&r, prop_below(&r, 4) ? 300 : 4000) + 1;
    if (op == 0) {
      draw(&r, &m, pool, pn, keys, vals, n);
      CHECK_OK(tdm_btree_insert(t, keys, vals, n));
      model_insert(&m, keys, vals, n);
      check_contents(t, &m, "after insert");
    } else if (op == 1) {
      draw(&r, &m, pool, pn, keys, NULL, n);
      CHECK_OK(tdm_btree_erase(t, keys, n, &erased));
      cr_assert_eq(erased, model_erase(&m, keys, n), "erased count (seed %llu)", (unsigned long long)prop_seed());
      check_contents(t, &m, "after erase");
    } else {
      size_t i;
      draw(&r, &m, pool, pn, keys, NULL, n);
      draw(&r, &m, pool, pn, q2, NULL, n);
      /* Some queries off the pool: uniform keys, mostly misses. */
      for (i = 0; i < n; i += 3) prop_fill(&r, kt, keys + i * tdm_type_size(kt), 1, PROP_UNIFORM);
      check_queries(t, &m, keys, q2, n);
    }
  }
  tdm_btree_destroy(t);
  tdm_ctx_destroy(ctx);
  model_free(&m);
  free(pool); free(keys); free(vals); free(q2);
}

static void run_models_for(tdm_type kt) {
  tdm_backend bs[2];
  int nb = prop_backends(bs), bi, d;
  uint64_t id = (uint64_t)kt * 1000;
  for (bi = 0; bi < nb; bi++)
    for (d = 0; d <= TDM_DUP_MAX; d++) {
      int rep;
      for (rep = 0; rep < 3; rep++) {
        tdm_type vt = all_types[(d + rep + (int)kt) % 6];
        if (d == TDM_DUP_SUM && (vt == TDM_F32 || vt == TDM_F64)) vt = TDM_U32;
        run_model(bs[bi], kt, vt, (tdm_dup)d, id++);
      }
    }
}

Test(btree_model, u32) { run_models_for(TDM_U32); }

/* The query loops of every instruction-set level (the AVX2 and scalar ones
 * never run otherwise on an AVX-512 machine) against the model, through the
 * hook that caps the level trees get at build. */
Test(btree_model, queries_every_isa) {
  static const char *const names[] = {"scalar", "AVX2", "AVX-512"};
  int limit, seen = 0;
  for (limit = 0; limit <= 2; limit++) {
    int level = tdm_test_btree_isa_limit(limit), k;
    cr_assert(level >= 0 && level <= 2 - limit, "limit %d gave level %d", limit, level);
    if (seen & (1 << level)) continue; /* a level this CPU lacks repeats a lower one */
    seen |= 1 << level;
    cr_log_info("B-tree queries checked at level %s", names[level]);
    for (k = 0; k < 6; k++)
      run_model(TDM_BACKEND_CPU, all_types[k], all_types[(k + 1) % 6], (tdm_dup)(k % (TDM_DUP_MAX + 1)),
                0x15A0000ull + (uint64_t)level * 100 + (uint64_t)k);
  }
  tdm_test_btree_isa_limit(0);
  cr_assert(seen & 1, "the scalar level never ran");
}
/* A bulk load makes the same bytes at every instruction-set level: the
 * AVX-512 leaf fill against the shared per-leaf code (scalar level), for
 * every key and value type, sizes around the leaf and parent boundaries, one
 * and two threads (130001 keys make two parts where two cores are free, and
 * a parent whose leaves fall in both), and inputs
 * whose duplicates sit anywhere in a leaf or across two (which must send the
 * build to its reduction pass at both levels alike). */
static void build_at(tdm_ctx *ctx, const tdm_btree_opts *o, const void *k, const void *v, size_t n, int limit,
                     tdm_btree **t) {
  cr_assert(tdm_test_btree_isa_limit(limit) >= 0);
  CHECK_OK(tdm_btree_build(ctx, o, k, v, n, t));
  CHECK_OK(tdm_btree_validate(*t));
}

Test(btree_build, same_nodes_at_every_isa) {
  static const size_t sizes[] = {1, 2, 7, 8, 9, 15, 16, 17, 29, 113, 224, 225, 3587, 3600, 50001, 130001};
  static const prop_dist dists[] = {PROP_UNIFORM, PROP_FEW_DISTINCT, PROP_SORTED, PROP_BOUNDARY};
  int top = tdm_test_btree_isa_limit(0), th, kt, vt, si, di;
  char *keys = (char *)malloc(8 * 130001), *vals = (char *)malloc(8 * 130001);
  cr_log_info("leaf fills compared: level %d against the scalar one", top);
  for (th = 1; th <= 2; th++) {
    tdm_ctx *ctx = prop_ctx(TDM_BACKEND_CPU, th);
    for (kt = 0; kt < 6; kt++)
      for (vt = 0; vt < 6; vt++)
        for (si = 0; si < (int)(sizeof sizes / sizeof *sizes); si++)
          for (di = 0; di < 4; di++) {
            tdm_btree_opts o = {all_types[kt], all_types[vt], (tdm_dup)((kt + vt + di) % (TDM_DUP_MAX + 1))};
            tdm_btree *a = NULL, *b = NULL;
            const tdm__btree_cpu *ca, *cb;
            size_t n = sizes[si];
            prop_rng r;
            if (o.on_duplicate == TDM_DUP_SUM && (all_types[vt] == TDM_F32 || all_types[vt] == TDM_F64))
              o.on_duplicate = TDM_DUP_MIN;
            /* each large size for a sixth of the cases; two parts need two threads */
            if (n > 3600 && ((kt + vt + di) % 6 != (n > 50001) || (n > 50001 && th == 1))) continue;
            prop_rng_init(&r, 0xF111000ull + (uint64_t)(((th * 6 + kt) * 6 + vt) * 16 + si) * 4 + (uint64_t)di);
            prop_fill(&r, all_types[kt], keys, n, dists[di]);
            prop_fill(&r, all_types[vt], vals, n, PROP_UNIFORM);
            build_at(ctx, &o, keys, vals, n, 2, &a);
            build_at(ctx, &o, keys, vals, n, 0, &b);
            ca = tdm__btree_cpu_of(a);
            cb = tdm__btree_cpu_of(b);
            cr_assert(tdm_btree_size(a) == tdm_btree_size(b) && a->height == b->height && a->root == b->root &&
                          ca->used == cb->used,
                      "shape differs: %zu keys (%s) into %s -> %s, %d threads", n, prop_dist_name(dists[di]),
                      tdm_type_name(all_types[kt]), tdm_type_name(all_types[vt]), th);
            cr_assert(memcmp(ca->nodes, cb->nodes, ca->used * sizeof(tdm__bt_node)) == 0,
                      "nodes differ: %zu keys (%s) into %s -> %s, %d threads", n, prop_dist_name(dists[di]),
                      tdm_type_name(all_types[kt]), tdm_type_name(all_types[vt]), th);
            tdm_btree_destroy(a);
            tdm_btree_destroy(b);
          }
    tdm_ctx_destroy(ctx);
  }
  tdm_test_btree_isa_limit(0);
  free(keys);
  free(vals);
}

Test(btree_model, u64) { run_models_for(TDM_U64); }
Test(btree_model, i32) { run_models_for(TDM_I32); }
Test(btree_model, i64) { run_models_for(TDM_I64); }
Test(btree_model, f32) { run_models_for(TDM_F32); }
Test(btree_model, f64) { run_models_for(TDM_F64); }

/* ---- interview-grade unit tests (CPU, u64 keys) ---------------------------- */

static tdm_ctx *cpu_ctx(void) { return prop_ctx(TDM_BACKEND_CPU, 1); }

static tdm_btree *build_u64(tdm_ctx *ctx, const uint64_t *k, size_t n, tdm_dup dup) {
  tdm_btree_opts o = {TDM_U64, TDM_U64, dup};
  tdm_btree *t = NULL;
  CHECK_OK(tdm_btree_build(ctx, &o, k, k, n, &t));
  return t;
}

static void insert1(tdm_btree *t, uint64_t k) {
  uint64_t v = k * 10;
  CHECK_OK(tdm_btree_insert(t, &k, &v, 1));
  CHECK_OK(tdm_btree_validate(t));
}
static int erase1(tdm_btree *t, uint64_t k) {
  size_t e = 9;
  CHECK_OK(tdm_btree_erase(t, &k, 1, &e));
  CHECK_OK(tdm_btree_validate(t));
  return (int)e;
}
static int has(const tdm_btree *t, uint64_t k) {
  uint8_t f = 7;
  CHECK_OK(tdm_btree_find(t, &k, NULL, &f, 1));
  return f;
}
static const tdm__bt_node *node(const tdm_btree *t, uint32_t i) { return &tdm__btree_cpu_of(t)->nodes[i]; }

Test(btree_unit, insert_ascending_then_descending) {
  tdm_ctx *ctx = cpu_ctx();
  tdm_btree *a = build_u64(ctx, NULL, 0, TDM_DUP_KEEP_FIRST), *d = build_u64(ctx, NULL, 0, TDM_DUP_KEEP_FIRST);
  uint64_t i, N = 3000;
  unsigned last_h = 0;
  cr_assert_eq(tdm_btree_height(a), 0);
  for (i = 1; i <= N; i++) {
    insert1(a, i);
    insert1(d, N + 1 - i);
    cr_assert(tdm_btree_height(a) >= last_h, "height never shrinks on insert");
    last_h = tdm_btree_height(a);
  }
  cr_assert_eq(tdm_btree_size(a), N);
  cr_assert_eq(tdm_btree_size(d), N);
  for (i = 1; i <= N; i++) cr_assert(has(a, i) && has(d, i));
  cr_assert(!has(a, 0) && !has(a, N + 1));
  cr_assert(tdm_btree_height(a) >= 3);
  tdm_btree_destroy(a);
  tdm_btree_destroy(d);
  tdm_ctx_destroy(ctx);
}

Test(btree_unit, delete_every_other_then_to_empty) {
  tdm_ctx *ctx = cpu_ctx();
  uint64_t k[2000], i;
  tdm_btree *t;
  for (i = 0; i < 2000; i++) k[i] = i;
  t = build_u64(ctx, k, 2000, TDM_DUP_KEEP_FIRST);
  for (i = 0; i < 2000; i += 2) cr_assert_eq(erase1(t, i), 1);
  cr_assert_eq(tdm_btree_size(t), 1000);
  for (i = 0; i < 2000; i++) cr_assert_eq(has(t, i), (int)(i & 1));
  cr_assert_eq(erase1(t, 0), 0, "erasing a missing key erases nothing");
  for (i = 1; i < 2000; i += 2) cr_assert_eq(erase1(t, i), 1);
  cr_assert_eq(tdm_btree_size(t), 0);
  cr_assert_eq(tdm_btree_height(t), 0);
  insert1(t, 42); /* an emptied tree grows again */
  cr_assert_eq(tdm_btree_height(t), 1);
  tdm_btree_destroy(t);
  tdm_ctx_destroy(ctx);
}

Test(btree_unit, root_split_and_collapse) {
  tdm_ctx *ctx = cpu_ctx();
  tdm_btree *t = build_u64(ctx, NULL, 0, TDM_DUP_KEEP_FIRST);
  const tdm__bt_node *r;
  uint64_t i;
  for (i = 1; i <= 16; i++) insert1(t, i);
  cr_assert_eq(tdm_btree_height(t), 1, "16 keys fit one leaf");
  insert1(t, 17);
  cr_assert_eq(tdm_btree_height(t), 2, "the 17th key splits the root leaf");
  r = node(t, t->root);
  cr_assert_eq(r->count, 2);
  cr_assert_eq(node(t, r->u.in.child[0])->count, 9);
  cr_assert_eq(node(t, r->u.in.child[1])->count, 8);
  cr_assert_eq(r->key[0], 9, "separator = last key of the left half");
  /* Erase down: the two leaves merge and the root collapses to a leaf. */
  for (i = 17; i >= 10; i--) erase1(t, i);
  cr_assert_eq(tdm_btree_height(t), 1, "root collapse after the merge");
  cr_assert_eq(tdm_btree_size(t), 9);
  tdm_btree_destroy(t);
  tdm_ctx_destroy(ctx);
}

/* 28 keys 0..27 bulk-load into two leaves of 14 (a bulk load leaves two
 * slots free per node) under one root. */
static tdm_btree *two_leaves(tdm_ctx *ctx) {
  uint64_t k[28], i;
  tdm_btree *t;
  const tdm__bt_node *r;
  for (i = 0; i < 28; i++) k[i] = i;
  t = build_u64(ctx, k, 28, TDM_DUP_KEEP_FIRST);
  cr_assert_eq(tdm_btree_height(t), 2);
  r = node(t, t->root);
  cr_assert_eq(r->count, 2);
  cr_assert_eq(node(t, r->u.in.child[0])->count, 14);
  cr_assert_eq(node(t, r->u.in.child[1])->count, 14);
  return t;
}

Test(btree_unit, borrow_from_left) {
  tdm_ctx *ctx = cpu_ctx();
  tdm_btree *t = two_leaves(ctx);
  const tdm__bt_node *r;
  uint64_t i;
  for (i = 14; i <= 20; i++) erase1(t, i); /* the right leaf drops to 7 */
  r = node(t, t->root);
  cr_assert_eq(r->count, 2);
  cr_assert_eq(node(t, r->u.in.child[0])->count, 13, "the left sibling lent its last key");
  cr_assert_eq(node(t, r->u.in.child[1])->count, 8);
  cr_assert_eq(node(t, r->u.in.child[1])->key[0], 13);
  cr_assert_eq(r->key[0], 12, "separator moved down to the left's new last key");
  tdm_btree_destroy(t);
  tdm_ctx_destroy(ctx);
}

Test(btree_unit, borrow_from_right) {
  tdm_ctx *ctx = cpu_ctx();
  tdm_btree *t = two_leaves(ctx);
  const tdm__bt_node *r;
  uint64_t i;
  for (i = 0; i <= 6; i++) erase1(t, i); /* the left leaf drops to 7 */
  r = node(t, t->root);
  cr_assert_eq(node(t, r->u.in.child[0])->count, 8);
  cr_assert_eq(node(t, r->u.in.child[1])->count, 13, "the right sibling lent its first key");
  cr_assert_eq(r->key[0], 14, "separator = the borrowed key");
  tdm_btree_destroy(t);
  tdm_ctx_destroy(ctx);
}

Test(btree_unit, merge_siblings) {
  tdm_ctx *ctx = cpu_ctx();
  tdm_btree *t = two_leaves(ctx);
  uint64_t i;
  for (i = 0; i < 6; i++) erase1(t, i);   /* left: 8 */
  for (i = 14; i < 20; i++) erase1(t, i); /* right: 8 */
  cr_assert_eq(tdm_btree_height(t), 2);
  erase1(t, 20); /* right: 7, left cannot lend: merge, then root collapse */
  cr_assert_eq(tdm_btree_height(t), 1);
  cr_assert_eq(node(t, t->root)->count, 15);
  tdm_btree_destroy(t);
  tdm_ctx_destroy(ctx);
}

Test(btree_unit, inner_borrow_and_merge) {
  /* A four-level tree thinned out from both ends exercises inner-node
   * borrows and merges; validate after every erase checks each step. */
  tdm_ctx *ctx = cpu_ctx();
  uint64_t k[5000], i;
  tdm_btree *t;
  for (i = 0; i < 5000; i++) k[i] = i;
  t = build_u64(ctx, k, 5000, TDM_DUP_KEEP_FIRST);
  cr_assert_eq(tdm_btree_height(t), 4, "358 leaves, 23 and 2 inner nodes, a root");
  for (i = 0; i < 2500; i++) {
    erase1(t, i);
    erase1(t, 4999 - i);
  }
  cr_assert_eq(tdm_btree_size(t), 0);
  tdm_btree_destroy(t);
  tdm_ctx_destroy(ctx);
}

Test(btree_unit, ranges_across_leaves) {
  tdm_ctx *ctx = cpu_ctx();
  uint64_t k[500], i, lo[4] = {10, 11, 600, 50}, hi[4] = {500, 11, 700, 40}, off[5], cnt[4];
  uint64_t out[1000];
  tdm_btree *t;
  for (i = 0; i < 500; i++) k[i] = 2 * i; /* evens 0..998 */
  t = build_u64(ctx, k, 500, TDM_DUP_KEEP_FIRST);
  CHECK_OK(tdm_btree_range_count(t, lo, hi, cnt, 4));
  cr_assert_eq(cnt[0], 246, "10..500 inclusive has 246 evens");
  cr_assert_eq(cnt[1], 0, "an empty range");
  cr_assert_eq(cnt[2], 51);
  cr_assert_eq(cnt[3], 0, "lo > hi counts 0");
  CHECK_OK(tdm_btree_range(t, lo, hi, 4, off, out, NULL, 1000));
  cr_assert_eq(off[4], 297);
  for (i = 0; i < 246; i++) cr_assert_eq(out[i], 10 + 2 * i);
  for (i = 0; i < 51; i++) cr_assert_eq(out[246 + i], 600 + 2 * i);
  cr_assert_eq(tdm_btree_range(t, lo, hi, 4, off, out, NULL, 296), TDM_ERR_CAPACITY);
  cr_assert_eq(off[1], 246, "offsets are filled on TDM_ERR_CAPACITY");
  tdm_btree_destroy(t);
  tdm_ctx_destroy(ctx);
}

Test(btree_unit, duplicate_policies) {
  tdm_ctx *ctx = cpu_ctx();
  uint64_t k[3] = {5, 5, 5}, v[3] = {2, 1, 3}, k2[2] = {5, 5}, v2[2] = {0, 9}, got;
  uint64_t expect_build[5] = {2, 3, 6, 1, 3}, expect_ins[5] = {2, 9, 15, 0, 9};
  int d;
  for (d = 0; d <= TDM_DUP_MAX; d++) {
    tdm_btree_opts o = {TDM_U64, TDM_U64, (tdm_dup)d};
    tdm_btree *t;
    CHECK_OK(tdm_btree_build(ctx, &o, k, v, 3, &t));
    cr_assert_eq(tdm_btree_size(t), 1);
    CHECK_OK(tdm_btree_find(t, k, &got, NULL, 1));
    cr_assert_eq(got, expect_build[d], "policy %d on build", d);
    CHECK_OK(tdm_btree_insert(t, k2, v2, 2));
    CHECK_OK(tdm_btree_find(t, k, &got, NULL, 1));
    cr_assert_eq(got, expect_ins[d], "policy %d on insert", d);
    tdm_btree_destroy(t);
  }
  tdm_ctx_destroy(ctx);
}

Test(btree_unit, float_edge_keys) {
  /* -NaN < -inf < -0.0 < +0.0 < +inf < +NaN, NaN payloads distinct keys. */
  tdm_ctx *ctx = cpu_ctx();
  uint64_t keys[8] = {0x7ff8000000000001ull, 0x0000000000000000ull, 0xfff8000000000000ull, 0x7ff0000000000000ull,
                      0x8000000000000000ull, 0xfff0000000000000ull, 0x7ff8000000000000ull, 0x3ff0000000000000ull};
  uint64_t expect[8] = {0xfff8000000000000ull, 0xfff0000000000000ull, 0x8000000000000000ull, 0x0000000000000000ull,
                        0x3ff0000000000000ull, 0x7ff0000000000000ull, 0x7ff8000000000000ull, 0x7ff8000000000001ull};
  uint64_t out[8], rank;
  size_t n;
  tdm_btree_opts o = {TDM_F64, TDM_U64, TDM_DUP_KEEP_FIRST};
  tdm_btree *t;
  CHECK_OK(tdm_btree_build(ctx, &o, keys, keys, 8, &t));
  CHECK_OK(tdm_btree_export(t, out, NULL, 8, &n));
  cr_assert_eq(n, 8);
  cr_assert_arr_eq(out, expect, sizeof out);
  CHECK_OK(tdm_btree_rank(t, &expect[3], &rank, 1));
  cr_assert_eq(rank, 3, "+0.0 ranks after -NaN, -inf, -0.0");
  tdm_btree_destroy(t);
  tdm_ctx_destroy(ctx);
}

Test(btree_unit, all_ones_key) {
  /* The all-ones key equals the padding of unused slots: it must still be
   * found only when stored. */
  tdm_ctx *ctx = cpu_ctx();
  uint64_t k[3] = {1, 2, UINT64_MAX}, q = UINT64_MAX, v, r;
  uint8_t f;
  tdm_btree *t = build_u64(ctx, k, 2, TDM_DUP_KEEP_FIRST);
  CHECK_OK(tdm_btree_find(t, &q, &v, &f, 1));
  cr_assert_eq(f, 0);
  CHECK_OK(tdm_btree_rank(t, &q, &r, 1));
  cr_assert_eq(r, 2);
  tdm_btree_destroy(t);
  t = build_u64(ctx, k, 3, TDM_DUP_KEEP_FIRST);
  CHECK_OK(tdm_btree_find(t, &q, &v, &f, 1));
  cr_assert_eq(f, 1);
  cr_assert_eq(v, UINT64_MAX);
  tdm_btree_destroy(t);
  tdm_ctx_destroy(ctx);
}

/* ---- validate against broken trees ---------------------------------------- */

static void corrupt_case(int what, const char *invariant) {
  tdm_ctx *ctx = cpu_ctx();
  uint64_t k[3000], i;
  tdm_btree *t;
  tdm_status s;
  for (i = 0; i < 3000; i++) k[i] = i * 3;
  t = build_u64(ctx, k, 3000, TDM_DUP_KEEP_FIRST);
  for (i = 0; i < 200; i++) insert1(t, i * 3 + 1); /* some non-full nodes */
  CHECK_OK(tdm_btree_validate(t));
  CHECK_OK(tdm_test_btree_corrupt(t, what));
  s = tdm_btree_validate(t);
  cr_assert_eq(s, TDM_ERR_CORRUPT, "corruption %d not detected", what);
  cr_assert(strstr(tdm_last_error(), invariant) != NULL, "corruption %d: expected \"%s\" in \"%s\"", what,
            invariant, tdm_last_error());
  cr_assert(strstr(tdm_last_error(), "node ") != NULL, "the message names the node: %s", tdm_last_error());
  tdm_btree_destroy(t);
  tdm_ctx_destroy(ctx);
}

Test(btree_corrupt, key_order) { corrupt_case(1, "key order"); }
Test(btree_corrupt, separator_bounds) { corrupt_case(2, "separator bounds"); }
Test(btree_corrupt, subtree_count) { corrupt_case(3, "subtree count"); }
Test(btree_corrupt, leaf_chain) { corrupt_case(4, "leaf chain"); }
Test(btree_corrupt, fill) { corrupt_case(5, "fill"); }
Test(btree_corrupt, reachable_twice) { corrupt_case(6, "reachable twice"); }
Test(btree_corrupt, level) { corrupt_case(7, "level"); }
Test(btree_corrupt, padding) { corrupt_case(8, "padding"); }

/* ---- argument errors --------------------------------------------------------- */

Test(btree_errors, arguments) {
  tdm_ctx *ctx = cpu_ctx();
  uint64_t k[4] = {1, 2, 3, 4}, v[4] = {0}, r[4], off[5];
  uint8_t f[4];
  size_t n;
  tdm_btree_opts o = {TDM_U64, TDM_U64, TDM_DUP_KEEP_FIRST}, bad;
  tdm_btree *t = NULL;
  cr_assert_eq(tdm_btree_build(NULL, &o, k, v, 4, &t), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_btree_build(ctx, NULL, k, v, 4, &t), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_btree_build(ctx, &o, k, v, 4, NULL), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_btree_build(ctx, &o, NULL, v, 4, &t), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_btree_build(ctx, &o, k, NULL, 4, &t), TDM_ERR_INVALID_ARGUMENT);
  bad = o;
  bad.key_type = (tdm_type)0;
  cr_assert_eq(tdm_btree_build(ctx, &bad, k, v, 4, &t), TDM_ERR_INVALID_ARGUMENT);
  bad = o;
  bad.on_duplicate = (tdm_dup)9;
  cr_assert_eq(tdm_btree_build(ctx, &bad, k, v, 4, &t), TDM_ERR_INVALID_ARGUMENT);
  bad = o;
  bad.on_duplicate = TDM_DUP_SUM;
  bad.value_type = TDM_F32;
  cr_assert_eq(tdm_btree_build(ctx, &bad, k, v, 4, &t), TDM_ERR_UNSUPPORTED);
  cr_assert_null(t, "no tree on failure");
  CHECK_OK(tdm_btree_build(ctx, &o, NULL, NULL, 0, &t)); /* n == 0 with NULL arrays */
  cr_assert_eq(tdm_btree_size(t), 0);
  CHECK_OK(tdm_btree_insert(t, k, v, 4));
  cr_assert_eq(tdm_btree_find(NULL, k, v, f, 4), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_btree_find(t, NULL, v, f, 4), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_btree_find(t, k, k, f, 4), TDM_ERR_INVALID_ARGUMENT, "keys overlap values_out");
  cr_assert_eq(tdm_btree_rank(t, k, (uint64_t *)k, 4), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_btree_rank(t, k, NULL, 4), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_btree_range_count(t, k, k, (uint64_t *)k + 1, 2), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_btree_range(t, k, k, 4, off, r, r, 4), TDM_ERR_INVALID_ARGUMENT, "outputs overlap");
  cr_assert_eq(tdm_btree_range(t, k, k, 4, NULL, r, NULL, 4), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_btree_insert(t, k, NULL, 4), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_btree_erase(NULL, k, 4, &n), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_btree_export(t, r, NULL, 3, &n), TDM_ERR_CAPACITY);
  cr_assert_eq(n, 4);
  cr_assert_eq(tdm_btree_validate(NULL), TDM_ERR_INVALID_ARGUMENT);
  CHECK_OK(tdm_btree_find(t, NULL, NULL, NULL, 0));
  CHECK_OK(tdm_btree_range(t, NULL, NULL, 0, off, NULL, NULL, 0));
  cr_assert_eq(off[0], 0);
  CHECK_OK(tdm_btree_erase(t, NULL, 0, &n));
  cr_assert_eq(n, 0);
  cr_assert_eq(tdm_btree_size(NULL), 0);
  cr_assert_eq(tdm_btree_height(NULL), 0);
  tdm_btree_destroy(NULL);
  tdm_btree_destroy(t);
  tdm_ctx_destroy(ctx);
}

/* ---- all-or-nothing under allocation failure --------------------------------- */

Test(btree_oom, failed_calls_leave_the_tree_intact) {
  tdm_ctx *ctx = cpu_ctx();
  model m;
  uint64_t k[4000], v[4000], i;
  prop_rng r;
  tdm_btree *t = NULL;
  long fail;
  int ok;
  tdm_btree_opts o = {TDM_U64, TDM_U64, TDM_DUP_SUM};
  prop_rng_init(&r, 77);
  memset(&m, 0, sizeof m);
  m.kt = TDM_U64;
  m.vt = TDM_U64;
  m.dup = TDM_DUP_SUM;
  for (i = 0; i < 4000; i++) {
    k[i] = prop_below(&r, 6000);
    v[i] = prop_next(&r);
  }
  /* Build: each failing allocation gives no tree; eventually it succeeds. */
  for (fail = 1, ok = 0; !ok; fail++) {
    tdm_status s;
    tdm_test_alloc_fail_at(fail);
    s = tdm_btree_build(ctx, &o, k, v, 2000, &t);
    tdm_test_alloc_fail_at(0);
    if (s == TDM_OK) ok = 1;
    else cr_assert_eq(s, TDM_ERR_OUT_OF_MEMORY);
  }
  model_insert(&m, k, v, 2000);
  check_contents(t, &m, "after build");
  /* Insert a batch that forces node growth, failing at each allocation. */
  for (fail = 1, ok = 0; !ok; fail++) {
    tdm_status s;
    tdm_test_alloc_fail_at(fail);
    s = tdm_btree_insert(t, k + 2000, v + 2000, 2000);
    tdm_test_alloc_fail_at(0);
    if (s == TDM_OK) ok = 1;
    else {
      cr_assert_eq(s, TDM_ERR_OUT_OF_MEMORY);
      check_contents(t, &m, "after a failed insert");
    }
  }
  model_insert(&m, k + 2000, v + 2000, 2000);
  check_contents(t, &m, "after insert");
  for (fail = 1, ok = 0; !ok; fail++) {
    tdm_status s;
    size_t e;
    tdm_test_alloc_fail_at(fail);
    s = tdm_btree_erase(t, k + 1000, 2500, &e);
    tdm_test_alloc_fail_at(0);
    if (s == TDM_OK) ok = 1;
    else {
      cr_assert_eq(s, TDM_ERR_OUT_OF_MEMORY);
      check_contents(t, &m, "after a failed erase");
    }
  }
  model_erase(&m, k + 1000, 2500);
  check_contents(t, &m, "after erase");
  tdm_btree_destroy(t);
  tdm_ctx_destroy(ctx);
  model_free(&m);
}

/* ---- concurrent readers ------------------------------------------------------ */

typedef struct reader {
  const tdm_btree *t;
  int ok;
} reader;

static void *read_all(void *p) {
  reader *rd = (reader *)p;
  uint64_t q[1000], val[1000], i, rk[1000];
  uint8_t f[1000];
  int rep;
  rd->ok = 1;
  for (rep = 0; rep < 50; rep++) {
    for (i = 0; i < 1000; i++) q[i] = i * 7 + (uint64_t)rep;
    if (tdm_btree_find(rd->t, q, val, f, 1000) != TDM_OK || tdm_btree_rank(rd->t, q, rk, 1000) != TDM_OK) rd->ok = 0;
    for (i = 0; i < 1000; i++)
      if (f[i] != (q[i] % 2 == 0 && q[i] < 20000) || rk[i] != (q[i] < 20000 ? (q[i] + 1) / 2 : 10000)) rd->ok = 0;
  }
  return NULL;
}

Test(btree_unit, concurrent_readers) {
  tdm_ctx *ctx = prop_ctx(TDM_BACKEND_CPU, 2);
  uint64_t *k = (uint64_t *)malloc(10000 * 8), i;
  pthread_t th[4];
  reader rd[4];
  tdm_btree *t;
  int j;
  for (i = 0; i < 10000; i++) k[i] = 2 * i;
  t = build_u64(ctx, k, 10000, TDM_DUP_KEEP_FIRST);
  for (j = 0; j < 4; j++) {
    rd[j].t = t;
    pthread_create(&th[j], NULL, read_all, &rd[j]);
  }
  for (j = 0; j < 4; j++) {
    pthread_join(th[j], NULL);
    cr_assert(rd[j].ok, "reader %d saw a wrong result", j);
  }
  tdm_btree_destroy(t);
  tdm_ctx_destroy(ctx);
  free(k);
}

/* ---- CUDA against the CPU ------------------------------------------------------ */

/* The same builds, batches and queries on both backends give identical
 * results, bit for bit, on every key type with float edge values. */
Test(btree_cuda, matches_cpu) {
  const char *why;
  size_t ti;
  if (!prop_cuda_usable(&why)) cr_skip_test("no usable CUDA device: %s", why);
  for (ti = 0; ti < 6; ti++) {
    tdm_type kt = all_types[ti], vt = all_types[(ti + 1) % 6];
    size_t ks = tdm_type_size(kt), vs = tdm_type_size(vt), n = prop_scaled(40000, 200000), m = n / 4, i, e1, e2,
           total = 0;
    tdm_ctx *cpu = prop_ctx(TDM_BACKEND_CPU, 0), *gpu = prop_ctx(TDM_BACKEND_CUDA, 0);
    tdm_btree_opts o = {kt, vt, (ti % 2) ? TDM_DUP_MAX : TDM_DUP_KEEP_LAST};
    tdm_btree *a, *b;
    char *k = (char *)malloc(n * ks), *v = (char *)malloc(n * vs), *q2 = (char *)malloc(n * ks);
    char *oa = (char *)malloc(n * 8), *ob = (char *)malloc(n * 8);
    uint8_t *fa = (uint8_t *)malloc(n), *fb = (uint8_t *)malloc(n);
    uint64_t *ra = (uint64_t *)malloc((n + 1) * 8), *rb = (uint64_t *)malloc((n + 1) * 8);
    prop_rng r;
    prop_rng_init(&r, 0xB7EE + ti);
    prop_fill(&r, kt, k, n, PROP_BOUNDARY);
    prop_fill(&r, vt, v, n, PROP_UNIFORM);
    CHECK_OK(tdm_btree_build(cpu, &o, k, v, n / 2, &a));
    CHECK_OK(tdm_btree_build(gpu, &o, k, v, n / 2, &b));
    CHECK_OK(tdm_btree_insert(a, k + n / 2 * ks, v + n / 2 * vs, n / 2));
    CHECK_OK(tdm_btree_insert(b, k + n / 2 * ks, v + n / 2 * vs, n / 2));
    CHECK_OK(tdm_btree_erase(a, k + n / 4 * ks, m, &e1));
    CHECK_OK(tdm_btree_erase(b, k + n / 4 * ks, m, &e2));
    cr_assert_eq(e1, e2);
    CHECK_OK(tdm_btree_validate(b));
    cr_assert_eq(tdm_btree_size(a), tdm_btree_size(b));
    CHECK_OK(tdm_btree_export(a, oa, NULL, n, NULL));
    CHECK_OK(tdm_btree_export(b, ob, NULL, n, NULL));
    cr_assert(memcmp(oa, ob, tdm_btree_size(a) * ks) == 0, "export keys differ for %s", tdm_type_name(kt));
    CHECK_OK(tdm_btree_export(a, NULL, oa, n, NULL));
    CHECK_OK(tdm_btree_export(b, NULL, ob, n, NULL));
    cr_assert(memcmp(oa, ob, tdm_btree_size(a) * vs) == 0, "export values differ for %s", tdm_type_name(kt));
    prop_fill(&r, kt, q2, n, PROP_BOUNDARY);
    CHECK_OK(tdm_btree_find(a, q2, oa, fa, n));
    CHECK_OK(tdm_btree_find(b, q2, ob, fb, n));
    cr_assert(memcmp(fa, fb, n) == 0 && memcmp(oa, ob, n * vs) == 0, "find differs");
    CHECK_OK(tdm_btree_rank(a, q2, ra, n));
    CHECK_OK(tdm_btree_rank(b, q2, rb, n));
    cr_assert(memcmp(ra, rb, n * 8) == 0, "rank differs");
    CHECK_OK(tdm_btree_range_count(a, k, q2, ra, n));
    CHECK_OK(tdm_btree_range_count(b, k, q2, rb, n));
    cr_assert(memcmp(ra, rb, n * 8) == 0, "range_count differs");
    for (i = 0; i < 1000; i++) total += ra[i];
    {
      char *ka = (char *)malloc(total * ks + 8), *kb = (char *)malloc(total * ks + 8);
      CHECK_OK(tdm_btree_range(a, k, q2, 1000, ra, ka, NULL, total));
      CHECK_OK(tdm_btree_range(b, k, q2, 1000, rb, kb, NULL, total));
      cr_assert(memcmp(ra, rb, 1001 * 8) == 0 && memcmp(ka, kb, total * ks) == 0, "range differs");
      free(ka);
      free(kb);
    }
    tdm_btree_destroy(a);
    tdm_btree_destroy(b);
    tdm_ctx_destroy(cpu);
    tdm_ctx_destroy(gpu);
    free(k); free(v); free(q2); free(oa); free(ob); free(fa); free(fb); free(ra); free(rb);
  }
}

/* A bulk build makes the CPU's node bytes on CUDA (the leaves and inner
 * nodes sixteen threads a node, the tail words, the search arrays' source):
 * sizes around the leaf and parent boundaries, keys with and without
 * duplicates (the build checks for them after filling and then reduces),
 * every value type for every key type across the sizes (8-byte keys and
 * values take the build by rows, the others the pair sort). */
Test(btree_cuda, bulk_nodes_match_cpu) {
  static const size_t sizes[] = {1, 2, 15, 16, 17, 29, 225, 3587, 50001};
  static const prop_dist dists[] = {PROP_UNIFORM, PROP_FEW_DISTINCT, PROP_SORTED, PROP_BOUNDARY};
  const char *why;
  int ti, si, di;
  char *keys = (char *)malloc(8 * 50001), *vals = (char *)malloc(8 * 50001);
  char *dn = (char *)malloc(sizeof(tdm__bt_node) * (50001 / 8 + 8));
  tdm_ctx *cpu, *gpu;
  if (!prop_cuda_usable(&why)) cr_skip_test("no usable CUDA device: %s", why);
  cpu = prop_ctx(TDM_BACKEND_CPU, 0);
  gpu = prop_ctx(TDM_BACKEND_CUDA, 0);
  for (ti = 0; ti < 6; ti++)
    for (si = 0; si < (int)(sizeof sizes / sizeof *sizes); si++)
      for (di = 0; di < 4; di++) {
        tdm_btree_opts o = {all_types[ti], all_types[(ti + si + 3) % 6],
                            (tdm_dup)((ti + si + di) % (TDM_DUP_MAX + 1))};
        tdm_btree *a, *b;
        tdm_btree_view va, vb;
        size_t n = sizes[si], bytes;
        prop_rng r;
        if (n > 3587 && (ti + di) % 4 != 0) continue; /* the large size for a quarter of the cases */
        if (o.on_duplicate == TDM_DUP_SUM && (o.value_type == TDM_F32 || o.value_type == TDM_F64))
          o.on_duplicate = TDM_DUP_MIN;
        prop_rng_init(&r, 0xB0D5000ull + (uint64_t)((ti * 16 + si) * 4 + di));
        prop_fill(&r, o.key_type, keys, n, dists[di]);
        prop_fill(&r, o.value_type, vals, n, PROP_UNIFORM);
        CHECK_OK(tdm_btree_build(cpu, &o, keys, vals, n, &a));
        CHECK_OK(tdm_btree_build(gpu, &o, keys, vals, n, &b));
        CHECK_OK(tdm_btree_view_get(a, &va));
        CHECK_OK(tdm_btree_view_get(b, &vb));
        cr_assert(va.size == vb.size && va.height == vb.height && va.root == vb.root,
                  "shape differs: %zu keys (%s) into %s -> %s", n, prop_dist_name(dists[di]),
                  tdm_type_name(o.key_type), tdm_type_name(o.value_type));
        bytes = ((size_t)va.root + 1) * sizeof(tdm__bt_node);
        prop_d2h(dn, vb.nodes, bytes);
        cr_assert(memcmp(va.nodes, dn, bytes) == 0, "nodes differ: %zu keys (%s) into %s -> %s, policy %d", n,
                  prop_dist_name(dists[di]), tdm_type_name(o.key_type), tdm_type_name(o.value_type),
                  (int)o.on_duplicate);
        tdm_btree_destroy(a);
        tdm_btree_destroy(b);
      }
  tdm_ctx_destroy(cpu);
  tdm_ctx_destroy(gpu);
  free(keys);
  free(vals);
  free(dn);
}

/* Device-resident (and managed) inputs and outputs give the results host
 * arrays give. */
Test(btree_cuda, device_arrays) {
  const char *why;
  int managed;
  if (!prop_cuda_usable(&why)) cr_skip_test("no usable CUDA device: %s", why);
  for (managed = 0; managed < 2; managed++) {
    size_t n = 100000, i;
    tdm_ctx *gpu = prop_ctx(TDM_BACKEND_CUDA, 0);
    tdm_btree_opts o = {TDM_U64, TDM_U32, TDM_DUP_SUM};
    tdm_btree *t;
    uint64_t *k = (uint64_t *)malloc(n * 8), *rh = (uint64_t *)malloc(n * 8), *rd = (uint64_t *)malloc(n * 8);
    uint32_t *v = (uint32_t *)malloc(n * 4);
    void *dk = prop_dev_alloc(n * 8, managed), *dv = prop_dev_alloc(n * 4, managed);
    void *dr = prop_dev_alloc(n * 8, managed);
    for (i = 0; i < n; i++) {
      k[i] = (i * 7919) % (n / 2);
      v[i] = (uint32_t)i;
    }
    prop_h2d(dk, k, n * 8);
    prop_h2d(dv, v, n * 4);
    CHECK_OK(tdm_btree_build(gpu, &o, dk, dv, n, &t));
    CHECK_OK(tdm_btree_validate(t));
    cr_assert_eq(tdm_btree_size(t), n / 2);
    CHECK_OK(tdm_btree_rank(t, k, rh, n));
    CHECK_OK(tdm_btree_rank(t, dk, dr, n));
    prop_d2h(rd, dr, n * 8);
    cr_assert(memcmp(rh, rd, n * 8) == 0, "device-resident rank differs (managed %d)", managed);
    for (i = 0; i < n; i++) cr_assert_eq(rh[i], k[i], "keys are 0..n/2-1, so rank = key");
    tdm_btree_destroy(t);
    prop_dev_free(dk);
    prop_dev_free(dv);
    prop_dev_free(dr);
    tdm_ctx_destroy(gpu);
    free(k); free(rh); free(rd); free(v);
  }
}

/* ---- a large random workload ---------------------------------------------------- */

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Sorted, duplicate-free copy of a batch (KEEP_LAST: the batch's last value
 * wins, so values are looked up from the batch afterwards). */
static size_t sorted_unique(const uint64_t *in, size_t n, uint64_t *out) {
  size_t i, m = 0;
  memcpy(out, in, n * 8);
  qsort(out, n, 8, cmp_u64);
  for (i = 0; i < n; i++)
    if (m == 0 || out[m - 1] != out[i]) out[m++] = out[i];
  return m;
}

/* Tens of thousands of keys in a tree four and five levels high, random
 * batched inserts and erases (so inner nodes split, borrow and merge many
 * times), validated and compared with a merge-based reference after each. */
Test(btree_stress, large_random_batches) {
  tdm_ctx *ctx = prop_ctx(TDM_BACKEND_CPU, 0);
  size_t cap = 400000, n = 0, i, step;
  uint64_t *ref = (uint64_t *)malloc(cap * 8), *tmp = (uint64_t *)malloc(cap * 8);
  uint64_t *batch = (uint64_t *)malloc(60000 * 8), *sb = (uint64_t *)malloc(60000 * 8);
  uint64_t *out = (uint64_t *)malloc(cap * 8), *outv = (uint64_t *)malloc(cap * 8);
  tdm_btree *t = build_u64(ctx, NULL, 0, TDM_DUP_KEEP_LAST);
  prop_rng r;
  prop_rng_init(&r, 0x57E55);
  for (step = 0; step < 30; step++) {
    size_t m = (size_t)prop_below(&r, 60000) + 1, u, a = 0, b = 0, w = 0, got;
    uint64_t range = step < 15 ? 200000 : 120000; /* later steps thin the tree out */
    for (i = 0; i < m; i++) batch[i] = prop_below(&r, range);
    u = sorted_unique(batch, m, sb);
    if (step < 10 || prop_below(&r, 2)) {
      CHECK_OK(tdm_btree_insert(t, batch, batch, m));
      while (a < n || b < u) { /* union */
        if (b == u || (a < n && ref[a] < sb[b])) tmp[w++] = ref[a++];
        else if (a == n || sb[b] < ref[a]) tmp[w++] = sb[b++];
        else { tmp[w++] = ref[a++]; b++; }
      }
    } else {
      size_t erased;
      CHECK_OK(tdm_btree_erase(t, batch, m, &erased));
      while (a < n) { /* difference */
        while (b < u && sb[b] < ref[a]) b++;
        if (b < u && sb[b] == ref[a]) a++;
        else tmp[w++] = ref[a++];
      }
      cr_assert_eq(erased, n - w);
    }
    memcpy(ref, tmp, w * 8);
    n = w;
    CHECK_OK(tdm_btree_validate(t));
    CHECK_OK(tdm_btree_export(t, out, outv, cap, &got));
    cr_assert_eq(got, n, "step %zu: size %zu, reference %zu", step, got, n);
    cr_assert(memcmp(out, ref, n * 8) == 0, "step %zu: keys differ", step);
    for (i = 0; i < n; i++) cr_assert_eq(outv[i], out[i], "values are the keys");
  }
  cr_assert(tdm_btree_height(t) >= 4);
  tdm_btree_destroy(t);
  tdm_ctx_destroy(ctx);
  free(ref); free(tmp); free(batch); free(sb); free(out); free(outv);
}

/* A large build sorts a copy of the caller's arrays. The input must come
 * back untouched and the result equal the model, for keys spread over the
 * whole range, keys whose top digits are all equal (constant digits skipped
 * before the first partition), and heavy duplicates (buckets over the
 * cache target, stability under KEEP_FIRST). */
Test(btree_stress, large_build_leaves_its_input_untouched) {
  tdm_ctx *ctx = prop_ctx(TDM_BACKEND_CPU, 0);
  enum { N = 300000 };
  uint64_t *k = (uint64_t *)malloc(N * 8), *v = (uint64_t *)malloc(N * 8), *k0 = (uint64_t *)malloc(N * 8);
  uint64_t *v0 = (uint64_t *)malloc(N * 8), *out = (uint64_t *)malloc(N * 8);
  uint8_t *f = (uint8_t *)malloc(N);
  prop_rng r;
  int shape;
  size_t i;
  prop_rng_init(&r, 0xB01D);
  for (shape = 0; shape < 3; shape++) {
    tdm_btree_opts o = {TDM_U64, TDM_U64, TDM_DUP_KEEP_FIRST};
    tdm_btree *t = NULL;
    uint64_t range = shape == 0 ? 0 : shape == 1 ? (uint64_t)1 << 20 : 4000;
    size_t distinct = 0;
    for (i = 0; i < N; i++) {
      k[i] = range ? prop_below(&r, range) : prop_next(&r);
      v[i] = i;
    }
    memcpy(k0, k, N * 8);
    memcpy(v0, v, N * 8);
    CHECK_OK(tdm_btree_build(ctx, &o, k, v, N, &t));
    cr_assert(memcmp(k, k0, N * 8) == 0 && memcmp(v, v0, N * 8) == 0, "shape %d: the input changed", shape);
    CHECK_OK(tdm_btree_validate(t));
    /* KEEP_FIRST: each key's value is the index of its first occurrence
     * (out[i] <= i for every i holding the key forces the smallest). */
    CHECK_OK(tdm_btree_find(t, k, out, f, N));
    for (i = 0; i < N; i++) {
      cr_assert(f[i], "shape %d: key %zu missing", shape, i);
      cr_assert_leq(out[i], i, "shape %d: key %zu", shape, i);
      cr_assert_eq(k[out[i]], k[i], "shape %d: key %zu", shape, i);
      distinct += out[i] == i;
    }
    cr_assert_eq(tdm_btree_size(t), distinct, "shape %d", shape);
    tdm_btree_destroy(t);
  }
  free(k); free(v); free(k0); free(v0); free(out); free(f);
  tdm_ctx_destroy(ctx);
}
