/* tier.c: the large sequences, run after the short ones.
 *
 * Short sequences keep maps within pools of at most 256 keys, where a B-tree
 * of order 32 never gets a third level and a hash table hardly resizes. The
 * tiers grow maps to 10^5 live keys (times --scale) and sort up to 10^6
 * elements:
 *  - map tiers: bulk growth along a key formula (scattered by a multiplicative
 *    hash, ascending, descending), churn at size (erase every other old key,
 *    insert as many new ones, in blocks), drain to empty; a checkpoint after
 *    growth doubles the size, after churn and during the drain: size, every
 *    live key found, absent keys not found, and for ordered maps rank and
 *    range_count sweeps over 256 evenly spaced keys.
 *  - sort tiers: one per adversarial shape (random, sorted and reversed with
 *    noise, organ pipe, sawtooth, all equal, few distinct, the
 *    median-of-three killer, many runs) at 1,025, 10^4, 10^5 and 10^6
 *    elements, rotating through the 32-bit, 64-bit and pairs sorts.
 * Keys follow formulas, so runs.c finds the runs again and print.c prints
 * them as loops.
 *
 * Before the map tiers come two mid-size churn stages (jdg_churn_seq):
 * growth to a few thousand keys, rounds that erase and insert a quarter of
 * them at random places, checkpoints, a drain. The same workload at a few
 * hundred keys is what main.c retries after a failure in a large sequence,
 * for a small failing sequence to shrink.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jdg.h"

#define MAP_TIERS 3
#define BASE_KEYS 100000
#define BASE_SORT 1000000
#define SWEEP 256
#define CHURN_BLOCK 1024
/* The mid-size stages: churn at 2,000 keys (ascending growth) and 4,000
 * (random), a few levels of a B-tree with nodes of 255 keys, or 2 to 4
 * resizes of a hash table, in well under a second each. */
#define MID_STAGES 2
#define MID_KEYS 4000

static const char *shape_names[JDG_SHAPE_COUNT] = {"list", "random", "sorted with noise", "reversed with noise",
                                                   "organ pipe", "sawtooth", "all equal", "few distinct",
                                                   "median-of-three killer", "many runs"};

const char *jdg_shape_name(jdg_shape shape) { return shape_names[shape]; }

uint64_t jdg_shape_value(jdg_shape shape, uint64_t p, uint64_t n, uint64_t i) {
  uint64_t k = n / 2;
  switch (shape) {
  case JDG_SHAPE_RANDOM: return (i + p) * JDG_GOLD;
  case JDG_SHAPE_SORTED_NOISE: return i % 64 ? i : (i + p) * JDG_GOLD;
  case JDG_SHAPE_REVERSED_NOISE: return i % 64 ? n - i : (i + p) * JDG_GOLD;
  case JDG_SHAPE_ORGAN_PIPE: return i < n / 2 ? i : n - i;
  case JDG_SHAPE_SAWTOOTH: return i % p;
  case JDG_SHAPE_ALL_EQUAL: return p;
  case JDG_SHAPE_FEW_DISTINCT: return ((i + p) * JDG_GOLD) >> 61;
  case JDG_SHAPE_MEDIAN3_KILLER: return i < k ? (i % 2 ? k + i : i + 1) : 2 * (i + 1 - k);
  case JDG_SHAPE_MANY_RUNS: return (((i / p) * JDG_GOLD) >> 8) + i % p;
  default: return 0;
  }
}

void jdg_shape_expr(FILE *f, jdg_shape shape, uint64_t p) {
  switch (shape) {
  case JDG_SHAPE_RANDOM: fprintf(f, "(i + %lluu) * 0x9e3779b97f4a7c15u", (unsigned long long)p); break;
  case JDG_SHAPE_SORTED_NOISE:
    fprintf(f, "i %% 64 ? i : (i + %lluu) * 0x9e3779b97f4a7c15u", (unsigned long long)p);
    break;
  case JDG_SHAPE_REVERSED_NOISE:
    fprintf(f, "i %% 64 ? n - i : (i + %lluu) * 0x9e3779b97f4a7c15u", (unsigned long long)p);
    break;
  case JDG_SHAPE_ORGAN_PIPE: fputs("i < n / 2 ? i : n - i", f); break;
  case JDG_SHAPE_SAWTOOTH: fprintf(f, "i %% %llu", (unsigned long long)p); break;
  case JDG_SHAPE_ALL_EQUAL: fprintf(f, "%lluu", (unsigned long long)p); break;
  case JDG_SHAPE_FEW_DISTINCT: fprintf(f, "((i + %lluu) * 0x9e3779b97f4a7c15u) >> 61", (unsigned long long)p); break;
  case JDG_SHAPE_MEDIAN3_KILLER: fputs("i < n / 2 ? (i % 2 ? n / 2 + i : i + 1) : 2 * (i + 1 - n / 2)", f); break;
  case JDG_SHAPE_MANY_RUNS:
    fprintf(f, "(((i / %llu) * 0x9e3779b97f4a7c15u) >> 8) + i %% %llu", (unsigned long long)p,
            (unsigned long long)p);
    break;
  default: fputs("0", f); break;
  }
}

