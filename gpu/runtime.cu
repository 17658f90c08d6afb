/*
 * runtime.cu: device discovery, per-context GPU state, device allocation and
 * staging of caller arrays.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_common.cuh"

static pthread_once_t count_once = PTHREAD_ONCE_INIT;
static int device_count_cached;
static cudaError_t device_count_error = cudaSuccess;
/* Set when the runtime found no driver library at all: cudaGetDeviceCount
 * answers cudaErrorInsufficientDriver both there and for a driver older than
 * the runtime, and the two need different advice. */
static int no_driver;

static void probe_devices(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    /* No driver, or a driver older than the runtime: no device, not an error. */
    (void)cudaGetLastError();
    device_count_error = e;
    if (e == cudaErrorInsufficientDriver) {
      void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
      if (lib) dlclose(lib);
      else no_driver = 1;
    }
    n = 0;
  }
  device_count_cached = n;
}

int tdm__cuda_device_count(void) {
  pthread_once(&count_once, probe_devices);
  return device_count_cached;
}

tdm_status tdm__cuda_fail(cudaError_t e, const char *what, const char *file, int line) {
  tdm_status s = (e == cudaErrorMemoryAllocation) ? TDM_ERR_OUT_OF_MEMORY : TDM_ERR_DEVICE;
  return tdm__fail(s, "CUDA error %s (%s) in %s at %s:%d", cudaGetErrorName(e), cudaGetErrorString(e), what,
                   file, line);
}

tdm_status tdm__gpu_ctx_init(tdm_ctx *ctx) {
  int n = tdm__cuda_device_count();
  tdm__gpu_state *g;
  if (n == 0) {
    if (no_driver)
      return tdm__fail(TDM_ERR_NO_DEVICE, "tdm_ctx_create: no usable CUDA device: no NVIDIA driver found "
                                          "(libcuda.so.1 cannot be loaded)");
    if (device_count_error != cudaSuccess)
      return tdm__fail(TDM_ERR_NO_DEVICE, "tdm_ctx_create: no usable CUDA device: %s (%s)",
                       cudaGetErrorName(device_count_error), cudaGetErrorString(device_count_error));
    return tdm__fail(TDM_ERR_NO_DEVICE, "tdm_ctx_create: no CUDA device found");
  }
  if (ctx->device >= n)
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "tdm_ctx_create: cuda_device %d, but only %d device(s)",
                     ctx->device, n);
  g = (tdm__gpu_state *)tdm__ctx_calloc(ctx, sizeof *g);
  if (!g) return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "tdm_ctx_create: out of host memory");
  g->device = ctx->device;
  ctx->gpu = g; /* for dev.enter; cleared again on failure */
  tdm__gpu_device dev;
  {
    tdm_status st = dev.enter(ctx);
    if (st != TDM_OK) {
      ctx->gpu = NULL;
      tdm__ctx_free(ctx, g, sizeof *g);
      return st;
    }
  }
  /* For grids capped at a few blocks per SM (tdm__grid_resident). */
  TDM_CUDA_TRY(cudaDeviceGetAttribute(&g->sm_count, cudaDevAttrMultiProcessorCount, g->device),
               (ctx->gpu = NULL, tdm__ctx_free(ctx, g, sizeof *g)));
  {
    /* Blocks of TDM_GPU_BLOCK threads an SM holds: by threads, capped by the
     * device's blocks per SM; 0 (unknown) falls back to sm_90's 8. */
    int threads = 0, blocks = 0;
    if (cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, g->device) != cudaSuccess ||
        cudaDeviceGetAttribute(&blocks, cudaDevAttrMaxBlocksPerMultiprocessor, g->device) != cudaSuccess) {
      (void)cudaGetLastError(); /* optional: the fallback serves */
      threads = blocks = 0;
    }
    g->resident_per_sm = threads / (int)TDM_GPU_BLOCK;
    if (blocks > 0 && g->resident_per_sm > blocks) g->resident_per_sm = blocks;
  }
  if (ctx->stream) {
    g->stream = (cudaStream_t)ctx->stream;
  } else {
    /* A blocking stream: the contract orders a context's work after
     * everything queued on the legacy default stream (PyTorch's default
     * stream, a pageable cudaMemcpy). A non-blocking stream would run
     * concurrently with that work. */
    TDM_CUDA_TRY(cudaStreamCreateWithFlags(&g->stream, cudaStreamDefault), (ctx->gpu = NULL, tdm__ctx_free(ctx, g, sizeof *g)));
    g->own_stream = 1;
  }
  /* An optimisation only: without pinned memory the small reads go to
   * pageable memory (tdm__gpu_read_small). */
  if (cudaHostAlloc((void **)&g->small, TDM__GPU_SMALL_SLOTS * TDM__GPU_SMALL_BYTES, cudaHostAllocDefault) !=
      cudaSuccess) {
    (void)cudaGetLastError();
    g->small = NULL;
  }
  /* The device's default memory pool keeps the caller's settings: repeated
   * calls reuse the context's parked scratch blocks instead (tdm__gpu_malloc). */
  ctx->gpu = g;
  return TDM_OK;
}

