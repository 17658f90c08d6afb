/*
 * hd.h: the host/device marker for per-element logic shared by the CPU
 * backend, the CUDA kernels and the tests.
 *
 * A function marked TDM_HD is compiled by the C compiler as a plain static
 * inline function and by nvcc as __host__ __device__, so CPU tests exercise the
 * exact code the kernels run. Shared headers must stay within the common subset
 * of C11 and CUDA C++: no designated initialisers of unions, no C-only casts of
 * void pointers, fixed-width integer types only.
 */
#ifndef TANDEM_HD_H
#define TANDEM_HD_H

#include <stdint.h>

#if defined(__CUDACC__)
#define TDM_HD static __host__ __device__ __forceinline__
#else
#define TDM_HD static inline
#endif

#endif /* TANDEM_HD_H */
