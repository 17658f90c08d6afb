/* qsort_map.c: a correct candidate written with the C library only, for
 * every kind: a sorted array whose inserts wait in a small buffer that qsort
 * sorts before it is merged in, the map's name kept with strdup, a one-time
 * lazily allocated table that is never freed (a cache, not a leak), and
 * sorts by qsort (pairs with the input position as tie-break, so stable).
 * tandem-judge must pass it with no leak reported. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tandem/judge.h>

typedef struct entry {
  uint64_t key, value;
} entry;

typedef struct qmap {
  char *name;
  entry *e, *pend;
  size_t n, cap, np;
} qmap;

#define PENDING 32

static char *cache; /* allocated by the first create, kept for the process */

static int cmp_entry(const void *x, const void *y) {
  const entry *a = x, *b = y;
  return (a->key > b->key) - (a->key < b->key);
}

static size_t lower(const qmap *m, uint64_t k) {
  size_t lo = 0, hi = m->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (m->e[mid].key < k) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Sorts the pending inserts (all new, distinct keys) with qsort and merges
 * them in from the back, in place. */
static void flush(qmap *m) {
  size_t i, j, k;
  if (!m->np) return;
  qsort(m->pend, m->np, sizeof *m->pend, cmp_entry);
  if (m->n + m->np > m->cap) {
    size_t cap = m->cap ? m->cap : 64;
    entry *e;
    while (cap < m->n + m->np) cap *= 2;
    e = realloc(m->e, cap * sizeof *e);
    if (!e) abort();
    m->e = e;
    m->cap = cap;
  }
  for (i = m->n, j = m->np, k = m->n + m->np; j > 0;) {
    if (i > 0 && m->e[i - 1].key > m->pend[j - 1].key) m->e[--k] = m->e[--i];
    else m->e[--k] = m->pend[--j];
  }
  m->n += m->np;
  m->np = 0;
}

void *judge_map_create(void) {
  qmap *m = calloc(1, sizeof *m);
  char buf[32];
  if (!m) return NULL;
  if (!cache) cache = calloc(1, 4096);
  snprintf(buf, sizeof buf, "qmap-%p", (void *)m);
  m->name = strdup(buf);
  m->pend = malloc(PENDING * sizeof *m->pend);
  if (!m->name || !m->pend) abort();
  return m;
}

void judge_map_destroy(void *p) {
  qmap *m = p;
  free(m->name);
  free(m->pend);
  free(m->e);
  free(m);
}

/* The pending buffer first, then the sorted array. */
static entry *lookup(qmap *m, uint64_t k, int *pending) {
  size_t i;
  for (i = 0; i < m->np; i++)
    if (m->pend[i].key == k) {
      *pending = 1;
      return &m->pend[i];
    }
  *pending = 0;
  i = lower(m, k);
  return i < m->n && m->e[i].key == k ? &m->e[i] : NULL;
}

int judge_map_insert(void *p, uint64_t key, uint64_t value) {
  qmap *m = p;
  int pend;
  entry *e = lookup(m, key, &pend);
  if (e) {
    e->value = value;
    return 0;
  }
  m->pend[m->np].key = key;
  m->pend[m->np++].value = value;
  if (m->np == PENDING) flush(m);
  return 1;
}

int judge_map_find(void *p, uint64_t key, uint64_t *value) {
  int pend;
  entry *e = lookup(p, key, &pend);
  if (!e) return 0;
  *value = e->value;
  return 1;
}

int judge_map_erase(void *p, uint64_t key) {
  qmap *m = p;
  int pend;
  entry *e = lookup(m, key, &pend);
  if (!e) return 0;
  if (pend) {
    *e = m->pend[--m->np];
    return 1;
  }
  memmove(e, e + 1, (size_t)(m->e + m->n - (e + 1)) * sizeof *e);
  m->n--;
  return 1;
}

size_t judge_map_size(void *p) { return ((qmap *)p)->n + ((qmap *)p)->np; }

uint64_t judge_map_rank(void *p, uint64_t key) {
  flush(p);
  return lower(p, key);
}

uint64_t judge_map_range_count(void *p, uint64_t lo, uint64_t hi) {
  qmap *m = p;
  size_t a, b;
  if (lo > hi) return 0;
  flush(m);
  a = lower(m, lo);
  b = hi == UINT64_MAX ? m->n : lower(m, hi + 1);
  return b - a;
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return (a > b) - (a < b);
}

static int cmp_u32(const void *x, const void *y) {
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  return (a > b) - (a < b);
}

void judge_sort_u64(uint64_t *a, size_t n) {
  if (n) qsort(a, n, sizeof *a, cmp_u64);
}

void judge_sort_u32(uint32_t *a, size_t n) {
  if (n) qsort(a, n, sizeof *a, cmp_u32);
}

/* (key, input position) pairs: qsort is not stable, the position makes it. */
static int cmp_pair(const void *x, const void *y) {
  const entry *a = x, *b = y;
  if (a->key != b->key) return (a->key > b->key) - (a->key < b->key);
  return (a->value > b->value) - (a->value < b->value);
}

void judge_sort_pairs_u64(uint64_t *keys, uint64_t *values, size_t n) {
  entry *e;
  uint64_t *v;
  size_t i;
  if (n < 2) return;
  e = malloc(n * sizeof *e);
  v = malloc(n * sizeof *v);
  if (!e || !v) abort();
  for (i = 0; i < n; i++) {
    e[i].key = keys[i];
    e[i].value = i;
    v[i] = values[i];
  }
  qsort(e, n, sizeof *e, cmp_pair);
  for (i = 0; i < n; i++) {
    keys[i] = e[i].key;
    values[i] = v[e[i].value];
  }
  free(e);
  free(v);
}