void tdm__gpu_ctx_fini(tdm_ctx *ctx) {
  tdm__gpu_state *g = ctx->gpu;
  tdm__gpu_device dev;
  if (!g) return;
  (void)dev.enter(ctx);
  tdm__gpu_unpark_all(ctx);
  if (g->own_stream) {
    (void)cudaStreamSynchronize(g->stream);
    (void)cudaStreamDestroy(g->stream);
  }
  if (g->small) (void)cudaFreeHost(g->small);
  (void)cudaGetLastError();
  tdm__ctx_free(ctx, g, sizeof *g);
  ctx->gpu = NULL;
}

tdm_status tdm__launch_check(const char *where) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return tdm__cuda_fail(e, where, __FILE__, __LINE__);
  return TDM_OK;
}

tdm_status tdm__gpu_pending_check(void) {
  cudaError_t e = cudaPeekAtLastError();
  if (e == cudaSuccess) return TDM_OK;
  (void)cudaGetLastError(); /* delivered once, here; a sticky fault stays */
  return tdm__fail(TDM_ERR_DEVICE,
                   "a CUDA error was already pending when this call began: %s (%s), left by earlier work on this "
                   "thread (a failed kernel launch of the caller's, or a fault of work queued earlier); the call "
                   "did nothing",
                   cudaGetErrorName(e), cudaGetErrorString(e));
}

tdm_status tdm__gpu_device::enter(tdm_ctx *ctx) {
  int cur = -1;
  if (prev_ >= 0) return TDM_OK; /* already entered */
  TDM_CUDA_TRY(cudaGetDevice(&cur), (void)0);
  if (cur != ctx->gpu->device) TDM_CUDA_TRY(cudaSetDevice(ctx->gpu->device), (void)0);
  prev_ = cur;
  return TDM_OK;
}

void tdm__gpu_device::leave() {
  int cur = -1;
  if (prev_ < 0) return;
  if (cudaGetDevice(&cur) != cudaSuccess || cur != prev_) (void)cudaSetDevice(prev_);
  (void)cudaGetLastError();
  prev_ = -1;
}

/* ---- device blocks ------------------------------------------------------- */

/* Parked scratch blocks a context keeps at most; beyond, freed at once. */
#define TDM_GPU_MAX_PARKED 16

/* Frees one block to where it came from (stream-ordered) and drops its record. */
static void block_release(tdm_ctx *ctx, tdm__dev_block *b) {
  if (ctx->has_alloc) ctx->alloc.free(ctx->alloc.user, b->p, b->bytes, ctx->gpu->device, (void *)tdm__stream(ctx));
  else (void)cudaFreeAsync(b->p, tdm__stream(ctx));
  tdm__ctx_free(ctx, b, sizeof *b);
}

/* Takes the record of p out of the list (NULL when p is not ours). */
static tdm__dev_block *block_unlink(tdm__gpu_state *g, void *p) {
  tdm__dev_block **at;
  for (at = &g->blocks; *at; at = &(*at)->next) {
    if ((*at)->p == p) {
      tdm__dev_block *b = *at;
      *at = b->next;
      return b;
    }
  }
  return NULL;
}

