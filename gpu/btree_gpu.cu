/*
 * btree_gpu.cu: the CUDA backend of the B+ tree.
 *
 * A CUDA tree lives in device memory in the bulk-load layout of
 * include/tandem/detail/btree_node.h (leaves contiguous and in key order, sizes spread evenly),
 * filled by the same tdm__bt_fill_leaf / tdm__bt_fill_inner functions the CPU
 * runs, one node per thread.
 *
 *  - build: stage a copy of the input, stable CUB radix sort (tdm__gpu_sort),
 *    mark run heads, exclusive scan, one thread per run reduces it under the
 *    duplicate policy (tdm__bt_reduce_run, shared with the CPU), fill nodes.
 *  - find / rank / range_count (legacy): one thread per query walks root to
 *    leaf with tdm__bt_descend; the upper levels are few and hot in L2, so
 *    each query pays roughly one uncached leaf access.
 *  - find / rank / range_count (v2): a group of 8 lanes searches one node
 *    together (each lane compares two keys read with one 16-byte load, two
 *    ballots and popc give the lower-bound slot), inner levels keys-only from
 *    the compact separator array (128 bytes per inner node, built from the
 *    nodes by every install), children, ranks and leaf sizes from the bulk
 *    geometry (include/tandem/detail/btree_lanes.h), so a query reads 128
 *    bytes per inner level, one leaf key line and (find only) one value; no
 *    child index, prefix count or node header. Taken when
 *    tdm__bt_search_plan says the geometry describes the tree (always, since
 *    install is the only writer of the nodes), else the legacy kernels.
 *  - range: counts, exclusive scan into offsets, then one thread per query
 *    copies its hits, mapping global key index -> (leaf, slot) arithmetically.
 *  - insert: the stored keys (in order) followed by the batch are sorted
 *    stably and reduced, so for equal keys the stored entry comes first and
 *    the batch follows in input order: exactly the CPU's semantics for every
 *    policy. Then the tree is rebuilt. Cost: O(size + n) work and up to
 *    about 100 bytes of device scratch per entry (raw copies, 64-bit bits and
 *    values, flags, scan, the sort's double buffers), whatever n is; worth it
 *    for big batches, expensive for tiny ones.
 *  - erase: the batch is sorted, every stored key is kept unless the batch
 *    holds it (binary search), survivors are compacted, the tree is rebuilt.
 *    Same cost model.
 *  - all-or-nothing: a new node array is built on the side and replaces the
 *    old one only when complete.
 * Results (find values, ranks, counts, ranges, export) are identical to the
 * CPU's; the node structure (and so height) may differ after updates, since
 * the CPU updates in place and the GPU rebuilds.
 */
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <string.h>

#include <cooperative_groups.h>
#include <thrust/iterator/counting_iterator.h>

#include "gpu_common.cuh"
#include "tandem/detail/btree_lanes.h"

namespace cg = cooperative_groups;

/* ---- kernels ---------------------------------------------------------------- */

__global__ void k_to_bits(const void *kraw, const void *vraw, uint64_t *kb, uint64_t *vb, uint64_t n, uint32_t ks,
                          uint32_t vs, int kind) {
  TDM_GRID_STRIDE(i, n) {
    kb[i] = tdm__bt_key_bits(kraw, i, ks, kind);
    if (vb) vb[i] = tdm__bt_load_val(vraw, i, vs);
  }
}

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

__global__ void k_fill_leaves(tdm__bt_node *nodes, tdm__bt_geom g, const uint64_t *ukb, const uint64_t *uvb) {
  TDM_GRID_STRIDE(i, (uint64_t)g.cnt[0]) (void)tdm__bt_fill_leaf(nodes, &g, ukb, uvb, 8, 8, TDM_KIND_UNSIGNED, i);
}

__global__ void k_fill_inner(tdm__bt_node *nodes, tdm__bt_geom g, const uint64_t *ukb, uint32_t l) {
  TDM_GRID_STRIDE(i, (uint64_t)g.cnt[l]) tdm__bt_fill_inner(nodes, &g, ukb, 8, TDM_KIND_UNSIGNED, l, i);
}

/* Key index i of a bulk-layout tree -> its leaf and slot. */
__device__ __forceinline__ const tdm__bt_node *locate(const tdm__bt_node *nodes, const tdm__bt_geom &g, uint64_t i,
                                                     uint32_t *slot) {
  uint64_t leaf = tdm__bt_even_part(g.m, g.cnt[0], i);
  *slot = (uint32_t)(i - tdm__bt_even_start(g.m, g.cnt[0], leaf));
  return &nodes[g.base[0] + leaf];
}

__global__ void k_export_bits(const tdm__bt_node *nodes, tdm__bt_geom g, uint64_t *kb, uint64_t *vb) {
  TDM_GRID_STRIDE(i, g.m) {
    uint32_t s;
    const tdm__bt_node *x = locate(nodes, g, i, &s);
    kb[i] = x->key[s];
    vb[i] = x->u.val[s];
  }
}

__global__ void k_export(const tdm__bt_node *nodes, tdm__bt_geom g, void *keys, void *vals, uint32_t ks, uint32_t vs,
                         int kind) {
  TDM_GRID_STRIDE(i, g.m) {
    uint32_t s;
    const tdm__bt_node *x = locate(nodes, g, i, &s);
    if (keys) tdm__bt_store_key(keys, i, x->key[s], ks, kind);
    if (vals) tdm__bt_store_val(vals, i, x->u.val[s], vs);
  }
}

__global__ void k_find(const tdm__bt_node *nodes, uint32_t root, uint32_t h, const void *q, uint64_t n, uint32_t ks,
                       int kind, void *vals, uint8_t *found, uint32_t vs) {
  TDM_GRID_STRIDE(i, n) {
    uint64_t b = tdm__bt_key_bits(q, i, ks, kind);
    uint32_t leaf, pos;
    (void)tdm__bt_descend(nodes, root, h, b, &leaf, &pos);
    int hit = tdm__bt_leaf_hit(&nodes[leaf], pos, b);
    if (found) found[i] = (uint8_t)hit;
    if (vals) tdm__bt_store_val(vals, i, hit ? nodes[leaf].u.val[pos] : 0, vs);
  }
}

