/*
 * ops_cpu.c: the CPU backend's building blocks (backend.h) of the data
 * operations, which are written once in the core (src/ops_*.c): loops over
 * chunks of the rows on the context's threads, the radix sort (sort_cpu.h)
 * and the hash table's insert-or-number (tdm__hash_number, one probe per
 * row in input order, which numbers the keys by first occurrence and folds
 * tdm_group_reduce's values in input order as it goes).
 *
 * Every fold of a group is the left fold in input order (ops_keys.h), so
 * the bytes are the same whatever the method and the number of threads.
 * All scratch comes from the context's allocator and is freed by the
 * call's end.
 */
#include <stdio.h>
#include <string.h>

#include "cpu.h"
#include "tandem/detail/csr.h"
#include "tandem/detail/ops_keys.h"

/* Elements per thread worth a fork. */
#define OPS_PER_THREAD ((size_t)1 << 15)
/* At most this many chunks per parallel loop (stack arrays of counts). */
#define OPS_MAX_CHUNKS 256
/* Output rows per chunk of the join's fill (each chunk one search of the
 * offsets, then a walk). */
#define JOIN_FILL_ROWS OPS_PER_THREAD

/* ---- scratch ------------------------------------------------------------ */

static tdm_status take(tdm_ctx *ctx, const char *fn, size_t count, size_t elem, void **p) {
  size_t bytes;
  *p = NULL;
  /* The statuses are returned as constants, not as tdm__fail's result, so
   * the static analyzer sees that success always leaves *p non-NULL. */
  if (!tdm__mul_ok(count, elem, &bytes)) {
    (void)tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: %zu scratch elements of %zu bytes overflow size_t", fn, count,
                    elem);
    return TDM_ERR_INVALID_ARGUMENT;
  }
  /* Never NULL on success, even for no elements, so no caller needs a case
   * for it (give frees the same size). */
  if (bytes == 0) bytes = elem ? elem : 1;
  *p = tdm__ctx_alloc(ctx, bytes);
  if (!*p) {
    (void)tdm__fail(TDM_ERR_OUT_OF_MEMORY, "%s: out of memory (%zu bytes of scratch)", fn, bytes);
    return TDM_ERR_OUT_OF_MEMORY;
  }
  return TDM_OK;
}

static void give(tdm_ctx *ctx, void *p, size_t count, size_t elem) {
  size_t bytes = count * elem;
  if (p) tdm__ctx_free(ctx, p, bytes != 0 ? bytes : elem != 0 ? elem : 1);
}

/* Re-labels an error of an inner call (a sort or a hash table call) with the
 * public function the caller made, keeping the inner detail. */
static tdm_status relabel(const char *fn, tdm_status st) {
  char inner[400];
  if (st == TDM_OK) return st;
  snprintf(inner, sizeof inner, "%s", tdm_last_error());
  return tdm__fail(st, "%s: %s", fn, inner);
}

/* ---- loops -------------------------------------------------------------- */

static int chunks_for(const tdm_ctx *ctx, size_t n) {
  int t = tdm__threads_for(ctx, n, OPS_PER_THREAD);
  return t > OPS_MAX_CHUNKS ? OPS_MAX_CHUNKS : t;
}

/* Start of chunk t of n elements split into P chunks. */
static size_t chunk(size_t n, int P, int t) {
  return n / (size_t)P * (size_t)t + n % (size_t)P * (size_t)t / (size_t)P;
}

static void copy_key(void *dst, size_t d, const void *src, size_t s, size_t ks) {
  if (ks == 4) ((uint32_t *)dst)[d] = ((const uint32_t *)src)[s];
  else ((uint64_t *)dst)[d] = ((const uint64_t *)src)[s];
}

/* idx[i] = i for i in [lo, hi), indices of iw bytes (4 or 8). */
static void iota_range(void *idx, size_t iw, size_t lo, size_t hi) {
  size_t i;
  if (iw == 4)
    for (i = lo; i < hi; i++) ((uint32_t *)idx)[i] = (uint32_t)i;
  else
    for (i = lo; i < hi; i++) ((uint64_t *)idx)[i] = i;
}

/* ---- grouping ----------------------------------------------------------- */

/* Heads of runs of equal keys in sorted kc[lo, hi) (a head: k == 0 or a key
 * unlike the one before); with off non-NULL also writes their positions
 * from off[at]. Returns the count. */
static size_t heads_range(const void *kc, size_t ks, size_t lo, size_t hi, uint64_t *off, size_t at) {
  size_t k, c = 0;
  if (!off && lo < hi) {
    /* Counting only: a compare added per key, no branch to mispredict at
     * every head (one key in ten is one at n / 10 distinct keys). */
    size_t from = lo == 0 ? 1 : lo;
    c = lo == 0;
    if (ks == 4)
      for (k = from; k < hi; k++) c += ((const uint32_t *)kc)[k] != ((const uint32_t *)kc)[k - 1];
    else
      for (k = from; k < hi; k++) c += ((const uint64_t *)kc)[k] != ((const uint64_t *)kc)[k - 1];
    return c;
  }
  if (ks == 4) {
    const uint32_t *x = (const uint32_t *)kc;
    for (k = lo; k < hi; k++)
      if (k == 0 || x[k] != x[k - 1]) {
        if (off) off[at + c] = k;
        c++;
      }
  } else {
    const uint64_t *x = (const uint64_t *)kc;
    for (k = lo; k < hi; k++)
      if (k == 0 || x[k] != x[k - 1]) {
        if (off) off[at + c] = k;
        c++;
      }
  }
  return c;
}

/* The runs of equal keys in sorted kc[0, n): *G runs, their starts in
 * *off[0 .. G) and *off[G] = n (G + 1 entries, freed by the caller). */
static tdm_status sorted_runs(tdm_ctx *ctx, const char *fn, const void *kc, size_t ks, size_t n, uint64_t **off,
                              size_t *G) {
  size_t cnt[OPS_MAX_CHUNKS + 1], total = 0;
  int P = chunks_for(ctx, n), t;
  tdm_status st;
  TDM__PAR_FOR(P, t, P, cnt[t] = heads_range(kc, ks, chunk(n, P, t), chunk(n, P, t + 1), NULL, 0));
  for (t = 0; t < P; t++) {
    size_t c = cnt[t];
    cnt[t] = total;
    total += c;
  }
  if ((st = take(ctx, fn, total + 1, 8, (void **)off)) != TDM_OK) return st;
  TDM__PAR_FOR(P, t, P, (void)heads_range(kc, ks, chunk(n, P, t), chunk(n, P, t + 1), *off, cnt[t]));
  (*off)[total] = n;
  *G = total;
  return TDM_OK;
}

/* ---- numbering (the hash method) ---------------------------------------- */

/* Keys numbered by first occurrence through the hash table's
 * insert-or-number (tdm__hash_number): groups 0 .. G - 1 in the order their
 * first rows come, count[g] rows and first row first[g] each, and row i in
 * group gid[i] (when asked for). 32-bit numbers: n < 2^32. */
typedef struct numbering {
  size_t n, G, cap; /* cap: entries of first */
  uint32_t *gid, *count, *first;
} numbering;

static void numbering_free(tdm_ctx *ctx, numbering *nb) {
  give(ctx, nb->gid, nb->n, 4);
  give(ctx, nb->count, nb->G, 4);
  give(ctx, nb->first, nb->cap, 4);
  memset(nb, 0, sizeof *nb);
}

/* Numbers the n words (ks bytes, compared as bits: the core maps the keys
 * of TDM_EQ_NUMERIC to canonical bits first). *too_many: more than max_groups
 * distinct keys, or n too large for 32-bit numbers; then nothing is kept
 * (the caller sorts instead). */
