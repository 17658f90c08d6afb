/*
 * btree_lanes.cu: the steps of the CUDA B+ tree (btree_gpu.cu) that work by
 * lane groups or by CUB:
 *  - reduce: CUB's reduce-by-key over the sorted bits, so a run of equal
 *    keys of any length is reduced by the whole grid;
 *  - search arrays: install also keeps the compact separator array of the
 *    inner nodes (128 bytes per inner node) and every node's summary (the
 *    last key of each 32-byte sector, 32 bytes per node), written by the
 *    fill kernels of btree_gpu.cu with the nodes;
 *  - find / rank / range_count: a group of 8 lanes searches one node
 *    together, inner levels keys-only from the separator array, children,
 *    ranks and leaf sizes from the bulk geometry
 *    (include/tandem/detail/btree_lanes.h). The top levels come from the
 *    block's shared copy (each lane compares two keys read with one 16-byte
 *    load, two ballots and popc give the lower-bound slot); every other
 *    level and the leaf by two sectors (the node's summary, then the one key
 *    sector it names), so a query reads 64 bytes per level below the shared
 *    ones and (find only) one value; no child index, prefix count or node
 *    header. Taken when
 *    tdm__bt_search_plan says the geometry describes the tree (always, since
 *    install is the only writer of the nodes), else btree_gpu.cu's descent
 *    kernels;
 *  - range fill: the ranks of the queries' lower bounds, then one thread per
 *    output element;
 *  - validate: the separator array against the nodes.
 */
#include <cub/device/device_reduce.cuh>

#include <cooperative_groups.h>
#include <thrust/iterator/counting_iterator.h>

#include "btree_gpu.cuh"

namespace cg = cooperative_groups;

/* Each output element j from its query i (tdm__csr_warp_fill: no search
 * per element), then the key index rank(lo) + position within the query's
 * range. */
__global__ void __launch_bounds__(TDM_GPU_BLOCK)
    k_range_fill_out(const tdm__bt_node *nodes, tdm__bt_geom g, uint64_t n, const uint64_t *off, const uint64_t *rank,
                     uint64_t total, void *keys, void *vals, uint32_t ks, uint32_t vs, int kind) {
  tdm__csr_warp_fill(off, n, total, [&](uint64_t j, uint64_t i) {
    uint32_t s;
    const tdm__bt_node *x = tdm__bg_locate(nodes, g, rank[i] + (j - off[i]), &s);
    if (keys) tdm__bt_store_key(keys, j, x->key[s], ks, kind);
    if (vals) tdm__bt_store_val(vals, j, x->u.val[s], vs);
  });
}

/* ---- the search: a group of lanes per query ------------------------------------ */

/* Lanes per query. 8: each lane reads two keys of a node with one 16-byte
 * load, so the group's read of a node's 128 key bytes is one coalesced
 * sweep and a warp serves four queries. */
#define BT_LANES 8u

/* The top inner levels, in shared memory: the separator array holds level
 * 1 first and the root last, so the levels from some level cut up to the
 * root are its last words; every block of a search copies them once into
 * shared memory (one coalesced sweep, then a barrier) and the descent reads
 * those levels from there instead of from global memory / L2. Budget:
 * BT_SH_NODES inner nodes (128 bytes each, 16 KiB), so 8 blocks of 256
 * threads still fit an SM. The search grids are one resident wave
 * (tdm__grid_resident), so the copies number a few per SM however many
 * queries come: a block per 32 queries made the copy 16 of the 24 sectors
 * a find read per query on the cost meter (2^16 keys). */
#define BT_SH_NODES 128u

/* The cached part of the separator array: levels >= cut, its words
 * [first, first + words). */
struct bt_top {
  uint32_t cut, words;
  uint64_t first;
};

/* The highest run of top levels that fits BT_SH_NODES nodes, for a
 * separator array of total words (cut = h when not even the root fits, or
 * the tree has no inner level). */
static __host__ __device__ inline bt_top bt_top_levels(const tdm__bt_lgeom &lg, uint64_t total) {
  bt_top t = {lg.h, 0u, total};
  for (uint32_t l = lg.h - 1; l >= 1 && l < lg.h; l--) {
    uint64_t first = (uint64_t)lg.sep[l] * 16u;
    if (first > total || total - first > (uint64_t)BT_SH_NODES * 16u) break;
    t.cut = l;
    t.first = first;
    t.words = (uint32_t)(total - first);
  }
  return t;
}

/* Copies the cached words to sh (16-byte pairs: first and words are
 * multiples of 16); every thread of the block calls it. */
static __device__ __forceinline__ void bt_load_top(ulonglong2 *sh, const uint64_t *seps, const bt_top &t) {
  const ulonglong2 *src = reinterpret_cast<const ulonglong2 *>(seps + t.first);
  for (uint32_t j = threadIdx.x; j < t.words / 2u; j += blockDim.x) sh[j] = __ldg(src + j);
  __syncthreads();
}

