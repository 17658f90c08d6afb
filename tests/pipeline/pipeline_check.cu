// pipeline_check.cu: the GPU-only properties of stream-ordered mode, the
// caller's allocator and views, for bench/device-check.sh (test build only:
// it reads the context's counters through tests/hooks/).
//  1. stream-ordered calls on device arrays make no host wait and, warm, no
//     allocation: sort, sort_pairs, argsort, hash find, B-tree find, rank,
//     range_count; results equal a synchronous context's;
//  2. a sort + find sequence captured into a CUDA graph and replayed gives
//     the same results;
//  3. a simple stream-ordered device pool plugged in as the allocator: every
//     block back with its size, the device's default pool settings untouched;
//  4. two contexts on two streams over one structure, ordered by an event, and
//     a view used in a kernel on the second stream;
//  5. the per-call time of a 2^16-key device-resident find, stream-ordered
//     against synchronous (printed; the issue's target is <= 10 us).
// Exit 0: all passed; 1: a check failed; 77: no usable CUDA device.
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tandem/tandem.h>

#include "../hooks/hooks.h"

static int failures;

#define CHECK(cond, ...)                    \
  do {                                      \
    if (!(cond)) {                          \
      printf("FAIL %s:%d: ", __FILE__, __LINE__); \
      printf(__VA_ARGS__);                  \
      printf("\n");                         \
      failures++;                           \
    }                                       \
  } while (0)
