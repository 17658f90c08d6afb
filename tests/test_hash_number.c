/*
 * test_hash_number.c: the hash table's insert-or-number (tdm__hash_number,
 * src/hash_api.c, and the CPU backend's number call), the primitive of the
 * data operations' hash method, against a plain reference.
 *
 * The reference numbers the keys by sorting (key, row) pairs: each run of
 * equal keys is a group whose first row is the run's smallest row, and the
 * groups are numbered in the order of their first rows. For every key
 * width, distribution (the marker keys of the side slots among them) and
 * size, the numbers, counts and first rows must be the reference's; the
 * table must validate and map each key to its number and count; a limit on the
 * groups must stop the numbering at exactly the first key past it, with
 * the prefix numbered as the reference numbers that prefix. Tables start
 * at one slot's capacity, so every case grows the table while numbering.
 * Every test runs on the CPU backend and, where a CUDA device (or the
 * emulated one) is usable, on the CUDA backend's number call
 * (gpu/hash_gpu.cu, hg_number), with host arrays and, for the reference
 * cases, device arrays too.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "prop.h"
#include "tandem/detail/hash_layout.h"

typedef struct ref_pair {
  uint64_t key;
  size_t row;
} ref_pair;

static int cmp_pair(const void *a, const void *b) {
  const ref_pair *x = (const ref_pair *)a, *y = (const ref_pair *)b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->row < y->row ? -1 : x->row > y->row;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static uint64_t key_at(const void *keys, size_t ks, size_t i) {
  return ks == 4 ? ((const uint32_t *)keys)[i] : ((const uint64_t *)keys)[i];
}

/* The reference numbering of keys [0, n): gid[i], counts[g], first[g];
 * returns the number of groups. */
static size_t ref_number(const void *keys, size_t ks, size_t n, uint32_t *gid, uint32_t *counts, uint32_t *first) {
  ref_pair *p = malloc((n ? n : 1) * sizeof *p);
  uint64_t *heads = malloc((n ? n : 1) * sizeof *heads); /* (first row << 32 | run start) per run */
  size_t i, G = 0, r;
  cr_assert(p && heads);
  for (i = 0; i < n; i++) p[i] = (ref_pair){key_at(keys, ks, i), i};
  qsort(p, n, sizeof *p, cmp_pair);
  for (i = 0; i < n; i++)
    if (i == 0 || p[i].key != p[i - 1].key) heads[G++] = (uint64_t)p[i].row << 32 | i;
  qsort(heads, G, sizeof *heads, cmp_u64);
  for (r = 0; r < G; r++) {
    size_t s = (size_t)(heads[r] & 0xffffffffu), e = s;
    while (e < n && p[e].key == p[s].key) gid[p[e++].row] = (uint32_t)r;
    counts[r] = (uint32_t)(e - s);
    first[r] = (uint32_t)(heads[r] >> 32);
  }
  free(p);
  free(heads);
  return G;
}

static tdm_hash *number_table(tdm_ctx *ctx, size_t ks) {
  tdm_hash_opts o;
  tdm_hash *h = NULL;
  memset(&o, 0, sizeof o);
  o.key_type = ks == 4 ? TDM_U32 : TDM_U64;
  o.value_type = TDM_U64;
  o.capacity = 1;
  o.on_duplicate = TDM_DUP_KEEP_FIRST;
  cr_assert_eq(tdm_hash_create(ctx, &o, &h), TDM_OK, "%s", tdm_last_error());
  return h;
}

/* Numbers keys [0, n) with the limit max_size and checks everything
 * against the reference of the prefix the limit allows. */
