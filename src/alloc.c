/*
 * alloc.c: every host allocation of the library (heap blocks and page
 * mappings), and the failure-injection hook the tests use to make the k-th
 * allocation fail (host or device).
 *
 * The hook is process-wide and atomic; tests that arm it must not run other
 * allocating calls concurrently.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

static long fail_at;    /* 0: disarmed; else the allocation number that fails */
static long alloc_seen; /* allocations since the hook was last armed */

void tdm__alloc_fail_at(long k) {
  __atomic_store_n(&alloc_seen, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&fail_at, k > 0 ? k : 0, __ATOMIC_SEQ_CST);
}

long tdm__alloc_count(void) { return __atomic_load_n(&alloc_seen, __ATOMIC_SEQ_CST); }

int tdm__alloc_should_fail(void) {
  long k = __atomic_load_n(&fail_at, __ATOMIC_RELAXED);
  long seen = __atomic_add_fetch(&alloc_seen, 1, __ATOMIC_SEQ_CST);
  return k > 0 && seen == k;
}

void *tdm__malloc(size_t bytes) {
  if (bytes == 0 || tdm__alloc_should_fail()) return NULL;
  return malloc(bytes);
}

void *tdm__calloc(size_t count, size_t size) {
  size_t bytes;
  if (!tdm__mul_ok(count, size, &bytes) || bytes == 0 || tdm__alloc_should_fail()) return NULL;
  return calloc(count, size);
}

/* Blocks this large are the big arrays of a bulk operation (sort scratch,
 * tables, node arrays): they are aligned to 2 MiB and offered to the kernel
 * for transparent huge pages, which cuts TLB misses on random access and
 * makes first touch fault once per 2 MiB instead of once per 4 KiB. */
#define TDM_HUGE_MIN ((size_t)4 << 20)

/* The allocations below without the failure hook: the context's paths ask
 * it once per request and may retry after emptying the mapping cache. */
static void *aligned_alloc_raw(size_t bytes) {
  void *p = NULL;
  if (bytes >= TDM_HUGE_MIN) {
    if (posix_memalign(&p, TDM__HUGE_PAGE, bytes) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, bytes, MADV_HUGEPAGE); /* advisory: failure only costs speed */
#endif
    return p;
  }
  if (posix_memalign(&p, 64, bytes) != 0) return NULL;
  return p;
}

void *tdm__aligned_alloc(size_t bytes) {
  if (bytes == 0 || tdm__alloc_should_fail()) return NULL;
  return aligned_alloc_raw(bytes);
}

void tdm__free(void *p) { free(p); }

void *tdm__handle_alloc(size_t common_bytes, size_t state_bytes, void **state) {
  size_t at = (common_bytes + 63u) & ~(size_t)63u;
  char *h = (char *)tdm__calloc(1, at + state_bytes);
  *state = h ? h + at : NULL;
  return h;
}

static void *map_raw(size_t len, int huge, int lazy) {
  size_t extra = huge ? TDM__HUGE_PAGE : 0, head;
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | (lazy ? MAP_NORESERVE : 0);
  char *p, *a;
  p = (char *)mmap(NULL, len + extra, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == (char *)MAP_FAILED) return NULL;
  if (!huge) return p;
  /* Trim to a 2 MiB aligned window so huge pages can back all of it. */
  head = (TDM__HUGE_PAGE - ((uintptr_t)p & (TDM__HUGE_PAGE - 1))) & (TDM__HUGE_PAGE - 1);
  a = p + head;
  if (head) munmap(p, head);
  if (extra - head) munmap(a + len, extra - head);
#ifdef MADV_HUGEPAGE
  (void)madvise(a, len, MADV_HUGEPAGE); /* a hint: without THP the mapping still works */
#endif
  return a;
}

void *tdm__map(size_t len, int huge, int lazy) {
  if (len == 0 || tdm__alloc_should_fail()) return NULL;
  return map_raw(len, huge, lazy);
}

void tdm__unmap(void *p, size_t len) {
  if (p) munmap(p, len);
}

/* ---- allocation for a context ------------------------------------------ */

/* A block from the caller's allocator, or NULL. A block that breaks the
 * alignment promise is handed straight back and never used: tandem's vector
 * loops and the slot layout rely on it. */
static void *user_alloc(tdm_ctx *ctx, size_t bytes) {
  void *p;
  if (tdm__alloc_should_fail()) return NULL;
  p = ctx->alloc.alloc(ctx->alloc.user, bytes, -1, NULL);
  if (p && ((uintptr_t)p & 63u)) {
    ctx->alloc.free(ctx->alloc.user, p, bytes, -1, NULL);
    return NULL;
  }
  return p;
}

