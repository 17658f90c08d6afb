/*
 * test_ops_cuda.c: the data operations (tandem/ops.h) on a CUDA context
 * give the CPU's bytes: every key type and distribution the property
 * generator has (NaN payloads, signed zeros and extremes among them), both
 * float equalities and both orders, every reduction and join kind, the
 * capacity error, host and device arrays, and an allocation failure at every
 * point. Output buffers start as a sentinel on both sides, so writing past
 * the result (or anything on a failure) shows up too. Skewed keys (all
 * equal, one hot key on 90 % of the rows, groups at the edges of the CUDA
 * backend's long-group rule, Zipf) at sizes where a group spans many chunks
 * and blocks: every reduction and value type, and unique with its inverse.
 * Skewed joins (a hot left row, a hot key on both sides, unmatched rows
 * between and around them) whose rows span many of the fill's tiles.
 * Skipped with the reason
 * when no CUDA device is usable (the emulated device runs it in
 * make test-cuda-emu).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blocks.h"
#include "hooks/hooks.h"
#include "prop.h"

static const tdm_type all_types[6] = {TDM_U32, TDM_U64, TDM_I32, TDM_I64, TDM_F32, TDM_F64};
static const tdm_type value_types[4] = {TDM_U32, TDM_I64, TDM_F32, TDM_F64};
static const prop_dist dists[3] = {PROP_FEW_DISTINCT, PROP_BOUNDARY, PROP_ZIPF};

#define SENTINEL 0xA5

/* One output buffer: the CPU's result, the CUDA result (read back from
 * the device in device mode), both starting as the sentinel. */
typedef struct out_pair {
  void *cpu, *gpu, *dev;
  size_t bytes;
} out_pair;

static void out_init(out_pair *o, size_t bytes, int dev) {
  size_t b = bytes ? bytes : 1;
  o->bytes = b;
  o->cpu = malloc(b);
  o->gpu = malloc(b);
  memset(o->cpu, SENTINEL, b);
  memset(o->gpu, SENTINEL, b);
  o->dev = NULL;
  if (dev) {
    o->dev = prop_dev_alloc(b, 0);
    prop_h2d(o->dev, o->gpu, b);
  }
}
/* What the CUDA call writes to. */
static void *out_arg(const out_pair *o) { return o->dev ? o->dev : o->gpu; }
static void out_back(out_pair *o) {
  if (o->dev) prop_d2h(o->gpu, o->dev, o->bytes);
}
static int out_same(const out_pair *o) { return memcmp(o->cpu, o->gpu, o->bytes) == 0; }
static void out_free(out_pair *o) {
  free(o->cpu);
  free(o->gpu);
  if (o->dev) prop_dev_free(o->dev);
}

/* An input for the CUDA call: the host array, or a device copy. */
static const void *in_arg(const void *h, size_t bytes, int dev, void **d) {
  *d = NULL;
  if (!dev) return h;
  *d = prop_dev_alloc(bytes ? bytes : 1, 0);
  if (bytes) prop_h2d(*d, h, bytes);
  return *d;
}

typedef struct env {
  tdm_ctx *cpu, *gpu;
  tdm_type t;
  size_t ks;
  int dev;
  const char *mode; /* arrays and context, for messages */
  const char *what; /* case description for messages */
} env;

/* outputs: which optional outputs beside the keys and counts: 1 the first
 * indices, 2 the inverse (alone, it takes the CUDA hash method in ascending
 * order), 3 both; 4 leaves the counts out (with 2: the hash method's table
 * is then a set, no count per row; with 1: in first-seen order, the CUDA
 * hash method needs no code per row). */
