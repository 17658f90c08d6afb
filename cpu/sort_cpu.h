/*
 * sort_cpu.h: what the radix sort's instantiations (cpu/sort_cpu_k32.c ...
 * sort_cpu_k64v64.c, each compiling radix_impl.h for one key and value
 * width) share with sort_cpu.c, which plans the workspace and picks one
 * instantiation's table per call from the widths. Private to cpu/.
 */
#ifndef TANDEM_CPU_SORT_CPU_H
#define TANDEM_CPU_SORT_CPU_H

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
  const tdm__sort_sink *sink; /* offered each bucket local_sort sorts (pairs only), or NULL */
  const void *out;            /* the output key array the sink's indices count in */
  size_t out_n;               /* its length */
} rs_out;

enum {
  RS_MAX_TASKS = 256,         /* upper bound on threads used by one call */
  RS_MSD_MAX_BITS = 11,       /* widest partition digit */
  RS_MSD_MAX_B = 1 << 11,     /* buckets of the widest partition digit */
  RS_MAX_DEPTH = 9,           /* partition levels: each takes >= 8 of 64 bits */
  RS_INSERTION_MAX = 24,      /* buckets this small use insertion sort */
  RS_RANK_MAX = 16,           /* in-cache sub-buckets this small use rank_sort */
  RS_LOCAL_DIGIT_BITS = 8,     /* widest digit of the in-cache LSD passes */
  RS_CACHE_MSD_BITS = 12,     /* widest digit of the in-cache MSD pass */
  RS_CACHE_LEAF = 8,          /* sub-bucket size the in-cache MSD digit aims for */
  RS_CACHE_MSD_DEPTH = 2,     /* in-cache MSD levels before the LSD passes take over */
  RS_LSD_MAX_BITS = 24,       /* bit ranges this narrow are sorted by (<= 3) LSD passes */
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

static inline int rs_tasks(const rs_work *w, size_t n) {
  size_t by_n = n / RS_MIN_PER_TASK;
  if (by_n < 1) by_n = 1;
  return (int)((size_t)w->threads < by_n ? (size_t)w->threads : by_n);
}

/* Start of task t's chunk when n elements are split into P chunks. */
static inline size_t rs_chunk(size_t n, int P, int t) {
  return n / (size_t)P * (size_t)t + n % (size_t)P * (size_t)t / (size_t)P;
}

/* Elements per write-combining line: one cache line of the wider array. */
static inline size_t rs_line_elems(size_t ks, size_t vs) { return 64 / (vs > ks ? vs : ks); }

static inline int rs_thread_num(void) { return omp_get_thread_num(); }

#define RS_UNSORT32(b, o) tdm__unsortbits32((b), (o)->kind, (o)->desc)
#define RS_UNSORT64(b, o) tdm__unsortbits64((b), (o)->kind, (o)->desc)

/* The operations of one (key width, value width) instantiation. Keys and
 * values are untyped here; each entry casts them to its widths. */
typedef struct tdm__rs_fns {
  /* Sorts keys (caller's raw keys, or sort bits when o is the identity) with
   * values alongside (NULL for keys only); tmp / tmpv are scratch of n
   * elements. The result is untransformed into keys / values. With in
   * non-NULL the input is read from in / inv (untouched) and its sorted copy
   * written to keys / values. */
  void (*sort_bits)(rs_work *w, const void *in, const void *inv, void *keys, void *values, void *tmp, void *tmpv,
                    size_t n, const rs_out *o);
} tdm__rs_fns;

/* ---- keys only: the methods of this machine ------------------------------ */

/* The algorithms a keys-only sort may take (sort_cpu.c, rs_keys_pick). */
typedef enum tdm__keys_alg {
  TDM__KEYS_WHOLE, /* one vqsort of the whole array */
  TDM__KEYS_SPLIT, /* the two-thread split sort (sort_split_cpu.c) */
  TDM__KEYS_RADIX  /* the radix partition with vqsorted buckets (radix_impl.h) */
} tdm__keys_alg;

/* The split sort's partition loop. */
typedef enum tdm__split_isa { TDM__SPLIT_SCALAR, TDM__SPLIT_AVX2, TDM__SPLIT_AVX512 } tdm__split_isa;

/* The rule for one key width. */
typedef struct tdm__keys_rule {
  size_t part_min;   /* several threads: a parallel sort from this n on, below it one vqsort */
  tdm__keys_alg two; /* the parallel sort on two threads (three or more: the radix partition) */
  size_t radix_min;  /* two threads: the radix partition from this n on, whatever two says */
} tdm__keys_rule;

/* The keys-only sort's methods on this machine, chosen once per CPU context
 * at its creation (sort_plan_cpu.c) from the instruction sets Highway
 * dispatches to then, as Highway picks its own; every call follows the
 * context's plan and nothing asks again. */
typedef struct tdm__keys_plan {
  const char *name;         /* the instruction-set level it is for */
  tdm__keys_rule rule[2];   /* by key width: [0] 32-bit, [1] 64-bit keys */
  tdm__split_isa part;      /* the split's partition loop */
} tdm__keys_plan;

/* The plan of a context created now (sort_plan_cpu.c). */
TDM_INTERNAL const tdm__keys_plan *tdm__keys_plan_pick(void);

#if TANDEM_HAVE_HWY
/* The keys-only sort on two threads (sort_split_cpu.c): in place, takes no
 * memory and cannot fail. keys are the caller's; o says how they map to
 * bits; isa (tdm__split_isa) is the partition loop. */
TDM_INTERNAL void tdm__split_sort2(void *keys, size_t ks, size_t n, const rs_out *o, int isa);
#endif
/* Test hook (tests/hooks/keys_split.c): non-zero sends every keys-only sort
 * of a context with two or more threads to the split sort, whatever n and
 * the load. Process-wide. */
TDM_INTERNAL extern int tdm__keys_force_split;

TDM_INTERNAL extern const tdm__rs_fns tdm__rs_k32, tdm__rs_k32v32, tdm__rs_k32v64, tdm__rs_k64, tdm__rs_k64v32,
    tdm__rs_k64v64;

#endif /* TANDEM_CPU_SORT_CPU_H */
