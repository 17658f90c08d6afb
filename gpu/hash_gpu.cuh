/*
 * hash_gpu.cuh: what the CUDA hash table's two files share: the per-width
 * access to the slot functions, the warp-level helpers that keep a hot key
 * from serialising on one word, the table's private state and its two
 * per-width launch tables, picked once at create for the key and value
 * widths: the policy-free operations (rehash, export: hash_gpu.cu) and the
 * policy table (insert, find, erase: hash_probe.cu).
 */
#ifndef TANDEM_HASH_GPU_CUH
#define TANDEM_HASH_GPU_CUH

#include <string.h>

#include "gpu_common.cuh"

/* Per-width access to the shared functions, so the kernels can be templates. */
template <typename K, typename V> struct hs;
#define HS_TEMPLATE "../gpu/hash_traits.cuh" /* found through the include/ search path */
#include "tandem/detail/hash_inst.h"

static __device__ __forceinline__ void atomic_add_v(uint32_t *p, uint32_t v) { atomicAdd((unsigned int *)p, v); }
static __device__ __forceinline__ void atomic_add_v(uint64_t *p, uint64_t v) {
  atomicAdd((unsigned long long *)p, (unsigned long long)v);
}
static __device__ __forceinline__ uint32_t cas_v(uint32_t *p, uint32_t e, uint32_t d) { return tdm__hash_cas32(p, e, d); }
static __device__ __forceinline__ uint64_t cas_v(uint64_t *p, uint64_t e, uint64_t d) { return tdm__hash_cas64(p, e, d); }
static __device__ __forceinline__ uint32_t load_v(const uint32_t *p) { return tdm__hash_load32(p); }
static __device__ __forceinline__ uint64_t load_v(const uint64_t *p) { return tdm__hash_load64(p); }

/* A whole slot by one load (16 bytes by one vector load) through the
 * read-only path, for a kernel during which the table does not change (a
 * find, an export): its key and value arrive together. */
template <typename S, unsigned B = sizeof(S)>
struct slot_load;
template <typename S>
struct slot_load<S, 16> {
  static __device__ __forceinline__ S at(const S *p) {
    const ulonglong2 w = __ldg((const ulonglong2 *)p);
    S r;
    memcpy(&r, &w, sizeof r);
    return r;
  }
};
template <typename S>
struct slot_load<S, 8> {
  static __device__ __forceinline__ S at(const S *p) {
    const unsigned long long w = __ldg((const unsigned long long *)p);
    S r;
    memcpy(&r, &w, sizeof r);
    return r;
  }
};

/* Counters: [0..3] claim outcomes, [4..7] erase outcomes, as on the CPU. */
enum { NCOUNT = 8 };

/* The lanes of the warp below the calling one. */
static __device__ __forceinline__ unsigned lanes_below() { return (1u << (threadIdx.x & 31u)) - 1u; }

/* Block-local counters, flushed with one global atomic each. A warp adds
 * its lanes' outcomes together: lanes with the same code are counted by
 * one shared atomic of the lowest of them (__match_any_sync), so a batch
 * whose keys all end the same way takes one shared atomic per warp instead
 * of one per key on the same word. */
struct block_counts {
  unsigned long long *c;
  __device__ void init(unsigned long long *sh) {
    c = sh;
    if (threadIdx.x < NCOUNT) c[threadIdx.x] = 0;
    __syncthreads();
  }
  /* Counts one outcome code (0..NCOUNT-1) per lane, none for -1. Every lane
   * of the warp calls it at once. */
  __device__ void add_warp(int code) {
    unsigned peers = __match_any_sync(0xffffffffu, code);
    if (code >= 0 && !(peers & lanes_below())) atomicAdd(&c[code], (unsigned long long)__popc(peers));
  }
  __device__ void flush(unsigned long long *global) {
    __syncthreads();
    if (threadIdx.x < NCOUNT && c[threadIdx.x]) atomicAdd(&global[threadIdx.x], c[threadIdx.x]);
  }
};

/* A grid-stride loop over n items of G lanes each (G divides 32) in which
 * the lanes of a warp take every turn together, so the warp collectives in
 * its body always find the whole warp: for (size_t b = t.first; b < n; b +=
 * t.stride) { size_t i = t.item(b); bool live = i < n; ... }. A plain
 * grid-stride loop lets the lanes past n leave early, and a collective over
 * the full warp would then wait for exited lanes. */
