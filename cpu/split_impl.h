/*
 * split_impl.h: the keys-only split sort on two threads, written once and
 * instantiated for 32- and 64-bit keys by cpu/sort_split_cpu.c. Not a public
 * header and not self-contained: the includer includes sort_cpu.h and
 * defines
 *   SK_K          unsigned key-bits type (uint32_t or uint64_t)
 *   SK_SFX        suffix for the generated function names
 *   SK_MAP(k, o)  forward key map (keybits.h), SK_UNMAP(b, o) its inverse
 *   SK_VQ(a, n)   vqsort of SK_K bits (sort_vq.h)
 *   SK_V_*        the AVX-512 operations of this width (when SK_X86)
 *   SK_A_*        the AVX2 ones (when SK_X86)
 * The steps are described in sort_split_cpu.c.
 */

#define SK_CAT2(a, b) a##_##b
#define SK_CAT(a, b) SK_CAT2(a, b)
#define SK_FN(name) SK_CAT(name, SK_SFX)

/* Maps a[lo, hi) to sort bits in place (fwd) or back (!fwd). */
static void SK_FN(map_range)(SK_K *a, size_t lo, size_t hi, const rs_out *o, int fwd) {
  size_t i;
  if (fwd)
    for (i = lo; i < hi; i++) a[i] = SK_MAP(a[i], o);
  else
    for (i = lo; i < hi; i++) a[i] = SK_UNMAP(a[i], o);
}

/* Fills smp[0, S) with S keys of a[0, n), one at a pseudo-random place of
 * each of S equal strata, and sorts them. Stratified, so a sorted or
 * patterned input yields an even sample; deterministic, so a call's split
 * does not change from run to run. */
static void SK_FN(sample)(const SK_K *a, size_t n, SK_K *smp, size_t S) {
  size_t i;
  for (i = 0; i < S; i++) {
    size_t lo = sk_stratum(n, S, i), hi = sk_stratum(n, S, i + 1);
    smp[i] = a[lo + (size_t)(tdm__hash_mix((uint64_t)i) % (hi - lo))];
  }
  SK_VQ(smp, S);
}

/* The bound s of the split, from the sorted sample: keys below s go left.
 * s is the sample's median m or m + 1 (keys up to m left), whichever leaves
 * the sample nearer to halves, so a repeated median lands whole on one side.
 * Returns 0 (nothing goes left) when either choice leaves more than 7/8 of
 * the sample on one side. */
static SK_K SK_FN(pick)(const SK_K *smp, size_t S) {
  SK_K m = smp[S / 2];
  size_t below = S / 2, upto = S / 2, best, d0, d1;
  while (below > 0 && smp[below - 1] == m) below--;
  while (upto < S && smp[upto] == m) upto++;
  d0 = below > S / 2 ? below - S / 2 : S / 2 - below;
  d1 = upto > S / 2 ? upto - S / 2 : S / 2 - upto;
  if (m == (SK_K)~(SK_K)0) d1 = (size_t)-1; /* m + 1 would wrap */
  best = d0 <= d1 ? below : upto;
  if (best < S / 8 || best > S - S / 8) return 0;
  return d0 <= d1 ? m : (SK_K)(m + 1);
}

/* In-place partition of a[0, n): keys below s first. Returns their count.
 * Branch-free (a swap per key whose target advances only for a key below s):
 * random keys would mispredict half the branches of a two-pointer scheme. */
static size_t SK_FN(part_scalar)(SK_K *a, size_t n, SK_K s) {
  size_t i, w = 0;
  for (i = 0; i < n; i++) {
    SK_K k = a[i];
    a[i] = a[w];
    a[w] = k;
    w += k < s;
  }
  return w;
}

#if SK_X86
/* The end of a vector partition (below): the unread middle [rl, rr) and the
 * held keys buf[0, held) (the first and last vector, under three vectors in
 * all with the middle; buf has room for three) go to the free slots [wl,
 * wr), exactly as many. Returns the count of keys below s. */