/* A new block from the caller's allocator or the default pool. */
static tdm_status block_new(tdm_ctx *ctx, size_t bytes, void **out) {
  tdm__gpu_state *g = ctx->gpu;
  void *p = NULL;
  tdm__count_alloc(ctx);
  if (tdm__alloc_should_fail())
    return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "out of device memory: %zu bytes (injected failure)", bytes);
  if (ctx->has_alloc) {
    p = ctx->alloc.alloc(ctx->alloc.user, bytes, g->device, (void *)tdm__stream(ctx));
    if (!p) return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "out of device memory: the allocator returned NULL for %zu bytes", bytes);
    if ((uintptr_t)p & 255u) {
      ctx->alloc.free(ctx->alloc.user, p, bytes, g->device, (void *)tdm__stream(ctx));
      return tdm__fail(TDM_ERR_OUT_OF_MEMORY,
                       "the allocator returned a device block that is not 256-byte aligned (%zu bytes); not used",
                       bytes);
    }
  } else {
    cudaError_t e = cudaMallocAsync(&p, bytes, tdm__stream(ctx));
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      if (e == cudaErrorMemoryAllocation)
        return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "out of device memory: %zu bytes", bytes);
      return tdm__cuda_fail(e, "cudaMallocAsync", __FILE__, __LINE__);
    }
  }
  *out = p;
  return TDM_OK;
}

/* Asked once per call: every allocation and wait of a call asks, and only
 * the caller can begin or end a capture, between calls. The answer is kept
 * with the call's number (tdm__call_id) in one word, so a context used by
 * several threads in turn never reads another call's answer. */
int tdm__gpu_capturing(const tdm_ctx *ctx) {
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  unsigned long long call = tdm__call_id(), memo = __atomic_load_n(&ctx->gpu->capture_memo, __ATOMIC_RELAXED);
  int capturing;
  if (call && memo >> 1 == call) return (int)(memo & 1);
  if (cudaStreamIsCapturing(tdm__stream(ctx), &cs) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  capturing = cs != cudaStreamCaptureStatusNone;
  __atomic_store_n(&ctx->gpu->capture_memo, call << 1 | (unsigned long long)capturing, __ATOMIC_RELAXED);
  return capturing;
}

tdm_status tdm__gpu_malloc(tdm_ctx *ctx, size_t bytes, void **out) {
  tdm__gpu_state *g = ctx->gpu;
  tdm__dev_block *b, *best = NULL, *rec;
  tdm_status st;
  int in_graph;
  *out = NULL;
  if (bytes == 0) return TDM_OK;
  in_graph = tdm__gpu_capturing(ctx);
  /* A parked block of at least bytes and at most twice that: reuse (not
   * into a graph being captured: tdm__gpu_scratch_free says why). */
  pthread_mutex_lock(&ctx->lock);
  for (b = in_graph ? NULL : g->blocks; b; b = b->next)
    if (b->parked && b->bytes >= bytes && b->bytes / 2 <= bytes && (!best || b->bytes < best->bytes)) best = b;
  if (best) {
    best->parked = 0;
    g->n_parked--;
    *out = best->p;
    pthread_mutex_unlock(&ctx->lock);
    return TDM_OK;
  }
  pthread_mutex_unlock(&ctx->lock);
  rec = (tdm__dev_block *)tdm__ctx_calloc(ctx, sizeof *rec);
  if (!rec) return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "out of host memory for a device block record");
  st = block_new(ctx, bytes, out);
  if (st == TDM_ERR_OUT_OF_MEMORY && g->n_parked > 0 && !in_graph) {
    /* Parked blocks of other sizes may be what is missing: give them back,
     * retry (not into a graph: their frees would become its nodes). */
    tdm__gpu_unpark_all(ctx);
    st = block_new(ctx, bytes, out);
  }
  if (st != TDM_OK) {
    tdm__ctx_free(ctx, rec, sizeof *rec);
    return st;
  }
  rec->p = *out;
  rec->bytes = bytes;
  rec->in_graph = in_graph;
  pthread_mutex_lock(&ctx->lock);
  rec->next = g->blocks;
  g->blocks = rec;
  pthread_mutex_unlock(&ctx->lock);
  return TDM_OK;
}

void tdm__gpu_free(tdm_ctx *ctx, void *p) {
  tdm__dev_block *b;
  if (!p) return;
  pthread_mutex_lock(&ctx->lock);
  b = block_unlink(ctx->gpu, p);
  pthread_mutex_unlock(&ctx->lock);
  if (b) block_release(ctx, b);
}

void tdm__gpu_scratch_free(tdm_ctx *ctx, void *p) {
  tdm__gpu_state *g = ctx->gpu;
  tdm__dev_block *b;
  int park = 0;
  if (!p) return;
  pthread_mutex_lock(&ctx->lock);
  for (b = g->blocks; b; b = b->next) {
    if (b->p == p) {
      if (g->n_parked < TDM_GPU_MAX_PARKED && !b->in_graph) {
        b->parked = 1;
        g->n_parked++;
        park = 1;
      }
      break;
    }
  }
  pthread_mutex_unlock(&ctx->lock);
  if (!park) tdm__gpu_free(ctx, p);
}

