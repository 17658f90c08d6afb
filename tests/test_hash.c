/*
 * test_hash.c: the hash table.
 *
 *  - hash_unit: small examples a reader can follow (colliding keys, erase and
 *    re-insert, find after erase, clear and reuse, each duplicate policy,
 *    boundary and marker keys), growth over many doublings, fixed-capacity
 *    refusal, out-of-memory during growth, argument errors.
 *  - hash_model: random sequences of insert / find / erase / clear batches over
 *    small key pools (many collisions and duplicates, the marker values
 *    included) checked after every step against a reference map, with
 *    validate after every mutation; on every key type, several value types,
 *    every duplicate policy and each available backend. Failing sequences are
 *    shrunk by prop_check.
 *  - hash_parallel: batches big enough for the multi-threaded paths, compared
 *    with one thread and with the reference; concurrent finds.
 *  - hash_cuda: the CUDA backend gives the same table as the CPU (skipped with
 *    the reason when no device is usable).
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cpu/cpu.h" /* slots of CPU tables */
#include "hooks/hooks.h"
#include "prop.h"

/* ---- helpers ------------------------------------------------------------- */

static tdm_hash *make(tdm_ctx *ctx, tdm_type kt, tdm_type vt, size_t capacity, tdm_dup dup, int fixed) {
  tdm_hash_opts o;
  tdm_hash *h = NULL;
  tdm_status s;
  memset(&o, 0, sizeof o);
  o.key_type = kt;
  o.value_type = vt;
  o.capacity = capacity;
  o.on_duplicate = dup;
  o.fixed_capacity = fixed;
  s = tdm_hash_create(ctx, &o, &h);
  cr_assert(s == TDM_OK, "tdm_hash_create: %s: %s", tdm_status_name(s), tdm_last_error());
  return h;
}

#define OK(call)                                                                                          \
  do {                                                                                                    \
    tdm_status s_ = (call);                                                                               \
    cr_assert(s_ == TDM_OK, "%s -> %s: %s (TANDEM_SEED=%" PRIu64 ")", #call, tdm_status_name(s_),         \
              tdm_last_error(), prop_seed());                                                             \
  } while (0)

#define VALID(h) OK(tdm_hash_validate(h))

/* Finds one u64 key in a u64 -> u64 table: returns found, *v the value. */
static int find1(const tdm_hash *h, uint64_t k, uint64_t *v) {
  uint8_t f = 7;
  uint64_t val = 12345;
  OK(tdm_hash_find(h, &k, &val, &f, 1));
  cr_assert(f == 0 || f == 1);
  if (!f) cr_assert_eq(val, 0, "a miss must write value 0, wrote %" PRIu64, val);
  if (v) *v = val;
  return f;
}

static void insert1(tdm_hash *h, uint64_t k, uint64_t v) { OK(tdm_hash_insert(h, &k, &v, 1)); }

static size_t erase1(tdm_hash *h, uint64_t k) {
  size_t e = 99;
  OK(tdm_hash_erase(h, &k, 1, &e));
  return e;
}

static tdm_ctx *cpu1(void) { return prop_ctx(TDM_BACKEND_CPU, 1); }

/* ---- unit tests: the basics ------------------------------------------------ */

Test(hash_unit, insert_then_find) {
  tdm_ctx *c = cpu1();
  tdm_hash *h = make(c, TDM_U64, TDM_U64, 0, TDM_DUP_KEEP_FIRST, 0);
  uint64_t v;
  insert1(h, 10, 100);
  insert1(h, 20, 200);
  cr_assert(find1(h, 10, &v) && v == 100);
  cr_assert(find1(h, 20, &v) && v == 200);
  cr_assert(!find1(h, 30, &v), "30 was never inserted");
  cr_assert_eq(tdm_hash_size(h), 2);
  VALID(h);
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
}

/* Keys with the same home slot: they must queue up behind each other and all
 * stay findable, also when one in the middle of the run is erased. */
Test(hash_unit, colliding_keys) {
  tdm_ctx *c = cpu1();
  tdm_hash *h = make(c, TDM_U64, TDM_U64, 8, TDM_DUP_KEEP_FIRST, 1); /* 16 slots */
  uint64_t keys[5], k, v;
  int m = 0;
  cr_assert_eq(h->log2cap, 4u, "a table for 8 keys at load 0.8 has 16 slots");
  for (k = 1; m < 5; k++)
    if (tdm__hs_start_k64v64(k, 4) == 4) keys[m++] = k; /* all five start at slot 4 */
  for (m = 0; m < 5; m++) insert1(h, keys[m], keys[m] * 10);
  VALID(h);
  for (m = 0; m < 5; m++) cr_assert(find1(h, keys[m], &v) && v == keys[m] * 10);
  cr_assert_eq(erase1(h, keys[2]), 1);
  VALID(h);
  cr_assert(!find1(h, keys[2], NULL), "erased key must be gone");
  /* The keys behind the erased one are still reachable past its tombstone. */
  cr_assert(find1(h, keys[3], &v) && v == keys[3] * 10);
  cr_assert(find1(h, keys[4], &v) && v == keys[4] * 10);
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
}

Test(hash_unit, erase_then_reinsert) {
  tdm_ctx *c = cpu1();
  tdm_hash *h = make(c, TDM_U64, TDM_U64, 0, TDM_DUP_KEEP_FIRST, 0);
  uint64_t v;
  insert1(h, 7, 70);
  cr_assert_eq(erase1(h, 7), 1);
  cr_assert_eq(erase1(h, 7), 0, "a second erase of the same key erases nothing");
  cr_assert(!find1(h, 7, NULL));
  cr_assert_eq(tdm_hash_size(h), 0);
  insert1(h, 7, 71); /* KEEP_FIRST: the key is new again, so its new value counts */
  cr_assert(find1(h, 7, &v) && v == 71);
  cr_assert_eq(tdm_hash_size(h), 1);
  VALID(h);
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
}

Test(hash_unit, find_after_erase) {
  tdm_ctx *c = cpu1();
  tdm_hash *h = make(c, TDM_U32, TDM_U32, 0, TDM_DUP_KEEP_LAST, 0);
  uint32_t keys[100], vals[100], out[100];
  uint8_t found[100];
  size_t i, e;
  for (i = 0; i < 100; i++) keys[i] = (uint32_t)i, vals[i] = (uint32_t)(i * 3);
  OK(tdm_hash_insert(h, keys, vals, 100));
  OK(tdm_hash_erase(h, keys, 50, &e)); /* keys 0..49 */
  cr_assert_eq(e, 50);
  OK(tdm_hash_find(h, keys, out, found, 100));
  for (i = 0; i < 100; i++) {
    cr_assert_eq(found[i], i >= 50, "key %zu", i);
    cr_assert_eq(out[i], i >= 50 ? i * 3 : 0, "key %zu", i);
  }
  VALID(h);
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
}

Test(hash_unit, clear_then_reuse) {
  tdm_ctx *c = cpu1();
  tdm_hash *h = make(c, TDM_U64, TDM_U64, 0, TDM_DUP_KEEP_FIRST, 0);
  uint64_t v, k;
  for (k = 0; k < 1000; k++) insert1(h, k, k + 1);
  OK(tdm_hash_clear(h));
  cr_assert_eq(tdm_hash_size(h), 0);
  VALID(h);
  cr_assert(!find1(h, 5, NULL));
  cr_assert(!find1(h, 0, NULL), "the side slot is cleared too");
  insert1(h, 5, 55);
  cr_assert(find1(h, 5, &v) && v == 55);
  cr_assert_eq(tdm_hash_size(h), 1);
  VALID(h);
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
}

/* Every duplicate policy on one batch [k:5, k:2, k:9] (within a batch), then
 * on a second batch [k:1, k:20] (against the stored value). */
