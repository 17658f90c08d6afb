/*
 * test_allocator.c: the caller's allocator (tdm_ctx_opts.allocator) and the
 * context flags, on the CPU backend.
 *  - every block tandem takes comes from the allocator and goes back to it
 *    with the size it was taken with, by the time its owner is destroyed
 *    (structure storage above 2 MiB, which tandem otherwise maps from the OS,
 *    included);
 *  - NULL from the allocator at each allocation in turn: every mutating call
 *    fails with TDM_ERR_OUT_OF_MEMORY and changes nothing;
 *  - a misaligned block is handed back at once and is a failure;
 *  - steady state: repeated read-only calls of one size allocate nothing;
 *  - TDM_CTX_STREAM_ORDERED is accepted on a CPU context, tdm_ctx_sync
 *    returns TDM_OK, and the CPU never waits for a device.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hooks/hooks.h"
#include "prop.h"
#include "snap.h"

/* ---- a recording allocator ------------------------------------------------- */

enum { MAX_BLOCKS = 4096 };

typedef struct rec_alloc {
  void *ptr[MAX_BLOCKS];   /* what the library got */
  void *raw[MAX_BLOCKS];   /* what malloc returned */
  size_t bytes[MAX_BLOCKS];
  int live;
  long allocs, frees;
  long fail_at;      /* > 0: that allocation (1-based, counted from arming) returns NULL */
  long since_armed;
  int misalign;      /* hand out blocks 16 bytes off a 64-byte boundary */
  int bad_frees;     /* frees of unknown blocks or with the wrong size */
  int bad_args;      /* host allocations with device != -1 or a stream */
} rec_alloc;

static void *rec_alloc_fn(void *user, size_t bytes, int device, void *stream) {
  rec_alloc *a = (rec_alloc *)user;
  void *raw = NULL;
  if (device != -1 || stream != NULL) a->bad_args++;
  a->since_armed++;
  if (a->fail_at > 0 && a->since_armed == a->fail_at) return NULL;
  if (a->live == MAX_BLOCKS) return NULL;
  if (posix_memalign(&raw, 64, bytes + 64) != 0) return NULL;
  a->raw[a->live] = raw;
  a->ptr[a->live] = (char *)raw + (a->misalign ? 16 : 0);
  a->bytes[a->live] = bytes;
  a->allocs++;
  return a->ptr[a->live++];
}

static void rec_free_fn(void *user, void *ptr, size_t bytes, int device, void *stream) {
  rec_alloc *a = (rec_alloc *)user;
  int i;
  if (device != -1 || stream != NULL) a->bad_args++;
  for (i = 0; i < a->live; i++)
    if (a->ptr[i] == ptr) break;
  if (i == a->live || a->bytes[i] != bytes) {
    a->bad_frees++;
    return;
  }
  free(a->raw[i]);
  a->live--;
  a->ptr[i] = a->ptr[a->live];
  a->raw[i] = a->raw[a->live];
  a->bytes[i] = a->bytes[a->live];
  a->frees++;
}

static tdm_allocator rec_allocator(rec_alloc *a) {
  tdm_allocator al;
  memset(a, 0, sizeof *a);
  al.alloc = rec_alloc_fn;
  al.free = rec_free_fn;
  al.user = a;
  return al;
}

static tdm_ctx *rec_ctx(const tdm_allocator *al) {
  tdm_ctx_opts o;
  tdm_ctx *c = NULL;
  tdm_status s;
  memset(&o, 0, sizeof o);
  o.backend = TDM_BACKEND_CPU;
  o.cpu_threads = 2;
  o.allocator = al;
  s = tdm_ctx_create(&o, &c);
  cr_assert_eq(s, TDM_OK, "tdm_ctx_create: %s", tdm_last_error());
  return c;
}

static void arm(rec_alloc *a, long k) {
  a->since_armed = 0;
  a->fail_at = k;
}

/* ---- every block through the allocator, freed with its size ------------------ */