static tdm_status number_keys(tdm_ctx *ctx, const char *fn, size_t ks, const void *keys, size_t n, int want_gid, size_t max_groups, numbering *nb, int *too_many) {
  tdm_hash *h = NULL;
  tdm_hash_opts ho;
  size_t done = 0;
  tdm_status st;
  memset(nb, 0, sizeof *nb);
  *too_many = n >= (size_t)UINT32_MAX;
  if (*too_many) return TDM_OK;
  nb->n = n;
  nb->cap = max_groups < n ? max_groups : n;
  if (want_gid && (st = take(ctx, fn, n, 4, (void **)&nb->gid)) != TDM_OK) goto fail;
  if ((st = take(ctx, fn, nb->cap, 4, (void **)&nb->first)) != TDM_OK) goto fail;
  memset(&ho, 0, sizeof ho);
  ho.key_type = ks == 4 ? TDM_U32 : TDM_U64;
  ho.value_type = TDM_U64; /* number and count (tdm__hash_number) */
  /* A small table that grows with the distinct keys met (tdm__hash_number):
   * few distinct keys in many rows keep it in the caches. */
  ho.capacity = nb->cap < 1024 ? nb->cap : 1024;
  ho.on_duplicate = TDM_DUP_KEEP_FIRST;
  /* At most half full: every row probes, and at the default 0.8 a quarter
   * of them run past their bucket (measured: 0.55x the speed at 10^5
   * distinct keys in 10^7 rows). */
  ho.max_load = 0.5;
  if ((st = relabel(fn, tdm_hash_create(ctx, &ho, &h))) != TDM_OK) goto fail;
  if ((st = tdm__hash_number(h, fn, keys, n, max_groups, nb->gid, nb->first, &done)) != TDM_OK) goto fail;
  if (done < n) {
    *too_many = 1;
    tdm_hash_destroy(h);
    numbering_free(ctx, nb);
    return TDM_OK;
  }
  nb->G = tdm_hash_size(h);
  if ((st = take(ctx, fn, nb->G, 4, (void **)&nb->count)) != TDM_OK) goto fail;
  if ((st = tdm__hash_number_counts(h, fn, nb->count)) != TDM_OK) goto fail;
  tdm_hash_destroy(h);
  return TDM_OK;
fail:
  if (h) tdm_hash_destroy(h);
  numbering_free(ctx, nb);
  return st;
}

/* ---- dense integer ranges ------------------------------------------------ */

/* The dense method (src/ops_api.c's rule): integer keys with
 * key - min <= span (unsigned, in the key's width) index a table of
 * span + 1 slots directly. Signed keys need nothing more: in two's
 * complement, key - min as unsigned is the key's distance above min. */

/* Order-preserving bits of an integer key (the sign flipped for signed),
 * so that one unsigned compare serves every integer type. */
static uint64_t mm_flip(tdm_type t) {
  return t == TDM_I32 ? (uint64_t)1 << 31 : t == TDM_I64 ? (uint64_t)1 << 63 : 0;
}

/* Min and max of the flipped bits of keys k[lo, hi) of type T, in four
 * independent pairs of accumulators: one pair is a chain of dependent
 * compare-and-selects, which ran the pass at a third of the memory's speed
 * (10^7 u64 keys: 35 ms with one pair, 24 with four, on an Intel Xeon). */
#define MINMAX_FOUR(T, k, flip, lo, hi, a, b)                                       \
  do {                                                                              \
    T a_[4] = {(T)(a), (T)(a), (T)(a), (T)(a)}, b_[4] = {(T)(b), (T)(b), (T)(b), (T)(b)}; \
    size_t i_ = (lo);                                                               \
    int j_;                                                                         \
    for (; i_ + 4 <= (hi); i_ += 4)                                                 \
      for (j_ = 0; j_ < 4; j_++) {                                                  \
        T x_ = (T)((k)[i_ + j_] ^ (flip));                                          \
        a_[j_] = x_ < a_[j_] ? x_ : a_[j_];                                         \
        b_[j_] = x_ > b_[j_] ? x_ : b_[j_];                                         \
      }                                                                             \
    for (; i_ < (hi); i_++) {                                                       \
      T x_ = (T)((k)[i_] ^ (flip));                                                 \
      a_[0] = x_ < a_[0] ? x_ : a_[0];                                              \
      b_[0] = x_ > b_[0] ? x_ : b_[0];                                              \
    }                                                                               \
    for (j_ = 1; j_ < 4; j_++) {                                                    \
      a_[0] = a_[j_] < a_[0] ? a_[j_] : a_[0];                                      \
      b_[0] = b_[j_] > b_[0] ? b_[j_] : b_[0];                                      \
    }                                                                               \
    (a) = a_[0];                                                                    \
    (b) = b_[0];                                                                    \
  } while (0)

/* Keys read between two looks at the range, in minmax_range. */
#define MINMAX_BLOCK ((size_t)4096)

/* Min and max of the flipped bits of keys [lo, hi), stopping after the
 * block where max - min reaches stop (the flip keeps order, so the
 * difference of flipped bits is the keys' distance). */
static void minmax_range(const void *keys, size_t ks, uint64_t flip, uint64_t stop, size_t lo, size_t hi,
                         uint64_t *mn, uint64_t *mx) {
  uint64_t a = UINT64_MAX, b = 0;
  size_t e;
  for (; lo < hi && !(a <= b && b - a >= stop); lo = e) {
    e = hi - lo > MINMAX_BLOCK ? lo + MINMAX_BLOCK : hi;
    if (ks == 4) {
      uint32_t a4 = (uint32_t)(a < UINT32_MAX ? a : UINT32_MAX), b4 = (uint32_t)b;
      MINMAX_FOUR(uint32_t, (const uint32_t *)keys, (uint32_t)flip, lo, e, a4, b4);
      a = a4;
      b = b4;
    } else {
      MINMAX_FOUR(uint64_t, (const uint64_t *)keys, flip, lo, e, a, b);
    }
  }
  *mn = a;
  *mx = b;
}

static tdm_status ops_minmax(tdm_ctx *ctx, tdm_type key_type, const void *keys, size_t n, uint64_t stop_span,
                             uint64_t *min_bits, uint64_t *max_bits) {
  uint64_t mn[OPS_MAX_CHUNKS], mx[OPS_MAX_CHUNKS], flip = mm_flip(key_type), a = UINT64_MAX, b = 0;
  size_t ks = tdm_type_size(key_type);
  int P = chunks_for(ctx, n), t;
  TDM__PAR_FOR(P, t, P,
               minmax_range(keys, ks, flip, stop_span, chunk(n, P, t), chunk(n, P, t + 1), &mn[t], &mx[t]));
  for (t = 0; t < P; t++) {
    a = mn[t] < a ? mn[t] : a;
    b = mx[t] > b ? mx[t] : b;
  }
  *min_bits = a ^ flip;
  *max_bits = b ^ flip;
  return TDM_OK;
}

/* Slot of row i: key - lo in the key's width. */
static size_t dense_slot(const void *keys, size_t ks, uint64_t lo, size_t i) {
  return ks == 4 ? (size_t)(uint32_t)(((const uint32_t *)keys)[i] - (uint32_t)lo)
                 : (size_t)(((const uint64_t *)keys)[i] - lo);
}

/* The dense table of tdm_unique: per slot its rows, its group number (the
 * output position) and, when wanted, its first row. The count pass is a
 * random access a row, so the table's bytes set its speed: rows are
 * counted in 16 bits (DENSE_SPILL below), and a call on more than one
 * thread counts each thread's rows into a table of its own, summed after
 * into counts of 4 bytes (8 from 2^32 rows). 10^7 rows over 10^6 slots on
 * an Intel Xeon, one thread: the pass took 46 ms with 8-byte counts, 31
 * with 4 and 20 with 2 (the table then fits a core's 2 MiB L2). */
typedef struct dense_tab {
  size_t S, G, cs;       /* cs: bytes a count, 2, 4 or 8 */
  void *cnt;             /* S counts */
  uint64_t *num, *first; /* S each; may be NULL */
} dense_tab;

/* A 16-bit count that would pass DENSE_SPILL logs its slot instead (each
 * entry stands for DENSE_SPILL rows) and starts again at 1: a slot with
 * rows never reads 0, and r rows of one slot log (r - 1) / DENSE_SPILL
 * entries, so a part of n rows logs at most n / DENSE_SPILL. */
#define DENSE_SPILL 0xFFFFu

static uint64_t dense_cnt(const dense_tab *d, size_t s) {
  return d->cs == 2 ? ((const uint16_t *)d->cnt)[s]
         : d->cs == 4 ? ((const uint32_t *)d->cnt)[s]
                      : ((const uint64_t *)d->cnt)[s];
}

static void dense_free(tdm_ctx *ctx, dense_tab *d) {
  give(ctx, d->cnt, d->S, d->cs);
  give(ctx, d->num, d->S, 8);
  give(ctx, d->first, d->S, 8);
}

/* One row into slot s of the 16-bit counts c; ns: the spills so far. */
static inline size_t dense_add(uint16_t *c, size_t s, size_t *spill, size_t ns) {
  unsigned v = c[s];
  if (v == DENSE_SPILL) {
    spill[ns++] = s;
    v = 0;
  }
  c[s] = (uint16_t)(v + 1);
  return ns;
}

