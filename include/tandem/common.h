/** @file
 * tandem/common.h: status codes, backends, types and the execution context.
 *
 * Every tandem operation returns a tdm_status. Rules that hold for every call:
 *  - On failure tdm_last_error() describes what went wrong and where.
 *  - All-or-nothing: a failed call leaves every structure exactly as it was and
 *    every caller input untouched. Output arrays of a failed call are unspecified.
 *  - Calls are synchronous: when a call returns, its results are visible wherever
 *    they were written. A CUDA context created with TDM_CTX_STREAM_ORDERED
 *    relaxes this for calls on device arrays (see tdm_ctx_opts.flags).
 *  - Memory spaces: on a CUDA context every array may live in host or device
 *    memory (cudaMalloc or managed); results go where the output pointer points.
 *    On a CPU context a device pointer is TDM_ERR_INVALID_ARGUMENT.
 *  - n == 0 is a valid no-op; array pointers may then be NULL.
 *  - Arrays are naturally aligned for their element type (4 or 8 bytes); a
 *    misaligned array is TDM_ERR_INVALID_ARGUMENT.
 *  - Inputs and outputs of one call must not overlap unless the call says so.
 *  - Concurrent read-only calls on one structure are safe; mutation needs
 *    exclusive access. One context may be shared by several threads.
 *  - Key order for signed and float types is numeric; floats follow IEEE-754
 *    totalOrder: -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN.
 */
#ifndef TANDEM_COMMON_H
#define TANDEM_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define TDM_API
#elif defined(__GNUC__)
#define TDM_API __attribute__((visibility("default")))
#else
#define TDM_API
#endif

/** Result of every tandem operation. */
typedef enum tdm_status {
  TDM_OK = 0,
  TDM_ERR_INVALID_ARGUMENT = 1, /**< NULL where data is needed, bad enum, size overflow, aliasing, wrong memory space */
  TDM_ERR_UNSUPPORTED = 2,      /**< a type/option combination this operation does not define */
  TDM_ERR_OUT_OF_MEMORY = 3,    /**< host or device allocation failed */
  TDM_ERR_NO_DEVICE = 4,        /**< CUDA backend asked for, but not built in or no usable device/driver */
  TDM_ERR_DEVICE = 5,           /**< a CUDA call failed; tdm_last_error() has the CUDA error text */
  TDM_ERR_CAPACITY = 6,         /**< a fixed-capacity structure or caller buffer is too small */
  TDM_ERR_CORRUPT = 7,          /**< a validate call found a broken invariant */
  TDM_ERR_COMM = 8,             /**< a communication (MPI) call failed; see tandem/mpi.h */
} tdm_status;

/** Name of a status ("TDM_ERR_NO_DEVICE"); "TDM_STATUS_UNKNOWN" for values
 *  outside the enum. Never NULL. */
TDM_API const char *tdm_status_name(tdm_status s);

/** Thread-local, human-readable detail of this thread's last failed call; ""
 *  if no call on this thread has failed. Valid until the next failing call on
 *  the same thread. */
TDM_API const char *tdm_last_error(void);

/** Sets this thread's tdm_last_error() text (printf-style) and returns s.
 *  Meant for libraries layered on tandem (tandem_mpi uses it to report which
 *  rank failed) so their callers keep one place to look for the reason. */