Test(allocator, every_block_through_it_and_back_with_its_size) {
  rec_alloc a;
  tdm_allocator al = rec_allocator(&a);
  tdm_ctx *c = rec_ctx(&al);
  enum { N = 300000 }; /* tables and node arrays above 2 MiB */
  uint64_t *k = malloc(N * 8), *v = malloc(N * 8), *q = malloc(N * 8);
  uint8_t *f = malloc(N);
  size_t i, erased = 0;
  tdm_hash_opts ho = {TDM_U64, TDM_U64, 16, 0, 0, TDM_DUP_KEEP_LAST};
  tdm_btree_opts bo = {TDM_U64, TDM_U64, TDM_DUP_KEEP_FIRST};
  tdm_hash *h = NULL;
  tdm_btree *t = NULL;
  prop_rng r;
  long before_ctx;

  prop_rng_init(&r, 0xA110C);
  cr_assert_gt(a.allocs, 0, "the context itself comes from the allocator");
  before_ctx = a.live;
  for (i = 0; i < N; i++) {
    k[i] = prop_next(&r);
    v[i] = i;
  }
  cr_assert_eq(tdm_sort_pairs(c, TDM_U64, k, TDM_U64, v, N, 0), TDM_OK);
  cr_assert_eq(tdm_hash_create(c, &ho, &h), TDM_OK);
  cr_assert_eq(tdm_hash_insert(h, k, v, N), TDM_OK, "%s", tdm_last_error()); /* grows several times */
  cr_assert_eq(tdm_hash_find(h, k, q, f, N), TDM_OK);
  cr_assert_eq(tdm_hash_erase(h, k, N / 2, &erased), TDM_OK);
  cr_assert_eq(erased, N / 2);
  cr_assert_eq(tdm_hash_validate(h), TDM_OK);
  cr_assert_eq(tdm_btree_build(c, &bo, k, v, N / 2, &t), TDM_OK);
  cr_assert_eq(tdm_btree_insert(t, k + N / 2, v + N / 2, N / 2), TDM_OK); /* node array grows */
  cr_assert_eq(tdm_btree_size(t), N);
  cr_assert_eq(tdm_btree_validate(t), TDM_OK);
  cr_assert_eq(tdm_btree_erase(t, k, N / 3, &erased), TDM_OK);
  cr_assert_eq(tdm_btree_validate(t), TDM_OK);
  cr_assert_gt(a.live, before_ctx, "structures hold allocator blocks");
  tdm_hash_destroy(h);
  tdm_btree_destroy(t);
  /* Left: the context and its scratch cache. */
  cr_assert_leq(a.live, before_ctx + 1, "%d blocks held after the structures were destroyed", a.live);
  tdm_ctx_destroy(c);
  cr_assert_eq(a.bad_frees, 0, "a block was freed with another size or twice");
  cr_assert_eq(a.bad_args, 0, "host blocks are asked for with device -1 and no stream");
  cr_assert_eq(a.live, 0, "%d blocks still held after the context was destroyed", a.live);
  cr_assert_eq(a.allocs, a.frees);
  free(k); free(v); free(q); free(f);
}

Test(allocator, structures_free_their_blocks_before_the_context) {
  rec_alloc a;
  tdm_allocator al = rec_allocator(&a);
  tdm_ctx *c = rec_ctx(&al);
  enum { N = 5000 };
  uint64_t k[N];
  size_t i;
  int held;
  tdm_hash_opts ho = {TDM_U64, TDM_U32, 1000000, 0, 0, TDM_DUP_KEEP_LAST}; /* a mapped-size table */
  tdm_btree_opts bo = {TDM_F64, TDM_U32, TDM_DUP_KEEP_FIRST};
  tdm_hash *h = NULL;
  tdm_btree *t = NULL;
  for (i = 0; i < N; i++) k[i] = i * 7919u;
  held = a.live;
  cr_assert_eq(tdm_hash_create(c, &ho, &h), TDM_OK);
  cr_assert_eq(tdm_hash_insert(h, k, NULL, 0), TDM_OK);
  cr_assert_eq(tdm_btree_build(c, &bo, k, NULL, 0, &t), TDM_OK);
  cr_assert_gt(a.live, held);
  tdm_hash_destroy(h);
  tdm_btree_destroy(t);
  /* Only the context's own blocks (itself, its scratch cache) remain. */
  cr_assert_leq(a.live, held + 1);
  tdm_ctx_destroy(c);
  cr_assert_eq(a.live, 0);
  cr_assert_eq(a.bad_frees, 0);
}

