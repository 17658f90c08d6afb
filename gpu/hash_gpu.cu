/*
 * hash_gpu.cu: the CUDA backend of the hash table: its operations, and the
 * kernels that take no policy (rehash, export).
 *
 * The table lives in device memory in the layout of
 * include/tandem/detail/hash_layout.h; the kernels are thin loops around the
 * same probe functions the CPU runs. Insert and find launch through the
 * table's policy table (hash_probe.cu: the lanes per key and the insert
 * strategy, fixed per width); results are identical to the CPU's for every
 * duplicate policy.
 *
 * A table picks its per-width launch tables once, at create (as the CPU
 * hash does): one instantiation of each template per width, by name.
 *
 * Insert-or-number (hg_number, the data operations' numbering primitive,
 * backend.h) is composed of the table's own find and SUM claim, a scratch
 * table of the batch's first rows (tdm__hg_first_rows) and a scan; it waits
 * once.
 *
 * Everything that can fail for lack of memory (staging, scratch, the grown
 * table) is taken before the table changes.
 *
 * Insert outcome counts: the claim kernels add them to a small per-table
 * device buffer (made with the table, freed with it) instead of a buffer of
 * the call, and hg_insert adds n to h->pending rather than reading them, so
 * the insert itself never waits. hg_sync_counts reads and resets the buffer
 * when the public layer folds (src/hash_api.c decides when: at once for
 * every insert but a stream-ordered one into a fixed table on device arrays,
 * and before any call that needs exact counts).
 */
#include <string.h>

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include "hash_gpu.cuh"

/* Moves the live keys of the old table (cap slots) into dst (2^dl slots). */
template <typename K, typename V>
__global__ void rehash_kernel(const typename hs<K, V>::S *src, size_t cap, typename hs<K, V>::S *dst, unsigned dl) {
  const K tomb = (K)(sizeof(K) == 4 ? (uint64_t)TDM_HASH_TOMB32 : TDM_HASH_TOMB64);
  TDM_GRID_STRIDE(i, cap) {
    K k = src[i].k;
    int o;
    uint64_t pos;
    if (k == (K)TDM_HASH_EMPTY || k == tomb) continue;
    pos = hs<K, V>::claim(dst, dl, k, hs<K, V>::home(k, dl), &o);
    if (pos != TDM_HASH_NONE) dst[pos].v = src[i].v;
  }
}

/* Export in slot order, the CPU's order: the present side slots first (the
 * empty marker's key, then the tombstone's), then the live table slots by
 * index. Three steps, none depending on timing: count the live slots of
 * each tile, an exclusive scan of the tile counts (CUB), and a write pass
 * (below). Both passes run one resident wave (tdm__grid_resident) that
 * strides over the tiles. */
#define EXPORT_ITEMS 8u
#define EXPORT_TILE ((size_t)TDM_GPU_BLOCK * EXPORT_ITEMS)

template <typename K>
static __device__ __forceinline__ int live_key(K k) {
  const K tomb = (K)(sizeof(K) == 4 ? (uint64_t)TDM_HASH_TOMB32 : TDM_HASH_TOMB64);
  return k != (K)TDM_HASH_EMPTY && k != tomb;
}

/* The present side slots (the empty marker's key, then the tombstone's)
 * written from position at on. */
template <typename K, typename V>
static __device__ void export_sides(const typename hs<K, V>::S *s, size_t cap, K *ko, V *vo, size_t at) {
  if (s[cap].k) {
    ko[at] = (K)TDM_HASH_EMPTY;
    vo[at++] = s[cap].v;
  }
  if (s[cap + 1].k) {
    ko[at] = (K)(sizeof(K) == 4 ? (uint64_t)TDM_HASH_TOMB32 : TDM_HASH_TOMB64);
    vo[at] = s[cap + 1].v;
  }
}

/* Export: a tile of EXPORT_TILE slots per block and turn, read in
 * EXPORT_ITEMS passes of TDM_GPU_BLOCK consecutive slots (thread t reads
 * slot tile + pass * TDM_GPU_BLOCK + t), so that a warp's loads are
 * coalesced: a slot is read once by the count and once by the write. The
 * write keeps slot order: each pass places its live slots by a block scan
 * after the pass before. */
template <typename K, typename V>
static __device__ __forceinline__ unsigned export_thread_count(const typename hs<K, V>::S *s, size_t cap, size_t t) {
  size_t i0 = t * EXPORT_TILE + threadIdx.x;
  unsigned c = 0;
  for (unsigned j = 0; j < EXPORT_ITEMS; j++) {
    size_t i = i0 + (size_t)j * TDM_GPU_BLOCK;
    if (i < cap) c += (unsigned)live_key<K>(s[i].k);
  }
  return c;
}

template <typename K, typename V>
__global__ void __launch_bounds__(TDM_GPU_BLOCK) export_count_kernel(const typename hs<K, V>::S *s, size_t cap,
                                                                     unsigned long long *tile_cnt, size_t tiles) {
  typedef cub::BlockReduce<unsigned, TDM_GPU_BLOCK> reduce;
  __shared__ typename reduce::TempStorage tmp;
  for (size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    unsigned c = reduce(tmp).Sum(export_thread_count<K, V>(s, cap, t));
    if (threadIdx.x == 0) tile_cnt[t] = c;
    __syncthreads(); /* tmp is reused by the next tile */
  }
}