/* The lower-bound slot of q among the 16 words at key (16-byte aligned:
 * nodes are 384 bytes and separator blocks 128 bytes, in 256-byte aligned
 * allocations, and shared copies are ulonglong2 arrays), computed by the
 * whole tile; SHARED: key is in shared memory (a plain load, not __ldg). */
template <unsigned G, bool SHARED>
static __device__ __forceinline__ uint32_t group_lower(const cg::thread_block_tile<G> &tile, const uint64_t *key,
                                                       uint64_t q) {
  constexpr uint32_t S = 16u / G;
  static_assert((G == 8 || G == 16) && TDM_GPU_BLOCK % 32u == 0, "a lane group must lie within one warp");
  uint64_t w[S];
  if constexpr (S == 2) {
    const ulonglong2 *p = reinterpret_cast<const ulonglong2 *>(key) + tile.thread_rank();
    ulonglong2 v;
    if constexpr (SHARED) v = *p;
    else v = __ldg(p);
    w[0] = v.x;
    w[1] = v.y;
  } else {
    const unsigned long long *p = reinterpret_cast<const unsigned long long *>(key) + tile.thread_rank();
    if constexpr (SHARED) w[0] = *p;
    else w[0] = __ldg(p);
  }
  uint32_t c = tdm__bt_lane_words_lower(w, S, q);
  return tdm__bt_lanes_combine(__popc(tile.ballot((c & 1u) != 0)), __popc(tile.ballot((c & 2u) != 0)));
}

/* The lower-bound slot of q among the 16 words at key from two sectors
 * (btree_lanes.h, "two sectors per node"): lanes 0..3 read the node's
 * summary at sum, then the sector of key it points at; *at receives the word
 * at the slot (unset when the slot is 16), so a leaf's hit needs no reload. */
template <unsigned G>
static __device__ __forceinline__ uint32_t group_lower2(const cg::thread_block_tile<G> &tile, const uint64_t *sum,
                                                        const uint64_t *key, uint64_t q, uint64_t *at) {
  const uint32_t r = tile.thread_rank();
  const bool reads = r < 4u;
  uint64_t w = reads ? __ldg(sum + r) : 0;
  uint32_t s = (uint32_t)__popc(tile.ballot(reads && w < q));
  if (s >= 4u) return tdm__bt_two_step(s, 0); /* the same for the whole tile */
  w = reads ? __ldg(key + 4u * s + r) : 0;
  uint32_t c = (uint32_t)__popc(tile.ballot(reads && w < q)); /* < 4: word 4s + 3 is >= q */
  *at = tile.shfl(w, (int)c);
  return tdm__bt_two_step(s, c);
}

/* Where a search's separators are: the array, and its top levels in the
 * block's shared copy. */
struct bt_seps {
  const uint64_t *g;
  const ulonglong2 *sh;
  bt_top top;
};

/* Keys-only descent of q: the leaf (index within level 0, which starts at
 * node 0) and the lower-bound slot in it, *at the key there (unset when the
 * slot is 16); levels >= top.cut from shared memory (all 16 words: shared
 * reads are cheap), the others and the leaf by two sectors each. */
template <unsigned G>
static __device__ __forceinline__ uint32_t group_descend(const cg::thread_block_tile<G> &tile,
                                                         const tdm__bt_node *nodes, const bt_seps &sp,
                                                         const tdm__bt_lgeom &lg, uint64_t q, uint32_t *pos,
                                                         uint64_t *at) {
  uint32_t n = 0;
  for (uint32_t l = lg.h - 1; l > 0; l--) {
    uint64_t w = tdm__bt_lg_sep(&lg, l, n), unused;
    uint32_t c = l >= sp.top.cut
                     ? group_lower<G, true>(tile, reinterpret_cast<const uint64_t *>(sp.sh) + (w - sp.top.first), q)
                     : group_lower2<G>(tile, sp.g + tdm__bt_lg_sum(&lg, l, n), sp.g + w, q, &unused);
    n = tdm__bt_lg_child(&lg, l, n, c);
  }
  *pos = group_lower2<G>(tile, sp.g + tdm__bt_lg_sum(&lg, 0, n), nodes[n].key, q, at);
  return n;
}

/* The start of every search kernel: the block's shared copy of the top
 * levels (before the query loop, so every thread reaches the barrier). */
#define BT_SEARCH_SEPS(sp, seps, top)               \
  __shared__ ulonglong2 bt_sh[BT_SH_NODES * 8u];    \
  bt_load_top(bt_sh, seps, top);                    \
  const bt_seps sp = {seps, bt_sh, top}

