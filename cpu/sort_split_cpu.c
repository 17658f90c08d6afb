/*
 * sort_split_cpu.c: the keys-only sort on two threads, in builds with
 * Highway (the rule that picks it is the context's plan, sort_plan_cpu.c).
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
 *     compress stores, AVX2 permutes from a table, or a branch-free swap
 *     loop: the context's plan says which, sort_plan_cpu.c).
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
#define SK_AVX2 __attribute__((target("avx2,popcnt")))
#else
#define SK_X86 0
#endif

#if SK_X86
/* The AVX2 partition's permutations (split_impl.h, part_avx2), by compare
 * mask (bit j: lane j holds a key below the bound): nibble j of an entry is
 * the lane that goes to place j, the marked lanes first, then the others,
 * each in lane order. sk_perm64 permutes 64-bit lanes as pairs of 32-bit
 * ones. */
static const uint32_t sk_perm32[256] = {
    0x76543210u, 0x76543210u, 0x76543201u, 0x76543210u, 0x76543102u, 0x76543120u, 0x76543021u, 0x76543210u,
    0x76542103u, 0x76542130u, 0x76542031u, 0x76542310u, 0x76541032u, 0x76541320u, 0x76540321u, 0x76543210u,
    0x76532104u, 0x76532140u, 0x76532041u, 0x76532410u, 0x76531042u, 0x76531420u, 0x76530421u, 0x76534210u,
    0x76521043u, 0x76521430u, 0x76520431u, 0x76524310u, 0x76510432u, 0x76514320u, 0x76504321u, 0x76543210u,
    0x76432105u, 0x76432150u, 0x76432051u, 0x76432510u, 0x76431052u, 0x76431520u, 0x76430521u, 0x76435210u,
    0x76421053u, 0x76421530u, 0x76420531u, 0x76425310u, 0x76410532u, 0x76415320u, 0x76405321u, 0x76453210u,
    0x76321054u, 0x76321540u, 0x76320541u, 0x76325410u, 0x76310542u, 0x76315420u, 0x76305421u, 0x76354210u,
    0x76210543u, 0x76215430u, 0x76205431u, 0x76254310u, 0x76105432u, 0x76154320u, 0x76054321u, 0x76543210u,
    0x75432106u, 0x75432160u, 0x75432061u, 0x75432610u, 0x75431062u, 0x75431620u, 0x75430621u, 0x75436210u,
    0x75421063u, 0x75421630u, 0x75420631u, 0x75426310u, 0x75410632u, 0x75416320u, 0x75406321u, 0x75463210u,
    0x75321064u, 0x75321640u, 0x75320641u, 0x75326410u, 0x75310642u, 0x75316420u, 0x75306421u, 0x75364210u,
    0x75210643u, 0x75216430u, 0x75206431u, 0x75264310u, 0x75106432u, 0x75164320u, 0x75064321u, 0x75643210u,
    0x74321065u, 0x74321650u, 0x74320651u, 0x74326510u, 0x74310652u, 0x74316520u, 0x74306521u, 0x74365210u,
    0x74210653u, 0x74216530u, 0x74206531u, 0x74265310u, 0x74106532u, 0x74165320u, 0x74065321u, 0x74653210u,
    0x73210654u, 0x73216540u, 0x73206541u, 0x73265410u, 0x73106542u, 0x73165420u, 0x73065421u, 0x73654210u,
    0x72106543u, 0x72165430u, 0x72065431u, 0x72654310u, 0x71065432u, 0x71654320u, 0x70654321u, 0x76543210u,
    0x65432107u, 0x65432170u, 0x65432071u, 0x65432710u, 0x65431072u, 0x65431720u, 0x65430721u, 0x65437210u,
    0x65421073u, 0x65421730u, 0x65420731u, 0x65427310u, 0x65410732u, 0x65417320u, 0x65407321u, 0x65473210u,
    0x65321074u, 0x65321740u, 0x65320741u, 0x65327410u, 0x65310742u, 0x65317420u, 0x65307421u, 0x65374210u,
    0x65210743u, 0x65217430u, 0x65207431u, 0x65274310u, 0x65107432u, 0x65174320u, 0x65074321u, 0x65743210u,
    0x64321075u, 0x64321750u, 0x64320751u, 0x64327510u, 0x64310752u, 0x64317520u, 0x64307521u, 0x64375210u,
    0x64210753u, 0x64217530u, 0x64207531u, 0x64275310u, 0x64107532u, 0x64175320u, 0x64075321u, 0x64753210u,
    0x63210754u, 0x63217540u, 0x63207541u, 0x63275410u, 0x63107542u, 0x63175420u, 0x63075421u, 0x63754210u,
    0x62107543u, 0x62175430u, 0x62075431u, 0x62754310u, 0x61075432u, 0x61754320u, 0x60754321u, 0x67543210u,
    0x54321076u, 0x54321760u, 0x54320761u, 0x54327610u, 0x54310762u, 0x54317620u, 0x54307621u, 0x54376210u,
    0x54210763u, 0x54217630u, 0x54207631u, 0x54276310u, 0x54107632u, 0x54176320u, 0x54076321u, 0x54763210u,
    0x53210764u, 0x53217640u, 0x53207641u, 0x53276410u, 0x53107642u, 0x53176420u, 0x53076421u, 0x53764210u,
    0x52107643u, 0x52176430u, 0x52076431u, 0x52764310u, 0x51076432u, 0x51764320u, 0x50764321u, 0x57643210u,
    0x43210765u, 0x43217650u, 0x43207651u, 0x43276510u, 0x43107652u, 0x43176520u, 0x43076521u, 0x43765210u,
    0x42107653u, 0x42176530u, 0x42076531u, 0x42765310u, 0x41076532u, 0x41765320u, 0x40765321u, 0x47653210u,
    0x32107654u, 0x32176540u, 0x32076541u, 0x32765410u, 0x31076542u, 0x31765420u, 0x30765421u, 0x37654210u,
    0x21076543u, 0x21765430u, 0x20765431u, 0x27654310u, 0x10765432u, 0x17654320u, 0x07654321u, 0x76543210u,
};
static const uint32_t sk_perm64[16] = {
    0x76543210u, 0x76543210u, 0x76541032u, 0x76543210u, 0x76321054u, 0x76325410u, 0x76105432u, 0x76543210u,
    0x54321076u, 0x54327610u, 0x54107632u, 0x54763210u, 0x32107654u, 0x32765410u, 0x10765432u, 0x76543210u,
};
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
#define SK_A_LANES 8
#define SK_A_BIAS _mm256_set1_epi32(INT32_MIN)
#define SK_A_SET1(x) _mm256_set1_epi32((int)(x))
/* Unsigned a < b as signed compares of the keys with their top bit flipped. */
#define SK_A_LT(a, b) ((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32((b), (a)))))
#define SK_A_PERM sk_perm32
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
#undef SK_A_LANES
#undef SK_A_BIAS
#undef SK_A_SET1
#undef SK_A_LT
#undef SK_A_PERM

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
#define SK_A_LANES 4
#define SK_A_BIAS _mm256_set1_epi64x(INT64_MIN)
#define SK_A_SET1(x) _mm256_set1_epi64x((long long)(x))
#define SK_A_LT(a, b) ((unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64((b), (a)))))
#define SK_A_PERM sk_perm64
#include "split_impl.h"

void tdm__split_sort2(void *keys, size_t ks, size_t n, const rs_out *o, int isa) {
  if (n < 2) return;
  if (ks == 4) split2_k32((uint32_t *)keys, n, o, isa);
  else split2_k64((uint64_t *)keys, n, o, isa);
}

#endif