static void check_unique(const env *e, const void *keys, size_t n, unsigned flags, int outputs) {
  out_pair u, f, c, inv;
  size_t nc = 0, ng = 0;
  void *dk;
  const void *k = in_arg(keys, n * e->ks, e->dev, &dk);
  out_init(&u, n * e->ks, e->dev);
  out_init(&f, n * 8, e->dev);
  out_init(&c, n * 8, e->dev);
  out_init(&inv, n * 8, e->dev);
  cr_assert_eq(tdm_unique(e->cpu, e->t, keys, n, flags, u.cpu, outputs & 1 ? f.cpu : NULL, outputs & 4 ? NULL : c.cpu,
                          outputs & 2 ? inv.cpu : NULL, &nc),
               TDM_OK, "%s", tdm_last_error());
  cr_assert_eq(tdm_unique(e->gpu, e->t, k, n, flags, out_arg(&u), outputs & 1 ? out_arg(&f) : NULL,
                          outputs & 4 ? NULL : out_arg(&c),
                          outputs & 2 ? out_arg(&inv) : NULL, &ng),
               TDM_OK, "%s: %s", e->what, tdm_last_error());
  out_back(&u), out_back(&f), out_back(&c), out_back(&inv);
  cr_assert_eq(nc, ng, "%s unique flags %u: %zu groups on the CPU, %zu on CUDA", e->what, flags, nc, ng);
  cr_assert(out_same(&u) && out_same(&f) && out_same(&c) && out_same(&inv),
            "%s unique flags %u (outputs %d): CUDA differs from CPU", e->what, flags, outputs);
  out_free(&u), out_free(&f), out_free(&c), out_free(&inv);
  if (dk) prop_dev_free(dk);
}

static void check_group(const env *e, const void *keys, const void *vals, tdm_type vt, size_t n, tdm_agg agg,
                        unsigned flags) {
  out_pair ko, vo;
  size_t nc = 0, ng = 0;
  void *dk, *dv;
  const void *k = in_arg(keys, n * e->ks, e->dev, &dk);
  const void *v = in_arg(vals, n * tdm_type_size(vt), e->dev, &dv);
  out_init(&ko, n * e->ks, e->dev);
  out_init(&vo, n * 8, e->dev);
  cr_assert_eq(tdm_group_reduce(e->cpu, e->t, keys, vt, vals, n, agg, flags, ko.cpu, vo.cpu, &nc), TDM_OK, "%s",
               tdm_last_error());
  cr_assert_eq(tdm_group_reduce(e->gpu, e->t, k, vt, v, n, agg, flags, out_arg(&ko), out_arg(&vo), &ng), TDM_OK,
               "%s: %s", e->what, tdm_last_error());
  out_back(&ko), out_back(&vo);
  cr_assert_eq(nc, ng, "%s group_reduce agg %d: %zu groups on the CPU, %zu on CUDA", e->what, (int)agg, nc, ng);
  cr_assert(out_same(&ko) && out_same(&vo), "%s group_reduce agg %d values %s flags %u: CUDA differs from CPU",
            e->what, (int)agg, tdm_type_name(vt), flags);
  out_free(&ko), out_free(&vo);
  if (dk) prop_dev_free(dk);
  if (dv) prop_dev_free(dv);
}

static void check_isin(const env *e, const void *q, size_t n, const void *set, size_t m, unsigned flags) {
  out_pair f;
  void *dq, *ds;
  const void *qa = in_arg(q, n * e->ks, e->dev, &dq), *sa = in_arg(set, m * e->ks, e->dev, &ds);
  out_init(&f, n, e->dev);
  cr_assert_eq(tdm_isin(e->cpu, e->t, q, n, set, m, flags, (uint8_t *)f.cpu), TDM_OK, "%s", tdm_last_error());
  cr_assert_eq(tdm_isin(e->gpu, e->t, qa, n, sa, m, flags, (uint8_t *)out_arg(&f)), TDM_OK, "%s: %s", e->what,
               tdm_last_error());
  out_back(&f);
  cr_assert(out_same(&f), "%s isin m %zu flags %u: CUDA differs from CPU", e->what, m, flags);
  out_free(&f);
  if (dq) prop_dev_free(dq);
  if (ds) prop_dev_free(ds);
}

