/*
 * bench_peers.cu: the GPU peers of bench_peers.h. Compiled into tandem-bench
 * and, by the emulated device, into the cost meter's tandem-cost, so the
 * peers a GPU times are the ones the meter counts.
 */
#include <cstdio>
#include <cstdlib>

#include <cub/device/device_radix_sort.cuh>

#include "bench_gen.h"
#include "bench_peers.h"

void bench_cuda_check(int err, const char *what) {
  if (err != (int)cudaSuccess) {
    fprintf(stderr, "tandem-bench: %s: %s\n", what, cudaGetErrorString((cudaError_t)err));
    exit(1);
  }
}

void bench_cuda_launched(const char *what) {
  bench_cuda_check((int)cudaGetLastError(), what);
  bench_cuda_check((int)cudaDeviceSynchronize(), what);
}

namespace {

/* ---- raw CUB ------------------------------------------------------------------ */

template <typename K, typename V>
int cub_run(void *t, size_t &tb, void *k, void *ka, void *v, void *va, size_t n) {
  cub::DoubleBuffer<K> dk((K *)k, (K *)ka);
  if (v) {
    cub::DoubleBuffer<V> dv((V *)v, (V *)va);
    bench_cuda_check((int)cub::DeviceRadixSort::SortPairs(t, tb, dk, dv, n), "cub SortPairs");
  } else {
    bench_cuda_check((int)cub::DeviceRadixSort::SortKeys(t, tb, dk, n), "cub SortKeys");
  }
  return dk.selector;
}

size_t cub_temp_bytes(size_t n, int key_bytes, bool values) {
  size_t tb = 0;
  void *fake = values ? (void *)1 : nullptr;
  if (key_bytes == 4) cub_run<uint32_t, uint64_t>(nullptr, tb, nullptr, nullptr, fake, fake, n);
  else cub_run<uint64_t, uint64_t>(nullptr, tb, nullptr, nullptr, fake, fake, n);
  return tb;
}

/* ---- binary search --------------------------------------------------------------- */

__global__ void k_binsearch(const uint64_t *keys, const uint64_t *vals, size_t n, const uint64_t *q, uint64_t *out,
                            uint8_t *found, size_t nq) {
  BENCH_GRID_STRIDE(i, nq) {
    uint64_t x = q[i];
    size_t p = bench_lower(keys, n, x);
    bool hit = p < n && keys[p] == x;
    found[i] = hit;
    out[i] = hit ? vals[p] : 0;
  }
}

__global__ void k_binsearch_rank(const uint64_t *keys, size_t n, const uint64_t *q, uint64_t *rank, size_t nq) {
  BENCH_GRID_STRIDE(i, nq) rank[i] = bench_lower(keys, n, q[i]);
}

__global__ void k_binsearch_range_count(const uint64_t *keys, size_t n, const uint64_t *lo, const uint64_t *hi,
                                        uint64_t *count, size_t nq) {
  BENCH_GRID_STRIDE(i, nq) {
    uint64_t l = lo[i], h = hi[i];
    count[i] = l > h ? 0 : bench_upper(keys, n, h) - bench_lower(keys, n, l);
  }
}

/* ---- linear probing -------------------------------------------------------------- */

const uint64_t LP_EMPTY = ~0ull;

__device__ size_t lp_home(uint64_t k, size_t mask) { return (size_t)bench_fin(k ^ 0x5bd1e995ull) & mask; }

__global__ void k_lp_insert(ulonglong2 *t, size_t mask, const uint64_t *k, const uint64_t *v, size_t n) {
  BENCH_GRID_STRIDE(i, n) {
    uint64_t key = k[i];
    if (key == LP_EMPTY) continue;
    size_t s = lp_home(key, mask);
    for (size_t probes = 0; probes <= mask; probes++) {
      unsigned long long old = atomicCAS(&t[s].x, LP_EMPTY, (unsigned long long)key);
      if (old == LP_EMPTY || old == key) {
        t[s].y = v[i];
        break;
      }
      s = (s + 1) & mask;
    }
  }
}

__global__ void k_lp_find(const ulonglong2 *t, size_t mask, const uint64_t *q, uint64_t *out, uint8_t *found,
                          size_t n) {
  BENCH_GRID_STRIDE(i, n) {
    uint64_t key = q[i];
    size_t s = lp_home(key, mask);
    uint64_t val = 0;
    uint8_t f = 0;
    for (size_t probes = 0; probes <= mask; probes++) {
      ulonglong2 e = t[s]; /* one 16-byte load */
      if (e.x == key) {
        val = e.y;
        f = 1;
        break;
      }
      if (e.x == LP_EMPTY) break;
      s = (s + 1) & mask;
    }
    out[i] = val;
    found[i] = f;
  }
}

} // namespace

size_t bench_cub_temp_bytes(size_t n, int key_bytes, int values) {
  size_t k = cub_temp_bytes(n, key_bytes, false);
  if (!values) return k;
  size_t p = cub_temp_bytes(n, key_bytes, true);
  return p > k ? p : k;
}

int bench_cub_sort(void *t, size_t tb, void *k, void *ka, void *v, void *va, size_t n, int key_bytes) {
  int sel = key_bytes == 4 ? cub_run<uint32_t, uint64_t>(t, tb, k, ka, v, va, n)
                           : cub_run<uint64_t, uint64_t>(t, tb, k, ka, v, va, n);
  bench_cuda_check((int)cudaDeviceSynchronize(), "cub sort");
  return sel;
}

void bench_gpu_binsearch(const uint64_t *d_keys, const uint64_t *d_vals, size_t n, const uint64_t *d_q,
                         uint64_t *d_out, uint8_t *d_found, size_t nq) {
  k_binsearch<<<bench_blocks_for(nq), 256>>>(d_keys, d_vals, n, d_q, d_out, d_found, nq);
  bench_cuda_launched("binary search");
}

void bench_gpu_binsearch_rank(const uint64_t *d_keys, size_t n, const uint64_t *d_q, uint64_t *d_rank, size_t nq) {
  k_binsearch_rank<<<bench_blocks_for(nq), 256>>>(d_keys, n, d_q, d_rank, nq);
  bench_cuda_launched("binary search rank");
}

void bench_gpu_binsearch_range_count(const uint64_t *d_keys, size_t n, const uint64_t *d_lo, const uint64_t *d_hi,
                                     uint64_t *d_count, size_t nq) {
  k_binsearch_range_count<<<bench_blocks_for(nq), 256>>>(d_keys, n, d_lo, d_hi, d_count, nq);
  bench_cuda_launched("binary search range count");
}

void bench_lp_clear(void *d_table, size_t slots) {
  bench_cuda_check((int)cudaMemset(d_table, 0xff, slots * 16), "cudaMemset (linear probing table)");
  bench_cuda_check((int)cudaDeviceSynchronize(), "sync");
}

void bench_lp_insert(void *d_table, size_t slots, const uint64_t *d_keys, const uint64_t *d_vals, size_t n) {
  k_lp_insert<<<bench_blocks_for(n), 256>>>((ulonglong2 *)d_table, slots - 1, d_keys, d_vals, n);
  bench_cuda_launched("linear probing insert");
}

void bench_lp_find(const void *d_table, size_t slots, const uint64_t *d_q, uint64_t *d_out, uint8_t *d_found,
                   size_t nq) {
  k_lp_find<<<bench_blocks_for(nq), 256>>>((const ulonglong2 *)d_table, slots - 1, d_q, d_out, d_found, nq);
  bench_cuda_launched("linear probing find");
}
