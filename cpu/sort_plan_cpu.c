/*
 * sort_plan_cpu.c: which method a keys-only sort takes on this machine,
 * chosen once per CPU context at its creation ("decide once, carry a table"),
 * from the widest vector level Highway's dispatch uses then.
 *
 * One plan per level. Each was decided by tandem-bench runs on that level
 * (docs/design.md, sort section, has the figures and the commands): the
 * split sort (a partition into one part per thread, then one vqsort per
 * part) against the radix partition. Built without Highway there is no
 * vqsort and no split: every keys-only sort takes the radix passes, and the
 * plan is not read.
 */
#include "sort_cpu.h"

#define PLAN_PART_MIN ((size_t)1 << 18)

#if TANDEM_HAVE_HWY && defined(__x86_64__)
static const tdm__keys_plan plan_avx512 = {
    "avx512",
    {{PLAN_PART_MIN, TDM__KEYS_SPLIT}, {PLAN_PART_MIN, TDM__KEYS_SPLIT}},
    TDM__SPLIT_AVX512,
};

static const tdm__keys_plan plan_avx2 = {
    "avx2",
    {{PLAN_PART_MIN, TDM__KEYS_SPLIT}, {PLAN_PART_MIN, TDM__KEYS_SPLIT}},
    TDM__SPLIT_AVX2,
};
#endif

/* Below AVX2 (SSE4, the portable baseline, other architectures): not
 * measured on such a machine; the split with its branch-free scalar loop
 * still does less work than the radix partition's scatter and count. */
static const tdm__keys_plan plan_baseline = {
    "baseline",
    {{PLAN_PART_MIN, TDM__KEYS_SPLIT}, {PLAN_PART_MIN, TDM__KEYS_SPLIT}},
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
