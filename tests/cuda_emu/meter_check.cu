/*
 * meter_check.cu: proves the emulated device's cost meter (src/meter.cc)
 * counts what it says: each case runs kernels whose cost is known, and each
 * planted inefficiency must raise the figure it should by the amount
 * predicted here, before the run; any other figure must stay as the clean
 * copy's. Exits 1 when a figure differs. Test-only (ctest: emu_meter).
 *
 * n 4-byte words, blocks of 256 threads, one word per thread:
 *   copy         reads n/8 sectors (32 lanes x 4 bytes = 4 sectors per warp)
 *                and writes n/8; n/32 lines each way; one launch, no waits.
 *   strided read each lane of a warp in a sector of its own (a stride of 8
 *                words): n sectors read instead of n/8 (+7n/8), one line per
 *                4 lanes: n/4 lines instead of n/32.
 *   extra pass   the copy run twice: +n/8 read, +n/8 written, +1 launch.
 *   wait         the copy, then cudaStreamSynchronize: +1 host sync.
 *   hot atomic   every thread adds 1 to one word: n atomics, all n on one
 *                address; the warp-aggregated form makes n/32, n/32 on one.
 *   match atomic every thread adds 1 to the word of its key (its word % 4),
 *                the lanes of a key found by __match_any_sync and counted
 *                by one atomic of the lowest: 4 atomics a warp (n/8), n/32
 *                on each word; every word then counts n/4 (the collective's
 *                answer checked, not only the meter).
 *   staging      the copy through shared memory and a local array: no more
 *                sectors than the plain copy (only device memory counts);
 *                per warp 5 shared accesses (a row written, 4 rows read),
 *                each one wavefront, no replays.
 *   bank conflict the copy through a 32 x 32 tile of shared words, each warp
 *                writing and reading a column (lane L at word 32 L + warp):
 *                all 32 lanes in one bank, 32 wavefronts an access, 31 of
 *                them replays: per warp 2 accesses, 64 wavefronts, 62 replays.
 *   wide rows    8-byte words, a warp's lanes on consecutive ones: 64 words,
 *                two in each bank: 2 wavefronts an access, which its width
 *                needs, so no replays; a broadcast (every lane reads word 0)
 *                is 1 wavefront: per warp 2 accesses, 3 wavefronts.
 *   ptr query    the copy and one cudaPointerGetAttributes: +1 query.
 *   round trip   n words up and back: h2d and d2h bytes 4n each, two waits
 *                (the synchronous copies).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "emu_meter.h"

#define BLOCK 256u

__global__ void copy_kernel(const unsigned *in, unsigned *out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

__global__ void strided_kernel(const unsigned *in, unsigned *out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[(i * 8) % n + (i * 8) / n]; /* every word once, 8 words apart within a warp */
}

__global__ void hot_atomic_kernel(const unsigned *in, unsigned *count, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n && in[i] != 0xFFFFFFFFu) atomicAdd(count, 1u);
}

__global__ void warp_atomic_kernel(const unsigned *in, unsigned *count, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  unsigned hit = i < n && in[i] != 0xFFFFFFFFu;
  unsigned votes = __ballot_sync(0xFFFFFFFFu, hit);
  if ((threadIdx.x & 31u) == 0 && votes) atomicAdd(count, (unsigned)__popc(votes));
}

__global__ void match_atomic_kernel(const unsigned *in, unsigned *count, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; /* n is a multiple of the block: every lane runs */
  unsigned key = i < n ? in[i] % 4u : 0u;
  unsigned peers = __match_any_sync(0xFFFFFFFFu, key);
  if (!(peers & ((1u << (threadIdx.x & 31u)) - 1u))) atomicAdd(&count[key], (unsigned)__popc(peers));
}

__global__ void staged_kernel(const unsigned *in, unsigned *out, size_t n) {
  __shared__ unsigned tile[BLOCK];
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  volatile unsigned local[4];
  tile[threadIdx.x] = i < n ? in[i] : 0u;
  __syncthreads();
  for (int r = 0; r < 4; r++) local[r] = tile[(threadIdx.x + r) % BLOCK];
  if (i < n) out[i] = local[0];
}

__global__ void conflict_kernel(const unsigned *in, unsigned *out, size_t n) {
  __shared__ unsigned tile[32 * 32];
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  unsigned column = (threadIdx.x % 32u) * 32u + threadIdx.x / 32u;
  tile[column] = i < n ? in[i] : 0u;
  __syncthreads();
  if (i < n) out[i] = tile[column];
}

