/* bench_cuda.cu: device memory helpers and the raw CUB peer of tandem-bench. */
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <cub/device/device_radix_sort.cuh>

#include "bench.h"

static void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess) {
    fprintf(stderr, "tandem-bench: %s: %s\n", what, cudaGetErrorString(e));
    exit(1);
  }
}

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

template <typename K, typename V>
static int run(void *t, size_t &tb, void *k, void *ka, void *v, void *va, size_t n) {
  cub::DoubleBuffer<K> dk((K *)k, (K *)ka);
  if (v) {
    cub::DoubleBuffer<V> dv((V *)v, (V *)va);
    check(cub::DeviceRadixSort::SortPairs(t, tb, dk, dv, n), "cub SortPairs");
  } else {
    check(cub::DeviceRadixSort::SortKeys(t, tb, dk, n), "cub SortKeys");
  }
  return dk.selector;
}

static size_t temp_bytes(size_t n, int key_bytes, bool values) {
  size_t tb = 0;
  void *fake = values ? (void *)1 : nullptr;
  if (key_bytes == 4) run<uint32_t, uint64_t>(nullptr, tb, nullptr, nullptr, fake, fake, n);
  else run<uint64_t, uint64_t>(nullptr, tb, nullptr, nullptr, fake, fake, n);
  return tb;
}

/* With values: room for both the pair sort and the keys-only sort, which the
 * benchmark runs from the same temporary storage. */
size_t bench_cub_temp_bytes(size_t n, int key_bytes, bool values) {
  size_t k = temp_bytes(n, key_bytes, false);
  return values ? std::max(k, temp_bytes(n, key_bytes, true)) : k;
}

int bench_cub_sort(void *t, size_t tb, void *k, void *ka, void *v, void *va, size_t n, int key_bytes) {
  int sel = key_bytes == 4 ? run<uint32_t, uint64_t>(t, tb, k, ka, v, va, n) : run<uint64_t, uint64_t>(t, tb, k, ka, v, va, n);
  bench_dev_sync();
  return sel;
}