Test(hash_unit, duplicate_policies) {
  tdm_ctx *c = cpu1();
  int d;
  for (d = TDM_DUP_KEEP_FIRST; d <= TDM_DUP_MAX; d++) {
    tdm_hash *h = make(c, TDM_U64, TDM_U64, 0, (tdm_dup)d, 0);
    uint64_t k1[3] = {42, 42, 42}, v1[3] = {5, 2, 9}, k2[2] = {42, 42}, v2[2] = {1, 20}, v;
    uint64_t want1 = d == TDM_DUP_KEEP_FIRST ? 5 : d == TDM_DUP_KEEP_LAST ? 9 : d == TDM_DUP_SUM ? 16
                     : d == TDM_DUP_MIN ? 2 : 9;
    OK(tdm_hash_insert(h, k1, v1, 3));
    cr_assert(find1(h, 42, &v));
    cr_assert_eq(v, want1, "policy %d after batch 1: %" PRIu64 ", want %" PRIu64, d, v, want1);
    OK(tdm_hash_insert(h, k2, v2, 2));
    cr_assert(find1(h, 42, &v));
    {
      uint64_t want2 = d == TDM_DUP_KEEP_FIRST ? 5 : d == TDM_DUP_KEEP_LAST ? 20 : d == TDM_DUP_SUM ? 37
                       : d == TDM_DUP_MIN ? 1 : 20;
      cr_assert_eq(v, want2, "policy %d after batch 2: %" PRIu64 ", want %" PRIu64, d, v, want2);
    }
    cr_assert_eq(tdm_hash_size(h), 1);
    VALID(h);
    tdm_hash_destroy(h);
  }
  tdm_ctx_destroy(c);
}

/* MIN / MAX use the value type's order: signed for i64, totalOrder for f64. */
Test(hash_unit, min_max_value_order) {
  tdm_ctx *c = cpu1();
  tdm_hash *hi = make(c, TDM_U32, TDM_I64, 0, TDM_DUP_MIN, 0);
  tdm_hash *hf = make(c, TDM_U32, TDM_F64, 0, TDM_DUP_MAX, 0);
  uint32_t k[3] = {1, 1, 1};
  int64_t iv[3] = {5, -3, 2}, iout;
  double fv[3] = {1.0, -0.0, 0.0}, fout;
  double nan_pos = __builtin_nan("1"), fv2[2] = {1e300, 0};
  uint8_t f;
  OK(tdm_hash_insert(hi, k, iv, 3));
  OK(tdm_hash_find(hi, k, &iout, &f, 1));
  cr_assert(f && iout == -3, "signed MIN gives -3, got %" PRId64, iout);
  OK(tdm_hash_insert(hf, k, fv, 3));
  OK(tdm_hash_find(hf, k, &fout, &f, 1));
  cr_assert(f && fout == 1.0);
  fv2[1] = nan_pos; /* +NaN is the largest value in totalOrder */
  OK(tdm_hash_insert(hf, k, fv2, 2));
  OK(tdm_hash_find(hf, k, &fout, &f, 1));
  cr_assert(f && fout != fout, "MAX with +NaN in totalOrder is +NaN");
  tdm_hash_destroy(hi);
  tdm_hash_destroy(hf);
  tdm_ctx_destroy(c);
}

/* 0, all-ones and the internal marker values are ordinary keys. */
Test(hash_unit, boundary_and_marker_keys) {
  tdm_ctx *c = cpu1();
  tdm_type kts[4] = {TDM_U32, TDM_U64, TDM_I32, TDM_I64};
  int t;
  for (t = 0; t < 4; t++) {
    tdm_hash *h = make(c, kts[t], TDM_U64, 0, TDM_DUP_KEEP_LAST, 0);
    uint64_t k64[6] = {0, ~0ull, TDM_HASH_TOMB64, 1, 0x8000000000000000ull, 0x7fffffffffffffffull};
    uint32_t k32[6] = {0, ~0u, TDM_HASH_TOMB32, 1, 0x80000000u, 0x7fffffffu};
    const void *keys = tdm_type_size(kts[t]) == 4 ? (const void *)k32 : (const void *)k64;
    uint64_t v[6] = {11, 22, 33, 44, 55, 66}, out[6];
    uint8_t f[6];
    size_t e, n_out, i;
    OK(tdm_hash_insert(h, keys, v, 6));
    cr_assert_eq(tdm_hash_size(h), 6);
    VALID(h);
    OK(tdm_hash_find(h, keys, out, f, 6));
    for (i = 0; i < 6; i++) cr_assert(f[i] && out[i] == v[i], "type %d key #%zu", t, i);
    {
      uint64_t ek[6], ev[6];
      OK(tdm_hash_export(h, tdm_type_size(kts[t]) == 4 ? (void *)k32 : (void *)ek, ev, 6, &n_out));
      cr_assert_eq(n_out, 6);
    }
    /* Erase the marker keys only: the rest stays. */
    if (tdm_type_size(kts[t]) == 4) {
      uint32_t m[2] = {0, TDM_HASH_TOMB32};
      OK(tdm_hash_erase(h, m, 2, &e));
    } else {
      uint64_t m[2] = {0, TDM_HASH_TOMB64};
      OK(tdm_hash_erase(h, m, 2, &e));
    }
    cr_assert_eq(e, 2);
    cr_assert_eq(tdm_hash_size(h), 4);
    VALID(h);
    tdm_hash_destroy(h);
  }
  tdm_ctx_destroy(c);
}

Test(hash_unit, find_outputs_optional) {
  tdm_ctx *c = cpu1();
  tdm_hash *h = make(c, TDM_U64, TDM_U32, 0, TDM_DUP_KEEP_FIRST, 0);
  uint64_t k[2] = {3, 4};
  uint32_t v[2] = {30, 40}, out[2];
  uint8_t f[2];
  OK(tdm_hash_insert(h, k, v, 1));
  OK(tdm_hash_find(h, k, NULL, f, 2)); /* membership test */
  cr_assert(f[0] == 1 && f[1] == 0);
  OK(tdm_hash_find(h, k, out, NULL, 2));
  cr_assert(out[0] == 30 && out[1] == 0);
  OK(tdm_hash_find(h, k, NULL, NULL, 2));
  OK(tdm_hash_find(h, NULL, NULL, NULL, 0)); /* n == 0: NULLs allowed */
  OK(tdm_hash_insert(h, NULL, NULL, 0));
  OK(tdm_hash_erase(h, NULL, 0, NULL));
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
}

/* ---- growth, capacity, memory ---------------------------------------------- */

Test(hash_unit, growth_across_many_doublings) {
  tdm_ctx *c = cpu1();
  tdm_hash *h = make(c, TDM_U64, TDM_U64, 0, TDM_DUP_KEEP_FIRST, 0);
  unsigned first_log2 = h->log2cap;
  uint64_t next = 0, i;
  size_t batch = 1;
  while (next < (1u << 17)) {
    uint64_t *k = (uint64_t *)malloc(batch * 8), *v = (uint64_t *)malloc(batch * 8);
    for (i = 0; i < batch; i++) k[i] = (next + i) * 0x9e3779b97f4a7c15ull, v[i] = next + i;
    OK(tdm_hash_insert(h, k, v, batch));
    next += batch;
    VALID(h);
    cr_assert_eq(tdm_hash_size(h), next);
    free(k);
    free(v);
    batch = batch * 3 / 2 + 1;
  }
  cr_assert_geq(h->log2cap, first_log2 + 12, "grew through at least 12 doublings");
  for (i = 0; i < next; i += 997) {
    uint64_t v;
    cr_assert(find1(h, i * 0x9e3779b97f4a7c15ull, &v) && v == i);
  }
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
}

/* Growth on one thread writes the new table without clearing it first
 * (hash_cpu_impl.h, rehash_stream): the memory may be a recycled mapping
 * holding an old table. Fill the context's mapping cache with the blocks of
 * a full table, then grow a second table by small batches into them. Among
 * the keys are runs whose hashes have the top bits all ones, so their homes
 * are the last buckets and their probes wrap to the front of the old table
 * (the rehash places those last), and keys equal to the markers (side
 * slots). */
