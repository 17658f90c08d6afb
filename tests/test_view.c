/*
 * test_view.c: the inline lookups of tandem/view.h on CPU structures. They
 * must equal the bulk calls (tdm_hash_find, tdm_btree_find, tdm_btree_rank)
 * for every key type and the edge values (0, all-ones, the hash table's
 * marker patterns, +-0.0, infinities, NaNs with payloads), leave the value
 * untouched on a miss, and follow the validity rule (a view taken after a
 * mutation sees it).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prop.h"
#include "tandem/view.h"

enum { N = 3000, Q = 6000 };

/* The element at i of an array of t, as zero-extended bits. */
static uint64_t bits_at(tdm_type t, const void *a, size_t i) {
  if (tdm_type_size(t) == 4) return ((const uint32_t *)a)[i];
  return ((const uint64_t *)a)[i];
}

/* Edge values of a type, as bits. */
static size_t edges(tdm_type t, uint64_t *out) {
  size_t n = 0;
  int w4 = tdm_type_size(t) == 4;
  uint64_t ones = w4 ? 0xFFFFFFFFull : ~0ull, sign = w4 ? 0x80000000ull : 0x8000000000000000ull;
  out[n++] = 0;
  out[n++] = ones;
  out[n++] = 1;
  out[n++] = sign;
  out[n++] = sign - 1;
  out[n++] = sign + 1;
  out[n++] = w4 ? 0x9e3779b9u : 0x9e3779b97f4a7c15ull; /* the hash table's tombstone pattern */
  out[n++] = ones - 1;
  if (t == TDM_F32) {
    out[n++] = 0x7F800000u;  /* +inf */
    out[n++] = 0xFF800000u;  /* -inf */
    out[n++] = 0x7FC00000u;  /* +NaN */
    out[n++] = 0xFFC00001u;  /* -NaN with payload */
    out[n++] = 0x7F800001u;  /* signalling NaN */
  } else if (t == TDM_F64) {
    out[n++] = 0x7FF0000000000000ull;
    out[n++] = 0xFFF0000000000000ull;
    out[n++] = 0x7FF8000000000000ull;
    out[n++] = 0xFFF8000000000123ull;
    out[n++] = 0x7FF0000000000001ull;
  }
  return n;
}

static void store_bits(tdm_type t, void *a, size_t i, uint64_t b) {
  if (tdm_type_size(t) == 4) ((uint32_t *)a)[i] = (uint32_t)b;
  else ((uint64_t *)a)[i] = b;
}

/* Keys: edge values, then random bits; queries: every stored key, the edges
 * (stored), and random bits (mostly absent). */
static void make_keys(prop_rng *r, tdm_type t, void *keys, void *queries) {
  uint64_t e[16];
  size_t ne = edges(t, e), i;
  prop_fill(r, t, keys, N, PROP_UNIFORM);
  for (i = 0; i < ne; i++) store_bits(t, keys, i * 7, e[i]);
  for (i = 0; i < Q; i++) {
    uint64_t b;
    if (i < ne) b = e[i];
    else if (i % 3 == 0) b = bits_at(t, keys, prop_below(r, N));
    else b = prop_next(r);
    if (tdm_type_size(t) == 4) b &= 0xFFFFFFFFull;
    store_bits(t, queries, i, b);
  }
}

static const tdm_type ALL[6] = {TDM_U32, TDM_U64, TDM_I32, TDM_I64, TDM_F32, TDM_F64};

Test(view, hash_view_equals_bulk_find_for_every_type) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 2);
  void *keys = malloc(N * 8), *vals = malloc(N * 8), *q = malloc(Q * 8), *out = malloc(Q * 8);
  uint8_t *found = malloc(Q);
  prop_rng r;
  int ki, vi;
  prop_rng_init(&r, 0x71E1);
  for (ki = 0; ki < 4; ki++) {
    for (vi = 0; vi < 6; vi++) {
      tdm_type kt = ALL[ki], vt = ALL[vi];
      tdm_hash_opts o = {kt, vt, N, 0, 0, TDM_DUP_KEEP_LAST};
      tdm_hash *h = NULL;
      tdm_hash_view v;
      size_t i, hits = 0;
      make_keys(&r, kt, keys, q);
      prop_fill(&r, vt, vals, N, PROP_BOUNDARY);
      cr_assert_eq(tdm_hash_create(c, &o, &h), TDM_OK);
      cr_assert_eq(tdm_hash_insert(h, keys, vals, N), TDM_OK);
      cr_assert_eq(tdm_hash_find(h, q, out, found, Q), TDM_OK);
      cr_assert_eq(tdm_hash_view_get(h, &v), TDM_OK);
      cr_assert_eq(v.device, -1);
      for (i = 0; i < Q; i++) {
        uint64_t got = 0x5A5A5A5A5A5A5A5Aull;
        int f = tdm_hash_view_find(v, bits_at(kt, q, i), &got);
        cr_assert_eq(f, found[i], "%s/%s query %zu (0x%llx): view %d, bulk %d", tdm_type_name(kt),
                     tdm_type_name(vt), i, (unsigned long long)bits_at(kt, q, i), f, found[i]);
        if (f) {
          cr_assert_eq(got, bits_at(vt, out, i), "%s/%s query %zu: value differs", tdm_type_name(kt),
                       tdm_type_name(vt), i);
          hits++;
        } else {
          cr_assert_eq(got, 0x5A5A5A5A5A5A5A5Aull, "a miss changed *value_bits");
        }
        cr_assert_eq(tdm_hash_view_find(v, bits_at(kt, q, i), NULL), f, "value_bits NULL");
      }
      cr_assert_gt(hits, Q / 4, "too few hits to mean anything");
      tdm_hash_destroy(h);
    }
  }
  tdm_ctx_destroy(c);
  free(keys); free(vals); free(q); free(out); free(found);
}

