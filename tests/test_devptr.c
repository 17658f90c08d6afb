/*
 * test_devptr.c: pointer classification never initialises CUDA, and device
 * memory is refused where it cannot be used. A stand-in driver library
 * (tests/fake_driver, loaded as libcuda.so.1) declares a host buffer to be
 * device memory, so the checks run on a machine without a GPU.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <string.h>

#include "prop.h"

#ifndef FAKE_CUDA_PATH
#error "FAKE_CUDA_PATH must name the stand-in driver library"
#endif

typedef void (*declare_fn)(const void *, size_t, int, int);
typedef int (*count_fn)(void);
typedef int (*calls_fn)(int which);

static uint64_t buf[64];

static tdm_ctx *cpu_ctx(void) {
  tdm_ctx_opts o;
  tdm_ctx *c = NULL;
  memset(&o, 0, sizeof o);
  o.backend = TDM_BACKEND_CPU;
  cr_assert_eq(tdm_ctx_create(&o, &c), TDM_OK, "%s", tdm_last_error());
  return c;
}

static tdm_status sort_buf(tdm_ctx *c) { return tdm_sort(c, TDM_U64, buf, 64, 0); }

/* Criterion runs each test in its own process, so the stand-in driver the
 * next test loads is not loaded here. */
Test(devptr, cpu_context_never_loads_the_driver) {
  void *before = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  tdm_ctx *c;
  tdm_hash *h = NULL;
  tdm_hash_opts ho;
  uint8_t found[64];
  if (before) {
    dlclose(before);
    cr_skip_test("a CUDA driver is already loaded in this process; nothing to observe");
  }
  c = cpu_ctx();
  for (int i = 0; i < 64; i++) buf[i] = (uint64_t)(64 - i);
  cr_assert_eq(sort_buf(c), TDM_OK, "%s", tdm_last_error());
  memset(&ho, 0, sizeof ho);
  ho.key_type = TDM_U64;
  ho.value_type = TDM_U64;
  cr_assert_eq(tdm_hash_create(c, &ho, &h), TDM_OK, "%s", tdm_last_error());
  cr_assert_eq(tdm_hash_insert(h, buf, buf, 64), TDM_OK, "%s", tdm_last_error());
  cr_assert_eq(tdm_hash_find(h, buf, NULL, found, 64), TDM_OK, "%s", tdm_last_error());
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
  cr_assert_null(dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD),
                 "a CPU context loaded the CUDA driver library");
}

Test(devptr, device_memory_refused_on_cpu_context_without_initialising) {
  void *lib = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_GLOBAL);
  declare_fn declare;
  count_fn init_calls;
  calls_fn attr_calls;
  tdm_ctx *c;
  tdm_status st;
  int before;
  cr_assert_not_null(lib, "cannot load the stand-in driver: %s", dlerror());
  {
    void *d = dlsym(lib, "fake_cuda_declare"), *i = dlsym(lib, "fake_cuda_init_calls"),
         *a = dlsym(lib, "fake_cuda_attr_calls");
    cr_assert(d && i && a, "stand-in driver lacks its test functions");
    memcpy(&declare, &d, sizeof declare);
    memcpy(&init_calls, &i, sizeof init_calls);
    memcpy(&attr_calls, &a, sizeof attr_calls);
  }
  c = cpu_ctx();

  /* Host memory (outside the declared range): accepted, after one driver
   * call for the one array, the plural one (a success for host memory). */
  declare(NULL, 0, 0, 0);
  before = attr_calls(0);
  cr_assert_eq(sort_buf(c), TDM_OK, "%s", tdm_last_error());
  cr_assert_eq(attr_calls(0) - before, 1, "%d cuPointerGetAttributes calls for one array",
               attr_calls(0) - before);

  /* Device memory of device 0: refused with a message naming the array. */
  declare(buf, sizeof buf, 0, 0);
  st = sort_buf(c);
  cr_assert_eq(st, TDM_ERR_INVALID_ARGUMENT, "got %s", tdm_status_name(st));
  cr_assert(strstr(tdm_last_error(), "device memory") != NULL, "message: %s", tdm_last_error());

  /* Managed memory: refused too (the CPU context takes host arrays). */
  declare(buf, sizeof buf, 1, 1);
  cr_assert_eq(sort_buf(c), TDM_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(tdm_last_error(), "device memory") != NULL, "message: %s", tdm_last_error());

  /* A pointer inside the range, not at its start. */
  declare(buf, sizeof buf, 0, 0);
  cr_assert_eq(tdm_sort(c, TDM_U64, buf + 8, 8, 0), TDM_ERR_INVALID_ARGUMENT);

  declare(NULL, 0, 0, 0);
  cr_assert_eq(sort_buf(c), TDM_OK, "%s", tdm_last_error());
  cr_assert_eq(init_calls(), 0, "tandem initialised the CUDA driver for a CPU context");
  /* The singular cuPointerGetAttribute fails for every host pointer (an API
   * error under compute-sanitizer): never used. */
  cr_assert_eq(attr_calls(1), 0, "cuPointerGetAttribute called %d times", attr_calls(1));
  tdm_ctx_destroy(c);
}

/* The answer "driver not loaded" is remembered between calls (asking dlopen
 * each call costs microseconds); a driver the program loads later must
 * still be seen by the next call on the same context. */
Test(devptr, driver_loaded_after_calls_is_seen) {
  void *lib;
  declare_fn declare;
  tdm_ctx *c;
  if (dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD))
    cr_skip_test("a CUDA driver is already loaded in this process; the test needs a process without one");
  c = cpu_ctx();
  cr_assert_eq(sort_buf(c), TDM_OK, "%s", tdm_last_error());
  cr_assert_eq(sort_buf(c), TDM_OK, "%s", tdm_last_error());
  lib = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_GLOBAL);
  cr_assert_not_null(lib, "cannot load the stand-in driver: %s", dlerror());
  {
    void *d = dlsym(lib, "fake_cuda_declare");
    cr_assert_not_null(d, "stand-in driver lacks fake_cuda_declare");
    memcpy(&declare, &d, sizeof declare);
  }
  declare(buf, sizeof buf, 0, 0);
  cr_assert_eq(sort_buf(c), TDM_ERR_INVALID_ARGUMENT,
               "device memory accepted: the driver loaded after the first calls went unseen");
  declare(NULL, 0, 0, 0);
  cr_assert_eq(sort_buf(c), TDM_OK, "%s", tdm_last_error());
  tdm_ctx_destroy(c);
}