static size_t SK_FN(part_finish)(SK_K *a, size_t rl, size_t rr, size_t wl, size_t wr, SK_K s, SK_K *buf,
                                 size_t held) {
  size_t m = rr - rl, i;
  memcpy(buf + held, a + rl, m * sizeof(SK_K));
  m += held;
  for (i = 0; i < m; i++) {
    SK_K k = buf[i];
    if (k < s) a[wl++] = k;
    else a[--wr] = k;
  }
  return wl;
}

/* Starts a vector partition (below) of a[0, n), n >= 3 vectors of lanes
 * keys: the first and last vector are held in buf (which has room for
 * three), which frees two vectors of slots, one at each end; *rl and *rr
 * are where the unread keys start and end. */
static inline void SK_FN(part_begin)(const SK_K *a, size_t n, size_t lanes, SK_K *buf, size_t *rl, size_t *rr) {
  memcpy(buf, a, lanes * sizeof(SK_K));
  memcpy(buf + lanes, a + n - lanes, lanes * sizeof(SK_K));
  *rl = lanes;
  *rr = n - lanes;
}

/* Where a vector partition (below) reads its next vector: from the side
 * with less free room, whose read end moves past it. */
static inline size_t SK_FN(part_next)(size_t *rl, size_t *rr, size_t wl, size_t wr, size_t lanes) {
  size_t at;
  if (*rl - wl <= wr - *rr) {
    at = *rl;
    *rl += lanes;
  } else {
    *rr -= lanes;
    at = *rr;
  }
  return at;
}

/* The same partition in AVX-512 compares. The first and last vector are
 * held aside, which leaves two vectors of free slots; each step reads
 * a vector from the side with less free room, and compress-stores its low
 * keys at the left write end and its high keys at the right one, each with a
 * mask of exactly their count. Free room stays two vectors in all, and the
 * side just read has at least one, so a store never reaches unread keys.
 * The keys left over (under three vectors) go through a small buffer. */
SK_AVX512 static size_t SK_FN(part_avx512)(SK_K *a, size_t n, SK_K s) {
  const __m512i sv = SK_V_SET1(s);
  SK_K buf[3 * SK_V_LANES];
  size_t rl, rr, wl = 0, wr = n;
  if (n < (size_t)3 * SK_V_LANES) return SK_FN(part_scalar)(a, n, s);
  SK_FN(part_begin)(a, n, SK_V_LANES, buf, &rl, &rr);
  while (rr - rl >= SK_V_LANES) {
    __m512i v = _mm512_loadu_si512((const void *)(a + SK_FN(part_next)(&rl, &rr, wl, wr, SK_V_LANES)));
    unsigned ml;
    int cl;
    ml = (unsigned)SK_V_LT(v, sv);
    cl = __builtin_popcount(ml);
    SK_V_STORE(a + wl, SK_V_PREFIX(cl), SK_V_COMPRESS(ml, v));
    wl += (size_t)cl;
    wr -= (size_t)(SK_V_LANES - cl);
    SK_V_STORE(a + wr, SK_V_PREFIX(SK_V_LANES - cl), SK_V_COMPRESS(~ml & SK_V_ALL, v));
  }
  return SK_FN(part_finish)(a, rl, rr, wl, wr, s, buf, (size_t)2 * SK_V_LANES);
}

/* The same partition in AVX2, which has no compress store: a table indexed
 * by the compare mask gives the permutation that puts a vector's low keys
 * first (in lane order) and its high keys after them, and the permuted
 * vector is stored whole twice, at the left write end and ending at the
 * right one. Each store writes a whole vector into free room (the room rule
 * is the AVX-512 loop's: the side just read has at least a vector free, and
 * so has the other, whose free room is the larger), and only the lanes
 * counted as written there are kept: the left end advances past the low
 * keys, the right end back over the high ones. */
