/*
 * btree_gpu.cu: the CUDA backend of the B+ tree.
 *
 * A CUDA tree lives in device memory in the bulk-load layout of
 * src/btree_node.h (leaves contiguous and in key order, sizes spread evenly),
 * filled by the same tdm__bt_fill_leaf / tdm__bt_fill_inner functions the CPU
 * runs, one node per thread.
 *
 *  - build: stage a copy of the input, stable CUB radix sort (tdm__gpu_sort),
 *    mark run heads, exclusive scan, one thread per run reduces it under the
 *    duplicate policy (tdm__bt_reduce_run, shared with the CPU), fill nodes.
 *  - find / rank / range_count: one thread per query walks root to leaf with
 *    tdm__bt_descend; the upper levels are few and hot in L2, so each query
 *    pays roughly one uncached leaf access.
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
#include <cub/device/device_scan.cuh>
#include <string.h>

#include "../src/btree_gpu_iface.h"
#include "gpu_common.cuh"

#define BLOCK 256u
#define GRID_LOOP(i, n) \
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < (n); i += (uint64_t)gridDim.x * blockDim.x)

/* ---- kernels ---------------------------------------------------------------- */

__global__ void k_to_bits(const void *kraw, const void *vraw, uint64_t *kb, uint64_t *vb, uint64_t n, uint32_t ks,
                          uint32_t vs, int kind) {
  GRID_LOOP(i, n) {
    kb[i] = tdm__bt_key_bits(kraw, i, ks, kind);
    if (vb) vb[i] = tdm__bt_load_val(vraw, i, vs);
  }
}

__global__ void k_heads(const uint64_t *kb, uint64_t *flag, uint64_t n) {
  GRID_LOOP(i, n) flag[i] = (i == 0 || kb[i] != kb[i - 1]) ? 1 : 0;
}

__global__ void k_reduce(const uint64_t *kb, const uint64_t *vb, const uint64_t *flag, const uint64_t *pos, uint64_t n,
                         uint64_t *ukb, uint64_t *uvb, int dup, uint32_t vs, int vkind) {
  GRID_LOOP(i, n) {
    if (!flag[i]) continue;
    uint64_t e = i + 1;
    while (e < n && kb[e] == kb[i]) e++;
    ukb[pos[i]] = kb[i];
    uvb[pos[i]] = tdm__bt_reduce_run(vb, i, e, dup, vs, vkind);
  }
}

__global__ void k_fill_leaves(tdm__bt_node *nodes, tdm__bt_geom g, const uint64_t *ukb, const uint64_t *uvb) {
  GRID_LOOP(i, (uint64_t)g.cnt[0]) (void)tdm__bt_fill_leaf(nodes, &g, ukb, uvb, 8, 8, TDM_KIND_UNSIGNED, i);
}

__global__ void k_fill_inner(tdm__bt_node *nodes, tdm__bt_geom g, const uint64_t *ukb, uint32_t l) {
  GRID_LOOP(i, (uint64_t)g.cnt[l]) tdm__bt_fill_inner(nodes, &g, ukb, 8, TDM_KIND_UNSIGNED, l, i);
}

/* Key index i of a bulk-layout tree -> its leaf and slot. */
__device__ __forceinline__ const tdm__bt_node *locate(const tdm__bt_node *nodes, const tdm__bt_geom &g, uint64_t i,
                                                     uint32_t *slot) {
  uint64_t leaf = tdm__bt_even_part(g.m, g.cnt[0], i);
  *slot = (uint32_t)(i - tdm__bt_even_start(g.m, g.cnt[0], leaf));
  return &nodes[g.base[0] + leaf];
}

__global__ void k_export_bits(const tdm__bt_node *nodes, tdm__bt_geom g, uint64_t *kb, uint64_t *vb) {
  GRID_LOOP(i, g.m) {
    uint32_t s;
    const tdm__bt_node *x = locate(nodes, g, i, &s);
    kb[i] = x->key[s];
    vb[i] = x->u.val[s];
  }
}