Test(view, btree_view_equals_bulk_find_and_rank_for_every_type) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 2);
  void *keys = malloc(N * 8), *vals = malloc(N * 8), *q = malloc(Q * 8), *out = malloc(Q * 8);
  uint64_t *rank = malloc(Q * 8);
  uint8_t *found = malloc(Q);
  prop_rng r;
  int ki, vi;
  prop_rng_init(&r, 0x71E2);
  for (ki = 0; ki < 6; ki++) {
    for (vi = 0; vi < 6; vi += 5) { /* a 32-bit and a 64-bit value type */
      tdm_type kt = ALL[ki], vt = ALL[vi];
      tdm_btree_opts o = {kt, vt, TDM_DUP_KEEP_FIRST};
      tdm_btree *t = NULL;
      tdm_btree_view v;
      size_t i, hits = 0;
      make_keys(&r, kt, keys, q);
      prop_fill(&r, vt, vals, N, PROP_BOUNDARY);
      cr_assert_eq(tdm_btree_build(c, &o, keys, vals, N, &t), TDM_OK);
      cr_assert_eq(tdm_btree_find(t, q, out, found, Q), TDM_OK);
      cr_assert_eq(tdm_btree_rank(t, q, rank, Q), TDM_OK);
      cr_assert_eq(tdm_btree_view_get(t, &v), TDM_OK);
      cr_assert_eq(v.size, tdm_btree_size(t));
      for (i = 0; i < Q; i++) {
        uint64_t got = 0xA5A5A5A5A5A5A5A5ull, kb = bits_at(kt, q, i);
        int f = tdm_btree_view_find(v, kb, &got);
        cr_assert_eq(f, found[i], "%s/%s query %zu (0x%llx): view %d, bulk %d", tdm_type_name(kt),
                     tdm_type_name(vt), i, (unsigned long long)kb, f, found[i]);
        if (f) {
          cr_assert_eq(got, bits_at(vt, out, i));
          hits++;
        } else {
          cr_assert_eq(got, 0xA5A5A5A5A5A5A5A5ull, "a miss changed *value_bits");
        }
        cr_assert_eq(tdm_btree_view_rank(v, kb), rank[i], "%s query %zu (0x%llx): rank", tdm_type_name(kt), i,
                     (unsigned long long)kb);
      }
      cr_assert_gt(hits, Q / 4);
      tdm_btree_destroy(t);
    }
  }
  tdm_ctx_destroy(c);
  free(keys); free(vals); free(q); free(out); free(rank); free(found);
}

Test(view, float_keys_follow_total_order) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 1);
  /* In totalOrder: -NaN < -inf < -1 < -0.0 < +0.0 < 1 < +inf < +NaN. */
  double k[8];
  uint64_t b[8], got = 0;
  tdm_btree_opts o = {TDM_F64, TDM_U32, TDM_DUP_KEEP_FIRST};
  tdm_btree *t = NULL;
  tdm_btree_view v;
  uint32_t vals[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  int i;
  b[0] = 0xFFF8000000000000ull;
  b[7] = 0x7FF8000000000000ull;
  k[1] = -INFINITY; k[2] = -1.0; k[3] = -0.0; k[4] = 0.0; k[5] = 1.0; k[6] = INFINITY;
  for (i = 1; i < 7; i++) memcpy(&b[i], &k[i], 8);
  for (i = 0; i < 8; i++) memcpy(&k[i], &b[i], 8);
  cr_assert_eq(tdm_btree_build(c, &o, k, vals, 8, &t), TDM_OK);
  cr_assert_eq(tdm_btree_view_get(t, &v), TDM_OK);
  for (i = 0; i < 8; i++) {
    cr_assert_eq(tdm_btree_view_rank(v, b[i]), (uint64_t)i, "rank of element %d", i);
    cr_assert(tdm_btree_view_find(v, b[i], &got));
    cr_assert_eq(got, (uint64_t)i, "-0.0 and +0.0 are distinct keys");
  }
  tdm_btree_destroy(t);
  tdm_ctx_destroy(c);
}

