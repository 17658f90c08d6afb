/*
 * bench_search.h: the search peers of the btree subcommand and the headline
 * mode, in one place so that both time the same code: a huge-page array
 * and the Eytzinger-layout search over a sorted array.
 */
#ifndef TANDEM_BENCH_SEARCH_H
#define TANDEM_BENCH_SEARCH_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <sys/mman.h>

/* A 2 MiB aligned array advised as huge pages: the peers get the TLB reach
 * tandem's node array gets, so the comparison is about the search alone. */
inline uint64_t *huge_array(size_t n) {
  size_t bytes = (n * 8 + ((size_t)2 << 20) - 1) & ~(((size_t)2 << 20) - 1);
  uint64_t *p = (uint64_t *)aligned_alloc((size_t)2 << 20, bytes);
  if (!p) {
    fprintf(stderr, "tandem-bench: out of memory for a peer array\n");
    exit(1);
  }
  (void)madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

/* Eytzinger (BFS) layout of a sorted array: node k has children 2k and
 * 2k + 1, 1-based, in a 64-byte aligned array so the 16 descendants four
 * levels below k (slots 16k .. 16k + 15) fill exactly two cache lines. The
 * search is branchless and prefetches those two lines every step. */
struct eytzinger {
  uint64_t *key = nullptr, *val = nullptr;
  size_t n = 0;
  void fill(const uint64_t *sk, const uint64_t *sv, size_t &i, size_t k) {
    if (k > n) return;
    fill(sk, sv, i, 2 * k);
    key[k] = sk[i];
    val[k] = sv[i];
    i++;
    fill(sk, sv, i, 2 * k + 1);
  }
  eytzinger(const uint64_t *sk, const uint64_t *sv, size_t n_) : n(n_) {
    key = huge_array(n + 1); /* prefetches past the end are harmless */
    val = huge_array(n + 1);
    key[0] = val[0] = 0;
    size_t i = 0;
    fill(sk, sv, i, 1);
  }
  ~eytzinger() {
    free(key);
    free(val);
  }
  eytzinger(const eytzinger &) = delete;
  eytzinger &operator=(const eytzinger &) = delete;
  /* Slot of the first key >= x, 0 when none. */
  size_t lower(uint64_t x) const {
    size_t k = 1;
    const uint64_t *a = key;
    while (k <= n) {
      __builtin_prefetch(a + 16 * k);
      __builtin_prefetch(a + 16 * k + 8);
      k = 2 * k + (a[k] < x);
    }
    k >>= __builtin_ffsll((long long)~k);
    return k;
  }
};

#endif /* TANDEM_BENCH_SEARCH_H */
