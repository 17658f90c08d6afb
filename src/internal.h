/*
 * internal.h: what every part of the library shares and users never see:
 * the context layout, error reporting, the allocation layer (with its
 * failure-injection hook for tests), context scratch memory, overflow-checked
 * size arithmetic and common argument checks. The backend boundary (operation
 * tables, handle layouts) builds on it in backend.h.
 *
 * Conventions:
 *  - Internal functions are prefixed tdm__ (double underscore).
 *  - A failing internal function sets the thread's error text with tdm__fail
 *    and returns the status; callers propagate the status unchanged so the
 *    innermost, most precise message survives.
 *  - Every allocation goes through this layer (tdm__malloc, tdm__map, and on
 *    the device tdm__gpu_malloc, which asks tdm__alloc_should_fail too), so
 *    tests can make the k-th one fail and one place sees all of them.
 */
#ifndef TANDEM_INTERNAL_H
#define TANDEM_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>

#include "tandem/tandem.h"
#include "tandem/detail/keybits.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TDM_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define TDM_INTERNAL __attribute__((visibility("hidden")))
#else
#define TDM_PRINTF(a, b)
#define TDM_INTERNAL
#endif

/* ---- errors ------------------------------------------------------------ */

/* Records a formatted message as this thread's last error and returns s. */
TDM_INTERNAL tdm_status tdm__fail(tdm_status s, const char *fmt, ...) TDM_PRINTF(2, 3);

/* ---- allocation -------------------------------------------------------- */

/* Host allocation through the failure-injection hook. NULL on failure (and on
 * size 0, which callers must not ask for). Does not set an error message. */
TDM_INTERNAL void *tdm__malloc(size_t bytes);
TDM_INTERNAL void *tdm__calloc(size_t count, size_t size);
/* 64-byte aligned host allocation; free with tdm__free. */
TDM_INTERNAL void *tdm__aligned_alloc(size_t bytes);
TDM_INTERNAL void tdm__free(void *p);
/* Returns 1 when the allocation being made now must fail (test hook); counts
 * the allocation otherwise. Device allocators call it too. */
TDM_INTERNAL int tdm__alloc_should_fail(void);
/* The hook itself: make the k-th allocation from now fail (k >= 1; 0
 * disarms), and the number of allocations since it was last armed. Hidden:
 * only the test build's hook functions (tests/hooks/) reach them. */
TDM_INTERNAL void tdm__alloc_fail_at(long k);
TDM_INTERNAL long tdm__alloc_count(void);

/* A structure handle: common_bytes for the part src/ owns, then state_bytes
 * of zeroed backend state (64-byte aligned) at *state, in one allocation
 * freed with tdm__free. NULL when out of memory. */
TDM_INTERNAL void *tdm__handle_alloc(size_t common_bytes, size_t state_bytes, void **state);

/* Huge page size: large arrays are aligned to it and advised as huge pages,
 * which cuts TLB misses on random access and page faults on first touch. */
#define TDM__HUGE_PAGE ((size_t)2 << 20)
/* An anonymous, zeroed mapping of len bytes (a multiple of 4096) through the
 * failure hook. huge: 2 MiB aligned and advised MADV_HUGEPAGE (len should be
 * a multiple of TDM__HUGE_PAGE). lazy: MAP_NORESERVE (capacity reserved ahead
 * costs address space only). NULL on failure. Free with tdm__unmap. */
TDM_INTERNAL void *tdm__map(size_t len, int huge, int lazy);
TDM_INTERNAL void tdm__unmap(void *p, size_t len);

/* ---- allocation for a context ------------------------------------------
 * What a context and its structures allocate goes through these, so the
 * caller's tdm_allocator (ctx->alloc) sees every block, with its size; without
 * one they fall back to the functions above. Each counts in ctx->n_allocs. */