static void check_case(tdm_ctx *ctx, const void *keys, size_t ks, size_t n, size_t max_size, const char *what) {
  size_t cap = n ? n : 1, done = 99, G, i, want_done, rg;
  uint32_t *gid = malloc(cap * 4), *cnt = malloc(cap * 4), *first = malloc(cap * 4);
  uint32_t *rgid = malloc(cap * 4), *rcnt = malloc(cap * 4), *rfirst = malloc(cap * 4);
  uint64_t *vals = malloc(cap * 8);
  uint8_t *found = malloc(cap);
  tdm_hash *h = number_table(ctx, ks);
  cr_assert(gid && cnt && first && rgid && rcnt && rfirst && vals && found);

  /* The prefix the limit allows: up to the first row of group max_size. */
  rg = ref_number(keys, ks, n, rgid, rcnt, rfirst);
  want_done = rg > max_size ? rfirst[max_size] : n;
  rg = ref_number(keys, ks, want_done, rgid, rcnt, rfirst);

  cr_assert_eq(tdm__hash_number(h, "test", keys, n, max_size, gid, first, &done), TDM_OK, "%s: %s", what,
               tdm_last_error());
  cr_assert_eq(done, want_done, "%s (seed %llu): numbered %zu keys, expected %zu (limit %zu)", what,
               (unsigned long long)prop_seed(), done, want_done, max_size);
  G = tdm_hash_size(h);
  cr_assert_eq(G, rg, "%s: %zu groups, expected %zu", what, G, rg);
  cr_assert_eq(tdm__hash_number_counts(h, "test", cnt), TDM_OK, "%s", tdm_last_error());
  for (i = 0; i < done; i++)
    cr_assert_eq(gid[i], rgid[i], "%s (seed %llu): row %zu has number %u, expected %u", what,
                 (unsigned long long)prop_seed(), i, gid[i], rgid[i]);
  for (i = 0; i < G; i++) {
    cr_assert_eq(cnt[i], rcnt[i], "%s: group %zu counts %u rows, expected %u", what, i, cnt[i], rcnt[i]);
    cr_assert_eq(first[i], rfirst[i], "%s: group %zu first row %u, expected %u", what, i, first[i], rfirst[i]);
  }
  cr_assert_eq(tdm_hash_validate(h), TDM_OK, "%s: %s", what, tdm_last_error());
  if (done) {
    cr_assert_eq(tdm_hash_find(h, keys, vals, found, done), TDM_OK, "%s", tdm_last_error());
    for (i = 0; i < done; i++)
      cr_assert(found[i] && (uint32_t)vals[i] == gid[i] && vals[i] >> 32 == rcnt[gid[i]],
                "%s: row %zu maps to 0x%llx (found %d), its number is %u with %u rows", what, i,
                (unsigned long long)vals[i], found[i], gid[i], rcnt[gid[i]]);
  }
  tdm_hash_destroy(h);
  free(gid);
  free(cnt);
  free(first);
  free(rgid);
  free(rcnt);
  free(rfirst);
  free(vals);
  free(found);
}

/* The emulated device runs each of a case's launches thread by thread, so
 * the CUDA suite draws fewer and smaller sizes (the same checks). */
static void against_reference(tdm_backend b) {
  static const tdm_type types[] = {TDM_U32, TDM_U64, TDM_I32, TDM_F64};
  size_t sizes[64], nsizes, si, ti;
  int d, cpu = b == TDM_BACKEND_CPU;
  prop_rng r;
  tdm_ctx *ctx = prop_ctx(b, 0);
  prop_rng_init(&r, 1);
  nsizes = prop_sizes(&r, sizes, cpu ? 64 : 36, cpu ? prop_scaled(5000, 100000) : prop_scaled(1500, 30000));
  for (ti = 0; ti < sizeof types / sizeof types[0]; ti++)
    for (d = 0; d < PROP_DIST_COUNT; d++)
      for (si = 0; si < nsizes; si++) {
        size_t n = sizes[si], ks = tdm_type_size(types[ti]);
        void *keys = malloc((n ? n : 1) * ks);
        char what[160];
        prop_rng_init(&r, (uint64_t)ti << 40 | (uint64_t)d << 32 | si);
        prop_fill(&r, types[ti], keys, n, (prop_dist)d);
        snprintf(what, sizeof what, "%s %s %s n=%zu", b == TDM_BACKEND_CPU ? "cpu" : "cuda",
                 tdm_type_name(types[ti]), prop_dist_name((prop_dist)d), n);
        check_case(ctx, keys, ks, n, SIZE_MAX, what);
        /* A limit that falls inside the groups, at 0 and at 1. */
        check_case(ctx, keys, ks, n, prop_below(&r, n / 8 + 2), what);
        free(keys);
      }
  tdm_ctx_destroy(ctx);
}