__global__ void k_rank(const tdm__bt_node *nodes, uint32_t root, uint32_t h, const void *q, uint64_t n, uint32_t ks,
                       int kind, uint64_t *rank) {
  TDM_GRID_STRIDE(i, n) {
    uint32_t leaf, pos;
    rank[i] = tdm__bt_descend(nodes, root, h, tdm__bt_key_bits(q, i, ks, kind), &leaf, &pos);
  }
}

/* Counts of lo[i] <= k <= hi[i]; with cnt_len = n + 1 the extra slot gets 0
 * so an exclusive scan of the array yields the offsets and the total. */
__global__ void k_range_count(const tdm__bt_node *nodes, uint32_t root, uint32_t h, const void *lo, const void *hi,
                              uint64_t n, uint64_t cnt_len, uint32_t ks, int kind, uint64_t *cnt) {
  TDM_GRID_STRIDE(i, cnt_len) {
    if (i >= n) {
      cnt[i] = 0;
      continue;
    }
    uint64_t a = tdm__bt_key_bits(lo, i, ks, kind), b = tdm__bt_key_bits(hi, i, ks, kind);
    uint32_t leaf, pos;
    uint64_t ra = tdm__bt_descend(nodes, root, h, a, &leaf, &pos);
    uint64_t rb = tdm__bt_descend(nodes, root, h, b, &leaf, &pos);
    rb += (uint64_t)tdm__bt_leaf_hit(&nodes[leaf], pos, b);
    cnt[i] = a <= b ? rb - ra : 0;
  }
}

/* Rank of each query's lo (only where its range is not empty). */
__global__ void k_range_lo_rank(const tdm__bt_node *nodes, uint32_t root, uint32_t h, const void *lo, uint64_t n,
                                const uint64_t *off, uint32_t ks, int kind, uint64_t *rank) {
  TDM_GRID_STRIDE(i, n) {
    uint32_t leaf, pos;
    if (off[i] != off[i + 1]) rank[i] = tdm__bt_descend(nodes, root, h, tdm__bt_key_bits(lo, i, ks, kind), &leaf, &pos);
  }
}

/* One thread per output element: its query (tdm__bt_csr_owner), then the
 * key index rank(lo) + position within the query's range. */
__global__ void k_range_fill_out(const tdm__bt_node *nodes, tdm__bt_geom g, uint64_t n, const uint64_t *off,
                                 const uint64_t *rank, uint64_t total, void *keys, void *vals, uint32_t ks,
                                 uint32_t vs, int kind) {
  TDM_GRID_STRIDE(j, total) {
    uint64_t i = tdm__bt_csr_owner(off, n, j);
    uint32_t s;
    const tdm__bt_node *x = locate(nodes, g, rank[i] + (j - off[i]), &s);
    if (keys) tdm__bt_store_key(keys, j, x->key[s], ks, kind);
    if (vals) tdm__bt_store_val(vals, j, x->u.val[s], vs);
  }
}

/* The first design's fill: one thread copies a query's whole range (kept
 * for TANDEM_GPU_DESIGN=legacy). */
__global__ void k_range_fill(const tdm__bt_node *nodes, tdm__bt_geom g, uint32_t root, const void *lo, uint64_t n,
                             const uint64_t *off, void *keys, void *vals, uint32_t ks, uint32_t vs, int kind) {
  TDM_GRID_STRIDE(i, n) {
    uint64_t at = off[i], end = off[i + 1];
    if (at == end) continue;
    uint32_t leaf, pos, s;
    uint64_t r = tdm__bt_descend(nodes, root, g.h, tdm__bt_key_bits(lo, i, ks, kind), &leaf, &pos);
    for (; at < end; at++, r++) {
      const tdm__bt_node *x = locate(nodes, g, r, &s);
      if (keys) tdm__bt_store_key(keys, at, x->key[s], ks, kind);
      if (vals) tdm__bt_store_val(vals, at, x->u.val[s], vs);
    }
  }
}

/* ---- v2 search: a group of lanes per query ------------------------------------ */

/* Lanes per query. 8: each lane reads two keys of a node with one 16-byte
 * load, so the group's read of a node's 128 key bytes is one coalesced
 * sweep and a warp serves four queries. */
#define BT_LANES 8u

/* The separator array: word j of it for j < words. */
__global__ void k_fill_seps(const tdm__bt_node *nodes, tdm__bt_geom g, uint64_t *seps, uint64_t words) {
  TDM_GRID_STRIDE(j, words) seps[j] = tdm__bt_sep_word(nodes, &g, j);
}

/* The lower-bound slot of q among the 16 words at key (16-byte aligned:
 * nodes are 384 bytes and separator blocks 128 bytes, in 256-byte aligned
 * allocations), computed by the whole tile. */
template <unsigned G>
static __device__ __forceinline__ uint32_t group_lower(const cg::thread_block_tile<G> &tile, const uint64_t *key,
                                                       uint64_t q) {
  constexpr uint32_t S = 16u / G;
  static_assert((G == 8 || G == 16) && TDM_GPU_BLOCK % 32u == 0, "a lane group must lie within one warp");
  uint64_t w[S];
  if constexpr (S == 2) {
    ulonglong2 v = __ldg(reinterpret_cast<const ulonglong2 *>(key) + tile.thread_rank());
    w[0] = v.x;
    w[1] = v.y;
  } else {
    w[0] = __ldg(reinterpret_cast<const unsigned long long *>(key) + tile.thread_rank());
  }
  uint32_t c = tdm__bt_lane_words_lower(w, S, q);
  return tdm__bt_lanes_combine(__popc(tile.ballot((c & 1u) != 0)), __popc(tile.ballot((c & 2u) != 0)));
}

/* Keys-only descent of q: the leaf (index within level 0, which starts at
 * node 0) and the lower-bound slot in it. */
template <unsigned G>
static __device__ __forceinline__ uint32_t group_descend(const cg::thread_block_tile<G> &tile,
                                                         const tdm__bt_node *nodes, const uint64_t *seps,
                                                         const tdm__bt_lgeom &lg, uint64_t q, uint32_t *pos) {
  uint32_t n = 0;
  for (uint32_t l = lg.h - 1; l > 0; l--)
    n = tdm__bt_lg_child(&lg, l, n, group_lower(tile, seps + tdm__bt_lg_sep(&lg, l, n), q));
  *pos = group_lower(tile, nodes[n].key, q);
  return n;
}

/* The grid-stride loop over queries, one tile per query: every lane of a
 * tile takes the same i, so the tile's ballots always see all its lanes. */
