/*
 * tsan.cc (TSan builds only): CUDA's volatile loads and stores as TSan sees
 * them. The CUDA units are compiled with TSan's distinct volatile
 * instrumentation, which calls these before each volatile access; the
 * runtime leaves them undefined. A volatile access is modelled as a relaxed
 * atomic one (as PTX treats ld.volatile / st.volatile): it races with no
 * other atomic or volatile access and orders nothing. The access itself is
 * made by the caller; a store is recorded as an atomic add of 0 just before
 * it, which leaves the word as it was.
 */
#include <stdint.h>

#define API extern "C" __attribute__((visibility("default")))

/* The runtime's atomic entry points (their header is not installed by
 * every compiler); memory order 0 is relaxed. */
extern "C" {
typedef int __tsan_memory_order;
uint8_t __tsan_atomic8_load(const volatile uint8_t *a, __tsan_memory_order mo);
uint16_t __tsan_atomic16_load(const volatile uint16_t *a, __tsan_memory_order mo);
uint32_t __tsan_atomic32_load(const volatile uint32_t *a, __tsan_memory_order mo);
uint64_t __tsan_atomic64_load(const volatile uint64_t *a, __tsan_memory_order mo);
uint8_t __tsan_atomic8_fetch_add(volatile uint8_t *a, uint8_t v, __tsan_memory_order mo);
uint16_t __tsan_atomic16_fetch_add(volatile uint16_t *a, uint16_t v, __tsan_memory_order mo);
uint32_t __tsan_atomic32_fetch_add(volatile uint32_t *a, uint32_t v, __tsan_memory_order mo);
uint64_t __tsan_atomic64_fetch_add(volatile uint64_t *a, uint64_t v, __tsan_memory_order mo);
}

namespace {
const __tsan_memory_order relaxed = 0;
}

API void __tsan_volatile_read1(void *a) { (void)__tsan_atomic8_load((const volatile uint8_t *)a, relaxed); }
API void __tsan_volatile_read2(void *a) { (void)__tsan_atomic16_load((const volatile uint16_t *)a, relaxed); }
API void __tsan_volatile_read4(void *a) { (void)__tsan_atomic32_load((const volatile uint32_t *)a, relaxed); }
API void __tsan_volatile_read8(void *a) { (void)__tsan_atomic64_load((const volatile uint64_t *)a, relaxed); }
API void __tsan_volatile_read16(void *a) {
  __tsan_volatile_read8(a);
  __tsan_volatile_read8((char *)a + 8);
}
API void __tsan_volatile_write1(void *a) { (void)__tsan_atomic8_fetch_add((volatile uint8_t *)a, 0, relaxed); }
API void __tsan_volatile_write2(void *a) { (void)__tsan_atomic16_fetch_add((volatile uint16_t *)a, 0, relaxed); }
API void __tsan_volatile_write4(void *a) { (void)__tsan_atomic32_fetch_add((volatile uint32_t *)a, 0, relaxed); }
API void __tsan_volatile_write8(void *a) { (void)__tsan_atomic64_fetch_add((volatile uint64_t *)a, 0, relaxed); }
API void __tsan_volatile_write16(void *a) {
  __tsan_volatile_write8(a);
  __tsan_volatile_write8((char *)a + 8);
}
