/*
 * sort_cpu.c: the CPU backend's sort, argsort and sort_pairs.
 *
 * Keys are mapped to order-preserving unsigned bits (keybits.h) in place,
 * sorted by the radix sort of radix_impl.h, and mapped back by the last write
 * of each element. All memory is taken before the first byte of the caller's
 * arrays changes, so a failure (out of memory) leaves them as they were, and
 * nothing after that point can fail. Pairs and argsorts of up to
 * RS_SMALL_MAX elements take small_sort instead (one vqsort of (bits,
 * index) keys) when Highway is built in.
 */
#include <omp.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "cpu.h"
#include "sort_vq.h"

/* How the final write maps bits back to keys. */
typedef struct rs_out {
  int kind;     /* TDM_KIND_* */
  int desc;     /* bits were complemented for a descending sort */
  int identity; /* the map is the identity: plain copies suffice */
} rs_out;

enum {
  RS_MAX_TASKS = 256,         /* upper bound on threads used by one call */
  RS_MSD_MAX_BITS = 11,       /* widest partition digit */
  RS_MSD_MAX_B = 1 << 11,     /* buckets of the widest partition digit */
  RS_MAX_DEPTH = 9,           /* partition levels: each takes >= 8 of 64 bits */
  RS_INSERTION_MAX = 24,      /* buckets this small use insertion sort */
  RS_LOCAL_DIGIT_BITS = 8,     /* widest digit of the in-cache LSD passes */
  RS_MIN_PER_TASK = 1 << 15,  /* elements per thread worth a fork */
};
/* Bytes of the three arrays (bucket, destination, private buffer) a bucket
 * may occupy while local_sort works on it: most of a 2 MiB L2. */
#define RS_CACHE_BUDGET ((size_t)3 << 19)

/* Per-call workspace, allocated before anything is modified. */
typedef struct rs_work {
  int threads;        /* threads this call uses */
  size_t local_max;   /* bucket size the partition aims for (fits in cache) */
  size_t bucket_max;  /* largest bucket sorted by one thread: 2 x local_max */
  size_t *cnt;        /* threads x RS_MSD_MAX_B counters / offsets */
  size_t *bstart;     /* RS_MAX_DEPTH x (RS_MSD_MAX_B + 1) bucket boundaries */
  uint32_t *fill;     /* threads x 2 x RS_MSD_MAX_B write-combining fill/head */
  char *wc;           /* threads x wc_stride write-combining lines */
  size_t wc_stride;
  char *priv;         /* threads x priv_stride private local_sort buffers */
  size_t priv_stride;
} rs_work;

static int rs_tasks(const rs_work *w, size_t n) {
  size_t by_n = n / RS_MIN_PER_TASK;
  if (by_n < 1) by_n = 1;
  return (int)((size_t)w->threads < by_n ? (size_t)w->threads : by_n);
}

/* Start of task t's chunk when n elements are split into P chunks. */
static size_t rs_chunk(size_t n, int P, int t) {
  return n / (size_t)P * (size_t)t + n % (size_t)P * (size_t)t / (size_t)P;
}

/* Elements per write-combining line: one cache line of the wider array. */
static inline size_t rs_line_elems(size_t ks, size_t vs) { return 64 / (vs > ks ? vs : ks); }

static int rs_thread_num(void) { return omp_get_thread_num(); }

/* Writes one 64-byte-aligned line (or half line) with non-temporal stores:
 * a partition pass writes every line exactly once, so fetching the lines into
 * the cache first (read-for-ownership) would only double the traffic. */
static inline void rs_stream_line(void *dst, const void *src, size_t bytes) {
#if defined(__SSE2__)
  size_t i;
  for (i = 0; i < bytes; i += 16)
    _mm_stream_si128((__m128i *)((char *)dst + i), _mm_load_si128((const __m128i *)((const char *)src + i)));
#else
  memcpy(dst, src, bytes);
#endif
}

/* Copies bytes to a destination that is not in cache, streaming the aligned
 * middle so no line is read for ownership first. */
static inline void rs_stream_copy(void *dst, const void *src, size_t bytes) {
#if defined(__SSE2__)
  char *d = (char *)dst;
  const char *s = (const char *)src;
  size_t head = (16 - ((uintptr_t)d & 15)) & 15, i;
  if (bytes < 64) {
    memcpy(d, s, bytes);
    return;
  }
  memcpy(d, s, head);
  for (i = head; i + 16 <= bytes; i += 16)
    _mm_stream_si128((__m128i *)(d + i), _mm_loadu_si128((const __m128i *)(s + i)));
  memcpy(d + i, s + i, bytes - i);
#else
  memcpy(dst, src, bytes);
#endif
}

