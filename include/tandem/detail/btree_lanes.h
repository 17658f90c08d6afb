/*
 * btree_lanes.h: per-lane pieces of a node search done by a group of 8 or 16
 * lanes (the CUDA B-tree search). Each lane compares its share of the 16
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
 * neighbouring words and the group reads the node's keys in one sweep.
 * tdm__bt_lane_words_lower counts over the lane's own words once loaded (the
 * kernels load them with one vector load). */
TDM_HD uint32_t tdm__bt_lane_words_lower(const uint64_t *words, uint32_t share, uint64_t q) {
  uint32_t c = 0, i;
  for (i = 0; i < share; i++) c += (uint32_t)(words[i] < q);
  return c;
}
TDM_HD uint32_t tdm__bt_lane_lower(const uint64_t *key, uint64_t q, uint32_t lane, uint32_t lanes) {
  uint32_t s = tdm__bt_lane_share(lanes);
  return tdm__bt_lane_words_lower(key + lane * s, s, q);
}

/* Combines per-lane counts into the lower-bound slot. Keys of a node are
 * sorted, so the set of keys < q is a prefix and the sum of the lanes'
 * counts is its length. On the GPU each lane's count is 0..2, so two
 * ballots (bit 0 and bit 1 of the count) and popc give the same sum. */
TDM_HD uint32_t tdm__bt_lanes_combine(uint32_t popc_bit0, uint32_t popc_bit1) {
  return popc_bit0 + 2u * popc_bit1;
}

/* The child (within level l - 1) of node i of level l at slot c, in a
 * bulk-loaded tree (the layout tdm__bt_geom_init describes): node
 * even_start(cnt[l-1], cnt[l], i) + c of level l-1, so a keys-only descent
 * (the lane-group search below, over the separator array) loads no child index. */
TDM_HD uint64_t tdm__bt_geom_child(const tdm__bt_geom *g, uint32_t l, uint64_t i, uint32_t c) {
  return tdm__bt_even_start(g->cnt[l - 1], g->cnt[l], i) + c;
}

/* Rank of a query that ends in leaf i (within level 0) at slot pos: the keys
 * left of the leaf follow from the geometry, so no prefix counts are read. */
TDM_HD uint64_t tdm__bt_geom_rank(const tdm__bt_geom *g, uint64_t leaf, uint32_t pos) {
  return tdm__bt_even_start(g->m, g->cnt[0], leaf) + pos;
}


/* ---- the lane-group search over the bulk layout ------------------------------
 * The compact separator array: the 16 key words of every inner node, in node
 * index order (level 1 first, the root last), 128 bytes per inner node and
 * nothing else, so an inner level costs the search one 128-byte read instead
 * of a 384-byte node whose child and count lines it no longer needs. Inner
 * node i of level l (nodes base[l] + i) starts at word (base[l] - cnt[0] + i)
 * * 16; the array holds (nodes - cnt[0]) * 16 words, none for a tree of one
 * leaf. The leaves are read in place (their key line, then one value).
 *
 * tdm__bt_lgeom is the geometry in the form the search uses: per level the
 * quotient and remainder of the even split, so a child index or a rank is a
 * multiply, a min and an add (no 64-bit division per level). */

typedef struct tdm__bt_lgeom {
  uint64_t m;                      /* keys */
  uint64_t leaf_q, leaf_r;         /* m / cnt[0], m % cnt[0]: keys per leaf, leaves with one more */
  uint32_t h;                      /* levels */
  uint32_t q[TDM_BT_MAX_HEIGHT];   /* level l >= 1: cnt[l-1] / cnt[l], children per node */
  uint32_t r[TDM_BT_MAX_HEIGHT];   /* level l >= 1: cnt[l-1] % cnt[l], nodes with one more child */
  uint32_t sep[TDM_BT_MAX_HEIGHT]; /* level l >= 1: its first node's index in the separator array */
  uint64_t leaves;                 /* cnt[0] */
  uint64_t sums;                   /* the summaries' first word in the search array (tdm__bt_sep_words) */
} tdm__bt_lgeom;

