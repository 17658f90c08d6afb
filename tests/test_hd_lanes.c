/*
 * test_hd_lanes.c: the lane-group probe of the CUDA hash find and erase
 * (gpu/hash_probe.cu, probe_find), run on the CPU with the lanes simulated
 * in a loop. Its per-lane read and per-step decision
 * (include/tandem/detail/hash_slot_impl.h) must give the same slot as the
 * one-thread probe tdm__hs_lookup that the CPU backend runs, on tables with
 * long runs, tombstones, wrap-around and side-slot keys: with a whole
 * bucket's lanes and with half a bucket's (the sector lanes of the CUDA
 * policy table), each lane reading its key word (the erase) or its whole
 * slot (the find, tdm__hs_word_bits on the slot's key).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tandem/detail/hash_layout.h"

static uint64_t rng_state;
static uint64_t rnd(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* The kernel's loop, with tile.ballot replaced by OR-ing each lane's bits:
 * lanes per step = the bucket's divided by div; whole: the lane reads its
 * whole slot and decides on its key word (the find), else it reads the key
 * word (the erase). */
#define SIM_LOOKUP(SFX, K)                                                                               \
  static uint64_t sim_lookup_##SFX(const tdm__hslot_##SFX *s, unsigned l, K key, unsigned div, int whole) { \
    uint64_t cap = (uint64_t)1 << l, mask = cap - 1u, pos = tdm__hs_start_##SFX(key, l), at = TDM_HASH_NONE; \
    unsigned lanes = tdm__hs_lanes_##SFX() / div;                                                        \
    if (pos >= cap) return tdm__hs_lookup_##SFX(s, l, key, pos, 0);                                      \
    for (uint64_t g = 0; g < cap / lanes; g++) {                                                         \
      unsigned eq = 0, em = 0;                                                                           \
      for (unsigned lane = 0; lane < lanes; lane++) {                                                    \
        unsigned e, m, t;                                                                                \
        if (whole) {                                                                                     \
          tdm__hslot_##SFX c = s[pos + lane];                                                            \
          tdm__hs_word_bits_##SFX(c.k, key, lane, &e, &m, &t);                                           \
        } else {                                                                                         \
          tdm__hs_lane_bits_##SFX(s, pos, key, lane, 0, &e, &m, &t);                                     \
        }                                                                                                \
        cr_assert_eq(e & ~(1u << lane), 0u, "lane %u set another lane's bit", lane);                     \
        eq |= e;                                                                                         \
        em |= m;                                                                                         \
      }                                                                                                  \
      if (tdm__hs_lookup_step_##SFX(pos, eq, em, &at)) return at;                                        \
      pos = (pos + lanes) & mask;                                                                        \
    }                                                                                                    \
    return TDM_HASH_NONE;                                                                                \
  }
SIM_LOOKUP(k64v64, uint64_t)
SIM_LOOKUP(k32v32, uint32_t)
SIM_LOOKUP(k64v32, uint64_t)
SIM_LOOKUP(k32v64, uint32_t)

/* Fills a table of 2^l slots to about load with keys from a small range (so
 * runs are long and wrap), erases some (tombstones), then compares both
 * probes on every key of the range, present or not, and on the markers. */
#define CHECK_TABLE(SFX, K, TOMB)                                                                         \
  static void check_##SFX(unsigned l, double load, uint64_t seed) {                                       \
    size_t cap = (size_t)1 << l, n = (size_t)(load * (double)cap), i;                                     \
    tdm__hslot_##SFX *s = calloc(cap + 2u, sizeof *s);                                                    \
    K range = (K)(n * 2u + 3u);                                                                           \
    int o;                                                                                                \
    cr_assert_not_null(s);                                                                                \
    rng_state = seed;                                                                                     \
    for (i = 0; i < n; i++) {                                                                             \
      K k = (K)(rnd() % range);                                                                           \
      if (i % 7 == 3) k = (K)(i % 2 ? 0u : TOMB); /* the side-slot keys */                                \
      uint64_t p = tdm__hs_claim_##SFX(s, l, k, tdm__hs_start_##SFX(k, l), 0, TDM_HASH_NONE, &o);         \
      cr_assert_neq(p, TDM_HASH_NONE);                                                                    \
      s[p].v = (K)(k + 1u);                                                                               \
    }                                                                                                     \
    for (i = 0; i < n / 4; i++) {                                                                         \
      K k = (K)(rnd() % range);                                                                           \
      (void)tdm__hs_erase_##SFX(s, l, k, tdm__hs_start_##SFX(k, l), 0);                                   \
    }                                                                                                     \
    for (unsigned div = 1; div <= 2; div++)                                                               \
      for (int whole = 0; whole < 2; whole++) {                                                           \
        for (K k = 0; k < range; k++) {                                                                   \
          uint64_t a = tdm__hs_lookup_##SFX(s, l, k, tdm__hs_start_##SFX(k, l), 0),                       \
                   b = sim_lookup_##SFX(s, l, k, div, whole);                                             \
          cr_assert_eq(a, b, "key %llu, %u lanes%s: one-thread probe %llu, lane group %llu",              \
                       (unsigned long long)k, tdm__hs_lanes_##SFX() / div, whole ? " (whole slots)" : "",  \
                       (unsigned long long)a, (unsigned long long)b);                                     \
        }                                                                                                 \
        cr_assert_eq(tdm__hs_lookup_##SFX(s, l, (K)TOMB, tdm__hs_start_##SFX((K)TOMB, l), 0),             \
                     sim_lookup_##SFX(s, l, (K)TOMB, div, whole));                                        \
      }                                                                                                   \
    free(s);                                                                                              \
  }
CHECK_TABLE(k64v64, uint64_t, TDM_HASH_TOMB64)
CHECK_TABLE(k32v32, uint32_t, TDM_HASH_TOMB32)
CHECK_TABLE(k64v32, uint64_t, TDM_HASH_TOMB64)
CHECK_TABLE(k32v64, uint32_t, TDM_HASH_TOMB32)

Test(hd_lanes, lane_group_find_matches_one_thread_probe) {
  static const double loads[] = {0.3, 0.7, 0.9, 0.99};
  for (unsigned li = 0; li < 4; li++)
    for (unsigned l = TDM_HASH_MIN_LOG2; l <= 12; l += 4) {
      check_k64v64(l, loads[li], 11u + l);
      check_k32v32(l, loads[li], 23u + l);
      check_k64v32(l, loads[li], 37u + l);
      check_k32v64(l, loads[li], 41u + l);
    }
}

Test(hd_lanes, lanes_cover_one_bucket) {
  cr_assert_eq(tdm__hs_lanes_k64v64() * sizeof(tdm__hslot_k64v64), 64u);
  cr_assert_eq(tdm__hs_lanes_k32v32() * sizeof(tdm__hslot_k32v32), 64u);
  cr_assert_eq(tdm__hs_lanes_k32v64() * sizeof(tdm__hslot_k32v64), 64u);
}