#define TDM(call)                                                                                   \
  do {                                                                                              \
    tdm_status s_ = (call);                                                                         \
    if (s_ != TDM_OK) {                                                                             \
      printf("FAIL %s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call, tdm_status_name(s_), tdm_last_error()); \
      exit(1);                                                                                      \
    }                                                                                               \
  } while (0)
#define CU(call)                                                                                    \
  do {                                                                                              \
    cudaError_t e_ = (call);                                                                        \
    if (e_ != cudaSuccess) {                                                                        \
      printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));           \
      exit(1);                                                                                      \
    }                                                                                               \
  } while (0)

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

static tdm_ctx *make_ctx(cudaStream_t s, unsigned flags, const tdm_allocator *al) {
  tdm_ctx_opts o;
  memset(&o, 0, sizeof o);
  o.backend = TDM_BACKEND_CUDA;
  o.cuda_stream = s;
  o.flags = flags;
  o.allocator = al;
  tdm_ctx *c = NULL;
  TDM(tdm_ctx_create(&o, &c));
  return c;
}

enum { N = 1 << 20, Q = 1 << 16 };

// Inputs on the device, and one result area for every read-only operation.
typedef struct world {
  uint64_t *d_keys, *d_vals, *d_q, *d_hi;
  uint64_t *d_res;   // sorted keys | their values | argsort | hash vals | btree vals | rank | range_count
  uint8_t *d_found;  // hash found | btree found
  size_t res_words;
} world;

static void *dev(size_t bytes) {
  void *p;
  CU(cudaMalloc(&p, bytes));
  return p;
}

static void world_init(world *w, uint64_t **h_keys, uint64_t **h_vals) {
  uint64_t *k = (uint64_t *)malloc(N * 8), *v = (uint64_t *)malloc(N * 8);
  uint64_t *q = (uint64_t *)malloc(Q * 8), *hi = (uint64_t *)malloc(Q * 8);
  for (size_t i = 0; i < N; i++) {
    k[i] = mix(i + 1);
    v[i] = i;
  }
  for (size_t i = 0; i < Q; i++) {
    q[i] = i % 2 ? k[mix(i) % N] : mix(i + 77777777);
    hi[i] = q[i] + (1ull << 50);
    if (hi[i] < q[i]) hi[i] = ~0ull;
  }
  w->res_words = 3 * (size_t)N + 4 * (size_t)Q;
  w->d_keys = (uint64_t *)dev(N * 8);
  w->d_vals = (uint64_t *)dev(N * 8);
  w->d_q = (uint64_t *)dev(Q * 8);
  w->d_hi = (uint64_t *)dev(Q * 8);
  w->d_res = (uint64_t *)dev(w->res_words * 8);
  w->d_found = (uint8_t *)dev(2 * Q);
  CU(cudaMemcpy(w->d_keys, k, N * 8, cudaMemcpyHostToDevice));
  CU(cudaMemcpy(w->d_vals, v, N * 8, cudaMemcpyHostToDevice));
  CU(cudaMemcpy(w->d_q, q, Q * 8, cudaMemcpyHostToDevice));
  CU(cudaMemcpy(w->d_hi, hi, Q * 8, cudaMemcpyHostToDevice));
  free(q);
  free(hi);
  *h_keys = k;
  *h_vals = v;
}

// Queues every read-only operation on device arrays (plus the copies a sort
// in place needs) on ctx's stream s.
static void run_all(tdm_ctx *c, cudaStream_t s, const tdm_hash *h, const tdm_btree *t, const world *w) {
  uint64_t *r = w->d_res;
  CU(cudaMemcpyAsync(r, w->d_keys, N * 8, cudaMemcpyDeviceToDevice, s));
  CU(cudaMemcpyAsync(r + N, w->d_vals, N * 8, cudaMemcpyDeviceToDevice, s));
  TDM(tdm_sort_pairs(c, TDM_U64, r, TDM_U64, r + N, N, 0));
  TDM(tdm_sort(c, TDM_U64, r, N, TDM_SORT_DESCENDING));
  TDM(tdm_argsort(c, TDM_U64, w->d_keys, TDM_U64, r + 2 * (size_t)N, N, 0));
  r += 3 * (size_t)N;
  TDM(tdm_hash_find(h, w->d_q, r, w->d_found, Q));
  TDM(tdm_btree_find(t, w->d_q, r + Q, w->d_found + Q, Q));
  TDM(tdm_btree_rank(t, w->d_q, r + 2 * Q, Q));
  TDM(tdm_btree_range_count(t, w->d_q, w->d_hi, r + 3 * Q, Q));
}

static void results(const world *w, uint64_t *res, uint8_t *found) {
  CU(cudaDeviceSynchronize());
  CU(cudaMemcpy(res, w->d_res, w->res_words * 8, cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(found, w->d_found, 2 * Q, cudaMemcpyDeviceToHost));
}

// ---- a simple stream-ordered device pool -----------------------------------

typedef struct dev_pool {
  cudaMemPool_t pool;
  long allocs, frees, bad;
  size_t live_bytes;
} dev_pool;

static void *pool_alloc(void *user, size_t bytes, int device, void *stream) {
  dev_pool *p = (dev_pool *)user;
  void *ptr = NULL;
  if (device < 0) {  // host memory: plain aligned heap
    if (posix_memalign(&ptr, 64, bytes) != 0) return NULL;
  } else if (cudaMallocFromPoolAsync(&ptr, bytes, p->pool, (cudaStream_t)stream) != cudaSuccess) {
    (void)cudaGetLastError();
    return NULL;
  }
  p->allocs++;
  p->live_bytes += bytes;
  return ptr;
}

static void pool_free(void *user, void *ptr, size_t bytes, int device, void *stream) {
  dev_pool *p = (dev_pool *)user;
  if (bytes > p->live_bytes) p->bad++;
  p->live_bytes -= bytes;
  p->frees++;
  if (device < 0) free(ptr);
  else if (cudaFreeAsync(ptr, (cudaStream_t)stream) != cudaSuccess) p->bad++;
}

__global__ void view_kernel(tdm_hash_view v, const uint64_t *q, size_t n, unsigned long long *hits) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n && tdm_hash_view_find(v, q[i], NULL)) atomicAdd(hits, 1ull);
}