template <typename K, typename V>
__global__ void __launch_bounds__(TDM_GPU_BLOCK)
    export_write_kernel(const typename hs<K, V>::S *s, size_t cap, const unsigned long long *tile_off, size_t tiles,
                        K *ko, V *vo) {
  typedef cub::BlockScan<unsigned, TDM_GPU_BLOCK> scan;
  __shared__ typename scan::TempStorage tmp;
  size_t side = (s[cap].k != 0) + (s[cap + 1].k != 0);
  if (blockIdx.x == 0 && threadIdx.x == 0) export_sides<K, V>(s, cap, ko, vo, 0);
  for (size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    size_t at = side + (size_t)tile_off[t];
    for (unsigned j = 0; j < EXPORT_ITEMS; j++) {
      size_t i = t * EXPORT_TILE + (size_t)j * TDM_GPU_BLOCK + threadIdx.x;
      typename hs<K, V>::S slot;
      unsigned live = 0, before, total;
      if (i < cap) {
        slot = slot_load<typename hs<K, V>::S>::at(&s[i]);
        live = (unsigned)live_key<K>(slot.k);
      }
      scan(tmp).ExclusiveSum(live, before, total);
      if (live) {
        ko[at + before] = slot.k;
        vo[at + before] = slot.v;
      }
      at += total;
      __syncthreads(); /* tmp is reused by the next pass */
    }
  }
}

/* The scratch tables' export, whose callers sort what it gives: the same
 * coalesced reads as export_write_kernel, but each block claims room for a
 * tile's live slots with one atomicAdd on *cursor (zero on entry) instead of
 * a count pass and its scan, so the table is read once. The pairs land in
 * no fixed order (the order the blocks claim their room in). */
template <typename K, typename V>
__global__ void __launch_bounds__(TDM_GPU_BLOCK)
    export_any_kernel(const typename hs<K, V>::S *s, size_t cap, size_t tiles, unsigned long long *cursor, K *ko,
                      V *vo) {
  typedef cub::BlockScan<unsigned, TDM_GPU_BLOCK> scan;
  __shared__ typename scan::TempStorage tmp;
  __shared__ unsigned long long base;
  if (blockIdx.x == 0 && threadIdx.x == 0 && (s[cap].k || s[cap + 1].k))
    export_sides<K, V>(s, cap, ko, vo,
                       (size_t)atomicAdd(cursor, (unsigned long long)((s[cap].k != 0) + (s[cap + 1].k != 0))));
  for (size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    typename hs<K, V>::S slot[EXPORT_ITEMS];
    unsigned live = 0, before, total;
    for (unsigned j = 0; j < EXPORT_ITEMS; j++) {
      size_t i = t * EXPORT_TILE + (size_t)j * TDM_GPU_BLOCK + threadIdx.x;
      if (i < cap) {
        slot[j] = slot_load<typename hs<K, V>::S>::at(&s[i]);
        if (live_key<K>(slot[j].k)) live |= 1u << j;
      }
    }
    scan(tmp).ExclusiveSum((unsigned)__popc(live), before, total);
    if (threadIdx.x == 0) base = total ? atomicAdd(cursor, (unsigned long long)total) : 0;
    __syncthreads();
    for (unsigned j = 0; j < EXPORT_ITEMS; j++)
      if (live & (1u << j)) {
        ko[base + before] = slot[j].k;
        vo[base + before] = slot[j].v;
        before++;
      }
    __syncthreads(); /* tmp and base are the next tile's */
  }
}

/* A scratch table's export by its list of claimed slots (tdm__hash_gpu):
 * each warp of a block takes one claim warp's list, one lane an entry, the
 * block's lists placed together by one atomicAdd on *cursor (zero on
 * entry), so in no fixed order, as export_any. A slot past cap is a side
 * slot: its key is the marker it stands for (export_sides). */
#define EXPORT_WARPS (TDM_GPU_BLOCK / 32u)
template <typename K, typename V>
__global__ void __launch_bounds__(TDM_GPU_BLOCK)
    export_list_kernel(const typename hs<K, V>::S *s, size_t cap, const uint32_t *list, const uint32_t *list_n,
                       size_t warps, size_t per_warp, unsigned long long *cursor, K *ko, V *vo) {
  __shared__ unsigned long long at[EXPORT_WARPS + 1];
  const K tomb = (K)(sizeof(K) == 4 ? (uint64_t)TDM_HASH_TOMB32 : TDM_HASH_TOMB64);
  const unsigned lane = threadIdx.x & 31u, me = threadIdx.x / 32u;
  for (size_t w0 = blockIdx.x * (size_t)EXPORT_WARPS; w0 < warps; w0 += (size_t)gridDim.x * EXPORT_WARPS) {
    const size_t w = w0 + me, c = w < warps ? list_n[w] : 0;
    if (lane == 0) at[me + 1] = c;
    __syncthreads();
    if (threadIdx.x == 0) {
      at[0] = 0;
      for (unsigned j = 1; j <= EXPORT_WARPS; j++) at[j] += at[j - 1];
      const unsigned long long total = at[EXPORT_WARPS];
      const unsigned long long base = total ? atomicAdd(cursor, total) : 0;
      for (unsigned j = 0; j <= EXPORT_WARPS; j++) at[j] += base;
    }
    __syncthreads();
    for (size_t j = lane; j < c; j += 32u) {
      const uint32_t i = list[w * per_warp + j];
      const typename hs<K, V>::S slot = slot_load<typename hs<K, V>::S>::at(&s[i]);
      ko[at[me] + j] = i < cap ? slot.k : i == cap ? (K)TDM_HASH_EMPTY : tomb;
      vo[at[me] + j] = slot.v;
    }
    __syncthreads(); /* at is the next round's */
  }
}

