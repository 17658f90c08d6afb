/* bigbugs.c: an open-addressing hash map (linear probing, tombstones, power
 * of two capacity, grown at 3/4 load) and an insertion sort, with faults that
 * only large inputs show, chosen at compile time:
 *   BUG_PAST_3000  the rehash into 8192 slots or more (past 3,072 keys) skips
 *                  the first occupied slot: one key is lost
 *   BUG_AT_20000   the insert that brings the map to exactly 20,000 keys
 *                  stores its value plus one
 *   BUG_HANG_100   with more than 100 keys, a find of an absent key never
 *                  stops probing (the empty-slot test is skipped)
 * Without one it is a correct map. The insertion sort (judge_sort_*) is
 * correct and quadratic: too slow for 10^6 elements.
 */
#include <stdlib.h>

#include <tandem/judge.h>

typedef struct slot {
  uint64_t key, value;
  uint8_t state; /* 0 empty, 1 used, 2 deleted */
} slot;

typedef struct hmap {
  slot *s;
  size_t cap, n, used; /* used: n plus tombstones */
} hmap;

static size_t home(uint64_t k, size_t cap) { return (size_t)((k * 0xd6e8feb86659fd93ull) >> 17) & (cap - 1); }

void *judge_map_create(void) {
  hmap *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  m->cap = 16;
  m->s = calloc(m->cap, sizeof *m->s);
  if (!m->s) {
    free(m);
    return NULL;
  }
  return m;
}

void judge_map_destroy(void *p) {
  hmap *m = p;
  free(m->s);
  free(m);
}

static void grow(hmap *m) {
  size_t cap = m->n * 2 >= m->cap ? 2 * m->cap : m->cap, i, skipped = 0;
  slot *s = calloc(cap, sizeof *s);
  if (!s) abort();
  for (i = 0; i < m->cap; i++) {
    size_t h;
    if (m->s[i].state != 1) continue;
#ifdef BUG_PAST_3000
    if (cap >= 8192 && !skipped) {
      skipped = 1;
      m->n--;
      continue;
    }
#endif
    for (h = home(m->s[i].key, cap); s[h].state; h = (h + 1) & (cap - 1)) {
    }
    s[h] = m->s[i];
  }
  (void)skipped;
  free(m->s);
  m->s = s;
  m->cap = cap;
  m->used = m->n;
}

static slot *lookup(const hmap *m, uint64_t k, int for_find) {
  size_t h = home(k, m->cap), probes;
  for (probes = 0;; probes++) {
    const slot *s = &m->s[h];
#ifdef BUG_HANG_100
    if (s->state == 0 && (m->n <= 100 || !for_find)) return NULL;
#else
    (void)for_find;
    if (s->state == 0 || probes == m->cap) return NULL;
#endif
    if (s->state == 1 && s->key == k) return (slot *)s;
    h = (h + 1) & (m->cap - 1);
  }
}

int judge_map_find(void *p, uint64_t key, uint64_t *value) {
  slot *s = lookup(p, key, 1);
  if (!s) return 0;
  *value = s->value;
  return 1;
}

int judge_map_insert(void *p, uint64_t key, uint64_t value) {
  hmap *m = p;
  slot *s = lookup(m, key, 0);
  size_t h;
  if (s) {
    s->value = value;
    return 0;
  }
  if ((m->used + 1) * 4 > m->cap * 3) grow(m);
  for (h = home(key, m->cap); m->s[h].state == 1; h = (h + 1) & (m->cap - 1)) {
  }
  if (m->s[h].state == 0) m->used++;
  m->s[h].key = key;
  m->s[h].value = value;
  m->s[h].state = 1;
  m->n++;
#ifdef BUG_AT_20000
  if (m->n == 20000) m->s[h].value++;
#endif
  return 1;
}

int judge_map_erase(void *p, uint64_t key) {
  hmap *m = p;
  slot *s = lookup(m, key, 0);
  if (!s) return 0;
  s->state = 2;
  m->n--;
  return 1;
}

size_t judge_map_size(void *p) { return ((hmap *)p)->n; }

#define INSERTION_SORT(T, a, n)                \
  do {                                         \
    size_t i_, j_;                             \
    for (i_ = 1; i_ < (n); i_++) {             \
      T x_ = (a)[i_];                          \
      for (j_ = i_; j_ > 0 && (a)[j_ - 1] > x_; j_--) (a)[j_] = (a)[j_ - 1]; \
      (a)[j_] = x_;                            \
    }                                          \
  } while (0)

void judge_sort_u32(uint32_t *a, size_t n) { INSERTION_SORT(uint32_t, a, n); }
void judge_sort_u64(uint64_t *a, size_t n) { INSERTION_SORT(uint64_t, a, n); }
