/*
 * radix_impl.h: the CPU radix sort, written once and instantiated by
 * sort_cpu.c for every (key width, value width) pair. Not a public header and
 * not self-contained: the includer defines
 *   RS_K      unsigned key-bits type (uint32_t or uint64_t)
 *   RS_V      value type moved alongside (uint32_t or uint64_t)
 *   RS_HAS_V  0 for keys only (RS_V is then a placeholder and never touched)
 *   RS_SFX    suffix for the generated function names
 *   RS_UNSORT(b, o)  inverse of the key transform (keybits.h)
 *
 * Algorithm (stable; keys are already mapped to order-preserving bits):
 *  1. sort_rec partitions by the most significant varying digit (MSD, 8 to 12
 *     bits wide, chosen so that buckets fit in the L2 cache), all threads
 *     scattering their own chunk, which keeps the pass stable.
 *  2. Each bucket is then sorted on its remaining low bits by local_sort, a
 *     least-significant-digit radix sort of up to 11-bit digits that runs
 *     entirely in cache; buckets are spread over threads. A bucket too large
 *     for the cache (skewed keys) recurses into sort_rec instead.
 *  3. Digits that are constant (globally, or within a bucket) are skipped: the
 *     top level works only on the bit range where keys differ, and every
 *     level checks its histogram for a digit that holds all elements.
 *  4. The last write of each element applies the inverse transform, so the
 *     output holds the caller's original bit patterns.
 * Main memory is read about three times and written twice, whatever the key
 * width; the remaining passes run in L2.
 */

#define RS_CAT2(a, b) a##_##b
#define RS_CAT(a, b) RS_CAT2(a, b)
#define RS_FN(name) RS_CAT(name, RS_SFX)
#define RS_KBITS ((int)(sizeof(RS_K) * 8))

/* Copies n elements from src to dst (which may be the same array), applying
 * the inverse key transform. */
static void RS_FN(final_copy)(const RS_K *src, const RS_V *srcv, RS_K *dst, RS_V *dstv, size_t n,
                              const rs_out *o) {
  size_t i;
  if (src == dst) {
    if (!o->identity)
      for (i = 0; i < n; i++) dst[i] = RS_UNSORT(dst[i], o);
    return;
  }
  if (o->identity) memcpy(dst, src, n * sizeof(RS_K));
  else
    for (i = 0; i < n; i++) dst[i] = RS_UNSORT(src[i], o);
  if (RS_HAS_V) memcpy(dstv, srcv, n * sizeof(RS_V));
}

/* Stable insertion sort on bits, for tiny buckets. */
static void RS_FN(insertion)(RS_K *a, RS_V *av, size_t n) {
  size_t i, j;
  for (i = 1; i < n; i++) {
    RS_K k = a[i];
    RS_V v = RS_HAS_V ? av[i] : 0;
    for (j = i; j > 0 && a[j - 1] > k; j--) {
      a[j] = a[j - 1];
      if (RS_HAS_V) av[j] = av[j - 1];
    }
    a[j] = k;
    if (RS_HAS_V) av[j] = v;
  }
}

/* One stable counting-sort pass on the digit at shift, src -> dst. off holds
 * the exclusive prefix sums of the digit histogram and is consumed. */
static void RS_FN(scatter)(const RS_K *src, const RS_V *srcv, RS_K *dst, RS_V *dstv, size_t n,
                           int shift, RS_K mask, uint32_t *off, const rs_out *o) {
  size_t i;
  if (o) {
    for (i = 0; i < n; i++) {
      RS_K b = src[i];
      uint32_t d = off[(b >> shift) & mask]++;
      dst[d] = RS_UNSORT(b, o);
      if (RS_HAS_V) dstv[d] = srcv[i];
    }
  } else {
    for (i = 0; i < n; i++) {
      RS_K b = src[i];
      uint32_t d = off[(b >> shift) & mask]++;
      dst[d] = b;
      if (RS_HAS_V) dstv[d] = srcv[i];
    }
  }
}

/* Sorts n (< 2^32) elements on bits [bit_lo, bit_hi), the bits above being
 * equal, serially and in cache. Data starts in src; the result, untransformed,
 * ends in alt when final_in_alt, else in src. */
