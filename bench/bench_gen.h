/*
 * bench_gen.h: the input formulas of tandem-bench, shared by the host and the
 * GPU so either side can generate an input element from its index alone
 * (inputs of 2^28 elements are made on the GPU or on all CPU threads, never
 * by one thread) and the checks can recompute what a correct answer is.
 *
 *  - bench_key(seed, j): distinct keys for distinct j (a bijection of
 *    64-bit words): keys j < n are stored, keys j >= n are absent.
 *  - bench_word(seed, i): a random word per index.
 *  - Query sets over n stored keys: hit query i is stored key
 *    bench_hit_index(seed, i, n); a miss50 query is a stored key or an absent
 *    one, by a coin flip per query (bench_miss50_index: the key index, n or
 *    more when absent).
 *  - bench_ordered(bytes, is_signed, is_float, bits): the key's bits mapped
 *    to an unsigned word whose order is tandem's key order.
 */
#ifndef TANDEM_BENCH_GEN_H
#define TANDEM_BENCH_GEN_H

#include <cstddef>
#include <cstdint>

#ifdef __CUDACC__
#define BENCH_HD __host__ __device__ inline
#else
#define BENCH_HD inline
#endif

BENCH_HD uint64_t bench_fin(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Launch shape of the benchmark's own kernels: 256 threads a block,
 * grid-stride loops over what more than 65535 x 64 blocks would cover. */
inline unsigned bench_blocks_for(size_t n) {
  size_t b = (n + 255) / 256;
  if (b > 65535u * 64u) b = 65535u * 64u;
  return (unsigned)(b ? b : 1);
}
#define BENCH_GRID_STRIDE(i, n) \
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

/* Sorted-array searches (the benchmark's checks and its binary-search peer):
 * the number of the n sorted keys below x (bench_lower) or at most x
 * (bench_upper). */
BENCH_HD size_t bench_search(const uint64_t *s, size_t n, uint64_t x, bool upper) {
  size_t lo = 0, len = n;
  while (len > 0) {
    size_t half = len / 2;
    if (s[lo + half] < x || (upper && s[lo + half] == x)) {
      lo += half + 1;
      len -= half + 1;
    } else {
      len = half;
    }
  }
  return lo;
}
BENCH_HD size_t bench_lower(const uint64_t *s, size_t n, uint64_t x) { return bench_search(s, n, x, false); }
BENCH_HD size_t bench_upper(const uint64_t *s, size_t n, uint64_t x) { return bench_search(s, n, x, true); }

/* Equal to bench_unique_u64(n, seed)[j]. */
BENCH_HD uint64_t bench_key(uint64_t seed, uint64_t j) {
  return bench_fin(seed * 0x632be59bd9b4e019ull + j * 0x9e3779b97f4a7c15ull);
}

BENCH_HD uint64_t bench_word(uint64_t seed, uint64_t i) {
  return bench_fin((seed + 0x51ed27ull) * 0xd6e8feb86659fd93ull + i * 0x9e3779b97f4a7c15ull);
}

BENCH_HD uint64_t bench_hit_index(uint64_t seed, uint64_t i, uint64_t n) { return bench_word(seed + 101, i) % n; }

BENCH_HD uint64_t bench_miss50_index(uint64_t seed, uint64_t i, uint64_t n) {
  uint64_t w = bench_word(seed + 202, i);
  return (w & 1) ? bench_hit_index(seed, i, n) : n + (w >> 1) % n;
}

/* The value stored with key j (hash and B-tree benchmarks on the GPU). */
BENCH_HD uint64_t bench_value(uint64_t seed, uint64_t j) { return bench_word(seed + 303, j); }

/* tandem's key order as unsigned order: signed flips the sign bit, floats
 * follow totalOrder. */
BENCH_HD uint64_t bench_ordered(int bytes, bool is_signed, bool is_float, uint64_t b) {
  uint64_t sign = bytes == 4 ? 0x80000000ull : 0x8000000000000000ull;
  uint64_t all = bytes == 4 ? 0xffffffffull : ~0ull;
  if (is_float) return (b & sign) ? (~b & all) : (b | sign);
  if (is_signed) return b ^ sign;
  return b;
}

#endif /* TANDEM_BENCH_GEN_H */
