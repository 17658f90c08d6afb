/*
 * cpu.h: the CPU backend's private header: its operation tables (gathered
 * into tdm__cpu_backend by cpu/backend_cpu.c) and the private state of its
 * structures. Nothing outside cpu/ includes it but tests that look at CPU
 * storage.
 */
#ifndef TANDEM_CPU_H
#define TANDEM_CPU_H

#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "../src/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

TDM_INTERNAL extern const tdm__sort_ops tdm__sort_cpu_ops;
TDM_INTERNAL extern const tdm__hash_ops tdm__hash_cpu_ops;
TDM_INTERNAL extern const tdm__btree_ops tdm__btree_cpu_ops;
TDM_INTERNAL extern const tdm__ops_ops tdm__ops_cpu_ops;

/* Non-temporal stores, for passes that write every line of a destination
 * that is not in cache exactly once (a partition pass, a bulk load's nodes):
 * fetching those lines first (read-for-ownership) would double the memory
 * traffic. tdm__stream_fence orders them before the results are read. */
/* Writes one 64-byte-aligned line (or half line) with non-temporal stores:
 * a partition pass writes every line exactly once, so fetching the lines into
 * the cache first (read-for-ownership) would only double the traffic. */
static inline void tdm__stream_line(void *dst, const void *src, size_t bytes) {
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
static inline void tdm__stream_copy(void *dst, const void *src, size_t bytes) {
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

static inline void tdm__stream_fence(void) {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}


/* The one way cpu/ runs a parallel loop (scripts/check-idioms.sh rejects
 * any other omp parallel construct in cpu/):
 *
 * TDM__PAR_FOR(NT, VAR, COUNT, BODY): for (VAR = 0; VAR < COUNT; VAR++) BODY
 * on NT OpenMP threads (static schedule), or inline when NT is 1: entering a
 * parallel construct costs libgomp a futex wake (about 0.5 us) even for a
 * team of one or a false if clause, a quarter of a sort, hash find or B-tree
 * find of 200 keys. A loop of NT iterations on NT threads gives each thread
 * one iteration.
 *
 * TDM__PAR_FOR_DYN(NT, CHUNK, VAR, COUNT, BODY): the same with a dynamic
 * schedule of CHUNK iterations, for iterations of very unequal cost.
 *
 * TDM__PAR_FOR_REDUCE(NT, OP, ACC, VAR, COUNT, BODY): the same as
 * TDM__PAR_FOR, with ACC reduced by OP (an OpenMP reduction operator: +, &,
 * |, max, ...) over the threads. */
#define TDM__PAR_STR(x) #x
#define TDM__PAR_PRAGMA(x) _Pragma(TDM__PAR_STR(x))
#define TDM__PAR_LOOP(NT, CLAUSES, VAR, COUNT, ...)                                                              \
  do {                                                                                                          \
    int tdm__par_nt = (int)(NT);                                                                                \
    if (tdm__par_nt <= 1) {                                                                                     \
      for (VAR = 0; VAR < (COUNT); VAR++) { __VA_ARGS__; }                                                      \
    } else {                                                                                                    \
      TDM__PAR_PRAGMA(omp parallel for num_threads(tdm__par_nt) CLAUSES)                                        \
      for (VAR = 0; VAR < (COUNT); VAR++) { __VA_ARGS__; }                                                      \
    }                                                                                                           \
  } while (0)
#define TDM__PAR_FOR(NT, VAR, COUNT, ...) TDM__PAR_LOOP(NT, schedule(static), VAR, COUNT, __VA_ARGS__)
#define TDM__PAR_FOR_DYN(NT, CHUNK, VAR, COUNT, ...)                                                             \
  TDM__PAR_LOOP(NT, schedule(dynamic, CHUNK), VAR, COUNT, __VA_ARGS__)
#define TDM__PAR_FOR_REDUCE(NT, OP, ACC, VAR, COUNT, ...)                                                        \
  TDM__PAR_LOOP(NT, schedule(static) reduction(OP : ACC), VAR, COUNT, __VA_ARGS__)

/* ---- sort ------------------------------------------------------------------ */

/* The CPU backend's context set-up (sort_plan_cpu.c): picks the context's
 * keys-only sort plan. Cannot fail. */
TDM_INTERNAL tdm_status tdm__cpu_ctx_init(tdm_ctx *ctx);

/* The sort operations (sort_cpu.c), also used by the B+ tree to sort batches. */
TDM_INTERNAL tdm_status tdm__cpu_sort(tdm_ctx *ctx, tdm_type key_type, void *keys, tdm_type value_type, void *values,
                                      size_t n, int desc);
/* A consumer of sorted pairs while they are in cache (the B+ tree's build
 * fills its leaves from them). The radix sort sorts each bucket in a private
 * buffer and streams it to the output; with a sink it first offers the bucket:
 * take(arg, at, keys, values, count, &end) receives count sorted pairs (keys
 * in the caller's form) that belong at output index at, and returns the start
 * of the span [start, end) of them it used, relative to at (start >= end: none).
 * The pairs of that span, save its last, never reach the output; the sort
 * still writes every other pair there. Runs on the sort's threads, one bucket
 * per call; buckets hold disjoint ranges of keys. */
typedef struct tdm__sort_sink {
  size_t (*take)(void *arg, size_t at, const void *keys, const void *values, size_t count, size_t *end);
  void *arg;
} tdm__sort_sink;

/* The same sort of a copy: reads in_keys / in_values (untouched) and writes
 * the sorted copy to keys / values, which must not overlap them. Where the
 * radix partition serves, its first pass reads the input where it lies, so
 * no separate copy pass is made. sink (NULL for none) is offered the sorted
 * pairs as above; a keys-only sort never calls it. */
TDM_INTERNAL tdm_status tdm__cpu_sort_copy(tdm_ctx *ctx, tdm_type key_type, const void *in_keys, void *keys,
                                           tdm_type value_type, const void *in_values, void *values, size_t n,
                                           int desc, const tdm__sort_sink *sink);
TDM_INTERNAL tdm_status tdm__cpu_argsort(tdm_ctx *ctx, tdm_type key_type, const void *keys, tdm_type index_type,
                                         void *perm_out, size_t n, int desc);

/* ---- hash table ------------------------------------------------------------ */

/* Per-thread outcome counters, one cache line: [1..3] claim outcomes
 * (TDM_HASH_NEW_*), [0] claims that found no free slot (a corrupt table),
 * [4..7] erase outcomes (4 + TDM_HASH_ABSENT ...). */
typedef struct tdm__hc_counts {
  size_t n[8];
} tdm__hc_counts;

/* The loops of one key/value width pair (cpu/hash_cpu_impl.h), instantiated
 * in cpu/hash_cpu_k32v32.c ... hash_cpu_k64v64.c. Slots, keys and values are
 * untyped here; each entry casts them to its widths. hash_cpu.c picks a table
 * once, when the table is created. */
typedef struct tdm__hash_cpu_fns {
  void (*insert_run)(tdm_hash *h, const void *keys, const void *vals, size_t n, unsigned nt, unsigned t,
                     uint8_t *dfr, tdm__hc_counts *c);
  void (*insert_deferred)(tdm_hash *h, const void *keys, const void *vals, const uint8_t *dfr, size_t n,
                          tdm__hc_counts *c);
  void (*part_count)(const void *keys, size_t lo, size_t hi, unsigned pbits, size_t np, size_t *cnt);
  void (*part_scatter)(const void *keys, const void *vals, size_t lo, size_t hi, unsigned pbits, size_t np,
                       size_t *at, void *rec);
  void (*part_insert)(tdm_hash *h, const void *rec, const size_t *b, size_t plo, size_t phi, size_t np, int side,
                      uint8_t *dfr, tdm__hc_counts *c);
  void (*part_deferred)(tdm_hash *h, const void *rec, const uint8_t *dfr, size_t n, tdm__hc_counts *c);
  void (*rehash_range)(const void *src, size_t lo, size_t hi, void *dst, uint8_t *dtg, unsigned dl, int atomic);
  void (*rehash_stream)(const void *src, unsigned sl, void *dst, uint8_t *dtg, unsigned dl);
  void (*find_range)(const tdm_hash *h, const void *keys, void *vo, uint8_t *fo, size_t lo, size_t hi);
  void (*erase_range)(tdm_hash *h, const void *keys, size_t lo, size_t hi, int atomic, tdm__hc_counts *c);
  size_t (*count_range)(const void *s, size_t lo, size_t hi);
  void (*export_range)(const void *s, size_t lo, size_t hi, void *ko, void *vo, size_t at);
  size_t (*export_side)(const void *s, uint64_t cap, void *ko, void *vo);
  size_t (*check_tags)(const void *s, const uint8_t *tg, size_t lo, size_t hi);
  /* NULL for 32-bit values (a number's slot packs its count beside it). */
  size_t (*number_run)(tdm_hash *h, const void *keys, size_t n, size_t max_new, uint32_t *gid, uint32_t *first,
                       uint64_t base, tdm__hc_counts *c);
} tdm__hash_cpu_fns;

/* Indexed by tdm__hash_inst (tandem/detail/hash_layout.h). */
TDM_INTERNAL extern const tdm__hash_cpu_fns tdm__hash_cpu_k32v32, tdm__hash_cpu_k32v64, tdm__hash_cpu_k64v32,
    tdm__hash_cpu_k64v64;

/* A CPU table's private state (at h->be). */
typedef struct tdm__hash_cpu {
  void *slots;                 /* cap + 2 slots in host memory */
  size_t slots_bytes;          /* bytes allocated for them */
  int mapped;                  /* from tdm__map (huge pages): freed with tdm__unmap */
  uint8_t *tags;               /* cap tag bytes, one per table slot (below) */
  size_t tags_bytes;           /* bytes allocated for them */
  int tags_mapped;             /* as mapped, for the tags */
  const tdm__hash_cpu_fns *fn; /* the loops of this table's widths */
} tdm__hash_cpu;

/* Tag bytes: CPU-private acceleration beside the slot array, which keeps the
 * layout the views and the GPU read. tags[i] describes table slot i exactly:
 * TDM__HC_TAG_EMPTY for an empty slot, TDM__HC_TAG_TOMB for a tombstone, else
 * tdm__hc_tag of its key's hash (2..255). Every write of a slot's key word
 * writes its tag too. A find reads the tags of its probe (one 64-byte line
 * holds the tags of 16 buckets of 16-byte slots) and reads a slot only where
 * the tag matches, so a miss costs one line of an array 8 to 16 times smaller
 * than the table instead of one or more lines of the table. The tag takes the
 * low hash bits; the home slot takes the top ones. */
enum { TDM__HC_TAG_EMPTY = 0, TDM__HC_TAG_TOMB = 1 };
static inline uint8_t tdm__hc_tag(uint64_t mixed) { return (uint8_t)(2u + (((unsigned)mixed & 0xffu) * 254u >> 8)); }

static inline tdm__hash_cpu *tdm__hash_cpu_of(const tdm_hash *h) { return (tdm__hash_cpu *)h->be; }

/* The G (4 or 8) tags of a bucket at tg as two masks: bit j of *eq set
 * where tag j is t, of *em where slot j is empty. No branch per slot: which
 * slot of its bucket a key sits in is random, and such a branch would
 * mispredict on most probes. */
static inline void tdm__hc_tag_masks(const uint8_t *tg, unsigned G, uint8_t t, unsigned *eq, unsigned *em) {
  unsigned keep = (1u << G) - 1u;
#if defined(__SSE2__)
  __m128i w;
  if (G == 8) {
    w = _mm_loadl_epi64((const __m128i *)(const void *)tg);
  } else {
    int32_t x;
    memcpy(&x, tg, 4);
    w = _mm_cvtsi32_si128(x);
  }
  /* The tag broadcast from a 32-bit word: _mm_set1_epi8 of a byte went
   * through the stack here (a byte store read back as a word, which store
   * forwarding cannot serve: a stall on every probe). */
  *eq = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(w, _mm_set1_epi32((int)(0x01010101u * t)))) & keep;
  *em = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(w, _mm_setzero_si128())) & keep;
#else
  unsigned j, e = 0, m = 0;
  for (j = 0; j < G; j++) {
    e |= (unsigned)(tg[j] == t) << j;
    m |= (unsigned)(tg[j] == TDM__HC_TAG_EMPTY) << j;
  }
  *eq = e & keep;
  *em = m & keep;
#endif
}

