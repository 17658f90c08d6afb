/*
 * emu_prelude.h: force-included (-include) into every CUDA unit compiled for
 * the emulated device. The toolkit's own runtime headers give every type and
 * prototype; this file defines the qualifiers, built-in variables and device
 * functions tandem's kernels use, on top of the emulator (emu_device.h), and
 * then sets __CUDA_ARCH__ so shared host/device headers compile their device
 * branches. The build's source rewrite (rewrite.py) turns launches into
 * tdm_emu_launch calls and static __shared__ declarations into per-block
 * storage.
 */
#ifndef TDM_EMU_PRELUDE_H
#define TDM_EMU_PRELUDE_H

#include <cuda_runtime.h>
#include <vector_types.h>

#include <tuple>
#include <utility>

#include "emu_device.h"

#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __launch_bounds__
#undef __grid_constant__
#undef __noinline__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __grid_constant__
#define __noinline__ __attribute__((noinline))
/* 90: the device branches of shared headers (volatile and atomic word access). */
#define __CUDA_ARCH__ 900

#define threadIdx (tdm_emu::cur->tid)
#define blockIdx (tdm_emu::cur->bid)
#define blockDim (tdm_emu::cur->bdim)
#define gridDim (tdm_emu::cur->gdim)
#define warpSize 32

static inline void __syncthreads(void) { tdm_emu::syncthreads(); }
static inline void __syncwarp(unsigned mask = 0xffffffffu) {
  tdm_emu::collective(tdm_emu::C_SYNC, mask, 32, nullptr, nullptr, 0, 0, "__syncwarp");
}
static inline void __threadfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }

/* The load of a 16-byte vector type, uninstrumented: __ldg reports it as one
 * access. */
template <typename T>
__attribute__((no_sanitize("thread"))) static inline T tdm_emu_load_unmetered(const T *p) {
  return *p;
}
extern "C" void __tsan_read16(void *);

/* __ldg: a read-only load; 16-byte loads must be 16-byte aligned. A 16-byte
 * type (ulonglong2, uint4, ...) is one vector load on the device; the host
 * compiler copies such a struct member by member, which the instrumentation
 * would see as two 8-byte accesses at two sites, and the cost meter then as
 * two warp-level accesses of twice the sectors (tests/cuda_emu/meter_check.cu,
 * "vector loads"). So it is reported as the one 16-byte access it is. */
template <typename T>
static inline T __ldg(const T *p) {
  if ((uintptr_t)p % alignof(T)) tdm_emu::device_fault("__ldg of a misaligned address %p (%zu-byte type)", (const void *)p, alignof(T));
  if constexpr (sizeof(T) == 16) {
    __tsan_read16((void *)p);
    return tdm_emu_load_unmetered(p);
  }
  return *p;
}

template <typename T>
static inline T tdm_emu_shfl(tdm_emu::coll_op op, unsigned mask, T v, int operand, int width, const char *what) {
  T r;
  tdm_emu::collective(op, mask, width, &v, &r, sizeof(T), operand, what);
  return r;
}
template <typename T>
static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  return tdm_emu_shfl(tdm_emu::C_SHFL, mask, v, src, width, "__shfl_sync");
}
template <typename T>
static inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32) {
  return tdm_emu_shfl(tdm_emu::C_SHFL_DOWN, mask, v, (int)d, width, "__shfl_down_sync");
}
template <typename T>
static inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32) {
  return tdm_emu_shfl(tdm_emu::C_SHFL_UP, mask, v, (int)d, width, "__shfl_up_sync");
}
template <typename T>
static inline T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32) {
  return tdm_emu_shfl(tdm_emu::C_SHFL_XOR, mask, v, m, width, "__shfl_xor_sync");
}
static inline unsigned __ballot_sync(unsigned mask, int pred) {
  unsigned r;
  int p = pred != 0;
  tdm_emu::collective(tdm_emu::C_BALLOT, mask, 32, &p, &r, sizeof r, 0, "__ballot_sync");
  return r;
}
static inline int __any_sync(unsigned mask, int pred) {
  int r, p = pred != 0;
  tdm_emu::collective(tdm_emu::C_ANY, mask, 32, &p, &r, sizeof r, 0, "__any_sync");
  return r;
}
static inline int __all_sync(unsigned mask, int pred) {
  int r, p = pred != 0;
  tdm_emu::collective(tdm_emu::C_ALL, mask, 32, &p, &r, sizeof r, 0, "__all_sync");
  return r;
}
/* __match_any_sync: the lanes of mask holding the same value (4 or 8 bytes)
 * as the caller; the result comes back through an 8-byte word because the
 * collective copies the value's width out. */
template <typename T>
static inline unsigned __match_any_sync(unsigned mask, T v) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "__match_any_sync takes 4- or 8-byte values");
  uint64_t r = 0;
  tdm_emu::collective(tdm_emu::C_MATCH_ANY, mask, 32, &v, &r, sizeof(T), 0, "__match_any_sync");
  return (unsigned)r;
}
static inline unsigned __activemask(void) { return 0xffffffffu; }

