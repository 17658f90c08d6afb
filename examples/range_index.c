/*
 * range_index: an ordered index over event timestamps answering range
 * queries with a B-tree: how many events fall in each window, and which.
 *
 *   range_index [N] [--cpu|--cuda] [--device]
 *
 * Builds an index of N events (timestamp -> event id; timestamps in any
 * order, duplicates resolved by keeping the earliest event), adds a batch of
 * late events, drops a batch of retracted ones, then answers a batch of
 * windows [lo, hi] with range_count and range (results in CSR form). With
 * --device (a CUDA build with a GPU) the query arrays live in device memory:
 * the calls take host or device arrays the same way.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tandem/tandem.h>

#ifdef TANDEM_EXAMPLE_CUDA
#include <cuda_runtime_api.h>
#endif

static void die(const char *what, tdm_status s) {
  fprintf(stderr, "%s: %s: %s\n", what, tdm_status_name(s), tdm_last_error());
  exit(1);
}

static uint64_t next(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

int main(int argc, char **argv) {
  enum { WINDOWS = 4, LATE = 1000 };
  tdm_ctx_opts copts = {TDM_BACKEND_AUTO, 0, 0, NULL, 0, NULL};
  tdm_btree_opts bopts = {TDM_U64, TDM_U32, TDM_DUP_KEEP_FIRST};
  size_t n = 1000000, i, erased = 0, total;
  uint64_t seed = 42, *ts, lo[WINDOWS], hi[WINDOWS], counts[WINDOWS], offsets[WINDOWS + 1];
  uint32_t *ids, *hit_ids;
  uint64_t *hit_ts;
  void *dlo = lo, *dhi = hi;
  tdm_ctx *ctx;
  tdm_btree *index;
  tdm_status s;
  int device = 0, a, w;

  for (a = 1; a < argc; a++) {
    if (strcmp(argv[a], "--cpu") == 0) copts.backend = TDM_BACKEND_CPU;
    else if (strcmp(argv[a], "--cuda") == 0) copts.backend = TDM_BACKEND_CUDA;
    else if (strcmp(argv[a], "--device") == 0) device = 1;
    else n = strtoull(argv[a], NULL, 10);
  }
  if ((s = tdm_ctx_create(&copts, &ctx)) != TDM_OK) die("context", s);

  /* Events at random seconds of one day (in microseconds), in arrival order. */
  ts = malloc((n + LATE) * sizeof *ts);
  ids = malloc((n + LATE) * sizeof *ids);
  for (i = 0; i < n + LATE; i++) {
    ts[i] = next(&seed) % 86400000000ull;
    ids[i] = (uint32_t)i;
  }
  if ((s = tdm_btree_build(ctx, &bopts, ts, ids, n, &index)) != TDM_OK) die("tdm_btree_build", s);
  printf("indexed %zu events (%zu distinct timestamps), height %u, on the %s\n", n, tdm_btree_size(index),
         tdm_btree_height(index), tdm_ctx_backend(ctx) == TDM_BACKEND_CUDA ? "GPU" : "CPU");

  /* Late arrivals, then retractions of the first 500 events. */
  if ((s = tdm_btree_insert(index, ts + n, ids + n, LATE)) != TDM_OK) die("tdm_btree_insert", s);
  if ((s = tdm_btree_erase(index, ts, 500, &erased)) != TDM_OK) die("tdm_btree_erase", s);
  printf("after %d late events and %zu retractions: %zu events\n", LATE, erased, tdm_btree_size(index));

  /* Four windows: a minute, a second, a reversed (empty) one, the whole day. */
  lo[0] = 3600000000ull; hi[0] = lo[0] + 60000000ull - 1;
  lo[1] = 43200000000ull; hi[1] = lo[1] + 1000000ull - 1;
  lo[2] = 5; hi[2] = 4;
  lo[3] = 0; hi[3] = UINT64_MAX;
#ifdef TANDEM_EXAMPLE_CUDA
  if (device && tdm_ctx_backend(ctx) == TDM_BACKEND_CUDA) {
    cudaMalloc(&dlo, sizeof lo);
    cudaMalloc(&dhi, sizeof hi);
    cudaMemcpy(dlo, lo, sizeof lo, cudaMemcpyHostToDevice);
    cudaMemcpy(dhi, hi, sizeof hi, cudaMemcpyHostToDevice);
  }
#else
  if (device) fprintf(stderr, "--device needs a CUDA build of this example; using host memory\n");
#endif
  if ((s = tdm_btree_range_count(index, dlo, dhi, counts, WINDOWS)) != TDM_OK) die("tdm_btree_range_count", s);
  /* Fetch the hits of the first two windows only. */
  total = (size_t)(counts[0] + counts[1]);
  hit_ts = malloc((total + 1) * sizeof *hit_ts);
  hit_ids = malloc((total + 1) * sizeof *hit_ids);
  if ((s = tdm_btree_range(index, dlo, dhi, 2, offsets, hit_ts, hit_ids, total)) != TDM_OK) die("tdm_btree_range", s);
  for (w = 0; w < WINDOWS; w++) printf("window %d: %" PRIu64 " events\n", w, counts[w]);
  for (w = 0; w < 2; w++) {
    uint64_t j;
    printf("window %d, first events:", w);
    for (j = offsets[w]; j < offsets[w + 1] && j < offsets[w] + 3; j++)
      printf(" t=%" PRIu64 " id=%" PRIu32, hit_ts[j], hit_ids[j]);
    printf("\n");
  }
  if ((s = tdm_btree_validate(index)) != TDM_OK) die("tdm_btree_validate", s);

#ifdef TANDEM_EXAMPLE_CUDA
  if (dlo != (void *)lo) {
    cudaFree(dlo);
    cudaFree(dhi);
  }
#endif
  tdm_btree_destroy(index);
  tdm_ctx_destroy(ctx);
  free(ts);
  free(ids);
  free(hit_ts);
  free(hit_ids);
  return 0;
}
