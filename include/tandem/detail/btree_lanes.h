/*
 * btree_lanes.h: per-lane pieces of a node search done by a group of 8 or 16
 * lanes (design v2 B-tree search). Each lane compares its share of the 16
 * keys of a node with the query; the group adds the lanes' counts (a ballot
 * and popc on the GPU, a loop on the CPU) to get the lower-bound slot that
 * tdm__bt_lower computes alone. Kept here so the CPU tests run the same code.
 */
#ifndef TANDEM_BTREE_LANES_H
#define TANDEM_BTREE_LANES_H

#include "btree_node.h"

/* Keys each lane of a group of `lanes` (8 or 16) compares. */
TDM_HD uint32_t tdm__bt_lane_share(uint32_t lanes) { return 16u / lanes; }

/* Number of keys < q among the share of lane `lane` (0 <= lane < lanes):
 * keys lane*share .. lane*share+share-1, so neighbouring lanes read
 * neighbouring words and the group reads the node's keys in one sweep. */
TDM_HD uint32_t tdm__bt_lane_lower(const uint64_t *key, uint64_t q, uint32_t lane, uint32_t lanes) {
  uint32_t s = tdm__bt_lane_share(lanes), c = 0, i;
  for (i = 0; i < s; i++) c += (uint32_t)(key[lane * s + i] < q);
  return c;
}

/* Combines per-lane counts into the lower-bound slot. Keys of a node are
 * sorted, so the set of keys < q is a prefix and the sum of the lanes'
 * counts is its length. On the GPU each lane's count is 0..2, so two
 * ballots (bit 0 and bit 1 of the count) and popc give the same sum. */
TDM_HD uint32_t tdm__bt_lanes_combine(uint32_t popc_bit0, uint32_t popc_bit1) {
  return popc_bit0 + 2u * popc_bit1;
}

/* Keys-only descent over a bulk-loaded tree (the layout tdm__bt_geom_init
 * describes): the child of node i of level l at slot c is node
 * even_start(cnt[l-1], cnt[l], i) + c of level l-1, so no child index is
 * loaded. sep(l, i) gives the 16 separator keys of that inner node (the
 * compact auxiliary array on the GPU); leaf_key gives a leaf's keys. Returns
 * the leaf's index within level 0; *pos receives the lower-bound slot. */
TDM_HD uint64_t tdm__bt_geom_child(const tdm__bt_geom *g, uint32_t l, uint64_t i, uint32_t c) {
  return tdm__bt_even_start(g->cnt[l - 1], g->cnt[l], i) + c;
}

/* Rank of a query that ends in leaf i (within level 0) at slot pos: the keys
 * left of the leaf follow from the geometry, so no prefix counts are read. */
TDM_HD uint64_t tdm__bt_geom_rank(const tdm__bt_geom *g, uint64_t leaf, uint32_t pos) {
  return tdm__bt_even_start(g->m, g->cnt[0], leaf) + pos;
}

#endif
