/*
 * btree_gpu.cu: the CUDA backend of the B+ tree.
 *
 * A CUDA tree lives in device memory in the bulk-load layout of
 * include/tandem/detail/btree_node.h (leaves contiguous and in key order, sizes spread evenly),
 * filled sixteen threads a node, a slot each, into the same bytes as the
 * CPU's tdm__bt_fill_leaf / tdm__bt_fill_inner (the leaves' tail words are
 * tdm__bt_leaf_tail_word, which the CPU's fill stores too; test_btree
 * compares the node arrays of both backends).
 *
 * One tree: on the cost meter (tests/cuda_emu, make
 * cuda-emu-cost) the lane-group queries and the reduce by key of
 * btree_lanes.cu moved fewer sectors on every row than the one-thread
 * descent and one-thread run reduce they replaced (find 38.7 against 52.6
 * a key at 2^18, range_count 53.7 against 106.9, build 21.2 against 25.4).
 *
 *  - build: a stable CUB radix sort of the input into scratch (8-byte keys
 *    and values: the key bits with 32-bit rows, build_by_rows; other
 *    integer keys in device memory: read where they are,
 *    tdm__gpu_sort_from; else a copy sorted in place by the context's sort
 *    table), then the nodes and the search arrays filled straight from it
 *    with a duplicate check (install);
 *    only keys with duplicates are then reduced under the policy by CUB's
 *    reduce-by-key (btree_lanes.cu: a hot key is reduced by the whole grid)
 *    and filled again.
 *  - find / rank / range_count: the lane-group queries of btree_lanes.cu;
 *    the descent kernels here (one thread per query walks root to leaf
 *    with tdm__bt_descend) when the geometry does not describe the tree.
 *  - range: counts and the rank of each lo (one kernel), exclusive scan
 *    into offsets, then btree_lanes.cu's fill copies the hits, mapping global
 *    key index -> (leaf, slot) arithmetically.
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
#include <cub/device/device_scan.cuh>
#include <string.h>

#include "btree_gpu.cuh"
#include "sort_gpu.cuh"

/* ---- kernels ---------------------------------------------------------------- */

/* Key i to its bits (kb NULL: none), in place when kb is kraw; value i
 * widened to 64 bits (vb NULL: none), taken from row rows[i] of vraw when
 * rows is not NULL (the gather of a build by rows). */
__global__ void k_to_bits(const void *kraw, const void *vraw, const uint32_t *rows, uint64_t *kb, uint64_t *vb,
                          uint64_t n, uint32_t ks, uint32_t vs, int kind) {
  TDM_GRID_STRIDE(i, n) {
    if (kb) kb[i] = tdm__bt_key_bits(kraw, i, ks, kind);
    if (vb) vb[i] = tdm__bt_load_val(vraw, rows ? rows[i] : i, vs);
  }
}

/* The fill writes the search array (btree_lanes.h) with the nodes: each
 * key word of a node lands in the separator array (inner nodes) and the
 * summary (every fourth word, every node) from the thread that has it, so
 * no pass reads the nodes back for them. */

/* Leaves, sixteen threads a leaf, a slot each (tdm__bt_fill_leaf_slot's
 * split: one warp store writes two leaves' key rows, value rows and tails,
 * 12 sectors a leaf), from n sorted key bits kb and values vb, slot i's
 * value vb[i], or vb[rows[i]] when rows is not NULL (a build by rows: vb
 * is the caller's 64-bit values in input order). dup (NULL:
 * not checked) is set when a key is not above the one before it: the
 * caller built for distinct keys and must reduce first. The loop runs whole
 * warps (the count rounded up to 32) for the shuffle that hands each slot
 * its left neighbour's key; the first slot of a leaf reads the key before.
 * A duplicate is noted in the block's word, and the block's in dup once,
 * so a hot key puts one atomic per block on dup, not one per warp. */
