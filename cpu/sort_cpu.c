/*
 * sort_cpu.c: the CPU backend's sort, argsort and sort_pairs.
 *
 * Keys are mapped to order-preserving unsigned bits (keybits.h) in place,
 * sorted by the radix sort of radix_impl.h, and mapped back by the last write
 * of each element. All memory is taken before the first byte of the caller's
 * arrays changes, so a failure (out of memory) leaves them as they were, and
 * nothing after that point can fail. When Highway is built in, pairs and
 * argsorts of up to RS_SMALL_MAX elements take small_sort instead (one
 * vqsort of (bits, index) keys), and keys-only sorts follow the per-width
 * rule of the context's plan (sort_plan_cpu.c: one vqsort of the whole array or the two-thread
 * split sort of sort_split_cpu.c, which take no memory, or the radix
 * partition).
 */
#include "sort_cpu.h"

/* The instantiation for ks-byte keys and vs-byte values (0: keys only). */
static const tdm__rs_fns *rs_fns(size_t ks, size_t vs) {
  static const tdm__rs_fns *const by_width[2][3] = {
      {[0] = &tdm__rs_k32, [1] = &tdm__rs_k32v32, [2] = &tdm__rs_k32v64},
      {[0] = &tdm__rs_k64, [1] = &tdm__rs_k64v32, [2] = &tdm__rs_k64v64},
  };
  return by_width[ks == 8][vs / 4];
}

/* Layout of one call's scratch block. */
typedef struct rs_layout {
  size_t bits, tmp, tmpv, cnt, bstart, fill, wc, priv, total;
  size_t wc_stride, priv_stride, local_max, bucket_max;
  int threads;
} rs_layout;

/* Threads a sort of n elements uses: asked once per call, since the answer
 * follows the load of the machine. */
static int rs_threads(const tdm_ctx *ctx, size_t n) {
  int t = tdm__threads_for(ctx, n, RS_MIN_PER_TASK);
  return t > RS_MAX_TASKS ? RS_MAX_TASKS : t;
}

/* Plans the scratch of a sort of n elements of ks-byte keys and vs-byte
 * values (0: none) on threads threads; bits_bytes is an extra key array
 * (argsort's key copy). */
static rs_layout rs_plan(int threads, size_t n, size_t ks, size_t vs, size_t bits_bytes) {
  rs_layout l;
  size_t off = 0, e = rs_line_elems(ks, vs), part;
  size_t t = (size_t)threads;
  l.threads = (int)t;
  l.local_max = RS_CACHE_BUDGET / (3 * (ks + vs));
  /* With several threads, an input that would fit one thread's cache is
   * still partitioned so that its buckets spread over the threads. */
  if (t > 1 && l.local_max > n / 2) l.local_max = n / 2;
  if (l.local_max > n) l.local_max = n;
  l.wc_stride = ((size_t)RS_MSD_MAX_B * e * (ks + vs) + 63) & ~(size_t)63;
  l.bucket_max = 2 * l.local_max;
  l.priv_stride = (l.bucket_max * (ks + vs) + 64 + 63) & ~(size_t)63;
  /* An input local_sort takes at once (one thread, n <= local_max) never
   * partitions: without the partition tables (some 300 KiB, fixed) a small
   * sort asks for a few KiB, which the heap serves without a mapping. */
  part = n > l.local_max;
  l.bits = tdm__carve(&off, bits_bytes);
  l.tmp = tdm__carve(&off, n * ks);
  l.tmpv = tdm__carve(&off, n * vs);
  l.cnt = tdm__carve(&off, part ? t * RS_MSD_MAX_B * sizeof(size_t) : 0);
  l.bstart = tdm__carve(&off, part ? (size_t)RS_MAX_DEPTH * (RS_MSD_MAX_B + 1) * sizeof(size_t) : 0);
  l.fill = tdm__carve(&off, part ? t * 2 * RS_MSD_MAX_B * sizeof(uint32_t) : 0);
  l.wc = tdm__carve(&off, part ? t * l.wc_stride : 0);
  l.priv = tdm__carve(&off, t * l.priv_stride);
  l.total = off;
  return l;
}

static void rs_work_init(rs_work *w, const rs_layout *l, char *base) {
  w->threads = l->threads;
  w->local_max = l->local_max;
  w->bucket_max = l->bucket_max;
  w->cnt = (size_t *)(base + l->cnt);
  w->bstart = (size_t *)(base + l->bstart);
  w->fill = (uint32_t *)(base + l->fill);
  w->wc = base + l->wc;
  w->wc_stride = l->wc_stride;
  w->priv = base + l->priv;
  w->priv_stride = l->priv_stride;
}

