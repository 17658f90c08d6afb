/* mpi_mem.c: whether the MPI library loaded now is CUDA-aware. The
 * exchanges run on host buffers: device arrays are staged through host memory
 * by the core (tdm_svc_stage_in), on the context's stream. */
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
