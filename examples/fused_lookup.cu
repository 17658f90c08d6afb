// fused_lookup: look keys up inside your own kernel with tandem's views.
//
//   fused_lookup [LOG2_RECORDS] [REPS]      (default 26 and 10)
//
// A batch of records (user, score) is filtered by membership of the user in a
// hash table (the allowed users) and, for the records that pass, the B-tree
// rank of the score among a set of thresholds is summed. The fused version is
// one kernel that calls tdm_hash_view_find and tdm_btree_view_rank per
// record; the two-call version runs tdm_hash_find and tdm_btree_rank over the
// whole batch and a third kernel sums, writing and reading two intermediate
// arrays. Both must give the same total; the program prints the time of each
// (CUDA events, best of REPS) and the ratio. Needs a CUDA build of tandem and
// a GPU; without a usable device it says why and exits with status 77.
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <tandem/tandem.h>

#define CHECK_TDM(call)                                                                      \
  do {                                                                                       \
    tdm_status s_ = (call);                                                                  \
    if (s_ != TDM_OK) {                                                                      \
      fprintf(stderr, "%s: %s: %s\n", #call, tdm_status_name(s_), tdm_last_error());         \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)
#define CHECK_CUDA(call)                                                                     \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                            \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

__device__ __host__ static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

__global__ void make_records(uint64_t *user, uint64_t *score, size_t n, uint64_t users) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    user[i] = mix(i) % users;
    score[i] = mix(i ^ 0x5bd1e995ull);
  }
}

// Sums v over the block and adds the block's total to *out once.
__device__ static void block_add(uint64_t v, unsigned long long *out) {
  __shared__ unsigned long long part[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < (blockDim.x >> 5) ? part[threadIdx.x] : 0;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) atomicAdd(out, (unsigned long long)v);
  }
}

// The fused pass: filter and rank in one read of the records.
__global__ void fused(tdm_hash_view allowed, tdm_btree_view thresholds, const uint64_t *user, const uint64_t *score,
                      size_t n, unsigned long long *total) {
  uint64_t sum = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    if (tdm_hash_view_find(allowed, user[i], NULL)) sum += tdm_btree_view_rank(thresholds, score[i]);
  block_add(sum, total);
}

// The third pass of the two-call version.
__global__ void sum_found(const uint8_t *found, const uint64_t *rank, size_t n, unsigned long long *total) {
  uint64_t sum = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    if (found[i]) sum += rank[i];
  block_add(sum, total);
}