#if TANDEM_HAVE_HWY
/* Pairs and argsorts of at most this many elements take small_sort. */
#define RS_SMALL_MAX ((size_t)4096)

/* Scratch of small_sort: the wide keys, then a copy of the values. */
static size_t small_plan(size_t n, size_t ks, size_t vs, size_t *vcopy_at) {
  size_t off = 0;
  (void)tdm__carve(&off, n * 2 * ks);
  *vcopy_at = tdm__carve(&off, n * vs);
  return off;
}

/* A stable sort of a few thousand (key, value) pairs, or an argsort: each
 * key's sort bits and its index form one key twice as wide ((bits << 32) |
 * i for 32-bit keys; high word bits, low word i for 64-bit keys), which
 * vqsort orders. No two wide keys are equal and the index breaks ties, so
 * the order is the stable one and the output the radix passes' bytes. At
 * this size the radix passes spend most of their time on the fixed cost of
 * each digit (a 256-entry histogram per pass, up to 8 passes for 64-bit
 * keys). keys_out receives the sorted keys (sort_pairs) or is NULL; vals
 * (vs bytes each) is permuted in place; perm (is bytes each) receives the
 * indices (argsort) or is NULL. */
static void small_sort(const void *keys, void *keys_out, size_t ks, int kind, int desc, void *vals, size_t vs,
                       void *perm, size_t is, size_t n, char *base) {
  size_t vcopy_at, i;
  uint64_t *wide = (uint64_t *)base;
  char *vcopy;
  (void)small_plan(n, ks, vs, &vcopy_at);
  vcopy = base + vcopy_at;
  if (ks == 4) {
    for (i = 0; i < n; i++)
      wide[i] = (uint64_t)tdm__sortbits32(((const uint32_t *)keys)[i], kind, desc) << 32 | (uint64_t)i;
    tdm__vq_sort_u64(wide, n);
  } else {
    for (i = 0; i < n; i++) {
      wide[2 * i] = (uint64_t)i;
      wide[2 * i + 1] = tdm__sortbits64(((const uint64_t *)keys)[i], kind, desc);
    }
    tdm__vq_sort_u128(wide, n);
  }
  if (vs) memcpy(vcopy, vals, n * vs);
  for (i = 0; i < n; i++) {
    size_t at = ks == 4 ? (size_t)(uint32_t)wide[i] : (size_t)wide[2 * i];
    if (keys_out) {
      if (ks == 4) ((uint32_t *)keys_out)[i] = tdm__unsortbits32((uint32_t)(wide[i] >> 32), kind, desc);
      else ((uint64_t *)keys_out)[i] = tdm__unsortbits64(wide[2 * i + 1], kind, desc);
    }
    if (vs == 4) ((uint32_t *)vals)[i] = ((const uint32_t *)vcopy)[at];
    else if (vs == 8) ((uint64_t *)vals)[i] = ((const uint64_t *)vcopy)[at];
    if (perm) {
      if (is == 4) ((uint32_t *)perm)[i] = (uint32_t)at;
      else ((uint64_t *)perm)[i] = (uint64_t)at;
    }
  }
}
#endif

/* ---- keys only: which algorithm serves which call ------------------------ */

int tdm__keys_force_split; /* test hook: sort_cpu.h */

/* A keys-only sort's output does not depend on how equal keys are ordered
 * (equal sort bits are equal keys), so any sort may serve it. The rule, per
 * key width, is the context's plan (sort_plan_cpu.c, chosen once at its
 * creation for this machine) and nothing else asks again: on one thread, one
 * vqsort of the whole array (the peer itself: nothing sorts keys alone
 * faster here); from part_min keys on, on two threads the plan's algorithm
 * `two` (the in-place split sort of sort_split_cpu.c, or the radix
 * partition with vqsorted buckets), the radix partition from radix_min
 * keys on, and on three or more the radix partition
 * (the split is two-way); below part_min one vqsort, where the forks weigh
 * more than the second thread wins. The figures behind the plans are in
 * docs/design.md's sort section. Built without Highway, every keys-only sort
 * takes the radix path. */
#if TANDEM_HAVE_HWY
/* The plan of ctx (a context of another backend: this machine's). */
static const tdm__keys_plan *rs_keys_plan(const tdm_ctx *ctx) {
  return ctx->keys_plan ? ctx->keys_plan : tdm__keys_plan_pick();
}

/* The algorithm of a keys-only sort of n ks-byte keys on threads threads,
 * by plan p, on a context of ctx_threads. */
