/* gen.c: random operation sequences.
 *
 * The key distributions are those of tandem's own property tests
 * (tests/prop.c): uniform, few distinct, all equal, sorted, reverse, organ
 * pipe, zipf-like and boundary values, plus keys that collide in their low
 * bits (the classic weak spot of a hash map). A map sequence has three
 * phases: growth (mostly inserts, in the distribution's order, so sorted and
 * reverse give ascending and descending runs), churn, and a drain that
 * erases every key down to an empty map in ascending, descending or random
 * order, then a few operations on the empty map. Sort sequences use the
 * property tests' interesting sizes (0, 1, 2, 2^k - 1, 2^k, 2^k + 1, random).
 */
#include <stdlib.h>
#include <string.h>

#include "jdg.h"

enum { D_UNIFORM, D_FEW, D_EQUAL, D_SORTED, D_REVERSE, D_ORGAN, D_ZIPF, D_BOUNDARY, D_COLLIDE, D_COUNT };
static const char *dist_names[D_COUNT] = {"uniform", "few_distinct", "all_equal", "sorted", "reverse",
                                          "organ_pipe", "zipf", "boundary", "colliding"};

static const uint64_t boundary[] = {0, 1, 2, ~0ull, ~0ull - 1, 1ull << 63, (1ull << 63) - 1, 0xffffffffull,
                                    0x100000000ull};
#define N_BOUNDARY (sizeof boundary / sizeof boundary[0])

/* A random key: full width half the time, else small (small keys collide in
 * ordered structures' nodes and read well in a printed program). */
