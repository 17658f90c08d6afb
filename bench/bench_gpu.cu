/*
 * bench_gpu.cu: what tandem-bench does on the GPU besides calling tandem:
 *  - input generation from the formulas of bench_gen.h, one thread per
 *    element (2^28 inputs take milliseconds, not a single-threaded minute);
 *  - result checks that recompute the right answer independently (order,
 *    permutation and stability of sorts, find results from the query
 *    formulas, rank and range counts by a plain binary search);
 *  - the device ceilings: device-to-device copy bandwidth and the rate of
 *    random 8-byte loads from a table of a given size;
 *  (the peers are in bench_peers.cu).
 */
#include <cstdio>
#include <cstdlib>

#include "bench.h"
#include "bench_gen.h"

namespace {

void check(cudaError_t e, const char *what) { bench_cuda_check((int)e, what); }
void launched(const char *what) { bench_cuda_launched(what); }

struct type_info {
  int bytes;
  bool is_signed, is_float;
};

type_info info(tdm_type t) {
  return {(int)tdm_type_size(t), t == TDM_I32 || t == TDM_I64, t == TDM_F32 || t == TDM_F64};
}

__device__ uint64_t load_bits(const void *a, size_t i, int bytes) {
  return bytes == 4 ? (uint64_t)((const uint32_t *)a)[i] : ((const uint64_t *)a)[i];
}

/* An error counter in device memory, read back after the check kernel. */
struct counter {
  unsigned long long *d = nullptr;
  counter() {
    check(cudaMalloc(&d, sizeof *d), "cudaMalloc (counter)");
    check(cudaMemset(d, 0, sizeof *d), "cudaMemset (counter)");
  }
  ~counter() { cudaFree(d); }
  size_t get() {
    unsigned long long h = 0;
    check(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost), "counter D2H");
    return (size_t)h;
  }
  counter(const counter &) = delete;
  counter &operator=(const counter &) = delete;
};

/* ---- generation ---------------------------------------------------------------- */

/* Keys of sort benchmarks as bench_sort's make_keys shapes them: integers are
 * the random word's low bytes, floats finite values of random sign. */
__global__ void k_sort_keys(void *d, size_t n, type_info ti, uint64_t seed) {
  BENCH_GRID_STRIDE(i, n) {
    uint64_t w = bench_word(seed, i);
    if (ti.is_float && ti.bytes == 4) ((float *)d)[i] = (float)((double)(int64_t)w / 9.2e15);
    else if (ti.is_float) ((double *)d)[i] = (double)(int64_t)w / 9.2e15;
    else if (ti.bytes == 4) ((uint32_t *)d)[i] = (uint32_t)w;
    else ((uint64_t *)d)[i] = w;
  }
}

__global__ void k_iota(uint64_t *d, size_t n) {
  BENCH_GRID_STRIDE(i, n) d[i] = i;
}

__global__ void k_keys(uint64_t *d, size_t n, uint64_t seed, uint64_t first) {
  BENCH_GRID_STRIDE(i, n) d[i] = bench_key(seed, first + i);
}

__global__ void k_values(uint64_t *d, size_t n, uint64_t seed) {
  BENCH_GRID_STRIDE(i, n) d[i] = bench_value(seed, i);
}

__global__ void k_queries(uint64_t *d, size_t nq, uint64_t seed, size_t n, bool miss50) {
  BENCH_GRID_STRIDE(i, nq) d[i] = bench_key(seed, miss50 ? bench_miss50_index(seed, i, n) : bench_hit_index(seed, i, n));
}

__global__ void k_add_span(uint64_t *hi, const uint64_t *lo, size_t nq, uint64_t span) {
  BENCH_GRID_STRIDE(i, nq) hi[i] = lo[i] + span < lo[i] ? ~0ull : lo[i] + span;
}

/* ---- checks ---------------------------------------------------------------------- */

__global__ void k_check_find(uint64_t seed, size_t n, size_t nq, bool miss50, const uint8_t *found,
                             const uint64_t *vals, int valmode, unsigned long long *err) {
  BENCH_GRID_STRIDE(i, nq) {
    uint64_t j = miss50 ? bench_miss50_index(seed, i, n) : bench_hit_index(seed, i, n);
    bool present = j < n;
    bool ok = found[i] == (present ? 1 : 0);
    if (vals) ok = ok && vals[i] == (present ? (valmode ? bench_value(seed, j) : j) : 0);
    if (!ok) atomicAdd(err, 1ull);
  }
}