static void check_join(const env *e, const void *l, size_t nl, const void *r, size_t nr, tdm_join_kind kind,
                       unsigned flags) {
  out_pair lo, ro;
  size_t need_c = 0, need_g = 0, nc = 0, ng = 0;
  void *dl, *dr;
  const void *la = in_arg(l, nl * e->ks, e->dev, &dl), *ra = in_arg(r, nr * e->ks, e->dev, &dr);
  tdm_status sc, sg;
  /* The size alone. */
  sc = tdm_join(e->cpu, kind, e->t, l, nl, r, nr, flags, NULL, NULL, 0, &need_c);
  sg = tdm_join(e->gpu, kind, e->t, la, nl, ra, nr, flags, NULL, NULL, 0, &need_g);
  cr_assert_eq(sc, sg, "%s join kind %d: status %s on the CPU, %s on CUDA (%s)", e->what, (int)kind,
               tdm_status_name(sc), tdm_status_name(sg), tdm_last_error());
  cr_assert_eq(need_c, need_g, "%s join kind %d: %zu rows on the CPU, %zu on CUDA", e->what, (int)kind, need_c,
               need_g);
  out_init(&lo, need_c * 8, e->dev);
  out_init(&ro, need_c * 8, e->dev);
  if (need_c > 0) {
    /* One row short: the exact size, nothing written. */
    ng = 0;
    sg = tdm_join(e->gpu, kind, e->t, la, nl, ra, nr, flags, (uint64_t *)out_arg(&lo), (uint64_t *)out_arg(&ro),
                  need_c - 1, &ng);
    cr_assert_eq(sg, TDM_ERR_CAPACITY, "%s join kind %d: %s", e->what, (int)kind, tdm_status_name(sg));
    cr_assert_eq(ng, need_c, "%s join kind %d: *n_out %zu after CAPACITY, %zu needed", e->what, (int)kind, ng,
                 need_c);
    out_back(&lo), out_back(&ro);
    cr_assert(out_same(&lo) && out_same(&ro), "%s join kind %d: a CAPACITY failure wrote rows", e->what, (int)kind);
  }
  cr_assert_eq(tdm_join(e->cpu, kind, e->t, l, nl, r, nr, flags, (uint64_t *)lo.cpu, (uint64_t *)ro.cpu, need_c, &nc),
               TDM_OK, "%s", tdm_last_error());
  cr_assert_eq(tdm_join(e->gpu, kind, e->t, la, nl, ra, nr, flags, (uint64_t *)out_arg(&lo), (uint64_t *)out_arg(&ro),
                        need_c, &ng),
               TDM_OK, "%s join kind %d: %s", e->what, (int)kind, tdm_last_error());
  out_back(&lo), out_back(&ro);
  cr_assert_eq(nc, ng);
  cr_assert(out_same(&lo) && out_same(&ro), "%s join kind %d flags %u (%zu x %zu, %zu rows): CUDA differs from CPU",
            e->what, (int)kind, flags, nl, nr, nc);
  out_free(&lo), out_free(&ro);
  if (dl) prop_dev_free(dl);
  if (dr) prop_dev_free(dr);
}

/* The min/max pass of the dense method's rule (integer keys): the same bits
 * on both backends, and those of a plain loop over the keys' numeric order
 * (the CPU's is checked against one in test_ops.c). */
static void check_minmax(const env *e, const void *keys, size_t n) {
  uint64_t cmn, cmx, gmn, gmx;
  void *dk;
  const void *k = in_arg(keys, n * e->ks, e->dev, &dk);
  cr_assert_eq(tdm_test_ops_minmax(e->cpu, e->t, keys, n, &cmn, &cmx), TDM_OK, "%s", tdm_last_error());
  cr_assert_eq(tdm_test_ops_minmax(e->gpu, e->t, k, n, &gmn, &gmx), TDM_OK, "%s: %s", e->what, tdm_last_error());
  cr_assert(cmn == gmn && cmx == gmx, "%s min/max: CPU %llx/%llx, CUDA %llx/%llx", e->what, (unsigned long long)cmn,
            (unsigned long long)cmx, (unsigned long long)gmn, (unsigned long long)gmx);
  if (dk) prop_dev_free(dk);
}

/* Every operation on one key type, distribution and size, host or device;
 * d from PROP_DIST_COUNT on: a small range (prop_fill_small_range's base
 * d - PROP_DIST_COUNT), integer types only. */