template <unsigned G>
struct warp_turns {
  size_t first, stride;
  __device__ warp_turns()
      : first((blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32u * (32u / G)),
        stride((size_t)gridDim.x * blockDim.x / G) {}
  __device__ size_t item(size_t base) const { return base + (threadIdx.x & 31u) / G; }
};

/* The fold by op of x over the lanes of peers (the calling lane's own
 * __match_any_sync mask, itself included) for the lanes with in set; a lane
 * without in gets its x back. Every lane of the warp calls it at once. A
 * warp whose peer sets are all single lanes (distinct keys) pays one vote;
 * only a warp holding copies of one key walks its 32 lanes with shuffles.
 * op must be commutative and associative (wrapping add, min, max): the
 * lanes are folded in lane order, not in batch order. */
template <typename T, typename Op>
static __device__ __forceinline__ T warp_fold_peers(unsigned peers, bool in, T x, Op op) {
  const unsigned lane = threadIdx.x & 31u;
  T acc = x;
  if (!__any_sync(0xffffffffu, in && (peers & ~(1u << lane)))) return x;
  for (unsigned j = 0; j < 32u; j++) {
    T y = __shfl_sync(0xffffffffu, x, (int)j);
    if (in && j != lane && (peers >> j & 1u)) acc = op(acc, y);
  }
  return acc;
}

/* The device scratch of one insert, taken by the policy's scratch function
 * before the table changes and reused by every chunk of the batch. */
struct tdm__hg_scratch {
  size_t chunk;  /* keys per insert call */
  uint64_t *pos; /* each key's slot (not for SUM) */
  uint32_t *e;   /* KEEP_FIRST: an election word per key (the claimers') */
  uint32_t *taken; /* KEEP_LAST: a word per chunk, set when a key of it found its slot taken */
};

/* The policy table of one key / value width (hash_probe.cu): the launch
 * functions of the operations whose kernels take a policy. */
struct tdm__hg_policy {
  /* Takes the scratch of an insert of n keys into a table that will have
   * final_cap slots. */
  tdm_status (*scratch)(tdm_hash *h, tdm__gpu_scope &sc, size_t n, size_t final_cap, tdm__hg_scratch *x);
  /* Queues the insert of chunk number chunk (0, 1, ...: x->chunk keys
   * each) of a batch, its n device keys / values (the caller checks the
   * launches). */
  void (*insert)(tdm_hash *h, const void *keys, const void *vals, size_t n, const tdm__hg_scratch *x, size_t chunk,
                 unsigned long long *cnt);
  /* Queues the find of n device keys (the caller checks the launch). */
  void (*find)(const tdm_hash *h, const void *keys, void *vo, uint8_t *fo, size_t n);
  /* Queues the erase of n device keys, adding the outcomes to cnt[4..7]
   * (the caller checks the launch). */
  void (*erase)(tdm_hash *h, const void *keys, size_t n, unsigned long long *cnt);
};
/* In the order of tdm__hash_inst. */
extern const tdm__hg_policy *const tdm__hg_policies[4];

/* The launch functions that take no policy, for one width (hash_gpu.cu). */
struct tdm__hg_common_fns {
  void (*rehash)(tdm_ctx *ctx, const void *src, size_t cap, void *dst, unsigned dl);
  void (*export_count)(const tdm_hash *h, unsigned long long *tile_cnt, size_t tiles);
  void (*export_write)(const tdm_hash *h, const unsigned long long *tile_off, size_t tiles, void *ko, void *vo);
  /* Every live pair, in no fixed order, at ko[*cursor ...] (cursor 0 on
   * entry, the count on exit): one read of the table. */
  void (*export_any)(const tdm_hash *h, unsigned long long *cursor, void *ko, void *vo);
  /* Likewise, for a scratch table with its list of claimed slots
   * (tdm__hash_gpu): one read of the list and of each listed slot. */
  void (*export_list)(const tdm_hash *h, unsigned long long *cursor, void *ko, void *vo);
};

/* What a row inserted without values adds to its key's slot, when the
 * table is a data operation's scratch (tdm__hg_scratch_table): the claim
 * makes the value from the row's position in the batch, so no batch-sized
 * array of ones or row numbers is written and read back. */
enum tdm__hg_rows {
  TDM__HG_ROWS_NONE = 0,  /* a set: nothing, every value stays 0 */
  TDM__HG_ROWS_ONE = 1,   /* 1 (SUM: the key's count) */
  TDM__HG_ROWS_INDEX = 2, /* the row's position i (SUM of one row per key: its position) */
  TDM__HG_ROWS_NOT_INDEX = 3, /* ~i (MAX of unsigned: the complement of the key's first row) */
  TDM__HG_ROWS_RUN = 4 /* (i + 1) << 32 | 1 (SUM of 64-bit values: a run of one row at i,
                          tdm__ops_join_run_add(1, i) of include/tandem/detail/ops_keys.h) */
};

/* A CUDA table's private state (at h->be). */
struct tdm__hash_gpu {
  void *slots;                 /* cap + 2 slots in device memory */
  unsigned long long *counts;  /* NCOUNT insert outcome counts not yet folded, device memory */
  const tdm__hg_common_fns *common; /* chosen at create for the table's widths */
  const tdm__hg_policy *policy;     /* likewise, from tdm__hg_policies */
  int rows; /* enum tdm__hg_rows: what an insert without values adds (0 but for scratch tables) */
  /* A scratch table's list of the slots its claims took (NULL for a
   * public table, or when the batch is too long for one claim launch or
   * the table for 32-bit slot numbers): warp w of the claim writes the
   * slots it claimed, in its own order, at list[w * list_per_warp ...] and
   * their number at list_n[w] (list_warps words, zeroed first), so an
   * export of few keys from a large table reads them (the list, then one
   * slot each) instead of every slot (tdm__hg_scratch_export). */
  uint32_t *list, *list_n;
  size_t list_warps, list_per_warp;
};

static inline tdm__hash_gpu *tdm__hg(const tdm_hash *h) { return (tdm__hash_gpu *)h->be; }

/* A table of the m device keys d_keys (key_bits: TDM_U32 or TDM_U64) in a
 * call's scratch (sc frees it), for a data operation to probe with
 * tdm__hg(h)->policy->find or to export (tdm__hg_scratch_export): *h and
 * *be are filled as tdm_hash_create and hg_create would
 * (tdm__hash_init_common), the slots taken from sc, cleared and filled by
 * queued launches. No host wait (a table made by tdm_hash_create waits
 * once, and its destroy once more); the outcome counts are only read by
 * the export (a fresh table sized for m keys always has a free slot). Each
 * key's value is the fold of its copies' d_vals (value_type) by dup
 * (enum tdm__dup: SUM, or MAX of an unsigned value type, one launch per
 * chunk and no batch-sized scratch; MIN or another MAX). With d_vals NULL
 * (dup SUM, or MAX of an unsigned value type: the claim alone) row i's
 * value is what rows says (enum tdm__hg_rows): TDM__HG_ROWS_NONE makes a
 * set, the claims alone, every value left 0. exported: the table will be
 * exported (tdm__hg_scratch_export), so the claims list their slots
 * (tdm__hash_gpu's list). */
tdm_status tdm__hg_scratch_table(tdm_ctx *ctx, tdm__gpu_scope &sc, tdm_type key_bits, tdm_type value_type, int dup,
                                 const void *d_keys, const void *d_vals, int rows, size_t m, int exported,
                                 tdm_hash *h, tdm__hash_gpu *be, const char *fn);

/* A scratch table (tdm__hg_scratch_table) of each of the m device keys'
 * first row: the value of a key is the complement (~) of the first of its
 * rows 0 .. m - 1 (row_bits: TDM_U32, for m < 2^32, or TDM_U64), a MAX of
 * the complements (TDM__HG_ROWS_NOT_INDEX), which the claim folds by one
 * atomic max per slot (0, a free slot's value, is below every complement);
 * a MIN of the rows would take a second pass. */
tdm_status tdm__hg_first_rows(tdm_ctx *ctx, tdm__gpu_scope &sc, tdm_type key_bits, tdm_type row_bits,
                              const void *d_keys, size_t m, int exported, tdm_hash *h, tdm__hash_gpu *be,
                              const char *fn);

/* The live (key, value) pairs of a scratch table (tdm__hg_scratch_table)
 * into device arrays taken from sc (*d_keys, *d_vals; *n_out pairs in no
 * fixed order, which is why only callers that sort the pairs by their
 * distinct keys use it): one host wait, for the count, and one read of the
 * table. */
tdm_status tdm__hg_scratch_export(tdm_ctx *ctx, tdm__gpu_scope &sc, const tdm_hash *h, void **d_keys, void **d_vals,
                                  size_t *n_out, const char *fn);

#endif /* TANDEM_HASH_GPU_CUH */
