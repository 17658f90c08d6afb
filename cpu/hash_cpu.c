/*
 * hash_cpu.c: the CPU backend of the hash table (C11 + OpenMP).
 *
 *  - The table is one array of slots (tandem/detail/hash_layout.h). Tables of 2 MiB and
 *    more are mapped from the OS (tdm__map), 2 MiB aligned, with
 *    MADV_HUGEPAGE: random probes into a large table then miss the TLB far
 *    less, and fresh pages arrive zeroed, which is exactly an empty table.
 *  - The loops for each key/value width pair live in their own file
 *    (hash_cpu_k32v32.c ...); a table picks its set once, at creation.
 *  - find and erase split the batch into contiguous chunks, one per thread,
 *    and keep PF probes in flight per thread by prefetching ahead.
 *  - insert gives each thread the keys whose home slot lies in its part of
 *    the table, so all copies of a key meet in one thread in batch order
 *    (deterministic duplicate policies). A dense batch (at least one key per
 *    PART_DENSITY slots) is first partitioned by table region and inserted
 *    region by region, streaming the table instead of missing on every key.
 *    Threads write only inside their own part, without atomics; the few keys
 *    whose probe would run into the next part are finished afterwards by one
 *    thread, in batch order (hash_cpu_impl.h).
 *  - Beside the slots, a byte per slot of tags (cpu.h) lets a find answer
 *    most misses from one line of the tags without reading the slots.
 *  - Growth allocates the new table first and frees the old one only once the
 *    move is done, so running out of memory leaves the table as it was. All
 *    scratch is taken before the table changes; after that nothing can fail.
 */
#include <omp.h>
#include <string.h>
#include <sys/mman.h>

#include "cpu.h"

enum {
  PART_REGION_LOG2 = 14,   /* partitioned insert: table region per partition, in slots (at least) */
  PART_MAX_LOG2 = 10,      /* ... at most 2^10 partitions */
  PART_MIN = 1 << 15,      /* ... for batches of at least this many keys */
  PART_DENSITY = 8,        /* ... and at least one key per this many slots */
  HC_MAX_THREADS = 256,    /* most threads one call uses */
  HC_MIN_PER_THREAD = 1 << 14, /* keys (or slots) per thread worth a fork */
};

/* The CPU state of table h. */
#define HC(h) tdm__hash_cpu_of(h)

static unsigned threads_for(const tdm_hash *h, size_t n) {
  int t = tdm__threads_for(h->ctx, n, HC_MIN_PER_THREAD);
  return (unsigned)(t > HC_MAX_THREADS ? HC_MAX_THREADS : t);
}

/* Start of chunk t when n items are split into nt chunks. */
static size_t chunk(size_t n, unsigned nt, unsigned t) {
  return n / nt * t + n % nt * t / nt;
}

/* ---- table memory ---------------------------------------------------------- */

/* A table of `bytes`, zeroed when zero is set (else its contents are
 * unspecified: the caller writes all of it); *mapped / *alloc_bytes say how
 * to free it. NULL when out of memory (the allocation-failure hook counts it
 * as one). */
static void *table_alloc(tdm_ctx *ctx, size_t bytes, int zero, int *mapped, size_t *alloc_bytes) {
  void *p;
  if (bytes >= TDM__HUGE_PAGE) {
    size_t len = (bytes + TDM__HUGE_PAGE - 1) & ~(TDM__HUGE_PAGE - 1);
    p = tdm__ctx_map(ctx, len, 1, 0, zero);
    if (!p) return NULL;
    *mapped = 1;
    *alloc_bytes = len;
    return p;
  }
  p = zero ? tdm__ctx_calloc(ctx, bytes) : tdm__ctx_alloc(ctx, bytes);
  if (!p) return NULL;
  *mapped = 0;
  *alloc_bytes = bytes;
  return p;
}

static void table_free(tdm_ctx *ctx, void *p, int mapped, size_t alloc_bytes) {
  if (!p) return;
  if (mapped) tdm__ctx_unmap(ctx, p, alloc_bytes);
  else tdm__ctx_free(ctx, p, alloc_bytes);
}