static void check_all(env *e, int d, size_t n, uint64_t case_id) {
  char *keys = malloc(n * e->ks + 8), *other = malloc(n * e->ks + 8), *vals = malloc(n * 8 + 8);
  char what[160];
  size_t i, m, nj = n < 700 ? n : 700, mj = n < 300 ? n : 300;
  unsigned flags;
  int agg, vi, kind;
  prop_rng r;
  prop_rng_init(&r, case_id);
  if (d >= PROP_DIST_COUNT) {
    prop_fill_small_range(&r, e->t, keys, n, d - PROP_DIST_COUNT);
    prop_fill_small_range(&r, e->t, other, n, d - PROP_DIST_COUNT);
  } else {
    prop_fill(&r, e->t, keys, n, (prop_dist)d);
    prop_fill(&r, e->t, other, n, (prop_dist)d);
  }
  /* Half of the other side drawn from keys, so that joins and lookups
   * match whatever the distribution's values. */
  for (i = 0; i < n; i += 2) memcpy(other + i * e->ks, keys + prop_below(&r, n) * e->ks, e->ks);
  if (d >= PROP_DIST_COUNT)
    snprintf(what, sizeof what, "%s small range %d (dense forced) n %zu %s", tdm_type_name(e->t), d - PROP_DIST_COUNT,
             n, e->mode);
  else
    snprintf(what, sizeof what, "%s %s n %zu %s", tdm_type_name(e->t), prop_dist_name((prop_dist)d), n, e->mode);
  e->what = what;
  if (n && e->t != TDM_F32 && e->t != TDM_F64) check_minmax(e, keys, n);
  for (flags = 0; flags < 4; flags++) {
    check_unique(e, keys, n, flags, 3);
    check_unique(e, keys, n, flags, 2);
    check_unique(e, keys, n, flags, 2 | 4);
    check_unique(e, keys, n, flags, 0);
    check_unique(e, keys, n, flags, 1 | 4);
  }
  for (vi = 0; vi < 4; vi++) {
    prop_fill(&r, value_types[vi], vals, n, vi & 1 ? PROP_BOUNDARY : PROP_UNIFORM);
    for (agg = TDM_AGG_COUNT; agg <= TDM_AGG_MEAN; agg++)
      check_group(e, keys, vals, value_types[vi], n, (tdm_agg)agg, (unsigned)(agg + vi) & 3u);
  }
  for (m = 0; m <= n; m = m ? m * 4 + 1 : 1)
    for (flags = 0; flags < 2; flags++) check_isin(e, keys, n, other, m, flags);
  check_isin(e, keys, n, other, n, TDM_EQ_NUMERIC);
  for (kind = TDM_JOIN_INNER; kind <= TDM_JOIN_ANTI; kind++)
    for (flags = 0; flags < 2; flags++) {
      check_join(e, keys, nj, other, mj, (tdm_join_kind)kind, flags);
      check_join(e, other, mj, keys, nj, (tdm_join_kind)kind, flags);
    }
  check_join(e, keys, nj, other, 0, TDM_JOIN_LEFT, 0);
  free(keys);
  free(other);
  free(vals);
}

static void run_type(tdm_type t) {
  /* The largest spans several blocks of every kernel; the full tier takes
   * it larger still. */
  const size_t sizes[4] = {1, 2, 257, prop_scaled(1500, 5000)};
  const char *why;
  env e;
  tdm_ctx_opts o;
  tdm_ctx *plain, *ordered = NULL;
  size_t si, di;
  int mode;
  if (!prop_cuda_usable(&why)) cr_skip_test("no usable CUDA device: %s", why);
  memset(&o, 0, sizeof o);
  o.backend = TDM_BACKEND_CUDA;
  o.flags = TDM_CTX_STREAM_ORDERED;
  cr_assert_eq(tdm_ctx_create(&o, &ordered), TDM_OK, "%s", tdm_last_error());
  plain = prop_ctx(TDM_BACKEND_CUDA, 0);
  e.cpu = prop_ctx(TDM_BACKEND_CPU, 0);
  e.t = t;
  e.ks = tdm_type_size(t);
  /* Host arrays, device arrays, device arrays on a stream-ordered context
   * (where every call still waits: the results are read without a sync). */
  for (mode = 0; mode < 3; mode++) {
    e.dev = mode > 0;
    e.gpu = mode == 2 ? ordered : plain;
    e.mode = mode == 0 ? "host arrays" : mode == 1 ? "device arrays" : "device arrays, stream-ordered";
    for (di = 0; di < 3; di++)
      for (si = 0; si < 4; si++) check_all(&e, dists[di], sizes[si], 0x0C0DA000u + t * 64 + di * 8 + si);
    /* Integer keys of small ranges, on the dense method (both backends). */
    tdm_test_ops_method(TDM_TEST_OPS_DENSE);
    for (di = 0; t != TDM_F32 && t != TDM_F64 && di < PROP_SMALL_RANGE_BASES; di++)
      for (si = 0; si < 4; si++)
        check_all(&e, PROP_DIST_COUNT + (int)di, sizes[si], 0x0DE45000u + t * 64 + di * 8 + si);
    tdm_test_ops_method(TDM_TEST_OPS_AUTO);
  }
  tdm_ctx_destroy(e.cpu);
  tdm_ctx_destroy(plain);
  tdm_ctx_destroy(ordered);
}