#define TDM_GROUP_STRIDE(i, n, G)                                                                     \
  for (size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / (G); i < (n);                  \
       i += (size_t)gridDim.x * blockDim.x / (G))

template <unsigned G>
__global__ void __launch_bounds__(TDM_GPU_BLOCK)
    k_find_lanes(const tdm__bt_node *__restrict__ nodes, const uint64_t *__restrict__ seps,
                 const __grid_constant__ tdm__bt_lgeom lg, const void *q, uint64_t n, uint32_t ks, int kind,
                 void *vals, uint8_t *found, uint32_t vs) {
  cg::thread_block_tile<G> tile = cg::tiled_partition<G>(cg::this_thread_block());
  TDM_GROUP_STRIDE(i, n, G) {
    uint64_t b = tdm__bt_key_bits(q, i, ks, kind);
    uint32_t pos, leaf = group_descend(tile, nodes, seps, lg, b, &pos);
    if (tile.thread_rank() == 0) {
      const tdm__bt_node *x = &nodes[leaf];
      int hit = tdm__bt_lg_leaf_hit(x->key, pos, tdm__bt_lg_leaf_count(&lg, leaf), b);
      if (found) found[i] = (uint8_t)hit;
      if (vals) tdm__bt_store_val(vals, i, hit ? x->u.val[pos] : 0, vs);
    }
  }
}

/* Ranks from the geometry (no prefix counts). With off (the range's
 * offsets), only queries whose range is not empty are ranked. */
template <unsigned G>
__global__ void __launch_bounds__(TDM_GPU_BLOCK)
    k_rank_lanes(const tdm__bt_node *__restrict__ nodes, const uint64_t *__restrict__ seps,
                 const __grid_constant__ tdm__bt_lgeom lg, const void *q, uint64_t n, const uint64_t *off, uint32_t ks,
                 int kind, uint64_t *rank) {
  cg::thread_block_tile<G> tile = cg::tiled_partition<G>(cg::this_thread_block());
  TDM_GROUP_STRIDE(i, n, G) {
    if (off && off[i] == off[i + 1]) continue; /* the same for the whole tile */
    uint32_t pos, leaf = group_descend(tile, nodes, seps, lg, tdm__bt_key_bits(q, i, ks, kind), &pos);
    if (tile.thread_rank() == 0) rank[i] = tdm__bt_lg_leaf_start(&lg, leaf) + pos;
  }
}

/* Counts as k_range_count computes them, with cnt_len >= n slots. */
template <unsigned G>
__global__ void __launch_bounds__(TDM_GPU_BLOCK)
    k_range_count_lanes(const tdm__bt_node *__restrict__ nodes, const uint64_t *__restrict__ seps,
                        const __grid_constant__ tdm__bt_lgeom lg, const void *lo, const void *hi, uint64_t n,
                        uint64_t cnt_len, uint32_t ks, int kind, uint64_t *cnt) {
  cg::thread_block_tile<G> tile = cg::tiled_partition<G>(cg::this_thread_block());
  TDM_GROUP_STRIDE(i, cnt_len, G) {
    if (i >= n) {
      if (tile.thread_rank() == 0) cnt[i] = 0;
      continue;
    }
    uint64_t a = tdm__bt_key_bits(lo, i, ks, kind), b = tdm__bt_key_bits(hi, i, ks, kind);
    uint32_t pa, pb, la = group_descend(tile, nodes, seps, lg, a, &pa);
    uint32_t lb = group_descend(tile, nodes, seps, lg, b, &pb);
    if (tile.thread_rank() == 0) {
      uint64_t ra = tdm__bt_lg_leaf_start(&lg, la) + pa, rb = tdm__bt_lg_leaf_start(&lg, lb) + pb;
      rb += (uint64_t)tdm__bt_lg_leaf_hit(nodes[lb].key, pb, tdm__bt_lg_leaf_count(&lg, lb), b);
      cnt[i] = a <= b ? rb - ra : 0;
    }
  }
}