/* The loops of each width pair, by tdm__hash_inst. */
static const tdm__hash_cpu_fns *const inst_fns[4] = {&tdm__hash_cpu_k32v32, &tdm__hash_cpu_k32v64,
                                                      &tdm__hash_cpu_k64v32, &tdm__hash_cpu_k64v64};

static tdm_status hc_create(tdm_hash *h) {
  size_t bytes = tdm__hash_table_bytes(h, h->log2cap);
  HC(h)->fn = inst_fns[tdm__hash_inst(h->ks, h->vs)];
  HC(h)->slots = table_alloc(h->ctx, bytes, 1, &HC(h)->mapped, &HC(h)->slots_bytes);
  if (!HC(h)->slots)
    return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "tdm_hash_create: out of host memory for a table of %zu bytes", bytes);
  HC(h)->tags = (uint8_t *)table_alloc(h->ctx, h->cap, 1, &HC(h)->tags_mapped, &HC(h)->tags_bytes);
  if (!HC(h)->tags) {
    table_free(h->ctx, HC(h)->slots, HC(h)->mapped, HC(h)->slots_bytes);
    HC(h)->slots = NULL;
    return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "tdm_hash_create: out of host memory for the %zu tag bytes of a table",
                     h->cap);
  }
  return TDM_OK;
}

static void hc_destroy(tdm_hash *h) {
  table_free(h->ctx, HC(h)->slots, HC(h)->mapped, HC(h)->slots_bytes);
  table_free(h->ctx, HC(h)->tags, HC(h)->tags_mapped, HC(h)->tags_bytes);
  HC(h)->slots = NULL;
  HC(h)->tags = NULL;
}

/* ---- rehash -------------------------------------------------------------- */

/* Moves the table into a new one of 2^dl slots (dropping tombstones). Fails
 * only for lack of memory, before anything changed. One thread streams the
 * keys into a table it clears as it fills it (rehash_stream in
 * hash_cpu_impl.h), so the new memory is not cleared first; several threads
 * claim slots of a cleared table with CAS, each from its own run of old
 * slots. */
static tdm_status rehash(tdm_hash *h, unsigned dl) {
  size_t bytes = tdm__hash_table_bytes(h, dl), nbytes = 0, tbytes = 0, sb = h->slot_bytes;
  uint64_t dcap = (uint64_t)1 << dl;
  int nmapped = 0, tmapped = 0;
  unsigned nt = threads_for(h, h->cap), t;
  int zero = nt > 1;
  char *dst = (char *)table_alloc(h->ctx, bytes, zero, &nmapped, &nbytes);
  uint8_t *dtg = dst ? (uint8_t *)table_alloc(h->ctx, (size_t)dcap, zero, &tmapped, &tbytes) : NULL;
  const char *src = (const char *)HC(h)->slots;
  if (!dtg) {
    if (dst) table_free(h->ctx, dst, nmapped, nbytes);
    return tdm__fail(TDM_ERR_OUT_OF_MEMORY,
                     "tdm_hash_insert: out of host memory growing the table to %zu bytes; the table is unchanged",
                     bytes + (size_t)dcap);
  }
  if (nt == 1) HC(h)->fn->rehash_stream(src, h->log2cap, dst, dtg, dl);
  else
    TDM__PAR_FOR(nt, t, nt, {
      size_t lo = chunk(h->cap, nt, t), hi = chunk(h->cap, nt, t + 1);
      HC(h)->fn->rehash_range(src, lo, hi, dst, dtg, dl, 1);
    });
  /* The side slots move as they are. */
  memcpy(dst + dcap * sb, src + h->cap * sb, 2u * sb);
  table_free(h->ctx, HC(h)->slots, HC(h)->mapped, HC(h)->slots_bytes);
  table_free(h->ctx, HC(h)->tags, HC(h)->tags_mapped, HC(h)->tags_bytes);
  HC(h)->slots = dst;
  HC(h)->mapped = nmapped;
  HC(h)->slots_bytes = nbytes;
  HC(h)->tags = dtg;
  HC(h)->tags_mapped = tmapped;
  HC(h)->tags_bytes = tbytes;
  h->log2cap = dl;
  h->cap = (size_t)dcap;
  h->limit = (size_t)tdm__hash_limit(dl, h->max_load);
  h->tombs = 0;
  return TDM_OK;
}

