/*
 * fake_cuda.c: a stand-in for the CUDA driver library (built as
 * libcuda.so.1 in the test build only), so the pointer classification of
 * src/devptr.c can be tested on a machine without CUDA. It answers
 * cuPointerGetAttribute for one address range the test declares as device or
 * managed memory of a given device, and counts calls of cuInit (which tandem
 * must never make on its own). Loading it sets TANDEM_FAKE_CUDA_LOADED=1 in
 * the environment, which stays when a loader (the CUDA runtime) finds it
 * lacking and unloads it again.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

static uintptr_t lo, hi;
static int dev_ordinal, is_managed;
static int init_calls;

__attribute__((visibility("default"))) void fake_cuda_declare(const void *p, size_t bytes, int device,
                                                              int managed) {
  lo = (uintptr_t)p;
  hi = lo + bytes;
  dev_ordinal = device;
  is_managed = managed;
}

__attribute__((constructor)) static void loaded(void) { setenv("TANDEM_FAKE_CUDA_LOADED", "1", 1); }

__attribute__((visibility("default"))) int fake_cuda_init_calls(void) { return init_calls; }

__attribute__((visibility("default"))) int cuInit(unsigned flags) {
  (void)flags;
  init_calls++;
  return 0;
}

/* The driver's numbers: attribute 2 memory type (1 host, 2 device), 8 is
 * managed, 9 device ordinal; 1 = CUDA_ERROR_INVALID_VALUE. */
__attribute__((visibility("default"))) int cuPointerGetAttribute(void *data, int attribute, unsigned long long ptr) {
  int inside = ptr >= lo && ptr < hi;
  switch (attribute) {
  case 2:
    if (!inside) return 1;
    *(unsigned *)data = 2u;
    return 0;
  case 8:
    *(unsigned *)data = inside && is_managed;
    return inside ? 0 : 1;
  case 9:
    if (!inside) return 1;
    *(int *)data = dev_ordinal;
    return 0;
  default: return 1;
  }
}