__global__ void k_export(const tdm__bt_node *nodes, tdm__bt_geom g, void *keys, void *vals, uint32_t ks, uint32_t vs,
                         int kind) {
  GRID_LOOP(i, g.m) {
    uint32_t s;
    const tdm__bt_node *x = locate(nodes, g, i, &s);
    if (keys) tdm__bt_store_key(keys, i, x->key[s], ks, kind);
    if (vals) tdm__bt_store_val(vals, i, x->u.val[s], vs);
  }
}

__global__ void k_find(const tdm__bt_node *nodes, uint32_t root, uint32_t h, const void *q, uint64_t n, uint32_t ks,
                       int kind, void *vals, uint8_t *found, uint32_t vs) {
  GRID_LOOP(i, n) {
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
  GRID_LOOP(i, n) {
    uint32_t leaf, pos;
    rank[i] = tdm__bt_descend(nodes, root, h, tdm__bt_key_bits(q, i, ks, kind), &leaf, &pos);
  }
}

/* Counts of lo[i] <= k <= hi[i]; with cnt_len = n + 1 the extra slot gets 0
 * so an exclusive scan of the array yields the offsets and the total. */
__global__ void k_range_count(const tdm__bt_node *nodes, uint32_t root, uint32_t h, const void *lo, const void *hi,
                              uint64_t n, uint64_t cnt_len, uint32_t ks, int kind, uint64_t *cnt) {
  GRID_LOOP(i, cnt_len) {
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

__global__ void k_range_fill(const tdm__bt_node *nodes, tdm__bt_geom g, uint32_t root, const void *lo, uint64_t n,
                             const uint64_t *off, void *keys, void *vals, uint32_t ks, uint32_t vs, int kind) {
  GRID_LOOP(i, n) {
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

/* keep[i] = 1 unless sorted batch bits bb[0..nb) hold kb[i]. */
__global__ void k_keep(const uint64_t *kb, uint64_t m, const uint64_t *bb, uint64_t nb, uint64_t *keep) {
  GRID_LOOP(i, m) {
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
  GRID_LOOP(i, m) {
    if (!keep[i]) continue;
    ukb[pos[i]] = kb[i];
    uvb[pos[i]] = vb[i];
  }
}

/* ---- helpers ------------------------------------------------------------------ */

/* Device buffers of one call, freed together. */
struct dbufs {
  void *p[12];
  int n;
};

static tdm_status dalloc(tdm_ctx *ctx, dbufs *b, size_t bytes, void **out) {
  tdm_status st = tdm__gpu_malloc(ctx, bytes, out);
  if (st == TDM_OK && *out) b->p[b->n++] = *out;
  return st;
}

static void dfree(tdm_ctx *ctx, dbufs *b) {
  for (int i = 0; i < b->n; i++) tdm__gpu_free(ctx, b->p[i]);
  b->n = 0;
}

static tdm_status launch_check(const char *where) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return tdm__cuda_fail(e, where, __FILE__, __LINE__);
  return TDM_OK;
}

/* Exclusive scan of n u64 flags into out; *total receives the sum. */
static tdm_status scan_total(tdm_ctx *ctx, dbufs *b, const uint64_t *flag, uint64_t *out, uint64_t n,
                             uint64_t *total) {
  size_t temp_bytes = 0;
  void *temp = NULL;
  uint64_t last[2];
  tdm_status st;
  cudaStream_t s = tdm__stream(ctx);
  TDM_CUDA_TRY(cub::DeviceScan::ExclusiveSum(NULL, temp_bytes, flag, out, (size_t)n, s), (void)0);
  if ((st = dalloc(ctx, b, temp_bytes ? temp_bytes : 1, &temp)) != TDM_OK) return st;
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
  tdm__bt_geom g;
  void *nn = NULL;
  tdm_status st;
  memset(&g, 0, sizeof g);
  if (m > 0) {
    tdm__bt_geom_init(&g, m);
    if (g.nodes >= TDM_BT_NIL)
      return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "tdm_btree: %llu keys need more than 2^32 - 1 nodes",
                       (unsigned long long)m);
    if ((st = tdm__gpu_malloc(ctx, (size_t)g.nodes * sizeof(tdm__bt_node), &nn)) != TDM_OK) return st;
    k_fill_leaves<<<tdm__grid(g.cnt[0], BLOCK), BLOCK, 0, s>>>((tdm__bt_node *)nn, g, ukb, uvb);
    for (uint32_t l = 1; l < g.h; l++)
      k_fill_inner<<<tdm__grid(g.cnt[l], BLOCK), BLOCK, 0, s>>>((tdm__bt_node *)nn, g, ukb, l);
    if ((st = launch_check("tdm_btree (fill nodes)")) != TDM_OK ||
        (st = tdm__gpu_sync(ctx, "tdm_btree (fill nodes)")) != TDM_OK) {
      tdm__gpu_free(ctx, nn);
      return st;
    }
  }
  tdm__gpu_free(ctx, t->d_nodes);
  t->d_nodes = (tdm__bt_node *)nn;
  t->geom = g;
  t->size = m;
  t->height = m ? g.h : 0;
  t->root = m ? (uint32_t)(g.nodes - 1) : TDM_BT_NIL;
  t->first_leaf = m ? 0 : TDM_BT_NIL;
  t->last_leaf = m ? g.cnt[0] - 1 : TDM_BT_NIL;
  return TDM_OK;
}

/* Sorts n raw keys / values already in device buffers (modified in place),
 * reduces duplicate runs and installs the result as t's nodes. */
static tdm_status sort_reduce_install(tdm_btree *t, dbufs *b, void *d_k, void *d_v, uint64_t n) {
  tdm_ctx *ctx = t->ctx;
  cudaStream_t s = tdm__stream(ctx);
  uint64_t *kb, *vb, *flag, *pos, *ukb, *uvb, m = 0;
  unsigned grid = tdm__grid(n, BLOCK);
  tdm_status st;
  if (n > 1 && (st = tdm__gpu_sort(ctx, t->key_type, d_k, t->value_type, d_v, n, 0)) != TDM_OK) return st;
  if ((st = dalloc(ctx, b, n * 8, (void **)&kb)) != TDM_OK || (st = dalloc(ctx, b, n * 8, (void **)&vb)) != TDM_OK ||
      (st = dalloc(ctx, b, n * 8, (void **)&flag)) != TDM_OK || (st = dalloc(ctx, b, n * 8, (void **)&pos)) != TDM_OK)
    return st;
  k_to_bits<<<grid, BLOCK, 0, s>>>(d_k, d_v, kb, vb, n, t->ks, t->vs, t->kind);
  k_heads<<<grid, BLOCK, 0, s>>>(kb, flag, n);
  if ((st = launch_check("tdm_btree (run heads)")) != TDM_OK) return st;
  if ((st = scan_total(ctx, b, flag, pos, n, &m)) != TDM_OK) return st;
  if ((st = dalloc(ctx, b, m * 8, (void **)&ukb)) != TDM_OK || (st = dalloc(ctx, b, m * 8, (void **)&uvb)) != TDM_OK)
    return st;
  k_reduce<<<grid, BLOCK, 0, s>>>(kb, vb, flag, pos, n, ukb, uvb, t->dup, t->vs, t->vkind);
  if ((st = launch_check("tdm_btree (reduce runs)")) != TDM_OK) return st;
  return install(t, ukb, uvb, m);
}

/* Copies bytes from the caller's array (host or device) into device memory. */
static tdm_status copy_in(tdm_ctx *ctx, void *dst, const void *src, size_t bytes) {
  TDM_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, tdm__stream(ctx)), (void)0);
  return TDM_OK;
}

/* ---- entry points ------------------------------------------------------------ */

extern "C" tdm_status tdm__bt_gpu_build(tdm_btree *t, const void *keys, const void *values, size_t n) {
  tdm_ctx *ctx = t->ctx;
  dbufs b = {{0}, 0};
  void *d_k, *d_v;
  tdm_status st;
  if ((st = tdm__gpu_enter(ctx)) != TDM_OK) return st;
  if (n == 0) return install(t, NULL, NULL, 0);
  if ((st = dalloc(ctx, &b, n * t->ks, &d_k)) == TDM_OK && (st = dalloc(ctx, &b, n * t->vs, &d_v)) == TDM_OK &&
      (st = copy_in(ctx, d_k, keys, n * t->ks)) == TDM_OK && (st = copy_in(ctx, d_v, values, n * t->vs)) == TDM_OK)
    st = sort_reduce_install(t, &b, d_k, d_v, n);
  dfree(ctx, &b);
  return st;
}

extern "C" void tdm__bt_gpu_free(tdm_btree *t) {
  if (t->d_nodes) {
    (void)tdm__gpu_enter(t->ctx);
    tdm__gpu_free(t->ctx, t->d_nodes);
    (void)cudaStreamSynchronize(tdm__stream(t->ctx));
    t->d_nodes = NULL;
  }
}

extern "C" tdm_status tdm__bt_gpu_insert(tdm_btree *t, const void *keys, const void *values, size_t n) {
  tdm_ctx *ctx = t->ctx;
  cudaStream_t s = tdm__stream(ctx);
  dbufs b = {{0}, 0};
  uint64_t m = t->size, total = m + n;
  char *d_k, *d_v;
  tdm_status st;
  if ((st = tdm__gpu_enter(ctx)) != TDM_OK) return st;
  /* Stored entries first (raw form, in key order), then the batch. */
  if ((st = dalloc(ctx, &b, total * t->ks, (void **)&d_k)) != TDM_OK ||
      (st = dalloc(ctx, &b, total * t->vs, (void **)&d_v)) != TDM_OK)
    goto out;
  if (m > 0) {
    k_export<<<tdm__grid(m, BLOCK), BLOCK, 0, s>>>(t->d_nodes, t->geom, d_k, d_v, t->ks, t->vs, t->kind);
    if ((st = launch_check("tdm_btree_insert (export)")) != TDM_OK) goto out;
  }
  if ((st = copy_in(ctx, d_k + m * t->ks, keys, n * t->ks)) != TDM_OK ||
      (st = copy_in(ctx, d_v + m * t->vs, values, n * t->vs)) != TDM_OK)
    goto out;
  st = sort_reduce_install(t, &b, d_k, d_v, total);
out:
  dfree(ctx, &b);
  return st;
}

extern "C" tdm_status tdm__bt_gpu_erase(tdm_btree *t, const void *keys, size_t n, size_t *erased_out) {
  tdm_ctx *ctx = t->ctx;
  cudaStream_t s = tdm__stream(ctx);
  dbufs b = {{0}, 0};
  uint64_t m = t->size, kept = 0, *bb, *kb, *vb, *keep, *pos, *ukb, *uvb;
  void *d_k;
  tdm_status st;
  if ((st = tdm__gpu_enter(ctx)) != TDM_OK) return st;
  if (m == 0) {
    if (erased_out) *erased_out = 0;
    return TDM_OK;
  }
  if ((st = dalloc(ctx, &b, n * t->ks, &d_k)) != TDM_OK || (st = dalloc(ctx, &b, n * 8, (void **)&bb)) != TDM_OK ||
      (st = dalloc(ctx, &b, m * 8, (void **)&kb)) != TDM_OK || (st = dalloc(ctx, &b, m * 8, (void **)&vb)) != TDM_OK ||
      (st = dalloc(ctx, &b, m * 8, (void **)&keep)) != TDM_OK || (st = dalloc(ctx, &b, m * 8, (void **)&pos)) != TDM_OK)
    goto out;
  if ((st = copy_in(ctx, d_k, keys, n * t->ks)) != TDM_OK) goto out;
  if (n > 1 && (st = tdm__gpu_sort(ctx, t->key_type, d_k, t->key_type, NULL, n, 0)) != TDM_OK) goto out;
  k_to_bits<<<tdm__grid(n, BLOCK), BLOCK, 0, s>>>(d_k, NULL, bb, NULL, n, t->ks, t->vs, t->kind);
  k_export_bits<<<tdm__grid(m, BLOCK), BLOCK, 0, s>>>(t->d_nodes, t->geom, kb, vb);
  k_keep<<<tdm__grid(m, BLOCK), BLOCK, 0, s>>>(kb, m, bb, n, keep);
  if ((st = launch_check("tdm_btree_erase (mark)")) != TDM_OK) goto out;
  if ((st = scan_total(ctx, &b, keep, pos, m, &kept)) != TDM_OK) goto out;
  if (kept < m) {
    if ((st = dalloc(ctx, &b, kept * 8 + 8, (void **)&ukb)) != TDM_OK ||
        (st = dalloc(ctx, &b, kept * 8 + 8, (void **)&uvb)) != TDM_OK)
      goto out;
    k_compact<<<tdm__grid(m, BLOCK), BLOCK, 0, s>>>(kb, vb, keep, pos, m, ukb, uvb);
    if ((st = launch_check("tdm_btree_erase (compact)")) != TDM_OK) goto out;
    if ((st = install(t, ukb, uvb, kept)) != TDM_OK) goto out;
  }
  if (erased_out) *erased_out = (size_t)(m - kept);
out:
  dfree(ctx, &b);
  return st;
}

/* Queries stage their inputs and outputs (host arrays get device copies),
 * launch one thread per query and copy outputs back. */
extern "C" tdm_status tdm__bt_gpu_find(const tdm_btree *t, const void *keys, void *values_out, uint8_t *found_out,
                                       size_t n) {
  tdm_ctx *ctx = t->ctx;
  tdm__dev_array q, v, f;
  tdm_status st;
  memset(&v, 0, sizeof v);
  memset(&f, 0, sizeof f);
  if ((st = tdm__gpu_enter(ctx)) != TDM_OK) return st;
  if ((st = tdm__gpu_in(ctx, keys, n * t->ks, &q)) != TDM_OK) return st;
  if ((values_out && (st = tdm__gpu_out(ctx, values_out, n * t->vs, &v)) != TDM_OK) ||
      (found_out && (st = tdm__gpu_out(ctx, found_out, n, &f)) != TDM_OK))
    goto out;
  if (t->size == 0) {
    cudaError_t e = cudaSuccess;
    if (values_out) e = cudaMemsetAsync(v.d, 0, n * t->vs, tdm__stream(ctx));
    if (found_out && e == cudaSuccess) e = cudaMemsetAsync(f.d, 0, n, tdm__stream(ctx));
    if (e != cudaSuccess) {
      st = tdm__cuda_fail(e, "tdm_btree_find (memset)", __FILE__, __LINE__);
      goto out;
    }
  } else {
    k_find<<<tdm__grid(n, BLOCK), BLOCK, 0, tdm__stream(ctx)>>>(t->d_nodes, t->root, t->height, q.d, n, t->ks,
                                                                 t->kind, values_out ? v.d : NULL,
                                                                 (uint8_t *)(found_out ? f.d : NULL), t->vs);
    if ((st = launch_check("tdm_btree_find")) != TDM_OK) goto out;
  }
  if ((values_out && (st = tdm__gpu_out_finish(ctx, &v)) != TDM_OK) ||
      (found_out && (st = tdm__gpu_out_finish(ctx, &f)) != TDM_OK))
    goto out;
  st = tdm__gpu_sync(ctx, "tdm_btree_find");
out:
  tdm__gpu_release(ctx, &q);
  tdm__gpu_release(ctx, &v);
  tdm__gpu_release(ctx, &f);
  return st;
}

extern "C" tdm_status tdm__bt_gpu_rank(const tdm_btree *t, const void *keys, uint64_t *rank_out, size_t n) {
  tdm_ctx *ctx = t->ctx;
  tdm__dev_array q, r;
  tdm_status st;
  memset(&r, 0, sizeof r);
  if ((st = tdm__gpu_enter(ctx)) != TDM_OK) return st;
  if ((st = tdm__gpu_in(ctx, keys, n * t->ks, &q)) != TDM_OK) return st;
  if ((st = tdm__gpu_out(ctx, rank_out, n * 8, &r)) != TDM_OK) goto out;
  if (t->size == 0) {
    cudaError_t e = cudaMemsetAsync(r.d, 0, n * 8, tdm__stream(ctx));
    if (e != cudaSuccess) {
      st = tdm__cuda_fail(e, "tdm_btree_rank (memset)", __FILE__, __LINE__);
      goto out;
    }
  } else {
    k_rank<<<tdm__grid(n, BLOCK), BLOCK, 0, tdm__stream(ctx)>>>(t->d_nodes, t->root, t->height, q.d, n, t->ks,
                                                                 t->kind, (uint64_t *)r.d);
    if ((st = launch_check("tdm_btree_rank")) != TDM_OK) goto out;
  }
  if ((st = tdm__gpu_out_finish(ctx, &r)) != TDM_OK) goto out;
  st = tdm__gpu_sync(ctx, "tdm_btree_rank");
out:
  tdm__gpu_release(ctx, &q);
  tdm__gpu_release(ctx, &r);
  return st;
}

/* Counts for n queries into the device array d_cnt of cnt_len >= n entries. */
static tdm_status counts(const tdm_btree *t, const void *d_lo, const void *d_hi, size_t n, uint64_t cnt_len,
                         uint64_t *d_cnt) {
  cudaStream_t s = tdm__stream(t->ctx);
  if (t->size == 0) {
    TDM_CUDA_TRY(cudaMemsetAsync(d_cnt, 0, cnt_len * 8, s), (void)0);
    return TDM_OK;
  }
  k_range_count<<<tdm__grid(cnt_len, BLOCK), BLOCK, 0, s>>>(t->d_nodes, t->root, t->height, d_lo, d_hi, n, cnt_len,
                                                            t->ks, t->kind, d_cnt);
  return launch_check("tdm_btree_range_count");
}

extern "C" tdm_status tdm__bt_gpu_range_count(const tdm_btree *t, const void *lo, const void *hi,
                                              uint64_t *count_out, size_t n) {
  tdm_ctx *ctx = t->ctx;
  tdm__dev_array a, b, c;
  tdm_status st;
  memset(&b, 0, sizeof b);
  memset(&c, 0, sizeof c);
  if ((st = tdm__gpu_enter(ctx)) != TDM_OK) return st;
  if ((st = tdm__gpu_in(ctx, lo, n * t->ks, &a)) != TDM_OK) return st;
  if ((st = tdm__gpu_in(ctx, hi, n * t->ks, &b)) != TDM_OK || (st = tdm__gpu_out(ctx, count_out, n * 8, &c)) != TDM_OK ||
      (st = counts(t, a.d, b.d, n, n, (uint64_t *)c.d)) != TDM_OK || (st = tdm__gpu_out_finish(ctx, &c)) != TDM_OK)
    goto out;
  st = tdm__gpu_sync(ctx, "tdm_btree_range_count");
out:
  tdm__gpu_release(ctx, &a);
  tdm__gpu_release(ctx, &b);
  tdm__gpu_release(ctx, &c);
  return st;
}

extern "C" tdm_status tdm__bt_gpu_range(const tdm_btree *t, const void *lo, const void *hi, size_t n,
                                        uint64_t *offsets_out, void *keys_out, void *values_out, size_t cap) {
  tdm_ctx *ctx = t->ctx;
  cudaStream_t s = tdm__stream(ctx);
  tdm__dev_array a, b, k, v;
  dbufs bufs = {{0}, 0};
  uint64_t *cnt, *off, total = 0;
  tdm_status st;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  memset(&k, 0, sizeof k);
  memset(&v, 0, sizeof v);
  if ((st = tdm__gpu_enter(ctx)) != TDM_OK) return st;
  if (n == 0) {
    static const uint64_t zero = 0;
    TDM_CUDA_TRY(cudaMemcpyAsync(offsets_out, &zero, 8, cudaMemcpyDefault, s), (void)0);
    return tdm__gpu_sync(ctx, "tdm_btree_range");
  }
  if ((st = tdm__gpu_in(ctx, lo, n * t->ks, &a)) != TDM_OK || (st = tdm__gpu_in(ctx, hi, n * t->ks, &b)) != TDM_OK ||
      (st = dalloc(ctx, &bufs, (n + 1) * 8, (void **)&cnt)) != TDM_OK ||
      (st = dalloc(ctx, &bufs, (n + 1) * 8, (void **)&off)) != TDM_OK ||
      (st = counts(t, a.d, b.d, n, n + 1, cnt)) != TDM_OK ||
      (st = scan_total(ctx, &bufs, cnt, off, n + 1, &total)) != TDM_OK)
    goto out;
  {
    cudaError_t e = cudaMemcpyAsync(offsets_out, off, (n + 1) * 8, cudaMemcpyDefault, s);
    if (e != cudaSuccess) {
      st = tdm__cuda_fail(e, "tdm_btree_range (offsets)", __FILE__, __LINE__);
      goto out;
    }
  }
  if (total > cap) {
    if ((st = tdm__gpu_sync(ctx, "tdm_btree_range")) == TDM_OK)
      st = tdm__fail(TDM_ERR_CAPACITY, "tdm_btree_range: the ranges hold %llu keys, but cap is %zu",
                     (unsigned long long)total, cap);
    goto out;
  }
  if (total > 0) {
    if ((keys_out && (st = tdm__gpu_out(ctx, keys_out, total * t->ks, &k)) != TDM_OK) ||
        (values_out && (st = tdm__gpu_out(ctx, values_out, total * t->vs, &v)) != TDM_OK))
      goto out;
    k_range_fill<<<tdm__grid(n, BLOCK), BLOCK, 0, s>>>(t->d_nodes, t->geom, t->root, a.d, n, off,
                                                       keys_out ? k.d : NULL, values_out ? v.d : NULL, t->ks, t->vs,
                                                       t->kind);
    if ((st = launch_check("tdm_btree_range")) != TDM_OK) goto out;
    if ((keys_out && (st = tdm__gpu_out_finish(ctx, &k)) != TDM_OK) ||
        (values_out && (st = tdm__gpu_out_finish(ctx, &v)) != TDM_OK))
      goto out;
  }
  st = tdm__gpu_sync(ctx, "tdm_btree_range");
out:
  tdm__gpu_release(ctx, &a);
  tdm__gpu_release(ctx, &b);
  tdm__gpu_release(ctx, &k);
  tdm__gpu_release(ctx, &v);
  dfree(ctx, &bufs);
  return st;
}

extern "C" tdm_status tdm__bt_gpu_export(const tdm_btree *t, void *keys_out, void *values_out) {
  tdm_ctx *ctx = t->ctx;
  tdm__dev_array k, v;
  tdm_status st;
  memset(&k, 0, sizeof k);
  memset(&v, 0, sizeof v);
  if ((st = tdm__gpu_enter(ctx)) != TDM_OK) return st;
  if ((keys_out && (st = tdm__gpu_out(ctx, keys_out, t->size * t->ks, &k)) != TDM_OK) ||
      (values_out && (st = tdm__gpu_out(ctx, values_out, t->size * t->vs, &v)) != TDM_OK))
    goto out;
  k_export<<<tdm__grid(t->size, BLOCK), BLOCK, 0, tdm__stream(ctx)>>>(t->d_nodes, t->geom, keys_out ? k.d : NULL,
                                                                       values_out ? v.d : NULL, t->ks, t->vs, t->kind);
  if ((st = launch_check("tdm_btree_export")) != TDM_OK) goto out;
  if ((keys_out && (st = tdm__gpu_out_finish(ctx, &k)) != TDM_OK) ||
      (values_out && (st = tdm__gpu_out_finish(ctx, &v)) != TDM_OK))
    goto out;
  st = tdm__gpu_sync(ctx, "tdm_btree_export");
out:
  tdm__gpu_release(ctx, &k);
  tdm__gpu_release(ctx, &v);
  return st;
}

extern "C" tdm_status tdm__bt_gpu_download(const tdm_btree *t, tdm__bt_node **out) {
  size_t bytes = (size_t)t->geom.nodes * sizeof(tdm__bt_node);
  tdm__bt_node *h;
  tdm_status st;
  *out = NULL;
  if ((st = tdm__gpu_enter(t->ctx)) != TDM_OK) return st;
  h = (tdm__bt_node *)tdm__malloc(bytes);
  if (!h) return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "tdm_btree_validate: out of host memory for a node copy");
  TDM_CUDA_TRY(cudaMemcpyAsync(h, t->d_nodes, bytes, cudaMemcpyDeviceToHost, tdm__stream(t->ctx)), tdm__free(h));
  if ((st = tdm__gpu_sync(t->ctx, "tdm_btree_validate (copy nodes)")) != TDM_OK) {
    tdm__free(h);
    return st;
  }
  *out = h;
  return TDM_OK;
}