/* ---- operations ------------------------------------------------------------ */

/* Dense-batch insert through partitions (hash_cpu_impl.h): count, scatter,
 * then insert region by region. base is scratch laid out by part_layout. */
typedef struct part_layout {
  size_t rec, cnt, b, dfr, total;
} part_layout;

static part_layout part_plan(const tdm_hash *h, size_t n, size_t np, unsigned nt) {
  part_layout pl;
  size_t off = 0;
  pl.rec = tdm__carve(&off, n * h->slot_bytes); /* (key, value) records in the slot layout */
  pl.cnt = tdm__carve(&off, (size_t)nt * (np + 1) * sizeof(size_t));
  pl.b = tdm__carve(&off, (np + 2) * sizeof(size_t));
  pl.dfr = tdm__carve(&off, nt > 1 ? n : 0); /* deferred flags, one per record */
  pl.total = off;
  return pl;
}

static void part_run(tdm_hash *h, const void *keys, const void *values, size_t n, unsigned nt, unsigned pbits,
                     const part_layout *pl, char *base, tdm__hc_counts *c) {
  size_t np = (size_t)1 << pbits, p, run = 0;
  size_t *cnt = (size_t *)(base + pl->cnt), *b = (size_t *)(base + pl->b);
  void *rec = base + pl->rec;
  uint8_t *dfr = nt > 1 ? (uint8_t *)(base + pl->dfr) : NULL;
  unsigned t;
  memset(cnt, 0, (size_t)nt * (np + 1) * sizeof(size_t));
  TDM__PAR_FOR(nt, t, nt, {
    size_t lo = chunk(n, nt, t), hi = chunk(n, nt, t + 1), *ct = cnt + (size_t)t * (np + 1);
    HC(h)->fn->part_count(keys, lo, hi, pbits, np, ct);
  });
  /* Partition-major, chunk-minor offsets: each partition keeps batch order. */
  for (p = 0; p <= np; p++) {
    b[p] = run;
    for (t = 0; t < nt; t++) {
      size_t k = cnt[(size_t)t * (np + 1) + p];
      cnt[(size_t)t * (np + 1) + p] = run;
      run += k;
    }
  }
  b[np + 1] = run;
  TDM__PAR_FOR(nt, t, nt, {
    size_t lo = chunk(n, nt, t), hi = chunk(n, nt, t + 1), *at = cnt + (size_t)t * (np + 1);
    HC(h)->fn->part_scatter(keys, values, lo, hi, pbits, np, at, rec);
  });
  /* Each thread takes a contiguous run of regions and writes only there;
   * keys whose probe runs past its last region wait for the sequential pass. */
  if (dfr) memset(dfr, 0, n);
  TDM__PAR_FOR(nt, t, nt, {
    size_t plo = np * t / nt, phi = np * (t + 1) / nt;
    int side = t == 0;
    HC(h)->fn->part_insert(h, rec, b, plo, phi, np, side, dfr, &c[t]);
  });
  if (dfr) {
    HC(h)->fn->part_deferred(h, rec, dfr, n, &c[0]);
  }
}