static void need_cuda(void) {
  const char *why = NULL;
  if (!prop_cuda_usable(&why)) cr_skip_test("no usable CUDA device: %s", why);
}

Test(hash_number_cpu, against_reference) { against_reference(TDM_BACKEND_CPU); }
Test(hash_number_cuda, against_reference) {
  need_cuda();
  against_reference(TDM_BACKEND_CUDA);
}

/* The marker keys (the empty pattern 0 and the tombstone pattern) take the
 * side slots: numbered like any other key, first, last and between. */
static void marker_keys(tdm_backend b) {
  uint64_t k64[] = {5, 0, TDM_HASH_TOMB64, 5, 0, 7, TDM_HASH_TOMB64, 0};
  uint32_t k32[] = {TDM_HASH_TOMB32, 3, 0, 3, TDM_HASH_TOMB32, 0, 9};
  tdm_ctx *ctx = prop_ctx(b, 0);
  size_t lim;
  for (lim = 0; lim <= 4; lim++) {
    check_case(ctx, k64, 8, 8, lim, "u64 markers");
    check_case(ctx, k32, 4, 7, lim, "u32 markers");
  }
  check_case(ctx, k64, 8, 8, SIZE_MAX, "u64 markers");
  tdm_ctx_destroy(ctx);
}

Test(hash_number_cpu, marker_keys) { marker_keys(TDM_BACKEND_CPU); }
Test(hash_number_cuda, marker_keys) {
  need_cuda();
  marker_keys(TDM_BACKEND_CUDA);
}

/* Numbering continues in a table that already holds numbered keys: known
 * keys keep their numbers, new ones go on from the table's size. */
static void second_batch(tdm_backend be) {
  uint64_t a[] = {10, 20, 10, 30}, b[] = {30, 40, 10, 50, 40};
  uint32_t gid[5], cnt[8], first[8], want_b[] = {2, 3, 0, 4, 3};
  size_t done, i;
  tdm_ctx *ctx = prop_ctx(be, 0);
  tdm_hash *h = number_table(ctx, 8);
  cr_assert_eq(tdm__hash_number(h, "test", a, 4, SIZE_MAX, gid, first, &done), TDM_OK);
  cr_assert_eq(done, 4);
  cr_assert_eq(tdm__hash_number(h, "test", b, 5, SIZE_MAX, gid, first, &done), TDM_OK);
  cr_assert_eq(done, 5);
  cr_assert_eq(tdm__hash_number_counts(h, "test", cnt), TDM_OK);
  for (i = 0; i < 5; i++) cr_assert_eq(gid[i], want_b[i], "row %zu: %u, expected %u", i, gid[i], want_b[i]);
  cr_assert_eq(cnt[0], 3);  /* 10: twice in a, once in b */
  cr_assert_eq(cnt[2], 2);  /* 30 */
  cr_assert_eq(cnt[3], 2);  /* 40, first seen at row 1 of b */
  cr_assert_eq(first[3], 1);
  cr_assert_eq(tdm_hash_size(h), 5);
  tdm_hash_destroy(h);
  tdm_ctx_destroy(ctx);
}

Test(hash_number_cpu, second_batch) { second_batch(TDM_BACKEND_CPU); }
Test(hash_number_cuda, second_batch) {
  need_cuda();
  second_batch(TDM_BACKEND_CUDA);
}