Test(ops_cuda, u32) { run_type(all_types[0]); }
Test(ops_cuda, u64) { run_type(all_types[1]); }
Test(ops_cuda, i32) { run_type(all_types[2]); }
Test(ops_cuda, i64) { run_type(all_types[3]); }
Test(ops_cuda, f32) { run_type(all_types[4]); }
Test(ops_cuda, f64) { run_type(all_types[5]); }

/* ---- skewed keys -------------------------------------------------------- */

enum { SKEW_N = 20000, SKEW_HOT, SKEW_EDGES };

/* n keys of type t, shuffled: SKEW_HOT puts one key on 90 % of the rows;
 * SKEW_EDGES gives groups of 2047, 2048, 2049, 4097 and 6000 rows (the CUDA
 * backend reduces groups of more than 2048 rows with many threads; these
 * straddle that and its chunks); the rest of the rows draw at random. */
static void fill_skew(prop_rng *r, tdm_type t, void *keys, size_t n, int d) {
  static const size_t edges[5] = {2047, 2048, 2049, 4097, 6000};
  size_t ks = tdm_type_size(t), i, at = 0, g, c;
  char pool[5 * 8], tmp[8];
  prop_fill(r, t, keys, n, PROP_UNIFORM);
  memcpy(pool, keys, 5 * ks); /* the long groups' keys (distinct or not: the CPU decides) */
  for (g = 0; g < (d == SKEW_HOT ? 1u : 5u); g++)
    for (c = d == SKEW_HOT ? n * 9 / 10 : edges[g], i = 0; i < c && at < n; i++, at++)
      memcpy((char *)keys + at * ks, pool + g * ks, ks);
  for (i = n - 1; i > 0; i--) { /* Fisher-Yates */
    size_t j = (size_t)prop_below(r, i + 1);
    memcpy(tmp, (char *)keys + i * ks, ks);
    memcpy((char *)keys + i * ks, (char *)keys + j * ks, ks);
    memcpy((char *)keys + j * ks, tmp, ks);
  }
}

/* Every reduction of every value type, and unique with all its outputs, on
 * one skewed key array (d: a prop_dist or SKEW_HOT / SKEW_EDGES). */
static void check_skew(env *e, int d, size_t n, uint64_t case_id) {
  static const tdm_type vtypes[6] = {TDM_U32, TDM_U64, TDM_I32, TDM_I64, TDM_F32, TDM_F64};
  char *keys = malloc(n * e->ks), *vals = malloc(n * 8), what[160];
  unsigned flags;
  int agg, vi;
  prop_rng r;
  prop_rng_init(&r, case_id);
  if (d == SKEW_HOT || d == SKEW_EDGES) fill_skew(&r, e->t, keys, n, d);
  else prop_fill(&r, e->t, keys, n, (prop_dist)d);
  snprintf(what, sizeof what, "%s %s n %zu %s", tdm_type_name(e->t),
           d == SKEW_HOT ? "hot key (90 %)" : d == SKEW_EDGES ? "long-group edges" : prop_dist_name((prop_dist)d), n,
           e->mode);
  e->what = what;
  for (flags = 0; flags < 4; flags++) check_unique(e, keys, n, flags, 3), check_unique(e, keys, n, flags, 2);
  for (vi = 0; vi < 6; vi++) {
    prop_fill(&r, vtypes[vi], vals, n, vi & 1 ? PROP_BOUNDARY : PROP_UNIFORM);
    for (agg = TDM_AGG_COUNT; agg <= TDM_AGG_MEAN; agg++)
      check_group(e, keys, vals, vtypes[vi], n, (tdm_agg)agg, (unsigned)(agg + vi) & 3u);
  }
  free(keys);
  free(vals);
}

/* The building blocks of the operations written once (src/backend.h) on the
 * CUDA backend against plain loops, on host arrays (staged by the call) and
 * device arrays. */
Test(ops_cuda, blocks_against_plain_loops) {
  const char *why_skip;
  char why[300];
  int dev;
  if (!prop_cuda_usable(&why_skip)) cr_skip_test("no usable CUDA device: %s", why_skip);
  for (dev = 0; dev < 2; dev++) {
    tdm_ctx *c = prop_ctx(TDM_BACKEND_CUDA, 0);
    cr_assert(blocks_check(c, dev, 0xB10C5 + (uint64_t)dev, prop_scaled(1500, 20000), why, sizeof why), "%s arrays: %s",
              dev ? "device" : "host", why);
    tdm_ctx_destroy(c);
  }
}