static tdm_status hc_insert(tdm_hash *h, const void *keys, const void *values, size_t n, unsigned grow_log2) {
  tdm__hc_counts c[HC_MAX_THREADS];
  unsigned nt = threads_for(h, n), t, fl = grow_log2 ? grow_log2 : h->log2cap, pbits = 0;
  size_t added = 0, side = 0, reused = 0, lost = 0;
  int part = 0;
  tdm__scratch sc;
  part_layout pl;
  tdm_status st;

  /* A dense batch goes through partitions when scratch for them is to be
   * had; otherwise, or for a sparse batch, straight in, with flags for the
   * deferred keys when several threads share the work (without scratch for
   * them: CAS claims). All scratch is taken before the table changes. */
  memset(&sc, 0, sizeof sc);
  if (n >= PART_MIN && n >= ((size_t)1 << fl) / PART_DENSITY) {
    pbits = fl > PART_REGION_LOG2 ? fl - PART_REGION_LOG2 : 0;
    if (pbits > PART_MAX_LOG2) pbits = PART_MAX_LOG2;
    pl = part_plan(h, n, (size_t)1 << pbits, nt);
    if (tdm__host_scratch(h->ctx, pl.total, &sc) == TDM_OK) part = 1;
    else memset(&sc, 0, sizeof sc);
  }
  if (!part && nt > 1 && tdm__host_scratch(h->ctx, n, &sc) != TDM_OK) memset(&sc, 0, sizeof sc);
  if (grow_log2 && (st = rehash(h, grow_log2)) != TDM_OK) {
    tdm__host_scratch_release(h->ctx, &sc);
    return st;
  }
  memset(c, 0, nt * sizeof c[0]);
  if (part) {
    part_run(h, keys, values, n, nt, pbits, &pl, (char *)sc.ptr, c);
  } else {
    uint8_t *dfr = (uint8_t *)sc.ptr;
    if (dfr) memset(dfr, 0, n);
    TDM__PAR_FOR(nt, t, nt, HC(h)->fn->insert_run(h, keys, values, n, nt, t, dfr, &c[t]));
    if (dfr) {
      HC(h)->fn->insert_deferred(h, keys, values, dfr, n, &c[0]);
    }
  }
  tdm__host_scratch_release(h->ctx, &sc);
  for (t = 0; t < nt; t++) {
    lost += c[t].n[TDM_HASH_FOUND];
    added += c[t].n[TDM_HASH_NEW_EMPTY] + c[t].n[TDM_HASH_NEW_TOMB] + c[t].n[TDM_HASH_NEW_SIDE];
    side += c[t].n[TDM_HASH_NEW_SIDE];
    reused += c[t].n[TDM_HASH_NEW_TOMB];
  }
  h->size += added;
  h->side += side;
  h->tombs -= reused;
  if (lost)
    return tdm__fail(TDM_ERR_CORRUPT, "tdm_hash_insert: %zu keys found no free slot; the table is corrupt "
                     "(tdm_hash_validate names the broken invariant)", lost);
  return TDM_OK;
}

static tdm_status hc_find(const tdm_hash *h, const void *keys, void *values_out, uint8_t *found_out, size_t n) {
  unsigned nt = threads_for(h, n), t;
  TDM__PAR_FOR(nt, t, nt, HC(h)->fn->find_range(h, keys, values_out, found_out, chunk(n, nt, t), chunk(n, nt, t + 1)));
  return TDM_OK;
}

static tdm_status hc_erase(tdm_hash *h, const void *keys, size_t n, size_t *erased) {
  tdm__hc_counts c[HC_MAX_THREADS];
  unsigned nt = threads_for(h, n), t;
  size_t gone = 0, tomb = 0, side = 0;
  memset(c, 0, nt * sizeof c[0]);
  TDM__PAR_FOR(nt, t, nt, HC(h)->fn->erase_range(h, keys, chunk(n, nt, t), chunk(n, nt, t + 1), nt > 1, &c[t]));
  for (t = 0; t < nt; t++) {
    gone += c[t].n[4 + TDM_HASH_GONE_TOMB] + c[t].n[4 + TDM_HASH_GONE_EMPTY] + c[t].n[4 + TDM_HASH_GONE_SIDE];
    tomb += c[t].n[4 + TDM_HASH_GONE_TOMB];
    side += c[t].n[4 + TDM_HASH_GONE_SIDE];
  }
  h->size -= gone;
  h->side -= side;
  h->tombs += tomb;
  *erased = gone;
  return TDM_OK;
}

