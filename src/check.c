/* check.c: argument checks shared by every public entry point. */
#include "backend.h"

tdm_status tdm__check_ctx(const tdm_ctx *ctx, const char *fn) {
  tdm__call_begin(); /* every entry that takes a context checks it first */
  if (!ctx) return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  return TDM_OK;
}

tdm_status tdm__check_array(const tdm_ctx *ctx, const char *fn, const char *what, const void *p,
                            size_t n, size_t elem, size_t *bytes_out) {
  size_t bytes;
  if (!tdm__mul_ok(n, elem, &bytes))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: %s: n = %zu elements of %zu bytes overflows size_t",
                     fn, what, n, elem);
  if (bytes_out) *bytes_out = bytes;
  if (n == 0) return TDM_OK;
  if (!p) return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: %s is NULL but n = %zu", fn, what, n);
  /* Element arrays must be naturally aligned: that is what makes them arrays
   * of their C type, and device memory always is. */
  if ((uintptr_t)p % elem != 0)
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: %s (%p) is not aligned to its %zu-byte elements", fn, what, p,
                     elem);
  {
    int dev, space = tdm__ptr_space(p, &dev);
    if (space != TDM__MEM_HOST && ctx->be->host_arrays_only)
      return tdm__fail(TDM_ERR_INVALID_ARGUMENT,
                       "%s: %s is CUDA device memory, but the context runs on the CPU; "
                       "use a CUDA context or a host array", fn, what);
    /* Device memory of another GPU would fault in a kernel (or be copied
     * across devices behind the caller's back); managed memory migrates and
     * is usable from any device. */
    if (space == TDM__MEM_DEVICE && dev >= 0 && dev != ctx->device)
      return tdm__fail(TDM_ERR_INVALID_ARGUMENT,
                       "%s: %s is device memory of CUDA device %d, but the context runs on device %d; "
                       "use a context on device %d or copy the array", fn, what, dev, ctx->device, dev);
  }
  return TDM_OK;
}