__global__ void k_check_order(const void *keys, size_t n, type_info ti, bool desc, unsigned long long *err) {
  BENCH_GRID_STRIDE(i, n) {
    if (i == 0) continue;
    uint64_t a = bench_ordered(ti.bytes, ti.is_signed, ti.is_float, load_bits(keys, i - 1, ti.bytes));
    uint64_t b = bench_ordered(ti.bytes, ti.is_signed, ti.is_float, load_bits(keys, i, ti.bytes));
    if (desc ? a < b : a > b) atomicAdd(err, 1ull);
  }
}

__global__ void k_fingerprint(const void *keys, size_t n, int bytes, unsigned long long *sum) {
  uint64_t s = 0;
  BENCH_GRID_STRIDE(i, n) s += bench_fin(load_bits(keys, i, bytes) + 0x9e3779b97f4a7c15ull);
  /* One atomic per warp, not per thread: 2^28 atomics on one word would
   * take longer than the sort being checked. */
  for (int off = 16; off > 0; off /= 2) s += __shfl_down_sync(0xffffffffu, s, off);
  if ((threadIdx.x & 31) == 0 && s) atomicAdd(sum, (unsigned long long)s);
}

/* perm is a permutation of [0, n) (marks counts each index), the keys it
 * selects are in order and ties keep their input order (stability), and
 * sorted[i] (when given) equals keys0[perm[i]]. */
__global__ void k_check_perm(const void *keys0, const uint64_t *perm, const void *sorted, size_t n, type_info ti,
                             bool desc, unsigned *marks, unsigned long long *err) {
  BENCH_GRID_STRIDE(i, n) {
    uint64_t p = perm[i];
    if (p >= n || atomicAdd(&marks[p], 1u) != 0) {
      atomicAdd(err, 1ull);
      continue;
    }
    uint64_t kb = load_bits(keys0, p, ti.bytes);
    if (sorted && load_bits(sorted, i, ti.bytes) != kb) atomicAdd(err, 1ull);
    if (i > 0) {
      uint64_t q = perm[i - 1];
      if (q >= n) continue;
      uint64_t a = bench_ordered(ti.bytes, ti.is_signed, ti.is_float, load_bits(keys0, q, ti.bytes));
      uint64_t b = bench_ordered(ti.bytes, ti.is_signed, ti.is_float, kb);
      if ((desc ? a < b : a > b) || (a == b && q > p)) atomicAdd(err, 1ull);
    }
  }
}

__global__ void k_check_rank(const uint64_t *s, size_t n, const uint64_t *q, const uint64_t *rank, size_t nq,
                             unsigned long long *err) {
  BENCH_GRID_STRIDE(i, nq) if (rank[i] != bench_lower(s, n, q[i])) atomicAdd(err, 1ull);
}

__global__ void k_check_range_count(const uint64_t *s, size_t n, const uint64_t *lo, const uint64_t *hi,
                                    const uint64_t *cnt, size_t nq, unsigned long long *err) {
  BENCH_GRID_STRIDE(i, nq) {
    uint64_t want = lo[i] > hi[i] ? 0 : bench_upper(s, n, hi[i]) - bench_lower(s, n, lo[i]);
    if (cnt[i] != want) atomicAdd(err, 1ull);
  }
}

/* ---- ceilings --------------------------------------------------------------------- */

__global__ void k_fill_words(uint64_t *d, size_t n, uint64_t seed) {
  BENCH_GRID_STRIDE(i, n) d[i] = bench_word(seed, i);
}

/* Independent random 8-byte loads: the index is a hash of the query number,
 * so no load waits for another; each result is written so none is dropped. */
__global__ void k_gather(const uint64_t *table, size_t words, uint64_t *out, size_t nq) {
  BENCH_GRID_STRIDE(i, nq) out[i] = table[bench_word(77, i) % words];
}

} // namespace

/* ---- the functions bench.h declares --------------------------------------------------- */

void bench_gpu_sort_keys(void *d, size_t n, tdm_type t, uint64_t seed) {
  k_sort_keys<<<bench_blocks_for(n), 256>>>(d, n, info(t), seed);
  launched("generate sort keys");
}
void bench_gpu_iota(uint64_t *d, size_t n) {
  k_iota<<<bench_blocks_for(n), 256>>>(d, n);
  launched("generate iota");
}
void bench_gpu_keys(uint64_t *d, size_t n, uint64_t seed, uint64_t first) {
  k_keys<<<bench_blocks_for(n), 256>>>(d, n, seed, first);
  launched("generate keys");
}
void bench_gpu_values(uint64_t *d, size_t n, uint64_t seed) {
  k_values<<<bench_blocks_for(n), 256>>>(d, n, seed);
  launched("generate values");
}
void bench_gpu_queries(uint64_t *d, size_t nq, uint64_t seed, size_t n, bool miss50) {
  k_queries<<<bench_blocks_for(nq), 256>>>(d, nq, seed, n, miss50);
  launched("generate queries");
}
void bench_gpu_add_span(uint64_t *hi, const uint64_t *lo, size_t nq, uint64_t span) {
  k_add_span<<<bench_blocks_for(nq), 256>>>(hi, lo, nq, span);
  launched("generate range ends");
}

