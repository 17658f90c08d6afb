/*
 * ops_number.c: numbering keys by first occurrence in one pass, the CPU's
 * hash method for tdm_unique (cpu/ops_cpu.c).
 *
 * Each row costs one probe of an open-addressing table whose slot holds the
 * canonical key, its group number and its count: the first row of a key
 * opens a slot with the next number (so the numbers are the first-seen
 * order, the order pandas.factorize returns) and remembers its row; later
 * rows add to the count. tdm_hash answers insert and find as two calls with
 * no number or count per key, which is two passes and a counting pass more;
 * this table does only what numbering needs. It uses the library's hash
 * (tdm__hash_mix) and the context's allocator.
 *
 * The pass is sequential: the numbers are the order of first occurrence, the
 * same bytes at every thread count. The table's hash of a row a few rows
 * ahead is computed first and its slot prefetched, so the misses of a table
 * larger than the caches overlap.
 */
#include <string.h>

#include "cpu.h"
#include "tandem/detail/hash_layout.h"
#include "tandem/detail/ops_keys.h"

/* A table slot; g == NUM_EMPTY marks a free one (any key bits may then be
 * there, so no key value is reserved). */
typedef struct num_slot {
  uint64_t key; /* canonical key, zero-extended from 32 bits */
  uint32_t g, cnt;
} num_slot;

#define NUM_EMPTY UINT32_MAX
/* Rows ahead whose slot is prefetched (a power of two). */
#define NUM_AHEAD 16u
/* First table size (slots, a power of two); it doubles at half full. */
#define NUM_MIN_LOG2 12u

typedef struct num_table {
  num_slot *s;
  unsigned log2;
  size_t cap; /* 1 << log2 */
  uint32_t *first;
  size_t first_cap; /* cap / 2 entries: the groups the table holds before it grows */
} num_table;

static void num_free(tdm_ctx *ctx, num_table *t) {
  if (t->s) tdm__ctx_free(ctx, t->s, t->cap * sizeof *t->s);
  if (t->first) tdm__ctx_free(ctx, t->first, t->first_cap * sizeof *t->first);
  t->s = NULL;
  t->first = NULL;
}

static size_t num_home(uint64_t mixed, unsigned log2) { return (size_t)(mixed >> (64u - log2)); }

static void num_clear(num_slot *s, size_t cap) {
  size_t i;
  for (i = 0; i < cap; i++) s[i].g = NUM_EMPTY;
}

/* The table with 2^log2 slots, empty, and room for cap / 2 first rows. */
static int num_alloc(tdm_ctx *ctx, num_table *t, unsigned log2) {
  t->log2 = log2;
  t->cap = (size_t)1 << log2;
  t->first_cap = t->cap / 2;
  t->s = (num_slot *)tdm__ctx_alloc(ctx, t->cap * sizeof *t->s);
  t->first = (uint32_t *)tdm__ctx_alloc(ctx, t->first_cap * sizeof *t->first);
  if (!t->s || !t->first) return 0;
  num_clear(t->s, t->cap);
  return 1;
}

/* Doubles the table, moving every slot (numbers and counts stay). */
static int num_grow(tdm_ctx *ctx, num_table *t, size_t G) {
  num_table b;
  size_t i, mask;
  memset(&b, 0, sizeof b);
  if (!num_alloc(ctx, &b, t->log2 + 1)) {
    num_free(ctx, &b);
    return 0;
  }
  mask = b.cap - 1;
  for (i = 0; i < t->cap; i++) {
    size_t j;
    if (t->s[i].g == NUM_EMPTY) continue;
    j = num_home(tdm__hash_mix(t->s[i].key), b.log2);
    while (b.s[j].g != NUM_EMPTY) j = (j + 1) & mask;
    b.s[j] = t->s[i];
  }
  memcpy(b.first, t->first, G * sizeof *t->first);
  num_free(ctx, t);
  *t = b;
  return 1;
}

static inline uint64_t num_key(const void *keys, size_t i, int wide, int numeric) {
  return wide ? tdm__ops_canon64(((const uint64_t *)keys)[i], numeric)
              : (uint64_t)tdm__ops_canon32(((const uint32_t *)keys)[i], numeric);
}