template <typename K, typename V>
static void launch_rehash(tdm_ctx *ctx, const void *src, size_t cap, void *dst, unsigned dl);
template <typename K, typename V>
static void launch_export_count(const tdm_hash *h, unsigned long long *tile_cnt, size_t tiles);
template <typename K, typename V>
static void launch_export_write(const tdm_hash *h, const unsigned long long *tile_off, size_t tiles, void *ko,
                                void *vo);
template <typename K, typename V>
static void launch_export_any(const tdm_hash *h, unsigned long long *cursor, void *ko, void *vo);
template <typename K, typename V>
static void launch_export_list(const tdm_hash *h, unsigned long long *cursor, void *ko, void *vo);

/* The shared launch functions of one width, instantiated by name below. */
template <typename K, typename V>
static const tdm__hg_common_fns common_fns = {
    .rehash = launch_rehash<K, V>,
    .export_count = launch_export_count<K, V>,
    .export_write = launch_export_write<K, V>,
    .export_any = launch_export_any<K, V>,
    .export_list = launch_export_list<K, V>,
};
/* In the order of tdm__hash_inst. */
static const tdm__hg_common_fns *const common_widths[4] = {
    &common_fns<uint32_t, uint32_t>,
    &common_fns<uint32_t, uint64_t>,
    &common_fns<uint64_t, uint32_t>,
    &common_fns<uint64_t, uint64_t>,
};

static tdm_status hg_create(tdm_hash *h) {
  tdm_ctx *ctx = h->ctx;
  size_t bytes = tdm__hash_table_bytes(h, h->log2cap);
  tdm__gpu_scope sc(ctx);
  void *slots;
  unsigned long long *counts;
  tdm_status st;
  tdm__hg(h)->common = common_widths[tdm__hash_inst(h->ks, h->vs)];
  tdm__hg(h)->policy = tdm__hg_policies[tdm__hash_inst(h->ks, h->vs)];
  if ((st = sc.enter()) != TDM_OK) return st;
  if ((st = sc.alloc(bytes, &slots)) != TDM_OK ||
      (st = sc.alloc(NCOUNT * sizeof(unsigned long long), &counts)) != TDM_OK)
    return st;
  TDM_CUDA_TRY(cudaMemsetAsync(slots, 0, bytes, tdm__stream(ctx)), (void)0);
  TDM_CUDA_TRY(cudaMemsetAsync(counts, 0, NCOUNT * sizeof(unsigned long long), tdm__stream(ctx)), (void)0);
  if ((st = tdm__gpu_sync(ctx, "tdm_hash_create")) != TDM_OK) return st;
  sc.keep(slots);
  sc.keep(counts);
  tdm__hg(h)->slots = slots;
  tdm__hg(h)->counts = counts;
  return TDM_OK;
}

tdm_status tdm__hg_scratch_table(tdm_ctx *ctx, tdm__gpu_scope &sc, tdm_type key_bits, tdm_type value_type, int dup,
                                 const void *d_keys, const void *d_vals, int rows, size_t m, int exported,
                                 tdm_hash *h, tdm__hash_gpu *be, const char *fn) {
  cudaStream_t s = tdm__stream(ctx);
  tdm__hg_scratch x;
  unsigned l = TDM_HASH_MIN_LOG2;
  size_t bytes, off;
  tdm_status st;
  memset(h, 0, sizeof *h);
  memset(be, 0, sizeof *be);
  while (tdm__hash_limit(l, TDM_HASH_DEFAULT_MAX_LOAD) < (uint64_t)m) l++;
  tdm__hash_init_common(h, ctx, &tdm__hash_cuda_ops, be, key_bits, value_type, dup, 1, TDM_HASH_DEFAULT_MAX_LOAD,
                        l);
  bytes = tdm__hash_table_bytes(h, l);
  be->common = common_widths[tdm__hash_inst(h->ks, h->vs)];
  be->policy = tdm__hg_policies[tdm__hash_inst(h->ks, h->vs)];
  be->rows = d_vals ? TDM__HG_ROWS_NONE : rows;
  if ((st = sc.alloc(bytes, &be->slots)) != TDM_OK ||
      (st = sc.alloc(NCOUNT * sizeof(unsigned long long), &be->counts)) != TDM_OK ||
      (m && (st = be->policy->scratch(h, sc, m, h->cap, &x)) != TDM_OK))
    return st;
  if (exported && m && x.chunk >= m && h->cap + 2 <= UINT32_MAX) {
    /* The claimed slots' list (tdm__hash_gpu): room for the widest claim
     * grid of m keys (32 lanes a key at most), each warp's share rounded up
     * to whole turns. */
    const size_t warps = (size_t)tdm__grid_resident(ctx, m * 32u) * (TDM_GPU_BLOCK / 32u);
    if ((st = sc.alloc((m + warps * 32u) * sizeof(uint32_t), &be->list)) != TDM_OK ||
        (st = sc.alloc(warps * sizeof(uint32_t), &be->list_n)) != TDM_OK)
      return st;
    TDM_CUDA_TRY(cudaMemsetAsync(be->list_n, 0, warps * sizeof(uint32_t), s), (void)0);
    be->list_warps = warps;
  }
  TDM_CUDA_TRY(cudaMemsetAsync(be->slots, 0, bytes, s), (void)0);
  TDM_CUDA_TRY(cudaMemsetAsync(be->counts, 0, NCOUNT * sizeof(unsigned long long), s), (void)0);
  for (off = 0; off < m; off += x.chunk) {
    const char *k = (const char *)d_keys + off * h->ks;
    const char *v = d_vals ? (const char *)d_vals + off * h->vs : NULL;
    be->policy->insert(h, k, v, m - off < x.chunk ? m - off : x.chunk, &x, off / x.chunk, be->counts);
    if ((st = tdm__launch_check(fn)) != TDM_OK) return st;
  }
  return TDM_OK;
}

