/** @file
 * tandem/common.h: status codes, backends, types and the execution context.
 *
 * Every tandem operation returns a tdm_status. Rules that hold for every call:
 *  - On failure tdm_last_error() describes what went wrong and where.
 *  - All-or-nothing: a failed call leaves every structure exactly as it was and
 *    every caller input untouched. Output arrays of a failed call are unspecified.
 *  - Calls are synchronous: when a call returns, its results are visible wherever
 *    they were written.
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
} tdm_status;

/** Name of a status ("TDM_ERR_NO_DEVICE"); "TDM_STATUS_UNKNOWN" for values
 *  outside the enum. Never NULL. */
TDM_API const char *tdm_status_name(tdm_status s);

/** Thread-local, human-readable detail of this thread's last failed call; ""
 *  if no call on this thread has failed. Valid until the next failing call on
 *  the same thread. */
TDM_API const char *tdm_last_error(void);

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

/** Options for tdm_ctx_create; zero-initialise for defaults. */
typedef struct tdm_ctx_opts {
  tdm_backend backend; /**< AUTO: CUDA when a usable device exists, else CPU */
  int cpu_threads;     /**< most threads a call uses (fewer while other processes keep cores busy); 0: all online cores; negative is invalid */
  int cuda_device;     /**< device ordinal */
  void *cuda_stream;   /**< a cudaStream_t to run on; NULL: the context's own stream */
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

/** Destroys a context and its scratch memory. NULL is a no-op. */
TDM_API void tdm_ctx_destroy(tdm_ctx *ctx);

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
