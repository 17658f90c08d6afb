/*
 * devptr.c: which memory space a caller's pointer is in, asked without ever
 * initialising CUDA.
 *
 * A CPU context must not initialise CUDA (no driver initialisation, no CUDA
 * context, no GPU memory taken) just to check its arguments, and the CUDA
 * runtime's cudaPointerGetAttributes may create the primary context of the
 * current device. So the question goes to the CUDA driver directly, and only
 * when the driver library is already loaded in this process:
 *  - dlopen(RTLD_NOLOAD) finds libcuda.so.1 only if something (the CUDA
 *    runtime, PyTorch, CuPy, tandem's own CUDA contexts) loaded it already.
 *    If it is not loaded, no CUDA allocation can exist in this process, so
 *    every pointer is host memory: nothing is lost by not asking.
 *  - cuPointerGetAttribute neither initialises the driver nor creates a
 *    context: before cuInit it answers CUDA_ERROR_NOT_INITIALIZED, and then
 *    again no device memory can exist.
 * The driver's ABI (the attribute and memory-type numbers, the function's
 * signature) is stable since CUDA 9.2, so the few numbers are written here
 * and this file needs no CUDA headers: the CPU-only build detects device
 * memory too (a CPU-only tandem in a PyTorch program refuses a GPU tensor
 * instead of reading it as host memory).
 */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"

/* From the CUDA driver API (cuda.h): CUpointer_attribute, CUmemorytype. */
enum {
  CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
  CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
  CU_MEMORYTYPE_DEVICE = 2,
  CUDA_SUCCESS = 0
};
typedef int (*get_attr_fn)(void *data, int attribute, unsigned long long ptr);

/* The loader's count of objects ever added to the process (dlpi_adds), read
 * from the first object dl_iterate_phdr reports; 0 when the loader does not
 * say (then every call asks dlopen). */
static int first_object_adds(struct dl_phdr_info *info, size_t size, void *data) {
  unsigned long long *adds = (unsigned long long *)data;
  if (size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds) *adds = info->dlpi_adds;
  return 1; /* one object is enough */
}

/* The driver's cuPointerGetAttribute once the driver is loaded, else NULL.
 * Once found it is kept (with the library handle, so it stays loaded).
 * Until then a program may load CUDA at any time, but asking dlopen each
 * call is costly even with RTLD_NOLOAD: a name the process has not loaded
 * sends glibc through ld.so.cache and the library path (a mapping, an
 * unmapping and a failed open per directory), some 5 to 20 us per array
 * argument. So the answer "not loaded" is kept with the loader's count of
 * objects added so far and asked again only once that count moves:
 * libcuda.so.1 cannot appear without it. */
static get_attr_fn driver_get_attr(void) {
  static get_attr_fn cached;
  static unsigned long long absent_at; /* dlpi_adds when dlopen last said "not loaded"; 0: never */
  get_attr_fn f = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
  unsigned long long adds = 0;
  void *lib;
  if (f) return f;
  dl_iterate_phdr(first_object_adds, &adds);
  if (adds && adds == __atomic_load_n(&absent_at, __ATOMIC_RELAXED)) return NULL;
  lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!lib) {
    __atomic_store_n(&absent_at, adds, __ATOMIC_RELAXED);
    return NULL;
  }
  {
    /* POSIX guarantees a dlsym result converts to a function pointer; ISO C
     * does not, hence the copy through memcpy. */
    void *sym = dlsym(lib, "cuPointerGetAttribute");
    f = NULL;
    if (sym) memcpy(&f, &sym, sizeof f);
  }
  if (!f) {
    dlclose(lib);
    return NULL;
  }
  __atomic_store_n(&cached, f, __ATOMIC_RELEASE); /* the handle stays open */
  return f;
}

int tdm__ptr_space(const void *p, int *device) {
  get_attr_fn get;
  unsigned int type = 0, managed = 0;
  int dev = -1;
  if (device) *device = -1;
  if (!p || !(get = driver_get_attr())) return TDM__MEM_HOST;
  if (get(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (unsigned long long)(uintptr_t)p) != CUDA_SUCCESS ||
      type != CU_MEMORYTYPE_DEVICE)
    return TDM__MEM_HOST; /* host, pinned host, unknown to CUDA, or CUDA not initialised */
  if (get(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, (unsigned long long)(uintptr_t)p) != CUDA_SUCCESS)
    managed = 0;
  if (get(&dev, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (unsigned long long)(uintptr_t)p) != CUDA_SUCCESS) dev = -1;
  if (device) *device = dev;
  return managed ? TDM__MEM_MANAGED : TDM__MEM_DEVICE;
}

int tdm__is_device_ptr(const void *p) { return tdm__ptr_space(p, NULL) != TDM__MEM_HOST; }