size_t bench_gpu_check_find(uint64_t seed, size_t n, size_t nq, bool miss50, const uint8_t *d_found,
                            const uint64_t *d_vals, int valmode) {
  counter c;
  k_check_find<<<bench_blocks_for(nq), 256>>>(seed, n, nq, miss50, d_found, d_vals, valmode, c.d);
  launched("check find");
  return c.get();
}

size_t bench_gpu_check_order(const void *d_keys, size_t n, tdm_type t, bool desc) {
  counter c;
  k_check_order<<<bench_blocks_for(n), 256>>>(d_keys, n, info(t), desc, c.d);
  launched("check order");
  return c.get();
}

uint64_t bench_gpu_fingerprint(const void *d_keys, size_t n, tdm_type t) {
  counter c;
  k_fingerprint<<<bench_blocks_for(n), 256>>>(d_keys, n, info(t).bytes, c.d);
  launched("fingerprint");
  return c.get();
}

size_t bench_gpu_check_perm(const void *d_keys0, const uint64_t *d_perm, const void *d_sorted, size_t n, tdm_type t,
                            bool desc) {
  counter c;
  unsigned *marks = (unsigned *)bench_dev_alloc(n * sizeof(unsigned));
  check(cudaMemset(marks, 0, n * sizeof(unsigned)), "cudaMemset (marks)");
  k_check_perm<<<bench_blocks_for(n), 256>>>(d_keys0, d_perm, d_sorted, n, info(t), desc, marks, c.d);
  launched("check permutation");
  bench_dev_free(marks);
  return c.get();
}

size_t bench_gpu_check_rank(const uint64_t *d_sorted, size_t n, const uint64_t *d_q, const uint64_t *d_rank, size_t nq) {
  counter c;
  k_check_rank<<<bench_blocks_for(nq), 256>>>(d_sorted, n, d_q, d_rank, nq, c.d);
  launched("check rank");
  return c.get();
}

size_t bench_gpu_check_range_count(const uint64_t *d_sorted, size_t n, const uint64_t *d_lo, const uint64_t *d_hi,
                                   const uint64_t *d_cnt, size_t nq) {
  counter c;
  k_check_range_count<<<bench_blocks_for(nq), 256>>>(d_sorted, n, d_lo, d_hi, d_cnt, nq, c.d);
  launched("check range_count");
  return c.get();
}

double bench_gpu_memcpy_gbps(const bench_opts &o, size_t bytes) {
  bytes &= ~(size_t)255;
  void *a = bench_dev_alloc(bytes), *b = bench_dev_alloc(bytes);
  k_fill_words<<<bench_blocks_for(bytes / 8), 256>>>((uint64_t *)a, bytes / 8, 3);
  launched("fill");
  bench_row row = bench_make_row("limits", "memcpy_gbps", "cudaMemcpy", "cuda", "u8", "", bytes, 0, 1);
  /* GB/s of bytes copied (each byte is read once and written once, so the
   * memory moves twice this), as the CPU row counts it. */
  row = bench_measure(o, row, (double)bytes / 1e3, nullptr, [&] {
    check(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice), "D2D");
    check(cudaDeviceSynchronize(), "sync");
  });
  bench_dev_free(a);
  bench_dev_free(b);
  return row.median;
}

double bench_gpu_gather_mops(const bench_opts &o, size_t table_bytes, size_t nq) {
  size_t words = table_bytes / 8;
  uint64_t *t = (uint64_t *)bench_dev_alloc(words * 8), *out = (uint64_t *)bench_dev_alloc(nq * 8);
  k_fill_words<<<bench_blocks_for(words), 256>>>(t, words, 5);
  launched("fill");
  bench_row row = bench_make_row("limits", "gather", "gather", "cuda", "u64", "", words, nq, 1);
  row = bench_measure(o, row, (double)nq, nullptr, [&] {
    k_gather<<<bench_blocks_for(nq), 256>>>(t, words, out, nq);
    launched("gather");
  });
  /* The gather must have loaded what the table holds. */
  uint64_t probe = 0, want = bench_word(5, bench_word(77, nq / 2) % words);
  bench_d2h(&probe, out + nq / 2, 8);
  bench_verify(probe == want, "gather: loaded word differs from the table's");
  bench_dev_free(t);
  bench_dev_free(out);
  return row.median;
}
