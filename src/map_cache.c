/*
 * map_cache.c: a CPU context's cache of freed large mappings.
 *
 * Fresh anonymous pages cost a fault and a kernel zeroing on first touch;
 * for a hash table that grows from empty, or a B-tree build, that was
 * 37-70 % of the time. A CPU context without a caller's allocator therefore
 * keeps the large blocks its structures and scratch give back (2 MiB aligned
 * mappings, whole huge pages) and hands them out again:
 *  - best fit: the smallest cached block at least as large as the request
 *    and less than twice its size; a larger one is split, the request gets
 *    the head and the tail stays cached. A block twice the request or more
 *    is left whole (splitting it for small requests broke up the one block
 *    a later large request needed). Blocks are never merged, so every block
 *    lies inside one kernel mapping (what mremap needs of the B-tree's node
 *    array).
 *  - bound: the larger of TDM__MAP_CACHE_MIN_BOUND and TDM__MAP_CACHE_FACTOR
 *    (3) times the largest block given back since the cache was last
 *    emptied, never more than a quarter of physical memory. A hash table
 *    grown by doubling gives back predecessors (and tag arrays) that add up
 *    to a little more than its own size, since each table is a little over
 *    a power of two: with twice the bound the oldest of them fell out every
 *    time and the next growth met fresh pages again. Over the bound the
 *    oldest blocks are unmapped.
 *  - off with a caller's allocator (that allocator owns caching, and must get
 *    every block back when its structure is destroyed), on CUDA contexts,
 *    and with TDM_CTX_NO_MAP_CACHE.
 * The bookkeeping is a fixed array inside the context, so giving a block
 * back never allocates. One mutex guards it: contexts may be shared by
 * threads; unmapping and zeroing happen outside it.
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

/* Bytes held by every context's cache in the process (test build reads it). */
static size_t held_total;

size_t tdm__map_cache_held_total(void) { return __atomic_load_n(&held_total, __ATOMIC_SEQ_CST); }

static size_t phys_quarter(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return TDM__MAP_CACHE_MIN_BOUND;
  return (size_t)pages / 4 * (size_t)page;
}

void tdm__map_cache_init(tdm__map_cache *c, int on) {
  memset(c, 0, sizeof *c);
  c->on = on;
  if (on) {
    pthread_mutex_init(&c->lock, NULL);
    c->cap = phys_quarter();
  }
}

int tdm__map_cache_fits(const tdm__map_cache *c, size_t len) {
  return c->on && len >= TDM__HUGE_PAGE && (len & (TDM__HUGE_PAGE - 1)) == 0;
}

void *tdm__map_cache_take(tdm__map_cache *c, size_t len) {
  int i, best = -1;
  char *p;
  if (!tdm__map_cache_fits(c, len)) return NULL;
  pthread_mutex_lock(&c->lock);
  for (i = 0; i < c->n; i++)
    if (c->blk[i].len >= len && c->blk[i].len / 2 < len && (best < 0 || c->blk[i].len < c->blk[best].len)) best = i;
  if (best < 0) {
    pthread_mutex_unlock(&c->lock);
    return NULL;
  }
  p = c->blk[best].p;
  if (c->blk[best].len == len) {
    c->blk[best] = c->blk[--c->n];
  } else { /* the tail stays, with its age: it was given back as long ago */
    c->blk[best].p = p + len;
    c->blk[best].len -= len;
  }
  c->bytes -= len;
  c->hits++;
  __atomic_sub_fetch(&held_total, len, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&c->lock);
  TDM__UNPOISON(p, len);
  return p;
}

/* Unmaps the blocks picked out of the cache, after its lock is released. */
static void unmap_all(const tdm__map_block *v, int n) {
  int i;
  for (i = 0; i < n; i++) {
    TDM__UNPOISON(v[i].p, v[i].len); /* the next mapping there starts clean */
    munmap(v[i].p, v[i].len);
  }
}

int tdm__map_cache_put(tdm__map_cache *c, void *p, size_t len) {
  tdm__map_block out[TDM__MAP_CACHE_SLOTS];
  size_t bound, freed = 0;
  int n_out = 0;
  if (!tdm__map_cache_fits(c, len) || ((uintptr_t)p & (TDM__HUGE_PAGE - 1))) return 0;
  /* Poisoned before it is listed: once listed, another thread may take it. */
  TDM__POISON(p, len);
  pthread_mutex_lock(&c->lock);
  if (len > c->largest) c->largest = len;
  bound = c->largest > TDM__MAP_CACHE_MIN_BOUND / TDM__MAP_CACHE_FACTOR ? TDM__MAP_CACHE_FACTOR * c->largest
                                                                       : TDM__MAP_CACHE_MIN_BOUND;
  if (bound > c->cap) bound = c->cap;
  if (len > bound) {
    pthread_mutex_unlock(&c->lock);
    TDM__UNPOISON(p, len);
    return 0;
  }
  /* Make room: oldest first (the array is kept in the order blocks came). */
  while (c->n > 0 && (c->bytes + len > bound || c->n == TDM__MAP_CACHE_SLOTS)) {
    out[n_out++] = c->blk[0];
    c->bytes -= c->blk[0].len;
    freed += c->blk[0].len;
    memmove(&c->blk[0], &c->blk[1], (size_t)(c->n - 1) * sizeof c->blk[0]);
    c->n--;
  }
  c->blk[c->n].p = (char *)p;
  c->blk[c->n].len = len;
  c->n++;
  c->bytes += len;
  __atomic_add_fetch(&held_total, len, __ATOMIC_SEQ_CST);
  __atomic_sub_fetch(&held_total, freed, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&c->lock);
  unmap_all(out, n_out);
  return 1;
}

size_t tdm__map_cache_release(tdm__map_cache *c) {
  tdm__map_block out[TDM__MAP_CACHE_SLOTS];
  size_t bytes;
  int n;
  if (!c->on) return 0;
  pthread_mutex_lock(&c->lock);
  n = c->n;
  bytes = c->bytes;
  memcpy(out, c->blk, (size_t)n * sizeof out[0]);
  c->n = 0;
  c->bytes = 0;
  c->largest = 0;
  __atomic_sub_fetch(&held_total, bytes, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&c->lock);
  unmap_all(out, n);
  return bytes;
}

void tdm__map_cache_fini(tdm__map_cache *c) {
  if (!c->on) return;
  (void)tdm__map_cache_release(c);
  pthread_mutex_destroy(&c->lock);
  c->on = 0;
}

void tdm__map_cache_stats(tdm__map_cache *c, size_t *bytes, int *blocks, long *hits) {
  if (!c->on) {
    *bytes = 0;
    *blocks = 0;
    *hits = 0;
    return;
  }
  pthread_mutex_lock(&c->lock);
  *bytes = c->bytes;
  *blocks = c->n;
  *hits = c->hits;
  pthread_mutex_unlock(&c->lock);
}