Test(view, a_view_taken_after_a_mutation_sees_it) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 2);
  tdm_hash_opts ho = {TDM_U64, TDM_U64, 4, 0, 0, TDM_DUP_KEEP_LAST};
  tdm_btree_opts bo = {TDM_I32, TDM_U64, TDM_DUP_KEEP_LAST};
  tdm_hash *h = NULL;
  tdm_btree *t = NULL;
  tdm_hash_view hv;
  tdm_btree_view bv;
  uint64_t k[2000], v[2000], got;
  int32_t ik[2000];
  size_t i, erased;
  for (i = 0; i < 2000; i++) {
    k[i] = i * 0x10001ull;
    v[i] = i + 1;
    ik[i] = (int32_t)i - 1000;
  }
  cr_assert_eq(tdm_hash_create(c, &ho, &h), TDM_OK);
  cr_assert_eq(tdm_btree_build(c, &bo, NULL, NULL, 0, &t), TDM_OK);
  /* Empty structures: every lookup misses, ranks are 0. */
  cr_assert_eq(tdm_hash_view_get(h, &hv), TDM_OK);
  cr_assert_eq(tdm_btree_view_get(t, &bv), TDM_OK);
  cr_assert_not(tdm_hash_view_find(hv, 0, &got));
  cr_assert_not(tdm_btree_view_find(bv, 0, &got));
  cr_assert_eq(tdm_btree_view_rank(bv, 5), 0);
  /* The hash table grows (new storage): a new view sees every key. */
  cr_assert_eq(tdm_hash_insert(h, k, v, 2000), TDM_OK);
  cr_assert_eq(tdm_btree_insert(t, ik, v, 2000), TDM_OK);
  cr_assert_eq(tdm_hash_view_get(h, &hv), TDM_OK);
  cr_assert_eq(tdm_btree_view_get(t, &bv), TDM_OK);
  for (i = 0; i < 2000; i++) {
    cr_assert(tdm_hash_view_find(hv, k[i], &got));
    cr_assert_eq(got, v[i]);
    cr_assert(tdm_btree_view_find(bv, (uint32_t)ik[i], &got));
    cr_assert_eq(got, v[i]);
    cr_assert_eq(tdm_btree_view_rank(bv, (uint32_t)ik[i]), i, "signed order");
  }
  /* Erase half: the next views miss them. */
  cr_assert_eq(tdm_hash_erase(h, k, 1000, &erased), TDM_OK);
  cr_assert_eq(tdm_btree_erase(t, ik, 1000, &erased), TDM_OK);
  cr_assert_eq(tdm_hash_view_get(h, &hv), TDM_OK);
  cr_assert_eq(tdm_btree_view_get(t, &bv), TDM_OK);
  for (i = 0; i < 2000; i++) {
    cr_assert_eq(tdm_hash_view_find(hv, k[i], NULL), i >= 1000);
    cr_assert_eq(tdm_btree_view_find(bv, (uint32_t)ik[i], NULL), i >= 1000);
  }
  cr_assert_eq(tdm_btree_view_rank(bv, (uint32_t)ik[1500]), 500);
  /* Clear: the next view is empty. */
  cr_assert_eq(tdm_hash_clear(h), TDM_OK);
  cr_assert_eq(tdm_hash_view_get(h, &hv), TDM_OK);
  cr_assert_not(tdm_hash_view_find(hv, k[1500], NULL));
  tdm_hash_destroy(h);
  tdm_btree_destroy(t);
  tdm_ctx_destroy(c);
}

Test(view, null_arguments_are_invalid) {
  tdm_hash_view hv;
  tdm_btree_view bv;
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 1);
  tdm_hash_opts ho = {TDM_U32, TDM_U32, 4, 0, 0, TDM_DUP_KEEP_LAST};
  tdm_hash *h = NULL;
  cr_assert_eq(tdm_hash_view_get(NULL, &hv), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_btree_view_get(NULL, &bv), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_hash_create(c, &ho, &h), TDM_OK);
  cr_assert_eq(tdm_hash_view_get(h, NULL), TDM_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(tdm_last_error(), "tdm_hash_view_get") != NULL);
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
}
