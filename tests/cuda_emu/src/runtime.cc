/*
 * runtime.cc: the CUDA runtime functions tandem and its tests call, for the
 * emulated device, with CUDA's host-visible semantics and as late as CUDA
 * allows: every stream is a queue that runs only when something forces it
 * (a host wait, an event dependency, the legacy default stream's implicit
 * order, cudaFree, a synchronous copy), so a result read before its sync is
 * stale. Also: events, stream-ordered allocation and pools, stream capture
 * and graph replay, sticky and non-sticky errors, two devices, the
 * allocation table every copy, memset, kernel argument and CUB range is
 * checked against, fault injection (TANDEM_EMU_FAIL), and the two driver
 * calls src/devptr.c makes (this library is the process's libcuda.so.1).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "emu_internal.h"
#include "emu_tsan.h"

#define API extern "C" __attribute__((visibility("default")))

namespace tdm_emu {

namespace {

const int NDEV = 2;
std::recursive_mutex mu;
/* Every runtime call holds mu. For TSan the lock orders nothing (CUDA's
 * runtime promises no edge between host threads) and the call's own
 * bookkeeping is not seen (emu_tsan.h); the device work it runs is (force). */
thread_local int host_quiet; /* nesting of host_lock on this thread */
struct host_lock {
  host_lock() {
    tsan::sync_ignore_begin();
    mu.lock();
    tsan::sync_ignore_end();
    tsan::ignore_begin();
    host_quiet++;
  }
  ~host_lock() {
    host_quiet--;
    tsan::ignore_end();
    tsan::sync_ignore_begin();
    mu.unlock();
    tsan::sync_ignore_end();
  }
};
#define LOCK host_lock lk_

uint64_t g_seed, g_rng;
bool g_init;
cudaError_t sticky[NDEV];
thread_local cudaError_t last_error = cudaSuccess;
thread_local int cur_dev = 0;
size_t mem_limit, mem_used;

struct graph;
struct op {
  std::string what;
  std::function<void()> fn;
  std::vector<std::shared_ptr<op>> deps;
  bool done = false;
  int device = 0;
};
typedef std::shared_ptr<op> op_p;

struct pool_rec;
}  // namespace
}  // namespace tdm_emu

struct CUstream_st {
  int device;
  unsigned flags;
  bool legacy;
  tdm_emu::op_p last;
  tdm_emu::graph *capture = nullptr;
  bool capture_invalid = false;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
};
struct CUevent_st {
  int device;
  unsigned flags;
  tdm_emu::op_p marker;
  double t = 0;
  tdm_emu::graph *captured = nullptr;
};
struct CUmemPoolHandle_st {
  int device;
  bool is_default;
  uint64_t threshold = 0, used = 0, used_high = 0;
};