/* One key type per distribution (all six over the four), host arrays for
 * two and device arrays for the other two. */
Test(ops_cuda, skewed_keys_span_many_blocks) {
  static const int skew_dists[4] = {PROP_ALL_EQUAL, SKEW_HOT, SKEW_EDGES, PROP_ZIPF};
  static const tdm_type skew_types[4] = {TDM_I32, TDM_U64, TDM_F64, TDM_F32};
  const char *why;
  env e;
  int di;
  if (!prop_cuda_usable(&why)) cr_skip_test("no usable CUDA device: %s", why);
  e.cpu = prop_ctx(TDM_BACKEND_CPU, 0);
  e.gpu = prop_ctx(TDM_BACKEND_CUDA, 0);
  for (di = 0; di < 4; di++) {
    e.t = skew_types[di];
    e.ks = tdm_type_size(e.t);
    e.dev = di & 1;
    e.mode = e.dev ? "device arrays" : "host arrays";
    check_skew(&e, skew_dists[di], SKEW_N, 0x5CE3000u + (uint64_t)di);
  }
  tdm_ctx_destroy(e.cpu);
  tdm_ctx_destroy(e.gpu);
}

/* Skewed joins (prop_join_skew), every kind, CUDA's bytes against the
 * CPU's: one left row with 200000 matches, 2000 x 2000 rows of one key
 * among unmatched left rows, hot rows between stretches of 50000 unmatched
 * left rows. The CUDA fill takes tiles of 2048 output rows per block, so a
 * hot row's rows span about a hundred tiles (blocks), tiles start and end
 * inside them, and a tile's first row can follow 50000 left rows without
 * rows. The small tier takes 20000 matches and 700 x 700 rows: still ten
 * and 240 tiles, starting and ending inside the hot rows. Host arrays for
 * two shapes, device arrays for the other. */
Test(ops_cuda, join_skew_spans_many_blocks) {
  const size_t hots[PROP_JOIN_SHAPES] = {prop_scaled(20000, 200000), prop_scaled(700, 2000), 40000};
  const char *why;
  char what[160];
  env e;
  int shape, kind;
  prop_rng r;
  if (!prop_cuda_usable(&why)) cr_skip_test("no usable CUDA device: %s", why);
  e.cpu = prop_ctx(TDM_BACKEND_CPU, 4);
  e.gpu = prop_ctx(TDM_BACKEND_CUDA, 0);
  e.t = TDM_U64;
  e.ks = 8;
  for (shape = 0; shape < PROP_JOIN_SHAPES; shape++) {
    uint64_t *l, *rk;
    size_t nl, nr;
    prop_rng_init(&r, 0x501E7C00u + (uint64_t)shape);
    prop_join_skew(&r, (prop_join_shape)shape, hots[shape], &l, &nl, &rk, &nr);
    e.dev = shape == PROP_JOIN_HOT_BLOCK;
    e.mode = e.dev ? "device arrays" : "host arrays";
    snprintf(what, sizeof what, "u64 %s (%zu hot rows) %s", prop_join_shape_name((prop_join_shape)shape),
             hots[shape], e.mode);
    e.what = what;
    for (kind = TDM_JOIN_INNER; kind <= TDM_JOIN_ANTI; kind++) check_join(&e, l, nl, rk, nr, (tdm_join_kind)kind, 0);
    free(l);
    free(rk);
  }
  tdm_ctx_destroy(e.cpu);
  tdm_ctx_destroy(e.gpu);
}

/* The arrays of the allocation-failure test. */
enum { OOM_N = 3000, OOM_JOIN_CAP = 64 * OOM_N };
typedef struct oom_io {
  double k[OOM_N], v[OOM_N], ko[OOM_N], vo[OOM_N];
  uint64_t a[OOM_N], c[OOM_N], inv[OOM_N], lo[OOM_JOIN_CAP], ro[OOM_JOIN_CAP];
  uint8_t f[OOM_N];
  size_t n_out;
} oom_io;

static int all_bytes(const void *p, size_t n, int b) {
  size_t i;
  for (i = 0; i < n; i++)
    if (((const unsigned char *)p)[i] != b) return 0;
  return 1;
}

/* Each call sets its checked outputs to the sentinel first; untouched says
 * whether they still are after a failure. */
