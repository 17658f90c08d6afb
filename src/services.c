/*
 * services.c: the services layered libraries use (tandem/services.h):
 * allocation through a context's allocator, the array check and host staging
 * of device arrays. Built on the core's own allocation layer (alloc.c) and
 * pointer classification (devptr.c), which never initialises CUDA.
 */
#include <string.h>

#include "tandem/services.h"
#include "backend.h"

/* Each block starts with this header, padded to 64 bytes so the caller's
 * part keeps the allocator's alignment: the block goes back to the context
 * it came from with the size it was taken with, whoever frees it. */
typedef struct svc_header {
  tdm_ctx *ctx; /* NULL: tandem's own allocation */
  size_t bytes; /* the whole block, header included */
} svc_header;
#define SVC_HEADER ((size_t)64)

void *tdm_svc_alloc(tdm_ctx *ctx, size_t bytes, const char *what) {
  size_t total;
  svc_header *h = NULL;
  if (tdm__add_ok(bytes, SVC_HEADER, &total))
    h = (svc_header *)(ctx ? tdm__ctx_alloc(ctx, total) : tdm__aligned_alloc(total));
  if (!h) {
    (void)tdm__fail(TDM_ERR_OUT_OF_MEMORY, "out of host memory allocating %zu bytes for %s", bytes, what);
    return NULL;
  }
  h->ctx = ctx;
  h->bytes = total;
  return (char *)h + SVC_HEADER;
}

void tdm_svc_free(void *p) {
  svc_header *h;
  if (!p) return;
  h = (svc_header *)((char *)p - SVC_HEADER);
  if (h->ctx) tdm__ctx_free(h->ctx, h, h->bytes);
  else tdm__free(h);
}

tdm_status tdm_svc_check_array(const tdm_ctx *ctx, const char *fn, const char *what, const void *p, size_t n,
                               size_t elem) {
  tdm__call_begin(); /* an extension's call: nothing it asks is kept past the next service */
  if (!ctx) return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  if (!elem) return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: %s has elements of 0 bytes", fn, what);
  return tdm__check_array(ctx, fn, what, p, n, elem, NULL);
}

tdm_status tdm_svc_stage_in(tdm_ctx *ctx, const void *user, size_t bytes, int copy_in, tdm_svc_stage *s) {
  tdm_status st;
  tdm__call_begin();
  memset(s, 0, sizeof *s);
  s->ctx = ctx;
  s->user = (void *)user; /* the caller's array, written only by stage_out */
  s->bytes = bytes;
  /* Checked arrays: device memory reaches here only on a backend that
   * copies (a CPU context refused it), and asking never initialises CUDA. */
  if (!ctx || !user || !bytes || !ctx->be->copy || !tdm__is_device_ptr(user)) {
    s->host = s->user;
    return TDM_OK;
  }
  if (!(s->host = tdm_svc_alloc(ctx, bytes, "a staging copy of a device array"))) {
    memset(s, 0, sizeof *s);
    return TDM_ERR_OUT_OF_MEMORY;
  }
  s->staged = 1;
  if (copy_in && (st = ctx->be->copy(ctx, s->host, user, bytes)) != TDM_OK) {
    tdm_svc_stage_free(s);
    return st;
  }
  return TDM_OK;
}

tdm_status tdm_svc_stage_out(tdm_svc_stage *s) {
  if (!s->staged) return TDM_OK;
  return s->ctx->be->copy(s->ctx, s->user, s->host, s->bytes);
}

void tdm_svc_stage_free(tdm_svc_stage *s) {
  if (s->staged) tdm_svc_free(s->host);
  memset(s, 0, sizeof *s);
}
