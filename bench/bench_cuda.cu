/* bench_cuda.cu: device memory helpers of tandem-bench. */
#include "bench.h"

static void check(cudaError_t e, const char *what) { bench_cuda_check((int)e, what); }

void *bench_dev_alloc(size_t bytes) {
  void *d = nullptr;
  check(cudaMalloc(&d, bytes ? bytes : 1), "cudaMalloc");
  return d;
}
void bench_dev_free(void *d) { check(cudaFree(d), "cudaFree"); }
void bench_h2d(void *d, const void *h, size_t b) { check(cudaMemcpy(d, h, b, cudaMemcpyHostToDevice), "H2D"); }
void bench_d2h(void *h, const void *d, size_t b) { check(cudaMemcpy(h, d, b, cudaMemcpyDeviceToHost), "D2H"); }
void bench_d2d(void *dst, const void *src, size_t b) {
  check(cudaMemcpy(dst, src, b, cudaMemcpyDeviceToDevice), "D2D");
}
void bench_dev_sync() { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }
