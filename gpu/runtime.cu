/*
 * runtime.cu: device discovery, per-context GPU state, device allocation and
 * staging of caller arrays.
 */
#include <pthread.h>
#include <stdio.h>

#include "gpu_common.cuh"

static pthread_once_t count_once = PTHREAD_ONCE_INIT;
static int device_count_cached;
static cudaError_t device_count_error = cudaSuccess;

static void probe_devices(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    /* No driver, or a driver older than the runtime: no device, not an error. */
    (void)cudaGetLastError();
    device_count_error = e;
    n = 0;
  }
  device_count_cached = n;
}

int tdm__cuda_device_count(void) {
  pthread_once(&count_once, probe_devices);
  return device_count_cached;
}

int tdm__cuda_is_device_ptr(const void *p) {
  cudaPointerAttributes attr;
  if (tdm__cuda_device_count() == 0) return 0;
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
}

tdm_status tdm__cuda_fail(cudaError_t e, const char *what, const char *file, int line) {
  tdm_status s = (e == cudaErrorMemoryAllocation) ? TDM_ERR_OUT_OF_MEMORY : TDM_ERR_DEVICE;
  return tdm__fail(s, "CUDA error %s (%s) in %s at %s:%d", cudaGetErrorName(e), cudaGetErrorString(e), what,
                   file, line);
}

tdm_status tdm__gpu_ctx_init(tdm_ctx *ctx) {
  int n = tdm__cuda_device_count();
  tdm__gpu_state *g;
  if (n == 0) {
    if (device_count_error != cudaSuccess)
      return tdm__fail(TDM_ERR_NO_DEVICE, "tdm_ctx_create: no usable CUDA device: %s (%s)",
                       cudaGetErrorName(device_count_error), cudaGetErrorString(device_count_error));
    return tdm__fail(TDM_ERR_NO_DEVICE, "tdm_ctx_create: no CUDA device found");
  }
  if (ctx->device >= n)
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "tdm_ctx_create: cuda_device %d, but only %d device(s)",
                     ctx->device, n);
  g = (tdm__gpu_state *)tdm__calloc(1, sizeof *g);
  if (!g) return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "tdm_ctx_create: out of host memory");
  g->device = ctx->device;
  TDM_CUDA_TRY(cudaSetDevice(ctx->device), tdm__free(g));
  if (ctx->stream) {
    g->stream = (cudaStream_t)ctx->stream;
  } else {
    TDM_CUDA_TRY(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking), tdm__free(g));
    g->own_stream = 1;
  }
  {
    /* Keep freed blocks in the device's pool: the stream-ordered pool is the
     * context's device scratch cache, so repeated calls do not go back to the
     * driver for memory. */
    cudaMemPool_t pool;
    unsigned long long keep = ~0ull;
    if (cudaDeviceGetDefaultMemPool(&pool, ctx->device) == cudaSuccess)
      (void)cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    (void)cudaGetLastError();
  }
  ctx->gpu = g;
  return TDM_OK;
}

void tdm__gpu_ctx_fini(tdm_ctx *ctx) {
  tdm__gpu_state *g = ctx->gpu;
  if (!g) return;
  (void)cudaSetDevice(g->device);
  if (g->own_stream) {
    (void)cudaStreamSynchronize(g->stream);
    (void)cudaStreamDestroy(g->stream);
  }
  (void)cudaGetLastError();
  tdm__free(g);
  ctx->gpu = NULL;
}

tdm_status tdm__launch_check(const char *where) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return tdm__cuda_fail(e, where, __FILE__, __LINE__);
  return TDM_OK;
}

tdm_status tdm__gpu_enter(tdm_ctx *ctx) {
  TDM_CUDA_TRY(cudaSetDevice(ctx->gpu->device), (void)0);
  return TDM_OK;
}

tdm_status tdm__gpu_malloc(tdm_ctx *ctx, size_t bytes, void **out) {
  *out = NULL;
  if (bytes == 0) return TDM_OK;
  if (tdm__alloc_should_fail())
    return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "out of device memory: %zu bytes (injected failure)", bytes);
  cudaError_t e = cudaMallocAsync(out, bytes, tdm__stream(ctx));
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    *out = NULL;
    if (e == cudaErrorMemoryAllocation)
      return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "out of device memory: %zu bytes", bytes);
    return tdm__cuda_fail(e, "cudaMallocAsync", __FILE__, __LINE__);
  }
  return TDM_OK;
}

void tdm__gpu_free(tdm_ctx *ctx, void *p) {
  if (p) (void)cudaFreeAsync(p, tdm__stream(ctx));
}

tdm_status tdm__gpu_in(tdm_ctx *ctx, const void *user, size_t bytes, tdm__dev_array *a) {
  tdm_status st;
  a->user = (void *)user;
  a->bytes = bytes;
  a->staged = 0;
  a->d = (void *)user;
  if (bytes == 0 || tdm__cuda_is_device_ptr(user)) return TDM_OK;
  st = tdm__gpu_malloc(ctx, bytes, &a->d);
  if (st != TDM_OK) return st;
  a->staged = 1;
  TDM_CUDA_TRY(cudaMemcpyAsync(a->d, user, bytes, cudaMemcpyHostToDevice, tdm__stream(ctx)),
               tdm__gpu_release(ctx, a));
  return TDM_OK;
}

tdm_status tdm__gpu_out(tdm_ctx *ctx, void *user, size_t bytes, tdm__dev_array *a) {
  tdm_status st;
  a->user = user;
  a->bytes = bytes;
  a->staged = 0;
  a->d = user;
  if (bytes == 0 || tdm__cuda_is_device_ptr(user)) return TDM_OK;
  st = tdm__gpu_malloc(ctx, bytes, &a->d);
  if (st != TDM_OK) return st;
  a->staged = 1;
  return TDM_OK;
}

tdm_status tdm__gpu_out_finish(tdm_ctx *ctx, tdm__dev_array *a) {
  if (!a->staged) return TDM_OK;
  TDM_CUDA_TRY(cudaMemcpyAsync(a->user, a->d, a->bytes, cudaMemcpyDeviceToHost, tdm__stream(ctx)), (void)0);
  return TDM_OK;
}

void tdm__gpu_release(tdm_ctx *ctx, tdm__dev_array *a) {
  if (a->staged && a->d) tdm__gpu_free(ctx, a->d);
  a->d = NULL;
  a->staged = 0;
}

tdm_status tdm__gpu_sync(tdm_ctx *ctx, const char *where) {
  cudaError_t e = cudaStreamSynchronize(tdm__stream(ctx));
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return tdm__cuda_fail(e, where, __FILE__, __LINE__);
  }
  return TDM_OK;
}