namespace tdm_emu {
namespace {

struct graph {
  std::vector<std::pair<std::string, std::function<void()>>> nodes;
  CUstream_st *origin = nullptr;
};
struct graph_exec {
  std::vector<std::pair<std::string, std::function<void()>>> nodes;
};

enum akind { A_DEVICE, A_MANAGED, A_PINNED };
struct alloc_rec {
  uintptr_t base;
  size_t size;
  int device;
  akind kind;
  bool live;
  CUmemPoolHandle_st *pool;
};
std::map<uintptr_t, alloc_rec> table;
std::vector<CUstream_st *> streams;
CUstream_st *legacy_streams[NDEV];
CUmemPoolHandle_st *default_pools[NDEV];
double clock_ms;

/* ---- fault injection ---------------------------------------------------- */
struct fail_rule {
  std::string kind;
  long k;
};
std::vector<fail_rule> rules;
std::map<std::string, long> counts;
bool report_counts;
long fault_k, fault_seen; /* tdm_emu_fault_nth: the fault_k-th kernel faults */

/* Whether the kernel (or CUB call) being queued is the one to fault when it runs. */
bool fault_due(void) {
  return ++fault_seen == fault_k;
}

const char *kind_class(const std::string &fn) {
  if (fn == "cudaMalloc" || fn == "cudaMallocAsync" || fn == "cudaMallocFromPoolAsync" || fn == "cudaMallocManaged" ||
      fn == "cudaMallocHost")
    return "malloc";
  if (fn.find("cudaMemcpy") == 0) return "copy";
  if (fn.find("cudaMemset") == 0) return "memset";
  if (fn == "launch" || fn.find("cub::") == 0) return "launch";
  if (fn.find("cudaEvent") == 0 || fn == "cudaStreamWaitEvent") return "event";
  if (fn.find("cudaStream") == 0) return "stream";
  return "other";
}

/* 1 when this call of fn is to fail (TANDEM_EMU_FAIL=name:k,... with name a
 * function or a class: malloc, copy, memset, launch, event, stream, any). */
bool inject(const std::string &fn) {
  const char *cls = kind_class(fn);
  /* A kernel launch is named by its class ("launch"): counted once. */
  long a = ++counts[fn], b = fn == cls ? a : ++counts[cls], c = ++counts["any"];
  for (const fail_rule &r : rules)
    if ((r.kind == fn && r.k == a) || (r.kind == cls && r.k == b) || (r.kind == "any" && r.k == c)) return true;
  return false;
}

void at_exit_report(void) {
  if (!report_counts) return;
  for (auto &kv : counts) fprintf(stderr, "cuda-emu: calls %s %ld\n", kv.first.c_str(), kv.second);
}

void init(void) {
  if (g_init) return;
  g_init = true;
  const char *s = getenv("TANDEM_EMU_SEED");
  g_seed = s && *s ? strtoull(s, nullptr, 0) : ((uint64_t)time(nullptr) * 2654435761u) ^ (uint64_t)getpid();
  g_rng = g_seed * 0x9E3779B97F4A7C15ull + 1;
  const char *l = getenv("TANDEM_EMU_MEM_LIMIT_MB");
  mem_limit = (size_t)(l ? strtoull(l, nullptr, 0) : 8192) << 20;
  const char *f = getenv("TANDEM_EMU_FAIL");
  if (f && *f) {
    std::string all(f);
    size_t at = 0;
    while (at < all.size()) {
      size_t comma = all.find(',', at);
      std::string one = all.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
      size_t colon = one.find(':');
      if (colon != std::string::npos) rules.push_back(fail_rule{one.substr(0, colon), atol(one.c_str() + colon + 1)});
      at = comma == std::string::npos ? all.size() : comma + 1;
    }
  }
  report_counts = getenv("TANDEM_EMU_COUNT") != nullptr;
  atexit(at_exit_report);
  for (int d = 0; d < NDEV; d++) {
    legacy_streams[d] = new CUstream_st{d, 0, true, nullptr};
    default_pools[d] = new CUmemPoolHandle_st{d, true};
  }
}

/* The device's shape, part of the seed: with 132 SMs a test-sized grid
 * gives every block one tile and no grid-stride or tile-stride loop sized
 * from the device ever iterates, so three seeds in four describe a small
 * device (1, 2 or 4 SMs holding 2 blocks each) whose resident grids are a
 * few blocks. Seed % 4: 1 -> 1 SM, 2 -> 132 SMs (H200), 3 -> 2 SMs,
 * 0 -> 4 SMs; TANDEM_EMU_SMS=N overrides the count. */
struct shape_t {
  int sms, threads_per_sm, blocks_per_sm;
};
const shape_t &shape(void) {
  static const shape_t s = [] {
    init();
    static const int sms_of[4] = {4, 1, 132, 2};
    shape_t r;
    r.sms = sms_of[g_seed % 4];
    const char *o = getenv("TANDEM_EMU_SMS");
    if (o && *o && atoi(o) > 0) r.sms = atoi(o);
    bool big = r.sms >= 100;
    r.threads_per_sm = big ? 2048 : 1024;
    r.blocks_per_sm = big ? 32 : 2;
    return r;
  }();
  return s;
}

cudaError_t set_err(cudaError_t e) {
  if (e != cudaSuccess) last_error = e;
  return e;
}

/* The error a call returns before doing anything: a sticky device error. */
cudaError_t precheck(int dev) {
  init();
  if (sticky[dev] != cudaSuccess) return set_err(sticky[dev]);
  return cudaSuccess;
}

CUstream_st *resolve(cudaStream_t s) {
  if (s == nullptr || s == cudaStreamLegacy) return legacy_streams[cur_dev];
  if (s == cudaStreamPerThread) return legacy_streams[cur_dev];
  return s;
}

/* ---- stream order ------------------------------------------------------- */
void force(const op_p &o) {
  if (!o || o->done) return;
  o->done = true; /* set first: a cycle cannot recurse */
  for (auto &d : o->deps) force(d);
  o->deps.clear();
  if (sticky[o->device] == cudaSuccess) {
    running_op = o->what.c_str();
    int saved = cur_dev;
    cur_dev = o->device;
    /* The work itself (copies, memsets, CUB, kernels) is seen by TSan: it
     * runs in the forcing host thread's context, ordered with the host. */
    for (int i = 0; i < host_quiet; i++) tsan::ignore_end();
    o->fn();
    for (int i = 0; i < host_quiet; i++) tsan::ignore_begin();
    cur_dev = saved;
    running_op = nullptr;
  }
  o->fn = nullptr;
}

void force_stream(CUstream_st *s) {
  force(s->last);
}

void force_device(int dev) {
  force_stream(legacy_streams[dev]);
  for (CUstream_st *s : streams)
    if (s->device == dev) force_stream(s);
}

bool any_capturing(void) {
  for (CUstream_st *s : streams)
    if (s->capture) return true;
  return false;
}

/* A host wait or another call a capture does not allow: invalidates every
 * capture in progress (the emulator does not tell threads apart here). */
bool capture_violation(void) {
  bool any = false;
  for (CUstream_st *s : streams)
    if (s->capture) {
      s->capture_invalid = true;
      any = true;
    }
  return any;
}

cudaError_t enqueue_on(CUstream_st *s, const std::string &what, std::function<void()> fn) {
  if (s->capture) {
    if (s->capture_invalid) return set_err(cudaErrorStreamCaptureInvalidated);
    s->capture->nodes.push_back(std::make_pair(what, std::move(fn)));
    return cudaSuccess;
  }
  op_p o = std::make_shared<op>();
  o->what = what;
  o->fn = std::move(fn);
  o->device = s->device;
  if (s->last && !s->last->done) o->deps.push_back(s->last);
  if (s->legacy) {
    for (CUstream_st *t : streams)
      if (t->device == s->device && !(t->flags & cudaStreamNonBlocking)) {
        if (t->capture) {
          t->capture_invalid = true;
          return set_err(cudaErrorStreamCaptureImplicit);
        }
        if (t->last && !t->last->done) o->deps.push_back(t->last);
      }
  } else if (!(s->flags & cudaStreamNonBlocking)) {
    CUstream_st *l = legacy_streams[s->device];
    if (l->last && !l->last->done) o->deps.push_back(l->last);
  }
  s->last = o;
  return cudaSuccess;
}

/* ---- the allocation table ----------------------------------------------- */
/* The allocation holding p; with end_ok also the one p is just past (an
 * empty range there). A host block may start right where a device block
 * ends (allocators without chunk headers, as ThreadSanitizer's): that
 * address is not device memory. */
alloc_rec *find_rec(const void *p, bool end_ok = false) {
  uintptr_t a = (uintptr_t)p;
  auto it = table.upper_bound(a);
  if (it == table.begin()) return nullptr;
  --it;
  alloc_rec &r = it->second;
  if (a >= r.base && (a < r.base + r.size || (end_ok && a == r.base + r.size))) return &r;
  return nullptr;
}

void *new_block(size_t size, int device, akind kind, CUmemPoolHandle_st *pool) {
  void *p = nullptr;
  if (mem_used + size > mem_limit) return nullptr;
  if (posix_memalign(&p, 256, size ? size : 1) != 0) return nullptr;
  memset(p, 0xA5, size); /* fresh device memory: garbage, never zeros */
  uintptr_t b = (uintptr_t)p;
  /* Forget freed records this block overlaps: none starts more than the
   * largest block below it (a scan of a fixed 1 GiB below walked every
   * record of a test's heap on each allocation). */
  static size_t largest;
  largest = std::max(largest, size);
  for (auto it = table.lower_bound(b > largest ? b - largest : 0); it != table.end() && it->first < b + size + 1;) {
    if (!it->second.live && it->first + it->second.size >= b) it = table.erase(it);
    else ++it;
  }
  table[b] = alloc_rec{b, size, device, kind, true, pool};
  mem_used += size;
  if (pool) {
    pool->used += size;
    if (pool->used > pool->used_high) pool->used_high = pool->used;
  }
  return p;
}

void release_block(alloc_rec *r) {
  memset((void *)r->base, 0xDE, r->size); /* freed memory: poisoned */
  r->live = false;
  mem_used -= r->size;
  if (r->pool) r->pool->used -= r->size;
  free((void *)r->base); /* the record stays: later use is named as use after free */
}

cudaError_t alloc_call(const char *fn, void **p, size_t size, int device, akind kind, CUmemPoolHandle_st *pool) {
  if (!p) return set_err(cudaErrorInvalidValue);
  *p = nullptr;
  if (inject(fn)) return set_err(cudaErrorMemoryAllocation);
  if (size == 0) return cudaSuccess;
  void *b = new_block(size, device, kind, pool);
  if (!b) return set_err(cudaErrorMemoryAllocation);
  *p = b;
  meter::count(meter::E_ALLOC, 1);
  return cudaSuccess;
}

std::string range_text(const void *p, size_t n) {
  char b[96];
  snprintf(b, sizeof b, "[%p, +%zu)", p, n);
  return b;
}

/* Whether [p, p+n) lies in one live device-accessible allocation of device
 * (-1 any); for the copy checks, what is wrong otherwise. */
bool device_range(const void *p, size_t n, int device, std::string *why) {
  alloc_rec *r = find_rec(p, n == 0);
  if (!r) {
    *why = range_text(p, n) + " is not device memory";
    return false;
  }
  if (!r->live) {
    *why = range_text(p, n) + " lies in device memory that was freed";
    return false;
  }
  if ((uintptr_t)p + n > r->base + r->size) {
    char b[128];
    snprintf(b, sizeof b, " runs %zu bytes past the end of its %zu-byte allocation",
             (size_t)((uintptr_t)p + n - (r->base + r->size)), r->size);
    *why = range_text(p, n) + b;
    return false;
  }
  if (device >= 0 && r->kind == A_DEVICE && r->device != device) {
    *why = range_text(p, n) + " is memory of device " + std::to_string(r->device) + ", used on device " +
           std::to_string(device);
    return false;
  }
  return true;
}

bool emu_overlap(const void *a, const void *b, size_t n) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return n && x < y + n && y < x + n;
}

bool is_dev(const void *p) {
  alloc_rec *r = find_rec(p);
  return r && r->live && r->kind != A_PINNED;
}

}  // namespace