Test(hash_unit, cpu_growth_into_recycled_memory) {
  tdm_ctx *c = cpu1();
  tdm_hash *junk = make(c, TDM_U64, TDM_U64, 0, TDM_DUP_KEEP_LAST, 0), *h;
  size_t n = 600000, cap = n + n / 2000 + 3, i, nb = 0;
  uint64_t *k = malloc(cap * 8), *v = malloc(cap * 8), *out = malloc(cap * 8);
  uint8_t *f = malloc(cap);
  uint64_t x = 11, held0, held1;
  size_t held;
  int blocks;
  long hits0, hits1;
  cr_assert(k && v && out && f);
  for (i = 0; i < n; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    k[nb] = x ^ (x >> 31);
    v[nb] = ~(uint64_t)i;
    nb++;
    if (i % 2000 == 0) { /* a hash just below 2^64: home in the last bucket */
      k[nb] = tdm__hash_unmix(~(uint64_t)0 - i * 7919u);
      v[nb] = i;
      nb++;
    }
  }
  k[nb] = TDM_HASH_EMPTY, v[nb++] = 5;
  k[nb] = TDM_HASH_TOMB64, v[nb++] = 6;
  /* Junk: a full table of other keys, then destroyed into the cache. */
  for (i = 0; i < nb; i += 65536) {
    size_t m = nb - i < 65536 ? nb - i : 65536, q;
    for (q = 0; q < m; q++) out[q] = k[i + q] * 3 + 1;
    OK(tdm_hash_insert(junk, out, out, m));
  }
  tdm_hash_destroy(junk);
  tdm__map_cache_stats(&c->maps, &held, &blocks, &hits0);
  cr_assert_gt(held, 0, "the destroyed table's mappings were kept");
  held0 = held;
  h = make(c, TDM_U64, TDM_U64, 0, TDM_DUP_KEEP_LAST, 0);
  for (i = 0; i < nb; i += 4096) {
    size_t m = nb - i < 4096 ? nb - i : 4096;
    OK(tdm_hash_insert(h, k + i, v + i, m));
    if (i % (16 * 4096) == 0) VALID(h);
  }
  VALID(h);
  tdm__map_cache_stats(&c->maps, &held, &blocks, &hits1);
  held1 = held;
  cr_assert_gt(hits1, hits0, "growth took recycled mappings (held %" PRIu64 " then %" PRIu64 ")", held0, held1);
  cr_assert_eq(tdm_hash_size(h), nb);
  OK(tdm_hash_find(h, k, out, f, nb));
  for (i = 0; i < nb; i++) {
    cr_assert_eq(f[i], 1, "key %zu (%" PRIx64 ") lost in growth", i, k[i]);
    cr_assert_eq(out[i], v[i], "key %zu: value", i);
  }
  for (i = 0; i < nb; i++) out[i] = k[i] * 3 + 1; /* the junk keys are not there */
  OK(tdm_hash_find(h, out, NULL, f, nb));
  for (i = 0; i < nb; i++) cr_assert_eq(f[i], 0, "junk key %zu (%" PRIx64 ") found", i, out[i]);
  tdm_hash_destroy(h);
  free(k);
  free(v);
  free(out);
  free(f);
  tdm_ctx_destroy(c);
}

/* Sorted export of a u64 -> u64 table, for before/after comparisons. */
static int cmp_pair(const void *a, const void *b) {
  const uint64_t *x = (const uint64_t *)a, *y = (const uint64_t *)b;
  return (x[0] > y[0]) - (x[0] < y[0]);
}
static uint64_t *snapshot(const tdm_hash *h, size_t *n) {
  size_t sz = tdm_hash_size(h), i, got;
  uint64_t *k = (uint64_t *)malloc(sz * 8 + 8), *v = (uint64_t *)malloc(sz * 8 + 8);
  uint64_t *pairs = (uint64_t *)malloc(sz * 16 + 16);
  OK(tdm_hash_export(h, k, v, sz, &got));
  cr_assert_eq(got, sz);
  for (i = 0; i < sz; i++) pairs[2 * i] = k[i], pairs[2 * i + 1] = v[i];
  qsort(pairs, sz, 16, cmp_pair);
  free(k);
  free(v);
  *n = sz;
  return pairs;
}
static void assert_same(const uint64_t *a, size_t na, const uint64_t *b, size_t nb, const char *what) {
  cr_assert_eq(na, nb, "%s: size %zu vs %zu (TANDEM_SEED=%" PRIu64 ")", what, na, nb, prop_seed());
  cr_assert(memcmp(a, b, na * 16) == 0, "%s: contents differ (TANDEM_SEED=%" PRIu64 ")", what, prop_seed());
}

Test(hash_unit, fixed_capacity_refusal_leaves_table_intact) {
  tdm_ctx *c = cpu1();
  tdm_hash *h = make(c, TDM_U64, TDM_U64, 100, TDM_DUP_KEEP_FIRST, 1);
  uint64_t k[400], v[400], *before, *after;
  size_t i, nb, na, cap_before = h->cap, e;
  for (i = 0; i < 400; i++) k[i] = i * 7 + 1, v[i] = i;
  OK(tdm_hash_insert(h, k, v, 100));
  before = snapshot(h, &nb);
  cr_assert_eq(tdm_hash_insert(h, k + 100, v + 100, 300), TDM_ERR_CAPACITY);
  cr_assert(strlen(tdm_last_error()) > 0);
  after = snapshot(h, &na);
  assert_same(before, nb, after, na, "after a refused insert");
  cr_assert_eq(h->cap, cap_before, "a fixed table never grows");
  VALID(h);
  /* Erase / insert cycles reclaim tombstones without growing. */
  for (i = 0; i < 50; i++) {
    OK(tdm_hash_erase(h, k, 100, &e));
    OK(tdm_hash_insert(h, k + 100 + (i % 3) * 100, v, 100));
    OK(tdm_hash_erase(h, k + 100 + (i % 3) * 100, 100, &e));
    cr_assert_eq(e, 100);
    OK(tdm_hash_insert(h, k, v, 100));
    VALID(h);
  }
  cr_assert_eq(h->cap, cap_before);
  free(before);
  free(after);
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
}

Test(hash_unit, out_of_memory_during_growth_leaves_table_intact) {
  tdm_ctx *c = cpu1();
  tdm_hash *h = make(c, TDM_U64, TDM_U64, 0, TDM_DUP_KEEP_LAST, 0);
  uint64_t k[5000], v[5000], *before, *after;
  size_t i, nb, na;
  unsigned log2_before;
  tdm_status s;
  for (i = 0; i < 5000; i++) k[i] = i * 0x10001 + 3, v[i] = ~i;
  OK(tdm_hash_insert(h, k, v, 10));
  before = snapshot(h, &nb);
  log2_before = h->log2cap;
  tdm_test_alloc_fail_at(1); /* the new table's allocation fails */
  s = tdm_hash_insert(h, k, v, 5000);
  tdm_test_alloc_fail_at(0);
  cr_assert_eq(s, TDM_ERR_OUT_OF_MEMORY, "got %s", tdm_status_name(s));
  after = snapshot(h, &na);
  assert_same(before, nb, after, na, "after out of memory");
  cr_assert_eq(h->log2cap, log2_before);
  VALID(h);
  OK(tdm_hash_insert(h, k, v, 5000)); /* and it works once memory is back */
  cr_assert_eq(tdm_hash_size(h), 5000);
  VALID(h);
  free(before);
  free(after);
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
}

/* A dense batch takes scratch for its partitions, then the grown table:
 * whichever allocation fails, the insert either completes (without scratch it
 * takes the plain path) or fails with the table as it was. */