/* Without an allocator a CPU context keeps freed large mappings for reuse
 * (test_map_cache.c); with one it keeps none: the allocator sees every byte
 * of every table, each time, and has it back when the table is destroyed. */
Test(allocator, freed_mappings_are_not_kept_with_an_allocator) {
  rec_alloc a;
  tdm_allocator al = rec_allocator(&a);
  tdm_ctx *c = rec_ctx(&al);
  tdm_hash_opts ho = {TDM_U64, TDM_U64, 1 << 20, 0, 0, TDM_DUP_KEEP_LAST}; /* 32 MiB of slots */
  tdm_hash *h = NULL;
  size_t kept = 1, big;
  int held = a.live, rep, i;
  long allocs0;
  for (rep = 0; rep < 3; rep++) {
    allocs0 = a.allocs;
    cr_assert_eq(tdm_hash_create(c, &ho, &h), TDM_OK);
    for (big = 0, i = 0; i < a.live; i++)
      if (a.bytes[i] > big) big = a.bytes[i];
    cr_assert_gt(a.allocs, allocs0, "run %d: the table came from the allocator", rep);
    cr_assert_geq(big, (size_t)32 << 20, "run %d: the slots were one allocator block (%zu bytes)", rep, big);
    tdm_hash_destroy(h);
    cr_assert_eq(a.live, held, "run %d: every block of the table is back", rep);
    tdm_test_map_cache(c, &kept, NULL, NULL);
    cr_assert_eq(kept, 0);
  }
  cr_assert_eq(tdm_ctx_trim(c), TDM_OK);
  tdm_ctx_destroy(c);
  cr_assert_eq(a.live, 0);
  cr_assert_eq(a.bad_frees, 0);
}

/* ---- NULL at each allocation in turn ------------------------------------------ */

/* For k = 1, 2, ...: setup, arm the allocator to return NULL at its k-th
 * allocation, run op, check. Ends when op succeeds without reaching k. */
#define NULL_LOOP(what, a, setup, op, check)                                                        \
  do {                                                                                              \
    long kf;                                                                                        \
    tdm_status st_;                                                                                 \
    for (kf = 1;; kf++) {                                                                           \
      cr_assert_lt(kf, 1000, "%s: never succeeded", what);                                         \
      setup;                                                                                        \
      arm(&(a), kf);                                                                                \
      st_ = (op);                                                                                   \
      arm(&(a), 0);                                                                                 \
      if (st_ == TDM_ERR_OUT_OF_MEMORY) {                                                           \
        cr_assert(tdm_last_error()[0] != '\0', "%s: no message", what);                            \
        check;                                                                                      \
        continue;                                                                                   \
      }                                                                                             \
      cr_assert_eq(st_, TDM_OK, "%s (allocation %ld NULL): %s: %s", what, kf, tdm_status_name(st_), \
                   tdm_last_error());                                                               \
      if ((a).since_armed < kf) break;                                                              \
    }                                                                                               \
    fprintf(stderr, "allocator NULL: %-22s %ld allocation points\n", what, kf - 1);               \
  } while (0)

