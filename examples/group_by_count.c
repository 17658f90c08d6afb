/*
 * group_by_count: counts how often each integer occurs in a file and prints
 * the most frequent ones, with one tdm_group_reduce (TDM_AGG_COUNT), then a
 * sort of the groups by count.
 *
 *   group_by_count FILE [TOP] [--cpu|--cuda] [--device]
 *   group_by_count --make FILE N DISTINCT     (writes N integers, zipf-like)
 *
 * FILE holds signed 64-bit integers as text, separated by whitespace. Every
 * value is a valid key, 0 and -1 included. With --device (a CUDA build with a
 * GPU) the keys are copied to device memory first: tdm_group_reduce takes
 * host or device arrays the same way.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tandem/tandem.h>

#ifdef TANDEM_EXAMPLE_CUDA
#include <cuda_runtime_api.h>
#endif

static int make_file(const char *path, size_t n, uint64_t distinct) {
  FILE *f = fopen(path, "w");
  uint64_t x = 0x2545f4914f6cdd1dull;
  size_t i;
  if (!f || distinct == 0) return 1;
  for (i = 0; i < n; i++) {
    double u;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    u = ((double)(x >> 11) + 1.0) / 9007199254740993.0;
    /* rank ~ 1/u: a few values dominate, as in real logs */
    fprintf(f, "%" PRId64 "\n", (int64_t)((uint64_t)(1.0 / u) % distinct) - (int64_t)(distinct / 2));
  }
  return fclose(f) != 0;
}

/* Reads whitespace-separated integers; *n receives the count. */
static int64_t *read_ints(const char *path, size_t *n) {
  FILE *f = fopen(path, "r");
  size_t cap = 1 << 20, len = 0;
  int64_t *a = malloc(cap * sizeof *a), v;
  if (!f || !a) return NULL;
  while (fscanf(f, "%" SCNd64, &v) == 1) {
    if (len == cap) {
      int64_t *b = realloc(a, 2 * cap * sizeof *a);
      if (!b) return NULL;
      a = b;
      cap *= 2;
    }
    a[len++] = v;
  }
  fclose(f);
  *n = len;
  return a;
}

static void die(const char *what, tdm_status s) {
  fprintf(stderr, "%s: %s: %s\n", what, tdm_status_name(s), tdm_last_error());
  exit(1);
}

int main(int argc, char **argv) {
  tdm_ctx_opts copts = {TDM_BACKEND_AUTO, 0, 0, NULL, 0, NULL};
  tdm_ctx *ctx;
  const char *path = NULL;
  size_t n, top = 10, got, i;
  int64_t *keys, *gkeys;
  uint64_t *counts;
  void *dkeys;
  int device = 0, a;
  tdm_status s;

  if (argc == 5 && strcmp(argv[1], "--make") == 0)
    return make_file(argv[2], strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10));
  for (a = 1; a < argc; a++) {
    if (strcmp(argv[a], "--cpu") == 0) copts.backend = TDM_BACKEND_CPU;
    else if (strcmp(argv[a], "--cuda") == 0) copts.backend = TDM_BACKEND_CUDA;
    else if (strcmp(argv[a], "--device") == 0) device = 1;
    else if (!path) path = argv[a];
    else top = strtoull(argv[a], NULL, 10);
  }
  if (!path) {
    fprintf(stderr, "usage: %s FILE [TOP] [--cpu|--cuda] [--device]\n       %s --make FILE N DISTINCT\n",
            argv[0], argv[0]);
    return 2;
  }
  keys = read_ints(path, &n);
  if (!keys) {
    perror(path);
    return 1;
  }
  if ((s = tdm_ctx_create(&copts, &ctx)) != TDM_OK) die("context", s);

  dkeys = keys;
#ifdef TANDEM_EXAMPLE_CUDA
  if (device && tdm_ctx_backend(ctx) == TDM_BACKEND_CUDA) {
    cudaMalloc(&dkeys, n * 8);
    cudaMemcpy(dkeys, keys, n * 8, cudaMemcpyHostToDevice);
  }
#else
  if (device) fprintf(stderr, "--device needs a CUDA build of this example; using host memory\n");
#endif
  /* The groups in ascending key order with their counts (COUNT reads no
   * values). */
  gkeys = malloc((n + 1) * sizeof *gkeys);
  counts = malloc((n + 1) * sizeof *counts);
  if (!gkeys || !counts) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  if ((s = tdm_group_reduce(ctx, TDM_I64, dkeys, TDM_U64, NULL, n, TDM_AGG_COUNT, 0, gkeys, counts, &got)) != TDM_OK)
    die("tdm_group_reduce", s);
  /* Largest count first; stable, so equal counts stay in key order. */
  if ((s = tdm_sort_pairs(ctx, TDM_U64, counts, TDM_I64, gkeys, got, TDM_SORT_DESCENDING)) != TDM_OK)
    die("tdm_sort_pairs", s);
  printf("%zu integers, %zu distinct, on the %s\n", n, got, tdm_ctx_backend(ctx) == TDM_BACKEND_CUDA ? "GPU" : "CPU");
  for (i = 0; i < got && i < top; i++) printf("%20" PRId64 "  %" PRIu64 "\n", gkeys[i], counts[i]);

#ifdef TANDEM_EXAMPLE_CUDA
  if (dkeys != keys) cudaFree(dkeys);
#endif
  tdm_ctx_destroy(ctx);
  free(keys);
  free(gkeys);
  free(counts);
  return 0;
}