Test(hash_unit, out_of_memory_anywhere_in_a_dense_insert) {
  size_t n = 100000, i, nb, na;
  uint64_t *k = (uint64_t *)malloc(n * 8), *v = (uint64_t *)malloc(n * 8), *before, *after;
  long fail;
  int saw_oom = 0;
  for (i = 0; i < n; i++) k[i] = i * 0x9e3779b97f4a7c15ull + 7, v[i] = i;
  for (fail = 1; fail <= 4; fail++) {
    tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 2);
    tdm_hash *h = make(c, TDM_U64, TDM_U64, 0, TDM_DUP_KEEP_FIRST, 0);
    tdm_status s;
    OK(tdm_hash_insert(h, k, v, 10));
    before = snapshot(h, &nb);
    tdm_test_alloc_fail_at(fail);
    s = tdm_hash_insert(h, k, v, n);
    tdm_test_alloc_fail_at(0);
    if (s == TDM_ERR_OUT_OF_MEMORY) {
      saw_oom = 1;
      after = snapshot(h, &na);
      assert_same(before, nb, after, na, "after out of memory");
      free(after);
    } else {
      cr_assert_eq(s, TDM_OK, "allocation %ld failing: %s", fail, tdm_status_name(s));
      cr_assert_eq(tdm_hash_size(h), n);
    }
    VALID(h);
    free(before);
    tdm_hash_destroy(h);
    tdm_ctx_destroy(c);
  }
  cr_assert(saw_oom, "some failing allocation must surface as TDM_ERR_OUT_OF_MEMORY");
  free(k);
  free(v);
}

Test(hash_unit, out_of_memory_at_create) {
  tdm_ctx *c = cpu1();
  tdm_hash_opts o = {TDM_U64, TDM_U64, 1000, 0, 0, TDM_DUP_KEEP_FIRST};
  tdm_hash *h = NULL;
  long k;
  for (k = 1; k <= 2; k++) {
    tdm_test_alloc_fail_at(k);
    cr_assert_eq(tdm_hash_create(c, &o, &h), TDM_ERR_OUT_OF_MEMORY);
    tdm_test_alloc_fail_at(0);
    cr_assert_null(h);
  }
  tdm_ctx_destroy(c);
}

Test(hash_unit, export_capacity_error) {
  tdm_ctx *c = cpu1();
  tdm_hash *h = make(c, TDM_U64, TDM_U64, 0, TDM_DUP_KEEP_FIRST, 0);
  uint64_t k[3] = {1, 2, 3}, v[3] = {4, 5, 6}, ko[3], vo[3];
  size_t n = 0;
  OK(tdm_hash_insert(h, k, v, 3));
  cr_assert_eq(tdm_hash_export(h, ko, vo, 2, &n), TDM_ERR_CAPACITY);
  cr_assert_eq(n, 3, "n_out carries the size needed");
  OK(tdm_hash_export(h, ko, vo, 3, &n));
  cr_assert_eq(n, 3);
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
}

