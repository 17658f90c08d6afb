/*
 * radix_impl.h: the CPU radix sort, written once and instantiated for every
 * (key width, value width) pair by one unit each (cpu/sort_cpu_k32.c ...
 * sort_cpu_k64v64.c), which defines its table tdm__rs_<sfx> (sort_cpu.h).
 * Not a public header and not self-contained: the includer includes
 * sort_cpu.h and defines
 *   RS_K      unsigned key-bits type (uint32_t or uint64_t)
 *   RS_V      value type moved alongside (uint32_t or uint64_t)
 *   RS_HAS_V  0 for keys only (RS_V is then a placeholder and never touched)
 *   RS_SFX    suffix for the generated function names
 *   RS_UNSORT(b, o)  inverse of the key transform (keybits.h)
 *   RS_VQ_SORT(a, n) vectorised in-place sort of RS_K bits (sort_vq.h), used
 *                    by keys-only instantiations when TANDEM_HAVE_HWY is set
 *
 * Algorithm (stable; keys are mapped to order-preserving bits first):
 *  1. One read pass finds the bits where keys differ (OR ^ AND over all keys)
 *     and, speculatively, counts the top digit.
 *  2. sort_rec partitions on the most significant varying digit (MSD, 8 to 11
 *     bits, chosen so buckets fit in L2), every thread scattering its own
 *     chunk, which keeps the pass stable. The scatter goes through per-bucket
 *     write-combining buffers flushed a cache line at a time with
 *     non-temporal stores, so the pass streams to memory instead of paying a
 *     read-for-ownership miss per element.
 *  3. Each bucket is sorted on its remaining low bits by local_sort, in cache,
 *     into a thread-private buffer (the bucket's own region is the second
 *     array), then streamed to its final place; buckets are spread over
 *     threads. cache_sort makes one MSD counting pass and one stable scatter
 *     on a digit of up to 12 bits, after which the sub-buckets hold a few
 *     elements each and are finished by rank_sort (branch-free) or, when
 *     larger, the same way one level down; ranges of at most 24 bits and
 *     deeper levels use LSD passes of up to 8-bit digits instead, each
 *     counting the next digit while scattering the current one. Keys-only
 *     sorts built with Highway finish each bucket with vqsort instead
 *     (sort_vq.h): without values, stability is invisible.
 *  4. Constant digits are skipped: the top level works only on the bit range
 *     where keys differ, every partition level checks its histogram for a
 *     digit that holds all elements, and cache_sort narrows each bucket's
 *     range to the bits where its keys differ (OR ^ AND again). One key
 *     holding most of an input or of an oversized bucket (a hot key) is split
 *     off by one stable three-way pass (hot_split) instead of being
 *     partitioned again on every digit. A bucket more than twice the cache target
 *     (skewed keys) recurses into sort_rec with all threads; one between the
 *     target and twice it is still sorted by one thread, so that buckets just
 *     over the target keep every thread busy.
 *  5. The last write of each element applies the inverse transform, so the
 *     output holds the caller's original bit patterns.
 * Main memory sees about two reads and two writes per element whatever the key
 * width; the remaining passes run in cache.
 */

#define RS_CAT2(a, b) a##_##b
#define RS_CAT(a, b) RS_CAT2(a, b)
#define RS_FN(name) RS_CAT(name, RS_SFX)
#define RS_KBITS ((int)(sizeof(RS_K) * 8))
/* Offset of the values in a private buffer: after the keys, 64-byte aligned. */
#define RS_PRIV_VOFF(w) (((w)->bucket_max * sizeof(RS_K) + 63) & ~(size_t)63)
/* Elements per write-combining line: one cache line of the wider array. */
#define RS_E rs_line_elems(sizeof(RS_K), RS_HAS_V ? sizeof(RS_V) : 0)

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

/* Offers n sorted elements in T (bound for D) to o->sink; streams to D those
 * it does not take, and the last it takes. Returns 0 when it took none (D is
 * then not written). */
