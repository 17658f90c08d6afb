/*
 * snap.h: snapshots of a hash table's or B+ tree's contents, for the tests
 * that check a failed call left a structure exactly as it was (allocation
 * failures, allocator refusals). Keys and values must be 8 bytes wide.
 */
#ifndef TANDEM_TEST_SNAP_H
#define TANDEM_TEST_SNAP_H

#include <stddef.h>
#include <stdint.h>

#include <tandem/tandem.h>

/* The structure's (key, value) pairs in ascending key order. */
typedef struct prop_snap {
  uint64_t *k, *v;
  size_t n;
} prop_snap;

prop_snap prop_hash_snap(const tdm_hash *h);
prop_snap prop_btree_snap(const tdm_btree *t);
void prop_snap_free(prop_snap *s);

/* Fails the running test with "a failed <what> changed the table" (or "the
 * tree") when the structure no longer holds what `before` recorded. */
void prop_hash_same(const tdm_hash *h, const prop_snap *before, const char *what);
void prop_btree_same(const tdm_btree *t, const prop_snap *before, const char *what);

#endif /* TANDEM_TEST_SNAP_H */