/* The grid-stride loop over queries, one tile per query: every lane of a
 * tile takes the same i, so the tile's ballots always see all its lanes. */
#define TDM_GROUP_STRIDE(i, n, G)                                                                     \
  for (size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / (G); i < (n);                  \
       i += (size_t)gridDim.x * blockDim.x / (G))

template <unsigned G>
__global__ void __launch_bounds__(TDM_GPU_BLOCK)
    k_find_lanes(const tdm__bt_node *__restrict__ nodes, const uint64_t *__restrict__ seps, bt_top top,
                 const __grid_constant__ tdm__bt_lgeom lg, const void *q, uint64_t n, uint32_t ks, int kind,
                 void *vals, uint8_t *found, uint32_t vs) {
  BT_SEARCH_SEPS(sp, seps, top);
  cg::thread_block_tile<G> tile = cg::tiled_partition<G>(cg::this_thread_block());
  TDM_GROUP_STRIDE(i, n, G) {
    uint64_t b = tdm__bt_key_bits(q, i, ks, kind), at = 0;
    uint32_t pos, leaf = group_descend(tile, nodes, sp, lg, b, &pos, &at);
    if (tile.thread_rank() == 0) {
      int hit = tdm__bt_lg_hit_at(at, pos, tdm__bt_lg_leaf_count(&lg, leaf), b);
      if (found) found[i] = (uint8_t)hit;
      if (vals) tdm__bt_store_val(vals, i, hit ? nodes[leaf].u.val[pos] : 0, vs);
    }
  }
}

/* Ranks from the geometry (no prefix counts). */
template <unsigned G>
__global__ void __launch_bounds__(TDM_GPU_BLOCK)
    k_rank_lanes(const tdm__bt_node *__restrict__ nodes, const uint64_t *__restrict__ seps, bt_top top,
                 const __grid_constant__ tdm__bt_lgeom lg, const void *q, uint64_t n, uint32_t ks, int kind,
                 uint64_t *rank) {
  BT_SEARCH_SEPS(sp, seps, top);
  cg::thread_block_tile<G> tile = cg::tiled_partition<G>(cg::this_thread_block());
  TDM_GROUP_STRIDE(i, n, G) {
    uint64_t at;
    uint32_t pos, leaf = group_descend(tile, nodes, sp, lg, tdm__bt_key_bits(q, i, ks, kind), &pos, &at);
    if (tile.thread_rank() == 0) rank[i] = tdm__bt_lg_leaf_start(&lg, leaf) + pos;
  }
}

/* Counts as k_range_count computes them, with cnt_len >= n slots, and
 * (lo_rank non-NULL) the rank of each lo, where a range's hits start. */
template <unsigned G>
__global__ void __launch_bounds__(TDM_GPU_BLOCK)
    k_range_count_lanes(const tdm__bt_node *__restrict__ nodes, const uint64_t *__restrict__ seps, bt_top top,
                        const __grid_constant__ tdm__bt_lgeom lg, const void *lo, const void *hi, uint64_t n,
                        uint64_t cnt_len, uint32_t ks, int kind, uint64_t *cnt, uint64_t *lo_rank) {
  BT_SEARCH_SEPS(sp, seps, top);
  cg::thread_block_tile<G> tile = cg::tiled_partition<G>(cg::this_thread_block());
  TDM_GROUP_STRIDE(i, cnt_len, G) {
    if (i >= n) {
      if (tile.thread_rank() == 0) cnt[i] = 0;
      continue;
    }
    uint64_t a = tdm__bt_key_bits(lo, i, ks, kind), b = tdm__bt_key_bits(hi, i, ks, kind);
    uint64_t at_a, at_b = 0;
    uint32_t pa, pb, la = group_descend(tile, nodes, sp, lg, a, &pa, &at_a);
    uint32_t lb = group_descend(tile, nodes, sp, lg, b, &pb, &at_b);
    if (tile.thread_rank() == 0) {
      uint64_t ra = tdm__bt_lg_leaf_start(&lg, la) + pa, rb = tdm__bt_lg_leaf_start(&lg, lb) + pb;
      rb += (uint64_t)tdm__bt_lg_hit_at(at_b, pb, tdm__bt_lg_leaf_count(&lg, lb), b);
      cnt[i] = a <= b ? rb - ra : 0;
      if (lo_rank) lo_rank[i] = ra;
    }
  }
}

/* 1 when the queries of t run the lane-group search: a tree the geometry
 * describes; otherwise the descent kernels (btree_gpu.cu), which follow the
 * child arrays and need nothing of the geometry. */
static int lanes_search(const tdm_btree *t) {
  const btree_gpu *b = BG(t);
  return tdm__bt_search_plan(&b->geom, b->bulk, t->size, t->root, t->height, b->d_seps) == TDM__BT_SEARCH_LANES;
}

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