static int RS_FN(to_sink)(RS_K *D, RS_V *Dv, const RS_K *T, const RS_V *Tv, size_t n, const rs_out *o) {
  uintptr_t d = (uintptr_t)D, out = (uintptr_t)o->out;
  size_t at, a, b;
  if (d < out || (d - out) % sizeof(RS_K) || n > o->out_n || (d - out) / sizeof(RS_K) > o->out_n - n) return 0;
  at = (d - out) / sizeof(RS_K);
  a = o->sink->take(o->sink->arg, at, T, Tv, n, &b);
  if (a >= b || b > n) return 0;
  b--; /* the last pair it took still goes out: whoever reads D next starts from the one before its first */
  tdm__stream_copy(D, T, a * sizeof(RS_K));
  tdm__stream_copy(Dv, Tv, a * sizeof(RS_V));
  tdm__stream_copy(D + b, T + b, (n - b) * sizeof(RS_K));
  tdm__stream_copy(Dv + b, Tv + b, (n - b) * sizeof(RS_V));
  tdm__stream_fence();
  return 1;
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

/* Stable sort of m <= RS_RANK_MAX elements by rank: element i goes to the
 * number of elements before it in the stable order (smaller keys, and equal
 * keys earlier in the input). The compares are data-independent, so unlike
 * insertion sort this mispredicts no branch per element, which is what an
 * insertion sort of a few random keys mostly spends its time on. */
static void RS_FN(rank_sort)(RS_K *a, RS_V *av, size_t m) {
  RS_K k[RS_RANK_MAX];
  RS_V v[RS_RANK_MAX];
  size_t i, j;
  for (i = 0; i < m; i++) {
    k[i] = a[i];
    v[i] = RS_HAS_V ? av[i] : 0;
  }
  for (i = 0; i < m; i++) {
    RS_K ki = k[i];
    size_t r = 0;
    for (j = 0; j < i; j++) r += k[j] <= ki;
    for (j = i + 1; j < m; j++) r += k[j] < ki;
    a[r] = ki;
    if (RS_HAS_V) av[r] = v[i];
  }
}

/* One stable counting-sort pass on the digit at shift, src -> dst, with the
 * inverse transform when o is non-NULL. off holds the exclusive prefix sums of
 * the digit's histogram and is consumed. When next is non-NULL it receives the
 * histogram of the digit at next_shift (the next pass's digit). */
static void RS_FN(scatter)(const RS_K *src, const RS_V *srcv, RS_K *dst, RS_V *dstv, size_t n, int shift,
                           RS_K mask, uint32_t *off, uint32_t *next, int next_shift, const rs_out *o) {
  size_t i;
  if (o) {
    for (i = 0; i < n; i++) {
      RS_K b = src[i];
      uint32_t d = off[(b >> shift) & mask]++;
      dst[d] = RS_UNSORT(b, o);
      if (RS_HAS_V) dstv[d] = srcv[i];
    }
  } else if (next) {
    for (i = 0; i < n; i++) {
      RS_K b = src[i];
      uint32_t d = off[(b >> shift) & mask]++;
      next[(b >> next_shift) & mask]++;
      dst[d] = b;
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

/* LSD passes on bits [bit_lo, bit_hi) between cur and oth (n elements each,
 * both in cache), digits of up to RS_LOCAL_DIGIT_BITS bits, each pass counting
 * the next digit while it scatters and constant digits skipped. The result
 * ends in oth when in_oth, else in cur. */
static void RS_FN(lsd_passes)(RS_K *cur, RS_V *curv, RS_K *oth, RS_V *othv, size_t n, int bit_hi, int bit_lo,
                              int in_oth) {
  uint32_t hist[2][1u << RS_LOCAL_DIGIT_BITS];
  int p = (bit_hi - bit_lo + RS_LOCAL_DIGIT_BITS - 1) / RS_LOCAL_DIGIT_BITS, dw, d, cur_h = 0, at_oth = 0;
  RS_K mask;
  size_t i;
  dw = (bit_hi - bit_lo + p - 1) / p;
  mask = (RS_K)((1u << dw) - 1);
  memset(hist[0], 0, ((size_t)mask + 1) * sizeof(uint32_t));
  for (i = 0; i < n; i++) hist[0][(cur[i] >> bit_lo) & mask]++;
  for (d = 0; d < p; d++) {
    uint32_t *h = hist[cur_h], *nh = NULL, sum = 0, c;
    int shift = bit_lo + d * dw, last = (d == p - 1);
    RS_K *tmp;
    RS_V *tmpv;
    size_t b;
    if (h[(cur[0] >> shift) & mask] == (uint32_t)n) { /* constant digit: skip */
      if (!last) {
        memset(hist[cur_h ^ 1], 0, ((size_t)mask + 1) * sizeof(uint32_t));
        for (i = 0; i < n; i++) hist[cur_h ^ 1][(cur[i] >> (shift + dw)) & mask]++;
        cur_h ^= 1;
      }
      continue;
    }
    for (b = 0; b <= mask; b++) {
      c = h[b];
      h[b] = sum;
      sum += c;
    }
    if (!last) {
      nh = hist[cur_h ^ 1];
      memset(nh, 0, ((size_t)mask + 1) * sizeof(uint32_t));
    }
    RS_FN(scatter)(cur, curv, oth, othv, n, shift, mask, h, nh, shift + dw, NULL);
    tmp = cur, cur = oth, oth = tmp;
    tmpv = curv, curv = othv, othv = tmpv;
    at_oth ^= 1;
    cur_h ^= 1;
  }
  if (at_oth != in_oth) { /* cur holds the result, oth is where it belongs */
    memcpy(oth, cur, n * sizeof(RS_K));
    if (RS_HAS_V) memcpy(othv, curv, n * sizeof(RS_V));
  }
}

/* Width of an in-cache MSD digit for n elements: the narrowest (up to
 * RS_CACHE_MSD_BITS) whose sub-buckets average at most RS_CACHE_LEAF
 * elements, so that after one pass nearly all of them are insertion-sorted. */
static int RS_FN(cache_width)(size_t n) {
  int w = 1;
  while (w < RS_CACHE_MSD_BITS && (n >> w) > RS_CACHE_LEAF) w++;
  return w;
}

/* Histogram of the digit (k >> shift) & mask of n keys into h, with the OR
 * and AND of the keys. */
static void RS_FN(count_range)(const RS_K *a, size_t n, int shift, RS_K mask, uint32_t *h, RS_K *or_out,
                               RS_K *and_out) {
  RS_K x = 0, y = (RS_K)~(RS_K)0;
  size_t i;
  memset(h, 0, ((size_t)mask + 1) * sizeof(uint32_t));
  for (i = 0; i < n; i++) {
    RS_K k = a[i];
    x |= k;
    y &= k;
    h[(k >> shift) & mask]++;
  }
  *or_out = x;
  *and_out = y;
}

/* Sorts n elements of cur on bits [bit_lo, bit_hi) (the bits above equal), in
 * cache, with oth a free region of n elements; the result ends in oth when
 * in_oth, else in cur. MSD: one counting pass (which also narrows the bit
 * range to where these keys differ) and one stable scatter on a digit wide
 * enough that the sub-buckets hold a few elements each, then each sub-bucket
 * is insertion-sorted or, when larger, sorted the same way one level down.
 * Random keys need one scatter per bucket where LSD needs one per 8 bits of
 * the range (7 for 64-bit keys): the bits below the digit only order elements
 * within a sub-bucket, which rank_sort does for a few of them. A range of at
 * most RS_LSD_MAX_BITS bits (32-bit keys, mostly) takes the LSD passes: up to
 * three scatters cost less than one scatter and the rank sorts. From depth
 * RS_CACHE_MSD_DEPTH on (skewed keys) the LSD passes take over too, so no
 * input costs more than a few passes more than LSD alone would. */
static void RS_FN(cache_sort)(RS_K *cur, RS_V *curv, RS_K *oth, RS_V *othv, size_t n, int bit_hi, int bit_lo,
                              int in_oth, int depth) {
  uint32_t h[1u << RS_CACHE_MSD_BITS];
  RS_K x, y, diff, mask;
  int w, shift;
  size_t b, s, e;
  if (n <= RS_INSERTION_MAX || bit_hi <= bit_lo) {
    if (bit_hi > bit_lo) RS_FN(insertion)(cur, curv, n);
    if (in_oth) {
      memcpy(oth, cur, n * sizeof(RS_K));
      if (RS_HAS_V) memcpy(othv, curv, n * sizeof(RS_V));
    }
    return;
  }
  if (depth >= RS_CACHE_MSD_DEPTH || bit_hi - bit_lo <= RS_LSD_MAX_BITS) {
    RS_FN(lsd_passes)(cur, curv, oth, othv, n, bit_hi, bit_lo, in_oth);
    return;
  }
  w = RS_FN(cache_width)(n);
  if (w > bit_hi - bit_lo) w = bit_hi - bit_lo;
  shift = bit_hi - w;
  mask = (RS_K)((1u << w) - 1);
  RS_FN(count_range)(cur, n, shift, mask, h, &x, &y);
  diff = x ^ y; /* only bits in [bit_lo, bit_hi) can differ */
  if (!diff) {  /* all keys equal: already in order */
    RS_FN(cache_sort)(cur, curv, oth, othv, n, bit_lo, bit_lo, in_oth, depth);
    return;
  }
  bit_lo = sizeof(RS_K) == 8 ? __builtin_ctzll((unsigned long long)diff) : __builtin_ctz((unsigned)diff);
  if ((diff >> shift) == 0) { /* the digit is constant: again, on the range where the keys differ */
    bit_hi = RS_KBITS - (sizeof(RS_K) == 8 ? __builtin_clzll((unsigned long long)diff) : __builtin_clz((unsigned)diff));
    RS_FN(cache_sort)(cur, curv, oth, othv, n, bit_hi, bit_lo, in_oth, depth);
    return;
  }
  for (b = 0, s = 0; b <= mask; b++) {
    e = s + h[b];
    h[b] = (uint32_t)s;
    s = e;
  }
  RS_FN(scatter)(cur, curv, oth, othv, n, shift, mask, h, NULL, 0, NULL);
  /* h[b] is now the end of sub-bucket b in oth; each goes back to cur unless
   * the result belongs in oth. */
  for (b = 0, s = 0; b <= mask; b++, s = e) {
    size_t m;
    e = h[b];
    m = e - s;
    if (m == 0) continue;
    if (m <= RS_INSERTION_MAX) {
      if (m > 1 && shift > bit_lo) {
        if (m <= RS_RANK_MAX) RS_FN(rank_sort)(oth + s, RS_HAS_V ? othv + s : NULL, m);
        else RS_FN(insertion)(oth + s, RS_HAS_V ? othv + s : NULL, m);
      }
      if (!in_oth) {
        memcpy(cur + s, oth + s, m * sizeof(RS_K));
        if (RS_HAS_V) memcpy(curv + s, othv + s, m * sizeof(RS_V));
      }
    } else
      RS_FN(cache_sort)(oth + s, RS_HAS_V ? othv + s : NULL, cur + s, RS_HAS_V ? curv + s : NULL, m, shift, bit_lo,
                        !in_oth, depth + 1);
  }
}

/* Sorts n (<= bucket_max) elements on bits [bit_lo, bit_hi), the bits above
 * being equal, serially and in cache. Data starts in A; the result,
 * untransformed, ends in D (D == A allowed); A's content is dead afterwards.
 * T is the calling thread's private buffer. The elements are sorted into T
 * (A serving as the second array), then go to D with streaming stores,
 * because D's lines are usually not in cache and a scatter into them would
 * read each line from memory first. */
static void RS_FN(local_sort)(RS_K *A, RS_V *Av, RS_K *D, RS_V *Dv, RS_K *T, RS_V *Tv, size_t n, int bit_hi,
                              int bit_lo, const rs_out *o) {
  size_t i;

#if TANDEM_HAVE_HWY
  /* Keys only: the order among equal bits is invisible, so a vectorised
   * quicksort (sort_vq.h) may replace the radix passes; it sorts A in place. */
  if (!RS_HAS_V && n > RS_INSERTION_MAX && bit_hi > bit_lo) {
    RS_VQ_SORT(A, n);
    if (D == A) {
      RS_FN(final_copy)(A, Av, D, Dv, n, o);
      return;
    }
    if (!o->identity)
      for (i = 0; i < n; i++) A[i] = RS_UNSORT(A[i], o);
    tdm__stream_copy(D, A, n * sizeof(RS_K));
    tdm__stream_fence();
    return;
  }
#endif
  if (n <= RS_INSERTION_MAX || bit_hi <= bit_lo) {
    if (bit_hi > bit_lo) RS_FN(insertion)(A, Av, n);
    RS_FN(final_copy)(A, Av, D, Dv, n, o);
    return;
  }
  RS_FN(cache_sort)(A, Av, T, Tv, n, bit_hi, bit_lo, 1, 0);
  if (!o->identity)
    for (i = 0; i < n; i++) T[i] = RS_UNSORT(T[i], o);
  if (RS_HAS_V && o->sink && RS_FN(to_sink)(D, Dv, T, Tv, n, o)) return;
  tdm__stream_copy(D, T, n * sizeof(RS_K));
  if (RS_HAS_V) tdm__stream_copy(Dv, Tv, n * sizeof(RS_V));
  tdm__stream_fence();
}

/* Width of the MSD digit for n elements: the smallest in [8, max] whose
 * average bucket fits local_max. */
static int RS_FN(msd_width)(size_t n, size_t local_max) {
  int w = 8;
  while (w < RS_MSD_MAX_BITS && (n >> w) > local_max) w++;
  return w;
}

/* Counts, per task, the digit at shift: cnt[t * B + d]. */
static void RS_FN(count_digit)(const rs_work *w, const RS_K *src, size_t n, int P, int shift, size_t B) {
  int t;
  RS_K mask = (RS_K)(B - 1);
  TDM__PAR_FOR(P, t, P, {
    size_t lo = rs_chunk(n, P, t), hi = rs_chunk(n, P, t + 1), i;
    size_t *c = w->cnt + (size_t)t * B;
    memset(c, 0, B * sizeof *c);
    for (i = lo; i < hi; i++) c[(src[i] >> shift) & mask]++;
  });
}

/* Flushes the write-combining line of bucket d: slots [head, fill) of the
 * buffer go to elements line + head ... of dst. A whole, aligned line goes
 * out with non-temporal stores. */
static inline void RS_FN(wc_flush)(RS_K *dst, RS_V *dstv, const RS_K *kb, const RS_V *vb, size_t line,
                                   uint32_t head, uint32_t fill, int nt) {
  if (head == 0 && fill == RS_E && nt) {
    tdm__stream_line(dst + line, kb, RS_E * sizeof(RS_K));
    if (RS_HAS_V) tdm__stream_line(dstv + line, vb, RS_E * sizeof(RS_V));
  } else {
    memcpy(dst + line + head, kb + head, (fill - head) * sizeof(RS_K));
    if (RS_HAS_V) memcpy(dstv + line + head, vb + head, (fill - head) * sizeof(RS_V));
  }
}

/* The partition pass: task t moves its chunk of src into alt at the offsets
 * in cnt (task t's first slot per bucket), through write-combining buffers. */
static void RS_FN(partition)(const rs_work *w, const RS_K *src, const RS_V *srcv, RS_K *alt, RS_V *altv,
                             size_t n, int P, int shift, size_t B) {
  int t;
  RS_K mask = (RS_K)(B - 1);
  int nt = ((uintptr_t)alt % (RS_E * sizeof(RS_K)) == 0) &&
           (!RS_HAS_V || (uintptr_t)altv % (RS_E * sizeof(RS_V)) == 0);
  TDM__PAR_FOR(P, t, P, {
    size_t lo = rs_chunk(n, P, t), hi = rs_chunk(n, P, t + 1), i, b;
    size_t *line = w->cnt + (size_t)t * B; /* becomes the line start of each bucket */
    char *wc = w->wc + (size_t)t * w->wc_stride;
    RS_K *kbuf = (RS_K *)wc;
    RS_V *vbuf = (RS_V *)(wc + B * RS_E * sizeof(RS_K));
    uint32_t *fill = w->fill + (size_t)t * 2 * RS_MSD_MAX_B, *head = fill + RS_MSD_MAX_B;
    for (b = 0; b < B; b++) {
      size_t off = line[b];
      head[b] = fill[b] = (uint32_t)(off % RS_E);
      line[b] = off - off % RS_E;
    }
    for (i = lo; i < hi; i++) {
      RS_K k = src[i];
      size_t d = (size_t)((k >> shift) & mask);
      uint32_t f = fill[d];
      kbuf[d * RS_E + f] = k;
      if (RS_HAS_V) vbuf[d * RS_E + f] = srcv[i];
      if (++f == RS_E) {
        RS_FN(wc_flush)(alt, altv, kbuf + d * RS_E, vbuf + d * RS_E, line[d], head[d], f, nt);
        line[d] += RS_E;
        head[d] = 0;
        f = 0;
      }
      fill[d] = f;
    }
    for (b = 0; b < B; b++)
      if (fill[b] > head[b]) RS_FN(wc_flush)(alt, altv, kbuf + b * RS_E, vbuf + b * RS_E, line[b], head[b], fill[b], 0);
    tdm__stream_fence();
  });
}

/* ---- a dominant key ------------------------------------------------------ */

/* One key holding most of the input (a hot key: 90 % of the rows) lands in
 * one oversized bucket at every MSD level, so its elements would be
 * partitioned again on every digit, each time out of cache. When a sample
 * says one key holds most of the elements, one stable three-way split
 * (less, equal, greater) puts the equal run in its final place and only the
 * rest is sorted. The sample only decides whether to count; the count
 * decides whether to split; the output is the one stable order either way. */
#define RS_HOT_SAMPLE 64
#define RS_HOT_VOTES 48 /* sampled elements equal to the candidate */

/* The sample's majority candidate (Boyer-Moore vote) when it holds at least
 * RS_HOT_VOTES of RS_HOT_SAMPLE elements evenly spread over a[0..n). */
static int RS_FN(hot_key)(const RS_K *a, size_t n, RS_K *key) {
  RS_K s[RS_HOT_SAMPLE], cand = 0;
  size_t step = n / RS_HOT_SAMPLE;
  int i, votes = 0, hits = 0;
  for (i = 0; i < RS_HOT_SAMPLE; i++) s[i] = a[(size_t)i * step];
  for (i = 0; i < RS_HOT_SAMPLE; i++) {
    if (votes == 0) cand = s[i];
    votes += s[i] == cand ? 1 : -1;
  }
  for (i = 0; i < RS_HOT_SAMPLE; i++) hits += s[i] == cand;
  *key = cand;
  return hits >= RS_HOT_VOTES;
}

/* Elements of a[lo..hi) below k and equal to k. */
static void RS_FN(hot_count)(const RS_K *a, size_t lo, size_t hi, RS_K k, size_t *lt, size_t *eq) {
  size_t i, l = 0, e = 0;
  for (i = lo; i < hi; i++) {
    l += a[i] < k;
    e += a[i] == k;
  }
  *lt = l;
  *eq = e;
}

/* Stable three-way scatter of src[lo..hi) into dst: elements below k from
 * dst[at_lt], equal from dst[at_eq], above from dst[at_gt]. */
static void RS_FN(hot_scatter)(const RS_K *src, const RS_V *srcv, RS_K *dst, RS_V *dstv, size_t lo, size_t hi,
                               RS_K k, size_t at_lt, size_t at_eq, size_t at_gt) {
  size_t i;
  for (i = lo; i < hi; i++) {
    RS_K x = src[i];
    size_t at = x < k ? at_lt++ : x == k ? at_eq++ : at_gt++;
    dst[at] = x;
    if (RS_HAS_V) dstv[at] = srcv[i];
  }
}

static void RS_FN(sort_rec)(rs_work *w, const RS_K *in, const RS_V *inv, RS_K *src, RS_V *srcv, RS_K *alt,
                            RS_V *altv, size_t n, int bit_hi, int bit_lo, int final_in_alt, const rs_out *o, int depth,
                            int counted);

/* Sorts src[0..n) as sort_rec would (same arguments; the parts below and
 * above the key recurse at depth) when one key holds at least half of it,
 * and returns 1; returns 0, having changed nothing, otherwise. */
static int RS_FN(hot_split)(rs_work *w, const RS_K *in, const RS_V *inv, RS_K *src, RS_V *srcv, RS_K *alt,
                            RS_V *altv, size_t n, int bit_hi, int bit_lo, int final_in_alt, const rs_out *o,
                            int depth) {
  size_t lt[RS_MAX_TASKS], eq[RS_MAX_TASKS], at_lt[RS_MAX_TASKS], at_eq[RS_MAX_TASKS], at_gt[RS_MAX_TASKS];
  size_t nlt = 0, neq = 0, a, b, c, rest;
  RS_K k;
  int P, t;
  const RS_K *rd = in ? in : src;
  const RS_V *rdv = in ? inv : srcv;
  if (n < RS_HOT_SAMPLE || !RS_FN(hot_key)(rd, n, &k)) return 0;
  P = rs_tasks(w, n);
  TDM__PAR_FOR(P, t, P, RS_FN(hot_count)(rd, rs_chunk(n, P, t), rs_chunk(n, P, t + 1), k, &lt[t], &eq[t]));
  for (t = 0; t < P; t++) {
    nlt += lt[t];
    neq += eq[t];
  }
  if (neq < n / 2) return 0; /* the sample misled: one read pass lost */
  for (a = 0, b = nlt, c = nlt + neq, t = 0; t < P; t++) {
    at_lt[t] = a;
    at_eq[t] = b;
    at_gt[t] = c;
    a += lt[t];
    b += eq[t];
    c += rs_chunk(n, P, t + 1) - rs_chunk(n, P, t) - lt[t] - eq[t];
  }
  TDM__PAR_FOR(P, t, P,
               RS_FN(hot_scatter)(rd, rdv, alt, altv, rs_chunk(n, P, t), rs_chunk(n, P, t + 1), k, at_lt[t],
                                  at_eq[t], at_gt[t]));
  /* Everything is in alt now. The equal run is sorted: to its final place. */
  TDM__PAR_FOR(P, t, P, {
    size_t s = nlt + rs_chunk(neq, P, t), m = rs_chunk(neq, P, t + 1) - rs_chunk(neq, P, t);
    RS_FN(final_copy)(alt + s, RS_HAS_V ? altv + s : NULL, final_in_alt ? alt + s : src + s,
                      RS_HAS_V ? (final_in_alt ? altv + s : srcv + s) : NULL, m, o);
  });
  /* The other two parts sort from alt; their result belongs where ours does. */
  rest = nlt + neq;
  if (nlt)
    RS_FN(sort_rec)(w, NULL, NULL, alt, altv, src, srcv, nlt, bit_hi, bit_lo, !final_in_alt, o, depth, 0);
  if (n > rest)
    RS_FN(sort_rec)(w, NULL, NULL, alt + rest, RS_HAS_V ? altv + rest : NULL, src + rest,
                    RS_HAS_V ? srcv + rest : NULL, n - rest, bit_hi, bit_lo, !final_in_alt, o, depth, 0);
  return 1;
}

/* Sorts n elements on bits [bit_lo, bit_hi) (higher bits equal) using all
 * threads for the partition. Data starts in src; the result, untransformed,
 * ends in alt when final_in_alt, else in src. depth indexes the per-level
 * bucket-boundary array of the workspace; counted means w->cnt already holds
 * the per-task counts of the digit this level will use (from the first pass). */
static void RS_FN(sort_rec)(rs_work *w, const RS_K *in, const RS_V *inv, RS_K *src, RS_V *srcv, RS_K *alt,
                            RS_V *altv, size_t n, int bit_hi, int bit_lo, int final_in_alt, const rs_out *o, int depth,
                            int counted) {
  for (;;) {
    int width, shift, P, t;
    size_t B, b, *cnt = w->cnt, *bstart, run;
    int constant = 0;
    long bb;

    if (n <= w->local_max || bit_hi <= bit_lo) {
      RS_K *T = (RS_K *)w->priv;
      if (in) RS_FN(final_copy)(in, inv, src, srcv, n, o); /* in is set only with the identity map */
      RS_V *Tv = (RS_V *)(w->priv + RS_PRIV_VOFF(w));
      RS_FN(local_sort)(src, srcv, final_in_alt ? alt : src, final_in_alt ? altv : srcv, T, Tv, n, bit_hi, bit_lo,
                        o);
      return;
    }
    width = RS_FN(msd_width)(n, w->local_max);
    if (width > bit_hi - bit_lo) width = bit_hi - bit_lo;
    shift = bit_hi - width;
    B = (size_t)1 << width;
    P = rs_tasks(w, n);
    bstart = w->bstart + (size_t)depth * (RS_MSD_MAX_B + 1);

    if (!counted) RS_FN(count_digit)(w, in ? in : src, n, P, shift, B);
    counted = 0;
    /* Bucket totals, each task's first slot per bucket, constant check. */
    run = 0;
    for (b = 0; b < B; b++) {
      size_t tot = 0;
      for (t = 0; t < P; t++) {
        size_t c = cnt[(size_t)t * B + b];
        cnt[(size_t)t * B + b] = run + tot;
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
    RS_FN(partition)(w, in ? in : src, in ? inv : srcv, alt, altv, n, P, shift, B);

    /* Oversized buckets (skewed keys) get all threads, one after another. */
    for (b = 0; b < B; b++) {
      size_t s = bstart[b], m = bstart[b + 1] - s;
      if (m > w->bucket_max &&
          !RS_FN(hot_split)(w, NULL, NULL, alt + s, RS_HAS_V ? altv + s : NULL, src + s, RS_HAS_V ? srcv + s : NULL,
                            m, shift, bit_lo, !final_in_alt, o, depth + 1))
        RS_FN(sort_rec)(w, NULL, NULL, alt + s, RS_HAS_V ? altv + s : NULL, src + s, RS_HAS_V ? srcv + s : NULL, m,
                        shift, bit_lo, !final_in_alt, o, depth + 1, 0);
    }
    TDM__PAR_FOR_DYN(P > 1 ? w->threads : 1, 1, bb, (long)B, {
      size_t s = bstart[bb], m = bstart[bb + 1] - s;
      char *priv = w->priv + (size_t)rs_thread_num() * w->priv_stride;
      RS_K *T = (RS_K *)priv;
      RS_V *Tv = (RS_V *)(priv + RS_PRIV_VOFF(w));
      RS_K *a = alt + s, *x = src + s;
      RS_V *av = RS_HAS_V ? altv + s : NULL, *xv = RS_HAS_V ? srcv + s : NULL;
      if (m == 0 || m > w->bucket_max) continue;
      /* The bucket is in alt; the result belongs in alt or in src. */
      if (final_in_alt) RS_FN(local_sort)(a, av, a, av, T, Tv, m, shift, bit_lo, o);
      else RS_FN(local_sort)(a, av, x, xv, T, Tv, m, shift, bit_lo, o);
    });
    return;
  }
}

/* Task t's part of first_pass: its chunk of P, counted into its row of
 * w->cnt when B > 0, with the OR and AND of its bits. */
static void RS_FN(first_chunk)(const rs_work *w, const RS_K *a, RS_K *dst, size_t n, int P, int t, int shift,
                               size_t B, RS_K *or_out, RS_K *and_out, const rs_out *o) {
  size_t lo = rs_chunk(n, P, t), hi = rs_chunk(n, P, t + 1), i;
  size_t *c = w->cnt + (size_t)t * B;
  RS_K x = 0, y = (RS_K)~(RS_K)0;
  if (!B) { /* nobody reads the counts: the OR and AND only */
    for (i = lo; i < hi; i++) {
      RS_K b = a[i];
      if (!o->identity) {
        b = (RS_K)(sizeof(RS_K) == 4 ? tdm__sortbits32((uint32_t)b, o->kind, o->desc)
                                     : tdm__sortbits64((uint64_t)b, o->kind, o->desc));
        dst[i] = b;
      }
      x |= b;
      y &= b;
    }
  } else if (o->identity) {
    memset(c, 0, B * sizeof *c);
    for (i = lo; i < hi; i++) {
      RS_K b = a[i];
      x |= b;
      y &= b;
      c[b >> shift]++;
    }
  } else {
    memset(c, 0, B * sizeof *c);
    for (i = lo; i < hi; i++) {
      RS_K b = (RS_K)(sizeof(RS_K) == 4 ? tdm__sortbits32((uint32_t)a[i], o->kind, o->desc)
                                        : tdm__sortbits64((uint64_t)a[i], o->kind, o->desc));
      dst[i] = b;
      x |= b;
      y &= b;
      c[b >> shift]++;
    }
  }
  *or_out = x;
  *and_out = y;
}

/* The first pass over the caller's keys a: maps them to sort bits into dst
 * (unless the map is the identity, when dst is never written; a and dst
 * are the same array but for the sort of a copy), reduces OR and AND of the
 * bits, and counts
 * the digit of width W at the top of the key per task into w->cnt (W = 0:
 * no count, for inputs that sort_rec sorts in cache at once). */
static void RS_FN(first_pass)(const rs_work *w, const RS_K *a, RS_K *dst, size_t n, int W, RS_K *or_out,
                              RS_K *and_out, const rs_out *o) {
  int P = rs_tasks(w, n), t, shift = RS_KBITS - W;
  size_t B = W ? (size_t)1 << W : 0;
  RS_K ors[RS_MAX_TASKS], ands[RS_MAX_TASKS], o_ = 0, a_ = (RS_K)~(RS_K)0;
  TDM__PAR_FOR(P, t, P, RS_FN(first_chunk)(w, a, dst, n, P, t, shift, B, &ors[t], &ands[t], o));
  for (t = 0; t < P; t++) {
    o_ |= ors[t];
    a_ &= ands[t];
  }
  *or_out = o_;
  *and_out = a_;
}

/* Sorts keys (caller's raw keys, or sort bits when o is the identity) with
 * values alongside; tmp/tmpv are scratch of n elements. The result is
 * untransformed into keys/values. With in non-NULL (only with the identity
 * map and n > local_max: sort_cpu.c copies other inputs first) the data is
 * read from in / inv, left untouched, and keys / values receive the sorted
 * copy: the first count and partition (or hot-key split) read the input
 * where it lies, so the copy costs no pass of its own. */
static void RS_FN(sort_bits)(rs_work *w, const RS_K *in, const RS_V *inv, RS_K *keys, RS_V *values, RS_K *tmp,
                             RS_V *tmpv, size_t n, const rs_out *o) {
  RS_K ors, ands, diff;
  int hi, lo, W = RS_FN(msd_width)(n, w->local_max);
  /* With the identity map the first pass only reads (the input). */
  RS_FN(first_pass)(w, in ? in : keys, keys, n, n > w->local_max ? W : 0, &ors, &ands, o);
  diff = ors ^ ands;
  if (diff == 0) { /* all keys equal: already sorted */
    RS_FN(final_copy)(in ? in : keys, in ? inv : values, keys, values, n, o);
    return;
  }
  hi = RS_KBITS - (sizeof(RS_K) == 8 ? __builtin_clzll((unsigned long long)diff) : __builtin_clz((unsigned)diff));
  lo = sizeof(RS_K) == 8 ? __builtin_ctzll((unsigned long long)diff) : __builtin_ctz((unsigned)diff);
  if (n > w->bucket_max && RS_FN(hot_split)(w, in, inv, keys, values, tmp, tmpv, n, hi, lo, 0, o, 0)) return;
  /* The speculative count is the first level's when the top bit varies and
   * the digit lies within the varying range. */
  RS_FN(sort_rec)(w, in, inv, keys, values, tmp, tmpv, n, hi, lo, 0, o, 0,
                  hi == RS_KBITS && n > w->local_max && W <= hi - lo);
}

static void RS_FN(sort_bits_untyped)(rs_work *w, const void *in, const void *inv, void *keys, void *values, void *tmp,
                                     void *tmpv, size_t n, const rs_out *o) {
  RS_FN(sort_bits)(w, (const RS_K *)in, (const RS_V *)inv, (RS_K *)keys, (RS_V *)values, (RS_K *)tmp, (RS_V *)tmpv,
                   n, o);
}

const tdm__rs_fns RS_CAT(tdm__rs, RS_SFX) = {.sort_bits = RS_FN(sort_bits_untyped)};

#undef RS_CAT2
#undef RS_CAT
#undef RS_FN
#undef RS_KBITS
#undef RS_E
#undef RS_PRIV_VOFF