/* keep[i] = 1 unless sorted batch bits bb[0..nb) hold kb[i]. */
__global__ void k_keep(const uint64_t *kb, uint64_t m, const uint64_t *bb, uint64_t nb, uint64_t *keep) {
  TDM_GRID_STRIDE(i, m) {
    uint64_t lo = 0, hi = nb, x = kb[i];
    while (lo < hi) {
      uint64_t mid = (lo + hi) / 2;
      if (bb[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    keep[i] = (lo < nb && bb[lo] == x) ? 0 : 1;
  }
}

__global__ void k_compact(const uint64_t *kb, const uint64_t *vb, const uint64_t *keep, const uint64_t *pos,
                          uint64_t m, uint64_t *ukb, uint64_t *uvb) {
  TDM_GRID_STRIDE(i, m) {
    if (!keep[i]) continue;
    ukb[pos[i]] = kb[i];
    uvb[pos[i]] = vb[i];
  }
}

/* ---- helpers ------------------------------------------------------------------ */

/* A CUDA tree's private state (at t->be): always in bulk-loaded layout (its
 * batched updates merge and rebuild), so geom describes it exactly. Under
 * design v2 install also keeps the compact separator array of the inner
 * nodes (d_seps, NULL for a tree of one leaf) and the geometry in the
 * search's form (lgeom); bulk records that the nodes were written from geom
 * (install is their only writer), which tdm__bt_search_plan requires. */
struct btree_gpu {
  tdm__bt_node *d_nodes;
  uint64_t *d_seps;
  tdm__bt_geom geom;
  tdm__bt_lgeom lgeom;
  int bulk;
};

static btree_gpu *BG(const tdm_btree *t) { return (btree_gpu *)t->be; }

/* 1 when the queries of t run the v2 lane-group search: design v2 and a tree
 * the geometry describes; otherwise the legacy descent kernels, which follow
 * the child arrays and need nothing of the geometry. */
static int lanes_search(const tdm_btree *t) {
  const btree_gpu *b = BG(t);
  return t->ctx->gpu->design != TDM__GPU_LEGACY &&
         tdm__bt_search_plan(&b->geom, b->bulk, t->size, t->root, t->height, b->d_seps) == TDM__BT_SEARCH_LANES;
}

/* Exclusive scan of n u64 flags into out; *total receives the sum. */
static tdm_status scan_total(tdm_ctx *ctx, tdm__gpu_scope &sc, const uint64_t *flag, uint64_t *out, uint64_t n,
                             uint64_t *total) {
  size_t temp_bytes = 0;
  void *temp = NULL;
  uint64_t last[2];
  tdm_status st;
  cudaStream_t s = tdm__stream(ctx);
  TDM_CUDA_TRY(cub::DeviceScan::ExclusiveSum(NULL, temp_bytes, flag, out, (size_t)n, s), (void)0);
  if ((st = sc.alloc(temp_bytes ? temp_bytes : 1, &temp)) != TDM_OK) return st;
  TDM_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, flag, out, (size_t)n, s), (void)0);
  TDM_CUDA_TRY(cudaMemcpyAsync(&last[0], out + n - 1, 8, cudaMemcpyDeviceToHost, s), (void)0);
  TDM_CUDA_TRY(cudaMemcpyAsync(&last[1], flag + n - 1, 8, cudaMemcpyDeviceToHost, s), (void)0);
  if ((st = tdm__gpu_sync(ctx, "tdm_btree (scan)")) != TDM_OK) return st;
  *total = last[0] + last[1];
  return TDM_OK;
}

/* Builds a bulk-layout node array from m sorted unique key bits / values and
 * installs it in t, freeing the old one. Nothing in t changes on failure. */
static tdm_status install(tdm_btree *t, const uint64_t *ukb, const uint64_t *uvb, uint64_t m) {
  tdm_ctx *ctx = t->ctx;
  cudaStream_t s = tdm__stream(ctx);
  tdm__gpu_scope sc(ctx);
  tdm__bt_geom g;
  tdm__bt_node *nn = NULL;
  uint64_t *ns = NULL, words = 0;
  tdm_status st;
  memset(&g, 0, sizeof g);
  if (m > 0) {
    tdm__bt_geom_init(&g, m);
    if (g.nodes >= TDM_BT_NIL)
      return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "tdm_btree: %llu keys need more than 2^32 - 1 nodes",
                       (unsigned long long)m);
    /* Both arrays are taken before the old ones are touched. */
    if (ctx->gpu->design != TDM__GPU_LEGACY) words = tdm__bt_sep_words(&g);
    if ((st = sc.alloc((size_t)g.nodes * sizeof(tdm__bt_node), &nn)) != TDM_OK ||
        (st = sc.alloc((size_t)words * 8, &ns)) != TDM_OK)
      return st;
    k_fill_leaves<<<tdm__grid(g.cnt[0]), TDM_GPU_BLOCK, 0, s>>>(nn, g, ukb, uvb);
    for (uint32_t l = 1; l < g.h; l++) k_fill_inner<<<tdm__grid(g.cnt[l]), TDM_GPU_BLOCK, 0, s>>>(nn, g, ukb, l);
    if (words) k_fill_seps<<<tdm__grid(words), TDM_GPU_BLOCK, 0, s>>>(nn, g, ns, words);
    if ((st = tdm__launch_check("tdm_btree (fill nodes)")) != TDM_OK ||
        (st = tdm__gpu_sync(ctx, "tdm_btree (fill nodes)")) != TDM_OK)
      return st;
    sc.keep(nn);
    sc.keep(ns);
  }
  tdm__gpu_free(ctx, BG(t)->d_nodes);
  tdm__gpu_free(ctx, BG(t)->d_seps);
  BG(t)->d_nodes = nn;
  BG(t)->d_seps = ns;
  BG(t)->geom = g;
  if (m > 0) tdm__bt_lgeom_init(&BG(t)->lgeom, &g);
  BG(t)->bulk = m > 0; /* written from g just now */
  t->size = m;
  t->height = m ? g.h : 0;
  t->root = m ? (uint32_t)(g.nodes - 1) : TDM_BT_NIL;
  t->first_leaf = m ? 0 : TDM_BT_NIL;
  t->last_leaf = m ? g.cnt[0] - 1 : TDM_BT_NIL;
  return TDM_OK;
}

/* Sorts n raw keys / values already in device buffers (modified in place),
 * reduces duplicate runs and installs the result as t's nodes. */
/* The duplicate policy as CUB reduction operators that are commutative as
 * well as associative, since CUB does not document that ReduceByKey applies
 * its operator in input order: dup_op folds SUM / MIN / MAX values
 * (tdm__dup_combine), pick_op reduces the positions of a KEEP_FIRST /
 * KEEP_LAST run to its first / last (tdm__dup_pick; the sort is stable, so
 * that is the stored entry or the batch copy the CPU keeps). Either way the
 * result equals the sequential fold tdm__bt_reduce_run the CPU runs
 * (tests/test_hd_spread.c folds both in any grouping and operand order). */
struct pick_op {
  int dup;
  __device__ __forceinline__ uint64_t operator()(uint64_t a, uint64_t b) const { return tdm__dup_pick(a, b, dup); }
};

/* uvb[u] = vb[uvb[u]]: a picked position to its value (each thread reads
 * and writes only its own u). */
__global__ void k_pick_values(const uint64_t *vb, uint64_t *uvb, uint64_t m) {
  TDM_GRID_STRIDE(u, m) uvb[u] = vb[uvb[u]];
}

struct dup_op {
  int dup;
  uint32_t vs;
  int vkind;
  __device__ __forceinline__ uint64_t operator()(uint64_t a, uint64_t b) const {
    return tdm__dup_combine(a, b, dup, vs, vkind);
  }
};

/* The v2 reduce: CUB's reduce-by-key over the sorted bits, so a run of equal
 * keys of any length is reduced by the whole grid (the legacy k_reduce gives
 * a run to one thread: all-equal keys made one thread fold the whole input). */