const char *running_op;

uint64_t seed(void) { return g_seed; }

void drain(void) {
  LOCK;
  init();
  for (int d = 0; d < NDEV; d++) force_device(d);
}

void device_ranges(std::vector<std::pair<uintptr_t, uintptr_t>> &out) {
  LOCK;
  out.clear();
  for (auto &kv : table)
    if (kv.second.live && kv.second.kind != A_PINNED) out.push_back(std::make_pair(kv.first, kv.first + kv.second.size));
}

uint64_t rand64(void) {
  uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Workers report faults while the host thread that runs their grid holds
 * the host lock: a lock of its own. (Workers never touch the allocation
 * table: a kernel's pointer arguments are checked before its blocks are
 * dispatched, and every other access runs under the host lock.) */
std::mutex err_mu;

void device_error_on(int dev, cudaError_t e, const std::string &msg) {
  std::lock_guard<std::mutex> lk(err_mu);
  fprintf(stderr, "cuda-emu: device error on device %d: %s [replay: TANDEM_EMU_SEED=%llu, %d worker(s)]\n", dev,
          msg.c_str(), (unsigned long long)g_seed, workers());
  if (sticky[dev] == cudaSuccess) sticky[dev] = e;
  if (getenv("TANDEM_EMU_ABORT")) abort();
}

void device_error(cudaError_t e, const std::string &msg) { device_error_on(cur_dev, e, msg); }

int check_range(const void *p, size_t bytes, int device, const char **why) {
  static thread_local std::string w;
  if (device_range(p, bytes, device, &w)) return 1;
  *why = w.c_str();
  return 0;
}

int range_ok(const void *p, size_t bytes, int write, const char *what) {
  std::string w;
  (void)write;
  if (bytes == 0 || device_range(p, bytes, cur_dev, &w)) return 1;
  device_error(cudaErrorIllegalAddress, std::string(what) + ": " + w);
  return 0;
}

void scribble(void *p, size_t bytes) {
  unsigned char *c = (unsigned char *)p;
  for (size_t i = 0; i < bytes; i++) c[i] = (unsigned char)(0x5A ^ (i * 131));
}

cudaError_t fail(cudaError_t e, const char *fmt, ...) {
  char m[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m, sizeof m, fmt, ap);
  va_end(ap);
  if (getenv("TANDEM_EMU_VERBOSE")) fprintf(stderr, "cuda-emu: %s\n", m);
  return set_err(e);
}

cudaError_t enqueue(cudaStream_t s, const char *what, std::function<void()> fn) {
  LOCK;
  init();
  CUstream_st *st = resolve(s);
  cudaError_t e = precheck(st->device);
  if (e != cudaSuccess) return e;
  if (inject(what)) return set_err(cudaErrorLaunchFailure);
  if (strncmp(what, "cub::", 5) == 0) meter::count(meter::E_CUB, 1);
  if (strcmp(kind_class(what), "launch") == 0 && fault_due()) {
    std::string name(what);
    fn = [name]() { device_error(cudaErrorLaunchFailure, name + ": injected device fault (tdm_emu_fault_nth)"); };
  }
  return enqueue_on(st, what, std::move(fn));
}

void launch(const char *name, const char *file, int line, const cfg &c, std::vector<ptr_arg> ptrs,
            std::function<void()> body) {
  LOCK;
  init();
  CUstream_st *st = resolve(c.s);
  if (precheck(st->device) != cudaSuccess) return;
  if (inject("launch")) {
    set_err(cudaErrorLaunchOutOfResources);
    return;
  }
  unsigned long long nt = (unsigned long long)c.b.x * c.b.y * c.b.z;
  if (nt == 0 || nt > 1024 || c.b.z > 64 || c.g.x == 0 || c.g.y == 0 || c.g.z == 0 || c.g.y > 65535 ||
      c.g.z > 65535 || c.g.x > 2147483647u || c.shmem > 48 * 1024) {
    fail(cudaErrorInvalidConfiguration, "launch of %s at %s:%d: grid (%u,%u,%u), block (%u,%u,%u)", name, file, line,
         c.g.x, c.g.y, c.g.z, c.b.x, c.b.y, c.b.z);
    return;
  }
  if (st->device != cur_dev) {
    fail(cudaErrorInvalidResourceHandle, "launch of %s: stream of device %d, current device %d", name, st->device,
         cur_dev);
    return;
  }
  auto k = std::make_shared<kernel>();
  k->name = name;
  k->where = std::string(file) + ":" + std::to_string(line);
  k->g = c.g;
  k->b = c.b;
  k->device = st->device;
  k->ptrs = std::move(ptrs);
  k->body = std::move(body);
  meter::count(meter::E_KERNEL, 1);
  if (fault_due()) {
    enqueue_on(st, "kernel " + k->name, [k]() {
      device_error(cudaErrorLaunchFailure, "kernel " + k->name + ": injected device fault (tdm_emu_fault_nth)");
    });
    return;
  }
  enqueue_on(st, "kernel " + k->name, [k]() { run_kernel(*k); });
}

}  // namespace tdm_emu