struct tdm_ctx;
/* 64-byte aligned host block (2 MiB aligned from 4 MiB without an
 * allocator); NULL when out of memory or when the allocator's block was
 * misaligned (freed at once). Free with tdm__ctx_free and the same bytes. */
TDM_INTERNAL void *tdm__ctx_alloc(struct tdm_ctx *ctx, size_t bytes);
TDM_INTERNAL void *tdm__ctx_calloc(struct tdm_ctx *ctx, size_t bytes);
TDM_INTERNAL void tdm__ctx_free(struct tdm_ctx *ctx, void *p, size_t bytes);
/* Storage of len bytes for a structure: tdm__map without an allocator
 * (huge and lazy as there; from the context's mapping cache when it holds a
 * block), else an allocator block. Zeroed when zero is set; otherwise the
 * contents are unspecified (a fresh mapping is zero, a cached block holds
 * what its last user left), for a structure that writes every byte it reads
 * before reading it and would otherwise pay a pass over the whole block. */
TDM_INTERNAL void *tdm__ctx_map(struct tdm_ctx *ctx, size_t len, int huge, int lazy, int zero);
TDM_INTERNAL void tdm__ctx_unmap(struct tdm_ctx *ctx, void *p, size_t len);
/* A structure handle as tdm__handle_alloc, from the context's allocator;
 * free with tdm__ctx_handle_free and the same sizes. */
TDM_INTERNAL void *tdm__ctx_handle_alloc(struct tdm_ctx *ctx, size_t common_bytes, size_t state_bytes, void **state);
TDM_INTERNAL void tdm__ctx_handle_free(struct tdm_ctx *ctx, void *h, size_t common_bytes, size_t state_bytes);

/* ---- size arithmetic --------------------------------------------------- */

/* *out = a * b; returns 0 on overflow. */
static inline int tdm__mul_ok(size_t a, size_t b, size_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}
static inline int tdm__add_ok(size_t a, size_t b, size_t *out) {
  return !__builtin_add_overflow(a, b, out);
}

/* ---- context ----------------------------------------------------------- */

struct tdm__gpu_state;  /* owned by gpu/, opaque here */
struct tdm__keys_plan; /* owned by cpu/ (sort_cpu.h), opaque here */
struct tdm__backend;   /* backend.h */

/* A reusable scratch block. Only one call at a time can hold the context's
 * cached block; a concurrent call gets a private allocation instead, so one
 * context may be shared by threads doing read-only calls. */
typedef struct tdm__scratch {
  void *ptr;
  size_t bytes;
  int cached; /* 1: the context's cached block, 0: private allocation */
} tdm__scratch;

/* Mappings carry no AddressSanitizer redzones, so in a sanitized build the
 * bytes of a mapping its owner may not touch are poisoned by hand: the
 * rounding past a large block's end, and every block the mapping cache
 * holds (a use after free then reports). Nothing in other builds. */
#if defined(__SANITIZE_ADDRESS__)
#define TDM__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TDM__ASAN 1
#endif
#endif
#ifdef TDM__ASAN
#include <sanitizer/asan_interface.h>
#define TDM__POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define TDM__UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define TDM__POISON(p, n) ((void)(p), (void)(n))
#define TDM__UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* ---- the cache of freed mappings (map_cache.c) ------------------------- */

enum { TDM__MAP_CACHE_SLOTS = 32 }; /* most blocks one cache holds */
/* The bound never drops below this many bytes. */
#define TDM__MAP_CACHE_MIN_BOUND ((size_t)64 << 20)
/* ... and is this many times the largest block given back (map_cache.c). */
#define TDM__MAP_CACHE_FACTOR ((size_t)3)

typedef struct tdm__map_block {
  char *p;
  size_t len;
} tdm__map_block;

