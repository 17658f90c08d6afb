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
 *  - cuPointerGetAttributes neither initialises the driver nor creates a
 *    context: before cuInit it answers CUDA_ERROR_NOT_INITIALIZED, and then
 *    again no device memory can exist.
 *  - The plural function, not cuPointerGetAttribute: one call answers the
 *    memory type, managed flag and device ordinal together, and a host
 *    pointer is a success with the memory type 0, not an error. The
 *    singular returns CUDA_ERROR_INVALID_VALUE for every host pointer, which
 *    compute-sanitizer reports as a failed API call: thousands of them in a
 *    self-test, hiding real findings behind its print limit.
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
typedef int (*get_attrs_fn)(unsigned num, int *attributes, void **data, unsigned long long ptr);

/* The loader's count of objects ever added to the process (dlpi_adds), read
 * from the first object dl_iterate_phdr reports; 0 when the loader does not
 * say (then every call asks dlopen). */
static int first_object_adds(struct dl_phdr_info *info, size_t size, void *data) {
  unsigned long long *adds = (unsigned long long *)data;
  if (size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds) *adds = info->dlpi_adds;
  return 1; /* one object is enough */
}

/* The driver's cuPointerGetAttributes once the driver is loaded, else NULL.
 * Once found it is kept (with the library handle, so it stays loaded).
 * Until then a program may load CUDA at any time, but asking dlopen each
 * call is costly even with RTLD_NOLOAD: a name the process has not loaded
 * sends glibc through ld.so.cache and the library path (a mapping, an
 * unmapping and a failed open per directory), some 5 to 20 us per array
 * argument. So the answer "not loaded" is kept with the loader's count of
 * objects added so far and asked again only once that count moves:
 * libcuda.so.1 cannot appear without it. */
static get_attrs_fn driver_get_attrs(void) {
  static get_attrs_fn cached;
  static unsigned long long absent_at; /* dlpi_adds when dlopen last said "not loaded"; 0: never */
  get_attrs_fn f = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
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
    void *sym = dlsym(lib, "cuPointerGetAttributes");
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

/* ---- one question per array and call ----------------------------------------
 * A public call asks about each caller array in its checks (src/check.c) and
 * again where the backend stages it, decides whether it may only queue, or
 * picks a copy's direction: 2 to 9 driver calls per call where one per
 * array answers them all. The caller's arrays cannot change memory space
 * while the call runs, so the answers are kept for the call: every public
 * entry begins with tdm__call_begin (through its first check), which starts
 * an empty memo on the calling thread; queries of that call read it. The
 * memo holds the last MEMO_SLOTS arrays (no call passes more), and is never
 * read by a later call: each begin takes a new call number. Only the thread
 * that entered the library asks (CPU workers never do). */
#define MEMO_SLOTS 8
static unsigned long long calls_begun; /* process-wide, so call numbers are unique across threads */
static _Thread_local unsigned long long this_call;
static _Thread_local unsigned memo_used, memo_next;
static _Thread_local struct {
  const void *p;
  int space, device;
} memo[MEMO_SLOTS];

void tdm__call_begin(void) {
  this_call = __atomic_add_fetch(&calls_begun, 1, __ATOMIC_RELAXED);
  memo_used = memo_next = 0;
}

unsigned long long tdm__call_id(void) { return this_call; }

static int ask_driver(const void *p, int *device);

int tdm__ptr_space(const void *p, int *device) {
  unsigned i;
  int space, dev;
  for (i = 0; i < memo_used; i++) {
    if (memo[i].p == p) {
      if (device) *device = memo[i].device;
      return memo[i].space;
    }
  }
  space = ask_driver(p, &dev);
  if (this_call) {
    memo[memo_next].p = p;
    memo[memo_next].space = space;
    memo[memo_next].device = dev;
    memo_next = (memo_next + 1) % MEMO_SLOTS;
    if (memo_used < MEMO_SLOTS) memo_used++;
  }
  if (device) *device = dev;
  return space;
}

/* The driver's answer for p (TDM__MEM_*), its device in *device. */
static int ask_driver(const void *p, int *device) {
  get_attrs_fn get;
  unsigned int type = 0, managed = 0;
  int dev = -1;
  int attrs[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  void *data[3];
  data[0] = &type;
  data[1] = &managed;
  data[2] = &dev;
  *device = -1;
  if (!p || !(get = driver_get_attrs())) return TDM__MEM_HOST;
  /* Memory the driver does not know (host memory) answers type 0. */
  if (get(3, attrs, data, (unsigned long long)(uintptr_t)p) != CUDA_SUCCESS || type != CU_MEMORYTYPE_DEVICE)
    return TDM__MEM_HOST; /* host, pinned host, unknown to CUDA, or CUDA not initialised */
  *device = dev;
  return managed ? TDM__MEM_MANAGED : TDM__MEM_DEVICE;
}

int tdm__is_device_ptr(const void *p) { return tdm__ptr_space(p, NULL) != TDM__MEM_HOST; }
