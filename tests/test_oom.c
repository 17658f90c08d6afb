/*
 * test_oom.c: allocation-failure injection over every public mutating
 * operation. For each, the k-th allocation is made to fail for k = 1, 2, ...
 * until the call succeeds. Every failing call must return
 * TDM_ERR_OUT_OF_MEMORY with a message, leave the structure validating and
 * holding exactly its previous contents, and leave in-place sort inputs
 * unchanged; under the sanitizer build, LeakSanitizer checks nothing leaks.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hooks/hooks.h"
#include "prop.h"
#include "snap.h"

enum { N = 60000 };

/* For k = 1, 2, ...: rebuilds the starting state (setup), runs op with the
 * k-th allocation failing, and checks the state after a failure (check).
 * An operation may also recover from a failed allocation (a fallback path)
 * and succeed; the loop ends once a run succeeds without reaching its k-th
 * allocation, so every allocation the operation makes has been failed once
 * (operations that allocate nothing, such as an erase in place, report 0). */
#define OOM_LOOP(what, setup, op, check)                                                               \
  do {                                                                                                 \
    long kf, points = 0;                                                                               \
    tdm_status st_;                                                                                    \
    for (kf = 1;; kf++) {                                                                              \
      long made_;                                                                                      \
      cr_assert_lt(kf, 10000, "%s: never succeeded", what);                                           \
      setup;                                                                                           \
      tdm_test_alloc_fail_at(kf);                                                                      \
      st_ = (op);                                                                                      \
      made_ = tdm_test_alloc_count();                                                                  \
      tdm_test_alloc_fail_at(0);                                                                       \
      if (st_ == TDM_ERR_OUT_OF_MEMORY) {                                                              \
        cr_assert(tdm_last_error()[0] != '\0', "%s: no message", what);                               \
        check;                                                                                         \
        points++;                                                                                      \
        continue;                                                                                      \
      }                                                                                                \
      cr_assert_eq(st_, TDM_OK, "%s (allocation %ld failing): %s: %s", what, kf, tdm_status_name(st_),  \
                   tdm_last_error());                                                                  \
      if (made_ < kf) break; /* the k-th allocation never came: all were covered */                   \
    }                                                                                                  \
    fprintf(stderr, "oom: %-28s %ld allocation points, %ld failed cleanly\n", what, kf - 1, points);   \
  } while (0)

Test(oom, sorts_leave_inputs_unchanged) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 2);
  uint64_t *k = malloc(N * 8), *k0 = malloc(N * 8), *v = malloc(N * 8), *v0 = malloc(N * 8);
  prop_rng r;
  size_t i;
  prop_rng_init(&r, 0x00B1);
  prop_fill(&r, TDM_F64, k0, N, PROP_BOUNDARY);
  for (i = 0; i < N; i++) v0[i] = i;
  /* A fresh context each time, so its scratch cache starts empty. */
  OOM_LOOP("tdm_sort", (tdm_ctx_destroy(c), c = prop_ctx(TDM_BACKEND_CPU, 2), memcpy(k, k0, N * 8)),
           tdm_sort(c, TDM_F64, k, N, TDM_SORT_DESCENDING),
           cr_assert(memcmp(k, k0, N * 8) == 0, "tdm_sort changed keys"));
  OOM_LOOP("tdm_sort_pairs",
           (tdm_ctx_destroy(c), c = prop_ctx(TDM_BACKEND_CPU, 2), memcpy(k, k0, N * 8), memcpy(v, v0, N * 8)),
           tdm_sort_pairs(c, TDM_F64, k, TDM_U64, v, N, 0),
           cr_assert(memcmp(k, k0, N * 8) == 0 && memcmp(v, v0, N * 8) == 0, "tdm_sort_pairs changed its input"));
  OOM_LOOP("tdm_argsort", (tdm_ctx_destroy(c), c = prop_ctx(TDM_BACKEND_CPU, 2)),
           tdm_argsort(c, TDM_F64, k0, TDM_U32, v, N, 0), (void)0);
  tdm_ctx_destroy(c);
  free(k); free(k0); free(v); free(v0);
}

Test(oom, hash_mutations_change_nothing) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 2);
  tdm_hash_opts o;
  tdm_hash *h = NULL;
  uint64_t *k = malloc(N * 8), *v = malloc(N * 8);
  prop_snap before;
  size_t i, erased = 0;
  memset(&o, 0, sizeof o);
  o.key_type = TDM_U64;
  o.value_type = TDM_U64;
  o.on_duplicate = TDM_DUP_SUM;
  for (i = 0; i < N; i++) {
    k[i] = i * 0x9e3779b97f4a7c15ull;
    v[i] = i;
  }
  OOM_LOOP("tdm_hash_create", (tdm_hash_destroy(h), h = NULL), tdm_hash_create(c, &o, &h), cr_assert_null(h));
  /* The starting state: a table holding a quarter of the keys. */