__global__ void wide_kernel(const unsigned *in, unsigned *out, size_t n) {
  __shared__ unsigned long long row[BLOCK];
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  row[threadIdx.x] = i < n ? in[i] : 0u;
  __syncthreads();
  if (i < n) out[i] = (unsigned)(row[0] + threadIdx.x);
}

/* A 16-byte load per lane (8 lanes read a 128-byte row, as the B+ tree's
 * lane groups do): one access of 16 bytes per lane, as the hardware's one
 * vector load. */
__global__ void vector_kernel(const ulonglong2 *in, unsigned *out, size_t n4) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n4) {
    ulonglong2 v = __ldg(in + i);
    out[i] = (unsigned)(v.x + v.y);
  }
}

struct figures {
  unsigned long long load_sectors, store_sectors, load_lines, store_lines, atomics, max_same, launches, syncs, h2d,
      d2h, shared_requests, wavefronts, replays, ptr_queries;
};

static figures measure(void (*body)(void *), void *arg) {
  tdm_emu_meter m;
  tdm_emu_meter_start();
  body(arg);
  tdm_emu_meter_read(&m);
  tdm_emu_meter_stop();
  return figures{m.load_sectors + m.model_read_sectors, m.store_sectors + m.model_write_sectors, m.load_lines,
                 m.store_lines, m.atomics, m.max_same_address_atomics, m.launches, m.host_syncs, m.h2d_bytes,
                 m.d2h_bytes, m.shared_requests, m.shared_wavefronts, m.bank_conflict_replays, m.ptr_queries};
}

struct bufs {
  unsigned *in, *out, *count, *host;
  size_t n;
};
static unsigned grid(size_t n) { return (unsigned)((n + BLOCK - 1) / BLOCK); }