tdm_status tdm__hg_first_rows(tdm_ctx *ctx, tdm__gpu_scope &sc, tdm_type key_bits, tdm_type row_bits,
                              const void *d_keys, size_t m, int exported, tdm_hash *h, tdm__hash_gpu *be,
                              const char *fn) {
  return tdm__hg_scratch_table(ctx, sc, key_bits, row_bits, TDM__DUP_MAX, d_keys, NULL, TDM__HG_ROWS_NOT_INDEX, m,
                               exported, h, be, fn);
}

tdm_status tdm__hg_scratch_export(tdm_ctx *ctx, tdm__gpu_scope &sc, const tdm_hash *h, void **d_keys, void **d_vals,
                                  size_t *n_out, const char *fn) {
  const tdm__hash_gpu *be = tdm__hg(h);
  size_t n;
  unsigned long long c[NCOUNT], *cursor = NULL;
  tdm_status st;
  if ((st = tdm__gpu_read(ctx, c, be->counts, sizeof c, fn)) != TDM_OK) return st;
  n = (size_t)(c[TDM_HASH_NEW_EMPTY] + c[TDM_HASH_NEW_TOMB] + c[TDM_HASH_NEW_SIDE]);
  if ((st = sc.alloc(n * h->ks, d_keys)) != TDM_OK || (st = sc.alloc(n * h->vs, d_vals)) != TDM_OK ||
      (st = sc.alloc(sizeof *cursor, &cursor)) != TDM_OK)
    return st;
  TDM_CUDA_TRY(cudaMemsetAsync(cursor, 0, sizeof *cursor, tdm__stream(ctx)), (void)0);
  /* By the list when its reads (the warps' counts, a 4-byte entry and a
   * 32-byte sector a slot) come to less than every slot read in order. */
  if (be->list && be->list_warps * 4u + n * 36u < (h->cap + 2) * (h->ks + h->vs))
    be->common->export_list(h, cursor, *d_keys, *d_vals);
  else
    be->common->export_any(h, cursor, *d_keys, *d_vals);
  if ((st = tdm__launch_check(fn)) != TDM_OK) return st;
  *n_out = n;
  return TDM_OK;
}

static void hg_destroy(tdm_hash *h) {
  tdm__gpu_device dev;
  if (!tdm__hg(h)->slots) return;
  if (dev.enter(h->ctx) == TDM_OK) {
    tdm__gpu_free(h->ctx, tdm__hg(h)->slots);
    tdm__gpu_free(h->ctx, tdm__hg(h)->counts);
    (void)cudaStreamSynchronize(tdm__stream(h->ctx));
    (void)cudaGetLastError();
  }
  tdm__hg(h)->slots = NULL;
  tdm__hg(h)->counts = NULL;
}

template <typename K, typename V>
static void launch_rehash(tdm_ctx *ctx, const void *src, size_t cap, void *dst, unsigned dl) {
  rehash_kernel<K, V><<<tdm__grid(cap), TDM_GPU_BLOCK, 0, tdm__stream(ctx)>>>(
      (const typename hs<K, V>::S *)src, cap, (typename hs<K, V>::S *)dst, dl);
}

/* Moves the table into a freshly allocated one of 2^dl slots. Fails (table
 * unchanged) only if the allocation does; later CUDA errors are device errors. */
static tdm_status rehash(tdm_hash *h, unsigned dl) {
  tdm_ctx *ctx = h->ctx;
  size_t bytes = tdm__hash_table_bytes(h, dl), sb = h->slot_bytes;
  size_t dcap = (size_t)1 << dl;
  tdm__gpu_scope sc(ctx);
  void *dst;
  tdm_status st;
  if ((st = sc.alloc(bytes, &dst)) != TDM_OK) return st;
  TDM_CUDA_TRY(cudaMemsetAsync(dst, 0, bytes, tdm__stream(ctx)), (void)0);
  tdm__hg(h)->common->rehash(ctx, tdm__hg(h)->slots, h->cap, dst, dl);
  if ((st = tdm__launch_check("tdm_hash_insert (rehash)")) != TDM_OK) return st;
  if ((st = tdm__gpu_copy_committed(ctx, (char *)dst + dcap * sb, (const char *)tdm__hg(h)->slots + h->cap * sb,
                                    2u * sb, cudaMemcpyDeviceToDevice, "tdm_hash_insert (rehash)")) != TDM_OK)
    return st;
  sc.keep(dst);
  tdm__gpu_free(ctx, tdm__hg(h)->slots);
  tdm__hg(h)->slots = dst;
  h->log2cap = dl;
  h->cap = dcap;
  h->limit = (size_t)tdm__hash_limit(dl, h->max_load);
  h->tombs = 0;
  return TDM_OK;
}

/* Queues the insert and returns without waiting: the outcome counts go to the
 * table's count buffer, and h->pending grows by n (the public layer folds
 * them, at once unless the insert may stay queued). Staged host arrays are
 * released stream-ordered, so the scope may end before the kernels ran. */
