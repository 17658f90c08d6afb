/*
 * gpu_common.cuh: the CUDA backend's private header, and its plumbing:
 * checked CUDA calls, the per-context GPU state, device allocation through the
 * failure-injection hook, staging of caller arrays that may live in host or
 * device memory, the launch shape and grid-stride loop every kernel uses, and
 * the one cleanup style (tdm__gpu_scope: device memory of a call, released on
 * every return path).
 *
 * Layering (as in CUB): public API (src/) -> operation tables, one per
 * structure (gpu/<structure>_gpu.cu: stage arrays, launch the width's
 * instantiation, and its policy where the kernels take one, chosen at
 * create) -> kernels (thin loops around the shared host/device functions of
 * include/tandem/detail/).
 */
#ifndef TANDEM_GPU_COMMON_CUH
#define TANDEM_GPU_COMMON_CUH

#include <cuda_runtime.h>

#include "../src/backend.h"
#include "tandem/detail/csr.h"

/* A device block the context handed out: its size (every block goes back to
 * the caller's allocator with the size it was taken with), whether it is
 * scratch parked in the context's cache for the next call, and whether it
 * was taken while the context's stream was being captured into a CUDA graph
 * (then it is a graph allocation: never parked, its free is a free node of
 * the same graph). */
typedef struct tdm__dev_block {
  void *p;
  size_t bytes;
  int parked;
  int in_graph;
  struct tdm__dev_block *next;
} tdm__dev_block;

/* Per-context GPU state (ctx->gpu). */
struct tdm__gpu_state {
  cudaStream_t stream;
  int own_stream;
  int device;
  int sm_count;           /* the device's multiprocessors */
  int resident_per_sm;    /* blocks of TDM_GPU_BLOCK threads one SM holds at once */
  tdm__dev_block *blocks; /* live and parked device blocks (guarded by ctx->lock) */
  int n_parked;
  unsigned long long capture_memo; /* (call number << 1) | capturing, for tdm__gpu_capturing */
  /* Pinned slots for small results (tdm__gpu_read_small): NULL when the
   * pinned allocation failed (then pageable memory, as before); busy has a
   * bit per slot claimed. */
  unsigned char *small;
  unsigned small_busy;
};

/* Small results (a count, a size, a min and max) come to the host through
 * pinned memory: a copy to pageable memory is staged by the driver (a
 * second copy, synchronous), one to pinned memory is a plain DMA the wait
 * covers. TDM__GPU_SMALL_SLOTS slots of TDM__GPU_SMALL_BYTES each, claimed
 * per read, so concurrent read-only calls on one context take their own;
 * with every slot taken a read goes to pageable memory as before. */
#define TDM__GPU_SMALL_SLOTS 8
#define TDM__GPU_SMALL_BYTES 64

/* The operation tables, gathered into the backend descriptor by
 * backend_gpu.cu. */
extern const tdm__sort_ops tdm__sort_cuda_ops;
extern const tdm__hash_ops tdm__hash_cuda_ops;
extern const tdm__btree_ops tdm__btree_cuda_ops;
extern const tdm__ops_ops tdm__ops_cuda_ops; /* the data operations (ops_gpu.cu) */

/* Context hooks (runtime.cu). */
tdm_status tdm__gpu_ctx_init(tdm_ctx *ctx);
void tdm__gpu_ctx_fini(tdm_ctx *ctx);

/* ---- errors ---------------------------------------------------------------- */

/* Runs a CUDA call; on failure records "where: CUDA error text" and returns
 * TDM_ERR_DEVICE (TDM_ERR_OUT_OF_MEMORY for cudaErrorMemoryAllocation) from
 * the enclosing function, after running the cleanup statement ((void)0 where
 * a tdm__gpu_scope does the cleaning). */
