/* faulty.c: a small map (a sorted array) with one of several faults chosen
 * at compile time, to check that tandem-judge reports a candidate that
 * misbehaves and survives it:
 *   FAULT_SEGV     erase of an absent key follows a NULL entry pointer
 *   FAULT_HANG     find of a key above every stored key never returns
 *                  (a binary search that stops moving)
 *   FAULT_LEAK     destroy frees the map but not its array
 *   FAULT_NO_FIND  judge_map_find is not exported (a required symbol)
 *   FAULT_CTOR     a library constructor aborts, as soon as it is loaded
 *   FAULT_BULK     exports judge_map_find_bulk, which gets the third value of
 *                  a batch wrong
 * Without a FAULT_ macro it is a correct map.
 */
#include <stdlib.h>
#include <string.h>

#include <tandem/judge.h>

#ifdef FAULT_CTOR
__attribute__((constructor)) static void broken_setup(void) { abort(); }
#endif

typedef struct entry {
  uint64_t key, value;
} entry;

typedef struct smap {
  entry *e;
  size_t n, cap;
} smap;

void *judge_map_create(void) { return calloc(1, sizeof(smap)); }

void judge_map_destroy(void *m) {
  smap *s = m;
#ifndef FAULT_LEAK
  free(s->e);
#endif
  free(s);
}

/* First index with key >= k. */
static size_t lower(const smap *s, uint64_t k) {
  size_t lo = 0, hi = s->n;
#ifdef FAULT_HANG
  /* lo = mid instead of mid + 1: once hi == lo + 1 it stops moving. */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->e[mid].key < k) lo = mid;
    else hi = mid;
  }
#else
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->e[mid].key < k) lo = mid + 1;
    else hi = mid;
  }
#endif
  return lo;
}

static entry *lookup(smap *s, uint64_t k) {
  size_t i = lower(s, k);
  return i < s->n && s->e[i].key == k ? &s->e[i] : NULL;
}

#ifndef FAULT_NO_FIND
int judge_map_find(void *m, uint64_t key, uint64_t *value) {
  entry *e = lookup(m, key);
  if (!e) return 0;
  *value = e->value;
  return 1;
}
#endif

#ifdef FAULT_BULK
void judge_map_find_bulk(void *m, const uint64_t *keys, uint64_t *values_out, uint8_t *found_out, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) found_out[i] = (uint8_t)judge_map_find(m, keys[i], &values_out[i]);
  if (n > 2) values_out[2]++; /* whether or not it was found */
}
#endif

int judge_map_insert(void *m, uint64_t key, uint64_t value) {
  smap *s = m;
  size_t i = lower(s, key);
  if (i < s->n && s->e[i].key == key) {
    s->e[i].value = value;
    return 0;
  }
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 4;
    entry *e = realloc(s->e, cap * sizeof *e);
    if (!e) abort();
    s->e = e;
    s->cap = cap;
  }
  memmove(s->e + i + 1, s->e + i, (s->n - i) * sizeof *s->e);
  s->e[i].key = key;
  s->e[i].value = value;
  s->n++;
  return 1;
}

int judge_map_erase(void *m, uint64_t key) {
  smap *s = m;
  entry *e = lookup(s, key);
#ifdef FAULT_SEGV
  /* The missing NULL check: an absent key dereferences NULL. */
  volatile uint64_t k = e->key;
  (void)k;
#endif
  if (!e) return 0;
  memmove(e, e + 1, (size_t)(s->e + s->n - (e + 1)) * sizeof *s->e);
  s->n--;
  return 1;
}

size_t judge_map_size(void *m) { return ((smap *)m)->n; }