int jdg_shape_fill(jdg_op *op) {
  uint64_t i, mask = op->code == JDG_OP_SORT_U32 ? 0xffffffffull : ~0ull;
  free(op->arr);
  op->arr = NULL;
  if (!op->n) return 0;
  op->arr = malloc(op->n * sizeof *op->arr);
  if (!op->arr) return -1;
  for (i = 0; i < op->n; i++) op->arr[i] = jdg_shape_value(op->shape, op->p, op->n, i) & mask;
  return 0;
}

/* ---- building ------------------------------------------------------------------ */

typedef struct tb {
  jdg_seq *s;
  size_t cap;
  int oom;
  uint64_t a, d, mul, vx; /* key(j) = (a + d j) mul, value key ^ vx */
  int ordered;
} tb;

static jdg_op *put(tb *b, jdg_opcode code, uint64_t x, uint64_t y) {
  jdg_op *op;
  if (b->oom) return NULL;
  if (b->s->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 1024;
    jdg_op *ops = realloc(b->s->ops, cap * sizeof *ops);
    if (!ops) {
      b->oom = 1;
      return NULL;
    }
    b->s->ops = ops;
    b->cap = cap;
  }
  op = &b->s->ops[b->s->n++];
  memset(op, 0, sizeof *op);
  op->code = code;
  op->a = x;
  op->b = y;
  return op;
}

static uint64_t key(const tb *b, uint64_t j) { return (b->a + b->d * j) * b->mul; }

/* ops on key(first + step * t), t < count (step may be "negative"). */
static void each(tb *b, jdg_opcode code, uint64_t first, uint64_t step, uint64_t count) {
  uint64_t t;
  for (t = 0; t < count; t++) {
    uint64_t k = key(b, first + step * t);
    put(b, code, k, code == JDG_OP_INSERT ? k ^ b->vx : 0);
  }
}

/* Live keys: j in [lo, hi) with j % stride == phase (stride 1 or 2); also
 * [lo2, hi2). Absent: the other residues and a few past the end. */
static void checkpoint(tb *b, uint64_t lo, uint64_t hi, uint64_t stride, uint64_t lo2, uint64_t hi2) {
  uint64_t live = (hi - lo + stride - 1) / stride, t, step;
  put(b, JDG_OP_SIZE, 0, 0);
  each(b, JDG_OP_FIND, lo, stride, live);
  if (stride == 2) each(b, JDG_OP_FIND, lo + 1, 2, (hi - lo) / 2);
  each(b, JDG_OP_FIND, lo2, 1, hi2 - lo2);
  each(b, JDG_OP_FIND, hi2 > hi ? hi2 : hi, 1, 16);
  if (!b->ordered) return;
  step = (hi - lo) / SWEEP ? (hi - lo) / SWEEP : 1;
  each(b, JDG_OP_RANK, lo, step, SWEEP);
  for (t = 0; t < SWEEP; t++) put(b, JDG_OP_RANGE_COUNT, key(b, lo + step * t), key(b, lo + step * t + step - 1));
  put(b, JDG_OP_RANGE_COUNT, 0, ~0ull);
}