void tdm__gpu_unpark_all(tdm_ctx *ctx) {
  tdm__gpu_state *g = ctx->gpu;
  tdm__dev_block **at, *b, *drop = NULL;
  pthread_mutex_lock(&ctx->lock);
  for (at = &g->blocks; *at;) {
    if ((*at)->parked) {
      b = *at;
      *at = b->next;
      b->next = drop;
      drop = b;
    } else {
      at = &(*at)->next;
    }
  }
  g->n_parked = 0;
  pthread_mutex_unlock(&ctx->lock);
  while (drop) {
    b = drop;
    drop = b->next;
    block_release(ctx, b);
  }
}

/* ---- the end of a call ------------------------------------------------------ */

int tdm__gpu_queue_only(tdm_ctx *ctx, const void *a, const void *b, const void *c) {
  if (!(ctx->flags & TDM_CTX_STREAM_ORDERED)) return 0;
  if (a && !tdm__is_device_ptr(a)) return 0;
  if (b && !tdm__is_device_ptr(b)) return 0;
  if (c && !tdm__is_device_ptr(c)) return 0;
  return 1;
}

tdm_status tdm__gpu_finish(tdm_ctx *ctx, int queue_only, const char *where) {
  if (queue_only) return tdm__launch_check(where);
  return tdm__gpu_sync(ctx, where);
}

tdm_status tdm__gpu_ctx_sync(tdm_ctx *ctx) {
  tdm__gpu_device dev;
  tdm_status st;
  if ((st = dev.enter(ctx)) != TDM_OK) return st;
  return tdm__gpu_sync(ctx, "tdm_ctx_sync (work queued earlier on the context's stream)");
}

tdm_status tdm__gpu_in(tdm_ctx *ctx, const void *user, size_t bytes, tdm__dev_array *a) {
  tdm_status st;
  a->user = (void *)user;
  a->bytes = bytes;
  a->staged = 0;
  a->d = (void *)user;
  if (bytes == 0 || tdm__is_device_ptr(user)) return TDM_OK;
  st = tdm__gpu_malloc(ctx, bytes, &a->d);
  if (st != TDM_OK) return st;
  a->staged = 1;
  TDM_CUDA_TRY(cudaMemcpyAsync(a->d, user, bytes, cudaMemcpyHostToDevice, tdm__stream(ctx)),
               tdm__gpu_release(ctx, a));
  return TDM_OK;
}

tdm_status tdm__gpu_out(tdm_ctx *ctx, void *user, size_t bytes, tdm__dev_array *a) {
  tdm_status st;
  a->user = user;
  a->bytes = bytes;
  a->staged = 0;
  a->d = user;
  if (bytes == 0 || tdm__is_device_ptr(user)) return TDM_OK;
  st = tdm__gpu_malloc(ctx, bytes, &a->d);
  if (st != TDM_OK) return st;
  a->staged = 1;
  return TDM_OK;
}

tdm_status tdm__gpu_out_finish(tdm_ctx *ctx, tdm__dev_array *a) {
  if (!a->staged) return TDM_OK;
  TDM_CUDA_TRY(cudaMemcpyAsync(a->user, a->d, a->bytes, cudaMemcpyDeviceToHost, tdm__stream(ctx)), (void)0);
  a->copied = 1;
  return TDM_OK;
}

/* One retry after a wait (tdm__gpu_copy_committed); e is the first refusal. */
static tdm_status committed_retry(tdm_ctx *ctx, cudaError_t e, const char *what, const char *where, int line,
                                  cudaError_t (*again)(void *), void *arg) {
  (void)cudaGetLastError();
  if (!tdm__gpu_capturing(ctx)) {
    cudaError_t w = cudaStreamSynchronize(tdm__stream(ctx));
    if (w == cudaSuccess && (e = again(arg)) == cudaSuccess) return TDM_OK;
    if (w != cudaSuccess) e = w;
    (void)cudaGetLastError();
  }
  (void)what;
  return tdm__cuda_fail(e, where, __FILE__, line);
}

