/*
 * sort_vq.h: Highway's vqsort for keys-only sorts and small stable ones.
 *
 * When the library is built with Highway (TANDEM_HAVE_HWY), keys-only sorts
 * take Highway's vqsort, over the whole array, over each side of the
 * two-thread split (sort_split_cpu.c) or for the cache-sized buckets of the
 * radix partition (the rule is the context's plan, sort_plan_cpu.c); it picks the
 * widest instruction set of the running CPU (AVX-512, AVX2, SSE4 or scalar)
 * at run time. Keys-only output does not depend on how equal keys are ordered
 * (equal sort bits are equal keys), so every path gives the same bytes as the
 * radix passes it replaces. Pairs and argsort must stay stable: they come
 * here only for small inputs, with the index in the key's low bits
 * (sort_cpu.c, small_sort), so no two keys are equal.
 */
#ifndef TANDEM_CPU_SORT_VQ_H
#define TANDEM_CPU_SORT_VQ_H

#include <stddef.h>
#include <stdint.h>

#include "../src/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sort a[0, n) ascending, in place. They neither allocate nor fail. */
TDM_INTERNAL void tdm__vq_sort_u32(uint32_t *a, size_t n);
TDM_INTERNAL void tdm__vq_sort_u64(uint64_t *a, size_t n);
/* n 128-bit keys stored as (low word, high word) pairs, 16-byte aligned,
 * ordered by high word then low word: small_sort in sort_cpu.c. */
TDM_INTERNAL void tdm__vq_sort_u128(uint64_t *a, size_t n);
/* The widest x86 vector level Highway's dispatch may use now: 2 AVX-512, 1
 * AVX2, 0 neither. A context's keys-only plan (sort_plan_cpu.c) is chosen
 * from it, so the instruction set is probed in one place and a limit on
 * Highway's targets (the tests' tdm_test_hwy_limit, tandem-bench's --isa)
 * limits the split's partition too. */
TDM_INTERNAL int tdm__vq_level(void);

#ifdef __cplusplus
}
#endif

#endif