static int map_tier(const jdg_cand *c, jdg_rng *r, size_t k, double scale, jdg_seq *s, char *shape,
                    size_t shape_len) {
  tb b;
  uint64_t n = (uint64_t)(BASE_KEYS * scale / (k ? 4 : 1)), half, j, next, blk;
  static const char *names[MAP_TIERS] = {"scattered", "ascending", "descending"};
  memset(&b, 0, sizeof b);
  memset(s, 0, sizeof *s);
  b.s = s;
  b.ordered = c->kind == JDG_ORDERED && c->rank && c->range_count;
  if (n < 64) n = 64;
  n &= ~1ull;
  half = n / 2;
  b.a = jdg_below(r, 1000);
  b.vx = jdg_below(r, 1 << 20);
  b.mul = k == 0 ? JDG_GOLD : 1;
  b.d = k == 2 ? ~0ull - jdg_below(r, 3) : 1 + jdg_below(r, 3); /* descending: d = -1, -2, -3 */
  if (k == 2) b.a = ~0ull - jdg_below(r, 1000);
  snprintf(shape, shape_len, "map tier: %s keys, growth to %llu, churn at size, drain to empty", names[k],
           (unsigned long long)n);
  /* Growth, with a checkpoint each time the size doubles past 1000. */
  for (j = 0, next = 1000; j < n;) {
    uint64_t to = next < n ? next : n;
    each(&b, JDG_OP_INSERT, j, 1, to - j);
    j = to;
    checkpoint(&b, 0, j, 1, 0, 0);
    next *= 2;
  }
  /* Churn at size: erase key(2t), insert key(n + t), in blocks. */
  for (blk = 0; blk < half; blk += CHURN_BLOCK) {
    uint64_t m = half - blk < CHURN_BLOCK ? half - blk : CHURN_BLOCK;
    each(&b, JDG_OP_ERASE, 2 * blk, 2, m);
    each(&b, JDG_OP_INSERT, n + blk, 1, m);
  }
  checkpoint(&b, 1, n, 2, n, n + half);
  /* Drain: the old odd keys in two halves, then the new keys from the top. */
  each(&b, JDG_OP_ERASE, 1, 2, half / 2);
  checkpoint(&b, 1 + 2 * (half / 2), n, 2, n, n + half);
  each(&b, JDG_OP_ERASE, 1 + 2 * (half / 2), 2, half - half / 2);
  each(&b, JDG_OP_ERASE, n + half - 1, ~0ull, half);
  checkpoint(&b, 0, 0, 1, 0, 0);
  each(&b, JDG_OP_FIND, 0, 1, 16);
  /* Life after empty. */
  each(&b, JDG_OP_INSERT, 0, 1, 8);
  checkpoint(&b, 0, 8, 1, 0, 0);
  if (b.oom) {
    jdg_seq_free(s);
    return -1;
  }
  return 1;
}

static int sort_tier(const jdg_cand *c, jdg_rng *r, size_t k, double scale, jdg_seq *s, char *shape,
                     size_t shape_len) {
  jdg_shape sh = (jdg_shape)(JDG_SHAPE_RANDOM + k);
  uint64_t sizes[4] = {1025, 10000, 100000, (uint64_t)(BASE_SORT * scale)}, p;
  size_t j, kinds = c->sort_pairs_u64 ? 3 : 2;
  if (sizes[3] < 100000) sizes[3] = 100000;
  p = sh == JDG_SHAPE_SAWTOOTH || sh == JDG_SHAPE_MANY_RUNS ? 100 + jdg_below(r, 900) : jdg_below(r, 1 << 20);
  memset(s, 0, sizeof *s);
  s->ops = calloc(4, sizeof *s->ops);
  if (!s->ops) return -1;
  snprintf(shape, shape_len, "sort tier: %s, up to %llu elements", shape_names[sh], (unsigned long long)sizes[3]);
  for (j = 0; j < 4; j++) {
    jdg_op *op = &s->ops[s->n++];
    size_t t = (k + j) % kinds;
    op->code = t == 0 ? JDG_OP_SORT_U64 : t == 1 ? JDG_OP_SORT_U32 : JDG_OP_SORT_PAIRS;
    op->n = sizes[j];
    op->shape = sh;
    op->p = p;
    if (jdg_shape_fill(op) != 0) {
      jdg_seq_free(s);
      return -1;
    }
  }
  return 1;
}

int jdg_tier_seq(const jdg_cand *c, uint64_t seed, size_t k, double scale, jdg_seq *out, char *shape,
                 size_t shape_len) {
  jdg_rng r;
  if (scale <= 0) return 0;
  if (c->kind == JDG_SORT) {
    jdg_rng_init(&r, seed, 1000000 + k);
    if (k >= JDG_SHAPE_COUNT - 1) return 0;
    return sort_tier(c, &r, k, scale, out, shape, shape_len);
  }
  /* Maps: the mid-size churn stages first (cheap, and a failure there is
   * small already), then the large tiers. */
  if (k < MID_STAGES) {
    static const size_t mid_n[MID_STAGES] = {MID_KEYS / 2, MID_KEYS};
    return jdg_churn_seq(c, seed, k, mid_n[k], k == 0 ? 0 : 2, out, shape, shape_len) == 0 ? 1 : -1;
  }
  k -= MID_STAGES;
  jdg_rng_init(&r, seed, 1000000 + k);
  if (k >= MAP_TIERS) return 0;
  return map_tier(c, &r, k, scale, out, shape, shape_len);
}

/* ---- churn workloads ------------------------------------------------------------- */

/* Live keys as a set over [0, span): keys in a dense array with positions. */
typedef struct churn {
  tb b;
  jdg_rng r;
  uint64_t span, *live, *pos, nlive; /* pos[key]: index in live + 1, or 0 */
} churn;

static void ch_add(churn *h, uint64_t k) {
  h->pos[k] = ++h->nlive;
  h->live[h->nlive - 1] = k;
}

