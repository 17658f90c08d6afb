/*
 * test_hd_btree_lanes.c: the lane-group node search of the v2 B-tree search,
 * simulated on the CPU (one loop iteration per lane, ballots as bit counts),
 * against tdm__bt_lower on random sorted nodes with padding, for groups of
 * 8 and 16 lanes and queries on, between and outside the keys.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "tandem/detail/btree_lanes.h"

static uint64_t next(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 11;
}

static uint32_t simulate(const uint64_t *key, uint64_t q, uint32_t lanes) {
  uint32_t b0 = 0, b1 = 0, lane;
  for (lane = 0; lane < lanes; lane++) {
    uint32_t c = tdm__bt_lane_lower(key, q, lane, lanes);
    b0 += c & 1u; /* popc of the ballot of bit 0 */
    b1 += (c >> 1) & 1u;
  }
  return tdm__bt_lanes_combine(b0, b1);
}

Test(hd_btree_lanes, group_count_equals_single_thread_lower_bound) {
  uint64_t s = 42, key[16];
  for (int trial = 0; trial < 2000; trial++) {
    uint32_t count = 1 + (uint32_t)(next(&s) % 16), i;
    uint64_t spread = trial % 3 == 0 ? 4 : (uint64_t)1 << 40;
    key[0] = next(&s) % spread;
    for (i = 1; i < count; i++) key[i] = key[i - 1] + 1 + next(&s) % spread;
    if (trial % 7 == 0) key[count - 1] = TDM_BT_PAD; /* all-ones key stored */
    for (; i < 16; i++) key[i] = TDM_BT_PAD;
    uint64_t qs[8] = {0, key[0], key[0] + 1, key[count / 2], key[count - 1],
                      key[count - 1] - 1, TDM_BT_PAD, next(&s)};
    for (int k = 0; k < 8; k++) {
      uint32_t want = tdm__bt_lower(key, qs[k]);
      cr_assert_eq(simulate(key, qs[k], 8), want, "8 lanes, trial %d query %d", trial, k);
      cr_assert_eq(simulate(key, qs[k], 16), want, "16 lanes, trial %d query %d", trial, k);
    }
  }
}

/* Bulk-builds a tree of m keys of one type (ks bytes, kind) and checks that
 * the keys-only, lane-group descent with child and rank from the geometry
 * lands on the same leaf, slot and rank as tdm__bt_descend. */
static void check_tree(uint64_t m, uint32_t ks, int kind, uint64_t seed) {
  uint64_t *bits = malloc(m * sizeof *bits), i, s = seed;
  void *raw = malloc(m * ks);
  tdm__bt_geom g;
  tdm__bt_geom_init(&g, m);
  tdm__bt_node *nodes = malloc(g.nodes * sizeof *nodes);
  cr_assert(bits && raw && nodes);
  /* Strictly increasing bits inside the type's range; floats keep away from
   * the NaN patterns at both ends. */
  uint64_t lo = kind == TDM_KIND_FLOAT ? (ks == 4 ? 0x00800000u : 0x0010000000000000ull) : 0;
  uint64_t span = ks == 4 ? 0x7f000000ull : 0x7fe0000000000000ull;
  uint64_t step = span / (m + 1);
  bits[0] = lo + next(&s) % (step ? step : 1);
  for (i = 1; i < m; i++) bits[i] = bits[i - 1] + 1 + next(&s) % (step ? step : 1);
  for (i = 0; i < m; i++) tdm__bt_store_key(raw, i, bits[i], ks, kind);
  for (i = 0; i < m; i++) cr_assert_eq(tdm__bt_key_bits(raw, i, ks, kind), bits[i]);
  for (i = 0; i < g.cnt[0]; i++) tdm__bt_fill_leaf(nodes, &g, raw, NULL, ks, 8, kind, i);
  for (uint32_t l = 1; l < g.h; l++)
    for (i = 0; i < g.cnt[l]; i++) tdm__bt_fill_inner(nodes, &g, raw, ks, kind, l, i);
  uint32_t root = g.base[g.h - 1];
  for (uint64_t t = 0; t < 3 * m + 20; t++) {
    uint64_t q = t % 3 == 0 ? bits[next(&s) % m] : t % 3 == 1 ? bits[next(&s) % m] + 1 : next(&s);
    if (ks == 4) q &= 0xffffffffull;
    if (t == 0) q = 0;
    if (t == 1) q = TDM_BT_PAD;
    uint32_t leaf, pos, lanes = t % 2 ? 8 : 16;
    uint64_t want = tdm__bt_descend(nodes, root, g.h, q, &leaf, &pos);
    uint64_t n = 0;
    for (uint32_t l = g.h - 1; l > 0; l--) {
      const uint64_t *sep = nodes[g.base[l] + n].key; /* keys only */
      n = tdm__bt_geom_child(&g, l, n, simulate(sep, q, lanes));
    }
    uint32_t p = simulate(nodes[g.base[0] + n].key, q, lanes);
    cr_assert_eq(g.base[0] + n, leaf, "m %llu ks %u kind %d: leaf", (unsigned long long)m, ks, kind);
    cr_assert_eq(p, pos);
    cr_assert_eq(tdm__bt_geom_rank(&g, n, p), want);
  }
  free(bits), free(raw), free(nodes);
}

Test(hd_btree_lanes, keys_only_geometry_descent_matches_descend) {
  static const uint64_t sizes[] = {1, 2, 14, 15, 16, 17, 224, 225, 3585, 100000};
  static const struct { uint32_t ks; int kind; } types[] = {
      {4, TDM_KIND_UNSIGNED}, {8, TDM_KIND_UNSIGNED}, {4, TDM_KIND_SIGNED},
      {8, TDM_KIND_SIGNED},   {4, TDM_KIND_FLOAT},    {8, TDM_KIND_FLOAT}};
  for (unsigned z = 0; z < sizeof sizes / sizeof *sizes; z++)
    for (unsigned k = 0; k < 6; k++) check_tree(sizes[z], types[k].ks, types[k].kind, 1000 + z * 7 + k);
}