static tdm__keys_alg rs_keys_pick(const tdm__keys_plan *p, size_t ks, int threads, int ctx_threads, size_t n) {
  const tdm__keys_rule *r = &p->rule[ks == 8];
  if (__atomic_load_n(&tdm__keys_force_split, __ATOMIC_RELAXED) && ctx_threads >= 2) return TDM__KEYS_SPLIT;
  if (threads <= 1 || n < r->part_min) return TDM__KEYS_WHOLE;
  return threads == 2 && n < r->radix_min ? r->two : TDM__KEYS_RADIX;
}

/* One vqsort of the whole array, in place, through the key map (keybits.h)
 * when it is not the identity. Takes no memory, so it cannot fail. */
static void rs_keys_vq(void *keys, size_t ks, size_t n, const rs_out *o) {
  size_t i;
  if (ks == 4) {
    uint32_t *a = (uint32_t *)keys;
    if (!o->identity)
      for (i = 0; i < n; i++) a[i] = tdm__sortbits32(a[i], o->kind, o->desc);
    tdm__vq_sort_u32(a, n);
    if (!o->identity)
      for (i = 0; i < n; i++) a[i] = tdm__unsortbits32(a[i], o->kind, o->desc);
  } else {
    uint64_t *a = (uint64_t *)keys;
    if (!o->identity)
      for (i = 0; i < n; i++) a[i] = tdm__sortbits64(a[i], o->kind, o->desc);
    tdm__vq_sort_u64(a, n);
    if (!o->identity)
      for (i = 0; i < n; i++) a[i] = tdm__unsortbits64(a[i], o->kind, o->desc);
  }
}
#endif

/* Copies the input of a sort_copy into its output, in parallel (the copy is
 * the first touch of fresh pages, and the kernel zeroes each page in the
 * thread that touches it), for the paths that sort in place. */
static void copy_input(tdm_ctx *ctx, const void *in_keys, void *keys, size_t ks, const void *in_values, void *values,
                       size_t vs, size_t n) {
  long c, parts = tdm__threads_for(ctx, n, (size_t)1 << 18);
  TDM__PAR_FOR(parts, c, parts, {
    size_t s0 = n / (size_t)parts * (size_t)c, s1 = c + 1 == parts ? n : n / (size_t)parts * (size_t)(c + 1);
    memcpy((char *)keys + s0 * ks, (const char *)in_keys + s0 * ks, (s1 - s0) * ks);
    if (vs) memcpy((char *)values + s0 * vs, (const char *)in_values + s0 * vs, (s1 - s0) * vs);
  });
}

/* tdm__cpu_sort, and tdm__cpu_sort_copy when in_keys is non-NULL. */
static tdm_status sort_any(tdm_ctx *ctx, tdm_type key_type, const void *in_keys, void *keys, tdm_type value_type,
                           const void *in_values, void *values, size_t n, int desc, const tdm__sort_sink *sink) {
  size_t ks = tdm_type_size(key_type), vs = values ? tdm_type_size(value_type) : 0;
  rs_out o;
  rs_layout l;
  rs_work w;
  tdm__scratch s;
  char *base;
  tdm_status st;
  int threads;

  if (n < 2) { /* sorted already; the paths below assume elements to move */
    if (in_keys && n == 1) copy_input(ctx, in_keys, keys, ks, in_values, values, vs, n);
    return TDM_OK;
  }
  o.kind = tdm__key_kind(key_type);
  o.desc = desc;
  o.identity = (o.kind == TDM_KIND_UNSIGNED && !desc);
  o.sink = sink;
  o.out = keys;
  o.out_n = n;
  /* n * (ks + vs) cannot overflow: the caller checked both arrays exist. */
#if TANDEM_HAVE_HWY
  /* Only the radix path reads a separate input itself; the others sort a
   * copy in place. */
  if (in_keys && (!vs || n <= RS_SMALL_MAX)) {
    copy_input(ctx, in_keys, keys, ks, in_values, values, vs, n);
    in_keys = in_values = NULL;
  }
  if (vs && n <= RS_SMALL_MAX) {
    size_t vcopy_at;
    st = tdm__host_scratch(ctx, small_plan(n, ks, vs, &vcopy_at), &s);
    if (st != TDM_OK) return st;
    small_sort(keys, keys, ks, o.kind, desc, values, vs, NULL, 0, n, (char *)s.ptr);
    tdm__host_scratch_release(ctx, &s);
    return TDM_OK;
  }
#endif
  threads = rs_threads(ctx, n);
#if TANDEM_HAVE_HWY
  if (!vs) {
    const tdm__keys_plan *p = rs_keys_plan(ctx);
    tdm__keys_alg alg = rs_keys_pick(p, ks, threads, ctx->threads, n);
    if (alg == TDM__KEYS_WHOLE) {
      rs_keys_vq(keys, ks, n, &o);
      return TDM_OK;
    }
    if (alg == TDM__KEYS_SPLIT) {
      tdm__split_sort2(keys, ks, n, &o, (int)p->part);
      return TDM_OK;
    }
  }
#endif
  l = rs_plan(threads, n, ks, vs, 0);
  st = tdm__host_scratch(ctx, l.total, &s);
  if (st != TDM_OK) return st;
  base = (char *)s.ptr;
  rs_work_init(&w, &l, base);
  /* The radix sort reads a separate input itself only where that saves the
   * copy: the identity map (no bits to write back) and more than it sorts in
   * cache at once. */
  if (in_keys && (!o.identity || n <= w.local_max)) {
    copy_input(ctx, in_keys, keys, ks, in_values, values, vs, n);
    in_keys = in_values = NULL;
  }
  rs_fns(ks, vs)->sort_bits(&w, in_keys, vs ? in_values : NULL, keys, vs ? values : NULL, base + l.tmp,
                            vs ? base + l.tmpv : NULL, n, &o);
  tdm__host_scratch_release(ctx, &s);
  return TDM_OK;
}

