/*
 * sort_gpu.cu: the CUDA backend's sort, sort_pairs and argsort.
 *
 * Path: stage (host arrays are copied in; device arrays are read in place)
 * -> map keys to order-preserving bits into a scratch buffer (keybits.h, the
 * same functions the CPU runs) -> CUB radix sort between two scratch buffers
 * -> map back into the caller's array. The caller's arrays are written only
 * after the sort succeeded, so a failed call leaves them as they were.
 */
#include <string.h>

#include "../src/keybits.h"
#include "gpu_common.cuh"
#include "sort_cub.cuh"

template <typename K>
__global__ void to_bits_kernel(const K *in, K *out, size_t n, int kind, int desc) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    if (sizeof(K) == 4) out[i] = (K)tdm__sortbits32((uint32_t)in[i], kind, desc);
    else out[i] = (K)tdm__sortbits64((uint64_t)in[i], kind, desc);
  }
}

template <typename K>
__global__ void from_bits_kernel(const K *in, K *out, size_t n, int kind, int desc) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    if (sizeof(K) == 4) out[i] = (K)tdm__unsortbits32((uint32_t)in[i], kind, desc);
    else out[i] = (K)tdm__unsortbits64((uint64_t)in[i], kind, desc);
  }
}

template <typename I>
__global__ void iota_kernel(I *out, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    out[i] = (I)i;
}

/* Scratch of one sort: two key buffers, two value buffers, CUB temp. */
struct sort_bufs {
  void *k[2], *v[2], *temp;
};

static void free_bufs(tdm_ctx *ctx, sort_bufs *b) {
  tdm__gpu_free(ctx, b->k[0]);
  tdm__gpu_free(ctx, b->k[1]);
  tdm__gpu_free(ctx, b->v[0]);
  tdm__gpu_free(ctx, b->v[1]);
  tdm__gpu_free(ctx, b->temp);
}

/* Sorts bits in b->k[0] (values in b->v[0]); *kcur / *vcur receive the index
 * of the buffers holding the result. */
template <typename K, typename V>
static tdm_status run_cub(tdm_ctx *ctx, sort_bufs *b, size_t n, int *kcur, int *vcur) {
  cub::DoubleBuffer<K> dk((K *)b->k[0], (K *)b->k[1]);
  cub::DoubleBuffer<V> dv((V *)b->v[0], (V *)b->v[1]);
  size_t temp_bytes = 0;
  tdm_status st;
  TDM_CUDA_TRY((tdm_cub_sort<K, V>(NULL, temp_bytes, dk, dv, n, 0, (int)sizeof(K) * 8, tdm__stream(ctx))),
               (void)0);
  st = tdm__gpu_malloc(ctx, temp_bytes, &b->temp);
  if (st != TDM_OK) return st;
  TDM_CUDA_TRY((tdm_cub_sort<K, V>(b->temp, temp_bytes, dk, dv, n, 0, (int)sizeof(K) * 8, tdm__stream(ctx))),
               (void)0);
  *kcur = dk.selector;
  *vcur = dv.selector;
  return TDM_OK;
}

template <typename K>
static tdm_status dispatch_values(tdm_ctx *ctx, sort_bufs *b, size_t n, size_t vs, int *kcur, int *vcur) {
  if (vs == 0) return run_cub<K, tdm_no_value>(ctx, b, n, kcur, vcur);
  if (vs == 4) return run_cub<K, uint32_t>(ctx, b, n, kcur, vcur);
  return run_cub<K, uint64_t>(ctx, b, n, kcur, vcur);
}

/* Allocates the buffers of one sort: keys always, values when vs > 0. */
static tdm_status alloc_bufs(tdm_ctx *ctx, sort_bufs *b, size_t n, size_t ks, size_t vs) {
  tdm_status st;
  memset(b, 0, sizeof *b);
  if ((st = tdm__gpu_malloc(ctx, n * ks, &b->k[0])) != TDM_OK ||
      (st = tdm__gpu_malloc(ctx, n * ks, &b->k[1])) != TDM_OK ||
      (st = tdm__gpu_malloc(ctx, n * vs, &b->v[0])) != TDM_OK ||
      (st = tdm__gpu_malloc(ctx, n * vs, &b->v[1])) != TDM_OK) {
    free_bufs(ctx, b);
    return st;
  }
  return TDM_OK;
}

/* Loads the caller's keys (host or device) into b->k[0] as sort bits. */
static tdm_status load_bits(tdm_ctx *ctx, sort_bufs *b, const void *keys, size_t n, size_t ks, int kind,
                            int desc) {
  cudaStream_t s = tdm__stream(ctx);
  const void *src = keys;
  unsigned grid = tdm__grid(n, 256);
  if (!tdm__gpu_is_device_ptr(keys)) {
    TDM_CUDA_TRY(cudaMemcpyAsync(b->k[0], keys, n * ks, cudaMemcpyHostToDevice, s), (void)0);
    src = b->k[0]; /* transform in place */
  }
  if (ks == 4) to_bits_kernel<uint32_t><<<grid, 256, 0, s>>>((const uint32_t *)src, (uint32_t *)b->k[0], n, kind, desc);
  else to_bits_kernel<uint64_t><<<grid, 256, 0, s>>>((const uint64_t *)src, (uint64_t *)b->k[0], n, kind, desc);
  TDM_CUDA_TRY(cudaGetLastError(), (void)0);
  return TDM_OK;
}