static tdm_status hg_insert(tdm_hash *h, const void *keys, const void *values, size_t n, unsigned grow_log2) {
  tdm_ctx *ctx = h->ctx;
  tdm__gpu_scope sc(ctx);
  tdm__dev_array dk, dv;
  tdm__hg_scratch x;
  size_t final_cap = grow_log2 ? (size_t)1 << grow_log2 : h->cap, off;
  tdm_status st;

  if (n == 0) return TDM_OK; /* the public layer never asks; chunk sizes below divide by n's chunk */
  if ((st = sc.enter()) != TDM_OK) return st;
  /* Everything that can run out of memory, before the table changes. */
  if ((st = sc.in(keys, n * h->ks, &dk)) != TDM_OK || (st = sc.in(values, n * h->vs, &dv)) != TDM_OK ||
      (st = tdm__hg(h)->policy->scratch(h, sc, n, final_cap, &x)) != TDM_OK)
    return st;
  if (grow_log2 && (st = rehash(h, grow_log2)) != TDM_OK) return st;
  /* Before the first launch: pending must bound whatever reaches the count
   * buffer, even when a later launch fails. */
  h->pending += n;
  for (off = 0; off < n; off += x.chunk) {
    size_t m = n - off < x.chunk ? n - off : x.chunk;
    tdm__hg(h)->policy->insert(h, (const char *)dk.d + off * h->ks, (const char *)dv.d + off * h->vs, m, &x,
                               off / x.chunk, tdm__hg(h)->counts);
    if ((st = tdm__launch_check("tdm_hash_insert")) != TDM_OK) return st;
  }
  return TDM_OK;
}

/* Reads and resets the table's count buffer (one wait) and folds it into the
 * common counters. Index TDM_HASH_FOUND counts the keys that found no free
 * slot (the claim kernel counts found keys nowhere else). */
static tdm_status hg_sync_counts(tdm_hash *h, const char *fn, size_t *no_slot) {
  tdm_ctx *ctx = h->ctx;
  tdm__gpu_device dev;
  unsigned long long hc[NCOUNT];
  tdm_status st;
  if ((st = dev.enter(ctx)) != TDM_OK) return st;
  /* The inserts being folded are queued already: the read is committed. */
  if ((st = tdm__gpu_copy_committed(ctx, hc, tdm__hg(h)->counts, sizeof hc, cudaMemcpyDeviceToHost, fn)) != TDM_OK)
    return st;
  /* The wait comes before anything else can fail: the queued copy writes
   * hc, which lives only as long as this call. */
  if ((st = tdm__gpu_sync(ctx, fn)) != TDM_OK) return st;
  /* Reset after the read; if it cannot be queued, the counts stay on the
   * device and nothing was folded (the next fold reads them again). */
  if ((st = tdm__gpu_memset_committed(ctx, tdm__hg(h)->counts, 0, sizeof hc, fn)) != TDM_OK) return st;
  h->size += (size_t)(hc[TDM_HASH_NEW_EMPTY] + hc[TDM_HASH_NEW_TOMB] + hc[TDM_HASH_NEW_SIDE]);
  h->side += (size_t)hc[TDM_HASH_NEW_SIDE];
  h->tombs -= (size_t)hc[TDM_HASH_NEW_TOMB];
  *no_slot = (size_t)hc[TDM_HASH_FOUND];
  return TDM_OK;
}

/* ---- insert-or-number (backend.h, tdm__hash_ops.number) ------------------ */

/* Row i starts a new key: not in the table, and the batch's first row of its
 * key (~first[i], the least row of the key: tdm__hg_first_rows).
 * flag[n] = 0, so that the exclusive sum's last entry counts the new keys;
 * that thread also seeds out: out[0] = n (no stop), out[1] = 0. */
__global__ void number_flags_kernel(const uint8_t *found, const uint64_t *first, uint64_t *flag, size_t n,
                                    unsigned long long *out) {
  TDM_GRID_STRIDE(i, n + 1) {
    if (i == n) {
      flag[n] = 0;
      out[0] = n;
      out[1] = 0;
    } else {
      flag[i] = !found[i] && ~first[i] == i; /* first: complements (tdm__hg_first_rows) */
    }
  }
}

/* out[0]: the row of the new key numbered max_new (the first not to be
 * numbered; stays n when there is none), out[1]: the marker keys (side
 * slots) among the new keys numbered, out[2]: the new keys of the batch
 * (rank[n]). */
template <typename K>
__global__ void number_stop_kernel(const K *keys, const uint64_t *flag, const uint64_t *rank, size_t n,
                                   uint64_t max_new, unsigned long long *out) {
  const K tomb = (K)(sizeof(K) == 4 ? (uint64_t)TDM_HASH_TOMB32 : TDM_HASH_TOMB64);
  TDM_GRID_STRIDE(i, n) {
    if (i == 0) out[2] = rank[n];
    if (!flag[i]) continue;
    if (rank[i] == max_new) out[0] = i;
    else if (rank[i] < max_new && (keys[i] == (K)TDM_HASH_EMPTY || keys[i] == tomb)) atomicAdd(&out[1], 1ull);
  }
}

/* For the rows [0, done) that are numbered: each row's number (a known
 * key's from its value, a new key's from the table's size and its first
 * row's rank among the new keys), the value it adds to its key's word by
 * the SUM claim (one count, plus the number at a new key's first row, so
 * that the word ends as number | count << 32), and the outputs. */
__global__ void number_values_kernel(const uint8_t *found, const uint64_t *val, const uint64_t *first,
                                     const uint64_t *flag, const uint64_t *rank, uint64_t size, uint64_t *add,
                                     uint32_t *gid, uint32_t *first_new, uint64_t base, size_t done) {
  TDM_GRID_STRIDE(i, done) {
    uint64_t num = found[i] ? (uint64_t)(uint32_t)val[i] : size + rank[~first[i]];
    add[i] = TDM__HASH_NUMBER_ONE + (flag[i] ? num : 0);
    if (gid) gid[i] = (uint32_t)num;
    if (flag[i] && first_new) first_new[rank[i]] = (uint32_t)(base + i);
  }
}