SK_AVX2 static size_t SK_FN(part_avx2)(SK_K *a, size_t n, SK_K s) {
  const __m256i bias = SK_A_BIAS, sb = _mm256_xor_si256(SK_A_SET1(s), bias);
  const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  SK_K buf[3 * SK_A_LANES];
  size_t rl, rr, wl = 0, wr = n;
  if (n < (size_t)3 * SK_A_LANES) return SK_FN(part_scalar)(a, n, s);
  SK_FN(part_begin)(a, n, SK_A_LANES, buf, &rl, &rr);
  while (rr - rl >= SK_A_LANES) {
    __m256i v = _mm256_loadu_si256((const __m256i *)(a + SK_FN(part_next)(&rl, &rr, wl, wr, SK_A_LANES))), idx, p;
    unsigned ml;
    int cl;
    ml = SK_A_LT(_mm256_xor_si256(v, bias), sb);
    cl = __builtin_popcount(ml);
    /* Lane j's index is nibble j of the entry; the permute reads only the
     * low three bits of each lane, so the nibbles above need no masking. */
    idx = _mm256_srlv_epi32(_mm256_set1_epi32((int)SK_A_PERM[ml]), shifts);
    p = _mm256_permutevar8x32_epi32(v, idx);
    _mm256_storeu_si256((__m256i *)(a + wl), p);
    _mm256_storeu_si256((__m256i *)(a + wr - SK_A_LANES), p);
    wl += (size_t)cl;
    wr -= (size_t)(SK_A_LANES - cl);
  }
  return SK_FN(part_finish)(a, rl, rr, wl, wr, s, buf, (size_t)2 * SK_A_LANES);
}
#endif

/* The partition loop of the context's plan (tdm__keys_plan.part). */
static size_t SK_FN(part)(SK_K *a, size_t n, SK_K s, int isa) {
#if SK_X86
  if (isa == TDM__SPLIT_AVX512) return SK_FN(part_avx512)(a, n, s);
  if (isa == TDM__SPLIT_AVX2) return SK_FN(part_avx2)(a, n, s);
#endif
  (void)isa;
  return SK_FN(part_scalar)(a, n, s);
}

/* The whole sort of n keys on two threads; see sort_split_cpu.c. */
static void SK_FN(split2)(SK_K *a, size_t n, const rs_out *o, int isa) {
  SK_K smp[SK_SAMPLE_BYTES / sizeof(SK_K)], s;
  size_t h = n / 2, cut[2], L, lo, hi, moved, S;
  int t;
  if (!o->identity) TDM__PAR_FOR(2, t, 2, SK_FN(map_range)(a, rs_chunk(n, 2, t), rs_chunk(n, 2, t + 1), o, 1));
  S = sizeof smp / sizeof smp[0] < n ? sizeof smp / sizeof smp[0] : n;
  SK_FN(sample)(a, n, smp, S);
  s = SK_FN(pick)(smp, S);
  if (s == 0) {
    /* More than 7/8 of the sample holds one key: a split would load one
     * thread with nearly all keys, so one thread sorts them all. */
    SK_VQ(a, n);
    if (!o->identity) SK_FN(map_range)(a, 0, n, o, 0);
    return;
  }
  /* 1. Each thread partitions its half in place: [lo0 | hi0 | lo1 | hi1]. */
  TDM__PAR_FOR(2, t, 2, cut[t] = (t ? h : 0) + SK_FN(part)(a + (t ? h : 0), t ? n - h : h, s, isa));
  /* 2. Swap hi0 with lo1 where they overlap the other side's target: only
   * min(|hi0|, |lo1|) keys move, since order within a side does not matter. */
  L = cut[0] + (cut[1] - h);
  moved = h - cut[0] < cut[1] - h ? h - cut[0] : cut[1] - h;
  lo = cut[0];            /* high keys at [lo, lo + moved) move right */
  hi = cut[1] - moved;    /* low keys at [hi, hi + moved) move left */
  TDM__PAR_FOR(moved >= (size_t)2 * RS_MIN_PER_TASK ? 2 : 1, t, 2, {
    size_t b = rs_chunk(moved, 2, t), e = rs_chunk(moved, 2, t + 1);
    sk_swap(a + lo + b, a + hi + b, (e - b) * sizeof(SK_K));
  });
  /* 3. Each thread sorts one side in place and maps it back. */
  TDM__PAR_FOR(2, t, 2, {
    size_t b = t ? L : 0, e = t ? n : L;
    SK_VQ(a + b, e - b);
    if (!o->identity) SK_FN(map_range)(a, b, e, o, 0);
  });
}

#undef SK_CAT2
#undef SK_CAT
#undef SK_FN