/* Copies bytes from a device buffer to the caller's array, host or device. */
static tdm_status store(tdm_ctx *ctx, void *user, const void *d, size_t bytes) {
  cudaMemcpyKind kind = tdm__gpu_is_device_ptr(user) ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost;
  TDM_CUDA_TRY(cudaMemcpyAsync(user, d, bytes, kind, tdm__stream(ctx)), (void)0);
  return TDM_OK;
}

extern "C" tdm_status tdm__gpu_sort(tdm_ctx *ctx, tdm_type key_type, void *keys, tdm_type value_type,
                                    void *values, size_t n, int desc) {
  size_t ks = tdm_type_size(key_type), vs = values ? tdm_type_size(value_type) : 0;
  int kind = tdm__key_kind(key_type), kcur = 0, vcur = 0;
  cudaStream_t s;
  sort_bufs b;
  tdm_status st;
  unsigned grid = tdm__grid(n, 256);

  if ((st = tdm__gpu_enter(ctx)) != TDM_OK) return st;
  s = tdm__stream(ctx);
  if ((st = alloc_bufs(ctx, &b, n, ks, vs)) != TDM_OK) return st;
#define FAIL_FREE free_bufs(ctx, &b)
  if ((st = load_bits(ctx, &b, keys, n, ks, kind, desc)) != TDM_OK) { FAIL_FREE; return st; }
  if (vs) {
    cudaMemcpyKind k = tdm__gpu_is_device_ptr(values) ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice;
    TDM_CUDA_TRY(cudaMemcpyAsync(b.v[0], values, n * vs, k, s), FAIL_FREE);
  }
  st = ks == 4 ? dispatch_values<uint32_t>(ctx, &b, n, vs, &kcur, &vcur)
               : dispatch_values<uint64_t>(ctx, &b, n, vs, &kcur, &vcur);
  if (st != TDM_OK) { FAIL_FREE; return st; }
  /* Back to keys, in the scratch buffer not holding the result, then out. */
  if (ks == 4)
    from_bits_kernel<uint32_t><<<grid, 256, 0, s>>>((const uint32_t *)b.k[kcur], (uint32_t *)b.k[kcur ^ 1], n, kind, desc);
  else
    from_bits_kernel<uint64_t><<<grid, 256, 0, s>>>((const uint64_t *)b.k[kcur], (uint64_t *)b.k[kcur ^ 1], n, kind, desc);
  TDM_CUDA_TRY(cudaGetLastError(), FAIL_FREE);
  /* Everything that can fail for lack of resources has succeeded: write out. */
  if ((st = tdm__gpu_sync(ctx, "tdm_sort (device sort)")) != TDM_OK) { FAIL_FREE; return st; }
  if ((st = store(ctx, keys, b.k[kcur ^ 1], n * ks)) != TDM_OK) { FAIL_FREE; return st; }
  if (vs && (st = store(ctx, values, b.v[vcur], n * vs)) != TDM_OK) { FAIL_FREE; return st; }
  st = tdm__gpu_sync(ctx, "tdm_sort (copy out)");
  FAIL_FREE;
#undef FAIL_FREE
  return st;
}

extern "C" tdm_status tdm__gpu_argsort(tdm_ctx *ctx, tdm_type key_type, const void *keys, tdm_type index_type,
                                       void *perm_out, size_t n, int desc) {
  size_t ks = tdm_type_size(key_type), is = tdm_type_size(index_type);
  int kind = tdm__key_kind(key_type), kcur = 0, vcur = 0;
  cudaStream_t s;
  sort_bufs b;
  tdm_status st;
  unsigned grid = tdm__grid(n, 256);

  if ((st = tdm__gpu_enter(ctx)) != TDM_OK) return st;
  s = tdm__stream(ctx);
  if ((st = alloc_bufs(ctx, &b, n, ks, is)) != TDM_OK) return st;
#define FAIL_FREE free_bufs(ctx, &b)
  if ((st = load_bits(ctx, &b, keys, n, ks, kind, desc)) != TDM_OK) { FAIL_FREE; return st; }
  if (is == 4) iota_kernel<uint32_t><<<grid, 256, 0, s>>>((uint32_t *)b.v[0], n);
  else iota_kernel<uint64_t><<<grid, 256, 0, s>>>((uint64_t *)b.v[0], n);
  TDM_CUDA_TRY(cudaGetLastError(), FAIL_FREE);
  st = ks == 4 ? dispatch_values<uint32_t>(ctx, &b, n, is, &kcur, &vcur)
               : dispatch_values<uint64_t>(ctx, &b, n, is, &kcur, &vcur);
  if (st != TDM_OK) { FAIL_FREE; return st; }
  if ((st = tdm__gpu_sync(ctx, "tdm_argsort (device sort)")) != TDM_OK) { FAIL_FREE; return st; }
  if ((st = store(ctx, perm_out, b.v[vcur], n * is)) != TDM_OK) { FAIL_FREE; return st; }
  st = tdm__gpu_sync(ctx, "tdm_argsort (copy out)");
  FAIL_FREE;
#undef FAIL_FREE
  return st;
}