static inline void rs_stream_fence(void) {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

#define RS_UNSORT32(b, o) tdm__unsortbits32((b), (o)->kind, (o)->desc)
#define RS_UNSORT64(b, o) tdm__unsortbits64((b), (o)->kind, (o)->desc)

#define RS_K uint32_t
#define RS_V uint32_t
#define RS_UNSORT RS_UNSORT32
#define RS_VQ_SORT tdm__vq_sort_u32
#define RS_HAS_V 0
#define RS_SFX k32
#include "radix_impl.h"
#undef RS_HAS_V
#undef RS_SFX
#define RS_HAS_V 1
#define RS_SFX k32v32
#include "radix_impl.h"
#undef RS_V
#undef RS_SFX
#define RS_V uint64_t
#define RS_SFX k32v64
#include "radix_impl.h"
#undef RS_K
#undef RS_V
#undef RS_UNSORT
#undef RS_HAS_V
#undef RS_SFX

#define RS_K uint64_t
#define RS_V uint64_t
#define RS_UNSORT RS_UNSORT64
#undef RS_VQ_SORT
#define RS_VQ_SORT tdm__vq_sort_u64
#define RS_HAS_V 0
#define RS_SFX k64
#include "radix_impl.h"
#undef RS_HAS_V
#undef RS_SFX
#define RS_HAS_V 1
#define RS_SFX k64v64
#include "radix_impl.h"
#undef RS_V
#undef RS_SFX
#define RS_V uint32_t
#define RS_SFX k64v32
#include "radix_impl.h"
#undef RS_K
#undef RS_V
#undef RS_UNSORT
#undef RS_HAS_V
#undef RS_SFX
#undef RS_VQ_SORT

/* Layout of one call's scratch block. */
typedef struct rs_layout {
  size_t bits, tmp, tmpv, cnt, bstart, fill, wc, priv, total;
  size_t wc_stride, priv_stride, local_max, bucket_max;
  int threads;
} rs_layout;

/* Plans the scratch of a sort of n elements of ks-byte keys and vs-byte
 * values (0: none); bits_bytes is an extra key array (argsort's key copy). */
static rs_layout rs_plan(const tdm_ctx *ctx, size_t n, size_t ks, size_t vs, size_t bits_bytes) {
  rs_layout l;
  size_t off = 0, e = rs_line_elems(ks, vs), part;
  size_t t = (size_t)tdm__threads_for(ctx, n, RS_MIN_PER_TASK);
  if (t > RS_MAX_TASKS) t = RS_MAX_TASKS;
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

tdm_status tdm__cpu_sort(tdm_ctx *ctx, tdm_type key_type, void *keys, tdm_type value_type, void *values,
                         size_t n, int desc) {
  size_t ks = tdm_type_size(key_type), vs = values ? tdm_type_size(value_type) : 0;
  rs_out o;
  rs_layout l;
  rs_work w;
  tdm__scratch s;
  char *base;
  tdm_status st;

  o.kind = tdm__key_kind(key_type);
  o.desc = desc;
  o.identity = (o.kind == TDM_KIND_UNSIGNED && !desc);
  /* n * (ks + vs) cannot overflow: the caller checked both arrays exist. */
#if TANDEM_HAVE_HWY
  if (vs && n <= RS_SMALL_MAX) {
    size_t vcopy_at;
    st = tdm__host_scratch(ctx, small_plan(n, ks, vs, &vcopy_at), &s);
    if (st != TDM_OK) return st;
    small_sort(keys, keys, ks, o.kind, desc, values, vs, NULL, 0, n, (char *)s.ptr);
    tdm__host_scratch_release(ctx, &s);
    return TDM_OK;
  }
#endif
  l = rs_plan(ctx, n, ks, vs, 0);
  st = tdm__host_scratch(ctx, l.total, &s);
  if (st != TDM_OK) return st;
  base = (char *)s.ptr;
  rs_work_init(&w, &l, base);
  if (ks == 4) {
    uint32_t *k = (uint32_t *)keys, *t = (uint32_t *)(base + l.tmp);
    if (!vs) sort_bits_k32(&w, k, NULL, t, NULL, n, &o);
    else if (vs == 4) sort_bits_k32v32(&w, k, (uint32_t *)values, t, (uint32_t *)(base + l.tmpv), n, &o);
    else sort_bits_k32v64(&w, k, (uint64_t *)values, t, (uint64_t *)(base + l.tmpv), n, &o);
  } else {
    uint64_t *k = (uint64_t *)keys, *t = (uint64_t *)(base + l.tmp);
    if (!vs) sort_bits_k64(&w, k, NULL, t, NULL, n, &o);
    else if (vs == 4) sort_bits_k64v32(&w, k, (uint32_t *)values, t, (uint32_t *)(base + l.tmpv), n, &o);
    else sort_bits_k64v64(&w, k, (uint64_t *)values, t, (uint64_t *)(base + l.tmpv), n, &o);
  }
  tdm__host_scratch_release(ctx, &s);
  return TDM_OK;
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
  rs_out o = {TDM_KIND_UNSIGNED, 0, 1}; /* the bit copy is scratch: no inverse needed */
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
  l = rs_plan(ctx, n, ks, is, n * ks);
  st = tdm__host_scratch(ctx, l.total, &s);
  if (st != TDM_OK) return st;
  base = (char *)s.ptr;
  rs_work_init(&w, &l, base);

  arg_fill(&w, keys, base + l.bits, perm_out, ks, is, n, kind, desc);
  if (ks == 4) {
    uint32_t *kb = (uint32_t *)(base + l.bits), *t = (uint32_t *)(base + l.tmp);
    if (is == 4) sort_bits_k32v32(&w, kb, (uint32_t *)perm_out, t, (uint32_t *)(base + l.tmpv), n, &o);
    else sort_bits_k32v64(&w, kb, (uint64_t *)perm_out, t, (uint64_t *)(base + l.tmpv), n, &o);
  } else {
    uint64_t *kb = (uint64_t *)(base + l.bits), *t = (uint64_t *)(base + l.tmp);
    if (is == 4) sort_bits_k64v32(&w, kb, (uint32_t *)perm_out, t, (uint32_t *)(base + l.tmpv), n, &o);
    else sort_bits_k64v64(&w, kb, (uint64_t *)perm_out, t, (uint64_t *)(base + l.tmpv), n, &o);
  }
  tdm__host_scratch_release(ctx, &s);
  return TDM_OK;
}

const tdm__sort_ops tdm__sort_cpu_ops = {.sort = tdm__cpu_sort, .argsort = tdm__cpu_argsort};