/* Rows [lo, hi) counted into the S zeroed-here slots c (key - min, in the
 * key's width); *ns: the entries written to spill. The bounds are
 * parameters, so no store through c makes the compiler reload them every
 * row, as it did from the call's arguments. */
static void dense_count_part(uint16_t *c, size_t S, size_t *spill, size_t *ns, const void *keys, size_t ks,
                             uint64_t min, size_t lo, size_t hi) {
  size_t i, k = 0;
  memset(c, 0, S * sizeof *c);
  if (ks == 4) {
    const uint32_t *kp = (const uint32_t *)keys, m = (uint32_t)min;
    for (i = lo; i < hi; i++) k = dense_add(c, (uint32_t)(kp[i] - m), spill, k);
  } else {
    const uint64_t *kp = (const uint64_t *)keys;
    for (i = lo; i < hi; i++) k = dense_add(c, (size_t)(kp[i] - min), spill, k);
  }
  *ns = k;
}

/* The numbered count: one pass in row order counts every slot and, at a
 * slot's first row, notes that row and (first-seen order) the next group
 * number, so the numbers are the first-seen order with no further pass
 * and do not depend on the thread count. Returns the spills. */
static size_t dense_count_numbered(const tdm__unique_args *a, dense_tab *d, uint16_t *c, size_t *spill) {
  size_t i, ks = tdm_type_size(a->key_type), ns = 0;
  uint64_t *num = a->first_seen ? d->num : NULL, *first = d->first;
  memset(c, 0, d->S * sizeof *c);
  for (i = 0; i < a->n; i++) {
    size_t s = dense_slot(a->keys, ks, a->dense_min, i);
    unsigned v = c[s]; /* 0 only before the slot's first row */
    ns = dense_add(c, s, spill, ns);
    if (v == 0) {
      if (num) num[s] = d->G++;
      if (first) first[s] = i;
    }
  }
  return ns;
}

/* Slots [lo, hi): the sum of the P tables of 16-bit counts into counts of
 * cs bytes. */
static void dense_sum_range(const uint16_t *c, size_t S, int P, void *w, size_t cs, size_t lo, size_t hi) {
  size_t s;
  int t;
  for (s = lo; s < hi; s++) {
    uint64_t x = 0;
    for (t = 0; t < P; t++) x += c[(size_t)t * S + s];
    if (cs == 4) ((uint32_t *)w)[s] = (uint32_t)x;
    else ((uint64_t *)w)[s] = x;
  }
}

/* Start of part t's spill entries: room for its rows / DENSE_SPILL, plus one. */
static size_t spill_at(size_t n, int P, int t) { return chunk(n, P, t) / DENSE_SPILL + (size_t)t; }

/* Counts the rows into d->cnt (and numbers or first rows, when asked). In
 * ascending order without first rows the rows may be split across threads
 * (each its own table, while the tables stay under half the rows: beyond,
 * their sum would cost more than the rows); in ascending order the slots
 * with rows are then numbered in slot order, which is key order (key - min
 * preserves it). */
static tdm_status dense_count(tdm_ctx *ctx, const char *fn, const tdm__unique_args *a, dense_tab *d) {
  size_t ks = tdm_type_size(a->key_type), n = a->n, S = d->S, ns[OPS_MAX_CHUNKS], spills = 0, j;
  int numbered = a->first_seen || d->first, P = numbered ? 1 : chunks_for(ctx, n), t, Q;
  uint16_t *c = NULL;
  size_t *spill = NULL;
  tdm_status st;
  if (P > 1 && S > n / (2 * (size_t)P)) P = 1;
  if ((st = take(ctx, fn, (size_t)P * S, sizeof *c, (void **)&c)) != TDM_OK ||
      (st = take(ctx, fn, spill_at(n, P, P), sizeof *spill, (void **)&spill)) != TDM_OK)
    goto done;
  if (numbered) ns[0] = dense_count_numbered(a, d, c, spill);
  else
    TDM__PAR_FOR(P, t, P,
                 dense_count_part(c + (size_t)t * S, S, spill + spill_at(n, P, t), &ns[t], a->keys, ks,
                                  a->dense_min, chunk(n, P, t), chunk(n, P, t + 1)));
  for (t = 0; t < P; t++) spills += ns[t];
  if (P == 1 && spills == 0) {
    d->cnt = c;
    d->cs = sizeof *c;
    c = NULL;
  } else {
    d->cs = n <= UINT32_MAX ? 4 : 8;
    if ((st = take(ctx, fn, S, d->cs, &d->cnt)) != TDM_OK) {
      d->cs = 0;
      goto done;
    }
    Q = chunks_for(ctx, S);
    TDM__PAR_FOR(Q, t, Q, dense_sum_range(c, S, P, d->cnt, d->cs, chunk(S, Q, t), chunk(S, Q, t + 1)));
    for (t = 0; t < P; t++)
      for (j = 0; j < ns[t]; j++) {
        size_t s = spill[spill_at(n, P, t) + j];
        if (d->cs == 4) ((uint32_t *)d->cnt)[s] += DENSE_SPILL;
        else ((uint64_t *)d->cnt)[s] += DENSE_SPILL;
      }
  }
  if (!a->first_seen) {
    size_t s;
    for (s = 0; s < S; s++)
      if (dense_cnt(d, s)) {
        if (d->num) d->num[s] = d->G;
        d->G++;
      }
  }
done:
  give(ctx, c, (size_t)P * S, sizeof *c);
  give(ctx, spill, spill_at(n, P, P), sizeof *spill);
  return st;
}

/* Slots [lo, hi) to their output positions. */
static void dense_out_range(const dense_tab *d, const tdm__unique_args *a, size_t lo, size_t hi, size_t p) {
  size_t s, ks = tdm_type_size(a->key_type);
  for (s = lo; s < hi; s++) {
    uint64_t c = dense_cnt(d, s);
    if (!c) continue;
    if (d->num) p = (size_t)d->num[s];
    if (a->unique_out) {
      if (ks == 4) ((uint32_t *)a->unique_out)[p] = (uint32_t)a->dense_min + (uint32_t)s;
      else ((uint64_t *)a->unique_out)[p] = a->dense_min + s;
    }
    if (a->counts_out) a->counts_out[p] = c;
    if (a->first_index_out) a->first_index_out[p] = d->first[s];
    p++;
  }
}

static void dense_inverse_range(const dense_tab *d, const tdm__unique_args *a, size_t lo, size_t hi) {
  size_t i, ks = tdm_type_size(a->key_type);
  for (i = lo; i < hi; i++) a->inverse_out[i] = d->num[dense_slot(a->keys, ks, a->dense_min, i)];
}

/* ---- folds (tdm_group_reduce) ------------------------------------------- */

/* The fold state of one group: acc (SUM, MIN, MAX, FIRST, LAST: the value
 * so far, zero-extended from 32 bits) and m (MEAN: the float64 sum so far),
 * started from the group's first row. */
typedef struct hash_fold {
  uint64_t acc;
  double m;
} hash_fold;

static uint64_t value_at(const void *v, size_t vs, size_t i) {
  return vs == 4 ? ((const uint32_t *)v)[i] : ((const uint64_t *)v)[i];
}

/* Row i (not its group's first) folded into f: the step tdm__ops_fold makes
 * for it, so a group's rows folded in input order give the fold's bits. */
static void hash_fold_row(hash_fold *f, uint64_t x, size_t vs, int agg, int vk, int kind) {
  if (agg == TDM_AGG_MEAN) f->m += vs == 4 ? tdm__ops_to_f64_32((uint32_t)x, vk) : tdm__ops_to_f64_64(x, vk);
  else if (agg == TDM_AGG_LAST) f->acc = x;
  else if (agg != TDM_AGG_FIRST)
    f->acc = vs == 4 ? tdm__ops_step32((uint32_t)f->acc, (uint32_t)x, agg, vk, kind)
                     : tdm__ops_step64(f->acc, x, agg, vk, kind);
}

static hash_fold fold_start(uint64_t x, size_t vs, int vk) {
  hash_fold f;
  f.acc = x;
  f.m = vs == 4 ? tdm__ops_to_f64_32((uint32_t)x, vk) : tdm__ops_to_f64_64(x, vk);
  return f;
}

