/* mpi_mem.c: device arrays on CUDA contexts. The exchanges run on host
 * buffers: a device array is copied to pinned host memory on the way in and
 * back on the way out. Without CUDA no pointer is device memory. */
#include <string.h>

#include "mpi_internal.h"

/* Open MPI's extensions header declares MPIX_Query_cuda_support. */
#if defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

/* Asked at run time: the compile-time MPIX_CUDA_AWARE_SUPPORT describes the
 * headers we were built with, not the MPI library loaded now. */
int tdm_mpi_cuda_aware(void) {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  return MPIX_Query_cuda_support() ? 1 : 0;
#else
  return 0;
#endif
}

#ifdef TANDEM_MPI_HAVE_CUDA
#include <cuda_runtime_api.h>

int tdm__mpi_is_device(const void *p) {
  struct cudaPointerAttributes a;
  /* Like the library itself: no device, no device pointers (and no query). */
  if (!p || tdm_cuda_device_count() == 0) return 0;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError(); /* plain host memory on old runtimes; clear the sticky-free error */
    return 0;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

static tdm_status cuda_fail(cudaError_t e, const char *what) {
  return TDM__MPI_FAIL(TDM_ERR_DEVICE, "%s failed: %s", what, cudaGetErrorString(e));
}

tdm_status tdm__mpi_stage_in(const void *p, size_t bytes, int copy_in, tdm__mpi_stage *s) {
  memset(s, 0, sizeof *s);
  if (!tdm__mpi_is_device(p)) {
    s->host = (void *)(uintptr_t)p;
    return TDM_OK;
  }
  void *h = NULL;
  cudaError_t e = cudaMallocHost(&h, bytes ? bytes : 1);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return TDM__MPI_FAIL(TDM_ERR_OUT_OF_MEMORY, "out of pinned host memory staging %zu bytes", bytes);
  }
  if (copy_in && bytes && (e = cudaMemcpy(h, p, bytes, cudaMemcpyDeviceToHost)) != cudaSuccess) {
    cudaFreeHost(h);
    return cuda_fail(e, "cudaMemcpy (device to host staging)");
  }
  s->host = h;
  s->dev = (void *)(uintptr_t)p;
  s->bytes = bytes;
  return TDM_OK;
}

tdm_status tdm__mpi_stage_out(tdm__mpi_stage *s) {
  if (!s->dev || !s->bytes) return TDM_OK;
  cudaError_t e = cudaMemcpy(s->dev, s->host, s->bytes, cudaMemcpyHostToDevice);
  return e == cudaSuccess ? TDM_OK : cuda_fail(e, "cudaMemcpy (host to device staging)");
}

void tdm__mpi_stage_free(tdm__mpi_stage *s) {
  if (s->dev && s->host) cudaFreeHost(s->host);
  memset(s, 0, sizeof *s);
}

#else /* no CUDA */

int tdm__mpi_is_device(const void *p) {
  (void)p;
  return 0;
}

tdm_status tdm__mpi_stage_in(const void *p, size_t bytes, int copy_in, tdm__mpi_stage *s) {
  (void)bytes;
  (void)copy_in;
  memset(s, 0, sizeof *s);
  s->host = (void *)p; /* the caller's own array, written only where it may be */
  return TDM_OK;
}

tdm_status tdm__mpi_stage_out(tdm__mpi_stage *s) {
  (void)s;
  return TDM_OK;
}

void tdm__mpi_stage_free(tdm__mpi_stage *s) { memset(s, 0, sizeof *s); }
#endif
