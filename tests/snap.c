/* snap.c: snapshots of a structure's contents (see snap.h). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "snap.h"

static prop_snap snap_alloc(size_t n) {
  prop_snap s;
  s.k = malloc((n + 1) * 8);
  s.v = malloc((n + 1) * 8);
  cr_assert(s.k && s.v, "snapshot: out of memory for %zu pairs", n);
  s.n = 0;
  return s;
}

static int cmp_pair(const void *a, const void *b) {
  const uint64_t *x = (const uint64_t *)a, *y = (const uint64_t *)b;
  return (x[0] > y[0]) - (x[0] < y[0]);
}

/* A hash table exports in no particular order: the pairs are sorted by key
 * (unsigned order is enough, it only has to be the same each time). */
prop_snap prop_hash_snap(const tdm_hash *h) {
  size_t i, n = tdm_hash_size(h);
  prop_snap s = snap_alloc(n);
  uint64_t *pairs = malloc((n + 1) * 16);
  cr_assert(pairs, "snapshot: out of memory for %zu pairs", n);
  cr_assert_eq(tdm_hash_export(h, s.k, s.v, n, &s.n), TDM_OK, "%s", tdm_last_error());
  for (i = 0; i < s.n; i++) {
    pairs[2 * i] = s.k[i];
    pairs[2 * i + 1] = s.v[i];
  }
  qsort(pairs, s.n, 16, cmp_pair);
  for (i = 0; i < s.n; i++) {
    s.k[i] = pairs[2 * i];
    s.v[i] = pairs[2 * i + 1];
  }
  free(pairs);
  return s;
}

/* A B+ tree exports in key order already. */
prop_snap prop_btree_snap(const tdm_btree *t) {
  prop_snap s = snap_alloc(tdm_btree_size(t));
  cr_assert_eq(tdm_btree_export(t, s.k, s.v, tdm_btree_size(t), &s.n), TDM_OK, "%s", tdm_last_error());
  return s;
}

void prop_snap_free(prop_snap *s) {
  free(s->k);
  free(s->v);
}

static int snap_eq(const prop_snap *a, const prop_snap *b) {
  return a->n == b->n && memcmp(a->k, b->k, a->n * 8) == 0 && memcmp(a->v, b->v, a->n * 8) == 0;
}

void prop_hash_same(const tdm_hash *h, const prop_snap *before, const char *what) {
  prop_snap now = prop_hash_snap(h);
  cr_assert(snap_eq(before, &now), "a failed %s changed the table", what);
  prop_snap_free(&now);
}

void prop_btree_same(const tdm_btree *t, const prop_snap *before, const char *what) {
  prop_snap now = prop_btree_snap(t);
  cr_assert(snap_eq(before, &now), "a failed %s changed the tree", what);
  prop_snap_free(&now);
}
