/*
 * btree_gpu.cuh: the CUDA B+ tree's private header: its state, key index ->
 * leaf and slot, the operations (btree_gpu.cu), the descent-kernel launches,
 * and the steps of btree_lanes.cu (reduce of a sorted batch, lane-group queries,
 * range fill, the search arrays' validation).
 */
#ifndef TANDEM_BTREE_GPU_CUH
#define TANDEM_BTREE_GPU_CUH

#include "gpu_common.cuh"
#include "tandem/detail/btree_lanes.h"

/* A CUDA tree's private state (at t->be): always in bulk-loaded layout (its
 * batched updates merge and rebuild), so geom describes it exactly. Install
 * also keeps the search array (d_seps: the compact separators of the inner
 * nodes, then every node's summary; btree_lanes.h) and the geometry in the
 * search's form (lgeom);
 * bulk records that the nodes were written from geom (install is their only
 * writer), which tdm__bt_search_plan requires. */
struct btree_gpu {
  tdm__bt_node *d_nodes;
  uint64_t *d_seps;
  tdm__bt_geom geom;
  tdm__bt_lgeom lgeom;
  int bulk;
};

static inline btree_gpu *BG(const tdm_btree *t) { return (btree_gpu *)t->be; }

/* The steps of btree_lanes.cu. Launch functions queue on the context's
 * stream; their callers check the launches. */
/* Reduces n sorted key bits kb / values vb under t->dup into *ukb / *uvb
 * (scratch of sc), *m distinct keys. */
tdm_status tdm__bg_reduce(tdm_btree *t, tdm__gpu_scope &sc, const uint64_t *kb, const uint64_t *vb, uint64_t n,
                          uint64_t **ukb, uint64_t **uvb, uint64_t *m);
/* The queries of a tree of size > 0 on device arrays. */
void tdm__bg_launch_find(const tdm_btree *t, const void *q, size_t n, void *vals, uint8_t *found);
void tdm__bg_launch_rank(const tdm_btree *t, const void *q, size_t n, uint64_t *rank);
/* Counts of the n ranges into cnt[0 .. cnt_len) (zeros past n) and, when
 * lo_rank is non-NULL, the rank of each lo (where its hits start). */
void tdm__bg_launch_counts(const tdm_btree *t, const void *lo, const void *hi, size_t n, uint64_t cnt_len,
                           uint64_t *cnt, uint64_t *lo_rank);
/* Copies the total > 0 hits of the n ranges (offsets off, the ranks of
 * their lo from tdm__bg_launch_counts) to keys / vals (either may be NULL). */
void tdm__bg_launch_fill(const tdm_btree *t, size_t n, const uint64_t *off, const uint64_t *lo_rank, uint64_t total,
                         void *keys, void *vals);
/* Checks the search arrays against the host copy h of the nodes. */
tdm_status tdm__bg_check_search_arrays(const tdm_btree *t, const tdm__bt_node *h);

/* Key index i of a bulk-layout tree -> its leaf and slot. */
static __device__ __forceinline__ const tdm__bt_node *tdm__bg_locate(const tdm__bt_node *nodes,
                                                                     const tdm__bt_geom &g, uint64_t i,
                                                                     uint32_t *slot) {
  uint64_t leaf = tdm__bt_even_part(g.m, g.cnt[0], i);
  *slot = (uint32_t)(i - tdm__bt_even_start(g.m, g.cnt[0], leaf));
  return &nodes[g.base[0] + leaf];
}

/* The descent launches (one thread per query walks root to leaf with
 * tdm__bt_descend, following the child arrays): the queries when the
 * geometry does not describe the tree. */
void tdm__bg_find_descend(const tdm_btree *t, const void *q, size_t n, void *vals, uint8_t *found);
void tdm__bg_rank_descend(const tdm_btree *t, const void *q, size_t n, uint64_t *rank);
void tdm__bg_counts_descend(const tdm_btree *t, const void *lo, const void *hi, size_t n, uint64_t cnt_len,
                            uint64_t *cnt, uint64_t *lo_rank);
/* Exclusive scan of n u64 flags into out; *total receives the sum (a wait). */
tdm_status tdm__bg_scan_total(tdm_ctx *ctx, tdm__gpu_scope &sc, const uint64_t *flag, uint64_t *out, uint64_t n,
                              uint64_t *total);

#endif /* TANDEM_BTREE_GPU_CUH */