/* A group's result out of its state (count rows) into out[p]. */
static void fold_put(const hash_fold *f, size_t vs, size_t count, int agg, int vk, void *out, size_t p) {
  if (vs == 4) tdm__ops_fold_put32((uint32_t)f->acc, f->m, count, agg, vk, out, p);
  else tdm__ops_fold_put64(f->acc, f->m, count, agg, vk, out, p);
}

/* ---- building blocks (backend.h) of the operations written once --------- */

/* A call's memory on the CPU: caller arrays are host memory, used in place;
 * scratch comes from the context's allocator, as above. */
typedef struct cpu_call {
  int nbuf;
  struct {
    void *p;
    size_t bytes;
  } buf[24];
  tdm_hash *set;
  numbering nb;     /* the call's numbering (number), when have_nb */
  dense_tab dense;  /* the call's dense table (dense_build), when have_dense */
  tdm__unique_args da; /* the dense table's keys and outputs, as its loops read them */
  int have_nb, have_dense;
} cpu_call;
_Static_assert(sizeof(cpu_call) <= sizeof(((tdm__call *)0)->be), "cpu_call does not fit tdm__call");

static cpu_call *cpu_call_of(tdm__call *c) { return (cpu_call *)(void *)c->be; }

static tdm_status call_begin(tdm__call *c) {
  memset(cpu_call_of(c), 0, sizeof(cpu_call));
  return TDM_OK;
}

static tdm_status call_end(tdm__call *c, tdm_status st) {
  cpu_call *k = cpu_call_of(c);
  int i;
  if (k->set) tdm_hash_destroy(k->set);
  if (k->have_nb) numbering_free(c->ctx, &k->nb);
  if (k->have_dense) dense_free(c->ctx, &k->dense);
  for (i = 0; i < k->nbuf; i++) give(c->ctx, k->buf[i].p, k->buf[i].bytes, 1);
  k->nbuf = 0;
  k->set = NULL;
  return st;
}

static tdm_status call_in(tdm__call *c, const void *user, size_t bytes, const void **d) {
  (void)c, (void)bytes;
  *d = user;
  return TDM_OK;
}

static tdm_status call_out(tdm__call *c, void *user, size_t bytes, void **d) {
  (void)c, (void)bytes;
  *d = user;
  return TDM_OK;
}

static tdm_status call_scratch(tdm__call *c, size_t bytes, void **d) {
  cpu_call *k = cpu_call_of(c);
  tdm_status st;
  *d = NULL;
  /* Never NULL on success, as take (0 bytes: one); the status a constant
   * for the static analyzer, as there. */
  if (k->nbuf == (int)(sizeof k->buf / sizeof k->buf[0])) {
    (void)tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: internal: more than 24 scratch buffers in one call", c->fn);
    return TDM_ERR_INVALID_ARGUMENT;
  }
  if ((st = take(c->ctx, c->fn, bytes, 1, d)) != TDM_OK) return st;
  k->buf[k->nbuf].p = *d;
  k->buf[k->nbuf++].bytes = bytes;
  return TDM_OK;
}

/* A buffer taken from the allocator becomes the call's, freed by end. */
static tdm_status call_adopt(tdm__call *c, void *p, size_t bytes) {
  cpu_call *k = cpu_call_of(c);
  if (!p) return TDM_OK;
  if (k->nbuf == (int)(sizeof k->buf / sizeof k->buf[0])) {
    give(c->ctx, p, bytes, 1);
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: internal: more than 24 scratch buffers in one call", c->fn);
  }
  k->buf[k->nbuf].p = p;
  k->buf[k->nbuf++].bytes = bytes;
  return TDM_OK;
}

/* Caller arrays are written in place: nothing to trim. */
static tdm_status call_out_trim(tdm__call *c, void *d, size_t bytes) {
  (void)c, (void)d, (void)bytes;
  return TDM_OK;
}

static void fill_range(void *d, int byte, size_t lo, size_t hi) { memset((char *)d + lo, byte, hi - lo); }

static tdm_status blk_fill(tdm__call *c, void *d, int byte, size_t bytes) {
  int P = chunks_for(c->ctx, bytes / 8), t;
  TDM__PAR_FOR(P, t, P, fill_range(d, byte, chunk(bytes, P, t), chunk(bytes, P, t + 1)));
  return TDM_OK;
}

static void canon_bits_range(tdm_type t, const void *src, void *dst, int numeric, size_t lo, size_t hi) {
  int kind = tdm__key_kind(t);
  size_t i;
  if (tdm_type_size(t) == 4)
    for (i = lo; i < hi; i++)
      ((uint32_t *)dst)[i] = tdm__ops_canon_bits32(((const uint32_t *)src)[i], kind, numeric);
  else
    for (i = lo; i < hi; i++)
      ((uint64_t *)dst)[i] = tdm__ops_canon_bits64(((const uint64_t *)src)[i], kind, numeric);
}

static tdm_status blk_canon_bits(tdm__call *c, tdm_type key_type, const void *src, void *dst, size_t n, int numeric) {
  int P = chunks_for(c->ctx, n), t;
  TDM__PAR_FOR(P, t, P, canon_bits_range(key_type, src, dst, numeric, chunk(n, P, t), chunk(n, P, t + 1)));
  return TDM_OK;
}

static tdm_status blk_sort_words(tdm__call *c, size_t ks, void *d, size_t n) {
  tdm_type t = ks == 4 ? TDM_U32 : TDM_U64;
  if (n < 2) return TDM_OK;
  return relabel(c->fn, tdm__cpu_sort(c->ctx, t, d, t, NULL, n, 0));
}

static void search_range(tdm_type t, int numeric, const void *s, size_t m, const void *q, uint8_t *found, size_t lo,
                         size_t hi) {
  int kind = tdm__key_kind(t);
  size_t i, p;
  if (tdm_type_size(t) == 4)
    for (i = lo; i < hi; i++) {
      uint32_t b = tdm__ops_canon_bits32(((const uint32_t *)q)[i], kind, numeric);
      p = tdm__ops_bound32((const uint32_t *)s, m, b, 0);
      found[i] = (uint8_t)(p < m && ((const uint32_t *)s)[p] == b);
    }
  else
    for (i = lo; i < hi; i++) {
      uint64_t b = tdm__ops_canon_bits64(((const uint64_t *)q)[i], kind, numeric);
      p = tdm__ops_bound64((const uint64_t *)s, m, b, 0);
      found[i] = (uint8_t)(p < m && ((const uint64_t *)s)[p] == b);
    }
}

static tdm_status blk_search(tdm__call *c, tdm_type key_type, int numeric, const void *sorted, size_t m,
                             const void *queries, size_t n, uint8_t *found) {
  int P = chunks_for(c->ctx, n), t;
  TDM__PAR_FOR(P, t, P,
               search_range(key_type, numeric, sorted, m, queries, found, chunk(n, P, t), chunk(n, P, t + 1)));
  return TDM_OK;
}

/* The hash table of tandem/hash.h, keyed by the words: with vals, their
 * SUM; without, the keys serve as values too (never read). Its size says
 * at once whether words repeat. */
static tdm_status blk_set_build(tdm__call *c, size_t ks, const void *keys, const uint64_t *vals, size_t m,
                                int *repeats) {
  cpu_call *k = cpu_call_of(c);
  tdm_hash_opts ho;
  tdm_status st;
  memset(&ho, 0, sizeof ho);
  ho.key_type = ks == 4 ? TDM_U32 : TDM_U64;
  ho.value_type = vals ? TDM_U64 : ho.key_type;
  ho.capacity = m;
  ho.on_duplicate = vals ? TDM_DUP_SUM : TDM_DUP_KEEP_FIRST;
  if (k->set) { /* a second set replaces the first */
    tdm_hash_destroy(k->set);
    k->set = NULL;
  }
  if ((st = relabel(c->fn, tdm_hash_create(c->ctx, &ho, &k->set))) != TDM_OK ||
      (st = relabel(c->fn, tdm_hash_insert(k->set, keys, vals ? (const void *)vals : keys, m))) != TDM_OK)
    return st;
  if (repeats) *repeats = tdm_hash_size(k->set) < m;
  return TDM_OK;
}

/* The sample of repeats_hint: SAMPLE_RUNS runs of SAMPLE_RUN consecutive
 * words, evenly spread, which catch a sorted or clustered column's
 * repeats, and up to as many single words at scattered positions (a fixed
 * pseudo-random sequence, each position once and none inside a run),
 * which catch repeats spread anywhere by the birthday bound (2^15 words of
 * 10^7 rows, every key twice: about 54 pairs sampled) where evenly spaced
 * runs could alias with a strided layout. Sorted, neighbours compared;
 * all the words when so few. Two equal sampled words are two rows. */