static void run_copy(void *p) {
  bufs *b = (bufs *)p;
  copy_kernel<<<grid(b->n), BLOCK>>>(b->in, b->out, b->n);
}
static void run_strided(void *p) {
  bufs *b = (bufs *)p;
  strided_kernel<<<grid(b->n), BLOCK>>>(b->in, b->out, b->n);
}
static void run_twice(void *p) {
  run_copy(p);
  run_copy(p);
}
static void run_wait(void *p) {
  run_copy(p);
  cudaStreamSynchronize(0);
}
static void run_hot(void *p) {
  bufs *b = (bufs *)p;
  hot_atomic_kernel<<<grid(b->n), BLOCK>>>(b->in, b->count, b->n);
}
static void run_warp(void *p) {
  bufs *b = (bufs *)p;
  warp_atomic_kernel<<<grid(b->n), BLOCK>>>(b->in, b->count, b->n);
}
static void run_match(void *p) {
  bufs *b = (bufs *)p;
  match_atomic_kernel<<<grid(b->n), BLOCK>>>(b->in, b->count, b->n);
}
static void run_staged(void *p) {
  bufs *b = (bufs *)p;
  staged_kernel<<<grid(b->n), BLOCK>>>(b->in, b->out, b->n);
}
static void run_conflict(void *p) {
  bufs *b = (bufs *)p;
  conflict_kernel<<<grid(b->n), BLOCK>>>(b->in, b->out, b->n);
}
static void run_wide(void *p) {
  bufs *b = (bufs *)p;
  wide_kernel<<<grid(b->n), BLOCK>>>(b->in, b->out, b->n);
}
static void run_vector(void *p) {
  bufs *b = (bufs *)p;
  vector_kernel<<<grid(b->n / 4), BLOCK>>>((const ulonglong2 *)b->in, b->out, b->n / 4);
}
static void run_ptr_query(void *p) {
  bufs *b = (bufs *)p;
  cudaPointerAttributes a;
  run_copy(p);
  cudaPointerGetAttributes(&a, b->in);
}
static void run_round_trip(void *p) {
  bufs *b = (bufs *)p;
  cudaMemcpy(b->in, b->host, b->n * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(b->host, b->in, b->n * 4, cudaMemcpyDeviceToHost);
}

static int fails;
static void expect(const char *what, const char *figure, unsigned long long got, unsigned long long want) {
  int ok = got == want;
  fails += !ok;
  printf("%-4s %-12s %-15s predicted %10llu measured %10llu\n", ok ? "ok" : "FAIL", what, figure, want, got);
}

/* Every figure of f is base's, but those the case names. */
static void expect_all(const char *what, figures f, figures want) {
  expect(what, "load sectors", f.load_sectors, want.load_sectors);
  expect(what, "store sectors", f.store_sectors, want.store_sectors);
  expect(what, "load lines", f.load_lines, want.load_lines);
  expect(what, "store lines", f.store_lines, want.store_lines);
  expect(what, "atomics", f.atomics, want.atomics);
  expect(what, "max same addr", f.max_same, want.max_same);
  expect(what, "launches", f.launches, want.launches);
  expect(what, "host syncs", f.syncs, want.syncs);
  expect(what, "h2d bytes", f.h2d, want.h2d);
  expect(what, "d2h bytes", f.d2h, want.d2h);
  expect(what, "shared access", f.shared_requests, want.shared_requests);
  expect(what, "wavefronts", f.wavefronts, want.wavefronts);
  expect(what, "bank replays", f.replays, want.replays);
  expect(what, "ptr queries", f.ptr_queries, want.ptr_queries);
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoull(argv[1], nullptr, 0) : (size_t)1 << 16;
  if (n % 1024) {
    fprintf(stderr, "meter-check: n must be a multiple of 1024\n");
    return 2;
  }
  bufs b;
  b.n = n;
  b.host = (unsigned *)calloc(n, 4);
  if (cudaMalloc((void **)&b.in, n * 4) != cudaSuccess || cudaMalloc((void **)&b.out, n * 4) != cudaSuccess ||
      cudaMalloc((void **)&b.count, 16) != cudaSuccess || !b.host) {
    fprintf(stderr, "meter-check: no device memory\n");
    return 2;
  }
  for (size_t i = 0; i < n; i++) b.host[i] = (unsigned)i;
  cudaMemcpy(b.in, b.host, n * 4, cudaMemcpyHostToDevice);
  cudaMemset(b.count, 0, 4);
  cudaDeviceSynchronize();

  const unsigned long long N = n;
  figures copy = measure(run_copy, &b);
  figures want = {N / 8, N / 8, N / 32, N / 32, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0};
  expect_all("copy", copy, want);

  figures f = measure(run_strided, &b);
  figures w = want;
  w.load_sectors = N; /* +7n/8 */
  w.load_lines = N / 4;
  expect_all("strided", f, w);

  f = measure(run_twice, &b);
  w = want;
  w.load_sectors += N / 8;
  w.store_sectors += N / 8;
  w.load_lines += N / 32;
  w.store_lines += N / 32;
  w.launches += 1;
  expect_all("extra pass", f, w);

  f = measure(run_wait, &b);
  w = want;
  w.syncs += 1;
  expect_all("wait", f, w);

  /* The atomic cases read the input (n/8 sectors) and write nothing plain. */
  f = measure(run_hot, &b);
  w = figures{N / 8, 0, N / 32, 0, N, N, 1, 0, 0, 0, 0, 0, 0, 0};
  expect_all("hot atomic", f, w);
  f = measure(run_warp, &b);
  w = figures{N / 8, 0, N / 32, 0, N / 32, N / 32, 1, 0, 0, 0, 0, 0, 0, 0};
  expect_all("warp atomic", f, w);

  cudaMemset(b.count, 0, 16);
  f = measure(run_match, &b);
  w = figures{N / 8, 0, N / 32, 0, N / 8, N / 32, 1, 0, 0, 0, 0, 0, 0, 0};
  expect_all("match atomic", f, w);
  unsigned per_key[4];
  cudaMemcpy(per_key, b.count, sizeof per_key, cudaMemcpyDeviceToHost);
  for (int k = 0; k < 4; k++) expect("match atomic", "lanes counted for one key", per_key[k], N / 4);

  const unsigned long long warps = N / 32;
  f = measure(run_staged, &b);
  w = want;
  w.shared_requests = w.wavefronts = 5 * warps;
  expect_all("staging", f, w);

  f = measure(run_conflict, &b);
  w = want;
  w.shared_requests = 2 * warps;
  w.wavefronts = 64 * warps;
  w.replays = 62 * warps;
  expect_all("bank conflict", f, w);

  f = measure(run_wide, &b);
  w = want;
  w.shared_requests = 2 * warps;
  w.wavefronts = 3 * warps;
  expect_all("wide rows", f, w);

  /* n / 4 lanes read 16 bytes each (the whole input) and write 4. */
  f = measure(run_vector, &b);
  w = figures{N / 8, N / 32, N / 32, N / 128, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0};
  expect_all("vector loads", f, w);

  f = measure(run_ptr_query, &b);
  w = want;
  w.ptr_queries = 1;
  expect_all("ptr query", f, w);

  f = measure(run_round_trip, &b);
  w = figures{0, 0, 0, 0, 0, 0, 0, 2, 4 * N, 4 * N, 0, 0, 0, 0};
  expect_all("round trip", f, w);

  cudaFree(b.in);
  cudaFree(b.out);
  cudaFree(b.count);
  free(b.host);
  printf("meter-check: %s (n = %zu)\n", fails ? "FAILED" : "every figure as predicted", n);
  return fails ? 1 : 0;
}