static tdm_status reduce_by_key(tdm_btree *t, tdm__gpu_scope &sc, const uint64_t *kb, const uint64_t *vb, uint64_t n,
                                uint64_t **ukb, uint64_t **uvb, uint64_t *m) {
  tdm_ctx *ctx = t->ctx;
  cudaStream_t s = tdm__stream(ctx);
  dup_op op = {(int)t->dup, t->vs, t->vkind};
  pick_op pick = {(int)t->dup};
  const int by_pos = tdm__dup_by_position((int)t->dup);
  const thrust::counting_iterator<uint64_t> at(0);
  size_t temp_bytes = 0;
  void *temp;
  uint64_t *d_runs, runs = 0;
  tdm_status st;
  if (by_pos)
    TDM_CUDA_TRY(cub::DeviceReduce::ReduceByKey(NULL, temp_bytes, kb, (uint64_t *)NULL, at, (uint64_t *)NULL,
                                                (uint64_t *)NULL, pick, (int64_t)n, s),
                 (void)0);
  else
    TDM_CUDA_TRY(cub::DeviceReduce::ReduceByKey(NULL, temp_bytes, kb, (uint64_t *)NULL, vb, (uint64_t *)NULL,
                                                (uint64_t *)NULL, op, (int64_t)n, s),
                 (void)0);
  if ((st = sc.alloc(n * 8, ukb)) != TDM_OK || (st = sc.alloc(n * 8, uvb)) != TDM_OK ||
      (st = sc.alloc(8, &d_runs)) != TDM_OK || (st = sc.alloc(temp_bytes ? temp_bytes : 1, &temp)) != TDM_OK)
    return st;
  if (by_pos)
    TDM_CUDA_TRY(cub::DeviceReduce::ReduceByKey(temp, temp_bytes, kb, *ukb, at, *uvb, d_runs, pick, (int64_t)n, s),
                 (void)0);
  else
    TDM_CUDA_TRY(cub::DeviceReduce::ReduceByKey(temp, temp_bytes, kb, *ukb, vb, *uvb, d_runs, op, (int64_t)n, s),
                 (void)0);
  TDM_CUDA_TRY(cudaMemcpyAsync(&runs, d_runs, 8, cudaMemcpyDeviceToHost, s), (void)0);
  if ((st = tdm__gpu_sync(ctx, "tdm_btree (reduce by key)")) != TDM_OK) return st;
  if (by_pos && runs) {
    k_pick_values<<<tdm__grid(runs), TDM_GPU_BLOCK, 0, s>>>(vb, *uvb, runs);
    if ((st = tdm__launch_check("tdm_btree (pick values)")) != TDM_OK) return st;
  }
  *m = runs;
  return TDM_OK;
}

static tdm_status sort_reduce_install(tdm_btree *t, tdm__gpu_scope &sc, void *d_k, void *d_v, uint64_t n) {
  tdm_ctx *ctx = t->ctx;
  cudaStream_t s = tdm__stream(ctx);
  uint64_t *kb, *vb, *flag, *pos, *ukb, *uvb, m = 0;
  unsigned grid = tdm__grid(n);
  tdm_status st;
  if (n > 1 && (st = tdm__gpu_sort(ctx, t->key_type, d_k, t->value_type, d_v, n, 0)) != TDM_OK) return st;
  if (ctx->gpu->design != TDM__GPU_LEGACY) {
    if ((st = sc.alloc(n * 8, &kb)) != TDM_OK || (st = sc.alloc(n * 8, &vb)) != TDM_OK) return st;
    k_to_bits<<<grid, TDM_GPU_BLOCK, 0, s>>>(d_k, d_v, kb, vb, n, t->ks, t->vs, t->kind);
    if ((st = tdm__launch_check("tdm_btree (key bits)")) != TDM_OK) return st;
    if ((st = reduce_by_key(t, sc, kb, vb, n, &ukb, &uvb, &m)) != TDM_OK) return st;
    return install(t, ukb, uvb, m);
  }
  if ((st = sc.alloc(n * 8, &kb)) != TDM_OK || (st = sc.alloc(n * 8, &vb)) != TDM_OK ||
      (st = sc.alloc(n * 8, &flag)) != TDM_OK || (st = sc.alloc(n * 8, &pos)) != TDM_OK)
    return st;
  k_to_bits<<<grid, TDM_GPU_BLOCK, 0, s>>>(d_k, d_v, kb, vb, n, t->ks, t->vs, t->kind);
  k_heads<<<grid, TDM_GPU_BLOCK, 0, s>>>(kb, flag, n);
  if ((st = tdm__launch_check("tdm_btree (run heads)")) != TDM_OK) return st;
  if ((st = scan_total(ctx, sc, flag, pos, n, &m)) != TDM_OK) return st;
  if ((st = sc.alloc(m * 8, &ukb)) != TDM_OK || (st = sc.alloc(m * 8, &uvb)) != TDM_OK) return st;
  k_reduce<<<grid, TDM_GPU_BLOCK, 0, s>>>(kb, vb, flag, pos, n, ukb, uvb, t->dup, t->vs, t->vkind);
  if ((st = tdm__launch_check("tdm_btree (reduce runs)")) != TDM_OK) return st;
  return install(t, ukb, uvb, m);
}

/* Copies bytes from the caller's array (host or device) into device memory. */
static tdm_status copy_in(tdm_ctx *ctx, void *dst, const void *src, size_t bytes) {
  TDM_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, tdm__stream(ctx)), (void)0);
  return TDM_OK;
}

/* Fills n bytes of device memory with zeros (the answers of an empty tree). */
static tdm_status zero(tdm_ctx *ctx, void *d, size_t bytes, const char *where) {
  cudaError_t e = cudaMemsetAsync(d, 0, bytes, tdm__stream(ctx));
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return tdm__cuda_fail(e, where, __FILE__, __LINE__);
  }
  return TDM_OK;
}

/* ---- operations ------------------------------------------------------------ */

static tdm_status bg_build(tdm_btree *t, const void *keys, const void *values, size_t n) {
  tdm_ctx *ctx = t->ctx;
  tdm__gpu_scope sc(ctx);
  void *d_k, *d_v;
  tdm_status st;
  if ((st = sc.enter()) != TDM_OK) return st;
  if (n == 0) return install(t, NULL, NULL, 0);
  if ((st = sc.alloc(n * t->ks, &d_k)) != TDM_OK || (st = sc.alloc(n * t->vs, &d_v)) != TDM_OK ||
      (st = copy_in(ctx, d_k, keys, n * t->ks)) != TDM_OK || (st = copy_in(ctx, d_v, values, n * t->vs)) != TDM_OK)
    return st;
  return sort_reduce_install(t, sc, d_k, d_v, n);
}

static void bg_destroy(tdm_btree *t) {
  tdm__gpu_device dev;
  if (BG(t)->d_nodes || BG(t)->d_seps) {
    (void)dev.enter(t->ctx);
    tdm__gpu_free(t->ctx, BG(t)->d_nodes);
    tdm__gpu_free(t->ctx, BG(t)->d_seps);
    (void)cudaStreamSynchronize(tdm__stream(t->ctx));
    BG(t)->d_nodes = NULL;
    BG(t)->d_seps = NULL;
  }
}