#define SAMPLE_RUNS ((size_t)32)
#define SAMPLE_RUN ((size_t)1024)
#define SAMPLE_HALF (SAMPLE_RUNS * SAMPLE_RUN)

static int blk_repeats_hint(tdm__call *c, size_t ks, const void *words, size_t n) {
  size_t m = n, r, j, gap;
  const unsigned char *w = (const unsigned char *)words;
  unsigned char *s;
  uint64_t *pos = NULL;
  tdm_type t = ks == 4 ? TDM_U32 : TDM_U64;
  if (call_scratch(c, (n < 2 * SAMPLE_HALF ? n : 2 * SAMPLE_HALF) * ks, (void **)&s) != TDM_OK) return -1;
  if (n <= 2 * SAMPLE_HALF) {
    memcpy(s, words, n * ks);
  } else {
    gap = (n - SAMPLE_RUN) / (SAMPLE_RUNS - 1);
    for (r = 0; r < SAMPLE_RUNS; r++) memcpy(s + r * SAMPLE_RUN * ks, w + r * gap * ks, SAMPLE_RUN * ks);
    if (call_scratch(c, SAMPLE_HALF * 8, (void **)&pos) != TDM_OK) return -1;
    for (j = 0; j < SAMPLE_HALF; j++) pos[j] = tdm__hash_mix(j + 1) % n;
    if (tdm__cpu_sort(c->ctx, TDM_U64, pos, TDM_U64, NULL, SAMPLE_HALF, 0) != TDM_OK) return -1;
    for (j = 0, m = SAMPLE_HALF; j < SAMPLE_HALF; j++) {
      r = (size_t)pos[j] / gap; /* the run at or before it */
      if ((j > 0 && pos[j] == pos[j - 1]) || (r < SAMPLE_RUNS && pos[j] - r * gap < SAMPLE_RUN)) continue;
      memcpy(s + m++ * ks, w + pos[j] * ks, ks);
    }
  }
  if (m > 1 && tdm__cpu_sort(c->ctx, t, s, t, NULL, m, 0) != TDM_OK) return -1;
  for (j = 1; j < m; j++)
    if (ks == 4 ? ((const uint32_t *)s)[j] == ((const uint32_t *)s)[j - 1]
                : ((const uint64_t *)s)[j] == ((const uint64_t *)s)[j - 1])
      return 1;
  return 0;
}

/* A set valued at the rows: the values an iota. */
static tdm_status blk_set_build_rows(tdm__call *c, size_t ks, const void *keys, size_t m) {
  uint64_t *rows;
  int P = chunks_for(c->ctx, m), t;
  tdm_status st;
  if ((st = call_scratch(c, m * 8, (void **)&rows)) != TDM_OK) return st;
  TDM__PAR_FOR(P, t, P, iota_range(rows, 8, chunk(m, P, t), chunk(m, P, t + 1)));
  return blk_set_build(c, ks, keys, rows, m, NULL);
}

static tdm_status blk_set_probe(tdm__call *c, const void *queries, size_t n, uint64_t *values, uint8_t *found) {
  return relabel(c->fn, tdm_hash_find(cpu_call_of(c)->set, queries, values, found, n));
}

static tdm_status blk_sort_indexed(tdm__call *c, tdm_type key_type, int numeric, const void *src, size_t n,
                                   void *bits, void *idx, size_t iw) {
  size_t ks = tdm_type_size(key_type);
  int P = chunks_for(c->ctx, n), t;
  TDM__PAR_FOR(P, t, P, {
    canon_bits_range(key_type, src, bits, numeric, chunk(n, P, t), chunk(n, P, t + 1));
    iota_range(idx, iw, chunk(n, P, t), chunk(n, P, t + 1));
  });
  if (n < 2) return TDM_OK;
  return relabel(c->fn,
                 tdm__cpu_sort(c->ctx, ks == 4 ? TDM_U32 : TDM_U64, bits, iw == 4 ? TDM_U32 : TDM_U64, idx, n, 0));
}

static void run_adds_range(size_t ks, const void *s, uint64_t *add, size_t lo, size_t hi) {
  size_t k;
  for (k = lo; k < hi; k++) {
    int head = !s || k == 0 ||
               (ks == 4 ? ((const uint32_t *)s)[k] != ((const uint32_t *)s)[k - 1]
                        : ((const uint64_t *)s)[k] != ((const uint64_t *)s)[k - 1]);
    add[k] = tdm__ops_join_run_add(head, k);
  }
}

static tdm_status blk_run_adds(tdm__call *c, size_t ks, const void *sorted, size_t n, uint64_t *add) {
  int P = chunks_for(c->ctx, n), t;
  TDM__PAR_FOR(P, t, P, run_adds_range(ks, sorted, add, chunk(n, P, t), chunk(n, P, t + 1)));
  return TDM_OK;
}

/* A set of single-row runs (NULL words: every row a run's head): their
 * adds written, then summed as any vals. */
static tdm_status blk_set_build_runs(tdm__call *c, size_t ks, const void *keys, size_t m, uint64_t *add,
                                     int *repeats) {
  int P = chunks_for(c->ctx, m), t;
  TDM__PAR_FOR(P, t, P, run_adds_range(ks, NULL, add, chunk(m, P, t), chunk(m, P, t + 1)));
  return blk_set_build(c, ks, keys, add, m, repeats);
}

/* Returns 1 when a run of [lo, hi) counts more than one right row. */
static int join_runs_range(int kind, uint64_t *ms, uint64_t *mc, uint64_t *rows, size_t lo, size_t hi) {
  size_t i;
  int multi = 0;
  for (i = lo; i < hi; i++) {
    uint64_t w = ms[i];
    mc[i] = tdm__ops_join_run_count(w);
    ms[i] = tdm__ops_join_run_start(w);
    if (rows) rows[i] = tdm__ops_join_rows(kind, mc[i]);
    multi |= mc[i] > 1;
  }
  return multi;
}

static tdm_status blk_join_runs(tdm__call *c, int kind, uint64_t *ms, uint64_t *mc, uint64_t *rows, size_t nl,
                                uint64_t *multi) {
  int P = chunks_for(c->ctx, nl), t, any = 0;
  TDM__PAR_FOR_REDUCE(P, |, any, t, P, any |= join_runs_range(kind, ms, mc, rows, chunk(nl, P, t), chunk(nl, P, t + 1)));
  if (multi && any) *multi |= TDM__OPS_JOIN_MULTI;
  return TDM_OK;
}

#define JOIN_BOUNDS_RANGE(W)                                                                                    \
  static void join_bounds_range##W(int kind, int kd, int numeric, const uint##W##_t *left, const uint##W##_t *rb,    \
                                   size_t nr, uint64_t *ms, uint64_t *mc, uint64_t *rows, size_t lo, size_t hi) {    \
    size_t i;                                                                                                     \
    for (i = lo; i < hi; i++) {                                                                                   \
      uint##W##_t q = tdm__ops_canon_bits##W(left[i], kd, numeric);                                              \
      size_t a = tdm__ops_bound##W(rb, nr, q, 0), b = tdm__ops_bound##W(rb, nr, q, 1);                          \
      ms[i] = a;                                                                                                  \
      mc[i] = b - a;                                                                                              \
      rows[i] = tdm__ops_join_rows(kind, b - a);                                                                  \
    }                                                                                                             \
  }
JOIN_BOUNDS_RANGE(32)
JOIN_BOUNDS_RANGE(64)
#undef JOIN_BOUNDS_RANGE

static tdm_status blk_join_bounds(tdm__call *c, int kind, tdm_type key_type, int numeric, const void *left, size_t nl,
                                  const void *rbits, size_t nr, uint64_t *ms, uint64_t *mc, uint64_t *rows) {
  int P = chunks_for(c->ctx, nl), t, kd = tdm__key_kind(key_type);
  if (tdm_type_size(key_type) == 4)
    TDM__PAR_FOR(P, t, P,
                 join_bounds_range32(kind, kd, numeric, (const uint32_t *)left, (const uint32_t *)rbits, nr, ms, mc,
                                     rows, chunk(nl, P, t), chunk(nl, P, t + 1)));
  else
    TDM__PAR_FOR(P, t, P,
                 join_bounds_range64(kind, kd, numeric, (const uint64_t *)left, (const uint64_t *)rbits, nr, ms, mc,
                                     rows, chunk(nl, P, t), chunk(nl, P, t + 1)));
  rows[nl] = 0;
  return TDM_OK;
}