Test(allocator, null_fails_every_mutating_call_cleanly) {
  rec_alloc a;
  tdm_allocator al = rec_allocator(&a);
  tdm_ctx *c = NULL;
  enum { N = 40000 };
  uint64_t *k = malloc(N * 8), *k0 = malloc(N * 8), *v = malloc(N * 8), *v0 = malloc(N * 8);
  size_t i, erased;
  tdm_hash_opts ho = {TDM_U64, TDM_U64, 1000, 0, 0, TDM_DUP_SUM};
  tdm_btree_opts bo = {TDM_I64, TDM_U64, TDM_DUP_KEEP_LAST};
  tdm_hash *h = NULL;
  tdm_btree *t = NULL;
  prop_snap before;
  prop_rng r;
  tdm_ctx_opts o;

  prop_rng_init(&r, 0x0A11);
  for (i = 0; i < N; i++) {
    k0[i] = prop_below(&r, 3 * N);
    v0[i] = k0[i] * 3;
  }

  /* The context itself. */
  memset(&o, 0, sizeof o);
  o.backend = TDM_BACKEND_CPU;
  o.allocator = &al;
  arm(&a, 1);
  cr_assert_eq(tdm_ctx_create(&o, &c), TDM_ERR_OUT_OF_MEMORY);
  cr_assert_null(c);
  arm(&a, 0);
  cr_assert_eq(a.live, 0);

  /* Sorts: a fresh context each time, so its scratch starts empty. */
  NULL_LOOP("tdm_sort_pairs", a, (tdm_ctx_destroy(c), c = rec_ctx(&al), memcpy(k, k0, N * 8), memcpy(v, v0, N * 8)),
            tdm_sort_pairs(c, TDM_U64, k, TDM_U64, v, N, 0),
            cr_assert(memcmp(k, k0, N * 8) == 0 && memcmp(v, v0, N * 8) == 0, "sort changed its input"));
  NULL_LOOP("tdm_argsort", a, (tdm_ctx_destroy(c), c = rec_ctx(&al)), tdm_argsort(c, TDM_U64, k0, TDM_U64, v, N, 0),
            (void)0);

  /* Hash table: creation, insert with growth, erase, clear. */
  NULL_LOOP("tdm_hash_create", a, (tdm_hash_destroy(h), h = NULL), tdm_hash_create(c, &ho, &h),
            cr_assert_null(h));
  NULL_LOOP("tdm_hash_insert (grows)", a, (void)0, tdm_hash_insert(h, k0, v0, N),
            cr_assert_eq(tdm_hash_size(h), 0, "a failed insert left keys"));
  before = prop_hash_snap(h);
  NULL_LOOP("tdm_hash_insert (sum)", a, (void)0, tdm_hash_insert(h, k0, v0, N / 2),
            prop_hash_same(h, &before, "insert"));
  prop_snap_free(&before);
  before = prop_hash_snap(h);
  NULL_LOOP("tdm_hash_erase", a, (void)0, tdm_hash_erase(h, k0, N / 4, &erased),
            prop_hash_same(h, &before, "erase"));
  prop_snap_free(&before);
  cr_assert_eq(tdm_hash_validate(h), TDM_OK);

  /* B-tree: build, insert (node growth), erase. */
  NULL_LOOP("tdm_btree_build", a, (tdm_btree_destroy(t), t = NULL), tdm_btree_build(c, &bo, k0, v0, N / 2, &t),
            cr_assert_null(t));
  before = prop_btree_snap(t);
  NULL_LOOP("tdm_btree_insert", a, (void)0, tdm_btree_insert(t, k0 + N / 2, v0 + N / 2, N / 2),
            prop_btree_same(t, &before, "insert"));
  prop_snap_free(&before);
  before = prop_btree_snap(t);
  NULL_LOOP("tdm_btree_erase", a, (void)0, tdm_btree_erase(t, k0, N / 3, &erased),
            prop_btree_same(t, &before, "erase"));
  prop_snap_free(&before);
  cr_assert_eq(tdm_btree_validate(t), TDM_OK);

  tdm_hash_destroy(h);
  tdm_btree_destroy(t);
  tdm_ctx_destroy(c);
  cr_assert_eq(a.live, 0, "%d blocks leaked", a.live);
  cr_assert_eq(a.bad_frees, 0);
  free(k); free(k0); free(v); free(v0);
}

/* ---- misaligned blocks ------------------------------------------------------ */