/* Freed 2 MiB aligned mappings of whole huge pages, oldest first. */
typedef struct tdm__map_cache {
  int on;               /* fixed at context creation */
  pthread_mutex_t lock; /* guards what follows (initialised only when on) */
  int n;
  size_t bytes;         /* held now */
  size_t largest;       /* largest block given back since the cache was last emptied */
  size_t cap;           /* a quarter of physical memory */
  long hits;            /* requests served (test build reads it) */
  tdm__map_block blk[TDM__MAP_CACHE_SLOTS];
} tdm__map_cache;

TDM_INTERNAL void tdm__map_cache_init(tdm__map_cache *c, int on);
/* Unmaps every block and ends the cache (context destruction). */
TDM_INTERNAL void tdm__map_cache_fini(tdm__map_cache *c);
/* 1 when a request or block of len bytes is one the cache deals in: the
 * cache is on and len is a whole number of huge pages. */
TDM_INTERNAL int tdm__map_cache_fits(const tdm__map_cache *c, size_t len);
/* A cached block of exactly len bytes, 2 MiB aligned, not zeroed (its pages
 * were touched before), or NULL. */
TDM_INTERNAL void *tdm__map_cache_take(tdm__map_cache *c, size_t len);
/* Keeps a 2 MiB aligned mapping of len bytes, unmapping older blocks to stay
 * within the bound; 0 when it is not kept (the caller unmaps it). */
TDM_INTERNAL int tdm__map_cache_put(tdm__map_cache *c, void *p, size_t len);
/* Unmaps every block and forgets the largest size seen; the bytes released. */
TDM_INTERNAL size_t tdm__map_cache_release(tdm__map_cache *c);
/* What the cache holds and how many requests it served (tests/hooks/). */
TDM_INTERNAL void tdm__map_cache_stats(tdm__map_cache *c, size_t *bytes, int *blocks, long *hits);
/* Bytes held by all caches of the process (tests/hooks/). */
TDM_INTERNAL size_t tdm__map_cache_held_total(void);

struct tdm_ctx {
  tdm_backend backend; /* resolved: CPU or CUDA */
  unsigned flags;      /* TDM_CTX_STREAM_ORDERED, ... */
  tdm_allocator alloc; /* the caller's allocator (copied); alloc.alloc NULL: none */
  int has_alloc;       /* 1 when alloc is the caller's */
  /* Counters read by the test build (tests/hooks/) and device checks:
   * allocations made for the context (host and device, every path), and the
   * times a call made the host wait for the device. Atomic: threads may
   * share a context. */
  long n_allocs;
  long n_waits;
  const struct tdm__backend *be; /* its operation tables, chosen once at creation */
  int threads;         /* CPU threads to use, >= 1 */
  int device;          /* CUDA device ordinal */
  void *stream;        /* cudaStream_t */
  int own_stream;      /* the context created the stream */

  pthread_mutex_t lock; /* guards the cached blocks below */
  void *host_cache;
  size_t host_cache_bytes;
  int host_cache_busy;

  tdm__map_cache maps; /* freed large mappings kept for reuse (CPU contexts) */

  struct tdm__gpu_state *gpu; /* the CUDA backend's per-context state */
  /* The CPU backend's keys-only sort methods for this machine, chosen once
   * at creation (cpu/sort_plan_cpu.c); NULL on other backends. */
  const struct tdm__keys_plan *keys_plan;
};

static inline void tdm__count_alloc(tdm_ctx *ctx) { __atomic_add_fetch(&ctx->n_allocs, 1, __ATOMIC_RELAXED); }
static inline void tdm__count_wait(tdm_ctx *ctx) { __atomic_add_fetch(&ctx->n_waits, 1, __ATOMIC_RELAXED); }

/* Host scratch of at least bytes, 64-byte aligned. Reuses the context's cache
 * when free (growing it if needed), else allocates privately. */
TDM_INTERNAL tdm_status tdm__host_scratch(tdm_ctx *ctx, size_t bytes, tdm__scratch *out);
TDM_INTERNAL void tdm__host_scratch_release(tdm_ctx *ctx, tdm__scratch *s);