__global__ void k_fill_leaves(tdm__bt_node *nodes, tdm__bt_geom g, const uint64_t *kb, const uint64_t *vb,
                              const uint32_t *rows, uint64_t *search, unsigned *dup) {
  const uint64_t slots = (uint64_t)g.cnt[0] * 16, sums = tdm__bt_sep_words(&g);
  __shared__ unsigned block_dup;
  if (threadIdx.x == 0) block_dup = 0;
  __syncthreads();
  TDM_GRID_STRIDE(t, (slots + 31) & ~(uint64_t)31) {
    const uint64_t i = t >> 4;
    const uint32_t j = (uint32_t)(t & 15);
    const bool live = t < slots;
    uint64_t s = 0, k = TDM_BT_PAD, prev;
    uint32_t c = 0;
    if (live) {
      s = tdm__bt_even_start(g.m, g.cnt[0], i);
      c = (uint32_t)(tdm__bt_even_start(g.m, g.cnt[0], i + 1) - s);
      if (j < c) k = kb[s + j];
    }
    prev = __shfl_up_sync(0xffffffffu, k, 1, 16);
    if (dup) {
      if (live && j == 0 && s > 0) prev = kb[s - 1];
      if (__any_sync(0xffffffffu, live && j < c && s + j > 0 && k <= prev) && (threadIdx.x & 31u) == 0)
        atomicOr(&block_dup, 1u);
    }
    if (!live) continue;
    tdm__bt_node *x = &nodes[g.base[0] + i];
    x->key[j] = k;
    x->u.val[j] = j < c ? vb[rows ? rows[s + j] : s + j] : 0;
    reinterpret_cast<uint64_t *>(x)[32 + j] = tdm__bt_leaf_tail_word(&g, i, c, j);
    if ((j & 3u) == 3u) search[sums + 4 * (g.base[0] + i) + j / 4] = k;
  }
  __syncthreads();
  if (threadIdx.x == 0 && block_dup && dup) atomicOr(dup, 1u);
}

/* Inner nodes of level l >= 1, sixteen threads a node, a slot each: the
 * node tdm__bt_fill_inner_into makes (test_btree compares the trees), its
 * separators and its summary. */
__global__ void k_fill_inner(tdm__bt_node *nodes, tdm__bt_geom g, const uint64_t *kb, uint32_t l, uint64_t *search) {
  const uint64_t sums = tdm__bt_sep_words(&g);
  TDM_GRID_STRIDE(t, (uint64_t)g.cnt[l] * 16) {
    const uint64_t i = t >> 4, node = g.base[l] + i;
    const uint32_t j = (uint32_t)(t & 15);
    const uint64_t cs = tdm__bt_even_start(g.cnt[l - 1], g.cnt[l], i);
    const uint32_t c = (uint32_t)(tdm__bt_even_start(g.cnt[l - 1], g.cnt[l], i + 1) - cs);
    /* keys under the node, and under its children 0..j */
    const uint64_t first = tdm__bt_even_start(g.m, g.cnt[0], tdm__bt_geom_leaf_start(&g, l - 1, cs));
    const uint64_t end = j < c ? tdm__bt_even_start(g.m, g.cnt[0], tdm__bt_geom_leaf_start(&g, l - 1, cs + j + 1)) : 0;
    const uint64_t k = j + 1 < c ? kb[end - 1] : TDM_BT_PAD;
    tdm__bt_node *x = &nodes[node];
    x->key[j] = k;
    x->u.in.child[j] = j < c ? g.base[l - 1] + (uint32_t)(cs + j) : TDM_BT_NIL;
    x->u.in.cum[j] = j < c ? end - first : 0;
    /* count and level, next and prev (none), the padding */
    if (j < 8)
      reinterpret_cast<uint64_t *>(x)[40 + j] =
          j == 0 ? c | (uint64_t)l << 32 : j == 1 ? (uint64_t)TDM_BT_NIL | (uint64_t)TDM_BT_NIL << 32 : 0;
    search[(node - g.cnt[0]) * 16 + j] = k;
    if ((j & 3u) == 3u) search[sums + 4 * node + j / 4] = k;
  }
}