Test(allocator, misaligned_block_is_returned_and_a_failure) {
  rec_alloc a;
  tdm_allocator al = rec_allocator(&a);
  tdm_ctx_opts o;
  tdm_ctx *c = NULL;
  uint64_t k[1000], v[1000];
  size_t i;

  memset(&o, 0, sizeof o);
  o.backend = TDM_BACKEND_CPU;
  o.allocator = &al;
  a.misalign = 1;
  cr_assert_eq(tdm_ctx_create(&o, &c), TDM_ERR_OUT_OF_MEMORY);
  cr_assert_null(c);
  cr_assert_eq(a.live, 0, "the misaligned block was not freed at once");
  cr_assert_eq(a.frees, 1);

  /* A context made with good blocks, then sorts with bad ones. sort_pairs
   * always takes scratch (a keys-only sort of this size may take none). */
  a.misalign = 0;
  cr_assert_eq(tdm_ctx_create(&o, &c), TDM_OK);
  for (i = 0; i < 1000; i++) {
    k[i] = 1000 - i;
    v[i] = i;
  }
  a.misalign = 1;
  cr_assert_eq(tdm_sort_pairs(c, TDM_U64, k, TDM_U64, v, 1000, 0), TDM_ERR_OUT_OF_MEMORY);
  cr_assert_eq(k[0], 1000, "the sort touched its keys");
  cr_assert_eq(v[0], 0, "the sort touched its values");
  a.misalign = 0;
  cr_assert_eq(tdm_sort_pairs(c, TDM_U64, k, TDM_U64, v, 1000, 0), TDM_OK);
  cr_assert_eq(k[0], 1);
  cr_assert_eq(v[0], 999);
  tdm_ctx_destroy(c);
  cr_assert_eq(a.live, 0);
  cr_assert_eq(a.bad_frees, 0);
}

Test(allocator, incomplete_allocator_is_invalid) {
  tdm_allocator al = {NULL, NULL, NULL};
  tdm_ctx_opts o;
  tdm_ctx *c = NULL;
  memset(&o, 0, sizeof o);
  o.backend = TDM_BACKEND_CPU;
  o.allocator = &al;
  cr_assert_eq(tdm_ctx_create(&o, &c), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_null(c);
  cr_assert(strstr(tdm_last_error(), "allocator") != NULL, "%s", tdm_last_error());
}

/* ---- steady state ------------------------------------------------------------- */

/* Repeats op reps times after a warm-up and returns the allocations made by
 * the repeats, as the allocator and as the context's counter see them. */
#define STEADY(a, c, op, what)                                                                      \
  do {                                                                                              \
    long al0, ctx0, ctx1;                                                                           \
    int rep_;                                                                                       \
    cr_assert_eq((op), TDM_OK, "%s: %s", what, tdm_last_error());                                  \
    al0 = (a).allocs;                                                                               \
    tdm_test_ctx_counters(c, &ctx0, NULL);                                                          \
    for (rep_ = 0; rep_ < 5; rep_++) cr_assert_eq((op), TDM_OK, "%s", what);                       \
    tdm_test_ctx_counters(c, &ctx1, NULL);                                                          \
    cr_assert_eq((a).allocs, al0, "%s: %ld allocator calls in steady state", what, (a).allocs - al0); \
    cr_assert_eq(ctx1, ctx0, "%s: %ld allocations in steady state", what, ctx1 - ctx0);            \
  } while (0)

Test(allocator, steady_state_read_only_calls_allocate_nothing) {
  rec_alloc a;
  tdm_allocator al = rec_allocator(&a);
  tdm_ctx *c = rec_ctx(&al);
  enum { N = 100000, Q = 4096 };
  uint64_t *k = malloc(N * 8), *v = malloc(N * 8), *s = malloc(N * 8), *q = malloc(Q * 8), *hi = malloc(Q * 8);
  uint64_t *out = malloc(Q * 8), *perm = malloc(N * 8);
  uint8_t *f = malloc(Q);
  size_t i;
  tdm_hash_opts ho = {TDM_U64, TDM_U64, N, 0, 0, TDM_DUP_KEEP_LAST};
  tdm_btree_opts bo = {TDM_U64, TDM_U64, TDM_DUP_KEEP_LAST};
  tdm_hash *h = NULL;
  tdm_btree *t = NULL;
  prop_rng r;

  prop_rng_init(&r, 0x57EAD);
  for (i = 0; i < N; i++) {
    k[i] = prop_next(&r);
    v[i] = i;
  }
  for (i = 0; i < Q; i++) {
    q[i] = i % 2 ? k[prop_below(&r, N)] : prop_next(&r);
    hi[i] = q[i] + ((uint64_t)1 << 50);
    if (hi[i] < q[i]) hi[i] = ~(uint64_t)0;
  }
  cr_assert_eq(tdm_hash_create(c, &ho, &h), TDM_OK);
  cr_assert_eq(tdm_hash_insert(h, k, v, N), TDM_OK);
  cr_assert_eq(tdm_btree_build(c, &bo, k, v, N, &t), TDM_OK);

  STEADY(a, c, (memcpy(s, k, N * 8), tdm_sort(c, TDM_U64, s, N, 0)), "tdm_sort");
  STEADY(a, c, (memcpy(s, k, N * 8), tdm_sort_pairs(c, TDM_U64, s, TDM_U64, perm, N, TDM_SORT_DESCENDING)),
         "tdm_sort_pairs");
  STEADY(a, c, tdm_argsort(c, TDM_U64, k, TDM_U64, perm, N, 0), "tdm_argsort");
  STEADY(a, c, tdm_hash_find(h, q, out, f, Q), "tdm_hash_find");
  STEADY(a, c, tdm_btree_find(t, q, out, f, Q), "tdm_btree_find");
  STEADY(a, c, tdm_btree_rank(t, q, out, Q), "tdm_btree_rank");
  STEADY(a, c, tdm_btree_range_count(t, q, hi, out, Q), "tdm_btree_range_count");

  tdm_hash_destroy(h);
  tdm_btree_destroy(t);
  tdm_ctx_destroy(c);
  cr_assert_eq(a.live, 0);
  free(k); free(v); free(s); free(q); free(hi); free(out); free(perm); free(f);
}

Test(allocator, steady_state_without_an_allocator_too) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 2);
  enum { N = 50000 };
  uint64_t *k = malloc(N * 8), *s = malloc(N * 8);
  long a0, a1;
  int rep;
  size_t i;
  for (i = 0; i < N; i++) k[i] = (i * 0x9E3779B97F4A7C15ull) >> 7;
  memcpy(s, k, N * 8);
  cr_assert_eq(tdm_sort(c, TDM_U64, s, N, 0), TDM_OK);
  tdm_test_ctx_counters(c, &a0, NULL);
  cr_assert_gt(a0, 0, "the counter counts the built-in allocation too");
  for (rep = 0; rep < 4; rep++) {
    memcpy(s, k, N * 8);
    cr_assert_eq(tdm_sort(c, TDM_U64, s, N, 0), TDM_OK);
  }
  tdm_test_ctx_counters(c, &a1, NULL);
  cr_assert_eq(a1, a0);
  tdm_ctx_destroy(c);
  free(k); free(s);
}

