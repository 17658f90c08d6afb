/*
 * test_hd_btree_lanes.c: the lane-group node search of the v2 B-tree search,
 * simulated on the CPU (one loop iteration per lane, ballots as bit counts),
 * against tdm__bt_lower on random sorted nodes with padding, for groups of
 * 8 and 16 lanes and queries on, between and outside the keys.
 */
#include <criterion/criterion.h>
#include <stdint.h>

#include "hd/btree_lanes.h"

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