/* Atomics on real memory: relaxed, as CUDA's are; each is counted by the
 * cost meter and is a switch point. */
#define TDM_EMU_ATOMIC_RMW(NAME, T, EXPR)               \
  static inline T NAME(T *p, T v) {                     \
    tdm_emu::atomic_at(p);                            \
    return EXPR;                                        \
  }
TDM_EMU_ATOMIC_RMW(atomicAdd, unsigned int, __atomic_fetch_add(p, v, __ATOMIC_RELAXED))
TDM_EMU_ATOMIC_RMW(atomicAdd, int, __atomic_fetch_add(p, v, __ATOMIC_RELAXED))
TDM_EMU_ATOMIC_RMW(atomicAdd, unsigned long long, __atomic_fetch_add(p, v, __ATOMIC_RELAXED))
TDM_EMU_ATOMIC_RMW(atomicSub, unsigned int, __atomic_fetch_sub(p, v, __ATOMIC_RELAXED))
TDM_EMU_ATOMIC_RMW(atomicSub, int, __atomic_fetch_sub(p, v, __ATOMIC_RELAXED))
TDM_EMU_ATOMIC_RMW(atomicOr, unsigned int, __atomic_fetch_or(p, v, __ATOMIC_RELAXED))
TDM_EMU_ATOMIC_RMW(atomicOr, unsigned long long, __atomic_fetch_or(p, v, __ATOMIC_RELAXED))
TDM_EMU_ATOMIC_RMW(atomicAnd, unsigned int, __atomic_fetch_and(p, v, __ATOMIC_RELAXED))
TDM_EMU_ATOMIC_RMW(atomicAnd, unsigned long long, __atomic_fetch_and(p, v, __ATOMIC_RELAXED))
TDM_EMU_ATOMIC_RMW(atomicExch, unsigned int, __atomic_exchange_n(p, v, __ATOMIC_RELAXED))
TDM_EMU_ATOMIC_RMW(atomicExch, int, __atomic_exchange_n(p, v, __ATOMIC_RELAXED))
TDM_EMU_ATOMIC_RMW(atomicExch, unsigned long long, __atomic_exchange_n(p, v, __ATOMIC_RELAXED))
#undef TDM_EMU_ATOMIC_RMW

template <typename T>
static inline T tdm_emu_atomic_max(T *p, T v) {
  tdm_emu::atomic_at(p);
  T o = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (o < v && !__atomic_compare_exchange_n(p, &o, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return o;
}
template <typename T>
static inline T tdm_emu_atomic_min(T *p, T v) {
  tdm_emu::atomic_at(p);
  T o = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (o > v && !__atomic_compare_exchange_n(p, &o, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return o;
}
static inline unsigned int atomicMax(unsigned int *p, unsigned int v) { return tdm_emu_atomic_max(p, v); }
static inline int atomicMax(int *p, int v) { return tdm_emu_atomic_max(p, v); }
static inline unsigned long long atomicMax(unsigned long long *p, unsigned long long v) { return tdm_emu_atomic_max(p, v); }
static inline unsigned int atomicMin(unsigned int *p, unsigned int v) { return tdm_emu_atomic_min(p, v); }
static inline int atomicMin(int *p, int v) { return tdm_emu_atomic_min(p, v); }
static inline unsigned long long atomicMin(unsigned long long *p, unsigned long long v) { return tdm_emu_atomic_min(p, v); }

template <typename T>
static inline T tdm_emu_cas(T *p, T e, T d) {
  tdm_emu::atomic_at(p);
  __atomic_compare_exchange_n(p, &e, d, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return e;
}
static inline unsigned int atomicCAS(unsigned int *p, unsigned int e, unsigned int d) { return tdm_emu_cas(p, e, d); }
static inline int atomicCAS(int *p, int e, int d) { return tdm_emu_cas(p, e, d); }
static inline unsigned long long atomicCAS(unsigned long long *p, unsigned long long e, unsigned long long d) {
  return tdm_emu_cas(p, e, d);
}

/* The launch helper the rewritten k<<<...>>>(args) calls: arguments are
 * converted to the kernel's parameter types and copied (as CUDA does at
 * launch), pointer parameters noted for the device-memory check. */
template <typename... P, typename... A>
static inline void tdm_emu_launch(const char *name, const char *file, int line, const tdm_emu::cfg &c,
                                  void (*k)(P...), A &&...a) {
  static_assert(sizeof...(P) == sizeof...(A), "kernel argument count");
  std::tuple<typename std::decay<P>::type...> args(std::forward<A>(a)...);
  std::vector<tdm_emu::ptr_arg> ptrs;
  std::apply([&ptrs](const auto &...x) {
    int i = 0;
    (tdm_emu::collect_ptr(ptrs, i++, x), ...);
  }, args);
  tdm_emu::launch(name, file, line, c, std::move(ptrs), [k, args]() { std::apply(k, args); });
}

#endif
