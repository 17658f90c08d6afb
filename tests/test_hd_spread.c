/*
 * test_hd_spread.c: the per-element functions that let the CUDA kernels
 * spread work one thread would otherwise do alone over unbounded input,
 * run on the CPU against a direct computation.
 *  - tdm__bt_csr_owner: the query owning an output position of a range
 *    result (one thread per output instead of one per query).
 *  - tdm__dup_combine grouped in any way (what a parallel reduce-by-key over
 *    a run of equal keys does) equals the sequential fold tdm__bt_reduce_run.
 *  - the order-free form the CUDA reduce-by-key runs (tdm__dup_by_position,
 *    tdm__dup_pick): combined in any grouping and any operand order, since
 *    CUB's ReduceByKey documents no order, it still equals that fold.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "tandem/detail/btree_node.h"

Test(hd_spread, csr_owner_matches_a_linear_walk) {
  enum { N = 300 };
  uint64_t off[N + 1], seed = 7;
  for (int trial = 0; trial < 40; trial++) {
    uint64_t n = 1 + (uint64_t)trial * 7 % N, j, i = 0;
    off[0] = 0;
    for (uint64_t q = 0; q < n; q++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      /* Many empty ranges, some long ones, one query holding almost all. */
      uint64_t r = seed >> 33, len = r % 3 == 0 ? 0 : r % 5;
      if (q == n / 2 && trial % 2) len = 5000;
      off[q + 1] = off[q] + len;
    }
    for (j = 0; j < off[n]; j++) {
      while (!(off[i] <= j && j < off[i + 1])) i++; /* the owner, walking */
      cr_assert_eq(tdm__bt_csr_owner(off, n, j), i, "trial %d, n %llu, position %llu", trial, (unsigned long long)n,
                   (unsigned long long)j);
    }
  }
}

Test(hd_spread, csr_owner_single_query_takes_everything) {
  uint64_t off[2] = {0, (uint64_t)1 << 40};
  cr_assert_eq(tdm__bt_csr_owner(off, 1, 0), 0u);
  cr_assert_eq(tdm__bt_csr_owner(off, 1, ((uint64_t)1 << 40) - 1), 0u);
}

/* Folds vals[s, e) as a parallel reduction would: chunks of random length
 * folded on their own, then the chunk results folded in order. */
static uint64_t chunked_fold(const uint64_t *vals, uint64_t s, uint64_t e, int dup, uint32_t vs, int vkind,
                             uint64_t *seed) {
  uint64_t acc = 0;
  int have = 0;
  while (s < e) {
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t len = 1 + (*seed >> 33) % 9, ce = s + len < e ? s + len : e, part = vals[s];
    for (uint64_t i = s + 1; i < ce; i++) part = tdm__dup_combine(part, vals[i], dup, vs, vkind);
    acc = have ? tdm__dup_combine(acc, part, dup, vs, vkind) : part;
    have = 1;
    s = ce;
  }
  return acc;
}

Test(hd_spread, dup_policies_fold_in_any_grouping) {
  enum { N = 257 };
  uint64_t vals[N], seed = 99;
  static const int kinds[] = {TDM_KIND_UNSIGNED, TDM_KIND_SIGNED, TDM_KIND_FLOAT};
  for (int dup = TDM__DUP_KEEP_FIRST; dup <= TDM__DUP_MAX; dup++)
    for (uint32_t vs = 4; vs <= 8; vs += 4)
      for (int k = 0; k < 3; k++) {
        if (dup == TDM__DUP_SUM && kinds[k] == TDM_KIND_FLOAT) continue; /* refused by the API */
        for (int trial = 0; trial < 20; trial++) {
          for (int i = 0; i < N; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            vals[i] = vs == 4 ? (seed >> 32) : seed ^ (seed >> 29);
          }
          uint64_t e = 1 + (uint64_t)trial * 13 % N;
          uint64_t want = tdm__bt_reduce_run(vals, 0, e, dup, vs, kinds[k]);
          uint64_t got = chunked_fold(vals, 0, e, dup, vs, kinds[k], &seed);
          cr_assert_eq(got, want, "policy %d, %u-byte values, kind %d, run of %llu: grouped %llx, sequential %llx",
                       dup, vs, kinds[k], (unsigned long long)e, (unsigned long long)got, (unsigned long long)want);
        }
      }
}

