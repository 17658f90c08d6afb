/* hashmap.c: an open-addressing hash map as a tandem-judge candidate (kind
 * "map").
 *
 * Linear probing over a power-of-two table with Fibonacci hashing. Each slot
 * has a state byte (empty, full, deleted) beside its key, so every uint64_t
 * is a valid key. Erase leaves a tombstone ("deleted"): a lookup probes past
 * it, so keys that were placed behind the erased one stay reachable. The
 * table doubles when full and deleted slots pass 3/4 of it (rehashing drops
 * the tombstones).
 *
 *   tandem-judge map ./libjudge_hashmap.so
 */
#include <stdlib.h>

#include <tandem/judge.h>

enum { EMPTY = 0, FULL = 1, DELETED = 2 };

typedef struct hmap {
  uint64_t *keys, *vals;
  uint8_t *state;
  unsigned bits; /* the table has 2^bits slots */
  size_t size;   /* full slots */
  size_t used;   /* full + deleted slots: what the probe chains cross */
} hmap;

static size_t home(const hmap *h, uint64_t key) {
  return (size_t)((key * 0x9e3779b97f4a7c15ull) >> (64 - h->bits));
}

static int alloc_table(hmap *h, unsigned bits) {
  size_t n = (size_t)1 << bits;
  h->keys = malloc(n * sizeof *h->keys);
  h->vals = malloc(n * sizeof *h->vals);
  h->state = calloc(n, 1);
  h->bits = bits;
  h->size = h->used = 0;
  if (h->keys && h->vals && h->state) return 1;
  free(h->keys);
  free(h->vals);
  free(h->state);
  return 0;
}

void *judge_map_create(void) {
  hmap *h = calloc(1, sizeof *h);
  if (h && !alloc_table(h, 3)) {
    free(h);
    h = NULL;
  }
  return h;
}

void judge_map_destroy(void *m) {
  hmap *h = m;
  if (!h) return;
  free(h->keys);
  free(h->vals);
  free(h->state);
  free(h);
}

/* The slot holding key, or -1. */
static long lookup(const hmap *h, uint64_t key) {
  size_t mask = ((size_t)1 << h->bits) - 1, i = home(h, key);
  while (h->state[i] != EMPTY) {
    if (h->state[i] == FULL && h->keys[i] == key) return (long)i;
    i = (i + 1) & mask;
  }
  return -1;
}

int judge_map_find(void *m, uint64_t key, uint64_t *value) {
  hmap *h = m;
  long i = lookup(h, key);
  if (i < 0) return 0;
  *value = h->vals[i];
  return 1;
}

void judge_map_find_bulk(void *m, const uint64_t *keys, uint64_t *values_out, uint8_t *found_out, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) found_out[i] = (uint8_t)judge_map_find(m, keys[i], &values_out[i]);
}

size_t judge_map_size(void *m) { return ((hmap *)m)->size; }

static void place(hmap *h, uint64_t key, uint64_t value) {
  size_t mask = ((size_t)1 << h->bits) - 1, i = home(h, key);
  while (h->state[i] == FULL) i = (i + 1) & mask;
  if (h->state[i] == EMPTY) h->used++;
  h->state[i] = FULL;
  h->keys[i] = key;
  h->vals[i] = value;
  h->size++;
}

static void grow(hmap *h) {
  hmap old = *h;
  size_t i;
  /* Double only when the keys (not the tombstones) need it. */
  unsigned bits = (old.size + 1) * 2 > ((size_t)1 << old.bits) ? old.bits + 1 : old.bits;
  if (!alloc_table(h, bits)) abort();
  for (i = 0; i < (size_t)1 << old.bits; i++)
    if (old.state[i] == FULL) place(h, old.keys[i], old.vals[i]);
  free(old.keys);
  free(old.vals);
  free(old.state);
}

int judge_map_insert(void *m, uint64_t key, uint64_t value) {
  hmap *h = m;
  long i = lookup(h, key);
  if (i >= 0) {
    h->vals[i] = value;
    return 0;
  }
  if ((h->used + 1) * 4 > ((size_t)3 << h->bits)) grow(h);
  place(h, key, value);
  return 1;
}

int judge_map_erase(void *m, uint64_t key) {
  hmap *h = m;
  long i = lookup(h, key);
  if (i < 0) return 0;
#ifdef JUDGE_BUG_ERASE_LEAVES_EMPTY
  /* BUG (hashmap_erase_bug.c): the slot is marked empty, not deleted, which
   * breaks the probe chain of every key placed behind it. */
  h->state[i] = EMPTY;
#else
  h->state[i] = DELETED;
#endif
  h->size--;
  return 1;
}