static tdm_status hc_export(const tdm_hash *h, void *keys_out, void *values_out) {
  size_t base[HC_MAX_THREADS + 1];
  const void *s = HC(h)->slots;
  unsigned nt = threads_for(h, h->cap), t;
  size_t at;
  at = HC(h)->fn->export_side(s, h->cap, keys_out, values_out);
  /* Count per chunk, then each chunk writes from its prefix: slot order. */
  TDM__PAR_FOR(nt, t, nt, {
    size_t lo = chunk(h->cap, nt, t), hi = chunk(h->cap, nt, t + 1);
    base[t + 1] = HC(h)->fn->count_range(s, lo, hi);
  });
  base[0] = at;
  for (t = 0; t < nt; t++) base[t + 1] += base[t];
  TDM__PAR_FOR(nt, t, nt, {
    size_t lo = chunk(h->cap, nt, t), hi = chunk(h->cap, nt, t + 1);
    HC(h)->fn->export_range(s, lo, hi, keys_out, values_out, base[t]);
  });
  return TDM_OK;
}

static tdm_status hc_clear(tdm_hash *h) {
  size_t bytes = tdm__hash_table_bytes(h, h->log2cap);
  /* A mapped table gets fresh zero pages from the OS: no pass over memory. */
  if (!HC(h)->mapped || madvise(HC(h)->slots, HC(h)->slots_bytes, MADV_DONTNEED) != 0) memset(HC(h)->slots, 0, bytes);
  if (!HC(h)->tags_mapped || madvise(HC(h)->tags, HC(h)->tags_bytes, MADV_DONTNEED) != 0) memset(HC(h)->tags, 0, h->cap);
  h->size = 0;
  h->side = 0;
  h->tombs = 0;
  return TDM_OK;
}

/* The shared checks of the slots, then the tags against the slots. */
static tdm_status hc_validate(const tdm_hash *h) {
  size_t bad;
  tdm_status st = tdm__hash_check_slots(h, HC(h)->slots);
  if (st != TDM_OK) return st;
  bad = HC(h)->fn->check_tags(HC(h)->slots, HC(h)->tags, 0, h->cap);
  if (bad < h->cap)
    return tdm__fail(TDM_ERR_CORRUPT, "tdm_hash_validate: slot %zu has tag byte %u, which does not describe its key word",
                     bad, (unsigned)HC(h)->tags[bad]);
  return TDM_OK;
}

/* Insert-or-number (backend.h): one thread, in batch order (number_run in
 * hash_cpu_impl.h); a rehash first when the public layer asks for room. */
static tdm_status hc_number(tdm_hash *h, const void *keys, size_t n, size_t max_new, uint32_t *gid_out,
                            uint32_t *first_out, uint64_t base, size_t *done, unsigned grow_log2) {
  tdm__hc_counts c;
  tdm_status st;
  *done = 0;
  if (grow_log2 && (st = rehash(h, grow_log2)) != TDM_OK) return st;
  memset(&c, 0, sizeof c);
  *done = HC(h)->fn->number_run(h, keys, n, max_new, gid_out, first_out, base, &c);
  h->size += c.n[TDM_HASH_NEW_EMPTY] + c.n[TDM_HASH_NEW_TOMB] + c.n[TDM_HASH_NEW_SIDE];
  h->side += c.n[TDM_HASH_NEW_SIDE];
  h->tombs -= c.n[TDM_HASH_NEW_TOMB];
  if (c.n[TDM_HASH_FOUND])
    return tdm__fail(TDM_ERR_CORRUPT, "numbering keys: a key found no free slot; the table is corrupt "
                     "(tdm_hash_validate names the broken invariant)");
  return TDM_OK;
}

static tdm_status hc_view(const tdm_hash *h, tdm_hash_view *out) {
  out->slots = HC(h)->slots;
  return TDM_OK;
}

const tdm__hash_ops tdm__hash_cpu_ops = {
    .state_bytes = sizeof(tdm__hash_cpu),
    .create = hc_create,
    .destroy = hc_destroy,
    .insert = hc_insert,
    .find = hc_find,
    .erase = hc_erase,
    .export_all = hc_export,
    .clear = hc_clear,
    .validate = hc_validate,
    .view = hc_view,
    .sync_counts = NULL, /* inserts finish on the host: nothing is ever pending */
    .number = hc_number,
};