/* The reduce: CUB's reduce-by-key over the sorted bits, so a run of equal
 * keys of any length is reduced by the whole grid (a run given to one
 * thread, as the first kernels did, made all-equal keys one thread's fold of
 * the whole input). */
tdm_status tdm__bg_reduce(tdm_btree *t, tdm__gpu_scope &sc, const uint64_t *kb, const uint64_t *vb, uint64_t n,
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
  if ((st = tdm__gpu_read(ctx, &runs, d_runs, 8, "tdm_btree (reduce by key)")) != TDM_OK) return st;
  if (by_pos && runs) {
    k_pick_values<<<tdm__grid(runs), TDM_GPU_BLOCK, 0, s>>>(vb, *uvb, runs);
    if ((st = tdm__launch_check("tdm_btree (pick values)")) != TDM_OK) return st;
  }
  *m = runs;
  return TDM_OK;
}

/* What the search relies on, on host copies: the nodes are the bulk
 * layout of the recorded geometry, and the separator array holds their
 * separators. */
tdm_status tdm__bg_check_search_arrays(const tdm_btree *t, const tdm__bt_node *h) {
  const btree_gpu *b = BG(t);
  uint64_t words = tdm__bt_search_words(&b->geom), seps = tdm__bt_sep_words(&b->geom), j, *hs;
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
      if (hs[j] != tdm__bt_search_word(h, &b->geom, j)) {
        if (j < seps)
          st = tdm__fail(TDM_ERR_CORRUPT,
                         "tdm_btree_validate: node %llu: separator array: word %u differs from the node's key",
                         (unsigned long long)(b->geom.cnt[0] + j / 16), (unsigned)(j % 16));
        else
          st = tdm__fail(TDM_ERR_CORRUPT,
                         "tdm_btree_validate: node %llu: summary: word %u differs from the node's key %u",
                         (unsigned long long)((j - seps) / 4), (unsigned)((j - seps) % 4),
                         (unsigned)((j - seps) % 4 * 4 + 3));
        break;
      }
    }
  }
  tdm__ctx_free(t->ctx, hs, bytes);
  return st;
}

/* The top levels a search of t keeps in shared memory. */
static bt_top top_of(const tdm_btree *t) { return bt_top_levels(BG(t)->lgeom, tdm__bt_sep_words(&BG(t)->geom)); }

void tdm__bg_launch_find(const tdm_btree *t, const void *q, size_t n, void *vals, uint8_t *found) {
  if (!lanes_search(t)) return tdm__bg_find_descend(t, q, n, vals, found);
  k_find_lanes<BT_LANES><<<tdm__grid_resident(t->ctx, n * BT_LANES), TDM_GPU_BLOCK, 0, tdm__stream(t->ctx)>>>(
      BG(t)->d_nodes, BG(t)->d_seps, top_of(t), BG(t)->lgeom, q, n, t->ks, t->kind, vals, found, t->vs);
}

void tdm__bg_launch_rank(const tdm_btree *t, const void *q, size_t n, uint64_t *r) {
  if (!lanes_search(t)) return tdm__bg_rank_descend(t, q, n, r);
  k_rank_lanes<BT_LANES><<<tdm__grid_resident(t->ctx, n * BT_LANES), TDM_GPU_BLOCK, 0, tdm__stream(t->ctx)>>>(
      BG(t)->d_nodes, BG(t)->d_seps, top_of(t), BG(t)->lgeom, q, n, t->ks, t->kind, r);
}

void tdm__bg_launch_counts(const tdm_btree *t, const void *lo, const void *hi, size_t n, uint64_t cnt_len,
                           uint64_t *cnt, uint64_t *lo_rank) {
  if (!lanes_search(t)) return tdm__bg_counts_descend(t, lo, hi, n, cnt_len, cnt, lo_rank);
  k_range_count_lanes<BT_LANES><<<tdm__grid_resident(t->ctx, cnt_len * BT_LANES), TDM_GPU_BLOCK, 0, tdm__stream(t->ctx)>>>(
      BG(t)->d_nodes, BG(t)->d_seps, top_of(t), BG(t)->lgeom, lo, hi, n, cnt_len, t->ks, t->kind, cnt, lo_rank);
}

void tdm__bg_launch_fill(const tdm_btree *t, size_t n, const uint64_t *off, const uint64_t *lo_rank, uint64_t total,
                         void *keys, void *vals) {
  k_range_fill_out<<<tdm__csr_grid(total), TDM_GPU_BLOCK, 0, tdm__stream(t->ctx)>>>(
      BG(t)->d_nodes, BG(t)->geom, n, off, lo_rank, total, keys, vals, t->ks, t->vs, t->kind);
}