using namespace tdm_emu;

/* ---- errors --------------------------------------------------------------- */
API cudaError_t cudaGetLastError(void) {
  LOCK;
  init();
  cudaError_t e = last_error;
  last_error = cudaSuccess;
  if (sticky[cur_dev] != cudaSuccess) return sticky[cur_dev];
  return e;
}
API cudaError_t cudaPeekAtLastError(void) {
  LOCK;
  init();
  if (sticky[cur_dev] != cudaSuccess) return sticky[cur_dev];
  return last_error;
}

static const struct {
  cudaError_t e;
  const char *name, *text;
} err_names[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated",
     "operation failed due to a previous error during capture"},
    {cudaErrorStreamCaptureImplicit, "cudaErrorStreamCaptureImplicit",
     "operation would make the legacy stream depend on a capturing blocking stream"},
    {cudaErrorIllegalState, "cudaErrorIllegalState", "the operation cannot be performed in the present state"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};
API const char *cudaGetErrorName(cudaError_t e) {
  for (auto &n : err_names)
    if (n.e == e) return n.name;
  return "cudaErrorUnknown";
}
API const char *cudaGetErrorString(cudaError_t e) {
  for (auto &n : err_names)
    if (n.e == e) return n.text;
  return "unrecognized error code";
}

/* ---- devices -------------------------------------------------------------- */
API cudaError_t cudaGetDeviceCount(int *n) {
  LOCK;
  init();
  if (!n) return set_err(cudaErrorInvalidValue);
  *n = NDEV;
  return cudaSuccess;
}
API cudaError_t cudaGetDevice(int *d) {
  LOCK;
  init();
  if (!d) return set_err(cudaErrorInvalidValue);
  *d = cur_dev;
  return cudaSuccess;
}
API cudaError_t cudaSetDevice(int d) {
  LOCK;
  init();
  if (d < 0 || d >= NDEV) return set_err(cudaErrorInvalidDevice);
  cur_dev = d;
  return cudaSuccess;
}
API cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d) {
  LOCK;
  init();
  if (!p) return set_err(cudaErrorInvalidValue);
  if (d < 0 || d >= NDEV) return set_err(cudaErrorInvalidDevice);
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "tandem emulated device (H200-like)");
  p->totalGlobalMem = (size_t)141 * 1000 * 1000 * 1000;
  p->sharedMemPerBlock = 48 * 1024;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024;
  p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647;
  p->maxGridSize[1] = 65535;
  p->maxGridSize[2] = 65535;
  p->major = 9;
  p->minor = 0;
  const shape_t &sh = shape();
  p->multiProcessorCount = sh.sms;
  p->l2CacheSize = 50 * 1024 * 1024;
  p->maxThreadsPerMultiProcessor = sh.threads_per_sm;
  p->maxBlocksPerMultiProcessor = sh.blocks_per_sm;
  p->memoryBusWidth = 6144;
  p->unifiedAddressing = 1;
  p->managedMemory = 1;
  p->concurrentManagedAccess = 1;
  p->memoryPoolsSupported = 1;
  p->pciDeviceID = d;
  return cudaSuccess;
}
extern "C" __attribute__((visibility("default"), alias("cudaGetDeviceProperties"))) cudaError_t
cudaGetDeviceProperties_v2(cudaDeviceProp *p, int d);
API cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int d) {
  cudaDeviceProp p;
  cudaError_t e = cudaGetDeviceProperties(&p, d);
  if (e != cudaSuccess) return e;
  switch (a) {
  case cudaDevAttrMultiProcessorCount: *v = p.multiProcessorCount; break;
  case cudaDevAttrMaxThreadsPerMultiProcessor: *v = p.maxThreadsPerMultiProcessor; break;
  case cudaDevAttrMaxBlocksPerMultiprocessor: *v = p.maxBlocksPerMultiProcessor; break;
  case cudaDevAttrComputeCapabilityMajor: *v = p.major; break;
  case cudaDevAttrComputeCapabilityMinor: *v = p.minor; break;
  case cudaDevAttrMaxThreadsPerBlock: *v = p.maxThreadsPerBlock; break;
  case cudaDevAttrWarpSize: *v = 32; break;
  case cudaDevAttrMemoryPoolsSupported: *v = 1; break;
  default: return set_err(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}
/* Resident blocks of blk threads per SM: what the device's shape holds
 * (threads and blocks per SM; registers and shared memory are not modelled). */
API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, const void *func, int blk, size_t smem) {
  (void)func;
  LOCK;
  init();
  if (!n || blk <= 0 || blk > 1024 || smem > 48 * 1024) return set_err(cudaErrorInvalidValue);
  const shape_t &sh = shape();
  int by_threads = sh.threads_per_sm / blk;
  *n = by_threads < sh.blocks_per_sm ? by_threads : sh.blocks_per_sm;
  return cudaSuccess;
}
API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *n, const void *func, int blk,
                                                                      size_t smem, unsigned flags) {
  (void)flags;
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(n, func, blk, smem);
}
API cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total) {
  LOCK;
  init();
  if (free_b) *free_b = mem_limit - mem_used;
  if (total) *total = mem_limit;
  return cudaSuccess;
}
API cudaError_t cudaDeviceSynchronize(void) {
  LOCK;
  cudaError_t e = precheck(cur_dev);
  if (e != cudaSuccess) return e;
  if (capture_violation()) return set_err(cudaErrorStreamCaptureUnsupported);
  meter::count(meter::E_SYNC, 1);
  force_device(cur_dev);
  return sticky[cur_dev] != cudaSuccess ? set_err(sticky[cur_dev]) : cudaSuccess;
}

