/*
 * context.c: creating, trimming and destroying contexts, backend
 * resolution, and the context's host scratch cache.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"

int tdm_cuda_device_count(void) { return tdm__device_count(); }

static int online_cores(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

tdm_status tdm_ctx_create(const tdm_ctx_opts *opts, tdm_ctx **out) {
  tdm_ctx_opts o;
  tdm_ctx *ctx;
  const tdm__backend *be;
  tdm_status st;

  if (!out) return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "tdm_ctx_create: out is NULL");
  if (opts) o = *opts;
  else memset(&o, 0, sizeof o);

  if (o.backend != TDM_BACKEND_AUTO && o.backend != TDM_BACKEND_CPU && o.backend != TDM_BACKEND_CUDA)
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "tdm_ctx_create: backend %d is not a tdm_backend",
                     (int)o.backend);
  if (o.cpu_threads < 0)
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "tdm_ctx_create: cpu_threads is %d; use 0 for all cores",
                     o.cpu_threads);
  if (o.flags & ~(unsigned)(TDM_CTX_STREAM_ORDERED | TDM_CTX_NO_MAP_CACHE))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "tdm_ctx_create: flags 0x%x has bits that are no TDM_CTX_ flag",
                     o.flags);
  if (o.allocator && (!o.allocator->alloc || !o.allocator->free))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "tdm_ctx_create: the allocator needs both alloc and free");
  if (o.cuda_device < 0)
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "tdm_ctx_create: cuda_device is %d, must be >= 0",
                     o.cuda_device);

  if (o.backend == TDM_BACKEND_AUTO) {
    /* AUTO picks CUDA only when the requested device exists and works. */
    o.backend = (tdm__device_count() > o.cuda_device) ? TDM_BACKEND_CUDA : TDM_BACKEND_CPU;
  }
  if ((st = tdm__backend_get(o.backend, "tdm_ctx_create", &be)) != TDM_OK) return st;

  {
    /* The context itself comes from the allocator too: set up a stand-in
     * holding just the allocator, then copy it into the real block. */
    tdm_ctx boot;
    memset(&boot, 0, sizeof boot);
    if (o.allocator) {
      boot.alloc = *o.allocator;
      boot.has_alloc = 1;
    }
    ctx = (tdm_ctx *)tdm__ctx_calloc(&boot, sizeof *ctx);
    if (!ctx) return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "tdm_ctx_create: out of host memory for the context");
    *ctx = boot;
  }
  ctx->flags = o.flags;
  ctx->backend = be->id;
  ctx->be = be;
  ctx->threads = o.cpu_threads ? o.cpu_threads : online_cores();
  ctx->device = o.cuda_device;
  ctx->stream = o.cuda_stream;
  pthread_mutex_init(&ctx->lock, NULL);
  /* Kept mappings are for CPU contexts that allocate on their own: a
   * caller's allocator does its own caching and must get every block back
   * when the structure owning it is destroyed. */
  tdm__map_cache_init(&ctx->maps, be->id == TDM_BACKEND_CPU && !ctx->has_alloc &&
                                      !(o.flags & TDM_CTX_NO_MAP_CACHE));

  if (be->ctx_init) {
    st = be->ctx_init(ctx);
    if (st != TDM_OK) {
      tdm__map_cache_fini(&ctx->maps);
      pthread_mutex_destroy(&ctx->lock);
      tdm__ctx_free(ctx, ctx, sizeof *ctx);
      return st;
    }
  }
  *out = ctx;
  return TDM_OK;
}

void tdm_ctx_destroy(tdm_ctx *ctx) {
  tdm_ctx copy;
  if (!ctx) return;
  if (ctx->be->ctx_fini) ctx->be->ctx_fini(ctx);
  tdm__ctx_free(ctx, ctx->host_cache, ctx->host_cache_bytes);
  tdm__map_cache_fini(&ctx->maps); /* after the scratch block, which it may keep */
  pthread_mutex_destroy(&ctx->lock);
  copy = *ctx; /* the allocator outlives the block it frees */
  tdm__ctx_free(&copy, ctx, sizeof *ctx);
}

tdm_status tdm_ctx_sync(tdm_ctx *ctx) {
  tdm_status st;
  if ((st = tdm__check_ctx(ctx, "tdm_ctx_sync")) != TDM_OK) return st;
  return ctx->be->ctx_sync ? ctx->be->ctx_sync(ctx) : TDM_OK;
}

tdm_status tdm_ctx_trim(tdm_ctx *ctx) {
  tdm_status st;
  if ((st = tdm__check_ctx(ctx, "tdm_ctx_trim")) != TDM_OK) return st;
  pthread_mutex_lock(&ctx->lock);
  if (!ctx->host_cache_busy && ctx->host_cache) {
    /* Idle scratch goes too (into the mapping cache first when large, which
     * is emptied next). A call holding it keeps it. */
    tdm__ctx_free(ctx, ctx->host_cache, ctx->host_cache_bytes);
    ctx->host_cache = NULL;
    ctx->host_cache_bytes = 0;
  }
  pthread_mutex_unlock(&ctx->lock);
  (void)tdm__map_cache_release(&ctx->maps);
  return TDM_OK;
}

tdm_backend tdm_ctx_backend(const tdm_ctx *ctx) { return ctx ? ctx->backend : TDM_BACKEND_AUTO; }

tdm_status tdm__host_scratch(tdm_ctx *ctx, size_t bytes, tdm__scratch *out) {
  void *p;
  memset(out, 0, sizeof *out);
  if (bytes == 0) return TDM_OK;

  pthread_mutex_lock(&ctx->lock);
  if (!ctx->host_cache_busy) {
    if (ctx->host_cache_bytes < bytes) {
      /* Grow: free first so peak memory stays at the new size. */
      tdm__ctx_free(ctx, ctx->host_cache, ctx->host_cache_bytes);
      ctx->host_cache = NULL;
      ctx->host_cache_bytes = 0;
      p = tdm__ctx_alloc(ctx, bytes);
      if (!p) {
        pthread_mutex_unlock(&ctx->lock);
        return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "out of host memory: %zu bytes of scratch", bytes);
      }
      ctx->host_cache = p;
      ctx->host_cache_bytes = bytes;
    }
    ctx->host_cache_busy = 1;
    out->ptr = ctx->host_cache;
    out->bytes = ctx->host_cache_bytes;
    out->cached = 1;
    pthread_mutex_unlock(&ctx->lock);
    return TDM_OK;
  }
  pthread_mutex_unlock(&ctx->lock);

  p = tdm__ctx_alloc(ctx, bytes);
  if (!p) return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "out of host memory: %zu bytes of scratch", bytes);
  out->ptr = p;
  out->bytes = bytes;
  out->cached = 0;
  return TDM_OK;
}

void tdm__host_scratch_release(tdm_ctx *ctx, tdm__scratch *s) {
  if (!s->ptr) return;
  if (s->cached) {
    pthread_mutex_lock(&ctx->lock);
    ctx->host_cache_busy = 0;
    pthread_mutex_unlock(&ctx->lock);
  } else {
    tdm__ctx_free(ctx, s->ptr, s->bytes);
  }
  s->ptr = NULL;
}