static tdm_status oom_unique(tdm_ctx *g, oom_io *x) {
  memset(x->a, SENTINEL, sizeof x->a);
  memset(x->inv, SENTINEL, sizeof x->inv);
  return tdm_unique(g, TDM_F64, x->k, OOM_N, TDM_ORDER_FIRST_SEEN, x->ko, x->a, x->c, x->inv, &x->n_out);
}
static int oom_unique_untouched(const oom_io *x) {
  return all_bytes(x->a, sizeof x->a, SENTINEL) && all_bytes(x->inv, sizeof x->inv, SENTINEL);
}
static tdm_status oom_group(tdm_ctx *g, oom_io *x) {
  memset(x->vo, SENTINEL, sizeof x->vo);
  return tdm_group_reduce(g, TDM_F64, x->k, TDM_F64, x->v, OOM_N, TDM_AGG_SUM, TDM_EQ_NUMERIC, x->ko, x->vo, &x->n_out);
}
static int oom_group_untouched(const oom_io *x) { return all_bytes(x->vo, sizeof x->vo, SENTINEL); }
static tdm_status oom_isin(tdm_ctx *g, oom_io *x) {
  memset(x->f, SENTINEL, sizeof x->f);
  return tdm_isin(g, TDM_F64, x->k, OOM_N, x->v, OOM_N, 0, x->f);
}
static int oom_isin_untouched(const oom_io *x) { return all_bytes(x->f, sizeof x->f, SENTINEL); }
static tdm_status oom_join(tdm_ctx *g, oom_io *x) {
  memset(x->lo, SENTINEL, sizeof x->lo);
  return tdm_join(g, TDM_JOIN_INNER, TDM_F64, x->k, OOM_N, x->k, 100, 0, x->lo, x->ro, OOM_JOIN_CAP, &x->n_out);
}
static int oom_join_untouched(const oom_io *x) { return all_bytes(x->lo, sizeof x->lo, SENTINEL); }

/* Fails the k-th device allocation of the call for k = 1, 2, ... until the
 * call allocates fewer than k times: every failure must be OUT_OF_MEMORY
 * with a message and its outputs untouched, the last try succeeds. Each
 * try has a fresh context, whose scratch cache is empty, so every try takes
 * the same blocks. */
static void oom_each(const char *what, tdm_status (*call)(tdm_ctx *, oom_io *), int (*untouched)(const oom_io *),
                     oom_io *x) {
  long kf, made;
  for (kf = 1; kf < 500; kf++) {
    tdm_ctx *g = prop_ctx(TDM_BACKEND_CUDA, 0);
    tdm_status st;
    tdm_test_alloc_fail_at(kf);
    st = call(g, x);
    made = tdm_test_alloc_count();
    tdm_test_alloc_fail_at(0);
    tdm_ctx_destroy(g);
    /* A failed allocation may be retried after the context's cache is
     * emptied, so success is not the end until nothing was left to fail. */
    if (st == TDM_OK) {
      if (made < kf) break;
      continue;
    }
    cr_assert_eq(st, TDM_ERR_OUT_OF_MEMORY, "%s (allocation %ld failing): %s: %s", what, kf, tdm_status_name(st),
                 tdm_last_error());
    cr_assert(tdm_last_error()[0] != 0, "%s: no message", what);
    cr_assert(untouched(x), "%s: outputs written (allocation %ld failing)", what, kf);
  }
  cr_assert_lt(kf, 500, "%s: never succeeded", what);
  cr_assert_gt(kf, 1, "%s: allocated nothing", what);
}

Test(ops_cuda, every_allocation_point) {
  const char *why;
  oom_io *x;
  size_t i;
  prop_rng r;
  if (!prop_cuda_usable(&why)) cr_skip_test("no usable CUDA device: %s", why);
  x = malloc(sizeof *x);
  prop_rng_init(&r, 0x00C0DA);
  prop_fill(&r, TDM_F64, x->k, OOM_N, PROP_FEW_DISTINCT);
  for (i = 0; i < OOM_N; i++) x->v[i] = (double)i;
  oom_each("tdm_unique", oom_unique, oom_unique_untouched, x);
  oom_each("tdm_group_reduce", oom_group, oom_group_untouched, x);
  oom_each("tdm_isin", oom_isin, oom_isin_untouched, x);
  oom_each("tdm_join", oom_join, oom_join_untouched, x);
  free(x);
}