static void RS_FN(local_sort)(RS_K *src, RS_V *srcv, RS_K *alt, RS_V *altv, size_t n, int bit_hi,
                              int bit_lo, int final_in_alt, const rs_out *o) {
  enum { MAXD = 6, MAXW = RS_LOCAL_DIGIT_BITS };
  uint32_t hist[MAXD][1u << MAXW];
  int p, dw, d, live[MAXD], nlive = 0, k;
  RS_K mask;
  RS_K *cur = src, *oth = alt, *want = final_in_alt ? alt : src;
  RS_V *curv = srcv, *othv = altv, *wantv = final_in_alt ? altv : srcv;
  size_t i;

  if (n <= RS_INSERTION_MAX || bit_hi <= bit_lo) {
    if (bit_hi > bit_lo) RS_FN(insertion)(src, srcv, n);
    RS_FN(final_copy)(src, srcv, want, wantv, n, o);
    return;
  }
  p = (bit_hi - bit_lo + MAXW - 1) / MAXW;
  dw = (bit_hi - bit_lo + p - 1) / p;
  mask = (RS_K)((1u << dw) - 1);
  memset(hist, 0, sizeof(hist[0]) * (size_t)p);
  for (i = 0; i < n; i++) {
    RS_K b = src[i];
    for (d = 0; d < p; d++) hist[d][(b >> (bit_lo + d * dw)) & mask]++;
  }
  for (d = 0; d < p; d++) {
    uint32_t first = hist[d][(src[0] >> (bit_lo + d * dw)) & mask];
    if (first != (uint32_t)n) live[nlive++] = d;
  }
  for (k = 0; k < nlive; k++) {
    uint32_t *h = hist[live[k]], sum = 0, c;
    RS_K *tk;
    RS_V *tv;
    size_t b;
    /* The last pass untransforms when it writes to where the result belongs. */
    int last_here = (k == nlive - 1) && oth == want;
    for (b = 0; b <= mask; b++) {
      c = h[b];
      h[b] = sum;
      sum += c;
    }
    RS_FN(scatter)(cur, curv, oth, othv, n, bit_lo + live[k] * dw, mask, h, last_here ? o : NULL);
    tk = cur; cur = oth; oth = tk;
    tv = curv; curv = othv; othv = tv;
    if (last_here) return;
  }
  RS_FN(final_copy)(cur, curv, want, wantv, n, o);
}

/* Width of the MSD digit for n elements: the smallest in [8, 12] whose
 * average bucket fits local_max. */
static int RS_FN(msd_width)(size_t n, size_t local_max) {
  int w = 8;
  while (w < RS_MSD_MAX_BITS && (n >> w) > local_max) w++;
  return w;
}

/* Sorts n elements on bits [bit_lo, bit_hi) (higher bits equal) using all
 * threads for the partition. Data starts in src; the result, untransformed,
 * ends in alt when final_in_alt, else in src. depth indexes the per-level
 * bucket-boundary array of the workspace. */
