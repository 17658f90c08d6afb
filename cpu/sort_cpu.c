/*
 * sort_cpu.c: the CPU backend's sort, argsort and sort_pairs.
 *
 * Keys are mapped to order-preserving unsigned bits (keybits.h) in place,
 * sorted by the radix sort of radix_impl.h, and mapped back by the last write
 * of each element. All memory is taken before the first byte of the caller's
 * arrays changes, so a failure (out of memory) leaves them as they were, and
 * nothing after that point can fail.
 */
#include <string.h>

#include "cpu_backend.h"

/* How the final write maps bits back to keys. */
typedef struct rs_out {
  int kind;     /* TDM_KIND_* */
  int desc;     /* bits were complemented for a descending sort */
  int identity; /* the map is the identity: plain copies suffice */
} rs_out;

enum {
  RS_MAX_TASKS = 256,        /* upper bound on threads used by one call */
  RS_MSD_MAX_BITS = 12,      /* widest partition digit */
  RS_MSD_MAX_B = 1 << 12,    /* buckets of the widest partition digit */
  RS_MAX_DEPTH = 9,          /* partition levels: each takes >= 8 of 64 bits */
  RS_LOCAL_DIGIT_BITS = 11,  /* widest digit of the in-cache LSD sort */
  RS_INSERTION_MAX = 24,     /* buckets this small use insertion sort */
  RS_CACHE_BUDGET = 1 << 20, /* bytes of src + alt a bucket may use in cache */
  RS_MIN_PER_TASK = 1 << 15, /* elements per thread worth a fork */
};

/* Per-call workspace, allocated before anything is modified. */
typedef struct rs_work {
  int threads;      /* threads of the context, capped at RS_MAX_TASKS */
  size_t local_max; /* largest bucket sorted in cache by one thread */
  size_t *cnt;      /* threads x RS_MSD_MAX_B counters */
  size_t *bstart;   /* RS_MAX_DEPTH x (RS_MSD_MAX_B + 1) bucket boundaries */
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

#define RS_UNSORT32(b, o) tdm_unsortbits32((b), (o)->kind, (o)->desc)
#define RS_UNSORT64(b, o) tdm_unsortbits64((b), (o)->kind, (o)->desc)

#define RS_K uint32_t
#define RS_V uint32_t
#define RS_UNSORT RS_UNSORT32
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

/* Layout of one call's scratch block. */
typedef struct rs_layout {
  size_t bits, tmp, tmpv, cnt, bstart, total;
} rs_layout;

static rs_layout rs_plan(size_t bits_bytes, size_t tmp_bytes, size_t tmpv_bytes, int threads) {
  rs_layout l;
  size_t off = 0;
  l.bits = tdm__carve(&off, bits_bytes);
  l.tmp = tdm__carve(&off, tmp_bytes);
  l.tmpv = tdm__carve(&off, tmpv_bytes);
  l.cnt = tdm__carve(&off, (size_t)threads * RS_MSD_MAX_B * sizeof(size_t));
  l.bstart = tdm__carve(&off, (size_t)RS_MAX_DEPTH * (RS_MSD_MAX_B + 1) * sizeof(size_t));
  l.total = off;
  return l;
}

static void rs_work_init(rs_work *w, const tdm_ctx *ctx, const rs_layout *l, char *base, size_t elem_bytes) {
  w->threads = ctx->threads < RS_MAX_TASKS ? ctx->threads : RS_MAX_TASKS;
  w->local_max = RS_CACHE_BUDGET / (2 * elem_bytes);
  w->cnt = (size_t *)(base + l->cnt);
  w->bstart = (size_t *)(base + l->bstart);
}

/* Maps keys to sort bits in place (skipped when the map is the identity). */
static void rs_transform(const rs_work *w, void *keys, size_t n, size_t ks, const rs_out *o) {
  long i;
  if (o->identity) return;
  if (ks == 4) {
    uint32_t *k = (uint32_t *)keys;
#pragma omp parallel for num_threads(w->threads) schedule(static) if (n > RS_MIN_PER_TASK)
    for (i = 0; i < (long)n; i++) k[i] = tdm_sortbits32(k[i], o->kind, o->desc);
  } else {
    uint64_t *k = (uint64_t *)keys;
#pragma omp parallel for num_threads(w->threads) schedule(static) if (n > RS_MIN_PER_TASK)
    for (i = 0; i < (long)n; i++) k[i] = tdm_sortbits64(k[i], o->kind, o->desc);
  }
}

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
  l = rs_plan(0, n * ks, n * vs, ctx->threads < RS_MAX_TASKS ? ctx->threads : RS_MAX_TASKS);
  st = tdm__host_scratch(ctx, l.total, &s);
  if (st != TDM_OK) return st;
  base = (char *)s.ptr;
  rs_work_init(&w, ctx, &l, base, ks + vs);

  rs_transform(&w, keys, n, ks, &o);
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
  long i;

  l = rs_plan(n * ks, n * ks, n * is, ctx->threads < RS_MAX_TASKS ? ctx->threads : RS_MAX_TASKS);
  st = tdm__host_scratch(ctx, l.total, &s);
  if (st != TDM_OK) return st;
  base = (char *)s.ptr;
  rs_work_init(&w, ctx, &l, base, ks + is);

#define ARG_FILL(KT, SB, IT)                                                                        \
  do {                                                                                              \
    const KT *src = (const KT *)keys;                                                               \
    KT *kb = (KT *)(base + l.bits);                                                                 \
    IT *p = (IT *)perm_out;                                                                         \
    _Pragma("omp parallel for num_threads(w.threads) schedule(static) if (n > RS_MIN_PER_TASK)")   \
    for (i = 0; i < (long)n; i++) {                                                                 \
      kb[i] = SB(src[i], kind, desc);                                                               \
      p[i] = (IT)i;                                                                                 \
    }                                                                                               \
  } while (0)

  if (ks == 4) {
    uint32_t *kb = (uint32_t *)(base + l.bits), *t = (uint32_t *)(base + l.tmp);
    if (is == 4) {
      ARG_FILL(uint32_t, tdm_sortbits32, uint32_t);
      sort_bits_k32v32(&w, kb, (uint32_t *)perm_out, t, (uint32_t *)(base + l.tmpv), n, &o);
    } else {
      ARG_FILL(uint32_t, tdm_sortbits32, uint64_t);
      sort_bits_k32v64(&w, kb, (uint64_t *)perm_out, t, (uint64_t *)(base + l.tmpv), n, &o);
    }
  } else {
    uint64_t *kb = (uint64_t *)(base + l.bits), *t = (uint64_t *)(base + l.tmp);
    if (is == 4) {
      ARG_FILL(uint64_t, tdm_sortbits64, uint32_t);
      sort_bits_k64v32(&w, kb, (uint32_t *)perm_out, t, (uint32_t *)(base + l.tmpv), n, &o);
    } else {
      ARG_FILL(uint64_t, tdm_sortbits64, uint64_t);
      sort_bits_k64v64(&w, kb, (uint64_t *)perm_out, t, (uint64_t *)(base + l.tmpv), n, &o);
    }
  }
#undef ARG_FILL
  tdm__host_scratch_release(ctx, &s);
  return TDM_OK;
}