template <typename K>
static void launch_number_stop(cudaStream_t s, const void *keys, const uint64_t *flag, const uint64_t *rank, size_t n,
                               uint64_t max_new, unsigned long long *out) {
  number_stop_kernel<K><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>((const K *)keys, flag, rank, n, max_new, out);
}

/* The batch in order, by table operations and scans only: a find of every
 * key in the table; a scratch table of the batch's first rows
 * (tdm__hg_first_rows) gives each key its first row; the new keys' first rows, flagged and summed, give their
 * numbers (the table's size plus their rank); one wait brings the stop (the
 * row of the new key max_new), the new keys and the new marker keys to the
 * host; then one SUM claim of the rows before the stop adds each row's count
 * (and at a new key's first row its number) to its key's word. The claim's
 * outcome counts are dropped: the wait already told how many keys are new.
 * The table holds only numbered keys (no pending insert, no tombstone: a
 * numbering table is filled by this call alone), so its size is exact. */
static tdm_status hg_number(tdm_hash *h, const void *keys, size_t n, size_t max_new, uint32_t *gid_out,
                            uint32_t *first_out, uint64_t base, size_t *done, unsigned grow_log2) {
  static const char fn[] = "the hash table's insert-or-number";
  tdm_ctx *ctx = h->ctx;
  cudaStream_t s = tdm__stream(ctx);
  tdm__gpu_scope sc(ctx);
  tdm__dev_array dk, dg;
  const tdm_type kbits = h->ks == 4 ? TDM_U32 : TDM_U64;
  size_t final_cap = grow_log2 ? (size_t)1 << grow_log2 : h->cap, temp_bytes = 0, stop, fresh, off, old_size;
  uint64_t *val, *first, *flag, *rank, *add;
  uint32_t *first_new = NULL;
  uint8_t *found;
  unsigned long long *out, ho[3];
  void *temp;
  tdm_hash batch, sum = *h;
  tdm__hash_gpu batch_be;
  tdm__hg_scratch x;
  tdm_status st;
  *done = 0;
  if (n == 0) return TDM_OK;
  if (h->pending || h->tombs)
    return tdm__fail(TDM_ERR_UNSUPPORTED, "%s: the table holds keys that were not numbered", fn);
  sum.dup = TDM__DUP_SUM;
  if ((st = sc.enter()) != TDM_OK) return st;
  memset(&dg, 0, sizeof dg);
  TDM_CUDA_TRY(cub::DeviceScan::ExclusiveSum(NULL, temp_bytes, (const uint64_t *)NULL, (uint64_t *)NULL, n + 1, s),
               (void)0);
  /* Everything that can run out of memory, before the table changes. */
  if ((st = sc.in(keys, n * h->ks, &dk)) != TDM_OK || (gid_out && (st = sc.out(gid_out, n * 4, &dg)) != TDM_OK) ||
      (st = sc.alloc(n, &found)) != TDM_OK || (st = sc.alloc(n * 8, &val)) != TDM_OK ||
      (st = sc.alloc(n * 8, &first)) != TDM_OK ||
      (st = sc.alloc((n + 1) * 8, &flag)) != TDM_OK || (st = sc.alloc((n + 1) * 8, &rank)) != TDM_OK ||
      (st = sc.alloc(n * 8, &add)) != TDM_OK || (st = sc.alloc(sizeof ho, &out)) != TDM_OK ||
      (st = sc.alloc(temp_bytes, &temp)) != TDM_OK ||
      (first_out && (st = sc.alloc(n * 4, &first_new)) != TDM_OK) ||
      (st = tdm__hg(h)->policy->scratch(&sum, sc, n, final_cap, &x)) != TDM_OK)
    return st;
  if ((st = tdm__hg_first_rows(ctx, sc, kbits, TDM_U64, dk.d, n, 0, &batch, &batch_be, fn)) != TDM_OK) return st;
  if (grow_log2 && (st = rehash(h, grow_log2)) != TDM_OK) return st;
  sum = *h; /* the grown table's size; the claim's policy stays SUM */
  sum.dup = TDM__DUP_SUM;
  tdm__hg(h)->policy->find(h, dk.d, val, found, n);
  batch_be.policy->find(&batch, dk.d, first, NULL, n);
  if ((st = tdm__launch_check(fn)) != TDM_OK) return st;
  number_flags_kernel<<<tdm__grid(n + 1), TDM_GPU_BLOCK, 0, s>>>(found, first, flag, n, out);
  if ((st = tdm__launch_check(fn)) != TDM_OK) return st;
  TDM_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, (const uint64_t *)flag, rank, n + 1, s), (void)0);
  if (h->ks == 4) launch_number_stop<uint32_t>(s, dk.d, flag, rank, n, max_new, out);
  else launch_number_stop<uint64_t>(s, dk.d, flag, rank, n, max_new, out);
  if ((st = tdm__launch_check(fn)) != TDM_OK) return st;
  if ((st = tdm__gpu_read(ctx, ho, out, sizeof ho, fn)) != TDM_OK) return st;
  stop = (size_t)ho[0];
  fresh = (size_t)(ho[2] < max_new ? ho[2] : max_new);
  if (stop) {
    number_values_kernel<<<tdm__grid(stop), TDM_GPU_BLOCK, 0, s>>>(found, val, first, flag, rank, h->size, add,
                                                                   (uint32_t *)dg.d, first_new, base, stop);
    if ((st = tdm__launch_check(fn)) != TDM_OK) return st;
    for (off = 0; off < stop; off += x.chunk) {
      size_t m = stop - off < x.chunk ? stop - off : x.chunk;
      tdm__hg(h)->policy->insert(&sum, (const char *)dk.d + off * h->ks, add + off, m, &x, off / x.chunk,
                                 tdm__hg(h)->counts);
      if ((st = tdm__launch_check(fn)) != TDM_OK) return st;
    }
  }
  /* Committed from here: the claims are queued, so the table's counters
   * say so now, and the claims' own outcome counts go. */
  old_size = h->size;
  h->size += fresh;
  h->side += (size_t)ho[1];
  *done = stop;
  if ((st = tdm__gpu_memset_committed(ctx, tdm__hg(h)->counts, 0, NCOUNT * sizeof(unsigned long long), fn)) !=
      TDM_OK)
    return st;
  if (first_out && fresh) {
    cudaMemcpyKind kind = tdm__is_device_ptr(first_out) ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost;
    if ((st = tdm__gpu_copy_committed(ctx, first_out + old_size, first_new, fresh * 4, kind, fn)) != TDM_OK) return st;
    if (kind == cudaMemcpyDeviceToHost) sc.wait_at_end();
  }
  dg.bytes = stop * 4; /* the rows numbered; the rest of gid_out is left alone */
  if (gid_out && (st = tdm__gpu_out_finish(ctx, &dg)) != TDM_OK) return st;
  return tdm__gpu_sync(ctx, fn);
}

