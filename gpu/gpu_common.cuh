/*
 * gpu_common.cuh: what every CUDA source of the backend shares: checked CUDA
 * calls, the per-context GPU state, device allocation through the
 * failure-injection hook, and staging of caller arrays that may live in host
 * or device memory.
 *
 * Layering (as in CUB): public API (src/) -> dispatch (gpu/*_gpu.cu, C linkage,
 * stages arrays, picks the instantiation) -> kernels (thin loops around the
 * shared host/device functions of src/*.h).
 */
#ifndef TANDEM_GPU_COMMON_CUH
#define TANDEM_GPU_COMMON_CUH

#include <cuda_runtime.h>

#include "../src/gpu_iface.h"

/* Per-context GPU state (ctx->gpu). */
struct tdm_gpu_state {
  cudaStream_t stream;
  int own_stream;
  int device;
};

/* Runs a CUDA call; on failure records "where: CUDA error text" and returns
 * TDM_ERR_DEVICE (TDM_ERR_OUT_OF_MEMORY for cudaErrorMemoryAllocation) from
 * the enclosing function, after running the cleanup statement. */
#define TDM_CUDA_TRY(call, cleanup)                                                          \
  do {                                                                                       \
    cudaError_t tdm_e_ = (call);                                                             \
    if (tdm_e_ != cudaSuccess) {                                                             \
      (void)cudaGetLastError();                                                              \
      cleanup;                                                                               \
      return tdm__cuda_fail(tdm_e_, #call, __FILE__, __LINE__);                             \
    }                                                                                        \
  } while (0)

/* Records a CUDA failure and maps it to a status. */
tdm_status tdm__cuda_fail(cudaError_t e, const char *what, const char *file, int line);

/* Makes ctx's device current for this host thread. */
tdm_status tdm__gpu_enter(tdm_ctx *ctx);

static inline cudaStream_t tdm__stream(const tdm_ctx *ctx) { return ctx->gpu->stream; }

/* Device allocation through the failure-injection hook; stream-ordered on the
 * context's stream. bytes 0 gives NULL and TDM_OK. */
tdm_status tdm__gpu_malloc(tdm_ctx *ctx, size_t bytes, void **out);
/* Frees memory from tdm__gpu_malloc (NULL is a no-op). */
void tdm__gpu_free(tdm_ctx *ctx, void *p);

/* A caller array as the device sees it. For a device (or managed) pointer the
 * array is used in place; a host array gets a device copy (input) or a device
 * buffer that tdm__gpu_out_finish copies back (output). */
typedef struct tdm__dev_array {
  void *d;      /* device address to use */
  void *user;   /* caller's pointer */
  size_t bytes;
  int staged;   /* 1: d is a staging buffer owned by us */
} tdm__dev_array;

/* Input: stages host data to the device (async on the context's stream). */
tdm_status tdm__gpu_in(tdm_ctx *ctx, const void *user, size_t bytes, tdm__dev_array *a);
/* Output: a device buffer for results destined for user. */
tdm_status tdm__gpu_out(tdm_ctx *ctx, void *user, size_t bytes, tdm__dev_array *a);
/* Copies a staged output back to the host (async); no-op when in place. */
tdm_status tdm__gpu_out_finish(tdm_ctx *ctx, tdm__dev_array *a);
/* Releases a staging buffer; no-op when in place. */
void tdm__gpu_release(tdm_ctx *ctx, tdm__dev_array *a);
/* Waits for the context's stream and reports any asynchronous error. */
tdm_status tdm__gpu_sync(tdm_ctx *ctx, const char *where);

/* Grid size for a grid-stride loop over n elements. */
static inline unsigned tdm__grid(size_t n, unsigned block) {
  size_t g = (n + block - 1) / block;
  if (g > 65535u * 16u) g = 65535u * 16u;
  return (unsigned)(g ? g : 1);
}

#endif /* TANDEM_GPU_COMMON_CUH */
