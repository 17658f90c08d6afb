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
//     against synchronous (printed; the issue's target is <= 10 us);
//  6. fixed-capacity hash inserts on device arrays: no host wait while the
//     batch certainly fits, exactly one when it might not, the exact size
//     afterwards, TDM_ERR_CAPACITY without a wait, and a queued insert's
//     "no free slot" reported by the next call that reads the counts;
//  7. a device fault queued after a stream-ordered insert: tdm_ctx_sync
//     returns TDM_ERR_DEVICE with the CUDA error text, tdm_hash_size the
//     upper bound, the next call that reads the counts the error (in a child
//     forked before this process touches CUDA, since the fault is sticky);
//  8. a sort captured on a cold context replays more than once (its blocks
//     are allocated and freed inside the graph, none parked), a waiting call
//     refuses during a capture and leaves it valid, and a launch error the
//     caller left pending is reported as such, with the caller's keys
//     untouched.
// bench/device-check.sh and ctest run it once per GPU design. Usage:
//   tandem-pipeline-check [--reps N] [--keys K]   (N timed calls in 5, default
//   2000; the emulated device passes a few, since 5 only prints a time; K keys
//   in the structures and sorts, default 2^20, at least 2^16: the sanitized
//   emulated run passes 2^18)
// Exit 0: all passed; 1: a check failed; 77: no usable CUDA device.
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tandem/tandem.h>

#include "../hooks/hooks.h"

static int failures;
static int timed_reps = 2000; // --reps

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

enum { Q = 1 << 16 };
static size_t N = 1 << 20;  // --keys: the emulated device under ASan takes fewer

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

// ---- 6. fixed-capacity inserts without a host wait --------------------------

static long waits_of(const tdm_ctx *c) {
  long wt;
  tdm_test_ctx_counters(c, NULL, &wt);
  return wt;
}

