/* hwy_targets.cc: the test programs' control of Highway's run-time dispatch,
 * so the keys-only sort is checked on every instruction set of this CPU, not
 * only the best one. Test build only; compiled when tandem uses Highway. */
#include <hwy/targets.h>

#include "hooks.h"

const char *tdm_test_hwy_limit(int level) {
  int64_t off = 0, left;
  if (level >= 1) off |= HWY_AVX3 | HWY_AVX3_DL;
  if (level >= 2) off |= HWY_AVX2;
  /* Everything but the portable baselines (Highway keeps one if all go). */
  if (level >= 3) off |= ~(int64_t)(HWY_EMU128 | HWY_SCALAR) & ~(int64_t)((uint64_t)1 << 63);
  hwy::DisableTargets(off);
  left = hwy::SupportedTargets();
  /* Highway 1.0's SupportedTargets, called after DisableTargets, points its
   * dispatch back at every target of the CPU (its dispatcher narrows it again
   * right after its own call): narrow it as that would, or vqsort would keep
   * running the widest target whatever the level. */
  hwy::GetChosenTarget().Update(left);
  return hwy::TargetName(left & -left);
}
