/*
 * cuco_compat.h: what the pinned cuCollections commit (scripts/fetch-cuco.sh)
 * still takes from CCCL 2 and CCCL 3 (CUDA 13) removed: thrust::identity,
 * the function object that returns its argument, used by cuco's insert and
 * find paths as an always-true stencil projection. Defined here only where
 * Thrust no longer has it, so the peer builds with both CCCL majors.
 * Included before any cuco header (bench/CMakeLists.txt: -include).
 */
#ifndef TANDEM_BENCH_CUCO_COMPAT_H
#define TANDEM_BENCH_CUCO_COMPAT_H

#include <cuda/std/utility>
#include <thrust/version.h>

#if THRUST_VERSION >= 300000
namespace thrust {
template <class T = void> struct identity {
  __host__ __device__ constexpr const T &operator()(const T &x) const { return x; }
};
template <> struct identity<void> {
  template <class T> __host__ __device__ constexpr T &&operator()(T &&x) const { return ::cuda::std::forward<T>(x); }
};
} // namespace thrust
#endif

#endif /* TANDEM_BENCH_CUCO_COMPAT_H */