static uint64_t sum_range(const uint64_t *in, size_t lo, size_t hi) {
  uint64_t s = 0;
  size_t i;
  for (i = lo; i < hi; i++) s += in[i];
  return s;
}

static void scan_range(const uint64_t *in, uint64_t *off, uint64_t base, size_t lo, size_t hi) {
  size_t i;
  for (i = lo; i < hi; i++) {
    uint64_t v = in[i]; /* read first: in may be off */
    off[i] = base;
    base += v;
  }
}

/* Each chunk's sum, their exclusive sum, then each chunk's scan from its
 * base. */
static tdm_status blk_scan_total(tdm__call *c, const uint64_t *in, uint64_t *off, size_t n, uint64_t *total) {
  uint64_t base[OPS_MAX_CHUNKS], s = 0;
  int P = chunks_for(c->ctx, n), t;
  TDM__PAR_FOR(P, t, P, base[t] = sum_range(in, chunk(n, P, t), chunk(n, P, t + 1)));
  for (t = 0; t < P; t++) {
    uint64_t b = base[t];
    base[t] = s;
    s += b;
  }
  TDM__PAR_FOR(P, t, P, scan_range(in, off, base[t], chunk(n, P, t), chunk(n, P, t + 1)));
  *total = s;
  return TDM_OK;
}

/* Output rows of chunk f of JOIN_FILL_ROWS (the last one shorter). */
static void join_fill_chunk(int kind, const uint64_t *ms, const uint64_t *mc, const uint64_t *off, const void *idx,
                            size_t iw, size_t nl, uint64_t *lo_out, uint64_t *ro_out, uint64_t total, size_t f) {
  uint64_t lo = (uint64_t)f * JOIN_FILL_ROWS, hi = total - lo > JOIN_FILL_ROWS ? lo + JOIN_FILL_ROWS : total;
  if (iw == 4) tdm__ops_join_fill32(kind, off, nl, ms, mc, (const uint32_t *)idx, lo_out, ro_out, lo, hi);
  else tdm__ops_join_fill64(kind, off, nl, ms, mc, (const uint64_t *)idx, lo_out, ro_out, lo, hi);
}

/* The output in chunks of JOIN_FILL_ROWS rows, however many threads run
 * them: where the chunk boundaries fall (inside a hot key's rows, say)
 * does not depend on the machine's load. */
static tdm_status blk_join_fill(tdm__call *c, int kind, const uint64_t *ms, const uint64_t *mc, const uint64_t *off,
                                const void *idx, size_t iw, size_t nl, uint64_t *left_out, uint64_t *right_out,
                                uint64_t total) {
  long nf = (long)((total + JOIN_FILL_ROWS - 1) / JOIN_FILL_ROWS), f;
  int R = chunks_for(c->ctx, (size_t)total);
  TDM__PAR_FOR(R, f, nf, join_fill_chunk(kind, ms, mc, off, idx, iw, nl, left_out, right_out, total, (size_t)f));
  return TDM_OK;
}

static tdm_status blk_bits_set(tdm__call *c, size_t ks, const void *keys, size_t m, uint64_t lo, uint64_t *bits) {
  size_t j;
  (void)c;
  for (j = 0; j < m; j++) {
    size_t s = dense_slot(keys, ks, lo, j);
    bits[s >> 6] |= (uint64_t)1 << (s & 63);
  }
  return TDM_OK;
}

static void bits_test_range(size_t ks, const void *q, uint64_t lo, uint64_t span, const uint64_t *bits,
                            uint8_t *found, size_t a, size_t b) {
  size_t i;
  for (i = a; i < b; i++) {
    size_t s = dense_slot(q, ks, lo, i);
    found[i] = (uint8_t)(s <= span && (bits[s >> 6] >> (s & 63) & 1));
  }
}

static tdm_status blk_bits_test(tdm__call *c, size_t ks, const void *queries, size_t n, uint64_t lo, uint64_t span,
                                const uint64_t *bits, uint8_t *found) {
  int P = chunks_for(c->ctx, n), t;
  TDM__PAR_FOR(P, t, P, bits_test_range(ks, queries, lo, span, bits, found, chunk(n, P, t), chunk(n, P, t + 1)));
  return TDM_OK;
}

/* ---- tdm_unique's blocks ---- */

/* The keys' copy sorted by the radix sort, which takes every key type:
 * the sort words are the keys themselves. */
static tdm_status blk_sort_keys(tdm__call *c, tdm_type key_type, const void *src, size_t n, void **sorted) {
  size_t ks = tdm_type_size(key_type);
  tdm_status st;
  if ((st = call_scratch(c, n * ks, sorted)) != TDM_OK || n == 0) return st;
  memcpy(*sorted, src, n * ks);
  if (n < 2) return TDM_OK;
  return relabel(c->fn, tdm__cpu_sort(c->ctx, key_type, *sorted, key_type, NULL, n, 0));
}

/* Heads in sorted kc[lo, hi) (as heads_range counts them) and, in *first,
 * the first of them (hi: none); the keys before it are only compared. */
static size_t heads_first(const void *kc, size_t ks, size_t lo, size_t hi, size_t *first) {
  size_t k = lo;
  if (k > 0) {
    if (ks == 4)
      while (k < hi && ((const uint32_t *)kc)[k] == ((const uint32_t *)kc)[k - 1]) k++;
    else
      while (k < hi && ((const uint64_t *)kc)[k] == ((const uint64_t *)kc)[k - 1]) k++;
  }
  *first = k;
  return heads_range(kc, ks, k, hi, NULL, 0);
}

/* The runs of sorted kc whose heads lie in [lo, hi), lo a head, written
 * from output position p: each head's key into u and its run's length into
 * cnt (either may be NULL); the part's last run ends at end (the next head
 * at or after hi, or n). One pass over the keys, no array of run starts.
 * Returns the position after the last run written. */
static size_t runs_emit_range(const void *kc, size_t ks, void *u, uint64_t *cnt, size_t lo, size_t hi, size_t p,
                              size_t end) {
  size_t k, h = lo;
  if (lo >= hi) return p;
  if (u) copy_key(u, p, kc, lo, ks);
  for (k = lo + 1; k < hi; k++)
    if (ks == 4 ? ((const uint32_t *)kc)[k] != ((const uint32_t *)kc)[k - 1]
                : ((const uint64_t *)kc)[k] != ((const uint64_t *)kc)[k - 1]) {
      if (cnt) cnt[p] = k - h;
      if (u) copy_key(u, p + 1, kc, k, ks);
      p++;
      h = k;
    }
  if (cnt) cnt[p] = end - h;
  return p + 1;
}

/* The runs written in one pass over the sorted keys; on more than one
 * thread a first pass counts each part's heads (their output positions)
 * and finds its first head. (Writing the run starts, then reading them
 * back to write the outputs, took 0.141-0.147 s for 10^7 u64 keys over
 * 10^6 values on an Intel Xeon on one thread, this 0.131-0.136, the sort
 * 0.097 of it.) */
static tdm_status blk_runs_keys(tdm__call *c, tdm_type key_type, const void *sorted, size_t n, void *keys_out,
                                uint64_t *counts_out, size_t *G) {
  size_t ks = tdm_type_size(key_type), heads[OPS_MAX_CHUNKS], first[OPS_MAX_CHUNKS], end[OPS_MAX_CHUNKS], g = 0,
         next = n;
  int P = chunks_for(c->ctx, n), t;
  if (P == 1) {
    *G = runs_emit_range(sorted, ks, keys_out, counts_out, 0, n, 0, n);
    return TDM_OK;
  }
  TDM__PAR_FOR(P, t, P, heads[t] = heads_first(sorted, ks, chunk(n, P, t), chunk(n, P, t + 1), &first[t]));
  for (t = P; t-- > 0;) {
    end[t] = next;
    if (heads[t]) next = first[t];
  }
  for (t = 0; t < P; t++) {
    size_t h = heads[t];
    heads[t] = g;
    g += h;
  }
  TDM__PAR_FOR(P, t, P,
               (void)runs_emit_range(sorted, ks, keys_out, counts_out, first[t], chunk(n, P, t + 1), heads[t],
                                     end[t]));
  *G = g;
  return TDM_OK;
}