Test(hash_unit, argument_errors) {
  tdm_ctx *c = cpu1();
  tdm_hash_opts o = {TDM_U64, TDM_U64, 0, 0, 0, TDM_DUP_KEEP_FIRST};
  tdm_hash *h = NULL;
  uint64_t k[4] = {1, 2, 3, 4}, v[4] = {0};
  uint8_t f[4];
  size_t n;

  cr_assert_eq(tdm_hash_create(NULL, &o, &h), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_hash_create(c, NULL, &h), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_hash_create(c, &o, NULL), TDM_ERR_INVALID_ARGUMENT);
  o.key_type = (tdm_type)99;
  cr_assert_eq(tdm_hash_create(c, &o, &h), TDM_ERR_INVALID_ARGUMENT);
  o.key_type = TDM_F64;
  cr_assert_eq(tdm_hash_create(c, &o, &h), TDM_ERR_UNSUPPORTED);
  o.key_type = TDM_F32;
  cr_assert_eq(tdm_hash_create(c, &o, &h), TDM_ERR_UNSUPPORTED);
  o.key_type = TDM_U64;
  o.value_type = (tdm_type)0;
  cr_assert_eq(tdm_hash_create(c, &o, &h), TDM_ERR_INVALID_ARGUMENT);
  o.value_type = TDM_F32;
  o.on_duplicate = TDM_DUP_SUM;
  cr_assert_eq(tdm_hash_create(c, &o, &h), TDM_ERR_UNSUPPORTED);
  o.on_duplicate = (tdm_dup)7;
  cr_assert_eq(tdm_hash_create(c, &o, &h), TDM_ERR_INVALID_ARGUMENT);
  o.on_duplicate = TDM_DUP_MAX;
  o.max_load = 1.0;
  cr_assert_eq(tdm_hash_create(c, &o, &h), TDM_ERR_INVALID_ARGUMENT);
  o.max_load = -0.5;
  cr_assert_eq(tdm_hash_create(c, &o, &h), TDM_ERR_INVALID_ARGUMENT);
  o.max_load = 0.5;
  o.capacity = (size_t)-1;
  cr_assert_eq(tdm_hash_create(c, &o, &h), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_null(h);
  o.capacity = 0;
  o.value_type = TDM_U64;
  OK(tdm_hash_create(c, &o, &h));

  cr_assert_eq(tdm_hash_insert(NULL, k, v, 1), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_hash_insert(h, NULL, v, 1), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_hash_insert(h, k, NULL, 1), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_hash_insert(h, k, v, (size_t)-1 / 4), TDM_ERR_INVALID_ARGUMENT, "size overflow");
  cr_assert_eq(tdm_hash_find(NULL, k, v, f, 1), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_hash_find(h, NULL, v, f, 1), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_hash_find(h, k, k + 1, f, 2), TDM_ERR_INVALID_ARGUMENT, "keys and values_out overlap");
  cr_assert_eq(tdm_hash_find(h, k, v, (uint8_t *)v, 2), TDM_ERR_INVALID_ARGUMENT, "outputs overlap");
  cr_assert_eq(tdm_hash_erase(NULL, k, 1, &n), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_hash_erase(h, NULL, 1, &n), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_hash_export(NULL, k, v, 4, &n), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_hash_clear(NULL), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_hash_validate(NULL), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_hash_size(NULL), 0);
  tdm_hash_destroy(NULL);
  OK(tdm_hash_insert(h, k, v, 4));
  cr_assert_eq(tdm_hash_export(h, NULL, v, 4, &n), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(tdm_hash_export(h, k, k, 4, &n), TDM_ERR_INVALID_ARGUMENT, "outputs overlap");
  cr_assert_eq(tdm_hash_size(h), 4, "failed calls change nothing");
  VALID(h);
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
}

/* validate notices a broken invariant and names the slot. */
Test(hash_unit, validate_names_the_broken_slot) {
  tdm_ctx *c = cpu1();
  tdm_hash *h = make(c, TDM_U64, TDM_U64, 8, TDM_DUP_KEEP_FIRST, 0);
  tdm__hslot_k64v64 *s = (tdm__hslot_k64v64 *)tdm__hash_cpu_of(h)->slots;
  uint64_t k = 12345, pos;
  insert1(h, k, 1);
  pos = tdm__hs_lookup_k64v64(s, h->log2cap, k, tdm__hs_start_k64v64(k, h->log2cap), 0);
  cr_assert_neq(pos, TDM_HASH_NONE);
  s[pos].k = TDM_HASH_EMPTY; /* lose the key: size no longer matches */
  cr_assert_eq(tdm_hash_validate(h), TDM_ERR_CORRUPT);
  s[pos].k = k;
  VALID(h);
  s[(pos + 1) & (h->cap - 1)].k = k; /* store it twice */
  h->size++;
  cr_assert_eq(tdm_hash_validate(h), TDM_ERR_CORRUPT);
  cr_assert(strstr(tdm_last_error(), "slot") != NULL, "message: %s", tdm_last_error());
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
}

/* The CPU tag bytes (cpu.h) describe their slots exactly after every kind of
 * write: claims of empty slots and tombstones, erases that leave a tombstone
 * or an empty slot, growth, the partitioned insert, several threads, clear.
 * validate compares every tag with its slot, and a corrupted tag is caught. */
Test(hash_unit, cpu_tags_follow_every_write) {
  tdm_ctx *c1 = cpu1(), *c2 = prop_ctx(TDM_BACKEND_CPU, 2);
  tdm_ctx *cs[2] = {c1, c2};
  size_t n = 200000, i, e;
  uint64_t *k = malloc(n * 8), *v = malloc(n * 8), *out = malloc(n * 8), x = 7;
  uint8_t *f = malloc(n);
  int ci;
  cr_assert(k && v && out && f);
  for (i = 0; i < n; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    k[i] = x ^ (x >> 29);
    v[i] = i;
  }
  for (ci = 0; ci < 2; ci++) {
    tdm_hash *h = make(cs[ci], TDM_U64, TDM_U64, 0, TDM_DUP_KEEP_LAST, 0);
    tdm__hash_cpu *hc;
    /* Small batches grow the table through many rehashes; one large batch
     * into a table of about its size takes the partitioned path. */
    for (i = 0; i < n / 2; i += 1000) OK(tdm_hash_insert(h, k + i, v + i, 1000));
    VALID(h);
    OK(tdm_hash_insert(h, k + n / 2, v + n / 2, n / 2));
    VALID(h);
    /* Erase every third key (tombstones and emptied slots), then put half of
     * them back (claims of tombstones). */
    for (i = 0; i < n; i += 3) out[i / 3] = k[i];
    OK(tdm_hash_erase(h, out, (n + 2) / 3, &e));
    cr_assert_eq(e, (n + 2) / 3);
    VALID(h);
    OK(tdm_hash_insert(h, out, out, (n + 2) / 6));
    VALID(h);
    OK(tdm_hash_find(h, k, out, f, n));
    for (i = 0; i < n; i++) {
      int erased = i % 3 == 0, back = erased && i / 3 < (n + 2) / 6;
      cr_assert_eq(f[i], !erased || back, "key %zu: found %d", i, f[i]);
      cr_assert_eq(out[i], back ? k[i] : erased ? 0 : v[i], "key %zu: value", i);
    }
    /* A wrong tag is noticed. */
    hc = tdm__hash_cpu_of(h);
    for (i = 0; hc->tags[i] == TDM__HC_TAG_EMPTY; i++) {
    }
    hc->tags[i] ^= 0x40;
    cr_assert_eq(tdm_hash_validate(h), TDM_ERR_CORRUPT);
    cr_assert(strstr(tdm_last_error(), "tag") != NULL, "message: %s", tdm_last_error());
    hc->tags[i] ^= 0x40;
    VALID(h);
    OK(tdm_hash_clear(h));
    VALID(h);
    OK(tdm_hash_find(h, k, NULL, f, n));
    for (i = 0; i < n; i++) cr_assert_eq(f[i], 0);
    tdm_hash_destroy(h);
  }
  free(k);
  free(v);
  free(out);
  free(f);
  tdm_ctx_destroy(c1);
  tdm_ctx_destroy(c2);
}

/* A find whose key shares its home bucket and its tag byte with stored keys
 * (false tag matches) still answers from the slots: absent keys are absent,
 * present ones found, whichever of several equal tags comes first. */
Test(hash_unit, cpu_find_past_false_tag_matches) {
  tdm_ctx *c = cpu1();
  tdm_hash *h = make(c, TDM_U64, TDM_U64, 400, TDM_DUP_KEEP_FIRST, 1);
  unsigned l = h->log2cap;
  uint64_t same[4], k, home = 0, v;
  uint8_t tag = 0;
  int m = 0;
  /* Four keys with one home and one tag: three stored, one absent. */
  for (k = 1; m < 4; k++) {
    uint64_t hm = tdm__hs_start_k64v64(k, l);
    uint8_t t = tdm__hc_tag(tdm__hash_mix(k));
    if (m == 0) {
      home = hm;
      tag = t;
    }
    if (hm == home && t == tag) same[m++] = k;
  }
  for (m = 0; m < 3; m++) insert1(h, same[m], 100 + (uint64_t)m);
  VALID(h);
  for (m = 0; m < 3; m++) cr_assert(find1(h, same[m], &v) && v == 100 + (uint64_t)m, "stored key %d", m);
  cr_assert(!find1(h, same[3], &v) && v == 0, "the absent key matches three tags and is still absent");
  /* With the first one erased (a tombstone ahead of the others). */
  cr_assert_eq(erase1(h, same[0]), 1);
  VALID(h);
  cr_assert(!find1(h, same[0], NULL));
  cr_assert(find1(h, same[2], &v) && v == 102);
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
}

/* ---- model-based properties -------------------------------------------------
 * An operation sequence is an array of u64 words (so prop_check can shrink it):
 *   bits 63..62  op: 0 insert, 1 find, 2 erase, 3 clear
 *   bit  61      ends the current batch
 *   bits 60..32  value seed
 *   bits 31..0   index into the key pool
 * Consecutive words of the same op form one batch until a word ends it. */

enum { POOL_MAX = 4096 };

typedef struct model_env {
  tdm_backend backend;
  int threads;
  tdm_type kt, vt;
  tdm_dup dup;
  size_t capacity;
  double max_load;
  int fixed;
  size_t pool_n;
  uint64_t pool[POOL_MAX]; /* keys, in the low bytes for 32-bit types */
} model_env;

static uint64_t mix_value(uint64_t seed, tdm_type vt) {
  static const uint64_t special64[8] = {0, ~0ull, 0x8000000000000000ull, 0x7fffffffffffffffull,
                                        0x7ff8000000000001ull, 0xfff8000000000002ull, 0x7ff0000000000000ull, 1};
  static const uint32_t special32[8] = {0, ~0u, 0x80000000u, 0x7fffffffu, 0x7fc00001u, 0xffc00002u, 0x7f800000u, 1};
  uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ull;
  x ^= x >> 29;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 32;
  if ((seed & 7) == 0) return tdm_type_size(vt) == 4 ? special32[(seed >> 3) & 7] : special64[(seed >> 3) & 7];
  if ((seed & 7) == 1) x &= 0xff; /* small values: sums stay readable */
  return tdm_type_size(vt) == 4 ? (uint32_t)x : x;
}

static void put(void *a, size_t i, size_t w, uint64_t x) {
  if (w == 4) ((uint32_t *)a)[i] = (uint32_t)x;
  else ((uint64_t *)a)[i] = x;
}
static uint64_t get(const void *a, size_t i, size_t w) {
  return w == 4 ? ((const uint32_t *)a)[i] : ((const uint64_t *)a)[i];
}

/* The reference policy, written independently of the library. */
static uint64_t ref_combine(tdm_dup d, tdm_type vt, uint64_t old, uint64_t in) {
  size_t w = tdm_type_size(vt);
  uint64_t mask = w == 4 ? 0xffffffffull : ~0ull;
  uint32_t o32 = (uint32_t)old, i32 = (uint32_t)in;
  const void *po = w == 4 ? (const void *)&o32 : (const void *)&old;
  const void *pi = w == 4 ? (const void *)&i32 : (const void *)&in;
  switch (d) {
  case TDM_DUP_KEEP_FIRST: return old;
  case TDM_DUP_KEEP_LAST: return in;
  case TDM_DUP_SUM: return (old + in) & mask;
  case TDM_DUP_MIN: return prop_cmp_keys(vt, pi, po) < 0 ? in : old;
  default: return prop_cmp_keys(vt, pi, po) > 0 ? in : old;
  }
}

static int model_property(void *penv, const void *input, size_t n, char *why, size_t wl) {
  model_env *e = (model_env *)penv;
  const uint64_t *ops = (const uint64_t *)input;
  size_t ks = tdm_type_size(e->kt), vs = tdm_type_size(e->vt), i = 0, j;
  uint8_t *present = (uint8_t *)calloc(e->pool_n, 1);
  uint64_t *ref = (uint64_t *)calloc(e->pool_n, 8);
  void *keys = malloc(n * 8 + 8), *vals = malloc(n * 8 + 8), *out = malloc(n * 8 + 8);
  uint8_t *found = (uint8_t *)malloc(n + 1);
  size_t *idx = (size_t *)malloc(n * sizeof(size_t) + 8);
  size_t ref_size = 0, step = 0;
  tdm_ctx *c = prop_ctx(e->backend, e->threads);
  tdm_hash_opts o = {e->kt, e->vt, e->capacity, e->max_load, e->fixed, e->dup};
  tdm_hash *h = NULL;
  tdm_status s;
  int ok = 1;

  cr_assert(present && ref && keys && vals && out && found && idx);
  s = tdm_hash_create(c, &o, &h);
  cr_assert(s == TDM_OK, "create: %s", tdm_last_error());
  while (i < n && ok) {
    unsigned op = (unsigned)(ops[i] >> 62);
    size_t m = 0;
    /* Gather one batch. */
    while (i < n && (unsigned)(ops[i] >> 62) == op) {
      size_t p = (size_t)(ops[i] & 0xffffffffu) % e->pool_n;
      idx[m] = p;
      put(keys, m, ks, e->pool[p]);
      put(vals, m, vs, mix_value((ops[i] >> 32) & 0x1fffffffu, e->vt));
      m++;
      if ((ops[i++] >> 61) & 1) break;
    }
    step++;
    if (op == 0) {
      s = tdm_hash_insert(h, keys, vals, m);
      if (s == TDM_ERR_CAPACITY && e->fixed) continue; /* refused: must be unchanged, checked below */
      if (s != TDM_OK) {
        snprintf(why, wl, "step %zu: insert of %zu: %s: %s", step, m, tdm_status_name(s), tdm_last_error());
        ok = 0;
        break;
      }
      for (j = 0; j < m; j++) {
        size_t p = idx[j];
        uint64_t v = get(vals, j, vs);
        if (!present[p]) present[p] = 1, ref[p] = v, ref_size++;
        else ref[p] = ref_combine(e->dup, e->vt, ref[p], v);
      }
    } else if (op == 1) {
      s = tdm_hash_find(h, keys, out, found, m);
      if (s != TDM_OK) {
        snprintf(why, wl, "step %zu: find: %s: %s", step, tdm_status_name(s), tdm_last_error());
        ok = 0;
        break;
      }
      for (j = 0; j < m && ok; j++) {
        size_t p = idx[j];
        uint64_t want = present[p] ? ref[p] : 0, got = get(out, j, vs);
        if (found[j] != present[p] || got != want) {
          snprintf(why, wl, "step %zu: find key 0x%" PRIx64 ": found %d value 0x%" PRIx64 ", want %d 0x%" PRIx64,
                   step, e->pool[p], found[j], got, present[p], want);
          ok = 0;
        }
      }
    } else if (op == 2) {
      size_t erased = 0, want = 0;
      s = tdm_hash_erase(h, keys, m, &erased);
      for (j = 0; j < m; j++)
        if (present[idx[j]]) present[idx[j]] = 0, ref[idx[j]] = 0, want++;
      ref_size -= want;
      if (s != TDM_OK || erased != want) {
        snprintf(why, wl, "step %zu: erase of %zu: %s, erased %zu, want %zu", step, m, tdm_status_name(s), erased,
                 want);
        ok = 0;
      }
    } else {
      s = tdm_hash_clear(h);
      memset(present, 0, e->pool_n);
      memset(ref, 0, e->pool_n * 8);
      ref_size = 0;
      if (s != TDM_OK) snprintf(why, wl, "step %zu: clear: %s", step, tdm_status_name(s)), ok = 0;
    }
    if (ok && op != 1) {
      s = tdm_hash_validate(h);
      if (s != TDM_OK) {
        snprintf(why, wl, "step %zu: validate after %s: %s", step, op == 0 ? "insert" : op == 2 ? "erase" : "clear",
                 tdm_last_error());
        ok = 0;
      } else if (tdm_hash_size(h) != ref_size) {
        snprintf(why, wl, "step %zu: size %zu, want %zu", step, tdm_hash_size(h), ref_size);
        ok = 0;
      }
    }
  }
  /* Final contents, exported, against the reference. */
  if (ok) {
    size_t sz = tdm_hash_size(h), got = 0, hits = 0;
    void *ek = malloc(sz * 8 + 8), *ev = malloc(sz * 8 + 8);
    s = tdm_hash_export(h, ek, ev, sz, &got);
    if (s != TDM_OK || got != ref_size) {
      snprintf(why, wl, "export: %s, %zu keys, want %zu", tdm_status_name(s), got, ref_size);
      ok = 0;
    }
    for (j = 0; j < got && ok; j++) {
      uint64_t k = get(ek, j, ks), v = get(ev, j, vs);
      size_t p;
      for (p = 0; p < e->pool_n; p++)
        if (e->pool[p] == k) break;
      if (p == e->pool_n || !present[p] || ref[p] != v) {
        snprintf(why, wl, "export: key 0x%" PRIx64 " value 0x%" PRIx64 " is not in the reference", k, v);
        ok = 0;
      }
      hits++;
    }
    free(ek);
    free(ev);
  }
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
  free(present);
  free(ref);
  free(keys);
  free(vals);
  free(out);
  free(found);
  free(idx);
  return ok;
}

/* A pool of distinct keys: the boundary and marker values, then small
 * consecutive ones and random ones. */
static void make_pool(model_env *e, prop_rng *r, size_t n) {
  size_t ks = tdm_type_size(e->kt), m = 0, i;
  uint64_t special[8] = {0, ~0ull, TDM_HASH_TOMB64, 1, 0x8000000000000000ull, 0x7fffffffffffffffull, 2, 3};
  if (ks == 4) {
    special[1] = 0xffffffffu;
    special[2] = TDM_HASH_TOMB32;
    special[4] = 0x80000000u;
    special[5] = 0x7fffffffu;
  }
  for (i = 0; i < 8 && m < n; i++) e->pool[m++] = special[i];
  while (m < n) {
    uint64_t k = prop_below(r, 2) ? 4 + prop_below(r, 4 * n) : prop_next(r);
    if (ks == 4) k &= 0xffffffffu;
    for (i = 0; i < m; i++)
      if (e->pool[i] == k) break;
    if (i == m) e->pool[m++] = k;
  }
  e->pool_n = m;
}

/* Random op words: batches of 1..max_batch; inserts most, then finds. */
static uint64_t *make_ops(prop_rng *r, size_t n, size_t max_batch, size_t pool_n) {
  uint64_t *ops = (uint64_t *)malloc(n * 8 + 8);
  size_t i = 0;
  while (i < n) {
    uint64_t roll = prop_below(r, 100), op = roll < 45 ? 0 : roll < 75 ? 1 : roll < 98 ? 2 : 3;
    size_t b = op == 3 ? 1 : 1 + (size_t)prop_below(r, max_batch), j;
    for (j = 0; j < b && i < n; j++, i++) {
      ops[i] = (op << 62) | (prop_below(r, 1u << 29) << 32) | prop_below(r, pool_n);
      if (j + 1 == b) ops[i] |= 1ull << 61;
    }
  }
  return ops;
}

static void run_model(tdm_type kt, tdm_type vt, int cases, size_t ops_n) {
  static const tdm_dup dups[5] = {TDM_DUP_KEEP_FIRST, TDM_DUP_KEEP_LAST, TDM_DUP_SUM, TDM_DUP_MIN, TDM_DUP_MAX};
  tdm_backend bs[2];
  int nb = prop_backends(bs), b, cs, d;
  model_env *e = (model_env *)calloc(1, sizeof *e);
  for (b = 0; b < nb; b++)
    for (d = 0; d < 5; d++) {
      if (dups[d] == TDM_DUP_SUM && (vt == TDM_F32 || vt == TDM_F64)) continue;
      for (cs = 0; cs < cases; cs++) {
        uint64_t id = ((uint64_t)kt << 40) ^ ((uint64_t)vt << 32) ^ ((uint64_t)d << 24) ^ ((uint64_t)b << 20) ^ (uint64_t)cs;
        prop_rng r;
        uint64_t *ops;
        char name[96];
        prop_rng_init(&r, id);
        e->backend = bs[b];
        e->threads = 1 + (int)prop_below(&r, 2);
        e->kt = kt;
        e->vt = vt;
        e->dup = dups[d];
        e->fixed = prop_below(&r, 4) == 0;
        e->capacity = e->fixed ? 64 + prop_below(&r, 64) : prop_below(&r, 3) == 0 ? prop_below(&r, 200) : 0;
        e->max_load = prop_below(&r, 3) == 0 ? 0.3 + 0.65 * (double)prop_below(&r, 100) / 100.0 : 0.0;
        make_pool(e, &r, cs % 2 ? 24 : 8 + (size_t)prop_below(&r, 300));
        ops = make_ops(&r, ops_n, 1 + (size_t)prop_below(&r, 40), e->pool_n);
        snprintf(name, sizeof name, "hash model %s->%s %s dup %d", tdm_type_name(kt), tdm_type_name(vt),
                 bs[b] == TDM_BACKEND_CUDA ? "cuda" : "cpu", (int)dups[d]);
        prop_check(name, id, TDM_U64, 8, ops, ops_n, model_property, e);
        free(ops);
      }
    }
  free(e);
}

Test(hash_model, u64_u64) { run_model(TDM_U64, TDM_U64, 20, 600); }
Test(hash_model, u32_u32) { run_model(TDM_U32, TDM_U32, 20, 600); }
Test(hash_model, i32_f64) { run_model(TDM_I32, TDM_F64, 10, 400); }
Test(hash_model, i64_f32) { run_model(TDM_I64, TDM_F32, 10, 400); }
Test(hash_model, u32_i64) { run_model(TDM_U32, TDM_I64, 10, 400); }
Test(hash_model, u64_i32) { run_model(TDM_U64, TDM_I32, 10, 400); }

/* ---- multi-threaded paths ------------------------------------------------------ */

/* Inserts k / v [0, n) in calls of at most `batch` keys, erases the first
 * third, re-inserts the second half: one fixed call sequence. */
static void run_sequence(tdm_hash *h, const uint64_t *k, const uint64_t *v, size_t n, size_t batch, size_t *erased) {
  size_t i, e;
  for (i = 0; i < n; i += batch) OK(tdm_hash_insert(h, k + i, v + i, n - i < batch ? n - i : batch));
  *erased = 0;
  for (i = 0; i < n / 3; i += batch) {
    OK(tdm_hash_erase(h, k + i, n / 3 - i < batch ? n / 3 - i : batch, &e));
    *erased += e;
  }
  for (i = 0; i < n / 2; i += batch) OK(tdm_hash_insert(h, k + n / 2 + i, v + i, n / 2 - i < batch ? n / 2 - i : batch));
}

/* Big batches with many duplicates (and both marker values among the keys):
 * 1 and 2 threads, which take the partitioned insert path, give exactly what
 * small batches give (the plain path, one thread), for every policy, through
 * growth, erase and tombstone reuse. */
Test(hash_parallel, big_batches_agree_with_small_batches) {
  static const tdm_dup dups[5] = {TDM_DUP_KEEP_FIRST, TDM_DUP_KEEP_LAST, TDM_DUP_SUM, TDM_DUP_MIN, TDM_DUP_MAX};
  size_t n = 300000, i, na, nb, nc;
  uint64_t *k = (uint64_t *)malloc(n * 8), *v = (uint64_t *)malloc(n * 8);
  prop_rng r;
  int d;
  prop_rng_init(&r, 0x7a11);
  for (i = 0; i < n; i++) {
    /* ~5 copies of each key; 0 and 1 * 0x9e37... (the tombstone value) included */
    k[i] = prop_below(&r, 60000) * 0x9e3779b97f4a7c15ull;
    v[i] = prop_next(&r) >> (prop_below(&r, 64));
  }
  for (d = 0; d < 5; d++) {
    tdm_ctx *c1 = prop_ctx(TDM_BACKEND_CPU, 1), *c2 = prop_ctx(TDM_BACKEND_CPU, 2);
    tdm_hash *h1 = make(c1, TDM_U64, TDM_U64, 0, dups[d], 0), *h2 = make(c2, TDM_U64, TDM_U64, 0, dups[d], 0);
    tdm_hash *h3 = make(c1, TDM_U64, TDM_U64, 0, dups[d], 0);
    uint64_t *a, *b, *ref;
    size_t e1, e2, e3;
    run_sequence(h1, k, v, n, n, &e1);
    run_sequence(h2, k, v, n, n, &e2);
    run_sequence(h3, k, v, n, 1000, &e3);
    cr_assert(e1 == e3 && e2 == e3, "erase counts %zu %zu %zu", e1, e2, e3);
    VALID(h1);
    VALID(h2);
    VALID(h3);
    a = snapshot(h1, &na);
    b = snapshot(h2, &nb);
    ref = snapshot(h3, &nc);
    assert_same(a, na, ref, nc, "1 thread, big batches vs small batches");
    assert_same(b, nb, ref, nc, "2 threads, big batches vs small batches");
    free(a);
    free(b);
    free(ref);
    tdm_hash_destroy(h1);
    tdm_hash_destroy(h2);
    tdm_hash_destroy(h3);
    tdm_ctx_destroy(c1);
    tdm_ctx_destroy(c2);
  }
  free(k);
  free(v);
}

/* Sorted (key, value) pairs of any table, widened to u64, for comparisons. */
static uint64_t *snapshot_any(const tdm_hash *h, size_t ks, size_t vs, size_t *n) {
  size_t sz = tdm_hash_size(h), i, got;
  char *k = (char *)malloc(sz * ks + 8), *v = (char *)malloc(sz * vs + 8);
  uint64_t *pairs = (uint64_t *)malloc(sz * 16 + 16);
  OK(tdm_hash_export(h, k, v, sz, &got));
  for (i = 0; i < sz; i++) pairs[2 * i] = get(k, i, ks), pairs[2 * i + 1] = get(v, i, vs);
  qsort(pairs, sz, 16, cmp_pair);
  free(k);
  free(v);
  *n = sz;
  return pairs;
}

/* The partitioned path on the other key / value widths (marker keys
 * included): one big call on 2 threads equals small calls on 1 thread. */
Test(hash_parallel, big_batches_all_widths) {
  static const tdm_type kts[3] = {TDM_U32, TDM_U32, TDM_I64}, vts[3] = {TDM_U32, TDM_F64, TDM_I32};
  static const tdm_dup dups[3] = {TDM_DUP_SUM, TDM_DUP_MAX, TDM_DUP_KEEP_FIRST};
  size_t n = 200000, i, j, na, nb;
  prop_rng r;
  int c;
  prop_rng_init(&r, 0x3a3a);
  for (c = 0; c < 3; c++) {
    size_t ks = tdm_type_size(kts[c]), vs = tdm_type_size(vts[c]);
    char *k = (char *)malloc(n * ks), *v = (char *)malloc(n * vs);
    tdm_ctx *c1 = prop_ctx(TDM_BACKEND_CPU, 1), *c2 = prop_ctx(TDM_BACKEND_CPU, 2);
    tdm_hash *big = make(c2, kts[c], vts[c], 0, dups[c], 0), *small = make(c1, kts[c], vts[c], 0, dups[c], 0);
    uint64_t *a, *b;
    for (i = 0; i < n; i++) {
      uint64_t x = prop_below(&r, 40000);
      put(k, i, ks, ks == 4 ? (uint64_t)(uint32_t)(x * 0x9e3779b9u) : x * 0x9e3779b97f4a7c15ull);
      put(v, i, vs, mix_value(prop_next(&r) & 0x1fffffff, vts[c]));
    }
    OK(tdm_hash_insert(big, k, v, n));
    for (j = 0; j < n; j += 999) OK(tdm_hash_insert(small, k + j * ks, v + j * vs, n - j < 999 ? n - j : 999));
    VALID(big);
    VALID(small);
    a = snapshot_any(big, ks, vs, &na);
    b = snapshot_any(small, ks, vs, &nb);
    assert_same(a, na, b, nb, "one big call on 2 threads vs small calls");
    free(a);
    free(b);
    free(k);
    free(v);
    tdm_hash_destroy(big);
    tdm_hash_destroy(small);
    tdm_ctx_destroy(c1);
    tdm_ctx_destroy(c2);
  }
}

/* Near load 0.9 probe runs are long, so with 8 threads many probes run off
 * the end of a thread's part of the table and are finished by the sequential
 * pass: dense batches (partitioned path) and sparse ones (plain path) still
 * equal one thread in small calls, for an order-sensitive policy. */
Test(hash_parallel, high_load_deferred_probes) {
  tdm_hash_opts o = {TDM_U64, TDM_U64, 950000, 0.95, 1, TDM_DUP_KEEP_LAST};
  size_t n = 950000, i, j, na, nb;
  uint64_t *k = (uint64_t *)malloc(n * 8), *v = (uint64_t *)malloc(n * 8), *a, *b;
  tdm_ctx *c1 = prop_ctx(TDM_BACKEND_CPU, 1), *c2 = prop_ctx(TDM_BACKEND_CPU, 8);
  tdm_hash *h1 = NULL, *h2 = NULL;
  prop_rng r;
  prop_rng_init(&r, 0x95);
  for (i = 0; i < n; i++) k[i] = prop_below(&r, 10000000) * 0x9e3779b97f4a7c15ull + 1, v[i] = prop_next(&r);
  OK(tdm_hash_create(c1, &o, &h1));
  OK(tdm_hash_create(c2, &o, &h2));
  OK(tdm_hash_insert(h2, k, v, 600000));               /* dense: partitions */
  OK(tdm_hash_insert(h2, k + 600000, v + 600000, 250000)); /* dense again, at load ~0.6 -> ~0.8 */
  for (j = 0; j < 850000; j += 5000) OK(tdm_hash_insert(h1, k + j, v + j, 5000));
  for (i = 850000; i < n; i += 50000) { /* sparse: the plain path */
    OK(tdm_hash_insert(h2, k + i, v + i, 50000));
    for (j = i; j < i + 50000; j += 5000) OK(tdm_hash_insert(h1, k + j, v + j, 5000));
  }
  VALID(h1);
  VALID(h2);
  a = snapshot(h1, &na);
  b = snapshot(h2, &nb);
  assert_same(a, na, b, nb, "8 threads near load 0.9 vs 1 thread");
  free(a);
  free(b);
  free(k);
  free(v);
  tdm_hash_destroy(h1);
  tdm_hash_destroy(h2);
  tdm_ctx_destroy(c1);
  tdm_ctx_destroy(c2);
}

typedef struct finder {
  const tdm_hash *h;
  const uint64_t *k;
  size_t n;
  int bad;
} finder;

static void *find_thread(void *p) {
  finder *f = (finder *)p;
  uint64_t *out = (uint64_t *)malloc(f->n * 8);
  uint8_t *found = (uint8_t *)malloc(f->n);
  size_t i, r;
  for (r = 0; r < 5; r++) {
    if (tdm_hash_find(f->h, f->k, out, found, f->n) != TDM_OK) f->bad = 1;
    for (i = 0; i < f->n; i++)
      if (!found[i] || out[i] != f->k[i] + 1) f->bad = 1;
    if (tdm_hash_validate(f->h) != TDM_OK || tdm_hash_size(f->h) != f->n) f->bad = 1;
  }
  free(out);
  free(found);
  return NULL;
}

Test(hash_parallel, concurrent_finds_on_one_table) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 2);
  size_t n = 100000, i;
  uint64_t *k = (uint64_t *)malloc(n * 8), *v = (uint64_t *)malloc(n * 8);
  tdm_hash *h = make(c, TDM_U64, TDM_U64, n, TDM_DUP_KEEP_FIRST, 0);
  pthread_t th[3];
  finder f[3];
  for (i = 0; i < n; i++) k[i] = i * 31 + 5, v[i] = k[i] + 1;
  OK(tdm_hash_insert(h, k, v, n));
  for (i = 0; i < 3; i++) {
    f[i].h = h, f[i].k = k, f[i].n = n, f[i].bad = 0;
    pthread_create(&th[i], NULL, find_thread, &f[i]);
  }
  for (i = 0; i < 3; i++) {
    pthread_join(th[i], NULL);
    cr_assert(!f[i].bad, "concurrent reader %zu saw a wrong answer", i);
  }
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
  free(k);
  free(v);
}

