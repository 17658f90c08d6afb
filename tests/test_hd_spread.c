/*
 * test_hd_spread.c: the per-element functions that let the CUDA kernels
 * spread work one thread would otherwise do alone over unbounded input,
 * run on the CPU against a direct computation.
 *  - tdm__bt_csr_owner: the query owning an output position of a range
 *    result (one thread per output instead of one per query).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "hd/btree_node.h"

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