__global__ void k_export_bits(const tdm__bt_node *nodes, tdm__bt_geom g, uint64_t *kb, uint64_t *vb) {
  TDM_GRID_STRIDE(i, g.m) {
    uint32_t s;
    const tdm__bt_node *x = tdm__bg_locate(nodes, g, i, &s);
    kb[i] = x->key[s];
    vb[i] = x->u.val[s];
  }
}

__global__ void k_export(const tdm__bt_node *nodes, tdm__bt_geom g, void *keys, void *vals, uint32_t ks, uint32_t vs,
                         int kind) {
  TDM_GRID_STRIDE(i, g.m) {
    uint32_t s;
    const tdm__bt_node *x = tdm__bg_locate(nodes, g, i, &s);
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
                              uint64_t n, uint64_t cnt_len, uint32_t ks, int kind, uint64_t *cnt, uint64_t *lo_rank) {
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
    if (lo_rank) lo_rank[i] = ra;
  }
}

/* ---- the descent launches (btree_gpu.cuh) ------------------------------------- */

void tdm__bg_find_descend(const tdm_btree *t, const void *q, size_t n, void *vals, uint8_t *found) {
  k_find<<<tdm__grid(n), TDM_GPU_BLOCK, 0, tdm__stream(t->ctx)>>>(BG(t)->d_nodes, t->root, t->height, q, n, t->ks,
                                                                  t->kind, vals, found, t->vs);
}

void tdm__bg_rank_descend(const tdm_btree *t, const void *q, size_t n, uint64_t *rank) {
  k_rank<<<tdm__grid(n), TDM_GPU_BLOCK, 0, tdm__stream(t->ctx)>>>(BG(t)->d_nodes, t->root, t->height, q, n, t->ks,
                                                                  t->kind, rank);
}

void tdm__bg_counts_descend(const tdm_btree *t, const void *lo, const void *hi, size_t n, uint64_t cnt_len,
                            uint64_t *cnt, uint64_t *lo_rank) {
  k_range_count<<<tdm__grid(cnt_len), TDM_GPU_BLOCK, 0, tdm__stream(t->ctx)>>>(BG(t)->d_nodes, t->root, t->height, lo,
                                                                               hi, n, cnt_len, t->ks, t->kind, cnt,
                                                                               lo_rank);
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

tdm_status tdm__bg_scan_total(tdm_ctx *ctx, tdm__gpu_scope &sc, const uint64_t *flag, uint64_t *out, uint64_t n,
                              uint64_t *total) {
  size_t temp_bytes = 0;
  void *temp = NULL;
  uint64_t last[2];
  tdm_status st;
  cudaStream_t s = tdm__stream(ctx);
  TDM_CUDA_TRY(cub::DeviceScan::ExclusiveSum(NULL, temp_bytes, flag, out, (size_t)n, s), (void)0);
  if ((st = sc.alloc(temp_bytes ? temp_bytes : 1, &temp)) != TDM_OK) return st;
  TDM_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, flag, out, (size_t)n, s), (void)0);
  {
    void *const h[2] = {&last[0], &last[1]};
    const void *const d[2] = {out + n - 1, flag + n - 1};
    const size_t bytes[2] = {8, 8};
    if ((st = tdm__gpu_read_small(ctx, "tdm_btree (scan)", 2, h, d, bytes)) != TDM_OK) return st;
  }
  *total = last[0] + last[1];
  return TDM_OK;
}

/* Builds a bulk-layout node array from m sorted key bits / values (slot i's
 * value vb[rows[i]] when rows is not NULL, k_fill_leaves) and installs it
 * in t, freeing the old one. Nothing in t changes on failure.
 * The keys are distinct unless dup is non-NULL: then the leaves check them,
 * and a duplicate sets *dup to 1 and leaves t as it was (one wait, for the
 * check). queue: the call may return without waiting for the fill
 * (stream-ordered, device arrays: tdm__gpu_queue_only); the wait otherwise
 * makes the nodes ready for the caller's own kernels on any stream (the
 * views). */