static tdm_status hg_find(const tdm_hash *h, const void *keys, void *values_out, uint8_t *found_out, size_t n) {
  tdm_ctx *ctx = h->ctx;
  tdm__gpu_scope sc(ctx);
  tdm__dev_array dk, dv, df;
  tdm_status st;
  if ((st = sc.enter()) != TDM_OK) return st;
  memset(&dv, 0, sizeof dv);
  memset(&df, 0, sizeof df);
  if ((st = sc.in(keys, n * h->ks, &dk)) != TDM_OK ||
      (values_out && (st = sc.out(values_out, n * h->vs, &dv)) != TDM_OK) ||
      (found_out && (st = sc.out(found_out, n, &df)) != TDM_OK))
    return st;
  tdm__hg(h)->policy->find(h, dk.d, dv.d, (uint8_t *)df.d, n);
  if ((st = tdm__launch_check("tdm_hash_find")) != TDM_OK) return st;
  if ((values_out && (st = tdm__gpu_out_finish(ctx, &dv)) != TDM_OK) ||
      (found_out && (st = tdm__gpu_out_finish(ctx, &df)) != TDM_OK))
    return st;
  return sc.finish("tdm_hash_find");
}

static tdm_status hg_erase(tdm_hash *h, const void *keys, size_t n, size_t *erased) {
  tdm_ctx *ctx = h->ctx;
  tdm__gpu_scope sc(ctx);
  tdm__dev_array dk;
  unsigned long long *cnt = NULL, hc[NCOUNT];
  tdm_status st;
  if ((st = sc.enter()) != TDM_OK) return st;
  if ((st = sc.in(keys, n * h->ks, &dk)) != TDM_OK ||
      (st = sc.alloc(NCOUNT * sizeof(unsigned long long), &cnt)) != TDM_OK)
    return st;
  TDM_CUDA_TRY(cudaMemsetAsync(cnt, 0, NCOUNT * sizeof(unsigned long long), tdm__stream(ctx)), (void)0);
  tdm__hg(h)->policy->erase(h, dk.d, n, cnt);
  if ((st = tdm__launch_check("tdm_hash_erase")) != TDM_OK) return st;
  /* The erase kernel is queued: reading its counts is committed. */
  if ((st = tdm__gpu_copy_committed(ctx, hc, cnt, sizeof hc, cudaMemcpyDeviceToHost, "tdm_hash_erase")) != TDM_OK)
    return st;
  if ((st = tdm__gpu_sync(ctx, "tdm_hash_erase")) != TDM_OK) return st;
  *erased = (size_t)(hc[4 + TDM_HASH_GONE_TOMB] + hc[4 + TDM_HASH_GONE_EMPTY] + hc[4 + TDM_HASH_GONE_SIDE]);
  h->size -= *erased;
  h->side -= (size_t)hc[4 + TDM_HASH_GONE_SIDE];
  h->tombs += (size_t)hc[4 + TDM_HASH_GONE_TOMB];
  return TDM_OK;
}

template <typename K, typename V>
static void launch_export_count(const tdm_hash *h, unsigned long long *tile_cnt, size_t tiles) {
  unsigned g = tdm__grid_resident(h->ctx, tiles * TDM_GPU_BLOCK);
  export_count_kernel<K, V><<<g, TDM_GPU_BLOCK, 0, tdm__stream(h->ctx)>>>(
      (const typename hs<K, V>::S *)tdm__hg(h)->slots, h->cap, tile_cnt, tiles);
}

template <typename K, typename V>
static void launch_export_write(const tdm_hash *h, const unsigned long long *tile_off, size_t tiles, void *ko,
                                void *vo) {
  unsigned g = tdm__grid_resident(h->ctx, tiles * TDM_GPU_BLOCK);
  export_write_kernel<K, V><<<g, TDM_GPU_BLOCK, 0, tdm__stream(h->ctx)>>>(
      (const typename hs<K, V>::S *)tdm__hg(h)->slots, h->cap, tile_off, tiles, (K *)ko, (V *)vo);
}