TDM_HD void tdm__bt_lgeom_init(tdm__bt_lgeom *lg, const tdm__bt_geom *g) {
  uint32_t l;
  lg->m = g->m;
  lg->leaf_q = g->m / g->cnt[0];
  lg->leaf_r = g->m % g->cnt[0];
  lg->h = g->h;
  lg->leaves = g->cnt[0];
  lg->sums = (g->nodes - g->cnt[0]) * 16u;
  for (l = 0; l < TDM_BT_MAX_HEIGHT; l++) {
    lg->q[l] = lg->r[l] = lg->sep[l] = 0;
    if (l >= 1 && l < g->h) {
      lg->q[l] = g->cnt[l - 1] / g->cnt[l];
      lg->r[l] = g->cnt[l - 1] % g->cnt[l];
      lg->sep[l] = g->base[l] - g->cnt[0];
    }
  }
}

/* Words of the separator array of a tree with geometry g. */
TDM_HD uint64_t tdm__bt_sep_words(const tdm__bt_geom *g) { return (g->nodes - g->cnt[0]) * 16u; }

/* Word j of the separator array, from the node array (one word per thread). */
TDM_HD uint64_t tdm__bt_sep_word(const tdm__bt_node *nodes, const tdm__bt_geom *g, uint64_t j) {
  return nodes[g->cnt[0] + j / 16u].key[j % 16u];
}

/* ---- two sectors per node ------------------------------------------------------
 * A node's 16 sorted key words are four 32-byte sectors; its summary is the
 * last word of each (words 3, 7, 11, 15). The lower bound of q is 4s + c,
 * where s is the number of summary words < q (the sector holding the bound;
 * 4: past every word) and c the number of words < q in sector s. So the
 * levels a search reads from global memory cost it one sector of summary and
 * one of keys instead of all four (lanes 0..3 of the group, a word each).
 * The search array holds the summaries of every node, in node index order
 * (leaves first, the root last), 4 words each, after the separators. */

/* Word j (0..3) of the summary of the 16 words key. */
TDM_HD uint64_t tdm__bt_sum_of(const uint64_t *key, uint32_t j) { return key[4u * j + 3u]; }
/* The lower bound from s and c (c unused when s == 4). */
TDM_HD uint32_t tdm__bt_two_step(uint32_t s, uint32_t c) { return s >= 4u ? 16u : 4u * s + c; }
/* Words of the summaries of a tree with geometry g. */
TDM_HD uint64_t tdm__bt_sum_words(const tdm__bt_geom *g) { return g->nodes * 4u; }
/* Word j of the summaries, from the node array (one word per thread). */
TDM_HD uint64_t tdm__bt_sum_word(const tdm__bt_node *nodes, uint64_t j) {
  return tdm__bt_sum_of(nodes[j / 4u].key, (uint32_t)(j % 4u));
}
/* Words of the whole search array: the separators, then the summaries. */
TDM_HD uint64_t tdm__bt_search_words(const tdm__bt_geom *g) { return tdm__bt_sep_words(g) + tdm__bt_sum_words(g); }
/* First summary word, in the search array, of node i of level l. */
TDM_HD uint64_t tdm__bt_lg_sum(const tdm__bt_lgeom *lg, uint32_t l, uint64_t i) {
  return lg->sums + 4u * (l == 0 ? i : lg->leaves + lg->sep[l] + i);
}

/* Word j of the search array, from the node array (one word per thread). */
TDM_HD uint64_t tdm__bt_search_word(const tdm__bt_node *nodes, const tdm__bt_geom *g, uint64_t j) {
  uint64_t sw = tdm__bt_sep_words(g);
  return j < sw ? tdm__bt_sep_word(nodes, g, j) : tdm__bt_sum_word(nodes, j - sw);
}

/* First separator word of inner node i (within level l >= 1). */
TDM_HD uint64_t tdm__bt_lg_sep(const tdm__bt_lgeom *lg, uint32_t l, uint32_t i) {
  return ((uint64_t)lg->sep[l] + i) * 16u;
}

/* The child (within level l - 1) of node i of level l at slot c: the
 * quotient/remainder form of tdm__bt_geom_child. */