/* Device arrays on the CUDA backend: keys, numbers and first rows in device
 * memory give the bytes host arrays give, over two batches (the second
 * continues the first's numbering, with a limit that stops it inside). */
Test(hash_number_cuda, device_arrays) {
  enum { N = 3000 };
  static uint64_t keys[2 * N];
  static uint32_t gid_h[2 * N], first_h[2 * N], gid_d[2 * N], first_d[2 * N];
  size_t done_h[2], done_d[2], at, b, i;
  prop_rng r;
  tdm_ctx *ctx;
  tdm_hash *hh, *hd;
  void *dk, *dg, *df;
  need_cuda();
  ctx = prop_ctx(TDM_BACKEND_CUDA, 0);
  prop_rng_init(&r, 9);
  for (i = 0; i < 2 * N; i++) keys[i] = prop_below(&r, i < N ? 900 : 4000) * 0x9e3779b97f4a7c15ull;
  dk = prop_dev_alloc(sizeof keys, 0);
  dg = prop_dev_alloc(sizeof gid_d, 0);
  df = prop_dev_alloc(sizeof first_d, 0);
  cr_assert(dk && dg && df);
  prop_h2d(dk, keys, sizeof keys);
  hh = number_table(ctx, 8);
  hd = number_table(ctx, 8);
  for (b = 0, at = 0; b < 2; b++, at += N) {
    size_t lim = b ? 1000 : SIZE_MAX;
    cr_assert_eq(tdm__hash_number(hh, "test", keys + at, N, lim, gid_h + at, first_h, &done_h[b]), TDM_OK, "%s",
                 tdm_last_error());
    cr_assert_eq(tdm__hash_number(hd, "test", (uint64_t *)dk + at, N, lim, (uint32_t *)dg + at, (uint32_t *)df,
                                  &done_d[b]),
                 TDM_OK, "%s", tdm_last_error());
    cr_assert_eq(done_d[b], done_h[b], "batch %zu: %zu keys numbered from device arrays, %zu from host ones", b,
                 done_d[b], done_h[b]);
  }
  cr_assert_lt(done_h[1], (size_t)N, "the limit stops the second batch inside");
  cr_assert_eq(tdm_hash_size(hd), tdm_hash_size(hh));
  prop_d2h(gid_d, dg, sizeof gid_d);
  prop_d2h(first_d, df, sizeof first_d);
  for (i = 0; i < N + done_h[1]; i++) cr_assert_eq(gid_d[i], gid_h[i], "row %zu", i);
  for (i = 0; i < tdm_hash_size(hh); i++) cr_assert_eq(first_d[i], first_h[i], "group %zu", i);
  tdm_hash_destroy(hh);
  tdm_hash_destroy(hd);
  prop_dev_free(dk);
  prop_dev_free(dg);
  prop_dev_free(df);
  tdm_ctx_destroy(ctx);
}

/* Tables that cannot number are refused with a message, unchanged. */
Test(hash_number_cpu, refused) {
  uint64_t k[] = {1, 2};
  uint32_t gid[2];
  size_t done = 7;
  tdm_hash_opts o;
  tdm_hash *h = NULL;
  tdm_ctx *ctx = prop_ctx(TDM_BACKEND_CPU, 0);
  memset(&o, 0, sizeof o);
  o.key_type = TDM_U64;
  o.value_type = TDM_U32;
  cr_assert_eq(tdm_hash_create(ctx, &o, &h), TDM_OK);
  cr_assert_eq(tdm__hash_number(h, "test", k, 2, SIZE_MAX, gid, NULL, &done), TDM_ERR_UNSUPPORTED);
  cr_assert(strstr(tdm_last_error(), "cannot number"), "%s", tdm_last_error());
  cr_assert_eq(done, 0);
  cr_assert_eq(tdm_hash_size(h), 0);
  tdm_hash_destroy(h);
  tdm_ctx_destroy(ctx);
}