struct committed_op {
  tdm_ctx *ctx;
  void *dst;
  const void *src;
  size_t bytes;
  cudaMemcpyKind kind;
  int v;
};
static cudaError_t committed_copy(void *arg) {
  committed_op *o = (committed_op *)arg;
  return cudaMemcpyAsync(o->dst, o->src, o->bytes, o->kind, tdm__stream(o->ctx));
}
static cudaError_t committed_memset(void *arg) {
  committed_op *o = (committed_op *)arg;
  return cudaMemsetAsync(o->dst, o->v, o->bytes, tdm__stream(o->ctx));
}

tdm_status tdm__gpu_copy_committed(tdm_ctx *ctx, void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                                   const char *where) {
  committed_op o = {ctx, dst, src, bytes, kind, 0};
  cudaError_t e = committed_copy(&o);
  return e == cudaSuccess ? TDM_OK : committed_retry(ctx, e, "cudaMemcpyAsync", where, __LINE__, committed_copy, &o);
}

tdm_status tdm__gpu_memset_committed(tdm_ctx *ctx, void *p, int v, size_t bytes, const char *where) {
  committed_op o = {ctx, p, NULL, bytes, cudaMemcpyDefault, v};
  cudaError_t e = committed_memset(&o);
  return e == cudaSuccess ? TDM_OK : committed_retry(ctx, e, "cudaMemsetAsync", where, __LINE__, committed_memset, &o);
}

void tdm__gpu_release(tdm_ctx *ctx, tdm__dev_array *a) {
  if (a->staged && a->d) tdm__gpu_scratch_free(ctx, a->d);
  a->d = NULL;
  a->staged = 0;
}

tdm_status tdm__gpu_copy(tdm_ctx *ctx, void *dst, const void *src, size_t bytes) {
  tdm__gpu_device dev;
  tdm_status st = dev.enter(ctx);
  if (st != TDM_OK) return st;
  TDM_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, tdm__stream(ctx)), (void)0);
  return tdm__gpu_sync(ctx, "staging copy (cudaMemcpyAsync)");
}

/* A free pinned slot, claimed, or -1. */
static int small_claim(tdm__gpu_state *g) {
  if (!g->small) return -1;
  for (int i = 0; i < TDM__GPU_SMALL_SLOTS; i++) {
    unsigned bit = 1u << i;
    if (!(__atomic_fetch_or(&g->small_busy, bit, __ATOMIC_ACQUIRE) & bit)) return i;
  }
  return -1;
}

tdm_status tdm__gpu_read_small(tdm_ctx *ctx, const char *where, int parts, void *const *h, const void *const *d,
                               const size_t *bytes) {
  tdm__gpu_state *g = ctx->gpu;
  int slot, i;
  unsigned char *at;
  size_t off = 0;
  tdm_status st = TDM_OK;
  /* Nothing queued where the wait cannot come: its refusal, as it words it. */
  if (tdm__gpu_capturing(ctx)) return tdm__gpu_sync(ctx, where);
  slot = small_claim(g);
  at = slot >= 0 ? g->small + (size_t)slot * TDM__GPU_SMALL_BYTES : NULL;
  for (i = 0; i < parts && st == TDM_OK; off += bytes[i], i++) {
    cudaError_t e = cudaMemcpyAsync(at ? at + off : h[i], d[i], bytes[i], cudaMemcpyDeviceToHost, tdm__stream(ctx));
    if (e != cudaSuccess) {
      /* The copies queued before may still write the slot or h: done first. */
      st = tdm__cuda_fail(e, where, __FILE__, __LINE__);
      (void)cudaStreamSynchronize(tdm__stream(ctx));
      (void)cudaGetLastError();
    }
  }
  if (st == TDM_OK) st = tdm__gpu_sync(ctx, where);
  for (i = 0, off = 0; st == TDM_OK && at && i < parts; off += bytes[i], i++) memcpy(h[i], at + off, bytes[i]);
  if (slot >= 0) __atomic_fetch_and(&g->small_busy, ~(1u << slot), __ATOMIC_RELEASE);
  return st;
}

tdm_status tdm__gpu_sync(tdm_ctx *ctx, const char *where) {
  if (tdm__gpu_capturing(ctx))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT,
                     "%s: this call waits for the device, which it cannot do while the context's stream is being "
                     "captured into a CUDA graph; capture only calls that do not wait (a TDM_CTX_STREAM_ORDERED "
                     "context, device arrays: sorts, finds and queries; see tandem/common.h)",
                     where);
  tdm__count_wait(ctx);
  cudaError_t e = cudaStreamSynchronize(tdm__stream(ctx));
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return tdm__cuda_fail(e, where, __FILE__, __LINE__);
  }
  return TDM_OK;
}