int main(int argc, char **argv) {
  int log2n = argc > 1 ? atoi(argv[1]) : 26, reps = argc > 2 ? atoi(argv[2]) : 10;
  if (log2n < 10 || log2n > 30 || reps < 1) {
    fprintf(stderr, "usage: fused_lookup [LOG2_RECORDS in 10..30] [REPS >= 1]\n");
    return 2;
  }
  if (tdm_cuda_device_count() == 0) {
    printf("fused_lookup: no usable CUDA device (not built with CUDA, no driver, or no GPU); nothing to run\n");
    return 77;
  }
  const size_t n = (size_t)1 << log2n, n_allowed = (size_t)1 << 22, n_thresholds = (size_t)1 << 20;
  const uint64_t users = (uint64_t)n_allowed * 2; // about half of the records pass
  const unsigned block = 256, grid = 132 * 16;

  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  tdm_ctx_opts o = {};
  o.backend = TDM_BACKEND_CUDA;
  o.cuda_stream = stream;
  o.flags = TDM_CTX_STREAM_ORDERED;
  tdm_ctx *ctx = nullptr;
  CHECK_TDM(tdm_ctx_create(&o, &ctx));

  // The structures: allowed users (every even user id) and thresholds.
  uint64_t *h_keys = (uint64_t *)malloc(n_allowed * 8);
  for (size_t i = 0; i < n_allowed; i++) h_keys[i] = 2 * i;
  tdm_hash_opts ho = {TDM_U64, TDM_U32, n_allowed, 0, 0, TDM_DUP_KEEP_FIRST};
  tdm_hash *allowed = nullptr;
  CHECK_TDM(tdm_hash_create(ctx, &ho, &allowed));
  uint32_t *h_vals = (uint32_t *)calloc(n_allowed, 4); // membership only: values 0
  CHECK_TDM(tdm_hash_insert(allowed, h_keys, h_vals, n_allowed));
  for (size_t i = 0; i < n_thresholds; i++) h_keys[i] = mix(i * 7 + 1);
  tdm_btree_opts bo = {TDM_U64, TDM_U32, TDM_DUP_KEEP_FIRST};
  tdm_btree *thresholds = nullptr;
  CHECK_TDM(tdm_btree_build(ctx, &bo, h_keys, h_vals, n_thresholds, &thresholds));
  free(h_keys);
  free(h_vals);

  uint64_t *d_user, *d_score, *d_rank;
  uint8_t *d_found;
  unsigned long long *d_total, total_fused = 0, total_two = 0;
  CHECK_CUDA(cudaMalloc(&d_user, n * 8));
  CHECK_CUDA(cudaMalloc(&d_score, n * 8));
  CHECK_CUDA(cudaMalloc(&d_rank, n * 8));
  CHECK_CUDA(cudaMalloc(&d_found, n));
  CHECK_CUDA(cudaMalloc(&d_total, 8));
  make_records<<<grid, block, 0, stream>>>(d_user, d_score, n, users);
  CHECK_CUDA(cudaGetLastError());

  // Views after the last mutation; the kernel is ordered after it on stream.
  tdm_hash_view hv;
  tdm_btree_view bv;
  CHECK_TDM(tdm_hash_view_get(allowed, &hv));
  CHECK_TDM(tdm_btree_view_get(thresholds, &bv));

  cudaEvent_t t0, t1;
  CHECK_CUDA(cudaEventCreate(&t0));
  CHECK_CUDA(cudaEventCreate(&t1));
  float best_fused = 1e30f, best_two = 1e30f, ms;
  for (int r = 0; r < reps + 1; r++) { // the first round warms up
    CHECK_CUDA(cudaMemsetAsync(d_total, 0, 8, stream));
    CHECK_CUDA(cudaEventRecord(t0, stream));
    fused<<<grid, block, 0, stream>>>(hv, bv, d_user, d_score, n, d_total);
    CHECK_CUDA(cudaEventRecord(t1, stream));
    CHECK_CUDA(cudaMemcpyAsync(&total_fused, d_total, 8, cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    CHECK_CUDA(cudaEventElapsedTime(&ms, t0, t1));
    if (r > 0 && ms < best_fused) best_fused = ms;

    CHECK_CUDA(cudaMemsetAsync(d_total, 0, 8, stream));
    CHECK_CUDA(cudaEventRecord(t0, stream));
    CHECK_TDM(tdm_hash_find(allowed, d_user, nullptr, d_found, n));
    CHECK_TDM(tdm_btree_rank(thresholds, d_score, d_rank, n));
    sum_found<<<grid, block, 0, stream>>>(d_found, d_rank, n, d_total);
    CHECK_CUDA(cudaEventRecord(t1, stream));
    CHECK_CUDA(cudaMemcpyAsync(&total_two, d_total, 8, cudaMemcpyDeviceToHost, stream));
    CHECK_TDM(tdm_ctx_sync(ctx));
    CHECK_CUDA(cudaEventElapsedTime(&ms, t0, t1));
    if (r > 0 && ms < best_two) best_two = ms;
    if (total_fused != total_two) {
      fprintf(stderr, "fused_lookup: WRONG RESULT: fused %llu, two calls %llu\n", total_fused, total_two);
      return 1;
    }
  }
  printf("fused_lookup: %zu records, %zu allowed users, %zu thresholds, total %llu\n", n, n_allowed, n_thresholds,
         total_fused);
  printf("fused_lookup: fused %.3f ms, two calls %.3f ms, fused is %.2fx the two-call version\n", best_fused,
         best_two, best_two / best_fused);

  tdm_hash_destroy(allowed);
  tdm_btree_destroy(thresholds);
  tdm_ctx_destroy(ctx);
  cudaFree(d_user);
  cudaFree(d_score);
  cudaFree(d_rank);
  cudaFree(d_found);
  cudaFree(d_total);
  cudaStreamDestroy(stream);
  return 0;
}