#define TDM_CUDA_TRY(call, cleanup)                                                          \
  do {                                                                                       \
    cudaError_t tdm__e = (call);                                                             \
    if (tdm__e != cudaSuccess) {                                                             \
      (void)cudaGetLastError();                                                              \
      cleanup;                                                                               \
      return tdm__cuda_fail(tdm__e, #call, __FILE__, __LINE__);                             \
    }                                                                                        \
  } while (0)

/* Records a CUDA failure and maps it to a status. */
tdm_status tdm__cuda_fail(cudaError_t e, const char *what, const char *file, int line);

/* Reports a failed launch among the kernels just issued (where names them).
 * It reads (and clears) the thread's last CUDA error, so an error pending
 * from before the call would be blamed on tandem's kernels: every call that
 * launches checks for one first (tdm__gpu_scope::enter). */
tdm_status tdm__launch_check(const char *where);
/* TDM_OK, or TDM_ERR_DEVICE when the thread's last CUDA error was already
 * set before this call began (a failed launch of the caller's own, or a
 * fault of earlier queued work): said so, the error cleared where CUDA
 * allows (a sticky fault stays), and the call does nothing. */
tdm_status tdm__gpu_pending_check(void);

/* ---- context, memory, staging ------------------------------------------------ */

/* The caller's current device is process state tandem does not own: every
 * operation makes the context's device current for its duration and puts the
 * caller's back on return, whichever way it returns. One object per call:
 *   tdm__gpu_device dev;  if ((st = dev.enter(ctx)) != TDM_OK) return st;
 * (tdm__gpu_scope holds one, as its first member, so the call's device memory
 * is released while the context's device is still current.) Nested calls
 * (the B+ tree sorting through the context's sort table) save and restore the same
 * device. */
class tdm__gpu_device {
 public:
  tdm__gpu_device() : prev_(-1) {}
  ~tdm__gpu_device() { leave(); }
  tdm__gpu_device(const tdm__gpu_device &) = delete;
  tdm__gpu_device &operator=(const tdm__gpu_device &) = delete;
  tdm_status enter(tdm_ctx *ctx);
  void leave();

 private:
  int prev_; /* the caller's device to restore; -1: nothing to restore */
};

static inline cudaStream_t tdm__stream(const tdm_ctx *ctx) { return ctx->gpu->stream; }

/* 1 while the context's stream is being captured into a CUDA graph. */
int tdm__gpu_capturing(const tdm_ctx *ctx);

/* Device allocation, stream-ordered on the context's stream: a parked
 * scratch block of a fitting size when the context has one (so repeated calls
 * of one size allocate nothing), else the caller's allocator (ctx->alloc:
 * device ordinal and stream passed, 256-byte alignment checked) or
 * cudaMallocAsync from the device's default pool, whose settings tandem
 * leaves alone. Through the failure-injection hook. bytes 0 gives NULL and
 * TDM_OK. */
tdm_status tdm__gpu_malloc(tdm_ctx *ctx, size_t bytes, void **out);
/* Frees structure storage from tdm__gpu_malloc (NULL is a no-op), at once,
 * stream-ordered. */
void tdm__gpu_free(tdm_ctx *ctx, void *p);
/* Ends the use of a scratch block of one call: parked in the context's cache
 * for the next call on the same stream (stream order makes the reuse safe),
 * freed when the cache is full or the block was taken during a graph
 * capture.
 * During a capture of the context's stream no parked block is handed out
 * and none taken then is parked: each block of a captured call is allocated
 * and freed inside the graph (cudaMallocAsync / cudaFreeAsync become
 * allocation and free nodes), so the graph owns no memory of the context's
 * cache (which the context may free or give to another call while the
 * graph still runs) and can be replayed any number of times. */
void tdm__gpu_scratch_free(tdm_ctx *ctx, void *p);
/* Frees every parked block (context destruction, or an allocation that
 * failed and retries). */
void tdm__gpu_unpark_all(tdm_ctx *ctx);

/* The end of a call. queue_only: the call may return without waiting (a
 * TDM_CTX_STREAM_ORDERED context and no caller array in host memory); then
 * only launch errors are checked and device faults surface in tdm_ctx_sync.
 * Otherwise waits for the stream (tdm__gpu_sync). */
tdm_status tdm__gpu_finish(tdm_ctx *ctx, int queue_only, const char *where);
/* 1 when ctx is stream-ordered and every non-NULL pointer given is device
 * memory. */
int tdm__gpu_queue_only(tdm_ctx *ctx, const void *a, const void *b, const void *c);
/* cudaMemcpyAsync / cudaMemsetAsync on the context's stream for a step
 * after a call's commit point (queued work already changes the structure or
 * the caller's arrays): a refusal is retried once after waiting for the
 * stream (not while capturing), so a transient failure does not leave the
 * call half applied; a lasting one (a device fault) is reported. */
tdm_status tdm__gpu_copy_committed(tdm_ctx *ctx, void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                                   const char *where);
tdm_status tdm__gpu_memset_committed(tdm_ctx *ctx, void *p, int v, size_t bytes, const char *where);
/* tdm_ctx_sync of a CUDA context. */
tdm_status tdm__gpu_ctx_sync(tdm_ctx *ctx);
/* The backend's copy (backend.h): host <-> device on the context's stream,
 * waited for. */
tdm_status tdm__gpu_copy(tdm_ctx *ctx, void *dst, const void *src, size_t bytes);

/* A caller array as the device sees it. For a device (or managed) pointer the
 * array is used in place; a host array gets a device copy (input) or a device
 * buffer that tdm__gpu_out_finish copies back (output). */
typedef struct tdm__dev_array {
  void *d;      /* device address to use */
  void *user;   /* caller's pointer */
  size_t bytes;
  int staged;   /* 1: d is a staging buffer owned by us */
  int copied;   /* 1: tdm__gpu_out_finish queued the copy back to user */
} tdm__dev_array;

/* Input: stages host data to the device (async on the context's stream). */
tdm_status tdm__gpu_in(tdm_ctx *ctx, const void *user, size_t bytes, tdm__dev_array *a);
/* Output: a device buffer for results destined for user. */
tdm_status tdm__gpu_out(tdm_ctx *ctx, void *user, size_t bytes, tdm__dev_array *a);
/* Copies a staged output back to the host (async); no-op when in place. */
tdm_status tdm__gpu_out_finish(tdm_ctx *ctx, tdm__dev_array *a);
/* Releases a staging buffer; no-op when in place. */
void tdm__gpu_release(tdm_ctx *ctx, tdm__dev_array *a);
/* Waits for the context's stream and reports any asynchronous error;
 * counted as a host wait (ctx->n_waits). While the stream is being captured
 * into a CUDA graph a wait is impossible (it would end the capture): then it
 * fails with TDM_ERR_INVALID_ARGUMENT naming where, and the capture stays
 * valid. */
tdm_status tdm__gpu_sync(tdm_ctx *ctx, const char *where);
/* Reads parts device values (d[i], bytes[i] bytes each, at most
 * TDM__GPU_SMALL_BYTES in all) into h[i], queued on the context's stream
 * after its work, then waits for the stream once (tdm__gpu_sync) through a
 * pinned slot. */
tdm_status tdm__gpu_read_small(tdm_ctx *ctx, const char *where, int parts, void *const *h, const void *const *d,
                               const size_t *bytes);
/* One value: tdm__gpu_read_small of one part. */
static inline tdm_status tdm__gpu_read(tdm_ctx *ctx, void *h, const void *d, size_t bytes, const char *where) {
  return tdm__gpu_read_small(ctx, where, 1, &h, &d, &bytes);
}

/* The device memory one call takes: scratch buffers and staged caller arrays,
 * all released (stream-ordered) when the scope ends, whichever way the call
 * returns. keep() hands a buffer over to a longer-lived owner (a structure). */
class tdm__gpu_scope {
 public:
  explicit tdm__gpu_scope(tdm_ctx *ctx) : dev_(), ctx_(ctx), nbuf_(0), narr_(0), wait_(0) {}
  ~tdm__gpu_scope() {
    /* A call that queued a copy back into a caller's host array and then
     * failed before its wait must not return while the copy may still
     * write there (on success the stream is idle and this returns at once). */
    int wait = wait_;
    for (int i = 0; i < narr_; i++) wait |= arr_[i]->copied;
    if (wait && !tdm__gpu_capturing(ctx_)) (void)cudaStreamSynchronize(tdm__stream(ctx_));
    for (int i = 0; i < narr_; i++) tdm__gpu_release(ctx_, arr_[i]);
    for (int i = 0; i < nbuf_; i++) tdm__gpu_scratch_free(ctx_, buf_[i]);
    /* dev_ (restoring the caller's device) is destroyed after this body. */
  }
  /* Makes the context's device current until the scope ends, after
   * refusing to start over a CUDA error left pending by earlier work
   * (tdm__gpu_pending_check), before anything of the caller's is touched. */
  tdm_status enter() {
    tdm_status st = tdm__gpu_pending_check();
    return st != TDM_OK ? st : dev_.enter(ctx_);
  }
  tdm__gpu_scope(const tdm__gpu_scope &) = delete;
  tdm__gpu_scope &operator=(const tdm__gpu_scope &) = delete;

  /* Scratch of bytes (NULL for 0), freed with the scope. */
  template <typename T>
  tdm_status alloc(size_t bytes, T **out) {
    void *p = NULL;
    tdm_status st;
    *out = NULL;
    if (nbuf_ == MAX) return full();
    if ((st = tdm__gpu_malloc(ctx_, bytes, &p)) != TDM_OK) return st;
    if (p) buf_[nbuf_++] = p;
    *out = (T *)p;
    return TDM_OK;
  }
  /* A caller's input / output array on the device (tdm__gpu_in / _out). */
  tdm_status in(const void *user, size_t bytes, tdm__dev_array *a) {
    if (narr_ == MAX) return full();
    arr_[narr_++] = a;
    a->d = NULL;
    a->staged = a->copied = 0;
    return tdm__gpu_in(ctx_, user, bytes, a);
  }
  tdm_status out(void *user, size_t bytes, tdm__dev_array *a) {
    if (narr_ == MAX) return full();
    arr_[narr_++] = a;
    a->d = NULL;
    a->staged = a->copied = 0;
    return tdm__gpu_out(ctx_, user, bytes, a);
  }
  /* 1 if a caller array of the call was staged through the host. */
  int staged() const {
    for (int i = 0; i < narr_; i++)
      if (arr_[i]->staged) return 1;
    return 0;
  }
  /* The end of the call (tdm__gpu_finish): no wait on a stream-ordered
   * context when nothing was staged through the host. */
  tdm_status finish(const char *where) const {
    return tdm__gpu_finish(ctx_, (ctx_->flags & TDM_CTX_STREAM_ORDERED) && !staged(), where);
  }
  /* The call queued a copy into a caller's host array outside
   * tdm__gpu_out_finish: the scope's end waits for it (see the destructor). */
  void wait_at_end() { wait_ = 1; }
  /* Stops tracking p: its new owner frees it. */
  void keep(void *p) {
    for (int i = 0; i < nbuf_; i++)
      if (buf_[i] == p) buf_[i] = NULL;
  }

 private:
  /* The most a call takes: tdm_unique by hashing, staged, takes 21 (its
   * input, two tables, the first's export, the sort of the groups,
   * outputs). */
  enum { MAX = 24 };
  static tdm_status full() { return tdm__fail(TDM_ERR_DEVICE, "internal: more than 24 device buffers in one call"); }
  tdm__gpu_device dev_; /* first member: destroyed last */
  tdm_ctx *ctx_;
  void *buf_[MAX];
  tdm__dev_array *arr_[MAX];
  int nbuf_, narr_;
  int wait_;
};

/* ---- launch shape -------------------------------------------------------------- */

/* Threads per block of every kernel. */
#define TDM_GPU_BLOCK 256u

/* Grid size for a grid-stride loop over n elements in blocks of TDM_GPU_BLOCK. */
static inline unsigned tdm__grid(size_t n) {
  size_t g = (n + TDM_GPU_BLOCK - 1) / TDM_GPU_BLOCK;
  if (g > 65535u * 16u) g = 65535u * 16u;
  return (unsigned)(g ? g : 1);
}

/* Blocks per SM of a resident grid when the device does not say: 8 blocks
 * of TDM_GPU_BLOCK threads are the 2048 threads an sm_80 / sm_90
 * multiprocessor holds at once. */
#define TDM_GPU_RESIDENT_BLOCKS_PER_SM 8u

/* Grid size for a grid-stride (or tile-stride) loop over n elements that
 * flushes per-block counters with global atomics or reuses block-wide
 * scratch: at most one resident wave (the blocks the device's SMs hold at
 * once, as it reports them), so the flushes number a few thousand however
 * large n is, instead of one set per 256 elements all aimed at the same few
 * words. */
static inline unsigned tdm__grid_resident(const tdm_ctx *ctx, size_t n) {
  unsigned per_sm = ctx->gpu->resident_per_sm > 0 ? (unsigned)ctx->gpu->resident_per_sm
                                                  : TDM_GPU_RESIDENT_BLOCKS_PER_SM;
  unsigned g = tdm__grid(n), cap = per_sm * (unsigned)ctx->gpu->sm_count;
  return cap && g > cap ? cap : g;
}

/* The grid-stride loop: each thread takes i, i + grid size, ... below n. */
#define TDM_GRID_STRIDE(i, n) \
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

/* Positions a warp of a fill by output position takes at once, 32 a turn. */
#define TDM_CSR_SPAN 256u

/* The grid of tdm__csr_warp_fill over total positions (whole warps). */
static inline unsigned tdm__csr_grid(uint64_t total) {
  return tdm__grid((size_t)((total + TDM_CSR_SPAN - 1) / TDM_CSR_SPAN * 32));
}

/* Output positions [0, total) of CSR offsets o[0..n] (csr.h; o[n] = total)
 * by position, for the fills whose owners write runs of one output (a
 * join's left rows, a B-tree range's queries): put(r, owner of r) once for
 * each position, a span of TDM_CSR_SPAN consecutive positions per warp.
 * Lane 0 finds the span's first owner (one search of o), then each turn of
 * 32 positions reads the 32 offsets after the turn's first owner at once
 * (coalesced) and each lane counts, by a binary search over the lanes, the
 * offsets at or below its position: its owner. Only where those 32 offsets
 * end inside the turn (owners of empty runs between them) does a lane walk
 * o itself (tdm__csr_next, galloping), and lane 31 where they end at the
 * next turn's first position. So a hot owner's run is spread over the
 * whole grid like any other positions, and no position pays a search of
 * its own. Called by whole warps: launch tdm__csr_grid(total). */
template <typename F>
static __device__ __forceinline__ void tdm__csr_warp_fill(const uint64_t *o, uint64_t n, uint64_t total, F put) {
  const unsigned full = 0xffffffffu, lane = threadIdx.x & 31u;
  const uint64_t warps = ((uint64_t)gridDim.x * blockDim.x) >> 5, spans = (total + TDM_CSR_SPAN - 1) / TDM_CSR_SPAN;
  for (uint64_t w = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; w < spans; w += warps) {
    uint64_t base = w * TDM_CSR_SPAN, end = total - base < TDM_CSR_SPAN ? total : base + TDM_CSR_SPAN;
    uint64_t cur = __shfl_sync(full, lane == 0 ? tdm__csr_owner(o, n, base) : 0, 0); /* owner of base */
    for (; base < end; base += 32) {
      uint64_t j = cur + 1 + lane, st = j <= n ? o[j] : UINT64_MAX, r = base + lane, own, next;
      uint64_t top = __shfl_sync(full, st, 31);
      if (top > base + 31) {
        /* Every offset up to the turn's last position is in the window. */
        unsigned c = 0;
        for (unsigned step = 16; step; step >>= 1)
          if (__shfl_sync(full, st, c + step - 1) <= r) c += step;
        own = cur + c;
      } else {
        own = r < end ? tdm__csr_next(o, n, cur, r) : cur;
      }
      /* The owner of the next turn's first position. */
      if (top > base + 32) {
        next = cur + (uint64_t)__popc(__ballot_sync(full, st <= base + 32));
      } else {
        next = lane == 31 && base + 32 < end ? tdm__csr_next(o, n, own, base + 32) : cur;
        next = __shfl_sync(full, next, 31);
      }
      if (r < end) put(r, own);
      cur = next;
    }
  }
}

/* out[i] = i: the row indices a sort or a table carries as values. */
template <typename I>
__global__ void tdm__iota_kernel(I *out, size_t n) {
  TDM_GRID_STRIDE(i, n) out[i] = (I)i;
}

#endif /* TANDEM_GPU_COMMON_CUH */