static void ch_del(churn *h, uint64_t k) {
  uint64_t i = h->pos[k] - 1, last = h->live[--h->nlive];
  h->live[i] = last;
  h->pos[last] = i + 1;
  h->pos[k] = 0;
}

/* Size, every live key found (ascending, so it prints as a loop when dense),
 * a few absent keys, and for ordered maps rank and range_count spot checks. */
static void ch_checkpoint(churn *h) {
  uint64_t k, t;
  put(&h->b, JDG_OP_SIZE, 0, 0);
  for (k = 0; k < h->span; k++)
    if (h->pos[k]) put(&h->b, JDG_OP_FIND, k, 0);
  for (t = 0; t < 8; t++) {
    k = jdg_below(&h->r, h->span);
    if (!h->pos[k]) put(&h->b, JDG_OP_FIND, k, 0);
  }
  if (!h->b.ordered) return;
  for (t = 0; t < 16; t++) {
    uint64_t lo = jdg_below(&h->r, h->span), hi = lo + jdg_below(&h->r, h->span / 4 + 1);
    put(&h->b, JDG_OP_RANK, lo, 0);
    put(&h->b, JDG_OP_RANGE_COUNT, lo, hi);
  }
}

/* Erases m live keys: at random, or (down) the largest first, as a queue
 * or a range delete does, which empties the last node from its end (the
 * last key of a node is an edge of its own). */
static void ch_erase_some(churn *h, uint64_t m, int down) {
  uint64_t t, k = 0;
  for (t = 0; t < m && h->nlive; t++) {
    if (!down) {
      k = h->live[jdg_below(&h->r, h->nlive)];
    } else {
      if (t == 0) k = h->span - 1;
      while (!h->pos[k]) k = k ? k - 1 : h->span - 1;
    }
    put(&h->b, JDG_OP_ERASE, k, 0);
    ch_del(h, k);
  }
}

static void ch_insert_some(churn *h, uint64_t m) {
  uint64_t t;
  for (t = 0; t < m && h->nlive < h->span; t++) {
    uint64_t k = jdg_below(&h->r, h->span);
    while (h->pos[k]) k = (k + 1) % h->span;
    put(&h->b, JDG_OP_INSERT, k, k ^ h->b.vx);
    ch_add(h, k);
  }
}

int jdg_churn_seq(const jdg_cand *c, uint64_t seed, uint64_t stream, size_t n, int order, jdg_seq *out,
                  char *shape, size_t shape_len) {
  static const char *orders[3] = {"ascending", "descending", "random"};
  churn h;
  uint64_t j, round, q;
  memset(&h, 0, sizeof h);
  memset(out, 0, sizeof *out);
  if (n < 4) n = 4;
  h.b.s = out;
  h.b.ordered = c->kind == JDG_ORDERED && c->rank && c->range_count;
  jdg_rng_init(&h.r, seed, 2000000 + stream);
  h.b.vx = jdg_below(&h.r, 1 << 20);
  /* Keys in [0, 4n): the growth takes the even ones, churn any free one, so
   * new keys land between old ones (in every node, not only the last). */
  h.span = 4 * (uint64_t)n;
  h.live = malloc(h.span * sizeof *h.live);
  h.pos = calloc(h.span, sizeof *h.pos);
  if (!h.live || !h.pos) {
    free(h.live);
    free(h.pos);
    return -1;
  }
  snprintf(shape, shape_len, "churn at %zu keys, growth in %s order", n, orders[order % 3]);
  for (j = 0; j < n; j++) {
    uint64_t k = order == 1 ? 2 * (n - 1 - j) : 2 * j;
    if (order == 2) { /* random: a random free even key */
      k = 2 * jdg_below(&h.r, n);
      while (h.pos[k]) k = (k + 2) % (2 * n);
    }
    put(&h.b, JDG_OP_INSERT, k, k ^ h.b.vx);
    ch_add(&h, k);
  }
  ch_checkpoint(&h);
  /* Heavy churn: a quarter of the keys out and new ones in, then the other
   * way round, so nodes fill and split, empty and borrow or merge. */
  q = n / 4 ? n / 4 : 1;
  for (round = 0; round < 4; round++) {
    if (round % 2 == 0) {
      ch_erase_some(&h, q, round == 2);
      ch_insert_some(&h, q);
    } else {
      ch_insert_some(&h, q);
      ch_erase_some(&h, q, round == 3);
    }
    ch_checkpoint(&h);
  }
  /* Drain to empty, a checkpoint halfway: at random, then from the top. */
  ch_erase_some(&h, h.nlive / 2, 0);
  ch_checkpoint(&h);
  ch_erase_some(&h, h.nlive, 1);
  ch_checkpoint(&h);
  free(h.live);
  free(h.pos);
  if (h.b.oom) {
    jdg_seq_free(out);
    return -1;
  }
  return 0;
}