/* ---- memory --------------------------------------------------------------- */
API cudaError_t cudaMalloc(void **p, size_t size) {
  LOCK;
  cudaError_t e = precheck(cur_dev);
  if (e != cudaSuccess) return e;
  return alloc_call("cudaMalloc", p, size, cur_dev, A_DEVICE, nullptr);
}
API cudaError_t cudaMallocManaged(void **p, size_t size, unsigned flags) {
  LOCK;
  cudaError_t e = precheck(cur_dev);
  if (e != cudaSuccess) return e;
  if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost) return set_err(cudaErrorInvalidValue);
  return alloc_call("cudaMallocManaged", p, size, cur_dev, A_MANAGED, nullptr);
}
API cudaError_t cudaMallocHost(void **p, size_t size) {
  LOCK;
  cudaError_t e = precheck(cur_dev);
  if (e != cudaSuccess) return e;
  return alloc_call("cudaMallocHost", p, size, cur_dev, A_PINNED, nullptr);
}
API cudaError_t cudaHostAlloc(void **p, size_t size, unsigned flags) {
  (void)flags;
  return cudaMallocHost(p, size);
}

static cudaError_t free_now(void *p, akind want, const char *fn) {
  LOCK;
  cudaError_t e = precheck(cur_dev);
  if (e != cudaSuccess) return e;
  if (!p) return cudaSuccess;
  if (capture_violation()) return set_err(cudaErrorStreamCaptureUnsupported);
  alloc_rec *r = find_rec(p);
  if (!r || !r->live || r->base != (uintptr_t)p || (want == A_PINNED) != (r->kind == A_PINNED))
    return fail(cudaErrorInvalidValue, "%s(%p): not the start of a live allocation", fn, p);
  meter::count(meter::E_SYNC, 1);
  force_device(r->device); /* cudaFree waits for the device */
  release_block(r);
  return cudaSuccess;
}
API cudaError_t cudaFree(void *p) { return free_now(p, A_DEVICE, "cudaFree"); }
API cudaError_t cudaFreeHost(void *p) { return free_now(p, A_PINNED, "cudaFreeHost"); }

API cudaError_t cudaMallocFromPoolAsync(void **p, size_t size, cudaMemPool_t pool, cudaStream_t s) {
  LOCK;
  init();
  CUstream_st *st = resolve(s);
  cudaError_t e = precheck(st->device);
  if (e != cudaSuccess) return e;
  if (!pool || pool->device != st->device) return set_err(cudaErrorInvalidValue);
  e = alloc_call(pool->is_default ? "cudaMallocAsync" : "cudaMallocFromPoolAsync", p, size, st->device, A_DEVICE,
                 pool);
  return e;
}
API cudaError_t cudaMallocAsync(void **p, size_t size, cudaStream_t s) {
  LOCK;
  init();
  return cudaMallocFromPoolAsync(p, size, default_pools[resolve(s)->device], s);
}
API cudaError_t cudaFreeAsync(void *p, cudaStream_t s) {
  LOCK;
  init();
  CUstream_st *st = resolve(s);
  cudaError_t e = precheck(st->device);
  if (e != cudaSuccess) return e;
  if (!p) return cudaSuccess;
  alloc_rec *r = find_rec(p);
  if (!r || !r->live || r->base != (uintptr_t)p || r->kind != A_DEVICE)
    return fail(cudaErrorInvalidValue, "cudaFreeAsync(%p): not the start of a live device allocation", p);
  uintptr_t base = r->base;
  if (st->capture) {
    /* A graph's free node: the block stays allocated for the graph's replays
     * (the emulator keeps graph allocations for the process). */
    return enqueue_on(st, "cudaFreeAsync (graph)", []() {});
  }
  return enqueue_on(st, "cudaFreeAsync", [base]() {
    alloc_rec *q = find_rec((void *)base);
    if (q && q->live && q->base == base) release_block(q);
  });
}

API cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int d) {
  LOCK;
  init();
  if (!pool) return set_err(cudaErrorInvalidValue);
  if (d < 0 || d >= NDEV) return set_err(cudaErrorInvalidDevice);
  *pool = default_pools[d];
  return cudaSuccess;
}
API cudaError_t cudaMemPoolCreate(cudaMemPool_t *pool, const cudaMemPoolProps *props) {
  LOCK;
  init();
  if (!pool || !props || props->allocType != cudaMemAllocationTypePinned ||
      props->location.type != cudaMemLocationTypeDevice || props->location.id < 0 || props->location.id >= NDEV)
    return set_err(cudaErrorInvalidValue);
  *pool = new CUmemPoolHandle_st{props->location.id, false};
  return cudaSuccess;
}
API cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool) {
  LOCK;
  init();
  if (!pool || pool->is_default) return set_err(cudaErrorInvalidValue);
  /* Outstanding blocks keep the pool's record alive (as CUDA defers the release). */
  if (pool->used == 0) {
    for (auto &kv : table)
      if (kv.second.pool == pool) kv.second.pool = nullptr;
    delete pool;
  }
  return cudaSuccess;
}
API cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep) {
  (void)keep;
  return pool ? cudaSuccess : set_err(cudaErrorInvalidValue);
}
API cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr a, void *v) {
  LOCK;
  init();
  if (!pool || !v) return set_err(cudaErrorInvalidValue);
  switch (a) {
  case cudaMemPoolAttrReleaseThreshold: pool->threshold = *(uint64_t *)v; return cudaSuccess;
  case cudaMemPoolAttrUsedMemHigh:
  case cudaMemPoolAttrReservedMemHigh:
    if (*(uint64_t *)v != 0) return set_err(cudaErrorInvalidValue);
    pool->used_high = pool->used;
    return cudaSuccess;
  case cudaMemPoolReuseFollowEventDependencies:
  case cudaMemPoolReuseAllowOpportunistic:
  case cudaMemPoolReuseAllowInternalDependencies: return cudaSuccess;
  default: return set_err(cudaErrorInvalidValue);
  }
}
API cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr a, void *v) {
  LOCK;
  init();
  if (!pool || !v) return set_err(cudaErrorInvalidValue);
  switch (a) {
  case cudaMemPoolAttrReleaseThreshold: *(uint64_t *)v = pool->threshold; return cudaSuccess;
  case cudaMemPoolAttrUsedMemCurrent:
  case cudaMemPoolAttrReservedMemCurrent: *(uint64_t *)v = pool->used; return cudaSuccess;
  case cudaMemPoolAttrUsedMemHigh:
  case cudaMemPoolAttrReservedMemHigh: *(uint64_t *)v = pool->used_high; return cudaSuccess;
  case cudaMemPoolReuseFollowEventDependencies:
  case cudaMemPoolReuseAllowOpportunistic:
  case cudaMemPoolReuseAllowInternalDependencies: *(int *)v = 1; return cudaSuccess;
  default: return set_err(cudaErrorInvalidValue);
  }
}

API cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *a, const void *p) {
  LOCK;
  init();
  meter::count(meter::E_PTR_QUERY, 1);
  if (!a) return set_err(cudaErrorInvalidValue);
  memset(a, 0, sizeof *a);
  alloc_rec *r = find_rec(p);
  if (!r || !r->live || (uintptr_t)p == r->base + r->size) {
    a->type = cudaMemoryTypeUnregistered;
    a->device = -2;
    a->hostPointer = (void *)p;
    return cudaSuccess;
  }
  a->device = r->device;
  a->type = r->kind == A_DEVICE ? cudaMemoryTypeDevice : r->kind == A_MANAGED ? cudaMemoryTypeManaged : cudaMemoryTypeHost;
  a->devicePointer = (void *)p;
  a->hostPointer = r->kind == A_DEVICE ? nullptr : (void *)p;
  return cudaSuccess;
}

/* ---- copies and memsets --------------------------------------------------- */
/* The meter's view of a copy: bytes over the bus by direction, or, within
 * the device, a read and a write of device memory. */
static void meter_copy(void *dst, const void *src, size_t n) {
  bool dd = is_dev(dst), sd = is_dev(src);
  if (dd && sd) meter_model(n, n);
  else if (dd) meter::count(meter::E_H2D, n);
  else if (sd) meter::count(meter::E_D2H, n);
}

static cudaError_t copy_check(void *dst, const void *src, size_t n, cudaMemcpyKind kind, int dev, std::string *why) {
  bool dd = is_dev(dst), sd = is_dev(src);
  if (kind == cudaMemcpyDefault) kind = dd ? (sd ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                                           : (sd ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  bool want_dd = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  bool want_sd = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) {
    *why = "invalid copy kind";
    return cudaErrorInvalidValue;
  }
  if (want_dd && !device_range(dst, n, -1, why)) return cudaErrorInvalidValue;
  if (want_sd && !device_range(src, n, -1, why)) return cudaErrorInvalidValue;
  alloc_rec *r;
  if (!want_dd && (r = find_rec(dst)) && r->live && r->kind == A_DEVICE) {
    *why = "destination is device memory, the copy kind says host";
    return cudaErrorInvalidValue;
  }
  if (!want_sd && (r = find_rec(src)) && r->live && r->kind == A_DEVICE) {
    *why = "source is device memory, the copy kind says host";
    return cudaErrorInvalidValue;
  }
  if (emu_overlap(dst, src, n)) {
    *why = "source and destination overlap";
    return cudaErrorInvalidValue;
  }
  (void)dev;
  return cudaSuccess;
}

API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind kind, cudaStream_t s) {
  LOCK;
  init();
  CUstream_st *st = resolve(s);
  cudaError_t e = precheck(st->device);
  if (e != cudaSuccess) return e;
  if (inject("cudaMemcpyAsync")) return set_err(cudaErrorInvalidValue);
  if (n == 0) return cudaSuccess;
  std::string why;
  if ((e = copy_check(dst, src, n, kind, st->device, &why)) != cudaSuccess)
    return fail(e, "cudaMemcpyAsync(%p, %p, %zu): %s", dst, src, n, why.c_str());
  meter_copy(dst, src, n);
  return enqueue_on(st, "cudaMemcpyAsync", [dst, src, n, kind]() {
    std::string w;
    if (copy_check(dst, src, n, kind, -1, &w) != cudaSuccess) {
      device_error(cudaErrorIllegalAddress, "cudaMemcpyAsync when it ran: " + w);
      return;
    }
    memcpy(dst, src, n);
  });
}
API cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind kind) {
  LOCK;
  init();
  cudaError_t e = precheck(cur_dev);
  if (e != cudaSuccess) return e;
  if (inject("cudaMemcpy")) return set_err(cudaErrorInvalidValue);
  if (n == 0) return cudaSuccess;
  std::string why;
  if ((e = copy_check(dst, src, n, kind, cur_dev, &why)) != cudaSuccess)
    return fail(e, "cudaMemcpy(%p, %p, %zu): %s", dst, src, n, why.c_str());
  if (any_capturing()) {
    capture_violation();
    return set_err(cudaErrorStreamCaptureImplicit);
  }
  CUstream_st *l = legacy_streams[cur_dev];
  meter_copy(dst, src, n);
  if ((e = enqueue_on(l, "cudaMemcpy", [dst, src, n]() { memcpy(dst, src, n); })) != cudaSuccess) return e;
  meter::count(meter::E_SYNC, 1);
  force_stream(l); /* synchronous: after all earlier work of the blocking streams */
  return sticky[cur_dev] != cudaSuccess ? set_err(sticky[cur_dev]) : cudaSuccess;
}
API cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s) {
  LOCK;
  init();
  CUstream_st *st = resolve(s);
  cudaError_t e = precheck(st->device);
  if (e != cudaSuccess) return e;
  if (inject("cudaMemsetAsync")) return set_err(cudaErrorInvalidValue);
  if (n == 0) return cudaSuccess;
  std::string why;
  if (!device_range(p, n, -1, &why)) return fail(cudaErrorInvalidValue, "cudaMemsetAsync: %s", why.c_str());
  meter_model(0, n);
  return enqueue_on(st, "cudaMemsetAsync", [p, v, n]() {
    std::string w;
    if (!device_range(p, n, -1, &w)) {
      device_error(cudaErrorIllegalAddress, "cudaMemsetAsync when it ran: " + w);
      return;
    }
    memset(p, v, n);
  });
}
API cudaError_t cudaMemset(void *p, int v, size_t n) {
  LOCK;
  init();
  cudaError_t e = precheck(cur_dev);
  if (e != cudaSuccess) return e;
  if (inject("cudaMemset")) return set_err(cudaErrorInvalidValue);
  /* Asynchronous for device memory, as CUDA documents: queued on the legacy stream. */
  return cudaMemsetAsync(p, v, n, nullptr);
}