/* ---- flags ---------------------------------------------------------------------- */

Test(ctx_flags, stream_ordered_is_accepted_on_the_cpu_and_changes_nothing) {
  tdm_ctx_opts o;
  tdm_ctx *c = NULL;
  uint32_t k[5] = {5, 3, 1, 4, 2};
  long waits = -1;
  memset(&o, 0, sizeof o);
  o.backend = TDM_BACKEND_CPU;
  o.flags = TDM_CTX_STREAM_ORDERED;
  cr_assert_eq(tdm_ctx_create(&o, &c), TDM_OK);
  cr_assert_eq(tdm_sort(c, TDM_U32, k, 5, 0), TDM_OK);
  /* Synchronous as ever: the result is there before any sync. */
  cr_assert(k[0] == 1 && k[1] == 2 && k[2] == 3 && k[3] == 4 && k[4] == 5);
  cr_assert_eq(tdm_ctx_sync(c), TDM_OK);
  tdm_test_ctx_counters(c, NULL, &waits);
  cr_assert_eq(waits, 0, "a CPU context never waits for a device");
  tdm_ctx_destroy(c);
}

Test(ctx_flags, unknown_flags_and_null_sync_are_invalid) {
  tdm_ctx_opts o;
  tdm_ctx *c = NULL;
  memset(&o, 0, sizeof o);
  o.backend = TDM_BACKEND_CPU;
  o.flags = 0x80u;
  cr_assert_eq(tdm_ctx_create(&o, &c), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_null(c);
  cr_assert(strstr(tdm_last_error(), "flags") != NULL, "%s", tdm_last_error());
  cr_assert_eq(tdm_ctx_sync(NULL), TDM_ERR_INVALID_ARGUMENT);
  c = prop_ctx(TDM_BACKEND_CPU, 1);
  cr_assert_eq(tdm_ctx_sync(c), TDM_OK);
  tdm_ctx_destroy(c);
}