tdm_status tdm__cpu_sort(tdm_ctx *ctx, tdm_type key_type, void *keys, tdm_type value_type, void *values,
                         size_t n, int desc) {
  return sort_any(ctx, key_type, NULL, keys, value_type, NULL, values, n, desc, NULL);
}

tdm_status tdm__cpu_sort_copy(tdm_ctx *ctx, tdm_type key_type, const void *in_keys, void *keys,
                              tdm_type value_type, const void *in_values, void *values, size_t n, int desc,
                              const tdm__sort_sink *sink) {
  return sort_any(ctx, key_type, in_keys, keys, value_type, in_values, values, n, desc, sink);
}

/* Elements [lo, hi) of arg_fill. */
static void arg_fill_range(const void *keys, void *kb, void *perm, size_t ks, size_t is, size_t lo, size_t hi,
                           int kind, int desc) {
  size_t i;
  for (i = lo; i < hi; i++) {
    if (ks == 4) ((uint32_t *)kb)[i] = tdm__sortbits32(((const uint32_t *)keys)[i], kind, desc);
    else ((uint64_t *)kb)[i] = tdm__sortbits64(((const uint64_t *)keys)[i], kind, desc);
    if (is == 4) ((uint32_t *)perm)[i] = (uint32_t)i;
    else ((uint64_t *)perm)[i] = (uint64_t)i;
  }
}

/* Fills kb with the sort bits of keys and perm with 0, 1, ..., n - 1. */
static void arg_fill(const rs_work *w, const void *keys, void *kb, void *perm, size_t ks, size_t is, size_t n,
                     int kind, int desc) {
  int P = rs_tasks(w, n), t;
  TDM__PAR_FOR(P, t, P, arg_fill_range(keys, kb, perm, ks, is, rs_chunk(n, P, t), rs_chunk(n, P, t + 1), kind, desc));
}

tdm_status tdm__cpu_argsort(tdm_ctx *ctx, tdm_type key_type, const void *keys, tdm_type index_type,
                            void *perm_out, size_t n, int desc) {
  size_t ks = tdm_type_size(key_type), is = tdm_type_size(index_type);
  int kind = tdm__key_kind(key_type);
  rs_out o = {TDM_KIND_UNSIGNED, 0, 1, NULL, NULL, 0}; /* the bit copy is scratch: no inverse needed */
  rs_layout l;
  rs_work w;
  tdm__scratch s;
  char *base;
  tdm_status st;

#if TANDEM_HAVE_HWY
  if (n <= RS_SMALL_MAX) {
    size_t vcopy_at;
    st = tdm__host_scratch(ctx, small_plan(n, ks, 0, &vcopy_at), &s);
    if (st != TDM_OK) return st;
    small_sort(keys, NULL, ks, kind, desc, NULL, 0, perm_out, is, n, (char *)s.ptr);
    tdm__host_scratch_release(ctx, &s);
    return TDM_OK;
  }
#endif
  l = rs_plan(rs_threads(ctx, n), n, ks, is, n * ks);
  st = tdm__host_scratch(ctx, l.total, &s);
  if (st != TDM_OK) return st;
  base = (char *)s.ptr;
  rs_work_init(&w, &l, base);

  arg_fill(&w, keys, base + l.bits, perm_out, ks, is, n, kind, desc);
  rs_fns(ks, is)->sort_bits(&w, NULL, NULL, base + l.bits, perm_out, base + l.tmp, base + l.tmpv, n, &o);
  tdm__host_scratch_release(ctx, &s);
  return TDM_OK;
}

const tdm__sort_ops tdm__sort_cpu_ops = {.sort = tdm__cpu_sort, .argsort = tdm__cpu_argsort};