/* Entry k of an index array of iw-byte entries (idx NULL: k itself). */
static size_t index_at(const void *idx, size_t iw, size_t k) {
  if (!idx) return k;
  return iw == 4 ? (size_t)((const uint32_t *)idx)[k] : (size_t)((const uint64_t *)idx)[k];
}

static void runs_first_range(const uint64_t *off, const void *idx, size_t iw, uint64_t *first, size_t lo, size_t hi) {
  size_t r;
  for (r = lo; r < hi; r++) first[r] = index_at(idx, iw, (size_t)off[r]);
}

static tdm_status blk_runs(tdm__call *c, size_t ks, const void *sorted, const void *idx, size_t iw, size_t n,
                           int want_first, tdm__groups *g) {
  uint64_t *off = NULL;
  size_t G = 0;
  int P, t;
  tdm_status st;
  memset(g, 0, sizeof *g);
  if ((st = sorted_runs(c->ctx, c->fn, sorted, ks, n, &off, &G)) != TDM_OK) return st;
  if ((st = call_adopt(c, off, (G + 1) * 8)) != TDM_OK) return st;
  g->off = off;
  g->idx = idx;
  g->iw = iw;
  g->G = G;
  if (!want_first || G == 0) return TDM_OK;
  if ((st = call_scratch(c, G * 8, (void **)&g->first)) != TDM_OK) return st;
  P = chunks_for(c->ctx, G);
  TDM__PAR_FOR(P, t, P, runs_first_range(off, idx, iw, g->first, chunk(G, P, t), chunk(G, P, t + 1)));
  return TDM_OK;
}

/* Group p's first row, count and word, as asked, from the numbering. */
static void number_desc_range(const numbering *nb, size_t ks, const void *words, tdm__groups *g, size_t lo,
                              size_t hi) {
  size_t p;
  for (p = lo; p < hi; p++) {
    if (g->first) g->first[p] = nb->first[p];
    if (g->count) g->count[p] = nb->count[p];
    if (g->bits) copy_key((void *)g->bits, p, words, nb->first[p], ks);
  }
}

/* The fold of the numbering's groups, in input order: a group's state
 * starts at its first row, and every later row folds into it as it comes
 * (a pass as sequential as the numbering's), then each result is put. */
static void number_put_range(const numbering *nb, const hash_fold *st, size_t vs, int agg, int vk, void *vals,
                             size_t lo, size_t hi) {
  size_t p;
  for (p = lo; p < hi; p++) fold_put(&st[p], vs, nb->count[p], agg, vk, vals, p);
}

static tdm_status number_fold(tdm__call *c, const numbering *nb, const tdm__fold *f, tdm__groups *g) {
  size_t G = nb->G, n = nb->n, vs = tdm_type_size(f->value_type), i;
  int vk = tdm__ops_value_kind(f->value_type), kind = tdm__key_kind(f->value_type), P, t;
  hash_fold *st;
  void *vals;
  tdm_status e;
  if ((e = call_scratch(c, G * sizeof *st, (void **)&st)) != TDM_OK ||
      (e = call_scratch(c, G * tdm__fold_width(f), &vals)) != TDM_OK)
    return e;
  for (i = 0; i < G; i++) st[i] = fold_start(value_at(f->values, vs, nb->first[i]), vs, vk);
  for (i = 0; i < n; i++) {
    uint32_t q = nb->gid[i];
    if (nb->first[q] != i) hash_fold_row(&st[q], value_at(f->values, vs, i), vs, f->agg, vk, kind);
  }
  P = chunks_for(c->ctx, G);
  TDM__PAR_FOR(P, t, P, number_put_range(nb, st, vs, f->agg, vk, vals, chunk(G, P, t), chunk(G, P, t + 1)));
  g->vals = vals;
  g->vw = tdm__fold_width(f);
  return TDM_OK;
}

/* The hash table's insert-or-number (number_keys): one pass in row order,
 * so the numbering is by first row whatever want asks, with first rows
 * and counts at no cost; a fold is one more pass in row order. */
static tdm_status blk_number(tdm__call *c, size_t ks, const void *words, size_t n, unsigned want, size_t max_groups,
                             const tdm__fold *fold, tdm__groups *g) {
  cpu_call *k = cpu_call_of(c);
  size_t G;
  void *bits = NULL;
  int too_many, P, t;
  tdm_status st;
  memset(g, 0, sizeof *g);
  if (k->have_nb) return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: internal: a second numbering in one call", c->fn);
  st = number_keys(c->ctx, c->fn, ks, words, n, (want & TDM__NUMBER_CODES) || fold, max_groups, &k->nb,
                   &too_many);
  if (st != TDM_OK) return st;
  g->too_many = too_many;
  if (too_many) return TDM_OK;
  k->have_nb = 1;
  G = k->nb.G;
  if (((want & TDM__NUMBER_FIRST) && (st = call_scratch(c, G * 8, (void **)&g->first)) != TDM_OK) ||
      ((want & TDM__NUMBER_COUNT) && (st = call_scratch(c, G * 8, (void **)&g->count)) != TDM_OK) ||
      ((want & TDM__NUMBER_BITS) && (st = call_scratch(c, G * ks, &bits)) != TDM_OK) ||
      (fold && (st = number_fold(c, &k->nb, fold, g)) != TDM_OK))
    return st;
  g->bits = bits;
  P = chunks_for(c->ctx, G);
  TDM__PAR_FOR(P, t, P, number_desc_range(&k->nb, ks, words, g, chunk(G, P, t), chunk(G, P, t + 1)));
  g->G = G;
  return TDM_OK;
}

static void codes_range(const uint32_t *gid, const uint64_t *rank, uint64_t *code, size_t lo, size_t hi) {
  size_t i;
  if (rank)
    for (i = lo; i < hi; i++) code[i] = rank[gid[i]];
  else
    for (i = lo; i < hi; i++) code[i] = gid[i];
}

static tdm_status blk_number_codes(tdm__call *c, const uint64_t *rank, uint64_t *code) {
  cpu_call *k = cpu_call_of(c);
  size_t n = k->nb.n;
  int P = chunks_for(c->ctx, n), t;
  if (!k->have_nb || !k->nb.gid)
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: internal: no numbering with codes in this call", c->fn);
  TDM__PAR_FOR(P, t, P, codes_range(k->nb.gid, rank, code, chunk(n, P, t), chunk(n, P, t + 1)));
  return TDM_OK;
}

static void invert_range(const void *perm, size_t pw, uint64_t *inv, size_t lo, size_t hi) {
  size_t p;
  for (p = lo; p < hi; p++) inv[index_at(perm, pw, p)] = p;
}

static tdm_status blk_invert(tdm__call *c, const void *perm, size_t pw, size_t n, uint64_t *inv) {
  int P = chunks_for(c->ctx, n), t;
  TDM__PAR_FOR(P, t, P, invert_range(perm, pw, inv, chunk(n, P, t), chunk(n, P, t + 1)));
  return TDM_OK;
}

static void groups_put_range(size_t ks, const void *keys, const tdm__groups *g, const void *ord, size_t ow,
                             void *keys_out, uint64_t *first_out, uint64_t *counts_out, void *values_out, size_t lo,
                             size_t hi) {
  size_t p;
  for (p = lo; p < hi; p++) {
    size_t q = ord ? index_at(ord, ow, p) : p;
    size_t f = g->first ? (size_t)g->first[q] : g->off ? index_at(g->idx, g->iw, (size_t)g->off[q]) : 0;
    if (keys_out) {
      if (g->first || g->off) copy_key(keys_out, p, keys, f, ks);
      else copy_key(keys_out, p, g->bits, q, ks);
    }
    if (first_out) first_out[p] = f;
    if (counts_out) counts_out[p] = g->count ? g->count[q] : g->off ? g->off[q + 1] - g->off[q] : 0;
    if (values_out) copy_key(values_out, p, g->vals, q, g->vw);
  }
}

static tdm_status blk_groups_put(tdm__call *c, size_t ks, const void *keys, const tdm__groups *g, const void *ord,
                                 size_t ow, void *keys_out, uint64_t *first_out, uint64_t *counts_out,
                                 void *values_out) {
  int P = chunks_for(c->ctx, g->G), t;
  TDM__PAR_FOR(P, t, P,
               groups_put_range(ks, keys, g, ord, ow, keys_out, first_out, counts_out, values_out, chunk(g->G, P, t),
                                chunk(g->G, P, t + 1)));
  return TDM_OK;
}