/* ---- streams -------------------------------------------------------------- */
API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
  LOCK;
  cudaError_t e = precheck(cur_dev);
  if (e != cudaSuccess) return e;
  if (!s || (flags & ~(unsigned)cudaStreamNonBlocking)) return set_err(cudaErrorInvalidValue);
  if (inject("cudaStreamCreateWithFlags")) return set_err(cudaErrorMemoryAllocation);
  CUstream_st *st = new CUstream_st{cur_dev, flags, false, nullptr};
  streams.push_back(st);
  *s = st;
  return cudaSuccess;
}
API cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, cudaStreamDefault); }
API cudaError_t cudaStreamDestroy(cudaStream_t s) {
  LOCK;
  init();
  if (!s || s->legacy) return set_err(cudaErrorInvalidResourceHandle);
  /* Queued work still runs (when forced), as CUDA completes it. */
  for (size_t i = 0; i < streams.size(); i++)
    if (streams[i] == s) {
      op_p last = s->last;
      if (last && !last->done) {
        /* keep its ordering visible to the device-wide waits */
        CUstream_st *l = legacy_streams[s->device];
        op_p o = std::make_shared<op>();
        o->what = "stream destroyed";
        o->fn = []() {};
        o->device = s->device;
        o->deps.push_back(last);
        if (l->last) o->deps.push_back(l->last);
        l->last = o;
      }
      streams.erase(streams.begin() + i);
      delete s;
      return cudaSuccess;
    }
  return set_err(cudaErrorInvalidResourceHandle);
}
API cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  LOCK;
  init();
  CUstream_st *st = resolve(s);
  cudaError_t e = precheck(st->device);
  if (e != cudaSuccess) return e;
  if (st->capture || (st->legacy && any_capturing())) {
    capture_violation();
    return set_err(cudaErrorStreamCaptureUnsupported);
  }
  meter::count(meter::E_SYNC, 1);
  force_stream(st);
  return sticky[st->device] != cudaSuccess ? set_err(sticky[st->device]) : cudaSuccess;
}
API cudaError_t cudaStreamQuery(cudaStream_t s) {
  LOCK;
  init();
  CUstream_st *st = resolve(s);
  cudaError_t e = precheck(st->device);
  if (e != cudaSuccess) return e;
  if (st->capture) {
    st->capture_invalid = true;
    return set_err(cudaErrorStreamCaptureUnsupported);
  }
  if (st->last && !st->last->done) {
    /* Not done yet; the work makes progress (runs) but this answer stays "not ready". */
    force_stream(st);
    return sticky[st->device] != cudaSuccess ? set_err(sticky[st->device]) : cudaErrorNotReady;
  }
  return cudaSuccess;
}

/* ---- events --------------------------------------------------------------- */
API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags) {
  LOCK;
  cudaError_t r = precheck(cur_dev);
  if (r != cudaSuccess) return r;
  if (!e) return set_err(cudaErrorInvalidValue);
  if (inject("cudaEventCreate")) return set_err(cudaErrorMemoryAllocation);
  *e = new CUevent_st{cur_dev, flags, nullptr};
  return cudaSuccess;
}
API cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }
API cudaError_t cudaEventDestroy(cudaEvent_t e) {
  LOCK;
  init();
  if (!e) return set_err(cudaErrorInvalidResourceHandle);
  delete e;
  return cudaSuccess;
}
API cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t s) {
  LOCK;
  init();
  CUstream_st *st = resolve(s);
  cudaError_t e = precheck(st->device);
  if (e != cudaSuccess) return e;
  if (!ev) return set_err(cudaErrorInvalidResourceHandle);
  if (inject("cudaEventRecord")) return set_err(cudaErrorInvalidValue);
  if (ev->device != st->device) return set_err(cudaErrorInvalidResourceHandle);
  if (st->capture) {
    ev->captured = st->capture;
    ev->marker = nullptr;
    return enqueue_on(st, "cudaEventRecord", []() {});
  }
  ev->captured = nullptr;
  CUevent_st *evp = ev;
  if ((e = enqueue_on(st, "cudaEventRecord", [evp]() { evp->t = (clock_ms += 0.125); })) != cudaSuccess) return e;
  ev->marker = st->last;
  return cudaSuccess;
}
API cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t ev, unsigned flags) {
  LOCK;
  init();
  (void)flags;
  CUstream_st *st = resolve(s);
  cudaError_t e = precheck(st->device);
  if (e != cudaSuccess) return e;
  if (!ev) return set_err(cudaErrorInvalidResourceHandle);
  if (inject("cudaStreamWaitEvent")) return set_err(cudaErrorInvalidValue);
  if (ev->captured) {
    if (!st->capture) st->capture = ev->captured; /* the stream joins the capture */
    return cudaSuccess;
  }
  op_p m = ev->marker;
  if (st->capture) return cudaSuccess; /* work outside the graph: already ordered by the host */
  if ((e = enqueue_on(st, "cudaStreamWaitEvent", []() {})) != cudaSuccess) return e;
  if (m && !m->done) st->last->deps.push_back(m);
  return cudaSuccess;
}
API cudaError_t cudaEventSynchronize(cudaEvent_t ev) {
  LOCK;
  init();
  if (!ev) return set_err(cudaErrorInvalidResourceHandle);
  cudaError_t e = precheck(ev->device);
  if (e != cudaSuccess) return e;
  meter::count(meter::E_SYNC, 1);
  force(ev->marker);
  return sticky[ev->device] != cudaSuccess ? set_err(sticky[ev->device]) : cudaSuccess;
}
API cudaError_t cudaEventQuery(cudaEvent_t ev) {
  LOCK;
  init();
  if (!ev) return set_err(cudaErrorInvalidResourceHandle);
  if (ev->marker && !ev->marker->done) {
    force(ev->marker);
    return cudaErrorNotReady;
  }
  return cudaSuccess;
}
API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
  LOCK;
  init();
  if (!ms || !a || !b) return set_err(cudaErrorInvalidValue);
  if ((a->flags | b->flags) & cudaEventDisableTiming) return set_err(cudaErrorInvalidResourceHandle);
  if (!a->marker || !b->marker) return set_err(cudaErrorInvalidResourceHandle);
  if (!a->marker->done || !b->marker->done) return set_err(cudaErrorNotReady);
  *ms = (float)(b->t - a->t);
  return cudaSuccess;
}

