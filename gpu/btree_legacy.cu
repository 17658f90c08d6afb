/*
 * btree_legacy.cu: the legacy design's own steps of the B+ tree:
 *  - reduce: mark run heads, exclusive scan, one thread per run folds it
 *    under the duplicate policy (tdm__bt_reduce_run, shared with the CPU);
 *  - find / rank / range_count: one thread per query walks root to leaf
 *    with tdm__bt_descend (btree_gpu.cu's descent launches); the upper
 *    levels are few and hot in L2, so each query pays roughly one uncached
 *    leaf access;
 *  - range fill: one thread copies a query's whole range.
 * No search arrays.
 */
#include "btree_gpu.cuh"

__global__ void k_heads(const uint64_t *kb, uint64_t *flag, uint64_t n) {
  TDM_GRID_STRIDE(i, n) flag[i] = (i == 0 || kb[i] != kb[i - 1]) ? 1 : 0;
}

__global__ void k_reduce(const uint64_t *kb, const uint64_t *vb, const uint64_t *flag, const uint64_t *pos, uint64_t n,
                         uint64_t *ukb, uint64_t *uvb, int dup, uint32_t vs, int vkind) {
  TDM_GRID_STRIDE(i, n) {
    if (!flag[i]) continue;
    uint64_t e = i + 1;
    while (e < n && kb[e] == kb[i]) e++;
    ukb[pos[i]] = kb[i];
    uvb[pos[i]] = tdm__bt_reduce_run(vb, i, e, dup, vs, vkind);
  }
}

/* The fill: one thread copies a query's whole range. */
__global__ void k_range_fill(const tdm__bt_node *nodes, tdm__bt_geom g, uint32_t root, const void *lo, uint64_t n,
                             const uint64_t *off, void *keys, void *vals, uint32_t ks, uint32_t vs, int kind) {
  TDM_GRID_STRIDE(i, n) {
    uint64_t at = off[i], end = off[i + 1];
    if (at == end) continue;
    uint32_t leaf, pos, s;
    uint64_t r = tdm__bt_descend(nodes, root, g.h, tdm__bt_key_bits(lo, i, ks, kind), &leaf, &pos);
    for (; at < end; at++, r++) {
      const tdm__bt_node *x = tdm__bg_locate(nodes, g, r, &s);
      if (keys) tdm__bt_store_key(keys, at, x->key[s], ks, kind);
      if (vals) tdm__bt_store_val(vals, at, x->u.val[s], vs);
    }
  }
}

static tdm_status reduce_runs(tdm_btree *t, tdm__gpu_scope &sc, const uint64_t *kb, const uint64_t *vb, uint64_t n,
                              uint64_t **ukb, uint64_t **uvb, uint64_t *m) {
  tdm_ctx *ctx = t->ctx;
  cudaStream_t s = tdm__stream(ctx);
  unsigned grid = tdm__grid(n);
  uint64_t *flag, *pos;
  tdm_status st;
  if ((st = sc.alloc(n * 8, &flag)) != TDM_OK || (st = sc.alloc(n * 8, &pos)) != TDM_OK) return st;
  k_heads<<<grid, TDM_GPU_BLOCK, 0, s>>>(kb, flag, n);
  if ((st = tdm__launch_check("tdm_btree (run heads)")) != TDM_OK) return st;
  if ((st = tdm__bg_scan_total(ctx, sc, flag, pos, n, m)) != TDM_OK) return st;
  if ((st = sc.alloc(*m * 8, ukb)) != TDM_OK || (st = sc.alloc(*m * 8, uvb)) != TDM_OK) return st;
  k_reduce<<<grid, TDM_GPU_BLOCK, 0, s>>>(kb, vb, flag, pos, n, *ukb, *uvb, t->dup, t->vs, t->vkind);
  return tdm__launch_check("tdm_btree (reduce runs)");
}

static void fill(const tdm_btree *t, const void *lo, size_t n, const uint64_t *off, uint64_t *rank, uint64_t total,
                 void *keys, void *vals) {
  (void)rank;
  (void)total;
  k_range_fill<<<tdm__grid(n), TDM_GPU_BLOCK, 0, tdm__stream(t->ctx)>>>(BG(t)->d_nodes, BG(t)->geom, t->root, lo, n,
                                                                       off, keys, vals, t->ks, t->vs, t->kind);
}

static const tdm__bg_design legacy = {
    .reduce = reduce_runs,
    .search_arrays = NULL,
    .find = tdm__bg_find_descend,
    .rank = tdm__bg_rank_descend,
    .counts = tdm__bg_counts_descend,
    .fill_rank_bytes = 0,
    .fill = fill,
    .validate = NULL,
};

static tdm_status build(tdm_btree *t, const void *keys, const void *values, size_t n) {
  return tdm__bg_build(t, &legacy, keys, values, n);
}

const tdm__btree_ops tdm__btree_cuda_legacy_ops = TDM__BG_OPS(build);