static void RS_FN(sort_rec)(rs_work *w, RS_K *src, RS_V *srcv, RS_K *alt, RS_V *altv, size_t n,
                            int bit_hi, int bit_lo, int final_in_alt, const rs_out *o, int depth) {
  for (;;) {
    int width, shift, P, t;
    size_t B, b, *cnt, *bstart, run;
    RS_K mask;
    int constant = 0;

    if (n <= w->local_max || bit_hi <= bit_lo) {
      RS_FN(local_sort)(src, srcv, alt, altv, n, bit_hi, bit_lo, final_in_alt, o);
      return;
    }
    width = RS_FN(msd_width)(n, w->local_max);
    if (width > bit_hi - bit_lo) width = bit_hi - bit_lo;
    shift = bit_hi - width;
    B = (size_t)1 << width;
    mask = (RS_K)(B - 1);
    P = rs_tasks(w, n);
    cnt = w->cnt;
    bstart = w->bstart + (size_t)depth * (RS_MSD_MAX_B + 1);

#pragma omp parallel for num_threads(w->threads) schedule(static, 1) if (P > 1)
    for (t = 0; t < P; t++) {
      size_t lo = rs_chunk(n, P, t), hi = rs_chunk(n, P, t + 1), i;
      size_t *c = cnt + (size_t)t * B;
      memset(c, 0, B * sizeof *c);
      for (i = lo; i < hi; i++) c[(src[i] >> shift) & mask]++;
    }
    /* Bucket totals, and the constant-digit check. */
    run = 0;
    for (b = 0; b < B; b++) {
      size_t tot = 0;
      for (t = 0; t < P; t++) {
        size_t c = cnt[(size_t)t * B + b];
        cnt[(size_t)t * B + b] = run + tot; /* task t's first slot in bucket b */
        tot += c;
      }
      bstart[b] = run;
      run += tot;
      if (tot == n) constant = 1;
    }
    bstart[B] = run;
    if (constant) { /* every element has the same digit: nothing to move */
      bit_hi = shift;
      continue;
    }

#pragma omp parallel for num_threads(w->threads) schedule(static, 1) if (P > 1)
    for (t = 0; t < P; t++) {
      size_t lo = rs_chunk(n, P, t), hi = rs_chunk(n, P, t + 1), i;
      size_t *off = cnt + (size_t)t * B;
      for (i = lo; i < hi; i++) {
        RS_K k = src[i];
        size_t d = off[(k >> shift) & mask]++;
        alt[d] = k;
        if (RS_HAS_V) altv[d] = srcv[i];
      }
    }

    /* Oversized buckets (skewed keys) get all threads, one after another. */
    for (b = 0; b < B; b++) {
      size_t s = bstart[b], m = bstart[b + 1] - s;
      if (m > w->local_max)
        RS_FN(sort_rec)(w, alt + s, RS_HAS_V ? altv + s : NULL, src + s, RS_HAS_V ? srcv + s : NULL, m,
                        shift, bit_lo, !final_in_alt, o, depth + 1);
    }
    {
      long bb;
#pragma omp parallel for num_threads(w->threads) schedule(dynamic, 1) if (P > 1)
      for (bb = 0; bb < (long)B; bb++) {
        size_t s = bstart[bb], m = bstart[bb + 1] - s;
        if (m > 0 && m <= w->local_max)
          RS_FN(local_sort)(alt + s, RS_HAS_V ? altv + s : NULL, src + s, RS_HAS_V ? srcv + s : NULL, m,
                            shift, bit_lo, !final_in_alt, o);
      }
    }
    return;
  }
}

/* Reduces the bits of n elements to (OR, AND) so that OR ^ AND marks the bits
 * where keys differ. */
static void RS_FN(varying)(const rs_work *w, const RS_K *a, size_t n, RS_K *or_out, RS_K *and_out) {
  int P = rs_tasks(w, n), t;
  RS_K ors[RS_MAX_TASKS], ands[RS_MAX_TASKS], o_ = 0, a_ = (RS_K)~(RS_K)0;
#pragma omp parallel for num_threads(w->threads) schedule(static, 1) if (P > 1)
  for (t = 0; t < P; t++) {
    size_t lo = rs_chunk(n, P, t), hi = rs_chunk(n, P, t + 1), i;
    RS_K x = 0, y = (RS_K)~(RS_K)0;
    for (i = lo; i < hi; i++) {
      x |= a[i];
      y &= a[i];
    }
    ors[t] = x;
    ands[t] = y;
  }
  for (t = 0; t < P; t++) {
    o_ |= ors[t];
    a_ &= ands[t];
  }
  *or_out = o_;
  *and_out = a_;
}

/* Sorts the bits in keys (values alongside) given the range of bits where
 * they differ; tmp/tmpv are scratch of n elements. The result is
 * untransformed into keys/values. */
static void RS_FN(sort_bits)(rs_work *w, RS_K *keys, RS_V *values, RS_K *tmp, RS_V *tmpv, size_t n,
                             const rs_out *o) {
  RS_K ors, ands, diff;
  int hi, lo;
  RS_FN(varying)(w, keys, n, &ors, &ands);
  diff = ors ^ ands;
  if (diff == 0) { /* all keys equal: already sorted */
    RS_FN(final_copy)(keys, values, keys, values, n, o);
    return;
  }
  hi = RS_KBITS - (sizeof(RS_K) == 8 ? __builtin_clzll((unsigned long long)diff)
                                     : __builtin_clz((unsigned)diff));
  lo = sizeof(RS_K) == 8 ? __builtin_ctzll((unsigned long long)diff) : __builtin_ctz((unsigned)diff);
  RS_FN(sort_rec)(w, keys, values, tmp, tmpv, n, hi, lo, 0, o, 0);
}

#undef RS_CAT2
#undef RS_CAT
#undef RS_FN
#undef RS_KBITS