/* ---- capture and graphs --------------------------------------------------- */
API cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode) {
  LOCK;
  init();
  if (!s || s == cudaStreamLegacy) return set_err(cudaErrorStreamCaptureUnsupported);
  CUstream_st *st = resolve(s);
  cudaError_t e = precheck(st->device);
  if (e != cudaSuccess) return e;
  if (st->capture) return set_err(cudaErrorIllegalState);
  st->capture = new graph();
  st->capture->origin = st;
  st->capture_invalid = false;
  st->mode = mode;
  return cudaSuccess;
}
API cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *out) {
  LOCK;
  init();
  CUstream_st *st = resolve(s);
  if (!out) return set_err(cudaErrorInvalidValue);
  *out = nullptr;
  if (!st->capture || st->capture->origin != st) return set_err(cudaErrorIllegalState);
  graph *g = st->capture;
  bool bad = st->capture_invalid;
  for (CUstream_st *t : streams)
    if (t->capture == g) {
      bad = bad || t->capture_invalid;
      t->capture = nullptr;
      t->capture_invalid = false;
    }
  if (bad) {
    delete g;
    return set_err(cudaErrorStreamCaptureInvalidated);
  }
  *out = reinterpret_cast<cudaGraph_t>(g);
  return cudaSuccess;
}
API cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus *status) {
  LOCK;
  init();
  CUstream_st *st = resolve(s);
  if (!status) return set_err(cudaErrorInvalidValue);
  *status = !st->capture ? cudaStreamCaptureStatusNone
            : st->capture_invalid ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}
API cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g, unsigned long long flags) {
  LOCK;
  init();
  (void)flags;
  if (!exec || !g) return set_err(cudaErrorInvalidValue);
  graph_exec *x = new graph_exec();
  x->nodes = reinterpret_cast<graph *>(g)->nodes;
  *exec = reinterpret_cast<cudaGraphExec_t>(x);
  return cudaSuccess;
}
API cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  LOCK;
  init();
  CUstream_st *st = resolve(s);
  cudaError_t e = precheck(st->device);
  if (e != cudaSuccess) return e;
  if (!exec) return set_err(cudaErrorInvalidValue);
  if (inject("launch")) return set_err(cudaErrorLaunchOutOfResources);
  for (auto &n : reinterpret_cast<graph_exec *>(exec)->nodes)
    if ((e = enqueue_on(st, "graph: " + n.first, n.second)) != cudaSuccess) return e;
  return cudaSuccess;
}
API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  LOCK;
  delete reinterpret_cast<graph_exec *>(exec);
  return cudaSuccess;
}
API cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  LOCK;
  delete reinterpret_cast<graph *>(g);
  return cudaSuccess;
}

/* ---- the driver calls of src/devptr.c ----------------------------------- */
enum { CU_OK = 0, CU_INVALID_VALUE = 1, CU_NOT_INITIALIZED = 3 };
static int driver_attr(void *data, int attr, const void *p, bool plural) {
  alloc_rec *r = find_rec(p);
  bool known = r && r->live && (uintptr_t)p < r->base + r->size;
  switch (attr) {
  case 2: /* memory type */
    if (!known) {
      if (!plural) return CU_INVALID_VALUE;
      *(unsigned *)data = 0;
      return CU_OK;
    }
    *(unsigned *)data = r->kind == A_PINNED ? 1u : 2u;
    return CU_OK;
  case 8: /* is managed */
    if (!known && !plural) return CU_INVALID_VALUE;
    *(int *)data = known && r->kind == A_MANAGED;
    return CU_OK;
  case 9: /* device ordinal */
    if (!known) {
      if (!plural) return CU_INVALID_VALUE;
      *(int *)data = -2;
      return CU_OK;
    }
    *(int *)data = r->device;
    return CU_OK;
  default: return CU_INVALID_VALUE;
  }
}
API int cuInit(unsigned flags) {
  LOCK;
  (void)flags;
  init();
  return CU_OK;
}
API int cuPointerGetAttribute(void *data, int attr, unsigned long long ptr) {
  LOCK;
  meter::count(meter::E_PTR_QUERY, 1);
  if (!g_init) return CU_NOT_INITIALIZED;
  return driver_attr(data, attr, (const void *)(uintptr_t)ptr, false);
}
API int cuPointerGetAttributes(unsigned n, int *attrs, void **data, unsigned long long ptr) {
  LOCK;
  meter::count(meter::E_PTR_QUERY, 1);
  if (!g_init) return CU_NOT_INITIALIZED;
  for (unsigned i = 0; i < n; i++) {
    int e = driver_attr(data[i], attrs[i], (const void *)(uintptr_t)ptr, true);
    if (e != CU_OK) return e;
  }
  return CU_OK;
}

/* ---- entry points for tests (tests/cuda_emu/fault_sweep.c) ---------------- */
/* Replaces the TANDEM_EMU_FAIL rules with one: the k-th call of cls (a class
 * or a function, as in TANDEM_EMU_FAIL) counted from now fails; k 0 fails
 * nothing. Restarts every call count. */
API void tdm_emu_fail_nth(const char *cls, long k) {
  LOCK;
  init();
  rules.clear();
  counts.clear();
  if (cls && k > 0) rules.push_back(fail_rule{cls, k});
}
/* Calls of cls (a class or a function) since the last tdm_emu_fail_nth. */
API long tdm_emu_calls(const char *cls) {
  LOCK;
  init();
  auto it = counts.find(cls);
  return it == counts.end() ? 0 : it->second;
}
/* Bytes of live allocations (device, managed, pinned) once every queued
 * operation of every device has run (so queued frees count as done). */
API size_t tdm_emu_live_bytes(void) {
  LOCK;
  init();
  for (int d = 0; d < NDEV; d++) force_device(d);
  return mem_used;
}
/* The k-th kernel or CUB call queued from now faults when it runs (a sticky
 * cudaErrorLaunchFailure, as a trap or an illegal access would be); 0: none.
 * Returns how many were queued since the previous call. */
API long tdm_emu_fault_nth(long k) {
  LOCK;
  init();
  long seen = fault_seen;
  fault_k = k;
  fault_seen = 0;
  return seen; /* kernels and CUB calls queued since the previous call */
}
/* Forgets the devices' sticky errors and this thread's last error (a test's
 * stand-in for destroying the faulted CUDA context). */
API void tdm_emu_clear_faults(void) {
  LOCK;
  init();
  for (int d = 0; d < NDEV; d++) sticky[d] = cudaSuccess;
  last_error = cudaSuccess;
}