#define HASH_START                                                                                   \
  {                                                                                                  \
    tdm_hash_destroy(h);                                                                             \
    h = NULL;                                                                                        \
    cr_assert_eq(tdm_hash_create(c, &o, &h), TDM_OK);                                               \
    cr_assert_eq(tdm_hash_insert(h, k, v, N / 4), TDM_OK);                                          \
  }
  HASH_START;
  before = prop_hash_snap(h);
  OOM_LOOP("tdm_hash_insert (growing)", HASH_START, tdm_hash_insert(h, k, v, N), {
    cr_assert_eq(tdm_hash_validate(h), TDM_OK, "%s", tdm_last_error());
    prop_hash_same(h, &before, "insert");
  });
  OOM_LOOP("tdm_hash_erase", HASH_START, tdm_hash_erase(h, k, N / 8, &erased), {
    cr_assert_eq(tdm_hash_validate(h), TDM_OK);
    prop_hash_same(h, &before, "erase");
  });
  OOM_LOOP("tdm_hash_clear", HASH_START, tdm_hash_clear(h), {
    prop_hash_same(h, &before, "clear");
  });
  prop_snap_free(&before);
#undef HASH_START
  cr_assert_eq(tdm_hash_size(h), 0);
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
  free(k); free(v);
}

Test(oom, btree_mutations_change_nothing) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 2);
  tdm_btree_opts o = {TDM_I64, TDM_U64, TDM_DUP_MAX};
  tdm_btree *t = NULL;
  uint64_t *k = malloc(N * 8), *v = malloc(N * 8);
  prop_snap before;
  size_t i, erased = 0;
  prop_rng r;
  prop_rng_init(&r, 0x00B7);
  for (i = 0; i < N; i++) {
    k[i] = prop_next(&r) % (N * 4);
    v[i] = i;
  }
  OOM_LOOP("tdm_btree_build", (tdm_btree_destroy(t), t = NULL), tdm_btree_build(c, &o, k, v, N / 2, &t),
           cr_assert_null(t));
#define TREE_START                                                                                   \
  {                                                                                                  \
    tdm_btree_destroy(t);                                                                            \
    t = NULL;                                                                                        \
    cr_assert_eq(tdm_btree_build(c, &o, k, v, N / 2, &t), TDM_OK);                                  \
  }
  TREE_START;
  before = prop_btree_snap(t);
  OOM_LOOP("tdm_btree_insert", TREE_START, tdm_btree_insert(t, k + N / 2, v, N / 2), {
    cr_assert_eq(tdm_btree_validate(t), TDM_OK, "%s", tdm_last_error());
    prop_btree_same(t, &before, "insert");
  });
  OOM_LOOP("tdm_btree_erase", TREE_START, tdm_btree_erase(t, k, N / 3, &erased), {
    cr_assert_eq(tdm_btree_validate(t), TDM_OK, "%s", tdm_last_error());
    prop_btree_same(t, &before, "erase");
  });
  prop_snap_free(&before);
#undef TREE_START
  tdm_btree_destroy(t);
  tdm_ctx_destroy(c);
  free(k); free(v);
}


/* Structures large enough for the context's cache of freed mappings (tables
 * of 2 MiB and more, node arrays of 8 MiB and more, batch copies of 4 MiB
 * and more): every run after the first takes some blocks from the cache, and
 * a failure at any allocation, served from the cache or not, changes
 * nothing. */
Test(oom, growth_and_builds_with_kept_mappings) {
  enum { M = 400000 };
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 2);
  tdm_hash_opts ho;
  tdm_btree_opts bo = {TDM_U64, TDM_U64, TDM_DUP_KEEP_LAST};
  tdm_hash *h = NULL;
  tdm_btree *t = NULL;
  uint64_t *k = malloc(M * 8), *v = malloc(M * 8);
  prop_snap before;
  size_t i, kept = 0;
  long served = 0;
  memset(&ho, 0, sizeof ho);
  ho.key_type = TDM_U64;
  ho.value_type = TDM_U64;
  for (i = 0; i < M; i++) {
    k[i] = i * 0x9e3779b97f4a7c15ull;
    v[i] = i;
  }
#define GROW_START                                                                                   \
  {                                                                                                  \
    tdm_hash_destroy(h);                                                                             \
    h = NULL;                                                                                        \
    cr_assert_eq(tdm_hash_create(c, &ho, &h), TDM_OK);                                              \
    cr_assert_eq(tdm_hash_insert(h, k, v, M / 8), TDM_OK);                                          \
  }
  GROW_START;
  before = prop_hash_snap(h);
  OOM_LOOP("tdm_hash_insert (kept maps)", GROW_START, tdm_hash_insert(h, k, v, M), {
    cr_assert_eq(tdm_hash_validate(h), TDM_OK, "%s", tdm_last_error());
    prop_hash_same(h, &before, "insert");
  });
  prop_snap_free(&before);
#undef GROW_START
  tdm_hash_destroy(h);
  OOM_LOOP("tdm_btree_build (kept maps)", (tdm_btree_destroy(t), t = NULL),
           tdm_btree_build(c, &bo, k, v, M, &t), cr_assert_null(t));
  cr_assert_eq(tdm_btree_validate(t), TDM_OK);
  tdm_btree_destroy(t);
  tdm_test_map_cache(c, &kept, NULL, &served);
  cr_assert_gt(served, 0, "the runs took blocks from the cache");
  cr_assert_gt(kept, 0);
  tdm_ctx_destroy(c);
  free(k); free(v);
}