static uint64_t random_key(jdg_rng *r) {
  switch (jdg_below(r, 4)) {
  case 0: return jdg_below(r, 64);
  case 1: return jdg_below(r, 1u << 16);
  default: return jdg_next(r);
  }
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Zipf-like rank: k with probability ~ 1/(k+1). */
static uint64_t zipf_rank(jdg_rng *r) {
  double u = ((double)(jdg_next(r) >> 11) + 1.0) / 9007199254740993.0;
  return (uint64_t)(1.0 / u) - 1;
}

/* Fills n keys (each & mask) from distribution dist. */
static void gen_keys(jdg_rng *r, uint64_t *out, size_t n, int dist, uint64_t mask) {
  size_t i;
  uint64_t pool[16];
  for (i = 0; i < 16; i++) pool[i] = random_key(r) & mask;
  switch (dist) {
  case D_FEW:
    for (i = 0; i < n; i++) out[i] = pool[jdg_below(r, 5)];
    return;
  case D_EQUAL:
    for (i = 0; i < n; i++) out[i] = pool[0];
    return;
  case D_ZIPF:
    for (i = 0; i < n; i++) {
      uint64_t k = zipf_rank(r);
      out[i] = k < 16 ? pool[k] : jdg_next(r) & mask;
    }
    return;
  case D_BOUNDARY:
    for (i = 0; i < n; i++) out[i] = (jdg_below(r, 4) ? boundary[jdg_below(r, N_BOUNDARY)] : jdg_next(r)) & mask;
    return;
  case D_COLLIDE: {
    /* Equal low bits, different high bits. */
    unsigned shift = (unsigned)(8 + 8 * jdg_below(r, 4));
    if (mask >> 32 == 0 && shift >= 32) shift = 16;
    for (i = 0; i < n; i++) out[i] = (pool[0] & ((1ull << shift) - 1)) | ((uint64_t)jdg_below(r, 64) << shift);
    for (i = 0; i < n; i++) out[i] &= mask;
    return;
  }
  case D_SORTED:
  case D_REVERSE:
  case D_ORGAN:
    for (i = 0; i < n; i++) out[i] = (jdg_below(r, 2) ? jdg_below(r, 4 * n + 4) : jdg_next(r)) & mask;
    qsort(out, n, sizeof *out, cmp_u64);
    if (dist == D_REVERSE) {
      for (i = 0; i < n / 2; i++) {
        uint64_t t = out[i];
        out[i] = out[n - 1 - i];
        out[n - 1 - i] = t;
      }
    } else if (dist == D_ORGAN) {
      /* Ascending then descending: the second half reversed. */
      size_t h = n / 2;
      for (i = 0; i < (n - h) / 2; i++) {
        uint64_t t = out[h + i];
        out[h + i] = out[n - 1 - i];
        out[n - 1 - i] = t;
      }
    }
    return;
  default:
    for (i = 0; i < n; i++) out[i] = random_key(r) & mask;
    return;
  }
}

/* ---- map sequences ----------------------------------------------------------- */

typedef struct builder {
  jdg_seq *s;
  size_t cap;
  int oom;
} builder;

static jdg_op *push(builder *b, jdg_opcode code, uint64_t a, uint64_t v) {
  jdg_op *op;
  if (b->oom || b->s->n == b->cap) return NULL;
  op = &b->s->ops[b->s->n++];
  memset(op, 0, sizeof *op);
  op->code = code;
  op->a = a;
  op->b = v;
  return op;
}

typedef struct keyset {
  uint64_t *k;
  size_t n;
} keyset;

static long ks_find(const keyset *ks, uint64_t k) {
  size_t i;
  for (i = 0; i < ks->n; i++)
    if (ks->k[i] == k) return (long)i;
  return -1;
}

static void ks_add(keyset *ks, uint64_t k) {
  if (ks_find(ks, k) < 0) ks->k[ks->n++] = k;
}

static void ks_del(keyset *ks, uint64_t k) {
  long i = ks_find(ks, k);
  if (i >= 0) ks->k[i] = ks->k[--ks->n];
}

typedef struct mapgen {
  jdg_rng *r;
  const jdg_cand *c;
  int dist;
  uint64_t *pool;
  size_t npool, next; /* next: the insertion cursor through the pool */
  keyset live;
} mapgen;

static uint64_t pick_key(mapgen *g) {
  uint64_t roll = jdg_below(g->r, 100);
  if (roll < 10) return random_key(g->r);
  if (roll < 15) return boundary[jdg_below(g->r, N_BOUNDARY)];
  if (roll < 25 && g->live.n) {
    /* A neighbour of a stored key: the edges of rank and range queries. */
    uint64_t k = g->live.k[jdg_below(g->r, g->live.n)];
    return jdg_below(g->r, 2) ? k + 1 : k - 1;
  }
  if (g->dist == D_ZIPF) {
    uint64_t k = zipf_rank(g->r);
    return g->pool[k < g->npool ? k : jdg_below(g->r, g->npool)];
  }
  return g->pool[jdg_below(g->r, g->npool)];
}

static uint64_t pick_value(jdg_rng *r) { return jdg_below(r, 8) ? jdg_below(r, 1000) : jdg_next(r); }

/* One operation other than an insert/erase of a chosen key. */
static void query_op(builder *b, mapgen *g) {
  uint64_t roll = jdg_below(g->r, 100);
  const jdg_cand *c = g->c;
  if (roll < 45) {
    push(b, JDG_OP_FIND, pick_key(g), 0);
  } else if (roll < 60) {
    push(b, JDG_OP_SIZE, 0, 0);
  } else if (roll < 75 && c->rank) {
    push(b, JDG_OP_RANK, pick_key(g), 0);
  } else if (roll < 90 && c->range_count) {
    uint64_t lo = pick_key(g), hi = pick_key(g), t;
    if (jdg_below(g->r, 5) && lo > hi) {
      t = lo;
      lo = hi;
      hi = t;
    }
    if (jdg_below(g->r, 20) == 0) {
      lo = 0;
      hi = ~0ull;
    }
    push(b, JDG_OP_RANGE_COUNT, lo, hi);
  } else if (c->find_bulk) {
    jdg_op *op = push(b, JDG_OP_FIND_BULK, 0, 0);
    size_t i, n = 1 + jdg_below(g->r, 8);
    if (!op) return;
    op->arr = malloc(n * sizeof *op->arr);
    if (!op->arr) {
      b->oom = 1;
      return;
    }
    op->n = n;
    for (i = 0; i < n; i++) op->arr[i] = pick_key(g);
  } else {
    push(b, JDG_OP_FIND, pick_key(g), 0);
  }
}

static void insert_op(builder *b, mapgen *g) {
  uint64_t k;
  /* Mostly the next key in the distribution's order: runs stay runs. */
  if (jdg_below(g->r, 5)) k = g->pool[g->next++ % g->npool];
  else k = pick_key(g);
  if (push(b, JDG_OP_INSERT, k, pick_value(g->r))) ks_add(&g->live, k);
}

static void erase_op(builder *b, mapgen *g, uint64_t k) {
  if (push(b, JDG_OP_ERASE, k, 0)) ks_del(&g->live, k);
}

static int gen_map(jdg_rng *r, const jdg_cand *c, size_t len, jdg_seq *s, const char **shape) {
  static char name[96];
  static const char *drains[3] = {"random", "ascending", "descending"};
  static const size_t pools[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  builder b = {s, len, 0};
  mapgen g;
  size_t grow, churn, i;
  int drain;

  memset(&g, 0, sizeof g);
  g.r = r;
  g.c = c;
  g.dist = (int)jdg_below(r, D_COUNT);
  g.npool = pools[jdg_below(r, sizeof pools / sizeof pools[0])];
  if (g.dist == D_EQUAL) g.npool = 1;
  if (g.dist == D_FEW) g.npool = 5;
  g.pool = malloc(g.npool * sizeof *g.pool);
  /* Every key inserted or erased is a pool key or a picked key: at most len. */
  g.live.k = malloc((len + 1) * sizeof *g.live.k);
  s->ops = calloc(len ? len : 1, sizeof *s->ops);
  s->n = 0;
  if (!g.pool || !g.live.k || !s->ops) {
    free(g.pool);
    free(g.live.k);
    free(s->ops);
    s->ops = NULL;
    return -1;
  }
  gen_keys(r, g.pool, g.npool, g.dist, ~0ull);
  drain = (int)jdg_below(r, 3);
  snprintf(name, sizeof name, "%s keys, pool %zu, drain %s", dist_names[g.dist], g.npool, drains[drain]);
  *shape = name;

  grow = len / 2;
  churn = len / 4;
  for (i = 0; i < grow && s->n < len; i++) {
    uint64_t roll = jdg_below(r, 100);
    if (roll < 65) insert_op(&b, &g);
    else if (roll < 75 && g.live.n) erase_op(&b, &g, g.live.k[jdg_below(r, g.live.n)]);
    else query_op(&b, &g);
  }
  for (i = 0; i < churn && s->n < len; i++) {
    uint64_t roll = jdg_below(r, 100);
    if (roll < 35) insert_op(&b, &g);
    else if (roll < 65) erase_op(&b, &g, jdg_below(r, 4) && g.live.n ? g.live.k[jdg_below(r, g.live.n)] : pick_key(&g));
    else query_op(&b, &g);
  }
  /* Drain down to empty. */
  if (drain) {
    qsort(g.live.k, g.live.n, sizeof *g.live.k, cmp_u64);
    if (drain == 2)
      for (i = 0; i < g.live.n / 2; i++) {
        uint64_t t = g.live.k[i];
        g.live.k[i] = g.live.k[g.live.n - 1 - i];
        g.live.k[g.live.n - 1 - i] = t;
      }
  }
  while (g.live.n && s->n < len) {
    if (jdg_below(r, 4) == 0) {
      query_op(&b, &g);
      continue;
    }
    /* Ordered drains take the front; random ones any key. */
    if (drain) {
      uint64_t k = g.live.k[0];
      memmove(g.live.k, g.live.k + 1, (g.live.n - 1) * sizeof *g.live.k);
      g.live.n--;
      push(&b, JDG_OP_ERASE, k, 0);
    } else {
      erase_op(&b, &g, g.live.k[jdg_below(r, g.live.n)]);
    }
  }
  while (s->n < len) {
    if (jdg_below(r, 3) == 0) insert_op(&b, &g);
    else query_op(&b, &g);
  }
  free(g.pool);
  free(g.live.k);
  if (b.oom) {
    jdg_seq_free(s);
    return -1;
  }
  return 0;
}

/* ---- sort sequences ------------------------------------------------------------ */

static size_t interesting_size(jdg_rng *r) {
  switch (jdg_below(r, 4)) {
  case 0: return jdg_below(r, 3);
  case 1: {
    size_t p = (size_t)1 << (1 + jdg_below(r, 12));
    return p - 1 + jdg_below(r, 3);
  }
  case 2: return jdg_below(r, 64);
  default: return jdg_below(r, 3000);
  }
}

static int gen_sort(jdg_rng *r, const jdg_cand *c, size_t len, jdg_seq *s, const char **shape) {
  static char name[64];
  size_t i;
  int dist = (int)jdg_below(r, D_COUNT);
  if (len > 3) len = 1 + jdg_below(r, 3);
  s->ops = calloc(len ? len : 1, sizeof *s->ops);
  s->n = 0;
  if (!s->ops) return -1;
  snprintf(name, sizeof name, "%s keys", dist_names[dist]);
  *shape = name;
  for (i = 0; i < len; i++) {
    jdg_op *op = &s->ops[s->n];
    uint64_t t = jdg_below(r, c->sort_pairs_u64 ? 3 : 2);
    op->code = t == 0 ? JDG_OP_SORT_U32 : t == 1 ? JDG_OP_SORT_U64 : JDG_OP_SORT_PAIRS;
    op->n = interesting_size(r);
    if (op->n) {
      op->arr = malloc(op->n * sizeof *op->arr);
      if (!op->arr) {
        jdg_seq_free(s);
        return -1;
      }
      /* Pairs: few distinct keys half the time, so stability is tested. */
      gen_keys(r, op->arr, op->n, op->code == JDG_OP_SORT_PAIRS && jdg_below(r, 2) ? D_FEW : dist,
                   op->code == JDG_OP_SORT_U32 ? 0xffffffffull : ~0ull);
    }
    s->n++;
  }
  return 0;
}

int jdg_gen_seq(jdg_rng *r, const jdg_cand *c, size_t max_ops, jdg_seq *out, const char **shape) {
  size_t len = 1 + jdg_below(r, max_ops ? max_ops : 1);
  if (c->kind == JDG_SORT) return gen_sort(r, c, len, out, shape);
  return gen_map(r, c, len, out, shape);
}
