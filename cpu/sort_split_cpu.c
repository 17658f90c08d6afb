/*
 * sort_split_cpu.c: the keys-only sort on two threads, in builds with
 * Highway (the rule that picks it is sort_cpu.c's rs_keys_rules).
 *
 * A keys-only result does not depend on how equal keys are ordered, so two
 * threads may split the keys into a low and a high side and vqsort one side
 * each, all in place:
 *  0. Keys whose map is not the identity are mapped to sort bits, each thread
 *     its half.
 *  1. A sorted sample of 16 KiB of keys gives the bound (sample median, or
 *     one above it when the median repeats and that splits the sample more
 *     evenly).
 *  2. Each thread partitions its half in place around the bound (AVX-512
 *     compress stores where Highway's dispatch uses AVX-512, else a
 *     branch-free swap loop).
 *  3. The high keys of the first half and the low keys of the second swap
 *     places; as order within a side does not matter, only the smaller of
 *     the two groups moves, split between the threads.
 *  4. Each thread vqsorts one side in place and maps it back.
 * Every pass runs on both threads but the sample (a few thousand keys). The
 * radix partition this replaces on two threads spent 0.68 of a whole-array
 * vqsort's CPU time in its 256-way scatter and count pass on top of its
 * bucket sorts; the split's partition and swap cost about 0.15 of it
 * (docs/design.md). Besides the two sorts, main memory sees one read and
 * write of every key (2.) and of about half of them (3.). It takes no memory
 * of its own, so it cannot fail. When more than 7/8 of the sample is one key
 * (few distinct keys), one thread sorts the whole array instead, as it would
 * on one thread.
 */
#include "sort_cpu.h"

#if TANDEM_HAVE_HWY

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SK_X86 1
#define SK_AVX512 __attribute__((target("avx512f,popcnt")))
#else
#define SK_X86 0
#endif

/* Bytes of the sample (on the stack). */
#define SK_SAMPLE_BYTES 16384

/* Start of stratum i of n elements split into S strata (i <= S <= n). */
static inline size_t sk_stratum(size_t n, size_t S, size_t i) { return n / S * i + n % S * i / S; }

/* Swaps two disjoint ranges of bytes through a small buffer. */
static void sk_swap(void *x, void *y, size_t bytes) {
  char buf[4096], *p = (char *)x, *q = (char *)y;
  while (bytes > 0) {
    size_t c = bytes < sizeof buf ? bytes : sizeof buf;
    memcpy(buf, p, c);
    memcpy(p, q, c);
    memcpy(q, buf, c);
    p += c;
    q += c;
    bytes -= c;
  }
}

#define SK_K uint32_t
#define SK_SFX k32
#define SK_MAP(k, o) tdm__sortbits32((k), (o)->kind, (o)->desc)
#define SK_UNMAP(b, o) tdm__unsortbits32((b), (o)->kind, (o)->desc)
#define SK_VQ tdm__vq_sort_u32
#define SK_V_LANES 16
#define SK_V_ALL 0xffffu
#define SK_V_SET1(x) _mm512_set1_epi32((int)(x))
#define SK_V_LT(a, b) _mm512_cmplt_epu32_mask((a), (b))
#define SK_V_COMPRESS(m, v) _mm512_maskz_compress_epi32((__mmask16)(m), (v))
#define SK_V_STORE(p, m, v) _mm512_mask_storeu_epi32((void *)(p), (m), (v))
#define SK_V_PREFIX(c) ((__mmask16)((1u << (c)) - 1u))
#include "split_impl.h"
#undef SK_K
#undef SK_SFX
#undef SK_MAP
#undef SK_UNMAP
#undef SK_VQ
#undef SK_V_LANES
#undef SK_V_ALL
#undef SK_V_SET1
#undef SK_V_LT
#undef SK_V_COMPRESS
#undef SK_V_STORE
#undef SK_V_PREFIX

#define SK_K uint64_t
#define SK_SFX k64
#define SK_MAP(k, o) tdm__sortbits64((k), (o)->kind, (o)->desc)
#define SK_UNMAP(b, o) tdm__unsortbits64((b), (o)->kind, (o)->desc)
#define SK_VQ tdm__vq_sort_u64
#define SK_V_LANES 8
#define SK_V_ALL 0xffu
#define SK_V_SET1(x) _mm512_set1_epi64((long long)(x))
#define SK_V_LT(a, b) _mm512_cmplt_epu64_mask((a), (b))
#define SK_V_COMPRESS(m, v) _mm512_maskz_compress_epi64((__mmask8)(m), (v))
#define SK_V_STORE(p, m, v) _mm512_mask_storeu_epi64((void *)(p), (m), (v))
#define SK_V_PREFIX(c) ((__mmask8)((1u << (c)) - 1u))
#include "split_impl.h"

void tdm__split_sort2(void *keys, size_t ks, size_t n, const rs_out *o) {
  int avx512 = SK_X86 && tdm__vq_avx512();
  if (n < 2) return;
  if (ks == 4) split2_k32((uint32_t *)keys, n, o, avx512);
  else split2_k64((uint64_t *)keys, n, o, avx512);
}

#endif