/* Carves aligned sub-blocks out of one scratch block: call with base NULL to
 * measure (returns the running size), then with the real base. */
static inline size_t tdm__carve(size_t *offset, size_t bytes) {
  size_t at = (*offset + 63u) & ~(size_t)63u;
  *offset = at + bytes;
  return at;
}

/* Of want threads, how many the CPU cores not busy with other processes can
 * run now (cpu/cpu_load.c); 1 <= result <= want. */
TDM_INTERNAL int tdm__cpu_threads_avail(int want);

/* Number of threads for a CPU loop over n elements: fewer for small n so tiny
 * calls do not pay the fork cost, and no more than the free cores, so that a
 * busy machine does not make a parallel call wait on a descheduled thread. */
static inline int tdm__threads_for(const tdm_ctx *ctx, size_t n, size_t per_thread_min) {
  size_t t = (size_t)ctx->threads;
  size_t by_n = n / (per_thread_min ? per_thread_min : 1);
  if (by_n < 1) by_n = 1;
  if (t > by_n) t = by_n;
  return t > 1 ? tdm__cpu_threads_avail((int)t) : (int)t;
}

/* ---- argument checks ---------------------------------------------------- */

/* Checks the options a hash table and a B+ tree share: key and value types,
 * the duplicate policy, and SUM only with integer values. */
TDM_INTERNAL tdm_status tdm__check_kv_opts(const char *fn, tdm_type key_type, tdm_type value_type, int dup);

/* 1 if t is a member of tdm_type. */
static inline int tdm__type_valid(tdm_type t) { return t >= TDM_U32 && t <= TDM_F64; }

/* tdm__key_kind (the keybits.h kind of a key type) is in keybits.h. */

/* Checks ctx is non-NULL. fn names the public function in the message. */
TDM_INTERNAL tdm_status tdm__check_ctx(const tdm_ctx *ctx, const char *fn);

/* Checks one array argument of n elements of elem bytes: non-NULL when n > 0,
 * naturally aligned, n * elem does not overflow, and not a device pointer
 * when the context's backend takes host arrays only.
 * *bytes_out receives n * elem. what names the argument ("keys"). */
TDM_INTERNAL tdm_status tdm__check_array(const tdm_ctx *ctx, const char *fn, const char *what,
                                         const void *p, size_t n, size_t elem, size_t *bytes_out);

/* 1 if the byte ranges [a, a+na) and [b, b+nb) overlap. */
static inline int tdm__overlap(const void *a, size_t na, const void *b, size_t nb) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  if (!na || !nb) return 0;
  return x < y + nb && y < x + na;
}

/* ---- memory spaces ------------------------------------------------------ */

/* Memory space of a caller's pointer (src/devptr.c). Never initialises
 * CUDA: a process that has not loaded and initialised the CUDA driver has no
 * device memory, and all its pointers are host memory. */
enum { TDM__MEM_HOST = 0, TDM__MEM_DEVICE = 1, TDM__MEM_MANAGED = 2 };
/* TDM__MEM_*; *device (may be NULL) receives the device ordinal of device or
 * managed memory (-1 for host memory or when the driver does not say). */
TDM_INTERNAL int tdm__ptr_space(const void *p, int *device);
/* 1 if p is device or managed memory, 0 for host memory. */
TDM_INTERNAL int tdm__is_device_ptr(const void *p);
/* Begins a public call on this thread: the memory-space answers above are
 * kept until the next begin (devptr.c says why). Called by the entry points'
 * first checks (tdm__check_ctx, the table and tree checks, the services). */
TDM_INTERNAL void tdm__call_begin(void);
/* The number of the call this thread is in (unique in the process; 0 before
 * any call): lets a context keep an answer for one call (tdm__gpu_capturing). */
TDM_INTERNAL unsigned long long tdm__call_id(void);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_INTERNAL_H */