/* ---- B+ tree --------------------------------------------------------------- */

/* Instruction-set levels of the B-tree's queries and leaf fill (btree_cpu.c). */
typedef enum tdm__bt_isa { TDM__BT_ISA_SCALAR, TDM__BT_ISA_AVX2, TDM__BT_ISA_AVX512, TDM__BT_ISA_LEVELS } tdm__bt_isa;
/* Highest level a tree built from now on may use (default: the highest);
 * lowered only by a test hook (tests/hooks/btree_isa.c). */
TDM_INTERNAL extern int tdm__bt_isa_cap;
typedef struct tdm__bt_isa_fns tdm__bt_isa_fns;

/* A CPU tree's private state (at t->be): a classic B+ tree over a node array
 * that splits, borrows and merges in place. */
typedef struct tdm__btree_cpu {
  tdm__bt_node *nodes; /* cap slots; [0, used) have been handed out */
  void *nodes_raw;     /* the mapping holding nodes */
  size_t map_bytes;    /* its length */
  uint32_t cap, used;  /* slots allocated / slots ever handed out */
  uint32_t live;       /* nodes in the tree (used minus free) */
  uint32_t free_head;  /* free list through next; TDM_BT_NIL when empty */
  tdm__bt_isa isa;            /* the instruction-set level of its loops ... */
  const tdm__bt_isa_fns *fn;  /* ... and their table, both fixed at build */
} tdm__btree_cpu;

static inline tdm__btree_cpu *tdm__btree_cpu_of(const tdm_btree *t) { return (tdm__btree_cpu *)t->be; }

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_CPU_H */
