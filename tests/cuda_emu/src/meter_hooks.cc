/*
 * meter_hooks.cc: ThreadSanitizer's instrumentation entry points for the cost
 * meter (meter.cc): code compiled with -fsanitize=thread calls these for
 * every load and store, and no libtsan is linked. Compiled without
 * sanitizers (their builtin declarations of these names would clash), and
 * not at all in the race build, where libtsan defines them.
 */
#include <stddef.h>
#include <stdint.h>

#include "emu_internal.h"

using namespace tdm_emu;

#define API extern "C" __attribute__((visibility("default")))

/* ---- ThreadSanitizer's instrumentation entry points -----------------------
 * The site of an access is the instrumented instruction's return address. */
#define SITE __builtin_return_address(0)
#define TDM_METER_RW(N)                                                                                  \
  API void __tsan_read##N(void *p) { meter::record(SITE, p, N, false); }                                  \
  API void __tsan_write##N(void *p) { meter::record(SITE, p, N, true); }                                  \
  API void __tsan_unaligned_read##N(void *p) { meter::record(SITE, p, N, false); }                        \
  API void __tsan_unaligned_write##N(void *p) { meter::record(SITE, p, N, true); }                        \
  API void __tsan_volatile_read##N(void *p) { meter::record(SITE, p, N, false); }                         \
  API void __tsan_volatile_write##N(void *p) { meter::record(SITE, p, N, true); }
TDM_METER_RW(1)
TDM_METER_RW(2)
TDM_METER_RW(4)
TDM_METER_RW(8)
TDM_METER_RW(16)
#undef TDM_METER_RW
API void __tsan_read_range(void *p, unsigned long n) { meter::record(SITE, p, n, false); }
API void __tsan_write_range(void *p, unsigned long n) { meter::record(SITE, p, n, true); }
API void __tsan_init(void) {}
API void __tsan_func_entry(void *) {}
API void __tsan_func_exit(void) {}
API void __tsan_vptr_update(void **, void *) {}
API void __tsan_vptr_read(void **) {}

/* Atomics: the operation itself (sequentially consistent: the strongest of
 * what the order argument may ask); counted by the prelude, not here. */
#define TDM_METER_ATOMICS(B, T)                                                                          \
  API T __tsan_atomic##B##_load(const volatile T *a, int) { return __atomic_load_n(a, __ATOMIC_SEQ_CST); } \
  API void __tsan_atomic##B##_store(volatile T *a, T v, int) { __atomic_store_n(a, v, __ATOMIC_SEQ_CST); } \
  API T __tsan_atomic##B##_exchange(volatile T *a, T v, int) {                                           \
    return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                                   \
  }                                                                                                      \
  API T __tsan_atomic##B##_fetch_add(volatile T *a, T v, int) { return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); } \
  API T __tsan_atomic##B##_fetch_sub(volatile T *a, T v, int) { return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); } \
  API T __tsan_atomic##B##_fetch_and(volatile T *a, T v, int) { return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST); } \
  API T __tsan_atomic##B##_fetch_or(volatile T *a, T v, int) { return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); }   \
  API T __tsan_atomic##B##_fetch_xor(volatile T *a, T v, int) { return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST); } \
  API T __tsan_atomic##B##_fetch_nand(volatile T *a, T v, int) {                                         \
    return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST);                                                   \
  }                                                                                                      \
  API int __tsan_atomic##B##_compare_exchange_strong(volatile T *a, T *e, T d, int, int) {               \
    return __atomic_compare_exchange_n(a, e, d, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);               \
  }                                                                                                      \
  API int __tsan_atomic##B##_compare_exchange_weak(volatile T *a, T *e, T d, int, int) {                 \
    return __atomic_compare_exchange_n(a, e, d, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);               \
  }                                                                                                      \
  API T __tsan_atomic##B##_compare_exchange_val(volatile T *a, T e, T d, int, int) {                     \
    __atomic_compare_exchange_n(a, &e, d, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                     \
    return e;                                                                                            \
  }
TDM_METER_ATOMICS(8, uint8_t)
TDM_METER_ATOMICS(16, uint16_t)
TDM_METER_ATOMICS(32, uint32_t)
TDM_METER_ATOMICS(64, uint64_t)
#undef TDM_METER_ATOMICS
API void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
API void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