/* Large blocks of a context without an allocator are mappings of whole huge
 * pages, so that the mapping cache can keep them and hand them out again
 * for any large request; the size alone says which kind a block is. */
static size_t huge_len(size_t bytes) { return (bytes + TDM__HUGE_PAGE - 1) & ~(TDM__HUGE_PAGE - 1); }

/* A mapping of len bytes (a whole number of huge pages when huge): from the
 * mapping cache when it holds one (zeroed when asked), else fresh; a failed
 * mapping is retried once after the cache gave its memory back. The failure
 * hook was asked already. */
static void *ctx_map_raw(tdm_ctx *ctx, size_t len, int huge, int lazy, int zero) {
  void *p = huge ? tdm__map_cache_take(&ctx->maps, len) : NULL;
  if (p) {
    /* Zeroed as a fresh mapping would be: the pages are resident, so this
     * runs at memory speed, far below the cost of faulting fresh ones in. */
    if (zero) memset(p, 0, len);
    return p;
  }
  p = map_raw(len, huge, lazy);
  if (!p && tdm__map_cache_release(&ctx->maps) > 0) p = map_raw(len, huge, lazy);
  return p;
}

/* Gives a mapping back: into the cache when it keeps it, else to the OS. */
static void ctx_unmap_raw(tdm_ctx *ctx, void *p, size_t len) {
  if (!tdm__map_cache_put(&ctx->maps, p, len)) tdm__unmap(p, len);
}

void *tdm__ctx_alloc(tdm_ctx *ctx, size_t bytes) {
  void *p;
  if (bytes == 0) return NULL;
  tdm__count_alloc(ctx);
  if (ctx->has_alloc) return user_alloc(ctx, bytes);
  if (tdm__alloc_should_fail()) return NULL;
  if (bytes >= TDM_HUGE_MIN) {
    p = ctx_map_raw(ctx, huge_len(bytes), 1, 0, 0);
    if (p) TDM__POISON((char *)p + bytes, huge_len(bytes) - bytes); /* past the end */
    return p;
  }
  p = aligned_alloc_raw(bytes);
  if (!p && tdm__map_cache_release(&ctx->maps) > 0) p = aligned_alloc_raw(bytes);
  return p;
}

void *tdm__ctx_calloc(tdm_ctx *ctx, size_t bytes) {
  void *p = tdm__ctx_alloc(ctx, bytes);
  if (p) memset(p, 0, bytes);
  return p;
}

void tdm__ctx_free(tdm_ctx *ctx, void *p, size_t bytes) {
  if (!p) return;
  if (ctx->has_alloc) ctx->alloc.free(ctx->alloc.user, p, bytes, -1, NULL);
  else if (bytes >= TDM_HUGE_MIN) {
    TDM__UNPOISON(p, huge_len(bytes));
    ctx_unmap_raw(ctx, p, huge_len(bytes));
  }
  else tdm__free(p);
}

void *tdm__ctx_map(tdm_ctx *ctx, size_t len, int huge, int lazy) {
  if (len == 0) return NULL;
  if (!ctx->has_alloc) {
    tdm__count_alloc(ctx);
    if (tdm__alloc_should_fail()) return NULL;
    return ctx_map_raw(ctx, len, huge, lazy, 1);
  }
  /* The caller's memory: committed as the allocator decides, zeroed here as
   * a fresh mapping would be. */
  return tdm__ctx_calloc(ctx, len);
}

void *tdm__ctx_map_uninit(tdm_ctx *ctx, size_t len, int huge, int lazy) {
  if (len == 0) return NULL;
  if (!ctx->has_alloc) {
    tdm__count_alloc(ctx);
    if (tdm__alloc_should_fail()) return NULL;
    return ctx_map_raw(ctx, len, huge, lazy, 0);
  }
  return tdm__ctx_alloc(ctx, len);
}

void tdm__ctx_unmap(tdm_ctx *ctx, void *p, size_t len) {
  if (!p) return;
  if (ctx->has_alloc) ctx->alloc.free(ctx->alloc.user, p, len, -1, NULL);
  else ctx_unmap_raw(ctx, p, len);
}

void *tdm__ctx_handle_alloc(tdm_ctx *ctx, size_t common_bytes, size_t state_bytes, void **state) {
  size_t at = (common_bytes + 63u) & ~(size_t)63u;
  char *h = (char *)tdm__ctx_calloc(ctx, at + state_bytes);
  *state = h ? h + at : NULL;
  return h;
}

void tdm__ctx_handle_free(tdm_ctx *ctx, void *h, size_t common_bytes, size_t state_bytes) {
  size_t at = (common_bytes + 63u) & ~(size_t)63u;
  tdm__ctx_free(ctx, h, at + state_bytes);
}
