/* test_mpi_nocuda.c: a CPU context never loads or initialises the CUDA
 * driver through any distributed call, in a CUDA build as in a CPU one.
 *  1. The stand-in driver (tests/fake_driver) is on the library path as
 *     libcuda.so.1, where the CUDA runtime would load it from: after every
 *     tdm_mpi_* call on a CPU context it is not loaded and never was
 *     (dlopen RTLD_NOLOAD, /proc/self/maps, and the mark the stand-in leaves
 *     in the environment when it is loaded).
 *  2. Then it is loaded, as in a process that uses CUDA elsewhere, but not
 *     initialised: every call again, and cuInit was never called; and an
 *     array the driver calls device memory is refused on every rank, named
 *     in the message, again without cuInit.
 * Run under mpirun with any number of ranks. */
#include <dlfcn.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <tandem/mpi.h>

#include "mpi_check.h"

#ifndef FAKE_CUDA_PATH
#error "FAKE_CUDA_PATH must name the stand-in driver library"
#endif



/* 1 when a libcuda is mapped into this process. */
static int driver_mapped(void) {
  FILE *m = fopen("/proc/self/maps", "r");
  char line[1024];
  int found = 0;
  if (!m) return 0;
  while (!found && fgets(line, sizeof line, m)) found = strstr(line, "libcuda.so") != NULL;
  fclose(m);
  return found;
}
/* Loaded now, or ever: the stand-in marks its loading in the environment,
 * which outlasts a loader (the CUDA runtime) unloading it again. */
static int driver_loaded(void) {
  void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != NULL || driver_mapped() || getenv("TANDEM_FAKE_CUDA_LOADED") != NULL;
}

enum { N = 500 };
static uint64_t k[N], v[N], out[N];
static uint8_t f[N];

/* Every distributed call on ctx with the arrays given (keys: k). */
static void every_call(tdm_ctx *ctx, const char *when) {
  size_t n = N - (size_t)g_rank * 10, sz = 0, e = 0;
  for (size_t i = 0; i < n; i++) k[i] = (i * 7919u + (size_t)g_rank * 31u) % 1000, v[i] = i;
  tdm_status s[16];
  int j = 0;
  s[j++] = tdm_mpi_sort(ctx, MPI_COMM_WORLD, TDM_U64, k, n, 0);
  s[j++] = tdm_mpi_sort_pairs(ctx, MPI_COMM_WORLD, TDM_U64, k, TDM_U64, v, n, 0);
  tdm_hash_opts ho = {TDM_U64, TDM_U64, 0, 0, 0, TDM_DUP_KEEP_LAST};
  tdm_mpi_hash *h = NULL;
  s[j++] = tdm_mpi_hash_create(ctx, MPI_COMM_WORLD, &ho, &h);
  s[j++] = tdm_mpi_hash_insert(h, k, v, n);
  s[j++] = tdm_mpi_hash_find(h, k, out, f, n);
  s[j++] = tdm_mpi_hash_erase(h, k, n / 2, &e);
  s[j++] = tdm_mpi_hash_size(h, &sz);
  tdm_mpi_hash_destroy(h);
  tdm_btree_opts bo = {TDM_U64, TDM_U64, TDM_DUP_KEEP_FIRST};
  tdm_mpi_btree *t = NULL;
  s[j++] = tdm_mpi_btree_build(ctx, MPI_COMM_WORLD, &bo, k, v, n, &t);
  s[j++] = tdm_mpi_btree_find(t, k, out, f, n);
  s[j++] = tdm_mpi_btree_rank(t, k, out, n);
  s[j++] = tdm_mpi_btree_range_count(t, k, k, out, n);
  s[j++] = tdm_mpi_btree_insert(t, v, k, n);
  s[j++] = tdm_mpi_btree_erase(t, k, n / 3, &e);
  s[j++] = tdm_mpi_btree_size(t, &sz);
  tdm_mpi_btree_destroy(t);
  for (int i = 0; i < j; i++) CHECK(s[i] == TDM_OK, "%s: call %d: %s (%s)", when, i, tdm_status_name(s[i]),
                                    tdm_last_error());
}

typedef void (*declare_fn)(const void *, size_t, int, int);
typedef int (*count_fn)(void);

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  tdm_ctx_opts co = {TDM_BACKEND_CPU, 1, 0, NULL, 0, NULL};
  tdm_ctx *ctx = NULL;
  if (tdm_ctx_create(&co, &ctx) != TDM_OK) MPI_Abort(MPI_COMM_WORLD, 2);

  /* 1. Not loaded before (unless MPI itself loaded a driver: then there is
   * nothing to observe in this part), not loaded after. */
  int before = driver_loaded(), any_before = before;
  MPI_Allreduce(&before, &any_before, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  if (any_before) {
    if (g_rank == 0) printf("skipping part 1: a CUDA driver is loaded after MPI_Init\n");
  } else {
    every_call(ctx, "driver absent");
    CHECK(!driver_loaded(), "a distributed call on a CPU context loaded the CUDA driver library");
  }

  /* 2. Loaded but not initialised. */
  void *lib = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_GLOBAL);
  CHECK(lib != NULL, "cannot load the stand-in driver: %s", dlerror());
  if (lib) {
    declare_fn declare;
    count_fn init_calls;
    void *d = dlsym(lib, "fake_cuda_declare"), *i = dlsym(lib, "fake_cuda_init_calls");
    memcpy(&declare, &d, sizeof declare);
    memcpy(&init_calls, &i, sizeof init_calls);
    declare(NULL, 0, 0, 0);
    every_call(ctx, "driver loaded");
    CHECK(init_calls() == 0, "a distributed call on a CPU context called cuInit (%d times)", init_calls());
    /* Rank 0's keys are "device memory": refused everywhere, rank 0 named. */
    if (g_rank == 0) declare(k, sizeof k, 0, 0);
    tdm_status s = tdm_mpi_sort(ctx, MPI_COMM_WORLD, TDM_U64, k, N, 0);
    CHECK(s == TDM_ERR_INVALID_ARGUMENT && strstr(tdm_last_error(), "rank 0") &&
              strstr(tdm_last_error(), "device memory"),
          "device array on a CPU context: %s (%s)", tdm_status_name(s), tdm_last_error());
    tdm_mpi_btree *t = NULL;
    tdm_btree_opts bo = {TDM_U64, TDM_U64, TDM_DUP_KEEP_FIRST};
    s = tdm_mpi_btree_build(ctx, MPI_COMM_WORLD, &bo, k, v, N, &t);
    CHECK(s == TDM_ERR_INVALID_ARGUMENT && !t, "device array to btree_build: %s", tdm_status_name(s));
    declare(NULL, 0, 0, 0);
    CHECK(init_calls() == 0, "refusing a device array called cuInit (%d times)", init_calls());
  }

  tdm_ctx_destroy(ctx);
  return check_finish("test_mpi_nocuda");
}