// so: a stream-ordered context on stream s; w->d_keys holds distinct keys,
// w->d_vals[i] = i.
static void check_fixed_insert(tdm_ctx *so, cudaStream_t s, const world *w) {
  // Capacity 2^16 at max_load 0.5: 2^17 slots and a limit of exactly 2^16.
  enum { C = 1 << 16 };
  tdm_hash_opts fo = {TDM_U64, TDM_U64, C, 0.5, 1, TDM_DUP_KEEP_LAST};
  tdm_hash *h = NULL;
  long w0, w1;
  TDM(tdm_hash_create(so, &fo, &h));
  w0 = waits_of(so);
  TDM(tdm_hash_insert(h, w->d_keys, w->d_vals, C / 2));  // bound 0 + 2^15: fits
  TDM(tdm_hash_insert(h, w->d_keys, w->d_vals, C / 2));  // the same keys; bound 2^15 + 2^15 = limit: fits
  w1 = waits_of(so);
  printf("fixed-capacity inserts that certainly fit: %ld host waits\n", w1 - w0);
  CHECK(w1 == w0, "fixed-capacity inserts that certainly fit waited %ld times", w1 - w0);
  // Bound 2^16 + 2^14 > limit: one wait reads the counts (2^15 keys), and
  // 2^15 + 2^14 fits exactly.
  TDM(tdm_hash_insert(h, w->d_keys + C / 2, w->d_vals + C / 2, C / 4));
  w0 = waits_of(so);
  printf("fixed-capacity insert that might not fit: %ld host waits\n", w0 - w1);
  CHECK(w0 - w1 == 1, "a fixed-capacity insert that might not fit waited %ld times, not once", w0 - w1);
  size_t size = tdm_hash_size(h);
  CHECK(size == 3 * (size_t)C / 4, "size after queued fixed-capacity inserts: %zu, expected %zu", size,
        3 * (size_t)C / 4);
  CHECK(waits_of(so) - w0 == 1, "tdm_hash_size after a queued insert waited %ld times, not once",
        waits_of(so) - w0);
  // Nothing pending, and 3/4 C + C/2 > limit even exactly: refused at once.
  w0 = waits_of(so);
  tdm_status st = tdm_hash_insert(h, w->d_keys + C, w->d_vals + C, C / 2);
  CHECK(st == TDM_ERR_CAPACITY, "a batch past the limit: %s, expected TDM_ERR_CAPACITY", tdm_status_name(st));
  CHECK(waits_of(so) == w0, "the capacity refusal with nothing pending waited %ld times", waits_of(so) - w0);
  CHECK(tdm_hash_size(h) == 3 * (size_t)C / 4, "size after the refused batch: %zu", tdm_hash_size(h));
  // Contents: every inserted key with its value (KEEP_LAST of equal values).
  {
    size_t n = 3 * (size_t)C / 4, bad = 0;
    uint64_t *vals = (uint64_t *)malloc(n * 8);
    uint8_t *found = (uint8_t *)malloc(n);
    TDM(tdm_hash_find(h, w->d_keys, w->d_res, w->d_found, n));
    TDM(tdm_ctx_sync(so));
    CU(cudaMemcpy(vals, w->d_res, n * 8, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(found, w->d_found, n, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) bad += !found[i] || vals[i] != i;
    CHECK(bad == 0, "%zu of %zu keys of queued fixed-capacity inserts missing or with a wrong value", bad, n);
    free(vals);
    free(found);
  }
  TDM(tdm_hash_validate(h));
  tdm_hash_destroy(h);

  // A "no free slot" in a queued insert: every table slot holds some other
  // key (a corrupt table, made through the view on the table's stream). The
  // insert queues; the next call that reads the counts reports it.
  tdm_hash_opts co = {TDM_U64, TDM_U64, 8, 0.5, 1, TDM_DUP_KEEP_LAST};
  tdm_hash_view v;
  uint64_t first;
  TDM(tdm_hash_create(so, &co, &h));
  TDM(tdm_hash_view_get(h, &v));
  CU(cudaMemcpy(&first, w->d_keys, 8, cudaMemcpyDeviceToHost));
  CHECK(first != 0x1111111111111111ull, "the first test key is the fill pattern");
  CU(cudaMemsetAsync((void *)v.slots, 0x11, ((size_t)1 << v.log2cap) * 16, s));
  w0 = waits_of(so);
  TDM(tdm_hash_insert(h, w->d_keys, w->d_vals, 1));
  CHECK(waits_of(so) == w0, "an insert into a full (corrupt) fixed table waited before returning");
  st = tdm_hash_validate(h);
  CHECK(st == TDM_ERR_CORRUPT && strstr(tdm_last_error(), "no free slot"),
        "deferred no-free-slot: %s: %s, expected TDM_ERR_CORRUPT naming it", tdm_status_name(st), tdm_last_error());
  printf("queued insert into a full table: %s from the next call that reads the counts\n", tdm_status_name(st));
  tdm_hash_destroy(h);
  TDM(tdm_ctx_sync(so));
}

// ---- 7. a deferred device fault (child process) -------------------------------

__global__ void fault_kernel(volatile unsigned *p) { *p = 1u; }

// Runs in a child that has not touched CUDA before; its exit status is its
// verdict (0 passed, 1 failed, 77 no device).
static int fault_child(void) {
  enum { M = 256 };
  if (tdm_cuda_device_count() == 0) return 77;
  cudaStream_t s;
  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  tdm_ctx *c = make_ctx(s, TDM_CTX_STREAM_ORDERED, NULL);
  tdm_hash_opts fo = {TDM_U64, TDM_U64, 4 * M, 0, 1, TDM_DUP_KEEP_LAST};
  tdm_hash *h = NULL;
  uint64_t host[2 * M], *d;
  for (size_t i = 0; i < M; i++) {
    host[i] = mix(i + 1);
    host[M + i] = i;
  }
  CU(cudaMalloc(&d, sizeof host));
  CU(cudaMemcpy(d, host, sizeof host, cudaMemcpyHostToDevice));
  TDM(tdm_hash_create(c, &fo, &h));
  long w0 = waits_of(c);
  TDM(tdm_hash_insert(h, d, d + M, M));  // queued, counts on the device
  CHECK(waits_of(c) == w0, "the queued insert waited");
  fault_kernel<<<1, 1, 0, s>>>((volatile unsigned *)(uintptr_t)16u);  // an illegal address
  CU(cudaGetLastError());                                              // the launch itself is fine
  tdm_status st = tdm_ctx_sync(c);
  cudaError_t e = cudaStreamQuery(s);  // the sticky error, as CUDA names it
  CHECK(st == TDM_ERR_DEVICE, "tdm_ctx_sync after a fault: %s, expected TDM_ERR_DEVICE", tdm_status_name(st));
  CHECK(e != cudaSuccess && strstr(tdm_last_error(), cudaGetErrorString(e)),
        "tdm_last_error '%s' lacks the CUDA text '%s'", tdm_last_error(), cudaGetErrorString(e));
  printf("deferred device fault: tdm_ctx_sync %s: %s\n", tdm_status_name(st), tdm_last_error());
  size_t size = tdm_hash_size(h);
  CHECK(size == M, "tdm_hash_size with unreadable counts: %zu, expected the upper bound %d", size, (int)M);
  st = tdm_hash_validate(h);
  CHECK(st == TDM_ERR_DEVICE, "the next call that reads the counts: %s, expected TDM_ERR_DEVICE",
        tdm_status_name(st));
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
  return failures ? 1 : 0;
}

static int run_fault_child(void) {
  int status = 0;
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    printf("FAIL: fork: cannot run the deferred-fault check\n");
    return 1;
  }
  if (pid == 0) {
    int rc = fault_child();
    fflush(stdout);
    _exit(rc);
  }
  if (waitpid(pid, &status, 0) != pid) return 1;
  if (WIFSIGNALED(status)) {
    printf("FAIL: the deferred-fault child died of signal %d\n", WTERMSIG(status));
    return 1;
  }
  return WEXITSTATUS(status);
}

// A kernel launched with an invalid shape: it leaves a pending launch error.
__global__ void never_runs(int *p) {
  if (p) *p = 1;
}

// 8. CUDA graphs and pending errors.
//  - A cold stream-ordered context (nothing parked) captures a sort: every
//    block it takes is allocated and freed inside the graph, so the graph
//    replays more than once (a graph holding an allocation it never frees
//    cannot be launched again) and the context's cache keeps nothing of it.
//  - A call that waits refuses during a capture, with a message saying so,
//    and the capture stays valid: a sort on a context that is not
//    stream-ordered, and a data operation (tdm_unique, which waits in every
//    mode: it writes a count to host memory, ops.h) on a stream-ordered one,
//    which then runs normally once the capture has ended.
//  - A launch error the caller left pending is reported as such by the next
//    call, which touches nothing; the call after it runs.
static void check_graphs_and_pending(const world *w, const uint64_t *ref, uint64_t *got) {
  cudaStream_t s;
  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  uint64_t *d = (uint64_t *)dev(N * 8);
  {
    tdm_ctx *cold = make_ctx(s, TDM_CTX_STREAM_ORDERED, NULL);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CU(cudaMemcpyAsync(d, w->d_keys, N * 8, cudaMemcpyDeviceToDevice, s));
    tdm_status cs = tdm_sort(cold, TDM_U64, d, N, TDM_SORT_DESCENDING);
    CU(cudaStreamEndCapture(s, &graph));
    CHECK(cs == TDM_OK, "sort captured on a cold context: %s: %s", tdm_status_name(cs), tdm_last_error());
    CU(cudaGraphInstantiate(&exec, graph, 0));
    for (int r = 0; r < 3; r++) {
      cudaError_t e = cudaGraphLaunch(exec, s);
      CHECK(e == cudaSuccess, "replay %d of a graph captured on a cold context: %s", r, cudaGetErrorString(e));
    }
    CU(cudaStreamSynchronize(s));
    CU(cudaMemcpy(got, d, N * 8, cudaMemcpyDeviceToHost));
    CHECK(memcmp(got, ref, N * 8) == 0, "graph captured on a cold context: sorted keys differ");
    CU(cudaGraphExecDestroy(exec));
    CU(cudaGraphDestroy(graph));
    // The graph's memory is gone; the context must not hand any of it out.
    CU(cudaMemcpyAsync(d, w->d_keys, N * 8, cudaMemcpyDeviceToDevice, s));
    TDM(tdm_sort(cold, TDM_U64, d, N, TDM_SORT_DESCENDING));
    TDM(tdm_ctx_sync(cold));
    CU(cudaMemcpy(got, d, N * 8, cudaMemcpyDeviceToHost));
    CHECK(memcmp(got, ref, N * 8) == 0, "sort after a capture on a cold context differs");
    tdm_ctx_destroy(cold);
    printf("CUDA graph captured on a cold context: replayed 3 times, nothing of it kept\n");
  }
  {
    tdm_ctx *waits = make_ctx(s, 0, NULL);  // not stream-ordered: every call waits
    cudaGraph_t graph;
    CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    tdm_status cs = tdm_sort(waits, TDM_U64, d, N, 0);
    cudaError_t e = cudaStreamEndCapture(s, &graph);
    CHECK(cs == TDM_ERR_INVALID_ARGUMENT && strstr(tdm_last_error(), "captured"),
          "a waiting call during a capture: %s: %s, expected TDM_ERR_INVALID_ARGUMENT naming the capture",
          tdm_status_name(cs), tdm_last_error());
    CHECK(e == cudaSuccess, "the capture was invalidated by the refused call: %s", cudaGetErrorString(e));
    if (e == cudaSuccess) CU(cudaGraphDestroy(graph));
    (void)cudaGetLastError();
    printf("a waiting call during a capture: refused: %s\n", tdm_last_error());
    tdm_ctx_destroy(waits);
  }
  {
    tdm_ctx *so = make_ctx(s, TDM_CTX_STREAM_ORDERED, NULL);
    cudaGraph_t graph;
    size_t nu = 12345, nu_after = 0;
    uint64_t *u = (uint64_t *)dev(N * 8);
    CU(cudaMemcpy(d, w->d_keys, N * 8, cudaMemcpyDeviceToDevice));
    CU(cudaMemset(u, 0xab, N * 8));
    CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    tdm_status cs = tdm_unique(so, TDM_U64, d, N, 0, u, NULL, NULL, NULL, &nu);
    cudaError_t e = cudaStreamEndCapture(s, &graph);
    CHECK(cs == TDM_ERR_INVALID_ARGUMENT && strstr(tdm_last_error(), "captured"),
          "tdm_unique during a capture: %s: %s, expected TDM_ERR_INVALID_ARGUMENT naming the capture",
          tdm_status_name(cs), tdm_last_error());
    CHECK(e == cudaSuccess, "the capture was invalidated by the refused tdm_unique: %s", cudaGetErrorString(e));
    if (e == cudaSuccess) CU(cudaGraphDestroy(graph));
    (void)cudaGetLastError();
    CHECK(nu == 12345, "the refused tdm_unique wrote its count");
    uint64_t *head = (uint64_t *)malloc(8);
    CU(cudaMemcpy(head, u, 8, cudaMemcpyDeviceToHost));
    CHECK(*head == 0xababababababababull, "the refused tdm_unique wrote its output");
    free(head);
    printf("a data operation during a capture: refused: %s\n", tdm_last_error());
    // After the capture the same call runs: the distinct keys of the
    // sorted reference are its values without repeats.
    TDM(tdm_unique(so, TDM_U64, d, N, 0, u, NULL, NULL, NULL, &nu_after));
    size_t want = 0;
    for (size_t i = 0; i < N; i++) want += i == 0 || ref[i] != ref[i - 1];
    CHECK(nu_after == want, "tdm_unique after the capture: %zu distinct keys, expected %zu", nu_after, want);
    CU(cudaFree(u));
    tdm_ctx_destroy(so);
  }
  {
    tdm_ctx *so = make_ctx(s, TDM_CTX_STREAM_ORDERED, NULL);
    CU(cudaMemcpy(d, w->d_keys, N * 8, cudaMemcpyDeviceToDevice));
    never_runs<<<1, 4096, 0, s>>>(NULL);  // more threads than a block can have
    tdm_status st = tdm_sort(so, TDM_I64, d, N, TDM_SORT_DESCENDING);
    CHECK(st == TDM_ERR_DEVICE && strstr(tdm_last_error(), "already pending"),
          "sort after the caller's failed launch: %s: %s, expected TDM_ERR_DEVICE saying the error predates it",
          tdm_status_name(st), tdm_last_error());
    CU(cudaStreamSynchronize(s));
    CU(cudaMemcpy(got, d, N * 8, cudaMemcpyDeviceToHost));
    uint64_t *orig = (uint64_t *)malloc(N * 8);
    CU(cudaMemcpy(orig, w->d_keys, N * 8, cudaMemcpyDeviceToHost));
    CHECK(memcmp(got, orig, N * 8) == 0, "the refused sort changed the caller's keys");
    free(orig);
    printf("a launch error left pending by the caller: %s\n", tdm_last_error());
    CU(cudaMemcpy(d, w->d_keys, N * 8, cudaMemcpyDeviceToDevice));
    TDM(tdm_sort(so, TDM_U64, d, N, TDM_SORT_DESCENDING));
    TDM(tdm_ctx_sync(so));
    CU(cudaMemcpy(got, d, N * 8, cudaMemcpyDeviceToHost));
    CHECK(memcmp(got, ref, N * 8) == 0, "the sort after the reported pending error differs");
    tdm_ctx_destroy(so);
  }
  CU(cudaFree(d));
  CU(cudaStreamDestroy(s));
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    char *end = NULL;
    int reps = !strcmp(argv[i], "--reps"), keys = !strcmp(argv[i], "--keys");
    long r = i + 1 < argc && (reps || keys) ? strtol(argv[i + 1], &end, 10) : 0;
    if (!end || *end || (reps && (r < 1 || r > 1000000)) || (keys && (r < Q || r > (1L << 26)))) {
      fprintf(stderr, "usage: %s [--reps N] [--keys K]   (N from 1 to 1000000, K from 2^16 to 2^26)\n", argv[0]);
      return 2;
    }
    if (reps) timed_reps = (int)r;
    else N = (size_t)r;
    i++;
  }
  // 7 first: the fault poisons the CUDA context of its process, and a child
  // forked after the parent initialised CUDA could not use CUDA at all.
  int fault_rc = run_fault_child();
  if (fault_rc != 0 && fault_rc != 77) {
    printf("FAIL: the deferred device fault check failed (exit %d)\n", fault_rc);
    failures++;
  }
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

  // 6. Fixed-capacity inserts on device arrays.
  check_fixed_insert(so, s1, &w);

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

  // 8. Graphs captured on a cold context, waiting calls in a capture,
  //    pending launch errors.
  check_graphs_and_pending(&w, ref, got);

  // 5. Per-call time of a 2^16-key device-resident find.
  for (int mode = 0; mode < 2; mode++) {
    tdm_ctx *c = mode ? so : make_ctx(s2, 0, NULL);
    tdm_hash *hh = h;
    if (!mode) {
      TDM(tdm_hash_create(c, &ho, &hh));
      TDM(tdm_hash_insert(hh, h_keys, h_vals, N));
    }
    const int reps = timed_reps;
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