TDM_HD uint32_t tdm__bt_lg_child(const tdm__bt_lgeom *lg, uint32_t l, uint32_t i, uint32_t c) {
  uint32_t r = lg->r[l];
  return i * lg->q[l] + (i < r ? i : r) + c;
}

/* Index of the first key of leaf i (level 0 index); keys in it. */
TDM_HD uint64_t tdm__bt_lg_leaf_start(const tdm__bt_lgeom *lg, uint64_t i) {
  return i * lg->leaf_q + (i < lg->leaf_r ? i : lg->leaf_r);
}
TDM_HD uint32_t tdm__bt_lg_leaf_count(const tdm__bt_lgeom *lg, uint64_t i) {
  return (uint32_t)(lg->leaf_q + (i < lg->leaf_r));
}

/* 1 if slot pos (the lower bound of q in a leaf of cnt keys) holds q. The
 * count comes from the geometry, not the node header: padding (all ones)
 * equals q = all ones, so slots at or after cnt never match. */
TDM_HD int tdm__bt_lg_hit_at(uint64_t at, uint32_t pos, uint32_t cnt, uint64_t q) { return pos < cnt && at == q; }
TDM_HD int tdm__bt_lg_leaf_hit(const uint64_t *key, uint32_t pos, uint32_t cnt, uint64_t q) {
  return pos < cnt && tdm__bt_lg_hit_at(key[pos], pos, cnt, q);
}

/* Which search a CUDA tree's queries run. The keys-only
 * lane-group search derives children and ranks from the geometry, so it is
 * correct only while the node array is exactly the bulk layout of g: `bulk`
 * says the nodes were written from g (the GPU's only writer, its install
 * step, does so; anything else must pass 0), and the tree's header must agree
 * with g (size, height, root) and hold the separator array when there are
 * inner levels. Anything else runs the descent through the child arrays
 * (tdm__bt_descend), which works on every valid tree. */
enum { TDM__BT_SEARCH_DESCEND = 0, TDM__BT_SEARCH_LANES = 1 };

TDM_HD int tdm__bt_search_plan(const tdm__bt_geom *g, int bulk, uint64_t size, uint32_t root, uint32_t height,
                              const void *seps) {
  if (!bulk || size == 0 || g->m != size || g->h != height || g->h < 1 || g->h > TDM_BT_MAX_HEIGHT ||
      (uint64_t)root + 1 != g->nodes)
    return TDM__BT_SEARCH_DESCEND;
  if (!seps) return TDM__BT_SEARCH_DESCEND; /* a single leaf's summary is there too */
  return TDM__BT_SEARCH_LANES;
}

/* 1 if the n_nodes nodes at `nodes` are exactly the bulk layout of a tree of
 * `size` keys under root / height: every level's node count, the children of
 * every inner node and the key count of every leaf as tdm__bt_geom_init
 * places them (keys and separators are the structure's own business and are
 * checked by tdm_btree_validate). What the lane-group search assumes, checked
 * in full; O(nodes). *g receives the geometry of size. */
TDM_HD int tdm__bt_is_bulk_layout(const tdm__bt_node *nodes, uint64_t n_nodes, uint64_t size, uint32_t root,
                                 uint32_t height, tdm__bt_geom *g) {
  uint32_t l, c;
  uint64_t i;
  if (size == 0) return 0;
  tdm__bt_geom_init(g, size);
  if (g->h != height || (uint64_t)root + 1 != g->nodes || g->nodes > n_nodes) return 0;
  for (l = 0; l < g->h; l++) {
    for (i = 0; i < g->cnt[l]; i++) {
      const tdm__bt_node *x = &nodes[g->base[l] + i];
      uint64_t want = l == 0 ? tdm__bt_even_start(g->m, g->cnt[0], i + 1) - tdm__bt_even_start(g->m, g->cnt[0], i)
                             : tdm__bt_even_start(g->cnt[l - 1], g->cnt[l], i + 1) -
                                   tdm__bt_even_start(g->cnt[l - 1], g->cnt[l], i);
      if (x->level != l || x->count != want) return 0;
      for (c = 0; l > 0 && c < x->count; c++)
        if (x->u.in.child[c] != g->base[l - 1] + tdm__bt_geom_child(g, l, i, c)) return 0;
    }
  }
  return 1;
}

#endif
