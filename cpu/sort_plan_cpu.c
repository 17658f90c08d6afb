/*
 * sort_plan_cpu.c: which method a keys-only sort takes on this machine,
 * chosen once per CPU context at its creation ("decide once, carry a table"),
 * from the widest vector level Highway's dispatch uses then.
 *
 * One plan per level, each decided by tandem-bench runs at that level (an
 * AVX-512 AMD EPYC, Zen 5, with Highway limited to AVX2 and to SSE4 by
 * tandem-bench --isa for the lower ones; docs/design.md's sort section has
 * the figures and the commands): the split sort (a partition into one part
 * per thread, then one vqsort per part) against the radix partition, on two
 * threads, medians in M/s at 10^7 keys. Built without Highway there is no
 * vqsort and no split: every keys-only sort takes the radix passes, and the
 * plan is not read.
 */
#include "sort_cpu.h"

#define PLAN_PART_MIN ((size_t)1 << 18)

#if TANDEM_HAVE_HWY && defined(__x86_64__)
/* AVX-512: the split with compress stores for 32-bit keys, and for 64-bit
 * keys below 2^24. At 10^7 keys its partition and swap cost a few percent
 * of the two half-size vqsorts, and the radix partition's scatter and count
 * pass more (u32: 405 against 494 to 530 M/s on two threads on the Zen 5;
 * 272 against 295 at 10^8 on an Intel Xeon; u64 within noise of the split
 * at 10^7 on both, and at 3 * 10^7 on the Xeon). At 10^8 64-bit keys the
 * radix partition wins (the Xeon: 167 to 174 against 139 to 144 M/s, and
 * 1.04x the halves ceiling, which the split cannot reach): a vqsort of
 * half of 10^8 u64 keys partitions some 7 to 8 levels out of cache (log2
 * of a half over the keys L2 holds), where the radix partition makes one
 * scatter and sorts its buckets in L2. 2^24 lies in the range where the
 * two tie. */
static const tdm__keys_plan plan_avx512 = {
    "avx512",
    {{PLAN_PART_MIN, TDM__KEYS_SPLIT, SIZE_MAX}, {PLAN_PART_MIN, TDM__KEYS_SPLIT, (size_t)1 << 24}},
    TDM__SPLIT_AVX512,
};

/* AVX2: the split with the permute partition for 32-bit keys (the scalar
 * loop it replaces cost a third of a half's vqsort: 286 against 355 M/s).
 * 64-bit keys take the radix partition: AVX2 has no 64-bit unsigned compare
 * or min/max, so a vqsort of u64 runs at about half its AVX-512 rate, and
 * the radix path's buckets, sorted in L2, lose less to it than two
 * half-array vqsorts out of cache (136 to 172 against 123 to 145 M/s; on an
 * AVX2-only Zen 1 it ran at 0.95x the halves ceiling). */
static const tdm__keys_plan plan_avx2 = {
    "avx2",
    {{PLAN_PART_MIN, TDM__KEYS_SPLIT, SIZE_MAX}, {PLAN_PART_MIN, TDM__KEYS_RADIX, PLAN_PART_MIN}},
    TDM__SPLIT_AVX2,
};
#endif

/* Below AVX2 (SSE4, the portable baseline, other architectures): measured
 * as SSE4 on an AVX-512 machine, the split with its branch-free scalar loop
 * for 32-bit keys (124 to 128 against 108 to 117 M/s), the radix partition
 * for 64-bit ones (84 to 91 against 67 to 69), for the reason above. */
static const tdm__keys_plan plan_baseline = {
    "baseline",
    {{PLAN_PART_MIN, TDM__KEYS_SPLIT, SIZE_MAX}, {PLAN_PART_MIN, TDM__KEYS_RADIX, PLAN_PART_MIN}},
    TDM__SPLIT_SCALAR,
};

const tdm__keys_plan *tdm__keys_plan_pick(void) {
#if TANDEM_HAVE_HWY && defined(__x86_64__)
  int level = tdm__vq_level();
  if (level == 2) return &plan_avx512;
  if (level == 1) return &plan_avx2;
#endif
  return &plan_baseline;
}

tdm_status tdm__cpu_ctx_init(tdm_ctx *ctx) {
  ctx->keys_plan = tdm__keys_plan_pick();
  return TDM_OK;
}