/* Folds vals[s, e) in a random binary tree with the operands of every node in
 * a random order: what a reduction that may combine partial results in any
 * order can do. Values for SUM / MIN / MAX; for KEEP_FIRST / KEEP_LAST the
 * copies' positions (tdm__dup_pick), then the value at the kept one, as the
 * CUDA hash insert and B+ tree build do. */
static uint64_t any_order_fold(const uint64_t *vals, uint64_t s, uint64_t e, int dup, uint32_t vs, int vkind,
                               uint64_t *seed) {
  uint64_t mid, a, b;
  *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
  if (e - s == 1) return tdm__dup_by_position(dup) ? s : vals[s];
  mid = s + 1 + (*seed >> 33) % (e - s - 1);
  a = any_order_fold(vals, s, mid, dup, vs, vkind, seed);
  b = any_order_fold(vals, mid, e, dup, vs, vkind, seed);
  if (*seed >> 63) { /* the right part first */
    uint64_t t = a;
    a = b;
    b = t;
  }
  return tdm__dup_by_position(dup) ? tdm__dup_pick(a, b, dup) : tdm__dup_combine(a, b, dup, vs, vkind);
}

Test(hd_spread, order_free_reduce_matches_the_fold_in_any_order) {
  enum { N = 200 };
  uint64_t vals[N], seed = 5;
  static const int kinds[] = {TDM_KIND_UNSIGNED, TDM_KIND_SIGNED, TDM_KIND_FLOAT};
  for (int dup = TDM__DUP_KEEP_FIRST; dup <= TDM__DUP_MAX; dup++)
    for (uint32_t vs = 4; vs <= 8; vs += 4)
      for (int k = 0; k < 3; k++) {
        if (dup == TDM__DUP_SUM && kinds[k] == TDM_KIND_FLOAT) continue;
        for (int trial = 0; trial < 30; trial++) {
          for (int i = 0; i < N; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            /* Few distinct values, so MIN / MAX see ties of equal bits too. */
            uint64_t r = trial % 2 ? seed % 5 : seed;
            vals[i] = vs == 4 ? (uint32_t)(r ^ (r >> 32)) : r ^ (r >> 29);
          }
          uint64_t e = 1 + (uint64_t)trial * 17 % N;
          uint64_t want = tdm__bt_reduce_run(vals, 0, e, dup, vs, kinds[k]);
          uint64_t got = any_order_fold(vals, 0, e, dup, vs, kinds[k], &seed);
          if (tdm__dup_by_position(dup)) got = vals[got];
          cr_assert_eq(got, want, "policy %d, %u-byte values, kind %d, run of %llu: any order %llx, sequential %llx",
                       dup, vs, kinds[k], (unsigned long long)e, (unsigned long long)got, (unsigned long long)want);
        }
      }
}

/* Why KEEP_FIRST / KEEP_LAST reduce positions: on values their combine keeps
 * one operand, so swapping the operands changes the result, which an
 * operator that CUB may apply in either order must not do. */
Test(hd_spread, keep_policies_are_not_commutative_on_values_but_are_on_positions) {
  for (int dup = TDM__DUP_KEEP_FIRST; dup <= TDM__DUP_KEEP_LAST; dup++) {
    cr_assert(tdm__dup_by_position(dup));
    cr_assert_neq(tdm__dup_combine(1, 2, dup, 8, TDM_KIND_UNSIGNED), tdm__dup_combine(2, 1, dup, 8, TDM_KIND_UNSIGNED));
    cr_assert_eq(tdm__dup_pick(3, 9, dup), tdm__dup_pick(9, 3, dup));
    cr_assert_eq(tdm__dup_pick(3, 9, dup), dup == TDM__DUP_KEEP_FIRST ? 3u : 9u);
  }
  for (int dup = TDM__DUP_SUM; dup <= TDM__DUP_MAX; dup++) cr_assert(!tdm__dup_by_position(dup));
}