TDM_API tdm_status tdm_set_last_error(tdm_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/** Library version, "MAJOR.MINOR.PATCH". */
TDM_API const char *tdm_version(void);

/** Where a context runs its work. */
typedef enum tdm_backend {
  TDM_BACKEND_AUTO = 0, /**< CUDA when a usable device exists, else CPU */
  TDM_BACKEND_CPU = 1,
  TDM_BACKEND_CUDA = 2
} tdm_backend;

/** Element types for keys and values. */
typedef enum tdm_type {
  TDM_U32 = 1,
  TDM_U64 = 2,
  TDM_I32 = 3,
  TDM_I64 = 4,
  TDM_F32 = 5,
  TDM_F64 = 6
} tdm_type;

/** The caller's allocator (tdm_ctx_opts.allocator).
 *
 *  When a context is created with one, every allocation tandem makes for that
 *  context and for the structures made with it goes through it: host and
 *  device memory, scratch and structure storage (hash slots, B-tree nodes,
 *  the context itself). An RMM resource or PyTorch's caching allocator can
 *  stand behind it.
 *  - alloc: device is -1 for host memory, else the CUDA device ordinal;
 *    stream is the context's cudaStream_t for device memory (NULL for host),
 *    and a stream-ordered allocator may hand out memory that becomes usable
 *    in that stream's order. Return NULL on failure: the call then fails with
 *    TDM_ERR_OUT_OF_MEMORY and changes nothing.
 *  - Blocks must be aligned to at least 64 bytes (host) or 256 bytes
 *    (device). A misaligned block is freed at once, never used, and the call
 *    fails with TDM_ERR_OUT_OF_MEMORY.
 *  - free: called once per block with the same bytes, device and stream it
 *    was allocated with; every block is freed by the time the structure or
 *    context owning it is destroyed.
 *  - Both functions may be called from several threads at once when the
 *    context is shared by threads; they must be thread-safe then.
 *  - The allocator (and what user points to) must outlive the context.
 *  Steady state: a repeated read-only call of the same size (sort, find,
 *  rank, range_count) on a warm context allocates nothing: the context keeps
 *  its scratch blocks until it is destroyed or trimmed (tdm_ctx_trim). */
struct tdm_allocator {
  /** A block of bytes (host: device -1, stream NULL; else device memory of that ordinal, on that stream), or NULL. */
  void *(*alloc)(void *user, size_t bytes, int device, void *stream);
  /** Gives back a block from alloc, with the bytes, device and stream it was taken with. */
  void (*free)(void *user, void *ptr, size_t bytes, int device, void *stream);
  void *user; /**< passed to both functions */
};
/** The caller's allocator; see struct tdm_allocator. */
typedef struct tdm_allocator tdm_allocator;

/** Context flags (tdm_ctx_opts.flags). */
enum {
  /** CUDA contexts: a call whose caller arrays are all device memory is
   *  queued on the context's stream and returns without waiting for the GPU
   *  (sort, sort_pairs, argsort, hash find, fixed-capacity hash insert, B-tree find, rank, range_count). Its outputs are ready for later work on that
   *  stream, and for the host after tdm_ctx_sync. Calls that must bring a
   *  device-computed value to the host wait: sizes and counts written to host
   *  memory, growth of a hash table, TDM_ERR_CAPACITY checks, erase counts,
   *  exports, hash create / erase / clear, hash size after queued inserts,
   *  hash insert into a growing table (into a fixed-capacity one it queues
   *  whenever the batch certainly fits and waits only to decide
   *  TDM_ERR_CAPACITY; see tandem/hash.h), B-tree build / insert / erase /
   *  range; their
   *  header comments say so. Views never wait. A call with any host array waits too (it copies through the
   *  host), so host arrays never race. Argument and allocation errors are
   *  returned at once; a fault on the device is returned as TDM_ERR_DEVICE
   *  (with the CUDA text in tdm_last_error) by tdm_ctx_sync or the next call
   *  that waits.
   *  Several contexts over one structure: a structure belongs to the context
   *  it was made with, and its calls run on that context's stream. Work
   *  queued on another stream that reads a structure must be ordered after
   *  the mutating call that preceded it (an event, or tdm_ctx_sync), and a
   *  mutation must be ordered after every reader, exactly as for any CUDA
   *  buffer shared between streams.
   *  CUDA graphs: the calls that do not wait may be captured (the device
   *  memory they take is allocated and freed inside the graph, so it can be
   *  replayed); a call that would wait fails with TDM_ERR_INVALID_ARGUMENT
   *  during a capture of the context's stream and leaves the capture valid.
   *  On a CPU context the flag is accepted and changes nothing.
   *  The GPU behaviour is compiled and tested on the CPU only until a GPU
   *  run of bench/device-check.sh checks it (0 host waits, graph capture). */
  TDM_CTX_STREAM_ORDERED = 1u << 0,
  /** CPU contexts: keep no freed mappings (see "Kept mappings" at
   *  tdm_ctx_trim). Every large block a structure or a call gives back is
   *  then returned to the operating system at once, and every new one is
   *  fresh memory. Accepted, and changing nothing, on a CUDA context and
   *  with a caller's allocator, where no mappings are kept anyway. */
  TDM_CTX_NO_MAP_CACHE = 1u << 1
};

/** Options for tdm_ctx_create; zero-initialise for defaults. */
typedef struct tdm_ctx_opts {
  tdm_backend backend; /**< AUTO: CUDA when a usable device exists, else CPU */
  int cpu_threads;     /**< most threads a call uses (fewer while other processes keep cores busy); 0: all online cores; negative is invalid */
  int cuda_device;     /**< device ordinal */
  void *cuda_stream;   /**< a cudaStream_t to run on; NULL: the context's own stream */
  unsigned flags;      /**< TDM_CTX_STREAM_ORDERED, TDM_CTX_NO_MAP_CACHE; 0 = defaults; unknown bits are invalid */
  const tdm_allocator *allocator; /**< NULL: tandem's own allocation; else both functions must be set */
} tdm_ctx_opts;

/** An execution context: backend, thread count, CUDA device and stream, and
 *  reusable scratch memory. Structures keep a pointer to the context they were
 *  created with; destroy them before the context. */
typedef struct tdm_ctx tdm_ctx;

/** Creates a context. opts NULL means all defaults.
 *  Returns TDM_ERR_NO_DEVICE when CUDA is asked for explicitly but is not built
 *  in or no usable device/driver exists (AUTO falls back to the CPU instead),
 *  TDM_ERR_INVALID_ARGUMENT for a bad backend, negative thread count or device
 *  ordinal out of range, TDM_ERR_OUT_OF_MEMORY, TDM_ERR_DEVICE. *out is set only
 *  on success. */
TDM_API tdm_status tdm_ctx_create(const tdm_ctx_opts *opts, tdm_ctx **out);

/** Destroys a context, its scratch memory and the mappings it keeps (see
 *  tdm_ctx_trim). NULL is a no-op. */
TDM_API void tdm_ctx_destroy(tdm_ctx *ctx);

/** Waits until the context's queued work is done, and reports a device fault
 *  of that work: TDM_OK, or TDM_ERR_DEVICE with the CUDA error text in
 *  tdm_last_error(). Needed only with TDM_CTX_STREAM_ORDERED (before the host
 *  reads results); harmless otherwise. On a CPU context it returns TDM_OK at
 *  once. TDM_ERR_INVALID_ARGUMENT for a NULL context. */
TDM_API tdm_status tdm_ctx_sync(tdm_ctx *ctx);

/** Gives back to the operating system the memory a context keeps for reuse:
 *  its kept mappings and its idle host scratch block (a call running on
 *  another thread keeps the block it holds). Later calls work as before and
 *  take fresh memory. Returns TDM_OK, or TDM_ERR_INVALID_ARGUMENT for a NULL
 *  context.
 *
 *  Kept mappings: fresh pages cost a page fault and the kernel's zeroing
 *  when first touched, which made up 37-70 % of the time of growing a hash
 *  table from empty and of building a B-tree. So a CPU context without a
 *  caller's allocator keeps the large blocks (whole 2 MiB huge pages: hash
 *  tables and tags of 2 MiB and more, B-tree node arrays of 8 MiB and more,
 *  scratch and batch copies of 4 MiB and more) that its structures and calls
 *  give back, and hands them out again, zeroed where the structure needs
 *  zeroed memory, to a later request of that size or up to half smaller. It holds at
 *  most the larger of 64 MiB and three times the largest block given back
 *  since it was last emptied (a table grown by doubling gives back
 *  predecessors and tag arrays that add up to a little more than its own
 *  size), and never more than a quarter of physical memory; the oldest
 *  blocks are unmapped first. So after tdm_hash_destroy or
 *  tdm_btree_destroy the process may keep two to three times that
 *  structure's memory resident until the context is trimmed or
 *  destroyed, or a later allocation reuses it. An allocation that the
 *  operating system refuses empties the kept mappings and is tried once
 *  more before the call fails with TDM_ERR_OUT_OF_MEMORY. Threads sharing a
 *  context share its kept mappings (under a lock). No mappings are kept
 *  with a caller's allocator (it does its own caching, and gets every block
 *  back when the structure owning it is destroyed), on CUDA contexts, or
 *  with TDM_CTX_NO_MAP_CACHE. Tested on the CPU. */
TDM_API tdm_status tdm_ctx_trim(tdm_ctx *ctx);

/** The resolved backend: TDM_BACKEND_CPU or TDM_BACKEND_CUDA, never AUTO.
 *  TDM_BACKEND_AUTO for a NULL context. */
TDM_API tdm_backend tdm_ctx_backend(const tdm_ctx *ctx);

/** Number of usable CUDA devices: 0 when not built with CUDA, when no driver is
 *  installed or when the driver is too old for the runtime. */
TDM_API int tdm_cuda_device_count(void);

/** Size in bytes of one element of type t; 0 for a value outside the enum. */
TDM_API size_t tdm_type_size(tdm_type t);

/** Name of a type ("u32", "f64"); "?" for a value outside the enum. */
TDM_API const char *tdm_type_name(tdm_type t);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_COMMON_H */
