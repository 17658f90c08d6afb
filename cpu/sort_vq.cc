/*
 * sort_vq.cc: Highway's vqsort behind the C calls of sort_vq.h.
 * Compiled only when Highway was found; the instruction-set dispatch is
 * Highway's own. A Sorter is made per call: it holds no memory of its own
 * (the sort works in stack buffers), so each call is allocation-free and
 * threads never share one.
 */
#include "sort_vq.h"

#include <hwy/contrib/sort/vqsort.h>
#include <hwy/targets.h>

void tdm__vq_sort_u32(uint32_t *a, size_t n) { hwy::Sorter()(a, n, hwy::SortAscending()); }

void tdm__vq_sort_u64(uint64_t *a, size_t n) { hwy::Sorter()(a, n, hwy::SortAscending()); }

void tdm__vq_sort_u128(uint64_t *a, size_t n) {
  hwy::Sorter()(reinterpret_cast<hwy::uint128_t *>(a), n, hwy::SortAscending());
}

int tdm__vq_level(void) {
  int64_t t = hwy::SupportedTargets();
  /* Highway 1.0's SupportedTargets, called after DisableTargets, points its
   * dispatch back at every target of the CPU (its dispatcher narrows it again
   * right after its own call); narrow it here as that would, or asking would
   * undo a caller's limit on Highway's targets. */
  hwy::GetChosenTarget().Update(t);
  return (t & (HWY_AVX3 | HWY_AVX3_DL)) ? 2 : (t & HWY_AVX2) ? 1 : 0;
}
