/*
 * fake_cuda.c: a stand-in for the CUDA driver library (built as
 * libcuda.so.1 in the test build only), so the pointer classification of
 * src/devptr.c can be tested on a machine without CUDA. It answers
 * cuPointerGetAttributes for one address range the test declares as device
 * or managed memory of a given device, as the driver does: memory it does
 * not know (host memory) is a success with every attribute zero, not an
 * error. It counts the calls of cuPointerGetAttributes, of the singular
 * cuPointerGetAttribute (which tandem must not use: it fails for every host
 * pointer, and compute-sanitizer reports each failure) and of cuInit (which
 * tandem must never make on its own).
 * Loading it sets TANDEM_FAKE_CUDA_LOADED=1 in the environment, which stays
 * when a loader (the CUDA runtime) finds it lacking and unloads it again.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

static uintptr_t lo, hi;
static int dev_ordinal, is_managed;
static int init_calls, attrs_calls, attr_calls;

EXPORT void fake_cuda_declare(const void *p, size_t bytes, int device, int managed) {
  lo = (uintptr_t)p;
  hi = lo + bytes;
  dev_ordinal = device;
  is_managed = managed;
}

__attribute__((constructor)) static void loaded(void) { setenv("TANDEM_FAKE_CUDA_LOADED", "1", 1); }

EXPORT int fake_cuda_init_calls(void) { return init_calls; }
/* Calls of cuPointerGetAttributes (which 0) and cuPointerGetAttribute (1). */
EXPORT int fake_cuda_attr_calls(int which) { return which ? attr_calls : attrs_calls; }

EXPORT int cuInit(unsigned flags) {
  (void)flags;
  init_calls++;
  return 0;
}

/* The driver's numbers: attribute 2 memory type (0 unknown, 1 host, 2
 * device), 8 is managed, 9 device ordinal; 1 = CUDA_ERROR_INVALID_VALUE. */
EXPORT int cuPointerGetAttributes(unsigned num, const int *attributes, void **data, unsigned long long ptr) {
  int inside = ptr >= lo && ptr < hi;
  attrs_calls++;
  for (unsigned i = 0; i < num; i++) {
    switch (attributes[i]) {
    case 2: *(unsigned *)data[i] = inside ? 2u : 0u; break;
    case 8: *(unsigned *)data[i] = (unsigned)(inside && is_managed); break;
    case 9: *(int *)data[i] = inside ? dev_ordinal : -2; break;
    default: return 1;
    }
  }
  return 0;
}

/* The singular form fails for memory the driver does not know. */
EXPORT int cuPointerGetAttribute(void *data, int attribute, unsigned long long ptr) {
  int inside = ptr >= lo && ptr < hi;
  attr_calls++;
  if (!inside) return 1;
  switch (attribute) {
  case 2: *(unsigned *)data = 2u; return 0;
  case 8: *(unsigned *)data = (unsigned)is_managed; return 0;
  case 9: *(int *)data = dev_ordinal; return 0;
  default: return 1;
  }
}
