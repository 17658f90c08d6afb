/*
 * bench_btree_cuda.cu: the GPU peer of the btree benchmark: a plain binary
 * search (lower_bound) over a sorted device array, one thread per query.
 */
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

__global__ static void binsearch_kernel(const uint64_t *keys, size_t n, const uint64_t *q, uint8_t *found,
                                        size_t nq) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nq; i += (size_t)gridDim.x * blockDim.x) {
    uint64_t x = q[i];
    size_t lo = 0, len = n;
    while (len > 0) {
      size_t half = len / 2;
      if (keys[lo + half] < x) {
        lo += half + 1;
        len -= half + 1;
      } else {
        len = half;
      }
    }
    found[i] = lo < n && keys[lo] == x;
  }
}

void bench_binsearch_u64(const uint64_t *d_keys, size_t n, const uint64_t *d_q, uint8_t *d_found, size_t nq) {
  size_t blocks = (nq + 255) / 256;
  if (blocks > 65535u * 16u) blocks = 65535u * 16u;
  binsearch_kernel<<<(unsigned)(blocks ? blocks : 1), 256>>>(d_keys, n, d_q, d_found, nq);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    fprintf(stderr, "tandem-bench: binary search kernel: %s\n", cudaGetErrorString(e));
    exit(1);
  }
}