static tdm_status bg_insert(tdm_btree *t, const void *keys, const void *values, size_t n) {
  tdm_ctx *ctx = t->ctx;
  cudaStream_t s = tdm__stream(ctx);
  tdm__gpu_scope sc(ctx);
  uint64_t m = t->size, total = m + n;
  char *d_k, *d_v;
  tdm_status st;
  if ((st = sc.enter()) != TDM_OK) return st;
  /* Stored entries first (raw form, in key order), then the batch. */
  if ((st = sc.alloc(total * t->ks, &d_k)) != TDM_OK || (st = sc.alloc(total * t->vs, &d_v)) != TDM_OK) return st;
  if (m > 0) {
    k_export<<<tdm__grid(m), TDM_GPU_BLOCK, 0, s>>>(BG(t)->d_nodes, BG(t)->geom, d_k, d_v, t->ks, t->vs, t->kind);
    if ((st = tdm__launch_check("tdm_btree_insert (export)")) != TDM_OK) return st;
  }
  if ((st = copy_in(ctx, d_k + m * t->ks, keys, n * t->ks)) != TDM_OK ||
      (st = copy_in(ctx, d_v + m * t->vs, values, n * t->vs)) != TDM_OK)
    return st;
  return sort_reduce_install(t, sc, d_k, d_v, total);
}

static tdm_status bg_erase(tdm_btree *t, const void *keys, size_t n, size_t *erased_out) {
  tdm_ctx *ctx = t->ctx;
  cudaStream_t s = tdm__stream(ctx);
  tdm__gpu_scope sc(ctx);
  uint64_t m = t->size, kept = 0, *bb, *kb, *vb, *keep, *pos, *ukb, *uvb;
  void *d_k;
  tdm_status st;
  if ((st = sc.enter()) != TDM_OK) return st;
  if (m == 0) {
    if (erased_out) *erased_out = 0;
    return TDM_OK;
  }
  if ((st = sc.alloc(n * t->ks, &d_k)) != TDM_OK || (st = sc.alloc(n * 8, &bb)) != TDM_OK ||
      (st = sc.alloc(m * 8, &kb)) != TDM_OK || (st = sc.alloc(m * 8, &vb)) != TDM_OK ||
      (st = sc.alloc(m * 8, &keep)) != TDM_OK || (st = sc.alloc(m * 8, &pos)) != TDM_OK)
    return st;
  if ((st = copy_in(ctx, d_k, keys, n * t->ks)) != TDM_OK) return st;
  if (n > 1 && (st = tdm__gpu_sort(ctx, t->key_type, d_k, t->key_type, NULL, n, 0)) != TDM_OK) return st;
  k_to_bits<<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>(d_k, NULL, bb, NULL, n, t->ks, t->vs, t->kind);
  k_export_bits<<<tdm__grid(m), TDM_GPU_BLOCK, 0, s>>>(BG(t)->d_nodes, BG(t)->geom, kb, vb);
  k_keep<<<tdm__grid(m), TDM_GPU_BLOCK, 0, s>>>(kb, m, bb, n, keep);
  if ((st = tdm__launch_check("tdm_btree_erase (mark)")) != TDM_OK) return st;
  if ((st = scan_total(ctx, sc, keep, pos, m, &kept)) != TDM_OK) return st;
  if (kept < m) {
    if ((st = sc.alloc(kept * 8 + 8, &ukb)) != TDM_OK || (st = sc.alloc(kept * 8 + 8, &uvb)) != TDM_OK) return st;
    k_compact<<<tdm__grid(m), TDM_GPU_BLOCK, 0, s>>>(kb, vb, keep, pos, m, ukb, uvb);
    if ((st = tdm__launch_check("tdm_btree_erase (compact)")) != TDM_OK) return st;
    if ((st = install(t, ukb, uvb, kept)) != TDM_OK) return st;
  }
  if (erased_out) *erased_out = (size_t)(m - kept);
  return TDM_OK;
}

/* Queries stage their inputs and outputs (host arrays get device copies),
 * launch one thread per query and copy outputs back. */
static tdm_status bg_find(const tdm_btree *t, const void *keys, void *values_out, uint8_t *found_out, size_t n) {
  tdm_ctx *ctx = t->ctx;
  tdm__gpu_scope sc(ctx);
  tdm__dev_array q, v, f;
  tdm_status st;
  memset(&v, 0, sizeof v);
  memset(&f, 0, sizeof f);
  if ((st = sc.enter()) != TDM_OK) return st;
  if ((st = sc.in(keys, n * t->ks, &q)) != TDM_OK) return st;
  if ((values_out && (st = sc.out(values_out, n * t->vs, &v)) != TDM_OK) ||
      (found_out && (st = sc.out(found_out, n, &f)) != TDM_OK))
    return st;
  if (t->size == 0) {
    if ((values_out && (st = zero(ctx, v.d, n * t->vs, "tdm_btree_find (memset)")) != TDM_OK) ||
        (found_out && (st = zero(ctx, f.d, n, "tdm_btree_find (memset)")) != TDM_OK))
      return st;
  } else if (lanes_search(t)) {
    k_find_lanes<BT_LANES><<<tdm__grid(n * BT_LANES), TDM_GPU_BLOCK, 0, tdm__stream(ctx)>>>(
        BG(t)->d_nodes, BG(t)->d_seps, BG(t)->lgeom, q.d, n, t->ks, t->kind, values_out ? v.d : NULL,
        (uint8_t *)(found_out ? f.d : NULL), t->vs);
    if ((st = tdm__launch_check("tdm_btree_find")) != TDM_OK) return st;
  } else {
    k_find<<<tdm__grid(n), TDM_GPU_BLOCK, 0, tdm__stream(ctx)>>>(BG(t)->d_nodes, t->root, t->height, q.d, n, t->ks,
                                                                 t->kind, values_out ? v.d : NULL,
                                                                 (uint8_t *)(found_out ? f.d : NULL), t->vs);
    if ((st = tdm__launch_check("tdm_btree_find")) != TDM_OK) return st;
  }
  if ((values_out && (st = tdm__gpu_out_finish(ctx, &v)) != TDM_OK) ||
      (found_out && (st = tdm__gpu_out_finish(ctx, &f)) != TDM_OK))
    return st;
  return sc.finish("tdm_btree_find");
}