/* ---- CUDA against CPU ---------------------------------------------------------- */

Test(hash_cuda, matches_cpu) {
  static const tdm_dup dups[5] = {TDM_DUP_KEEP_FIRST, TDM_DUP_KEEP_LAST, TDM_DUP_SUM, TDM_DUP_MIN, TDM_DUP_MAX};
  const char *why;
  size_t n = 200000, i;
  uint64_t *k, *v;
  prop_rng r;
  int d;
  if (!prop_cuda_usable(&why)) {
    printf("hash_cuda.matches_cpu: skipped, no usable CUDA device: %s\n", why);
    cr_skip_test("no usable CUDA device: %s", why);
  }
  k = (uint64_t *)malloc(n * 8);
  v = (uint64_t *)malloc(n * 8);
  prop_rng_init(&r, 0xc0da);
  for (i = 0; i < n; i++) {
    k[i] = prop_below(&r, 3) ? prop_below(&r, 50000) : prop_next(&r);
    if (i % 1000 == 0) k[i] = i % 3000 == 0 ? 0 : TDM_HASH_TOMB64;
    v[i] = prop_next(&r);
  }
  for (d = 0; d < 5; d++) {
    tdm_ctx *cc = prop_ctx(TDM_BACKEND_CPU, 0), *cg = prop_ctx(TDM_BACKEND_CUDA, 0);
    tdm_hash *hc = make(cc, TDM_U64, TDM_U64, 1000, dups[d], 0), *hg = make(cg, TDM_U64, TDM_U64, 1000, dups[d], 0);
    uint64_t *a, *b, *oc = (uint64_t *)malloc(n * 8), *og = (uint64_t *)malloc(n * 8);
    uint8_t *fc = (uint8_t *)malloc(n), *fg = (uint8_t *)malloc(n);
    size_t na, nb, ec, eg, step;
    for (step = 0; step < 4; step++) {
      size_t lo = step * n / 8, m = n / 2;
      OK(tdm_hash_insert(hc, k + lo, v + lo, m));
      OK(tdm_hash_insert(hg, k + lo, v + lo, m));
      OK(tdm_hash_erase(hc, k + lo / 2, m / 4, &ec));
      OK(tdm_hash_erase(hg, k + lo / 2, m / 4, &eg));
      cr_assert_eq(ec, eg, "erase counts differ at step %zu", step);
      VALID(hc);
      VALID(hg);
      cr_assert_eq(tdm_hash_size(hc), tdm_hash_size(hg));
    }
    OK(tdm_hash_find(hc, k, oc, fc, n));
    OK(tdm_hash_find(hg, k, og, fg, n));
    cr_assert(memcmp(fc, fg, n) == 0 && memcmp(oc, og, n * 8) == 0, "find results differ (dup %d)", d);
    a = snapshot(hc, &na);
    b = snapshot(hg, &nb);
    assert_same(a, na, b, nb, "CUDA vs CPU");
    free(a);
    free(b);
    free(oc);
    free(og);
    free(fc);
    free(fg);
    tdm_hash_destroy(hc);
    tdm_hash_destroy(hg);
    tdm_ctx_destroy(cc);
    tdm_ctx_destroy(cg);
  }
  free(k);
  free(v);
}