int main(void) {
  if (tdm_cuda_device_count() == 0) {
    printf("pipeline_check: SKIP: no usable CUDA device\n");
    return 77;
  }
  world w;
  uint64_t *h_keys, *h_vals;
  world_init(&w, &h_keys, &h_vals);
  uint64_t *ref = (uint64_t *)malloc(w.res_words * 8), *got = (uint64_t *)malloc(w.res_words * 8);
  uint8_t *ref_f = (uint8_t *)malloc(2 * Q), *got_f = (uint8_t *)malloc(2 * Q);
  cudaStream_t s1, s2;
  CU(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  tdm_hash_opts ho = {TDM_U64, TDM_U64, N, 0, 0, TDM_DUP_KEEP_LAST};
  tdm_btree_opts bo = {TDM_U64, TDM_U64, TDM_DUP_KEEP_LAST};

  // Reference: a synchronous context.
  tdm_ctx *sync_ctx = make_ctx(s1, 0, NULL);
  tdm_hash *h = NULL;
  tdm_btree *t = NULL;
  TDM(tdm_hash_create(sync_ctx, &ho, &h));
  TDM(tdm_hash_insert(h, h_keys, h_vals, N));
  TDM(tdm_btree_build(sync_ctx, &bo, h_keys, h_vals, N, &t));
  run_all(sync_ctx, s1, h, t, &w);
  results(&w, ref, ref_f);
  tdm_hash_destroy(h);
  tdm_btree_destroy(t);
  tdm_ctx_destroy(sync_ctx);

  // 1. Stream-ordered: no waits, and warm, no allocations.
  tdm_ctx *so = make_ctx(s1, TDM_CTX_STREAM_ORDERED, NULL);
  TDM(tdm_hash_create(so, &ho, &h));
  TDM(tdm_hash_insert(h, h_keys, h_vals, N));
  TDM(tdm_btree_build(so, &bo, h_keys, h_vals, N, &t));
  run_all(so, s1, h, t, &w);  // warm-up
  TDM(tdm_ctx_sync(so));
  long a0, w0, a1, w1;
  tdm_test_ctx_counters(so, &a0, &w0);
  run_all(so, s1, h, t, &w);
  tdm_test_ctx_counters(so, &a1, &w1);
  printf("stream-ordered sort, sort_pairs, argsort, hash find, btree find, rank, range_count: %ld host waits, "
         "%ld allocations\n", w1 - w0, a1 - a0);
  CHECK(w1 == w0, "stream-ordered calls on device arrays waited %ld times", w1 - w0);
  CHECK(a1 == a0, "warm stream-ordered calls allocated %ld times", a1 - a0);
  TDM(tdm_ctx_sync(so));
  results(&w, got, got_f);
  CHECK(memcmp(ref, got, w.res_words * 8) == 0 && memcmp(ref_f, got_f, 2 * Q) == 0,
        "stream-ordered results differ from the synchronous ones");

  // 2. CUDA graph capture of a sort + find sequence.
  CU(cudaMemsetAsync(w.d_res, 0, w.res_words * 8, s1));
  CU(cudaStreamSynchronize(s1));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CU(cudaStreamBeginCapture(s1, cudaStreamCaptureModeThreadLocal));
  CU(cudaMemcpyAsync(w.d_res, w.d_keys, N * 8, cudaMemcpyDeviceToDevice, s1));
  tdm_status cs = tdm_sort(so, TDM_U64, w.d_res, N, TDM_SORT_DESCENDING);
  tdm_status cf = tdm_hash_find(h, w.d_q, w.d_res + 3 * (size_t)N, w.d_found, Q);
  CU(cudaStreamEndCapture(s1, &graph));
  CHECK(cs == TDM_OK && cf == TDM_OK, "calls during capture: %s / %s: %s", tdm_status_name(cs), tdm_status_name(cf),
        tdm_last_error());
  if (cs == TDM_OK && cf == TDM_OK) {
    CU(cudaGraphInstantiate(&exec, graph, 0));
    CU(cudaGraphLaunch(exec, s1));
    CU(cudaGraphLaunch(exec, s1));
    CU(cudaStreamSynchronize(s1));
    results(&w, got, got_f);
    CHECK(memcmp(ref, got, N * 8) == 0, "graph replay: sorted keys differ");
    CHECK(memcmp(ref + 3 * (size_t)N, got + 3 * (size_t)N, Q * 8) == 0 && memcmp(ref_f, got_f, Q) == 0,
          "graph replay: find results differ");
    CU(cudaGraphExecDestroy(exec));
    printf("CUDA graph capture of sort + find: replayed\n");
  }
  CU(cudaGraphDestroy(graph));

  // 5. Per-call time of a 2^16-key device-resident find.
  for (int mode = 0; mode < 2; mode++) {
    tdm_ctx *c = mode ? so : make_ctx(s2, 0, NULL);
    tdm_hash *hh = h;
    if (!mode) {
      TDM(tdm_hash_create(c, &ho, &hh));
      TDM(tdm_hash_insert(hh, h_keys, h_vals, N));
    }
    const int reps = 2000;
    TDM(tdm_hash_find(hh, w.d_q, w.d_res, w.d_found, Q));
    TDM(tdm_ctx_sync(c));
    double t0 = now_us();
    for (int r = 0; r < reps; r++) TDM(tdm_hash_find(hh, w.d_q, w.d_res, w.d_found, Q));
    TDM(tdm_ctx_sync(c));
    double per = (now_us() - t0) / reps;
    printf("find of 2^16 device keys, %s: %.2f us per call\n", mode ? "stream-ordered" : "synchronous", per);
    if (!mode) {
      tdm_hash_destroy(hh);
      tdm_ctx_destroy(c);
    }
  }

  // 4. A second context on another stream, ordered by an event after a
  //    mutation on the first; a view used in a kernel on the second stream.
  {
    tdm_ctx *c2 = make_ctx(s2, TDM_CTX_STREAM_ORDERED, NULL);
    uint64_t *sorted2 = (uint64_t *)dev(N * 8);
    unsigned long long *d_hits, hits = 0;
    cudaEvent_t ev;
    CU(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CU(cudaMalloc(&d_hits, 8));
    TDM(tdm_hash_clear(h));  // a mutation on s1 ...
    TDM(tdm_hash_insert(h, h_keys, h_vals, N / 2));
    CU(cudaEventRecord(ev, s1));
    CU(cudaStreamWaitEvent(s2, ev, 0));  // ... that s2's work is ordered after
    tdm_hash_view v;
    TDM(tdm_hash_view_get(h, &v));
    CU(cudaMemsetAsync(d_hits, 0, 8, s2));
    view_kernel<<<(Q + 255) / 256, 256, 0, s2>>>(v, w.d_q, Q, d_hits);
    CU(cudaMemcpyAsync(sorted2, w.d_keys, N * 8, cudaMemcpyDeviceToDevice, s2));
    TDM(tdm_sort(c2, TDM_U64, sorted2, N, TDM_SORT_DESCENDING));  // concurrent with s1's work
    TDM(tdm_hash_find(h, w.d_q, w.d_res + 3 * (size_t)N, w.d_found, Q));  // on s1
    CU(cudaMemcpyAsync(&hits, d_hits, 8, cudaMemcpyDeviceToHost, s2));
    TDM(tdm_ctx_sync(c2));
    TDM(tdm_ctx_sync(so));
    results(&w, got, got_f);
    unsigned long long expect = 0;
    for (size_t i = 0; i < Q; i++) expect += got_f[i];
    CHECK(hits == expect, "view on a second stream: %llu hits, bulk find %llu", hits, expect);
    CU(cudaMemcpy(got, sorted2, N * 8, cudaMemcpyDeviceToHost));
    CHECK(memcmp(got, ref, N * 8) == 0, "sort on the second context differs");
    printf("two contexts on two streams over one table: %llu view hits = bulk find\n", hits);
    cudaFree(sorted2);
    cudaFree(d_hits);
    cudaEventDestroy(ev);
    tdm_ctx_destroy(c2);
  }
  tdm_hash_destroy(h);
  tdm_btree_destroy(t);
  tdm_ctx_destroy(so);

  // 3. A stream-ordered device pool as the allocator; the default pool's
  //    release threshold stays as it was.
  {
    dev_pool p;
    memset(&p, 0, sizeof p);
    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    CU(cudaMemPoolCreate(&p.pool, &props));
    cudaMemPool_t def;
    unsigned long long th0 = 0, th1 = 0;
    CU(cudaDeviceGetDefaultMemPool(&def, 0));
    CU(cudaMemPoolGetAttribute(def, cudaMemPoolAttrReleaseThreshold, &th0));
    tdm_allocator al = {pool_alloc, pool_free, &p};
    tdm_ctx *c = make_ctx(s1, TDM_CTX_STREAM_ORDERED, &al);
    TDM(tdm_hash_create(c, &ho, &h));
    TDM(tdm_hash_insert(h, h_keys, h_vals, N));
    TDM(tdm_btree_build(c, &bo, h_keys, h_vals, N, &t));
    run_all(c, s1, h, t, &w);
    TDM(tdm_ctx_sync(c));
    long before = p.allocs;
    run_all(c, s1, h, t, &w);
    TDM(tdm_ctx_sync(c));
    CHECK(p.allocs == before, "warm calls asked the device pool %ld times", p.allocs - before);
    results(&w, got, got_f);
    CHECK(memcmp(ref, got, w.res_words * 8) == 0, "results with the device pool differ");
    tdm_hash_destroy(h);
    tdm_btree_destroy(t);
    tdm_ctx_destroy(c);
    CU(cudaDeviceSynchronize());
    CHECK(p.allocs == p.frees && p.live_bytes == 0 && p.bad == 0,
          "device pool: %ld allocations, %ld frees, %zu bytes live, %ld bad frees", p.allocs, p.frees, p.live_bytes,
          p.bad);
    CU(cudaMemPoolGetAttribute(def, cudaMemPoolAttrReleaseThreshold, &th1));
    CHECK(th0 == th1, "the default pool's release threshold changed: %llu -> %llu", th0, th1);
    printf("stream-ordered device pool as the allocator: %ld blocks, all returned with their sizes\n", p.allocs);
    CU(cudaMemPoolDestroy(p.pool));
  }
  printf("pipeline_check: %s (%d failed checks)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