static tdm_status bg_rank(const tdm_btree *t, const void *keys, uint64_t *rank_out, size_t n) {
  tdm_ctx *ctx = t->ctx;
  tdm__gpu_scope sc(ctx);
  tdm__dev_array q, r;
  tdm_status st;
  if ((st = sc.enter()) != TDM_OK) return st;
  if ((st = sc.in(keys, n * t->ks, &q)) != TDM_OK || (st = sc.out(rank_out, n * 8, &r)) != TDM_OK) return st;
  if (t->size == 0) {
    if ((st = zero(ctx, r.d, n * 8, "tdm_btree_rank (memset)")) != TDM_OK) return st;
  } else if (lanes_search(t)) {
    k_rank_lanes<BT_LANES><<<tdm__grid(n * BT_LANES), TDM_GPU_BLOCK, 0, tdm__stream(ctx)>>>(
        BG(t)->d_nodes, BG(t)->d_seps, BG(t)->lgeom, q.d, n, (const uint64_t *)NULL, t->ks, t->kind,
        (uint64_t *)r.d);
    if ((st = tdm__launch_check("tdm_btree_rank")) != TDM_OK) return st;
  } else {
    k_rank<<<tdm__grid(n), TDM_GPU_BLOCK, 0, tdm__stream(ctx)>>>(BG(t)->d_nodes, t->root, t->height, q.d, n, t->ks,
                                                                 t->kind, (uint64_t *)r.d);
    if ((st = tdm__launch_check("tdm_btree_rank")) != TDM_OK) return st;
  }
  if ((st = tdm__gpu_out_finish(ctx, &r)) != TDM_OK) return st;
  return sc.finish("tdm_btree_rank");
}

/* Counts for n queries into the device array d_cnt of cnt_len >= n entries. */
static tdm_status counts(const tdm_btree *t, const void *d_lo, const void *d_hi, size_t n, uint64_t cnt_len,
                         uint64_t *d_cnt) {
  cudaStream_t s = tdm__stream(t->ctx);
  if (t->size == 0) {
    TDM_CUDA_TRY(cudaMemsetAsync(d_cnt, 0, cnt_len * 8, s), (void)0);
    return TDM_OK;
  }
  if (lanes_search(t))
    k_range_count_lanes<BT_LANES><<<tdm__grid(cnt_len * BT_LANES), TDM_GPU_BLOCK, 0, s>>>(
        BG(t)->d_nodes, BG(t)->d_seps, BG(t)->lgeom, d_lo, d_hi, n, cnt_len, t->ks, t->kind, d_cnt);
  else
    k_range_count<<<tdm__grid(cnt_len), TDM_GPU_BLOCK, 0, s>>>(BG(t)->d_nodes, t->root, t->height, d_lo, d_hi, n,
                                                               cnt_len, t->ks, t->kind, d_cnt);
  return tdm__launch_check("tdm_btree_range_count");
}

static tdm_status bg_range_count(const tdm_btree *t, const void *lo, const void *hi, uint64_t *count_out, size_t n) {
  tdm_ctx *ctx = t->ctx;
  tdm__gpu_scope sc(ctx);
  tdm__dev_array a, b, c;
  tdm_status st;
  if ((st = sc.enter()) != TDM_OK) return st;
  if ((st = sc.in(lo, n * t->ks, &a)) != TDM_OK || (st = sc.in(hi, n * t->ks, &b)) != TDM_OK ||
      (st = sc.out(count_out, n * 8, &c)) != TDM_OK || (st = counts(t, a.d, b.d, n, n, (uint64_t *)c.d)) != TDM_OK ||
      (st = tdm__gpu_out_finish(ctx, &c)) != TDM_OK)
    return st;
  return sc.finish("tdm_btree_range_count");
}

static tdm_status bg_range(const tdm_btree *t, const void *lo, const void *hi, size_t n, uint64_t *offsets_out,
                           void *keys_out, void *values_out, size_t cap) {
  tdm_ctx *ctx = t->ctx;
  cudaStream_t s = tdm__stream(ctx);
  tdm__gpu_scope sc(ctx);
  tdm__dev_array a, b, k, v;
  uint64_t *cnt, *off, *rank = NULL, total = 0;
  tdm_status st;
  memset(&k, 0, sizeof k);
  memset(&v, 0, sizeof v);
  if ((st = sc.enter()) != TDM_OK) return st;
  if (n == 0) {
    static const uint64_t zero_offset = 0;
    TDM_CUDA_TRY(cudaMemcpyAsync(offsets_out, &zero_offset, 8, cudaMemcpyDefault, s), (void)0);
    return tdm__gpu_sync(ctx, "tdm_btree_range");
  }
  if ((st = sc.in(lo, n * t->ks, &a)) != TDM_OK || (st = sc.in(hi, n * t->ks, &b)) != TDM_OK ||
      (st = sc.alloc((n + 1) * 8, &cnt)) != TDM_OK || (st = sc.alloc((n + 1) * 8, &off)) != TDM_OK ||
      (ctx->gpu->design != TDM__GPU_LEGACY && (st = sc.alloc(n * 8, &rank)) != TDM_OK) ||
      (st = counts(t, a.d, b.d, n, n + 1, cnt)) != TDM_OK || (st = scan_total(ctx, sc, cnt, off, n + 1, &total)) != TDM_OK)
    return st;
  TDM_CUDA_TRY(cudaMemcpyAsync(offsets_out, off, (n + 1) * 8, cudaMemcpyDefault, s), (void)0);
  if (total > cap) {
    if ((st = tdm__gpu_sync(ctx, "tdm_btree_range")) != TDM_OK) return st;
    return tdm__fail(TDM_ERR_CAPACITY, "tdm_btree_range: the ranges hold %llu keys, but cap is %zu",
                     (unsigned long long)total, cap);
  }
  if (total > 0) {
    if ((keys_out && (st = sc.out(keys_out, total * t->ks, &k)) != TDM_OK) ||
        (values_out && (st = sc.out(values_out, total * t->vs, &v)) != TDM_OK))
      return st;
    if (ctx->gpu->design == TDM__GPU_LEGACY) {
      k_range_fill<<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>(BG(t)->d_nodes, BG(t)->geom, t->root, a.d, n, off,
                                                          keys_out ? k.d : NULL, values_out ? v.d : NULL, t->ks,
                                                          t->vs, t->kind);
    } else {
      /* Ranks of the queries' lower bounds, then one thread per output. */
      if (lanes_search(t))
        k_rank_lanes<BT_LANES><<<tdm__grid(n * BT_LANES), TDM_GPU_BLOCK, 0, s>>>(
            BG(t)->d_nodes, BG(t)->d_seps, BG(t)->lgeom, a.d, n, off, t->ks, t->kind, rank);
      else
        k_range_lo_rank<<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>(BG(t)->d_nodes, t->root, t->height, a.d, n, off,
                                                               t->ks, t->kind, rank);
      k_range_fill_out<<<tdm__grid(total), TDM_GPU_BLOCK, 0, s>>>(BG(t)->d_nodes, BG(t)->geom, n, off, rank, total,
                                                                  keys_out ? k.d : NULL, values_out ? v.d : NULL,
                                                                  t->ks, t->vs, t->kind);
    }
    if ((st = tdm__launch_check("tdm_btree_range")) != TDM_OK) return st;
    if ((keys_out && (st = tdm__gpu_out_finish(ctx, &k)) != TDM_OK) ||
        (values_out && (st = tdm__gpu_out_finish(ctx, &v)) != TDM_OK))
      return st;
  }
  return tdm__gpu_sync(ctx, "tdm_btree_range");
}

