/*
 * csr.h: which owner an output position belongs to when many owners write
 * runs of one output array (CSR offsets). Shared by the CPU backend, the
 * CUDA kernels and the tests (hd.h).
 *
 * The offsets off[0..n] are non-decreasing, off[0] <= j < off[n], and owner
 * i writes positions [off[i], off[i + 1]). Work split by output position
 * instead of by owner keeps one owner's huge run (a B-tree query over most
 * keys, a join's hot key) from being one worker's serial loop: each worker
 * finds the owner of its first position once and walks forward from there.
 */
#ifndef TANDEM_CSR_H
#define TANDEM_CSR_H

#include "hd.h"

/* The owner of position j: the i in [0, n) with off[i] <= j < off[i + 1],
 * i.e. the last i with off[i] <= j, by binary search, so owners of empty
 * runs (equal offsets) are skipped. */
TDM_HD uint64_t tdm__csr_owner(const uint64_t *off, uint64_t n, uint64_t j) {
  uint64_t lo = 0, hi = n; /* answer in [lo, hi) */
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (off[mid] <= j) lo = mid;
    else hi = mid;
  }
  return lo;
}

/* The owner of position j given the owner i of an earlier position
 * (off[i] <= j < off[n]): i itself, else the next owner, else (past owners
 * of empty runs) a galloping search from i + 1, so a walk over consecutive
 * positions costs one compare per position plus the logarithm of any empty
 * owners it skips, never a linear scan of them. */
TDM_HD uint64_t tdm__csr_next(const uint64_t *off, uint64_t n, uint64_t i, uint64_t j) {
  uint64_t step = 1, hi;
  if (off[i + 1] > j) return i;
  i++; /* off[i] <= j, so i < n: the answer is in [i, n) */
  while (i + step < n && off[i + step] <= j) {
    i += step;
    step *= 2;
  }
  hi = i + step < n ? i + step : n; /* off[hi] > j */
  return i + tdm__csr_owner(off + i, hi - i, j);
}

#endif /* TANDEM_CSR_H */