/* The keys and values copied and sorted as pairs by the radix sort (stable),
 * which takes every key type: the sort words are the keys themselves. */
static tdm_status blk_sort_pairs(tdm__call *c, tdm_type key_type, const void *keys, const void *values, size_t vs,
                                 size_t n, void *words, void *vals) {
  size_t ks = tdm_type_size(key_type);
  memcpy(words, keys, n * ks);
  memcpy(vals, values, n * vs);
  if (n < 2) return TDM_OK;
  return relabel(c->fn, tdm__cpu_sort(c->ctx, key_type, words, vs == 4 ? TDM_U32 : TDM_U64, vals, n, 0));
}

static tdm_status blk_words_keys(tdm__call *c, tdm_type key_type, void *d, size_t n) {
  (void)c, (void)key_type, (void)d, (void)n; /* the words are the keys */
  return TDM_OK;
}

/* Run r's values folded in input order into out[p]: read in place when the
 * values were sorted along (no idx), else through the run's rows. */
static void fold_run(const tdm__groups *g, const tdm__fold *f, size_t r, void *out, size_t p) {
  size_t s = (size_t)g->off[r], e = (size_t)g->off[r + 1];
  int vk = tdm__ops_value_kind(f->value_type), kind = tdm__key_kind(f->value_type), agg = f->agg;
  if (tdm_type_size(f->value_type) == 4) {
    const uint32_t *v = (const uint32_t *)f->values;
    if (!g->idx) tdm__ops_fold32(v, NULL, s, e, agg, vk, kind, out, p);
    else if (g->iw == 4) tdm__ops_fold32_m32(v, (const uint32_t *)g->idx, s, e, agg, vk, kind, out, p);
    else tdm__ops_fold32(v, (const uint64_t *)g->idx, s, e, agg, vk, kind, out, p);
  } else {
    const uint64_t *v = (const uint64_t *)f->values;
    if (!g->idx) tdm__ops_fold64(v, NULL, s, e, agg, vk, kind, out, p);
    else if (g->iw == 4) tdm__ops_fold64_m32(v, (const uint32_t *)g->idx, s, e, agg, vk, kind, out, p);
    else tdm__ops_fold64(v, (const uint64_t *)g->idx, s, e, agg, vk, kind, out, p);
  }
}

static void fold_runs_range(const tdm__groups *g, const void *ord, size_t ow, const tdm__fold *f, void *out,
                            size_t lo, size_t hi) {
  size_t p;
  for (p = lo; p < hi; p++) fold_run(g, f, ord ? index_at(ord, ow, p) : p, out, p);
}

/* Split by runs: each run is folded by one thread, in input order. */
static tdm_status blk_fold_runs(tdm__call *c, const tdm__groups *g, const void *ord, size_t ow, const tdm__fold *f,
                                void *values_out) {
  size_t n = g->G ? (size_t)g->off[g->G] : 0;
  int P = chunks_for(c->ctx, g->G), t;
  if (P < chunks_for(c->ctx, n) && g->G >= (size_t)chunks_for(c->ctx, n)) P = chunks_for(c->ctx, n);
  TDM__PAR_FOR(P, t, P, fold_runs_range(g, ord, ow, f, values_out, chunk(g->G, P, t), chunk(g->G, P, t + 1)));
  return TDM_OK;
}

/* Sorted positions [lo, hi): the run holding lo found once, then walked. */
static void groups_scatter_range(const tdm__groups *g, const void *idx, size_t iw, const uint64_t *rank,
                                 uint64_t *inv, size_t lo, size_t hi) {
  size_t k, r;
  if (lo >= hi) return;
  r = (size_t)tdm__csr_owner(g->off, g->G, lo);
  for (k = lo; k < hi; k++) {
    while (g->off[r + 1] <= k) r++;
    inv[index_at(idx, iw, k)] = rank ? rank[r] : r;
  }
}

static tdm_status blk_groups_scatter(tdm__call *c, const tdm__groups *g, const void *idx, size_t iw,
                                     const uint64_t *rank, size_t n, uint64_t *inverse_out) {
  int P = chunks_for(c->ctx, n), t;
  TDM__PAR_FOR(P, t, P, groups_scatter_range(g, idx, iw, rank, inverse_out, chunk(n, P, t), chunk(n, P, t + 1)));
  return TDM_OK;
}

/* The dense table's count (dense_count) numbers the values in use: in key
 * order, or by first row in the numbered count's one pass. */
static tdm_status blk_dense_build(tdm__call *c, tdm_type key_type, const void *keys, size_t n, uint64_t lo,
                                  uint64_t span, int first_seen, int want_first, int want_inverse, size_t *G) {
  cpu_call *k = cpu_call_of(c);
  tdm__unique_args *a = &k->da;
  dense_tab *d = &k->dense;
  tdm_status st;
  if (k->have_dense) return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: internal: a second dense table in one call", c->fn);
  memset(a, 0, sizeof *a);
  memset(d, 0, sizeof *d);
  a->key_type = key_type;
  a->keys = keys;
  a->n = n;
  a->first_seen = first_seen;
  a->dense_min = lo;
  a->dense_span = span;
  k->have_dense = 1;
  d->S = (size_t)span + 1;
  if ((first_seen || want_inverse) && (st = take(c->ctx, c->fn, d->S, 8, (void **)&d->num)) != TDM_OK) return st;
  if (want_first && (st = take(c->ctx, c->fn, d->S, 8, (void **)&d->first)) != TDM_OK) return st;
  if ((st = dense_count(c->ctx, c->fn, a, d)) != TDM_OK) return st;
  *G = d->G;
  return TDM_OK;
}

/* With numbers each value knows its position; without them (ascending
 * order, no inverse) the values are written in order from position 0. */
static tdm_status blk_dense_put(tdm__call *c, void *keys_out, uint64_t *first_out, uint64_t *counts_out,
                                uint64_t *inverse_out) {
  cpu_call *k = cpu_call_of(c);
  tdm__unique_args *a = &k->da;
  const dense_tab *d = &k->dense;
  int P, t;
  a->unique_out = keys_out;
  a->first_index_out = first_out;
  a->counts_out = counts_out;
  a->inverse_out = inverse_out;
  P = d->num ? chunks_for(c->ctx, d->S) : 1;
  TDM__PAR_FOR(P, t, P, dense_out_range(d, a, chunk(d->S, P, t), chunk(d->S, P, t + 1), 0));
  if (inverse_out && d->num) {
    P = chunks_for(c->ctx, a->n);
    TDM__PAR_FOR(P, t, P, dense_inverse_range(d, a, chunk(a->n, P, t), chunk(a->n, P, t + 1)));
  }
  return TDM_OK;
}

const tdm__ops_ops tdm__ops_cpu_ops = {
    .begin = call_begin,
    .end = call_end,
    .in = call_in,
    .out = call_out,
    .scratch = call_scratch,
    .out_trim = call_out_trim,
    .fill = blk_fill,
    .canon_bits = blk_canon_bits,
    .sort_words = blk_sort_words,
    .sort_indexed = blk_sort_indexed,
    .search = blk_search,
    .set_build = blk_set_build,
    .set_probe = blk_set_probe,
    .set_build_rows = blk_set_build_rows,
    .set_build_runs = blk_set_build_runs,
    .repeats_hint = blk_repeats_hint,
    .run_adds = blk_run_adds,
    .join_runs = blk_join_runs,
    .join_bounds = blk_join_bounds,
    .scan_total = blk_scan_total,
    .join_fill = blk_join_fill,
    .bits_set = blk_bits_set,
    .bits_test = blk_bits_test,
    .sort_keys = blk_sort_keys,
    .runs_keys = blk_runs_keys,
    .runs = blk_runs,
    .number = blk_number,
    .number_codes = blk_number_codes,
    .invert = blk_invert,
    .groups_put = blk_groups_put,
    .sort_pairs = blk_sort_pairs,
    .words_keys = blk_words_keys,
    .fold_runs = blk_fold_runs,
    .groups_scatter = blk_groups_scatter,
    .dense_build = blk_dense_build,
    .dense_put = blk_dense_put,
    .minmax = ops_minmax,
    .dense_by_rule = 1,
    /* The hash (src/ops_api.c's join rule). */
    .join_method = TDM__OPS_HASH,
    .hash_groups = TDM__HASH_GROUPS_IN_ORDER,
};
