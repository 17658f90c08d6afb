/** @file
 * tandem/services.h: the core's services for libraries layered on tandem
 * (tandem_mpi), so that they keep the core's promises without copies of its
 * internals:
 *  - allocation through the context's allocator (tdm_ctx_opts.allocator),
 *    with the core's failure-injection hook, so the caller's allocator sees
 *    every block a layer takes for a context;
 *  - the core's argument check of a caller array (NULL, alignment, size
 *    overflow, memory space) and host staging of device arrays, both of which
 *    classify pointers without ever initialising CUDA (src/devptr.c): a CPU
 *    context never loads or initialises the CUDA driver through them;
 *  - the keys' order bits (keybits.h) read from a caller array.
 * Installed with the core and exported, but not included by tandem.h: an
 * interface for layered libraries, not for applications. Every function sets
 * tdm_last_error() when it fails.
 */
#ifndef TANDEM_SERVICES_H
#define TANDEM_SERVICES_H

#include <string.h>

#include "common.h"
#include "detail/keybits.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A 64-byte aligned host block of bytes (0 allowed: a valid, empty block)
 * from ctx's allocator (device -1, stream NULL), or tandem's own allocation
 * when ctx has none or is NULL (a call that failed its argument checks may
 * still have to join a collective). The block remembers its context and
 * size, so tdm_svc_free hands it back to the same allocator with the size it
 * was taken with. NULL with TDM_ERR_OUT_OF_MEMORY set (what names the
 * buffer in the message). */
TDM_API void *tdm_svc_alloc(tdm_ctx *ctx, size_t bytes, const char *what);
/** Frees a block of tdm_svc_alloc; NULL is a no-op. */
TDM_API void tdm_svc_free(void *p);

/** The core's check of one caller array of n elements of elem bytes (what
 * names it, fn the public function): TDM_OK, or TDM_ERR_INVALID_ARGUMENT
 * for NULL with n > 0, misalignment, a size overflow, device memory on a CPU
 * context or device memory of another device than ctx's. */
TDM_API tdm_status tdm_svc_check_array(const tdm_ctx *ctx, const char *fn, const char *what, const void *p, size_t n,
                                       size_t elem);

/** A caller array as host memory: host is the array itself when it is host
 * memory, else a copy in a block of tdm_svc_alloc. */
typedef struct tdm_svc_stage {
  void *host;    /**< host address to use */
  void *user;    /**< the caller's array */
  size_t bytes;  /**< size of the array */
  tdm_ctx *ctx;  /**< the context that staged it */
  int staged;    /**< 1: host is a staging copy of a device array */
} tdm_svc_stage;
/** Stages user (bytes, already checked with tdm_svc_check_array): device
 * memory on a CUDA context is copied to host memory (copy_in != 0) or only
 * given a host buffer (an output). The copy runs on the context's stream and
 * is waited for. On failure *s is empty (tdm_svc_stage_free is harmless). */
TDM_API tdm_status tdm_svc_stage_in(tdm_ctx *ctx, const void *user, size_t bytes, int copy_in, tdm_svc_stage *s);
/** Copies a staging copy back to the caller's device array (on the context's
 * stream, waited for); nothing to do for a host array. */
TDM_API tdm_status tdm_svc_stage_out(tdm_svc_stage *s);
/** Frees the staging copy, if any, and empties *s. */
TDM_API void tdm_svc_stage_free(tdm_svc_stage *s);

/** Raw bits of key i of an array of t, zero-extended: the key's identity. */
static inline uint64_t tdm_svc_key_raw(tdm_type t, const void *keys, size_t i) {
  if (t == TDM_U32 || t == TDM_I32 || t == TDM_F32) {
    uint32_t v;
    memcpy(&v, (const char *)keys + i * 4, 4);
    return v;
  }
  {
    uint64_t v;
    memcpy(&v, (const char *)keys + i * 8, 8);
    return v;
  }
}

/** Order bits of key i (keybits.h, zero-extended): unsigned order of the
 * results is tandem's key order. */
static inline uint64_t tdm_svc_key_order(tdm_type t, const void *keys, size_t i) {
  uint64_t raw = tdm_svc_key_raw(t, keys, i);
  if (t == TDM_U32 || t == TDM_I32 || t == TDM_F32) return tdm__bits32_from_key((uint32_t)raw, tdm__key_kind(t));
  return tdm__bits64_from_key(raw, tdm__key_kind(t));
}

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_SERVICES_H */
