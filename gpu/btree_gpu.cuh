/*
 * btree_gpu.cuh: what the GPU designs' B+ trees share (btree_gpu.cu): the
 * tree's private state, key index -> leaf and slot, the descent-kernel
 * launches, and the table of the few steps a design does its own way
 * (reduce of a sorted batch, search arrays, queries, range fill, extra
 * validation), which a tree takes from its design once, at build.
 */
#ifndef TANDEM_BTREE_GPU_CUH
#define TANDEM_BTREE_GPU_CUH

#include "gpu_common.cuh"
#include "tandem/detail/btree_lanes.h"

struct tdm__bg_design;

/* A CUDA tree's private state (at t->be): always in bulk-loaded layout (its
 * batched updates merge and rebuild), so geom describes it exactly. A design
 * with search arrays (v2) has install also keep the compact separator array
 * of the inner nodes (d_seps, NULL for a tree of one leaf) and the geometry
 * in the search's form (lgeom); bulk records that the nodes were written
 * from geom (install is their only writer), which tdm__bt_search_plan
 * requires. design: the tree's design, set at build. */
struct btree_gpu {
  tdm__bt_node *d_nodes;
  uint64_t *d_seps;
  tdm__bt_geom geom;
  tdm__bt_lgeom lgeom;
  int bulk;
  const tdm__bg_design *design;
};

static inline btree_gpu *BG(const tdm_btree *t) { return (btree_gpu *)t->be; }

/* What a design does its own way. Launch functions queue on the context's
 * stream; their callers check the launches. */
struct tdm__bg_design {
  /* Reduces n sorted key bits kb / values vb under t->dup into *ukb / *uvb
   * (scratch of sc), *m distinct keys. */
  tdm_status (*reduce)(tdm_btree *t, tdm__gpu_scope &sc, const uint64_t *kb, const uint64_t *vb, uint64_t n,
                       uint64_t **ukb, uint64_t **uvb, uint64_t *m);
  /* Search arrays of new nodes nn of geometry g: taken in sc and queued for
   * filling into *seps (NULL: the design has none). */
  tdm_status (*search_arrays)(tdm_ctx *ctx, tdm__gpu_scope &sc, const tdm__bt_node *nn, const tdm__bt_geom &g,
                              uint64_t **seps);
  /* The queries of a tree of size > 0 on device arrays. */
  void (*find)(const tdm_btree *t, const void *q, size_t n, void *vals, uint8_t *found);
  void (*rank)(const tdm_btree *t, const void *q, size_t n, uint64_t *rank);
  void (*counts)(const tdm_btree *t, const void *lo, const void *hi, size_t n, uint64_t cnt_len, uint64_t *cnt);
  /* Bytes of rank scratch per query that fill needs (0: none). */
  size_t fill_rank_bytes;
  /* Copies the total > 0 hits of the n ranges (lo, offsets off) to keys /
   * vals (either may be NULL); rank: fill_rank_bytes * n bytes of scratch. */
  void (*fill)(const tdm_btree *t, const void *lo, size_t n, const uint64_t *off, uint64_t *rank, uint64_t total,
               void *keys, void *vals);
  /* Checks the design's own arrays against the host copy h of the nodes
   * (NULL: nothing of its own). */
  tdm_status (*validate)(const tdm_btree *t, const tdm__bt_node *h);
};

/* Key index i of a bulk-layout tree -> its leaf and slot. */
static __device__ __forceinline__ const tdm__bt_node *tdm__bg_locate(const tdm__bt_node *nodes,
                                                                     const tdm__bt_geom &g, uint64_t i,
                                                                     uint32_t *slot) {
  uint64_t leaf = tdm__bt_even_part(g.m, g.cnt[0], i);
  *slot = (uint32_t)(i - tdm__bt_even_start(g.m, g.cnt[0], leaf));
  return &nodes[g.base[0] + leaf];
}

/* The descent launches (one thread per query walks root to leaf with
 * tdm__bt_descend, following the child arrays): the legacy design's
 * queries, and v2's when the geometry does not describe the tree. */
void tdm__bg_find_descend(const tdm_btree *t, const void *q, size_t n, void *vals, uint8_t *found);
void tdm__bg_rank_descend(const tdm_btree *t, const void *q, size_t n, uint64_t *rank);
void tdm__bg_counts_descend(const tdm_btree *t, const void *lo, const void *hi, size_t n, uint64_t cnt_len,
                            uint64_t *cnt);
/* Exclusive scan of n u64 flags into out; *total receives the sum (a wait). */
tdm_status tdm__bg_scan_total(tdm_ctx *ctx, tdm__gpu_scope &sc, const uint64_t *flag, uint64_t *out, uint64_t n,
                              uint64_t *total);

/* The operations both designs share (btree_gpu.cu). build takes the design. */
tdm_status tdm__bg_build(tdm_btree *t, const tdm__bg_design *d, const void *keys, const void *values, size_t n);
void tdm__bg_destroy(tdm_btree *t);
tdm_status tdm__bg_find(const tdm_btree *t, const void *keys, void *values_out, uint8_t *found_out, size_t n);
tdm_status tdm__bg_rank(const tdm_btree *t, const void *keys, uint64_t *rank_out, size_t n);
tdm_status tdm__bg_range_count(const tdm_btree *t, const void *lo, const void *hi, uint64_t *count_out, size_t n);
tdm_status tdm__bg_range(const tdm_btree *t, const void *lo, const void *hi, size_t n, uint64_t *offsets_out,
                         void *keys_out, void *values_out, size_t cap);
tdm_status tdm__bg_insert(tdm_btree *t, const void *keys, const void *values, size_t n);
tdm_status tdm__bg_erase(tdm_btree *t, const void *keys, size_t n, size_t *erased_out);
tdm_status tdm__bg_export(const tdm_btree *t, void *keys_out, void *values_out);
tdm_status tdm__bg_validate(const tdm_btree *t);
tdm_status tdm__bg_view(const tdm_btree *t, tdm_btree_view *out);

/* A design's operation table: its build, the shared rest. */
#define TDM__BG_OPS(build_fn)                                                                               \
  {                                                                                                         \
    .state_bytes = sizeof(btree_gpu), .build = build_fn, .destroy = tdm__bg_destroy, .find = tdm__bg_find,  \
    .rank = tdm__bg_rank, .range_count = tdm__bg_range_count, .range = tdm__bg_range,                       \
    .insert = tdm__bg_insert, .erase = tdm__bg_erase, .export_all = tdm__bg_export,                         \
    .validate = tdm__bg_validate, .view = tdm__bg_view,                                                     \
  }

#endif /* TANDEM_BTREE_GPU_CUH */