template <typename K, typename V>
static void launch_export_any(const tdm_hash *h, unsigned long long *cursor, void *ko, void *vo) {
  size_t tiles = (h->cap + EXPORT_TILE - 1) / EXPORT_TILE;
  unsigned g = tdm__grid_resident(h->ctx, tiles * TDM_GPU_BLOCK);
  export_any_kernel<K, V><<<g, TDM_GPU_BLOCK, 0, tdm__stream(h->ctx)>>>(
      (const typename hs<K, V>::S *)tdm__hg(h)->slots, h->cap, tiles, cursor, (K *)ko, (V *)vo);
}

template <typename K, typename V>
static void launch_export_list(const tdm_hash *h, unsigned long long *cursor, void *ko, void *vo) {
  const tdm__hash_gpu *be = tdm__hg(h);
  export_list_kernel<K, V><<<tdm__grid_resident(h->ctx, be->list_warps * 32u), TDM_GPU_BLOCK, 0,
                             tdm__stream(h->ctx)>>>((const typename hs<K, V>::S *)be->slots, h->cap, be->list,
                                                    be->list_n, be->list_warps, be->list_per_warp, cursor, (K *)ko,
                                                    (V *)vo);
}

static tdm_status hg_export(const tdm_hash *h, void *keys_out, void *values_out) {
  tdm_ctx *ctx = h->ctx;
  tdm__gpu_scope sc(ctx);
  tdm__dev_array dk, dv;
  size_t tiles = (h->cap + EXPORT_TILE - 1) / EXPORT_TILE, temp_bytes = 0;
  unsigned long long *cnt = NULL, *off = NULL;
  void *temp = NULL;
  tdm_status st;
  if ((st = sc.enter()) != TDM_OK) return st;
  TDM_CUDA_TRY(cub::DeviceScan::ExclusiveSum(NULL, temp_bytes, cnt, off, tiles, tdm__stream(ctx)), (void)0);
  if ((st = sc.out(keys_out, h->size * h->ks, &dk)) != TDM_OK ||
      (st = sc.out(values_out, h->size * h->vs, &dv)) != TDM_OK ||
      (st = sc.alloc(tiles * sizeof(unsigned long long), &cnt)) != TDM_OK ||
      (st = sc.alloc(tiles * sizeof(unsigned long long), &off)) != TDM_OK || (st = sc.alloc(temp_bytes, &temp)) != TDM_OK)
    return st;
  tdm__hg(h)->common->export_count(h, cnt, tiles);
  if ((st = tdm__launch_check("tdm_hash_export (count)")) != TDM_OK) return st;
  TDM_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, cnt, off, tiles, tdm__stream(ctx)), (void)0);
  tdm__hg(h)->common->export_write(h, off, tiles, dk.d, dv.d);
  if ((st = tdm__launch_check("tdm_hash_export (write)")) != TDM_OK) return st;
  if ((st = tdm__gpu_out_finish(ctx, &dk)) != TDM_OK || (st = tdm__gpu_out_finish(ctx, &dv)) != TDM_OK) return st;
  return tdm__gpu_sync(ctx, "tdm_hash_export");
}

static tdm_status hg_clear(tdm_hash *h) {
  tdm_ctx *ctx = h->ctx;
  tdm__gpu_device dev;
  tdm_status st;
  if ((st = dev.enter(ctx)) != TDM_OK) return st;
  TDM_CUDA_TRY(cudaMemsetAsync(tdm__hg(h)->slots, 0, tdm__hash_table_bytes(h, h->log2cap), tdm__stream(ctx)), (void)0);
  if ((st = tdm__gpu_sync(ctx, "tdm_hash_clear")) != TDM_OK) return st;
  h->size = 0;
  h->side = 0;
  h->tombs = 0;
  return TDM_OK;
}

/* Validates a host copy with the backend-neutral checker (src/hash_check.c). */
static tdm_status hg_validate(const tdm_hash *h) {
  tdm_ctx *ctx = h->ctx;
  size_t bytes = tdm__hash_table_bytes(h, h->log2cap);
  void *copy;
  tdm__gpu_device dev;
  tdm_status st;
  if ((st = dev.enter(ctx)) != TDM_OK) return st;
  copy = tdm__ctx_alloc(ctx, bytes);
  if (!copy)
    return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "tdm_hash_validate: out of host memory for a %zu-byte table copy", bytes);
  TDM_CUDA_TRY(cudaMemcpyAsync(copy, tdm__hg(h)->slots, bytes, cudaMemcpyDeviceToHost, tdm__stream(ctx)),
               tdm__ctx_free(ctx, copy, bytes));
  if ((st = tdm__gpu_sync(ctx, "tdm_hash_validate")) == TDM_OK) st = tdm__hash_check_slots(h, copy);
  tdm__ctx_free(ctx, copy, bytes);
  return st;
}

static tdm_status hg_view(const tdm_hash *h, tdm_hash_view *out) {
  out->slots = tdm__hg(h)->slots;
  out->device = h->ctx->gpu->device;
  return TDM_OK;
}

const tdm__hash_ops tdm__hash_cuda_ops = {
    .state_bytes = sizeof(tdm__hash_gpu),
    .create = hg_create,
    .destroy = hg_destroy,
    .insert = hg_insert,
    .find = hg_find,
    .erase = hg_erase,
    .export_all = hg_export,
    .clear = hg_clear,
    .validate = hg_validate,
    .view = hg_view,
    .sync_counts = hg_sync_counts,
    .number = hg_number,
};