tdm_status tdm__cpu_ops_number(tdm_ctx *ctx, const char *fn, tdm_type key_type, const void *keys, size_t n,
                               int numeric, int want_gid, size_t max_groups, tdm__ops_numbering *out) {
  num_table t;
  uint64_t ahead[NUM_AHEAD];
  size_t i, G = 0, ks = tdm_type_size(key_type);
  int wide = ks == 8;
  uint32_t *gid = NULL;

  memset(out, 0, sizeof *out);
  memset(&t, 0, sizeof t);
  if (n >= (size_t)NUM_EMPTY) {
    out->too_many = 1; /* numbers and counts are 32-bit */
    return TDM_OK;
  }
  if (want_gid) {
    gid = (uint32_t *)tdm__ctx_alloc(ctx, n * sizeof *gid);
    if (!gid) goto oom;
  }
  if (!num_alloc(ctx, &t, NUM_MIN_LOG2)) goto oom;

  for (i = 0; i < NUM_AHEAD && i < n; i++) ahead[i] = tdm__hash_mix(num_key(keys, i, wide, numeric));
  for (i = 0; i < n; i++) {
    uint64_t k = num_key(keys, i, wide, numeric), mixed = ahead[i % NUM_AHEAD];
    size_t j = num_home(mixed, t.log2), mask = t.cap - 1;
    if (i + NUM_AHEAD < n) {
      uint64_t m2 = tdm__hash_mix(num_key(keys, i + NUM_AHEAD, wide, numeric));
      ahead[i % NUM_AHEAD] = m2;
      __builtin_prefetch(&t.s[num_home(m2, t.log2)], 1);
    }
    for (;;) {
      num_slot *s = &t.s[j];
      if (s->g == NUM_EMPTY) {
        if (G >= max_groups) {
          out->too_many = 1;
          goto give_up;
        }
        if (G >= t.first_cap) {
          if (!num_grow(ctx, &t, G)) goto oom;
          mask = t.cap - 1;
          j = num_home(mixed, t.log2);
          while (t.s[j].g != NUM_EMPTY) j = (j + 1) & mask;
          s = &t.s[j];
        }
        s->key = k;
        s->g = (uint32_t)G;
        s->cnt = 1;
        t.first[G] = (uint32_t)i;
        if (gid) gid[i] = (uint32_t)G;
        G++;
        break;
      }
      if (s->key == k) {
        s->cnt++;
        if (gid) gid[i] = s->g;
        break;
      }
      j = (j + 1) & mask;
    }
  }

  /* The groups' counts and canonical keys, by number. */
  out->count = (uint32_t *)tdm__ctx_alloc(ctx, (G ? G : 1) * sizeof *out->count);
  out->ukeys = tdm__ctx_alloc(ctx, (G ? G : 1) * ks);
  if (!out->count || !out->ukeys) goto oom;
  for (i = 0; i < t.cap; i++) {
    const num_slot *s = &t.s[i];
    if (s->g == NUM_EMPTY) continue;
    out->count[s->g] = s->cnt;
    if (wide) ((uint64_t *)out->ukeys)[s->g] = s->key;
    else ((uint32_t *)out->ukeys)[s->g] = (uint32_t)s->key;
  }
  if (t.s) tdm__ctx_free(ctx, t.s, t.cap * sizeof *t.s);
  out->G = G;
  out->n = n;
  out->ks = ks;
  out->first = t.first;
  out->first_cap = t.first_cap;
  out->gid = gid;
  return TDM_OK;

give_up:
  num_free(ctx, &t);
  if (gid) tdm__ctx_free(ctx, gid, n * sizeof *gid);
  return TDM_OK;
oom:
  num_free(ctx, &t);
  if (gid) tdm__ctx_free(ctx, gid, n * sizeof *gid);
  out->G = G;
  out->ks = ks;
  tdm__cpu_ops_numbering_free(ctx, out);
  (void)tdm__fail(TDM_ERR_OUT_OF_MEMORY, "%s: out of memory (the numbering table of %zu keys)", fn, n);
  return TDM_ERR_OUT_OF_MEMORY;
}

void tdm__cpu_ops_numbering_free(tdm_ctx *ctx, tdm__ops_numbering *nb) {
  size_t g = nb->G ? nb->G : 1;
  if (nb->count) tdm__ctx_free(ctx, nb->count, g * sizeof *nb->count);
  if (nb->ukeys) tdm__ctx_free(ctx, nb->ukeys, g * nb->ks);
  if (nb->first) tdm__ctx_free(ctx, nb->first, nb->first_cap * sizeof *nb->first);
  if (nb->gid) tdm__ctx_free(ctx, nb->gid, nb->n * sizeof *nb->gid);
  memset(nb, 0, sizeof *nb);
}