static tdm_status bg_export(const tdm_btree *t, void *keys_out, void *values_out) {
  tdm_ctx *ctx = t->ctx;
  tdm__gpu_scope sc(ctx);
  tdm__dev_array k, v;
  tdm_status st;
  memset(&k, 0, sizeof k);
  memset(&v, 0, sizeof v);
  if ((st = sc.enter()) != TDM_OK) return st;
  if ((keys_out && (st = sc.out(keys_out, t->size * t->ks, &k)) != TDM_OK) ||
      (values_out && (st = sc.out(values_out, t->size * t->vs, &v)) != TDM_OK))
    return st;
  k_export<<<tdm__grid(t->size), TDM_GPU_BLOCK, 0, tdm__stream(ctx)>>>(BG(t)->d_nodes, BG(t)->geom,
                                                                       keys_out ? k.d : NULL, values_out ? v.d : NULL,
                                                                       t->ks, t->vs, t->kind);
  if ((st = tdm__launch_check("tdm_btree_export")) != TDM_OK) return st;
  if ((keys_out && (st = tdm__gpu_out_finish(ctx, &k)) != TDM_OK) ||
      (values_out && (st = tdm__gpu_out_finish(ctx, &v)) != TDM_OK))
    return st;
  return tdm__gpu_sync(ctx, "tdm_btree_export");
}

/* What the v2 search relies on, on host copies: the nodes are the bulk
 * layout of the recorded geometry, and the separator array holds their
 * separators. */
static tdm_status check_search_arrays(const tdm_btree *t, const tdm__bt_node *h) {
  const btree_gpu *b = BG(t);
  uint64_t words = tdm__bt_sep_words(&b->geom), j, *hs;
  size_t bytes = (size_t)words * 8;
  tdm__bt_geom g;
  tdm_status st = TDM_OK;
  if (b->bulk && !tdm__bt_is_bulk_layout(h, b->geom.nodes, t->size, t->root, t->height, &g))
    return tdm__fail(TDM_ERR_CORRUPT, "tdm_btree_validate: tree: bulk layout: the nodes are not the layout the "
                                      "geometry of %llu keys places", (unsigned long long)t->size);
  if (!b->d_seps || !words) return TDM_OK;
  hs = (uint64_t *)tdm__ctx_alloc(t->ctx, bytes);
  if (!hs) return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "tdm_btree_validate: out of host memory for a separator copy");
  TDM_CUDA_TRY(cudaMemcpyAsync(hs, b->d_seps, bytes, cudaMemcpyDeviceToHost, tdm__stream(t->ctx)),
               tdm__ctx_free(t->ctx, hs, bytes));
  if ((st = tdm__gpu_sync(t->ctx, "tdm_btree_validate (copy separators)")) == TDM_OK) {
    for (j = 0; j < words; j++) {
      if (hs[j] != tdm__bt_sep_word(h, &b->geom, j)) {
        st = tdm__fail(TDM_ERR_CORRUPT,
                       "tdm_btree_validate: node %llu: separator array: word %u differs from the node's key",
                       (unsigned long long)(b->geom.cnt[0] + j / 16), (unsigned)(j % 16));
        break;
      }
    }
  }
  tdm__ctx_free(t->ctx, hs, bytes);
  return st;
}

/* A device tree is checked by the backend-neutral checker (src/btree_check.c)
 * on a host copy of its nodes, then (design v2) its search arrays. */
static tdm_status bg_validate(const tdm_btree *t) {
  size_t bytes = (size_t)BG(t)->geom.nodes * sizeof(tdm__bt_node);
  tdm__bt_node *h;
  tdm_status st;
  if (t->root == TDM_BT_NIL) return tdm__bt_check_nodes(t, NULL, 0, 0);
  tdm__gpu_device dev;
  if ((st = dev.enter(t->ctx)) != TDM_OK) return st;
  h = (tdm__bt_node *)tdm__ctx_alloc(t->ctx, bytes);
  if (!h) return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "tdm_btree_validate: out of host memory for a node copy");
  TDM_CUDA_TRY(cudaMemcpyAsync(h, BG(t)->d_nodes, bytes, cudaMemcpyDeviceToHost, tdm__stream(t->ctx)),
               tdm__ctx_free(t->ctx, h, bytes));
  if ((st = tdm__gpu_sync(t->ctx, "tdm_btree_validate (copy nodes)")) == TDM_OK)
    st = tdm__bt_check_nodes(t, h, (uint32_t)BG(t)->geom.nodes, (uint32_t)BG(t)->geom.nodes);
  if (st == TDM_OK && t->ctx->gpu->design != TDM__GPU_LEGACY) st = check_search_arrays(t, h);
  tdm__ctx_free(t->ctx, h, bytes);
  return st;
}

/* Positional, in the order of tdm__btree_ops (backend.h). */
static tdm_status bg_view(const tdm_btree *t, tdm_btree_view *out) {
  out->nodes = t->root == TDM_BT_NIL ? NULL : BG(t)->d_nodes;
  out->device = t->ctx->gpu->device;
  return TDM_OK;
}

const tdm__btree_ops tdm__btree_cuda_ops = {
    sizeof(btree_gpu), bg_build, bg_destroy, bg_find,   bg_rank,    bg_range_count,
    bg_range,          bg_insert, bg_erase,  bg_export, bg_validate, bg_view,
};