static tdm_status install(tdm_btree *t, const uint64_t *kb, const uint64_t *vb, const uint32_t *rows, uint64_t m,
                          int queue, int *dup) {
  tdm_ctx *ctx = t->ctx;
  cudaStream_t s = tdm__stream(ctx);
  tdm__gpu_scope sc(ctx);
  tdm__bt_geom g;
  tdm__bt_node *nn = NULL;
  uint64_t *ns = NULL;
  unsigned *d_dup = NULL, h_dup = 0;
  tdm_status st;
  memset(&g, 0, sizeof g);
  if (m > 0) {
    tdm__bt_geom_init(&g, m);
    if (g.nodes >= TDM_BT_NIL)
      return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "tdm_btree: %llu keys need more than 2^32 - 1 nodes",
                       (unsigned long long)m);
    /* The nodes and the search arrays are all taken before the old ones are
     * touched. */
    if ((st = sc.alloc((size_t)g.nodes * sizeof(tdm__bt_node), &nn)) != TDM_OK ||
        (st = sc.alloc((size_t)tdm__bt_search_words(&g) * 8, &ns)) != TDM_OK)
      return st;
    if (dup) {
      if ((st = sc.alloc(sizeof *d_dup, &d_dup)) != TDM_OK) return st;
      TDM_CUDA_TRY(cudaMemsetAsync(d_dup, 0, sizeof *d_dup, s), (void)0);
    }
    k_fill_leaves<<<tdm__grid(((size_t)g.cnt[0] * 16 + 31) & ~(size_t)31), TDM_GPU_BLOCK, 0, s>>>(nn, g, kb, vb, rows,
                                                                                               ns, d_dup);
    if ((st = tdm__launch_check("tdm_btree (fill leaves)")) != TDM_OK) return st;
    if (dup) {
      if ((st = tdm__gpu_read(ctx, &h_dup, d_dup, sizeof h_dup, "tdm_btree (fill leaves)")) != TDM_OK) return st;
      if ((*dup = h_dup != 0)) return TDM_OK;
    }
    for (uint32_t l = 1; l < g.h; l++)
      k_fill_inner<<<tdm__grid((size_t)g.cnt[l] * 16), TDM_GPU_BLOCK, 0, s>>>(nn, g, kb, l, ns);
    if ((st = tdm__launch_check("tdm_btree (fill nodes)")) != TDM_OK ||
        (st = tdm__gpu_finish(ctx, queue, "tdm_btree (fill nodes)")) != TDM_OK)
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

/* Installs n sorted raw keys / values in device buffers as t's nodes,
 * their duplicate runs reduced under t's policy. distinct_first: a build,
 * whose keys are most often distinct: the leaves are filled straight from
 * the sorted keys and check them (as the CPU's build does), and only keys
 * with duplicates pay the reduce and a second fill; an insert, whose batch
 * often holds stored keys, reduces first. */
static tdm_status reduce_install(tdm_btree *t, tdm__gpu_scope &sc, void *d_k, void *d_v, uint64_t n, int queue,
                                 int distinct_first) {
  tdm_ctx *ctx = t->ctx;
  uint64_t *kb, *vb, *ukb, *uvb, m = 0;
  int dup = 0;
  tdm_status st;
  if (t->ks == 8 && t->vs == 8 && t->kind == TDM_KIND_UNSIGNED) {
    /* Already 64-bit key bits and values: the map would copy them as they are. */
    kb = (uint64_t *)d_k;
    vb = (uint64_t *)d_v;
  } else {
    if ((st = sc.alloc(n * 8, &kb)) != TDM_OK || (st = sc.alloc(n * 8, &vb)) != TDM_OK) return st;
    k_to_bits<<<tdm__grid(n), TDM_GPU_BLOCK, 0, tdm__stream(ctx)>>>(d_k, d_v, NULL, kb, vb, n, t->ks, t->vs, t->kind);
    if ((st = tdm__launch_check("tdm_btree (key bits)")) != TDM_OK) return st;
  }
  if (distinct_first) {
    if ((st = install(t, kb, vb, NULL, n, queue, &dup)) != TDM_OK || !dup) return st;
  }
  if ((st = tdm__bg_reduce(t, sc, kb, vb, n, &ukb, &uvb, &m)) != TDM_OK) return st;
  return install(t, ukb, uvb, NULL, m, queue, NULL);
}

/* Sorts n raw keys / values already in device buffers (modified in place,
 * by the context's sort), then reduce_install. */
static tdm_status sort_reduce_install(tdm_btree *t, tdm__gpu_scope &sc, void *d_k, void *d_v, uint64_t n, int queue,
                                      int distinct_first) {
  tdm_ctx *ctx = t->ctx;
  tdm_status st;
  if (n > 1 && (st = ctx->be->sort->sort(ctx, t->key_type, d_k, t->value_type, d_v, n, 0)) != TDM_OK) return st;
  return reduce_install(t, sc, d_k, d_v, n, queue, distinct_first);
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

/* A build of 8-byte keys and values by rows: CUB sorts the key bits with
 * each key's 32-bit row in place of its value (12 bytes an item through the
 * eight passes instead of 16) and the leaf fill takes each value from its
 * row, one random 8-byte read a key where the passes moved it sixteen
 * times; on the cost meter (2^18 keys) the build falls from 9.91 to 8.93
 * sectors a key, raw CUB's pair sort being 8.25. Signed and float keys
 * are mapped to their bits before the sort, so CUB sorts unsigned words;
 * host arrays are copied in first. Only keys with duplicates then gather
 * their values in key order for the reduce. rows are 32-bit: n <= 2^32. */
static tdm_status build_by_rows(tdm_btree *t, tdm__gpu_scope &sc, const void *keys, const void *values, uint64_t n,
                                int queue) {
  tdm_ctx *ctx = t->ctx;
  cudaStream_t s = tdm__stream(ctx);
  const void *kin = keys, *vin = values;
  uint64_t *kb, *vb, *ukb, *uvb, m = 0;
  uint32_t *idx, *rows;
  int dup = 0;
  tdm_status st;
  if ((st = sc.alloc(n * 8, &kb)) != TDM_OK || (st = sc.alloc(n * 4, &idx)) != TDM_OK ||
      (st = sc.alloc(n * 4, &rows)) != TDM_OK)
    return st;
  if (t->kind != TDM_KIND_UNSIGNED || !tdm__is_device_ptr(keys)) {
    void *d;
    if ((st = sc.alloc(n * 8, &d)) != TDM_OK) return st;
    if (!tdm__is_device_ptr(keys)) {
      if ((st = copy_in(ctx, d, keys, n * 8)) != TDM_OK) return st;
      kin = d; /* mapped in place */
    }
    if (t->kind != TDM_KIND_UNSIGNED)
      k_to_bits<<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>(kin, NULL, NULL, (uint64_t *)d, NULL, n, 8, 8, t->kind);
    kin = d;
  }
  if (!tdm__is_device_ptr(values)) {
    void *d;
    if ((st = sc.alloc(n * 8, &d)) != TDM_OK || (st = copy_in(ctx, d, values, n * 8)) != TDM_OK) return st;
    vin = d;
  }
  tdm__iota_kernel<uint32_t><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>(idx, n);
  if ((st = tdm__launch_check("tdm_btree (key bits, rows)")) != TDM_OK ||
      (st = tdm__gpu_sort_from(ctx, sc, kin, idx, kb, rows, n, TDM_KIND_UNSIGNED, 8, 4, 0)) != TDM_OK ||
      (st = install(t, kb, (const uint64_t *)vin, rows, n, queue, &dup)) != TDM_OK || !dup)
    return st;
  if ((st = sc.alloc(n * 8, &vb)) != TDM_OK) return st;
  k_to_bits<<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>(NULL, vin, rows, NULL, vb, n, 8, 8, t->kind);
  if ((st = tdm__launch_check("tdm_btree (values by row)")) != TDM_OK ||
      (st = tdm__bg_reduce(t, sc, kb, vb, n, &ukb, &uvb, &m)) != TDM_OK)
    return st;
  return install(t, ukb, uvb, NULL, m, queue, NULL);
}

/* ---- operations ------------------------------------------------------------ */

static tdm_status bg_build(tdm_btree *t, const void *keys, const void *values, size_t n) {
  tdm_ctx *ctx = t->ctx;
  tdm__gpu_scope sc(ctx);
  void *d_k, *d_v;
  int queue;
  tdm_status st;
  if ((st = sc.enter()) != TDM_OK) return st;
  if (n == 0) return install(t, NULL, NULL, NULL, 0, 1, NULL);
  queue = tdm__gpu_queue_only(ctx, keys, values, NULL);
  if (n > 1 && t->ks == 8 && t->vs == 8 && n <= (uint64_t)UINT32_MAX + 1)
    return build_by_rows(t, sc, keys, values, n, queue);
  if ((st = sc.alloc(n * t->ks, &d_k)) != TDM_OK || (st = sc.alloc(n * t->vs, &d_v)) != TDM_OK) return st;
  /* Integer keys in device memory: CUB sorts them out of the caller's
   * arrays into the scratch (1.0 sector a key less than copying them in
   * first, on the cost meter). Floats go through their sort bits, and host
   * arrays must cross anyway: a copy, then the sort in place. */
  if (n > 1 && t->kind != TDM_KIND_FLOAT && tdm__is_device_ptr(keys) && tdm__is_device_ptr(values)) {
    if ((st = tdm__gpu_sort_from(ctx, sc, keys, values, d_k, d_v, n, t->kind, t->ks, t->vs, 0)) != TDM_OK) return st;
    return reduce_install(t, sc, d_k, d_v, n, queue, 1);
  }
  if ((st = copy_in(ctx, d_k, keys, n * t->ks)) != TDM_OK || (st = copy_in(ctx, d_v, values, n * t->vs)) != TDM_OK)
    return st;
  return sort_reduce_install(t, sc, d_k, d_v, n, queue, 1);
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
  return sort_reduce_install(t, sc, d_k, d_v, total, tdm__gpu_queue_only(ctx, keys, values, NULL), 0);
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
  if (n > 1 && (st = ctx->be->sort->sort(ctx, t->key_type, d_k, t->key_type, NULL, n, 0)) != TDM_OK) return st;
  k_to_bits<<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>(d_k, NULL, NULL, bb, NULL, n, t->ks, t->vs, t->kind);
  k_export_bits<<<tdm__grid(m), TDM_GPU_BLOCK, 0, s>>>(BG(t)->d_nodes, BG(t)->geom, kb, vb);
  k_keep<<<tdm__grid(m), TDM_GPU_BLOCK, 0, s>>>(kb, m, bb, n, keep);
  if ((st = tdm__launch_check("tdm_btree_erase (mark)")) != TDM_OK) return st;
  if ((st = tdm__bg_scan_total(ctx, sc, keep, pos, m, &kept)) != TDM_OK) return st;
  if (kept < m) {
    if ((st = sc.alloc(kept * 8 + 8, &ukb)) != TDM_OK || (st = sc.alloc(kept * 8 + 8, &uvb)) != TDM_OK) return st;
    k_compact<<<tdm__grid(m), TDM_GPU_BLOCK, 0, s>>>(kb, vb, keep, pos, m, ukb, uvb);
    if ((st = tdm__launch_check("tdm_btree_erase (compact)")) != TDM_OK) return st;
    if ((st = install(t, ukb, uvb, NULL, kept, tdm__gpu_queue_only(ctx, keys, NULL, NULL), NULL)) != TDM_OK) return st;
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
  } else {
    tdm__bg_launch_find(t, q.d, n, values_out ? v.d : NULL, (uint8_t *)(found_out ? f.d : NULL));
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
  } else {
    tdm__bg_launch_rank(t, q.d, n, (uint64_t *)r.d);
    if ((st = tdm__launch_check("tdm_btree_rank")) != TDM_OK) return st;
  }
  if ((st = tdm__gpu_out_finish(ctx, &r)) != TDM_OK) return st;
  return sc.finish("tdm_btree_rank");
}

/* Counts for n queries into the device array d_cnt of cnt_len >= n entries. */
static tdm_status counts(const tdm_btree *t, const void *d_lo, const void *d_hi, size_t n, uint64_t cnt_len,
                         uint64_t *d_cnt, uint64_t *d_lo_rank) {
  cudaStream_t s = tdm__stream(t->ctx);
  if (t->size == 0) {
    TDM_CUDA_TRY(cudaMemsetAsync(d_cnt, 0, cnt_len * 8, s), (void)0);
    return TDM_OK;
  }
  tdm__bg_launch_counts(t, d_lo, d_hi, n, cnt_len, d_cnt, d_lo_rank);
  return tdm__launch_check("tdm_btree_range_count");
}

static tdm_status bg_range_count(const tdm_btree *t, const void *lo, const void *hi, uint64_t *count_out, size_t n) {
  tdm_ctx *ctx = t->ctx;
  tdm__gpu_scope sc(ctx);
  tdm__dev_array a, b, c;
  tdm_status st;
  if ((st = sc.enter()) != TDM_OK) return st;
  if ((st = sc.in(lo, n * t->ks, &a)) != TDM_OK || (st = sc.in(hi, n * t->ks, &b)) != TDM_OK ||
      (st = sc.out(count_out, n * 8, &c)) != TDM_OK || (st = counts(t, a.d, b.d, n, n, (uint64_t *)c.d, NULL)) != TDM_OK ||
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
      (st = sc.alloc(n * 8, &rank)) != TDM_OK ||
      (st = counts(t, a.d, b.d, n, n + 1, cnt, rank)) != TDM_OK ||
      (st = tdm__bg_scan_total(ctx, sc, cnt, off, n + 1, &total)) != TDM_OK)
    return st;
  const int off_on_host = !tdm__is_device_ptr(offsets_out);
  TDM_CUDA_TRY(cudaMemcpyAsync(offsets_out, off, (n + 1) * 8, cudaMemcpyDefault, s), (void)0);
  if (off_on_host) sc.wait_at_end(); /* a failure below must not return while that copy may still write there */
  if (total > cap) {
    if ((st = tdm__gpu_sync(ctx, "tdm_btree_range")) != TDM_OK) return st;
    return tdm__fail(TDM_ERR_CAPACITY, "tdm_btree_range: the ranges hold %llu keys, but cap is %zu",
                     (unsigned long long)total, cap);
  }
  if (total > 0) {
    if ((keys_out && (st = sc.out(keys_out, total * t->ks, &k)) != TDM_OK) ||
        (values_out && (st = sc.out(values_out, total * t->vs, &v)) != TDM_OK))
      return st;
    tdm__bg_launch_fill(t, n, off, rank, total, keys_out ? k.d : NULL, values_out ? v.d : NULL);
    if ((st = tdm__launch_check("tdm_btree_range")) != TDM_OK) return st;
    if ((keys_out && (st = tdm__gpu_out_finish(ctx, &k)) != TDM_OK) ||
        (values_out && (st = tdm__gpu_out_finish(ctx, &v)) != TDM_OK))
      return st;
  }
  /* offsets_out was written by a plain copy, not through the scope: a host
   * one makes the call wait as a staged array would. */
  if (off_on_host) return tdm__gpu_sync(ctx, "tdm_btree_range");
  return sc.finish("tdm_btree_range");
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

/* A device tree is checked by the backend-neutral checker (src/btree_check.c)
 * on a host copy of its nodes, then the search arrays against the nodes. */
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
  if (st == TDM_OK) st = tdm__bg_check_search_arrays(t, h);
  tdm__ctx_free(t->ctx, h, bytes);
  return st;
}

static tdm_status bg_view(const tdm_btree *t, tdm_btree_view *out) {
  out->nodes = t->root == TDM_BT_NIL ? NULL : BG(t)->d_nodes;
  out->device = t->ctx->gpu->device;
  return TDM_OK;
}

const tdm__btree_ops tdm__btree_cuda_ops = {
    .state_bytes = sizeof(btree_gpu),
    .build = bg_build,
    .destroy = bg_destroy,
    .find = bg_find,
    .rank = bg_rank,
    .range_count = bg_range_count,
    .range = bg_range,
    .insert = bg_insert,
    .erase = bg_erase,
    .export_all = bg_export,
    .validate = bg_validate,
    .view = bg_view,
};
