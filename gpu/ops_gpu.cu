/*
 * ops_gpu.cu: the CUDA backend's building blocks (backend.h) of the data
 * operations, which are written once in the core (src/ops_*.c), as thin
 * kernels over the per-element logic the CPU runs (ops_keys.h).
 *
 * Sorting: the canonical keys as order-preserving bits (ops_keys.h) radix
 * sorted by CUB with their rows (32-bit below 2^32 rows; CUB's radix sort
 * is stable, so each run of equal keys lists its rows ascending) or with
 * their values (sort_pairs); a head flag per sorted position and its
 * exclusive sum number the runs (runs). tdm_group_reduce's folds of runs
 * (fold_runs, reduce_t) leave no long group to one thread: order-free
 * aggregations are CUB's reduce-by-key, float SUM and MEAN a thread per
 * short group and a block per long one.
 * Hashing: the hash table's kernels on scratch tables: the insert-or-number
 * (number: a table of first rows in first-seen order, a table counting the
 * keys, or folding their values by an order-free aggregation, otherwise),
 * a call's set, the join's table of runs.
 * tdm_unique's keys alone: sorted and reduced by key (sort_keys,
 * runs_keys). The dense table: counted with atomicAdd, first rows by
 * atomicMin, numbered by an exclusive sum of flags (values in use, or rows
 * that are their value's first). A bit table's bits are set with atomicOr,
 * and the join's rows are written by output position (join_fill_kernel: a
 * span of rows per warp, one search per span), so a hot key is spread over
 * the grid.
 *
 * Caller arrays may be host or device memory (staged through the call's
 * tdm__gpu_scope). Output sizes come to the host, so unique, group_reduce
 * and join wait for the device once, in stream-ordered mode too (for the
 * size; their outputs are then queued). All scratch and all output buffers
 * are taken before anything of the caller's is written.
 */
#include <cub/device/device_reduce.cuh>
#include <new>
#include <cub/device/device_scan.cuh>
#include <string.h>
#include <thrust/iterator/counting_iterator.h>

#include "gpu_common.cuh"
#include "hash_gpu.cuh"
#include "sort_gpu.cuh"
#include "tandem/detail/ops_keys.h"

/* ---- per-width helpers (ops_keys.h) ------------------------------------- */

__host__ __device__ static inline uint32_t canon_bits(uint32_t raw, int kind, int numeric) {
  return tdm__ops_canon_bits32(raw, kind, numeric);
}
__host__ __device__ static inline uint64_t canon_bits(uint64_t raw, int kind, int numeric) {
  return tdm__ops_canon_bits64(raw, kind, numeric);
}
__host__ __device__ static inline uint64_t join_right(const uint64_t *o, const uint64_t *ms, const uint64_t *mc,
                                                     const uint32_t *ridx, uint64_t i, uint64_t r) {
  return tdm__ops_join_right32(o, ms, mc, ridx, i, r);
}
__host__ __device__ static inline uint64_t join_right(const uint64_t *o, const uint64_t *ms, const uint64_t *mc,
                                                     const uint64_t *ridx, uint64_t i, uint64_t r) {
  return tdm__ops_join_right64(o, ms, mc, ridx, i, r);
}
__host__ __device__ static inline size_t bound(const uint32_t *s, size_t m, uint32_t b, int upper) {
  return tdm__ops_bound32(s, m, b, upper);
}
__host__ __device__ static inline size_t bound(const uint64_t *s, size_t m, uint64_t b, int upper) {
  return tdm__ops_bound64(s, m, b, upper);
}

__host__ __device__ static inline void fold(const uint32_t *v, const uint64_t *mem, size_t s, size_t e, int agg,
                                            int vk, int kind, void *out, size_t p) {
  tdm__ops_fold32(v, mem, s, e, agg, vk, kind, out, p);
}
__host__ __device__ static inline void fold(const uint64_t *v, const uint64_t *mem, size_t s, size_t e, int agg,
                                            int vk, int kind, void *out, size_t p) {
  tdm__ops_fold64(v, mem, s, e, agg, vk, kind, out, p);
}
__host__ __device__ static inline uint32_t step(uint32_t a, uint32_t b, int agg, int vk, int kind) {
  return tdm__ops_step32(a, b, agg, vk, kind);
}
__host__ __device__ static inline uint64_t step(uint64_t a, uint64_t b, int agg, int vk, int kind) {
  return tdm__ops_step64(a, b, agg, vk, kind);
}
__host__ __device__ static inline double to_f64(uint32_t v, int vk) { return tdm__ops_to_f64_32(v, vk); }
__host__ __device__ static inline double to_f64(uint64_t v, int vk) { return tdm__ops_to_f64_64(v, vk); }
__host__ __device__ static inline void fold_on(uint32_t *acc, double *m, const uint32_t *c, size_t len, int agg,
                                               int vk, int kind) {
  tdm__ops_fold_on32(acc, m, c, len, agg, vk, kind);
}
__host__ __device__ static inline void fold_on(uint64_t *acc, double *m, const uint64_t *c, size_t len, int agg,
                                               int vk, int kind) {
  tdm__ops_fold_on64(acc, m, c, len, agg, vk, kind);
}
__host__ __device__ static inline void fold_put(uint32_t acc, double m, size_t count, int agg, int vk, void *out,
                                                size_t p) {
  tdm__ops_fold_put32(acc, m, count, agg, vk, out, p);
}
__host__ __device__ static inline void fold_put(uint64_t acc, double m, size_t count, int agg, int vk, void *out,
                                                size_t p) {
  tdm__ops_fold_put64(acc, m, count, agg, vk, out, p);
}

/* Groups longer than this many rows are not folded by a thread of their
 * own (see reduce_t); it is also the chunk fold_long_kernel stages
 * in shared memory (2 x 2048 words: 32 KiB for 8-byte values). */
#define TDM__OPS_LONG 2048u

/* The type of a width's sort bits: what the scratch tables of the bits
 * are keyed by. */
template <typename K>
static constexpr tdm_type bits_type_of() {
  return sizeof(K) == 4 ? TDM_U32 : TDM_U64;
}

/* ---- kernels ------------------------------------------------------------ */

template <typename K>
__global__ void canon_bits_kernel(const K *in, K *out, size_t n, int kind, int numeric) {
  TDM_GRID_STRIDE(i, n) out[i] = canon_bits(in[i], kind, numeric);
}

/* flag[k] = 1 where a run of equal sorted bits starts, for k < n; flag[n] = 0
 * (so the exclusive sum's last entry is the number of runs). */
template <typename K>
__global__ void heads_kernel(const K *s, uint64_t *flag, size_t n) {
  TDM_GRID_STRIDE(k, n + 1) flag[k] = k < n && (k == 0 || s[k] != s[k - 1]);
}

/* off[r] = start of run r, off[G] = n (rid: exclusive sum of the flags). */
__global__ void run_starts_kernel(const uint64_t *flag, const uint64_t *rid, uint64_t *off, size_t n) {
  TDM_GRID_STRIDE(k, n + 1) {
    if (k == n) off[rid[n]] = n;
    else if (flag[k]) off[rid[k]] = k;
  }
}

/* The runs of fold_runs, as the kernels read them: the members (row
 * indices in sorted order, 32-bit while the input has fewer than 2^32
 * rows; NULL: the sorted positions themselves, the values sorted along),
 * the runs' starts, each sorted position's run plus one (rid[k + 1]), and
 * in another order than the runs' the run at each output position (ord,
 * 32 or 64-bit) and each run's output position (rank). */
struct grp_view {
  const void *mem, *ord;
  int mem32, ord32;
  const uint64_t *off, *rid, *rank;
};

__device__ static inline uint64_t grp_mem(const grp_view &g, size_t k) {
  if (!g.mem) return k;
  return g.mem32 ? (uint64_t)((const uint32_t *)g.mem)[k] : ((const uint64_t *)g.mem)[k];
}

__device__ static inline size_t grp_at(const grp_view &g, size_t p) {
  if (!g.ord) return p;
  return g.ord32 ? (size_t)((const uint32_t *)g.ord)[p] : (size_t)((const uint64_t *)g.ord)[p];
}

/* gv[k] = v[mem[k]]: the values in member order, each group's contiguous
 * and in input order (the members are ascending), read at random once by
 * the whole grid and written coalesced, so that no thread gathers a long
 * group by itself. */
template <typename V>
__global__ void gather_kernel(grp_view g, const V *v, V *gv, size_t n) {
  TDM_GRID_STRIDE(k, n) gv[k] = v[grp_mem(g, k)];
}

/* One thread per output group: its value from
 *  - by_run[r] when given (the order-free aggregations, reduced by run);
 *  - else the fold of v over positions [s, e) of the gathered values, or
 *    for FIRST and LAST (not gathered) O(1) values in place (the
 *    members are ascending, so a group's first and last rows are its first
 *    and last members), float SUM and MEAN fold the group's values in
 *    input order, bit for bit the CPU's left fold, here for groups of at
 *    most long_from rows; longer ones are fold_long_kernel's. */
template <typename V>
__global__ void reduce_kernel(grp_view g, const V *v, int gathered, const V *by_run, int agg, int vk, int kind,
                              size_t long_from, void *values_out, size_t G) {
  TDM_GRID_STRIDE(p, G) {
    size_t r = grp_at(g, p), s = g.off[r], e = g.off[r + 1], f;
    if (by_run) {
      ((V *)values_out)[p] = by_run[r];
    } else if (!gathered) { /* FIRST, LAST: the first or last member's value */
      f = grp_mem(g, agg == TDM_AGG_LAST ? e - 1 : s);
      fold(v, NULL, f, f + 1, agg, vk, kind, values_out, p);
    } else if (e - s <= long_from) {
      fold(v, NULL, s, e, agg, vk, kind, values_out, p);
    }
  }
}

/* The reduce-by-key operator of the order-free aggregations
 * (tdm__ops_order_free), so CUB may combine in any grouping and order. */
template <typename V>
struct order_free_op {
  int agg, vk, kind;
  __device__ __forceinline__ V operator()(const V &a, const V &b) const { return step(a, b, agg, vk, kind); }
};

/* Float SUM and MEAN of the groups longer than TDM__OPS_LONG rows, one
 * block per group: their bits are a left fold in input order, a chain of
 * dependent adds no split can shorten, so thread 0 makes it, from shared
 * memory, while warps 1.. stage the group's next chunk of gathered values
 * there (coalesced loads, double buffered); thread 0 is left with one add
 * per value and on-chip reads. Block b takes the group holding sorted
 * position b * TDM__OPS_LONG if that is the group's first multiple of
 * TDM__OPS_LONG: every long group holds exactly one such first multiple. */
template <typename V>
__global__ void __launch_bounds__(TDM_GPU_BLOCK)
    fold_long_kernel(grp_view g, const V *gv, int agg, int vk, int kind, void *values_out, size_t n) {
  __shared__ V chunk[2][TDM__OPS_LONG];
  size_t nb = (n + TDM__OPS_LONG - 1) / TDM__OPS_LONG, t = threadIdx.x;
  for (size_t b = blockIdx.x; b < nb; b += gridDim.x) {
    size_t q = b * TDM__OPS_LONG, r = g.rid[q + 1] - 1, s = g.off[r], e = g.off[r + 1], c, i;
    V acc = 0;
    double m = 0;
    /* The same for every thread of the block, so the block stays whole. */
    if (e - s <= TDM__OPS_LONG || q - s >= TDM__OPS_LONG) continue;
    for (i = t; i < TDM__OPS_LONG; i += blockDim.x) chunk[0][i] = gv[s + i];
    __syncthreads();
    for (c = s; c < e; c += TDM__OPS_LONG) {
      size_t cur = (c - s) / TDM__OPS_LONG & 1, next = c + TDM__OPS_LONG;
      if (t >= 32) {
        for (i = t - 32; i < TDM__OPS_LONG && next + i < e; i += blockDim.x - 32) chunk[cur ^ 1][i] = gv[next + i];
      } else if (t == 0) {
        size_t len = e - c < TDM__OPS_LONG ? e - c : TDM__OPS_LONG, from = 0;
        if (c == s) {
          acc = chunk[cur][0];
          m = to_f64(acc, vk);
          from = 1;
        }
        fold_on(&acc, &m, chunk[cur] + from, len - from, agg, vk, kind);
      }
      __syncthreads();
    }
    if (t == 0) fold_put(acc, m, e - s, agg, vk, values_out, g.rank ? (size_t)g.rank[r] : r);
  }
}

template <typename K>
__global__ void search_kernel(const K *queries, const K *sorted_set, size_t m, int kind, int numeric, uint8_t *found,
                              size_t n) {
  TDM_GRID_STRIDE(i, n) {
    K q = canon_bits(queries[i], kind, numeric);
    size_t lo = bound(sorted_set, m, q, 0);
    found[i] = (uint8_t)(lo < m && sorted_set[lo] == q);
  }
}

/* Per left row: the first of its matches in the sorted right bits (ms), how
 * many (mc), and its output rows (rows[n_left] = 0 for the sum's total). */
template <typename K>
__global__ void join_match_kernel(const K *left, const K *sorted_right, size_t nr, int kind, int numeric, int jkind,
                                  uint64_t *ms, uint64_t *mc, uint64_t *rows, size_t nl) {
  TDM_GRID_STRIDE(i, nl + 1) {
    if (i == nl) {
      rows[nl] = 0;
    } else {
      K q = canon_bits(left[i], kind, numeric);
      size_t lo = bound(sorted_right, nr, q, 0), hi = bound(sorted_right, nr, q, 1);
      ms[i] = lo;
      mc[i] = hi - lo;
      rows[i] = tdm__ops_join_rows(jkind, hi - lo);
    }
  }
}

/* What each sorted right row adds to its key's entry of the hash method's
 * SUM table of runs (ops_keys.h, tdm__ops_join_run_add). */
template <typename K>
__global__ void join_adds_kernel(const K *s, uint64_t *add, size_t n) {
  TDM_GRID_STRIDE(k, n) add[k] = tdm__ops_join_run_add(k == 0 || s[k] != s[k - 1], k);
}

/* join_match_kernel's outputs from the table's answers: ms[i] holds, on
 * entry, left row i's entry of the table of runs (0: no match, a find's
 * miss); rows NULL: starts and lengths only. A run of several right rows
 * sets the block's word, and the block's sets *multi once. */
__global__ void join_runs_kernel(int jkind, uint64_t *ms, uint64_t *mc, uint64_t *rows, size_t nl,
                                 unsigned long long *multi) {
  __shared__ unsigned block_multi;
  if (threadIdx.x == 0) block_multi = 0;
  __syncthreads();
  TDM_GRID_STRIDE(i, nl) {
    uint64_t w = ms[i], c = tdm__ops_join_run_count(w);
    ms[i] = tdm__ops_join_run_start(w);
    mc[i] = c;
    if (rows) rows[i] = tdm__ops_join_rows(jkind, c);
    if (multi && c > 1) atomicOr(&block_multi, 1u);
  }
  __syncthreads();
  if (threadIdx.x == 0 && block_multi) atomicOr(multi, (unsigned long long)TDM__OPS_JOIN_MULTI);
}

/* Output rows [0, total) of a join by output position (ops_keys.h): each
 * row's left row from tdm__csr_warp_fill over o, the rows' bytes
 * tdm__ops_join_fill's, which the CPU writes; a hot left row's reads of
 * ridx and every store are coalesced, and a left row matching millions of
 * right rows is spread over the whole grid like any other rows. */
template <typename I>
__global__ void __launch_bounds__(TDM_GPU_BLOCK)
    join_fill_kernel(const uint64_t *ms, const uint64_t *mc, const uint64_t *o, const I *ridx, int jkind,
                     uint64_t *left_out, uint64_t *right_out, uint64_t nl, uint64_t total) {
  const int pairs = tdm__ops_join_pairs(jkind, right_out);
  tdm__csr_warp_fill(o, nl, total, [&](uint64_t r, uint64_t own) {
    left_out[r] = own;
    if (pairs) right_out[r] = join_right(o, ms, mc, ridx, own, r);
  });
}

/* ---- dense integer ranges ----------------------------------------------- */

/* The dense method (src/ops_api.c's rule) on integer keys with
 * key - lo <= span (unsigned, in the key's width): the same tables as the
 * CPU's (cpu/ops_cpu.c), filled with atomics. */

/* The min and max of the order-preserving bits (the sign flipped for
 * signed keys) into mm[0] / mm[1]: each block reduces its threads' in
 * shared memory, then one thread adds an atomicMin and an atomicMax (none
 * for a block without keys, where min > max). */
template <typename K>
__global__ void __launch_bounds__(TDM_GPU_BLOCK) minmax_kernel(const K *keys, size_t n, K flip, unsigned long long *mm) {
  __shared__ K smin[TDM_GPU_BLOCK];
  __shared__ K smax[TDM_GPU_BLOCK];
  K a = (K)~(K)0, b = 0;
  unsigned t = threadIdx.x;
  TDM_GRID_STRIDE(i, n) {
    K x = keys[i] ^ flip;
    a = x < a ? x : a;
    b = x > b ? x : b;
  }
  smin[t] = a;
  smax[t] = b;
  __syncthreads();
  for (unsigned w = TDM_GPU_BLOCK / 2; w > 0; w >>= 1) {
    if (t < w) {
      smin[t] = smin[t + w] < smin[t] ? smin[t + w] : smin[t];
      smax[t] = smax[t + w] > smax[t] ? smax[t + w] : smax[t];
    }
    __syncthreads();
  }
  if (t == 0 && smin[0] <= smax[0]) {
    atomicMin(&mm[0], (unsigned long long)smin[0]);
    atomicMax(&mm[1], (unsigned long long)smax[0]);
  }
}

/* A bit per value of the set's range, in 64-bit words (backend.h's bit
 * table, the CPU's layout). */
template <typename K>
__global__ void bits_set_kernel(const K *set, size_t m, K lo, unsigned long long *bits) {
  TDM_GRID_STRIDE(j, m) {
    K s = (K)(set[j] - lo);
    atomicOr(&bits[s >> 6], 1ull << (s & 63));
  }
}

template <typename K>
__global__ void bits_test_kernel(const K *q, size_t n, K lo, K span, const unsigned long long *bits, uint8_t *found) {
  TDM_GRID_STRIDE(i, n) {
    K s = (K)(q[i] - lo);
    found[i] = (uint8_t)(s <= span && (bits[s >> 6] >> (s & 63) & 1u));
  }
}

/* Rows per slot, and (first non-NULL) each slot's first row. */
template <typename K>
__global__ void dense_count_kernel(const K *keys, size_t n, K lo, unsigned long long *cnt, unsigned long long *first) {
  TDM_GRID_STRIDE(i, n) {
    K s = (K)(keys[i] - lo);
    atomicAdd(&cnt[s], 1ull);
    if (first) atomicMin(&first[s], (unsigned long long)i);
  }
}

/* Flags whose exclusive sum numbers the groups (flag[len] = 0, so the
 * sum's last entry is their number): ascending order flags each slot in
 * use, so the numbers follow the keys; first-seen order flags each row that
 * is its slot's first, so the numbers follow the rows. */
template <typename K>
__global__ void dense_flag_kernel(const K *keys, K lo, const unsigned long long *cnt, const unsigned long long *first,
                                  int by_row, uint64_t *flag, size_t len) {
  TDM_GRID_STRIDE(x, len + 1) {
    if (x == len) flag[x] = 0;
    else if (by_row) flag[x] = first[(K)(keys[x] - lo)] == x;
    else flag[x] = cnt[x] != 0;
  }
}

/* One thread per slot in use: its number (from the sum of the flags), and
 * its key (lo + slot: every row of the slot has those bits), first row and
 * count at that output position. */
template <typename K>
__global__ void dense_unique_kernel(const unsigned long long *cnt, const unsigned long long *first,
                                    const uint64_t *sum, int by_row, K lo, uint64_t *num, K *unique_out,
                                    uint64_t *first_out, uint64_t *counts_out, size_t S) {
  TDM_GRID_STRIDE(s, S) {
    if (!cnt[s]) continue;
    uint64_t p = by_row ? sum[first[s]] : sum[s];
    if (num) num[s] = p;
    if (unique_out) unique_out[p] = (K)(lo + (K)s);
    if (first_out) first_out[p] = first[s];
    if (counts_out) counts_out[p] = cnt[s];
  }
}

template <typename K>
__global__ void dense_inverse_kernel(const K *keys, size_t n, K lo, const uint64_t *num, uint64_t *inverse_out) {
  TDM_GRID_STRIDE(i, n) inverse_out[i] = num[(K)(keys[i] - lo)];
}

/* ---- steps -------------------------------------------------------------- */

/* Sorts d_k (n words of width ks; with d_v, u64 values along) in place,
 * ascending and stable, with the CUB radix sort of sort_gpu.cuh; the
 * second buffers and CUB's storage live for this step only. */
static tdm_status sort_in_place(tdm_ctx *ctx, void *d_k, uint64_t *d_v, size_t n, size_t ks) {
  tdm__gpu_scope sc(ctx);
  tdm__sort_bufs b;
  size_t vs = d_v ? 8 : 0, temp_bytes = 0;
  int kcur = 0, vcur = 0;
  tdm_status st;
  cudaStream_t s = tdm__stream(ctx);
  if (n < 2) return TDM_OK;
  memset(&b, 0, sizeof b);
  b.k[0] = d_k;
  b.v[0] = d_v;
  if ((st = sc.alloc(n * ks, &b.k[1])) != TDM_OK || (st = sc.alloc(n * vs, &b.v[1])) != TDM_OK ||
      (st = tdm__gpu_cub_temp_bytes(ctx, &b, n, TDM_KIND_UNSIGNED, ks, vs, 0, &temp_bytes)) != TDM_OK ||
      (st = sc.alloc(temp_bytes, &b.temp)) != TDM_OK ||
      (st = tdm__gpu_cub_sort_with(ctx, &b, temp_bytes, n, TDM_KIND_UNSIGNED, ks, vs, 0, &kcur, &vcur)) != TDM_OK)
    return st;
  if (kcur) TDM_CUDA_TRY(cudaMemcpyAsync(b.k[0], b.k[1], n * ks, cudaMemcpyDeviceToDevice, s), (void)0);
  if (vs && vcur) TDM_CUDA_TRY(cudaMemcpyAsync(b.v[0], b.v[1], n * vs, cudaMemcpyDeviceToDevice, s), (void)0);
  return TDM_OK;
}

/* d_out[i] = sum of d_in[0 .. i) for i < n. */
static tdm_status exclusive_sum(tdm_ctx *ctx, const uint64_t *d_in, uint64_t *d_out, size_t n) {
  tdm__gpu_scope sc(ctx);
  size_t temp_bytes = 0;
  void *temp = NULL;
  tdm_status st;
  cudaStream_t s = tdm__stream(ctx);
  TDM_CUDA_TRY(cub::DeviceScan::ExclusiveSum(NULL, temp_bytes, d_in, d_out, n, s), (void)0);
  if ((st = sc.alloc(temp_bytes, &temp)) != TDM_OK) return st;
  TDM_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, d_in, d_out, n, s), (void)0);
  return TDM_OK;
}

/* Every call here waits for the device, which a stream being captured into
 * a CUDA graph cannot do: refused before anything is queued. */
static tdm_status enter_waiting(tdm__gpu_scope &sc, tdm_ctx *ctx, const char *fn) {
  tdm_status st = sc.enter();
  if (st != TDM_OK) return st;
  if (tdm__gpu_capturing(ctx))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT,
                     "%s: the context's stream is being captured into a CUDA graph, and this call waits for the "
                     "device (its results come to the host)",
                     fn);
  return TDM_OK;
}

/* The n keys' canonical bits (ops_keys.h) sorted ascending, stable, with
 * their row indices (I: uint32_t or uint64_t), into bits / idx: the first
 * step of every sorted data operation. Unsigned keys compared by bits are
 * their own bits, so CUB reads them in place; the others are mapped first. */
template <typename K, typename I>
static tdm_status sort_bits_indexed(tdm_ctx *ctx, tdm__gpu_scope &sc, const char *fn, const K *d_keys, size_t n,
                                    int kind, int numeric, K *bits, I *idx) {
  cudaStream_t s = tdm__stream(ctx);
  const K *in = d_keys;
  K *canon;
  I *iota;
  tdm_status st;
  if (!n) return TDM_OK;
  if ((st = sc.alloc(n * sizeof(I), &iota)) != TDM_OK) return st;
  if (kind != TDM_KIND_UNSIGNED || numeric) {
    if ((st = sc.alloc(n * sizeof(K), &canon)) != TDM_OK) return st;
    canon_bits_kernel<K><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>(d_keys, canon, n, kind, numeric);
    in = canon;
  }
  tdm__iota_kernel<I><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>(iota, n);
  if ((st = tdm__launch_check(fn)) != TDM_OK) return st;
  return tdm__gpu_sort_from(ctx, sc, in, iota, bits, idx, n, TDM_KIND_UNSIGNED, sizeof(K), sizeof(I), 0);
}

/* The runs of the n sorted bits: a head flag per position (flag, n + 1
 * words), their exclusive sum (rid: each position's run plus one after
 * it; its last entry, the number of runs, is the one value to the host),
 * and the runs' starts *off (G + 1 words, from sc). */
template <typename K>
static tdm_status run_starts(tdm_ctx *ctx, tdm__gpu_scope &sc, const char *fn, const K *bits, size_t n,
                             uint64_t *flag, uint64_t *rid, uint64_t **off, size_t *G) {
  cudaStream_t s = tdm__stream(ctx);
  uint64_t g64 = 0;
  tdm_status st;
  heads_kernel<K><<<tdm__grid(n + 1), TDM_GPU_BLOCK, 0, s>>>(bits, flag, n);
  if ((st = tdm__launch_check(fn)) != TDM_OK || (st = exclusive_sum(ctx, flag, rid, n + 1)) != TDM_OK ||
      (st = tdm__gpu_read(ctx, &g64, rid + n, 8, fn)) != TDM_OK)
    return st;
  *G = (size_t)g64;
  if ((st = sc.alloc((*G + 1) * 8, off)) != TDM_OK) return st;
  run_starts_kernel<<<tdm__grid(n + 1), TDM_GPU_BLOCK, 0, s>>>(flag, rid, *off, n);
  return tdm__launch_check(fn);
}

/* ---- the operations ----------------------------------------------------- */

/* CUB's reduce-by-key of the gathered values gv by run (keys: rid[k + 1],
 * run r's number plus one at each of its positions) into by_run; with temp
 * NULL only sizes temp_bytes, so the sizing and the call always name the
 * same instantiation. */
template <typename V>
static cudaError_t reduce_by_run(void *temp, size_t &temp_bytes, const grp_view &g, const V *gv, uint64_t *runs_out,
                                 V *by_run, uint64_t *d_runs, order_free_op<V> op, size_t n, cudaStream_t s) {
  return cub::DeviceReduce::ReduceByKey(temp, temp_bytes, g.rid + 1, runs_out, gv, by_run, d_runs, op, (int64_t)n, s);
}

/* The values of tdm_group_reduce's runs, by what each aggregation needs so
 * that no thread walks a long group alone:
 *  - FIRST, LAST: O(1) per group, read in place (reduce_kernel).
 *  - the rest read the values in member order: gathered (gather_kernel),
 *    or as they are when they were sorted along the keys; then
 *  - order-free ones (integer SUM, MIN, MAX: tdm__ops_order_free) are a
 *    reduce-by-key over the sorted positions' run numbers, which CUB splits
 *    over the whole grid however long a run is, so a hot key is as fast as
 *    any other;
 *  - float SUM and MEAN, whose bits are the left fold in input order, fold
 *    contiguous memory: a thread per group of at most TDM__OPS_LONG rows,
 *    a block per longer group (fold_long_kernel). That fold is serial: a
 *    group of c rows costs c dependent adds, the limit ops.h states. */
template <typename V>
static tdm_status reduce_t(tdm_ctx *ctx, tdm__gpu_scope &sc, const char *fn, int agg, tdm_type value_type,
                           const grp_view &g, const V *v, void *values_out, size_t n, size_t G) {
  cudaStream_t s = tdm__stream(ctx);
  int vk = tdm__ops_value_kind(value_type), kind = tdm__key_kind(value_type);
  int gathered = n && agg != TDM_AGG_FIRST && agg != TDM_AGG_LAST;
  int order_free = gathered && tdm__ops_order_free(agg, vk);
  const V *gv = v;
  V *gbuf = NULL, *by_run = NULL;
  uint64_t *runs_out = NULL, *d_runs = NULL;
  void *temp = NULL;
  size_t temp_bytes = 0, long_from = (size_t)-1;
  order_free_op<V> op = {agg, vk, kind};
  tdm_status st;
  if (gathered) {
    if (g.mem && (st = sc.alloc(n * sizeof(V), &gbuf)) != TDM_OK) return st;
    if (order_free &&
        ((st = sc.alloc(G * 8, &runs_out)) != TDM_OK || (st = sc.alloc(G * sizeof(V), &by_run)) != TDM_OK ||
         (st = sc.alloc(8, &d_runs)) != TDM_OK))
      return st;
    if (order_free)
      TDM_CUDA_TRY(reduce_by_run<V>(NULL, temp_bytes, g, gv, runs_out, by_run, d_runs, op, n, s), (void)0);
    if (order_free && (st = sc.alloc(temp_bytes, &temp)) != TDM_OK) return st;
    if (g.mem) {
      gather_kernel<V><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>(g, v, gbuf, n);
      if ((st = tdm__launch_check(fn)) != TDM_OK) return st;
      gv = gbuf;
    }
    if (order_free) TDM_CUDA_TRY(reduce_by_run<V>(temp, temp_bytes, g, gv, runs_out, by_run, d_runs, op, n, s), (void)0);
    else long_from = TDM__OPS_LONG;
    v = gv;
  }
  reduce_kernel<V><<<tdm__grid(G), TDM_GPU_BLOCK, 0, s>>>(g, v, gathered, by_run, agg, vk, kind, long_from,
                                                          values_out, G);
  if (long_from < n) {
    size_t nb = (n + TDM__OPS_LONG - 1) / TDM__OPS_LONG, cap = 65535u * 16u;
    fold_long_kernel<V><<<(unsigned)(nb < cap ? nb : cap), TDM_GPU_BLOCK, 0, s>>>(g, gv, agg, vk, kind, values_out,
                                                                                  n);
  }
  return tdm__launch_check(fn);
}

/* code[i] = the position p of row i's bits (rows, n of them) among the G
 * distinct keys' bits pb, every row's key being one of them: a scratch table
 * of pb whose values are the positions (a SUM of one value per key, made by
 * the claim: TDM__HG_ROWS_INDEX), and one probe per row. */
template <typename K>
static tdm_status codes_by_table(tdm_ctx *ctx, tdm__gpu_scope &sc, const char *fn, const K *pb, size_t G,
                                 const K *rows, size_t n, uint64_t *code) {
  tdm_hash h;
  tdm__hash_gpu be;
  tdm_status st;
  if ((st = tdm__hg_scratch_table(ctx, sc, bits_type_of<K>(), TDM_U64, TDM__DUP_SUM, pb, NULL, TDM__HG_ROWS_INDEX, G,
                                  0, &h, &be, fn)) != TDM_OK)
    return st;
  be.policy->find(&h, rows, code, NULL, n);
  return tdm__launch_check(fn);
}

/* Group p (first-seen order) of the first-seen numbering: its first row f
 * (first holds the complements of the first rows, sorted) and its word. */
template <typename K, typename I>
__global__ void first_seen_put_kernel(const K *words, const I *first, uint64_t *first_out, K *pbits, size_t G) {
  TDM_GRID_STRIDE(p, G) {
    size_t f = (size_t)(I)~first[G - 1 - p]; /* complements, ascending: the first rows, descending */
    first_out[p] = f;
    pbits[p] = words[f];
  }
}

/* counts[code[i]] += 1 for the n rows; a warp's rows of one code add once. */
__global__ void count_codes_kernel(const uint64_t *code, uint64_t *counts, size_t n) {
  const warp_turns<1> t;
  for (size_t b = t.first; b < n; b += t.stride) {
    const size_t i = t.item(b);
    const uint64_t c = i < n ? code[i] : ~(uint64_t)0;
    const unsigned peers = __match_any_sync(0xffffffffu, c);
    if (i < n && !(peers & lanes_below()))
      atomicAdd((unsigned long long *)&counts[c], (unsigned long long)__popc(peers));
  }
}

/* The groups of the n rows' bits kb in first-seen order: a scratch table
 * of each key's first row (tdm__hg_first_rows), its live pairs exported
 * (the one wait, for *G) and their values alone sorted: *first holds the
 * complements of the G first rows ascending, so group p's first row is
 * ~first[G - 1 - p] (first_seen_put_kernel). */
template <typename K, typename I>
static tdm_status first_seen_groups(tdm_ctx *ctx, tdm__gpu_scope &sc, const char *fn, const K *kb, size_t n,
                                    const I **first, size_t *G) {
  tdm_hash h;
  tdm__hash_gpu be;
  void *ek, *ev;
  tdm_status st;
  if ((st = tdm__hg_first_rows(ctx, sc, bits_type_of<K>(), bits_type_of<I>(), kb, n, 1, &h, &be, fn)) != TDM_OK ||
      (st = tdm__hg_scratch_export(ctx, sc, &h, &ek, &ev, G, fn)) != TDM_OK ||
      (st = sort_in_place(ctx, ev, NULL, *G, sizeof(I))) != TDM_OK)
    return st;
  *first = (const I *)ev;
  return TDM_OK;
}

/* The min/max pass of the dense method's rule (backend.h). */
template <typename K>
static tdm_status minmax_t(tdm_ctx *ctx, tdm_type key_type, const void *keys, size_t n, uint64_t *min_bits,
                           uint64_t *max_bits) {
  static const char fn[] = "the data operation's min/max pass";
  tdm__gpu_scope sc(ctx);
  tdm__dev_array k;
  cudaStream_t s = tdm__stream(ctx);
  K flip = key_type == TDM_I32 || key_type == TDM_I64 ? (K)((K)1 << (sizeof(K) * 8 - 1)) : (K)0;
  unsigned long long *mm, h[2];
  tdm_status st;
  if ((st = enter_waiting(sc, ctx, fn)) != TDM_OK || (st = sc.in(keys, n * sizeof(K), &k)) != TDM_OK ||
      (st = sc.alloc(16, &mm)) != TDM_OK)
    return st;
  TDM_CUDA_TRY(cudaMemsetAsync(mm, 0xff, 8, s), (void)0);
  TDM_CUDA_TRY(cudaMemsetAsync(mm + 1, 0, 8, s), (void)0);
  minmax_kernel<K><<<tdm__grid_resident(ctx, n), TDM_GPU_BLOCK, 0, s>>>((const K *)k.d, n, flip, mm);
  if ((st = tdm__launch_check(fn)) != TDM_OK) return st;
  if ((st = tdm__gpu_read(ctx, h, mm, 16, fn)) != TDM_OK) return st;
  *min_bits = (uint64_t)((K)h[0] ^ flip);
  *max_bits = (uint64_t)((K)h[1] ^ flip);
  return TDM_OK;
}

/* counts[r] = the length of run r, from the runs' first positions st
 * (G runs of n sorted keys). */
__global__ void run_lengths_kernel(const uint64_t *st, uint64_t *counts, size_t G, size_t n) {
  TDM_GRID_STRIDE(r, G) counts[r] = (r + 1 < G ? st[r + 1] : n) - st[r];
}

/* The smallest position of a run (order-free, so CUB may apply it in any
 * order): its first position in the sorted keys. */
struct first_pos_op {
  __host__ __device__ __forceinline__ uint64_t operator()(uint64_t a, uint64_t b) const { return a < b ? a : b; }
};

/* stop_span is not used: the kernel reads every key (no block can know
 * another's range without a round trip). */
static tdm_status ops_minmax(tdm_ctx *ctx, tdm_type key_type, const void *keys, size_t n, uint64_t stop_span,
                             uint64_t *min_bits, uint64_t *max_bits) {
  (void)stop_span;
  return tdm_type_size(key_type) == 4 ? minmax_t<uint32_t>(ctx, key_type, keys, n, min_bits, max_bits)
                                      : minmax_t<uint64_t>(ctx, key_type, keys, n, min_bits, max_bits);
}

/* ---- building blocks (backend.h) of the operations written once --------- */

/* A call's memory on the device: the call's tdm__gpu_scope (caller arrays
 * staged through it, scratch freed with it) and the call's set, a scratch
 * table. Constructed in the tdm__call by begin, destroyed by end. */
struct gpu_call {
  enum { MAX_ARR = 12 };
  tdm__gpu_scope sc;
  tdm__dev_array arr[MAX_ARR];
  int is_out[MAX_ARR];
  int narr;
  tdm_hash set;
  tdm__hash_gpu set_be;
  /* The call's numbering (number): the words numbered, each group's word,
   * and each row's group when number made them (code). */
  struct {
    const void *words, *bits;
    uint64_t *code;
    size_t n, G, ks;
    int have;
  } nb;
  /* The call's last runs (runs): their starts, each sorted position's run
   * plus one (rid[k + 1], for fold_runs' reduce-by-key), the rows. */
  struct {
    const uint64_t *off, *rid;
    size_t n;
  } runs;
  /* The call's dense table (dense_build): rows and first row per value,
   * the flags' exclusive sum that numbers the values, their numbers. */
  struct {
    const void *keys;
    size_t n, S, ks;
    uint64_t lo;
    int first_seen, have;
    unsigned long long *cnt, *first;
    uint64_t *sum, *num;
  } dense;
  explicit gpu_call(tdm_ctx *ctx) : sc(ctx), narr(0) {
    memset(&nb, 0, sizeof nb);
    memset(&runs, 0, sizeof runs);
    memset(&dense, 0, sizeof dense);
  }
};
static_assert(sizeof(gpu_call) <= sizeof(((tdm__call *)0)->be), "gpu_call does not fit tdm__call");
static_assert(alignof(gpu_call) <= alignof(uint64_t), "gpu_call needs more alignment than tdm__call gives");

static gpu_call *gpu_call_of(tdm__call *c) { return (gpu_call *)(void *)c->be; }

static tdm_status call_begin(tdm__call *c) {
  gpu_call *k = new (c->be) gpu_call(c->ctx);
  tdm_status st = enter_waiting(k->sc, c->ctx, c->fn);
  if (st != TDM_OK) k->~gpu_call();
  return st;
}

static tdm_status call_end(tdm__call *c, tdm_status st) {
  gpu_call *k = gpu_call_of(c);
  for (int i = 0; st == TDM_OK && i < k->narr; i++)
    if (k->is_out[i]) st = tdm__gpu_out_finish(c->ctx, &k->arr[i]);
  if (st == TDM_OK) st = k->sc.finish(c->fn);
  k->~gpu_call();
  return st;
}

static tdm_status call_array(tdm__call *c, const void *user, size_t bytes, int out, void **d) {
  gpu_call *k = gpu_call_of(c);
  tdm__dev_array *a;
  tdm_status st;
  *d = NULL;
  if (k->narr == gpu_call::MAX_ARR)
    return tdm__fail(TDM_ERR_DEVICE, "%s: internal: more than %d caller arrays in one call", c->fn,
                     (int)gpu_call::MAX_ARR);
  a = &k->arr[k->narr];
  k->is_out[k->narr++] = out;
  st = out ? k->sc.out((void *)user, bytes, a) : k->sc.in(user, bytes, a);
  if (st == TDM_OK) *d = a->d;
  return st;
}

static tdm_status call_in(tdm__call *c, const void *user, size_t bytes, const void **d) {
  void *p;
  tdm_status st = call_array(c, user, bytes, 0, &p);
  *d = p;
  return st;
}

static tdm_status call_out(tdm__call *c, void *user, size_t bytes, void **d) {
  return call_array(c, user, bytes, 1, d);
}

static tdm_status call_scratch(tdm__call *c, size_t bytes, void **d) { return gpu_call_of(c)->sc.alloc(bytes, d); }

/* A staged output goes back only as long as written. */
static tdm_status call_out_trim(tdm__call *c, void *d, size_t bytes) {
  gpu_call *k = gpu_call_of(c);
  for (int i = 0; i < k->narr; i++)
    if (k->is_out[i] && k->arr[i].d == d && bytes < k->arr[i].bytes) k->arr[i].bytes = bytes;
  return TDM_OK;
}

static tdm_status blk_fill(tdm__call *c, void *d, int byte, size_t bytes) {
  TDM_CUDA_TRY(cudaMemsetAsync(d, byte, bytes, tdm__stream(c->ctx)), (void)0);
  return TDM_OK;
}

template <typename K>
static tdm_status canon_bits_t(tdm__call *c, int kind, const void *src, void *dst, size_t n, int numeric) {
  canon_bits_kernel<K><<<tdm__grid(n), TDM_GPU_BLOCK, 0, tdm__stream(c->ctx)>>>((const K *)src, (K *)dst, n, kind,
                                                                                 numeric);
  return tdm__launch_check(c->fn);
}
static tdm_status blk_canon_bits(tdm__call *c, tdm_type key_type, const void *src, void *dst, size_t n, int numeric) {
  int kind = tdm__key_kind(key_type);
  if (n == 0) return TDM_OK;
  return tdm_type_size(key_type) == 4 ? canon_bits_t<uint32_t>(c, kind, src, dst, n, numeric)
                                      : canon_bits_t<uint64_t>(c, kind, src, dst, n, numeric);
}

static tdm_status blk_sort_words(tdm__call *c, size_t ks, void *d, size_t n) {
  return sort_in_place(c->ctx, d, NULL, n, ks);
}

template <typename K>
static tdm_status search_t(tdm__call *c, int kind, int numeric, const void *sorted, size_t m, const void *queries,
                           size_t n, uint8_t *found) {
  search_kernel<K><<<tdm__grid(n), TDM_GPU_BLOCK, 0, tdm__stream(c->ctx)>>>((const K *)queries, (const K *)sorted, m,
                                                                          kind, numeric, found, n);
  return tdm__launch_check(c->fn);
}
static tdm_status blk_search(tdm__call *c, tdm_type key_type, int numeric, const void *sorted, size_t m,
                             const void *queries, size_t n, uint8_t *found) {
  int kind = tdm__key_kind(key_type);
  return tdm_type_size(key_type) == 4 ? search_t<uint32_t>(c, kind, numeric, sorted, m, queries, n, found)
                                      : search_t<uint64_t>(c, kind, numeric, sorted, m, queries, n, found);
}

/* A scratch table of the words (tdm__hg_scratch_table, no host wait): a
 * set (the claims alone), or a SUM of the vals; probed by the table's own
 * find. */
static tdm_status blk_set_build(tdm__call *c, size_t ks, const void *keys, const uint64_t *vals, size_t m,
                                int *repeats) {
  gpu_call *k = gpu_call_of(c);
  tdm_type t = ks == 4 ? TDM_U32 : TDM_U64;
  /* A second set replaces the first: its table stays the call's scratch. */
  if (repeats) *repeats = -1; /* the claims' counts are the device's until a wait */
  return tdm__hg_scratch_table(c->ctx, k->sc, t, vals ? TDM_U64 : t, TDM__DUP_SUM, keys, vals, TDM__HG_ROWS_NONE, m,
                               0, &k->set, &k->set_be, c->fn);
}

/* The claim makes each key's value its row (TDM__HG_ROWS_INDEX); it
 * replaces an earlier set as set_build does. */
static tdm_status blk_set_build_rows(tdm__call *c, size_t ks, const void *keys, size_t m) {
  gpu_call *k = gpu_call_of(c);
  tdm_type t = ks == 4 ? TDM_U32 : TDM_U64;
  return tdm__hg_scratch_table(c->ctx, k->sc, t, TDM_U64, TDM__DUP_SUM, keys, NULL, TDM__HG_ROWS_INDEX, m, 0,
                               &k->set, &k->set_be, c->fn);
}

/* The claim makes each row's add from its position (TDM__HG_ROWS_RUN): no
 * array of adds written and read back. */
static tdm_status blk_set_build_runs(tdm__call *c, size_t ks, const void *keys, size_t m, uint64_t *add,
                                     int *repeats) {
  gpu_call *k = gpu_call_of(c);
  (void)add;
  if (repeats) *repeats = -1; /* as set_build */
  return tdm__hg_scratch_table(c->ctx, k->sc, ks == 4 ? TDM_U32 : TDM_U64, TDM_U64, TDM__DUP_SUM, keys, NULL,
                               TDM__HG_ROWS_RUN, m, 0, &k->set, &k->set_be, c->fn);
}

static tdm_status blk_set_probe(tdm__call *c, const void *queries, size_t n, uint64_t *values, uint8_t *found) {
  gpu_call *k = gpu_call_of(c);
  k->set_be.policy->find(&k->set, queries, values, found, n);
  return tdm__launch_check(c->fn);
}

template <typename K, typename I>
static tdm_status sort_indexed_t(tdm__call *c, int kind, int numeric, const void *src, size_t n, void *bits,
                                 void *idx) {
  return sort_bits_indexed<K, I>(c->ctx, gpu_call_of(c)->sc, c->fn, (const K *)src, n, kind, numeric, (K *)bits,
                                 (I *)idx);
}
static tdm_status blk_sort_indexed(tdm__call *c, tdm_type key_type, int numeric, const void *src, size_t n,
                                   void *bits, void *idx, size_t iw) {
  int kind = tdm__key_kind(key_type);
  if (tdm_type_size(key_type) == 4)
    return iw == 4 ? sort_indexed_t<uint32_t, uint32_t>(c, kind, numeric, src, n, bits, idx)
                   : sort_indexed_t<uint32_t, uint64_t>(c, kind, numeric, src, n, bits, idx);
  return iw == 4 ? sort_indexed_t<uint64_t, uint32_t>(c, kind, numeric, src, n, bits, idx)
                 : sort_indexed_t<uint64_t, uint64_t>(c, kind, numeric, src, n, bits, idx);
}

/* No sample without a wait: the words are the device's. */
static int blk_repeats_hint(tdm__call *, size_t, const void *, size_t) { return -1; }

static tdm_status blk_run_adds(tdm__call *c, size_t ks, const void *sorted, size_t n, uint64_t *add) {
  cudaStream_t s = tdm__stream(c->ctx);
  if (ks == 4) join_adds_kernel<uint32_t><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>((const uint32_t *)sorted, add, n);
  else join_adds_kernel<uint64_t><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>((const uint64_t *)sorted, add, n);
  return tdm__launch_check(c->fn);
}

static tdm_status blk_join_runs(tdm__call *c, int kind, uint64_t *ms, uint64_t *mc, uint64_t *rows, size_t nl,
                                uint64_t *multi) {
  if (nl == 0) return TDM_OK;
  join_runs_kernel<<<tdm__grid(nl), TDM_GPU_BLOCK, 0, tdm__stream(c->ctx)>>>(kind, ms, mc, rows, nl,
                                                                             (unsigned long long *)multi);
  return tdm__launch_check(c->fn);
}

template <typename K>
static tdm_status join_bounds_t(tdm__call *c, int jkind, int kind, int numeric, const void *left, size_t nl,
                                const void *rbits, size_t nr, uint64_t *ms, uint64_t *mc, uint64_t *rows) {
  join_match_kernel<K><<<tdm__grid(nl + 1), TDM_GPU_BLOCK, 0, tdm__stream(c->ctx)>>>(
      (const K *)left, (const K *)rbits, nr, kind, numeric, jkind, ms, mc, rows, nl);
  return tdm__launch_check(c->fn);
}
static tdm_status blk_join_bounds(tdm__call *c, int kind, tdm_type key_type, int numeric, const void *left, size_t nl,
                                  const void *rbits, size_t nr, uint64_t *ms, uint64_t *mc, uint64_t *rows) {
  int kd = tdm__key_kind(key_type);
  if (tdm_type_size(key_type) == 4)
    return join_bounds_t<uint32_t>(c, kind, kd, numeric, left, nl, rbits, nr, ms, mc, rows);
  return join_bounds_t<uint64_t>(c, kind, kd, numeric, left, nl, rbits, nr, ms, mc, rows);
}

/* CUB's exclusive sum, then its last word to the host (one wait). */
static tdm_status blk_scan_total(tdm__call *c, const uint64_t *in, uint64_t *off, size_t n, uint64_t *total) {
  tdm_status st = exclusive_sum(c->ctx, in, off, n);
  return st != TDM_OK ? st : tdm__gpu_read(c->ctx, total, off + n - 1, 8, c->fn);
}

template <typename I>
static void join_fill_t(tdm__call *c, int kind, const uint64_t *ms, const uint64_t *mc, const uint64_t *off,
                        const void *idx, size_t nl, uint64_t *left_out, uint64_t *right_out, uint64_t total) {
  join_fill_kernel<I><<<tdm__csr_grid(total), TDM_GPU_BLOCK, 0, tdm__stream(c->ctx)>>>(
      ms, mc, off, (const I *)idx, kind, left_out, right_out, nl, total);
}
static tdm_status blk_join_fill(tdm__call *c, int kind, const uint64_t *ms, const uint64_t *mc, const uint64_t *off,
                                const void *idx, size_t iw, size_t nl, uint64_t *left_out, uint64_t *right_out,
                                uint64_t total) {
  if (iw == 4) join_fill_t<uint32_t>(c, kind, ms, mc, off, idx, nl, left_out, right_out, total);
  else join_fill_t<uint64_t>(c, kind, ms, mc, off, idx, nl, left_out, right_out, total);
  return tdm__launch_check(c->fn);
}

static tdm_status blk_bits_set(tdm__call *c, size_t ks, const void *keys, size_t m, uint64_t lo, uint64_t *bits) {
  cudaStream_t s = tdm__stream(c->ctx);
  unsigned long long *b = (unsigned long long *)bits;
  if (ks == 4)
    bits_set_kernel<uint32_t><<<tdm__grid(m), TDM_GPU_BLOCK, 0, s>>>((const uint32_t *)keys, m, (uint32_t)lo, b);
  else bits_set_kernel<uint64_t><<<tdm__grid(m), TDM_GPU_BLOCK, 0, s>>>((const uint64_t *)keys, m, lo, b);
  return tdm__launch_check(c->fn);
}

static tdm_status blk_bits_test(tdm__call *c, size_t ks, const void *queries, size_t n, uint64_t lo, uint64_t span,
                                const uint64_t *bits, uint8_t *found) {
  cudaStream_t s = tdm__stream(c->ctx);
  const unsigned long long *b = (const unsigned long long *)bits;
  if (ks == 4)
    bits_test_kernel<uint32_t><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>((const uint32_t *)queries, n, (uint32_t)lo,
                                                                      (uint32_t)span, b, found);
  else
    bits_test_kernel<uint64_t><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>((const uint64_t *)queries, n, lo, span, b,
                                                                      found);
  return tdm__launch_check(c->fn);
}

/* ---- tdm_unique's blocks ---- */

/* The sort words are the keys' order-preserving bits (sort_gpu.cuh's map;
 * the identity for unsigned keys, so an unsigned device array is sorted
 * straight out of the caller's array, and a staged copy in place). */
template <typename U>
static tdm_status sort_keys_t(tdm__call *c, int kind, const void *src, size_t n, void **sorted) {
  gpu_call *k = gpu_call_of(c);
  cudaStream_t s = tdm__stream(c->ctx);
  int own = 0;
  tdm_status st;
  for (int i = 0; i < k->narr; i++) own |= !k->is_out[i] && k->arr[i].staged && k->arr[i].d == src;
  if (own) {
    *sorted = (void *)src; /* the call's own copy */
  } else {
    if ((st = k->sc.alloc(n * sizeof(U), sorted)) != TDM_OK) return st;
    if (kind == TDM_KIND_UNSIGNED)
      return tdm__gpu_sort_from(c->ctx, k->sc, src, NULL, *sorted, NULL, n, TDM_KIND_UNSIGNED, sizeof(U), 0, 0);
  }
  if (kind != TDM_KIND_UNSIGNED) tdm__gpu_map_bits(s, src, *sorted, n, sizeof(U), kind, 0, 1);
  if ((st = tdm__launch_check(c->fn)) != TDM_OK) return st;
  return sort_in_place(c->ctx, *sorted, NULL, n, sizeof(U));
}
static tdm_status blk_sort_keys(tdm__call *c, tdm_type key_type, const void *src, size_t n, void **sorted) {
  int kind = tdm__key_kind(key_type);
  return tdm_type_size(key_type) == 4 ? sort_keys_t<uint32_t>(c, kind, src, n, sorted)
                                      : sort_keys_t<uint64_t>(c, kind, src, n, sorted);
}

/* CUB's reduce-by-key over the sorted bits writes the distinct bits and
 * each run's first position; the distinct bits are mapped back to keys in
 * place, and the counts are the distances between the first positions. */
template <typename U>
static tdm_status runs_keys_t(tdm__call *c, int kind, const U *sorted, size_t n, U *keys_out, uint64_t *counts_out,
                              size_t *G) {
  gpu_call *k = gpu_call_of(c);
  cudaStream_t s = tdm__stream(c->ctx);
  const thrust::counting_iterator<uint64_t> at(0);
  size_t temp_bytes = 0;
  U *uk = keys_out;
  uint64_t *st, *d_runs, runs = 0;
  void *temp;
  tdm_status e;
  if (!uk && (e = k->sc.alloc(n * sizeof(U), &uk)) != TDM_OK) return e;
  TDM_CUDA_TRY(cub::DeviceReduce::ReduceByKey(NULL, temp_bytes, sorted, uk, at, (uint64_t *)NULL, (uint64_t *)NULL,
                                              first_pos_op(), (int64_t)n, s),
               (void)0);
  if ((e = k->sc.alloc(n * 8, &st)) != TDM_OK || (e = k->sc.alloc(8, &d_runs)) != TDM_OK ||
      (e = k->sc.alloc(temp_bytes ? temp_bytes : 1, &temp)) != TDM_OK)
    return e;
  TDM_CUDA_TRY(cub::DeviceReduce::ReduceByKey(temp, temp_bytes, sorted, uk, at, st, d_runs, first_pos_op(),
                                              (int64_t)n, s),
               (void)0);
  if ((e = tdm__gpu_read(c->ctx, &runs, d_runs, 8, c->fn)) != TDM_OK) return e;
  *G = (size_t)runs;
  if (keys_out && kind != TDM_KIND_UNSIGNED) tdm__gpu_map_bits(s, uk, uk, *G, sizeof(U), kind, 0, 0);
  if (counts_out) run_lengths_kernel<<<tdm__grid(*G), TDM_GPU_BLOCK, 0, s>>>(st, counts_out, *G, n);
  return tdm__launch_check(c->fn);
}
static tdm_status blk_runs_keys(tdm__call *c, tdm_type key_type, const void *sorted, size_t n, void *keys_out,
                                uint64_t *counts_out, size_t *G) {
  int kind = tdm__key_kind(key_type);
  return tdm_type_size(key_type) == 4
             ? runs_keys_t<uint32_t>(c, kind, (const uint32_t *)sorted, n, (uint32_t *)keys_out, counts_out, G)
             : runs_keys_t<uint64_t>(c, kind, (const uint64_t *)sorted, n, (uint64_t *)keys_out, counts_out, G);
}

/* first[r] = idx[off[r]]. */
template <typename I>
__global__ void runs_first_kernel(const uint64_t *off, const I *idx, uint64_t *first, size_t G) {
  TDM_GRID_STRIDE(r, G) first[r] = (uint64_t)idx[off[r]];
}

/* The runs' starts (run_starts), and their first rows when asked. */
template <typename K>
static tdm_status runs_t(tdm__call *c, const K *sorted, const void *idx, size_t iw, size_t n, int want_first,
                         tdm__groups *g) {
  gpu_call *k = gpu_call_of(c);
  cudaStream_t s = tdm__stream(c->ctx);
  uint64_t *flag, *rid, *off;
  tdm_status st;
  if ((st = k->sc.alloc((n + 1) * 8, &flag)) != TDM_OK || (st = k->sc.alloc((n + 1) * 8, &rid)) != TDM_OK ||
      (st = run_starts<K>(c->ctx, k->sc, c->fn, sorted, n, flag, rid, &off, &g->G)) != TDM_OK ||
      (want_first && (st = k->sc.alloc(g->G * 8, &g->first)) != TDM_OK))
    return st;
  if (want_first && iw == 4)
    runs_first_kernel<uint32_t><<<tdm__grid(g->G), TDM_GPU_BLOCK, 0, s>>>(off, (const uint32_t *)idx, g->first, g->G);
  else if (want_first)
    runs_first_kernel<uint64_t><<<tdm__grid(g->G), TDM_GPU_BLOCK, 0, s>>>(off, (const uint64_t *)idx, g->first, g->G);
  g->off = off;
  g->idx = idx;
  g->iw = iw;
  k->runs.off = off;
  k->runs.rid = rid;
  k->runs.n = n;
  return tdm__launch_check(c->fn);
}
static tdm_status blk_runs(tdm__call *c, size_t ks, const void *sorted, const void *idx, size_t iw, size_t n,
                           int want_first, tdm__groups *g) {
  memset(g, 0, sizeof *g);
  return ks == 4 ? runs_t<uint32_t>(c, (const uint32_t *)sorted, idx, iw, n, want_first, g)
                 : runs_t<uint64_t>(c, (const uint64_t *)sorted, idx, iw, n, want_first, g);
}

/* The scratch table's fold of an order-free aggregation (dup.h). */
static int fold_dup(int agg) {
  return agg == TDM_AGG_MIN ? TDM__DUP_MIN : agg == TDM_AGG_MAX ? TDM__DUP_MAX : TDM__DUP_SUM;
}

/* Numbered by first row (first_seen, or first rows wanted): a table of
 * each word's first row, its pairs exported (the one wait, for G) and the
 * first rows alone sorted (first_seen_groups); counts, when wanted, add up
 * each row's group, found by one probe of a second table of the groups'
 * words (codes_by_table); a fold is a second table keyed by the words that
 * folds each row's value into its word's slot by the aggregation
 * (order-free: integer SUM wraps, MIN / MAX pick), probed once per group.
 * Otherwise in the table's order: a table counts the words (a SUM of ones
 * its claims make) or folds their values, and its export is the groups. */
template <typename K, typename I>
static tdm_status number_t(tdm__call *c, const K *words, size_t n, int by_first, int want_count,
                           const tdm__fold *fold, tdm__groups *g) {
  gpu_call *k = gpu_call_of(c);
  cudaStream_t s = tdm__stream(c->ctx);
  const size_t vs = fold ? tdm_type_size(fold->value_type) : 8;
  tdm_hash h;
  tdm__hash_gpu be;
  void *ek, *ev;
  tdm_status st;
  if (fold) g->vw = vs;
  if (by_first) {
    const I *first;
    K *bits;
    if ((st = first_seen_groups<K, I>(c->ctx, k->sc, c->fn, words, n, &first, &g->G)) != TDM_OK ||
        (st = k->sc.alloc(g->G * 8, &g->first)) != TDM_OK || (st = k->sc.alloc(g->G * sizeof(K), &bits)) != TDM_OK)
      return st;
    first_seen_put_kernel<K, I><<<tdm__grid(g->G), TDM_GPU_BLOCK, 0, s>>>(words, first, g->first, bits, g->G);
    g->bits = bits;
    if ((st = tdm__launch_check(c->fn)) != TDM_OK) return st;
    if (fold) {
      void *vals;
      if ((st = k->sc.alloc(g->G * vs, &vals)) != TDM_OK ||
          (st = tdm__hg_scratch_table(c->ctx, k->sc, bits_type_of<K>(), fold->value_type, fold_dup(fold->agg), words,
                                      fold->values, TDM__HG_ROWS_NONE, n, 0, &h, &be, c->fn)) != TDM_OK)
        return st;
      be.policy->find(&h, bits, vals, NULL, g->G);
      g->vals = vals;
      if ((st = tdm__launch_check(c->fn)) != TDM_OK) return st;
    }
    if (want_count) {
      if ((st = k->sc.alloc(n * 8, &k->nb.code)) != TDM_OK || (st = k->sc.alloc(g->G * 8, &g->count)) != TDM_OK ||
          (st = codes_by_table<K>(c->ctx, k->sc, c->fn, bits, g->G, words, n, k->nb.code)) != TDM_OK)
        return st;
      TDM_CUDA_TRY(cudaMemsetAsync(g->count, 0, g->G * 8, s), (void)0);
      count_codes_kernel<<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>(k->nb.code, g->count, n);
      return tdm__launch_check(c->fn);
    }
    return TDM_OK;
  }
  if ((st = tdm__hg_scratch_table(c->ctx, k->sc, bits_type_of<K>(), fold ? fold->value_type : TDM_U64,
                                  fold ? fold_dup(fold->agg) : TDM__DUP_SUM, words, fold ? fold->values : NULL,
                                  want_count ? TDM__HG_ROWS_ONE : TDM__HG_ROWS_NONE, n, 1, &h, &be, c->fn)) != TDM_OK ||
      (st = tdm__hg_scratch_export(c->ctx, k->sc, &h, &ek, &ev, &g->G, c->fn)) != TDM_OK)
    return st;
  g->bits = ek;
  if (fold) g->vals = ev;
  else if (want_count) g->count = (uint64_t *)ev;
  return TDM_OK;
}
/* No limit of groups here: the rule never gives this backend one. A fold
 * comes without counts (the table's values are the fold's). */
static tdm_status blk_number(tdm__call *c, size_t ks, const void *words, size_t n, unsigned want, size_t max_groups,
                             const tdm__fold *fold, tdm__groups *g) {
  gpu_call *k = gpu_call_of(c);
  int by_first = (want & (TDM__NUMBER_FIRST_SEEN | TDM__NUMBER_FIRST)) != 0, wide = n > UINT32_MAX;
  int want_count = (want & TDM__NUMBER_COUNT) != 0;
  tdm_status st;
  (void)max_groups;
  memset(g, 0, sizeof *g);
  if (k->nb.have) return tdm__fail(TDM_ERR_DEVICE, "%s: internal: a second numbering in one call", c->fn);
  if (fold && (want_count || !tdm__ops_order_free(fold->agg, tdm__ops_value_kind(fold->value_type))))
    return tdm__fail(TDM_ERR_DEVICE, "%s: internal: the numbering's fold is order-free and without counts", c->fn);
  if (ks == 4)
    st = wide ? number_t<uint32_t, uint64_t>(c, (const uint32_t *)words, n, by_first, want_count, fold, g)
              : number_t<uint32_t, uint32_t>(c, (const uint32_t *)words, n, by_first, want_count, fold, g);
  else
    st = wide ? number_t<uint64_t, uint64_t>(c, (const uint64_t *)words, n, by_first, want_count, fold, g)
              : number_t<uint64_t, uint32_t>(c, (const uint64_t *)words, n, by_first, want_count, fold, g);
  if (st != TDM_OK) return st;
  k->nb.words = words;
  k->nb.bits = g->bits;
  k->nb.n = n;
  k->nb.G = g->G;
  k->nb.ks = ks;
  k->nb.have = 1;
  return TDM_OK;
}

__global__ void rank_codes_kernel(const uint64_t *rank, uint64_t *code, size_t n) {
  TDM_GRID_STRIDE(i, n) code[i] = rank[code[i]];
}

/* Each row's group: from number's codes, or one probe a row of a table of
 * the groups' words valued at their numbers; then through rank. */
static tdm_status blk_number_codes(tdm__call *c, const uint64_t *rank, uint64_t *code) {
  gpu_call *k = gpu_call_of(c);
  cudaStream_t s = tdm__stream(c->ctx);
  tdm_status st;
  if (!k->nb.have) return tdm__fail(TDM_ERR_DEVICE, "%s: internal: no numbering in this call", c->fn);
  if (k->nb.code)
    TDM_CUDA_TRY(cudaMemcpyAsync(code, k->nb.code, k->nb.n * 8, cudaMemcpyDeviceToDevice, s), (void)0);
  else if ((st = k->nb.ks == 4 ? codes_by_table<uint32_t>(c->ctx, k->sc, c->fn, (const uint32_t *)k->nb.bits, k->nb.G,
                                                          (const uint32_t *)k->nb.words, k->nb.n, code)
                               : codes_by_table<uint64_t>(c->ctx, k->sc, c->fn, (const uint64_t *)k->nb.bits, k->nb.G,
                                                          (const uint64_t *)k->nb.words, k->nb.n, code)) != TDM_OK)
    return st;
  if (rank) rank_codes_kernel<<<tdm__grid(k->nb.n), TDM_GPU_BLOCK, 0, s>>>(rank, code, k->nb.n);
  return tdm__launch_check(c->fn);
}

template <typename P>
__global__ void invert_kernel(const P *perm, uint64_t *inv, size_t n) {
  TDM_GRID_STRIDE(p, n) inv[perm[p]] = p;
}
static tdm_status blk_invert(tdm__call *c, const void *perm, size_t pw, size_t n, uint64_t *inv) {
  cudaStream_t s = tdm__stream(c->ctx);
  if (!n) return TDM_OK;
  if (pw == 4) invert_kernel<uint32_t><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>((const uint32_t *)perm, inv, n);
  else invert_kernel<uint64_t><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>((const uint64_t *)perm, inv, n);
  return tdm__launch_check(c->fn);
}

/* One thread per output position (backend.h's groups_put); I: the width
 * of the runs' rows (unused without runs). */
template <typename K, typename O, typename I>
__global__ void groups_put_kernel(const K *keys, tdm__groups g, const O *ord, K *keys_out, uint64_t *first_out,
                                  uint64_t *counts_out, void *values_out) {
  TDM_GRID_STRIDE(p, g.G) {
    size_t q = ord ? (size_t)ord[p] : p;
    uint64_t f = g.first ? g.first[q] : !g.off ? 0 : g.idx ? (uint64_t)((const I *)g.idx)[g.off[q]] : g.off[q];
    if (keys_out) keys_out[p] = g.first || g.off ? keys[f] : ((const K *)g.bits)[q];
    if (first_out) first_out[p] = f;
    if (counts_out) counts_out[p] = g.count ? g.count[q] : g.off[q + 1] - g.off[q];
    if (values_out && g.vw == 4) ((uint32_t *)values_out)[p] = ((const uint32_t *)g.vals)[q];
    else if (values_out) ((uint64_t *)values_out)[p] = ((const uint64_t *)g.vals)[q];
  }
}
template <typename K, typename O>
static void groups_put_o(cudaStream_t s, const K *keys, const tdm__groups *g, const O *ord, K *keys_out,
                         uint64_t *first_out, uint64_t *counts_out, void *values_out) {
  if (g->iw == 8)
    groups_put_kernel<K, O, uint64_t><<<tdm__grid(g->G), TDM_GPU_BLOCK, 0, s>>>(keys, *g, ord, keys_out, first_out,
                                                                               counts_out, values_out);
  else
    groups_put_kernel<K, O, uint32_t><<<tdm__grid(g->G), TDM_GPU_BLOCK, 0, s>>>(keys, *g, ord, keys_out, first_out,
                                                                               counts_out, values_out);
}
template <typename K>
static void groups_put_t(cudaStream_t s, const K *keys, const tdm__groups *g, const void *ord, size_t ow, K *keys_out,
                         uint64_t *first_out, uint64_t *counts_out, void *values_out) {
  if (ow == 8)
    groups_put_o<K, uint64_t>(s, keys, g, (const uint64_t *)ord, keys_out, first_out, counts_out, values_out);
  else groups_put_o<K, uint32_t>(s, keys, g, (const uint32_t *)ord, keys_out, first_out, counts_out, values_out);
}
static tdm_status blk_groups_put(tdm__call *c, size_t ks, const void *keys, const tdm__groups *g, const void *ord,
                                 size_t ow, void *keys_out, uint64_t *first_out, uint64_t *counts_out,
                                 void *values_out) {
  cudaStream_t s = tdm__stream(c->ctx);
  if (!g->G) return TDM_OK;
  if (ks == 4)
    groups_put_t<uint32_t>(s, (const uint32_t *)keys, g, ord, ow, (uint32_t *)keys_out, first_out, counts_out,
                           values_out);
  else
    groups_put_t<uint64_t>(s, (const uint64_t *)keys, g, ord, ow, (uint64_t *)keys_out, first_out, counts_out,
                           values_out);
  return tdm__launch_check(c->fn);
}

/* tdm_group_reduce's blocks. */

/* The keys mapped to their order-preserving bits (sort_keys' words; the
 * unsigned keys are their own) and sorted by CUB with their values along,
 * out of the read-only inputs. */
static tdm_status blk_sort_pairs(tdm__call *c, tdm_type key_type, const void *keys, const void *values, size_t vs,
                                 size_t n, void *words, void *vals) {
  gpu_call *k = gpu_call_of(c);
  size_t ks = tdm_type_size(key_type);
  int kind = tdm__key_kind(key_type);
  const void *in = keys;
  void *mapped;
  tdm_status st;
  if (kind != TDM_KIND_UNSIGNED) {
    if ((st = k->sc.alloc(n * ks, &mapped)) != TDM_OK) return st;
    tdm__gpu_map_bits(tdm__stream(c->ctx), keys, mapped, n, ks, kind, 0, 1);
    if ((st = tdm__launch_check(c->fn)) != TDM_OK) return st;
    in = mapped;
  }
  return tdm__gpu_sort_from(c->ctx, k->sc, in, values, words, vals, n, TDM_KIND_UNSIGNED, ks, vs, 0);
}

static tdm_status blk_words_keys(tdm__call *c, tdm_type key_type, void *d, size_t n) {
  int kind = tdm__key_kind(key_type);
  if (kind == TDM_KIND_UNSIGNED || !n) return TDM_OK;
  tdm__gpu_map_bits(tdm__stream(c->ctx), d, d, n, tdm_type_size(key_type), kind, 0, 0);
  return tdm__launch_check(c->fn);
}

/* reduce_t over the call's runs (the rid of runs); in another order than
 * the runs', a long float fold writes by each run's output position, the
 * inverse of ord. */
static tdm_status blk_fold_runs(tdm__call *c, const tdm__groups *g, const void *ord, size_t ow, const tdm__fold *f,
                                void *values_out) {
  gpu_call *k = gpu_call_of(c);
  size_t n = k->runs.n;
  int vk = tdm__ops_value_kind(f->value_type);
  int long_fold = f->agg != TDM_AGG_FIRST && f->agg != TDM_AGG_LAST && !tdm__ops_order_free(f->agg, vk);
  uint64_t *rank = NULL;
  grp_view v;
  tdm_status st;
  if (k->runs.off != g->off) return tdm__fail(TDM_ERR_DEVICE, "%s: internal: fold_runs of runs not the call's", c->fn);
  if (!g->G) return TDM_OK;
  if (ord && long_fold && n > TDM__OPS_LONG &&
      ((st = k->sc.alloc(g->G * 8, &rank)) != TDM_OK || (st = blk_invert(c, ord, ow, g->G, rank)) != TDM_OK))
    return st;
  memset(&v, 0, sizeof v);
  v.mem = g->idx;
  v.mem32 = g->iw == 4;
  v.off = g->off;
  v.rid = k->runs.rid;
  v.ord = ord;
  v.ord32 = ow == 4;
  v.rank = rank;
  if (tdm_type_size(f->value_type) == 4)
    return reduce_t<uint32_t>(c->ctx, k->sc, c->fn, f->agg, f->value_type, v, (const uint32_t *)f->values, values_out,
                              n, g->G);
  return reduce_t<uint64_t>(c->ctx, k->sc, c->fn, f->agg, f->value_type, v, (const uint64_t *)f->values, values_out,
                            n, g->G);
}

/* One thread per sorted position: its run by a search of the starts. */
template <typename I>
__global__ void groups_scatter_kernel(const uint64_t *off, size_t G, const I *idx, const uint64_t *rank,
                                      uint64_t *inverse_out, size_t n) {
  TDM_GRID_STRIDE(k, n) {
    uint64_t r = tdm__csr_owner(off, G, k);
    inverse_out[idx[k]] = rank ? rank[r] : r;
  }
}
static tdm_status blk_groups_scatter(tdm__call *c, const tdm__groups *g, const void *idx, size_t iw,
                                     const uint64_t *rank, size_t n, uint64_t *inverse_out) {
  cudaStream_t s = tdm__stream(c->ctx);
  if (iw == 4)
    groups_scatter_kernel<uint32_t><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>(g->off, g->G, (const uint32_t *)idx, rank,
                                                                          inverse_out, n);
  else
    groups_scatter_kernel<uint64_t><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>(g->off, g->G, (const uint64_t *)idx, rank,
                                                                          inverse_out, n);
  return tdm__launch_check(c->fn);
}

/* The CPU's dense tables on the device (dense_flag_kernel says how the
 * values are numbered): rows per value by atomicAdd, first rows by
 * atomicMin, the flags' exclusive sum (its last entry to the host). */
template <typename K>
static tdm_status dense_build_t(tdm__call *c, const K *keys, size_t n, K lo, size_t S, int first_seen, int want_first,
                                int want_inverse, size_t *G) {
  gpu_call *k = gpu_call_of(c);
  cudaStream_t s = tdm__stream(c->ctx);
  size_t len = first_seen ? n : S;
  uint64_t *flag, g64 = 0;
  tdm_status st;
  if ((st = k->sc.alloc(S * 8, &k->dense.cnt)) != TDM_OK ||
      ((first_seen || want_first) && (st = k->sc.alloc(S * 8, &k->dense.first)) != TDM_OK) ||
      (st = k->sc.alloc((len + 1) * 8, &flag)) != TDM_OK || (st = k->sc.alloc((len + 1) * 8, &k->dense.sum)) != TDM_OK ||
      (want_inverse && (st = k->sc.alloc(S * 8, &k->dense.num)) != TDM_OK))
    return st;
  TDM_CUDA_TRY(cudaMemsetAsync(k->dense.cnt, 0, S * 8, s), (void)0);
  if (k->dense.first) TDM_CUDA_TRY(cudaMemsetAsync(k->dense.first, 0xff, S * 8, s), (void)0);
  dense_count_kernel<K><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>(keys, n, lo, k->dense.cnt, k->dense.first);
  dense_flag_kernel<K><<<tdm__grid(len + 1), TDM_GPU_BLOCK, 0, s>>>(keys, lo, k->dense.cnt, k->dense.first,
                                                                   first_seen, flag, len);
  if ((st = tdm__launch_check(c->fn)) != TDM_OK || (st = exclusive_sum(c->ctx, flag, k->dense.sum, len + 1)) != TDM_OK ||
      (st = tdm__gpu_read(c->ctx, &g64, k->dense.sum + len, 8, c->fn)) != TDM_OK)
    return st;
  *G = (size_t)g64;
  return TDM_OK;
}
static tdm_status blk_dense_build(tdm__call *c, tdm_type key_type, const void *keys, size_t n, uint64_t lo,
                                  uint64_t span, int first_seen, int want_first, int want_inverse, size_t *G) {
  gpu_call *k = gpu_call_of(c);
  size_t S = (size_t)span + 1, ks = tdm_type_size(key_type);
  if (k->dense.have) return tdm__fail(TDM_ERR_DEVICE, "%s: internal: a second dense table in one call", c->fn);
  k->dense.have = 1;
  k->dense.keys = keys;
  k->dense.n = n;
  k->dense.S = S;
  k->dense.ks = ks;
  k->dense.lo = lo;
  k->dense.first_seen = first_seen;
  return ks == 4 ? dense_build_t<uint32_t>(c, (const uint32_t *)keys, n, (uint32_t)lo, S, first_seen, want_first,
                                           want_inverse, G)
                 : dense_build_t<uint64_t>(c, (const uint64_t *)keys, n, lo, S, first_seen, want_first, want_inverse,
                                           G);
}

template <typename K>
static void dense_put_t(gpu_call *k, cudaStream_t s, K *keys_out, uint64_t *first_out, uint64_t *counts_out,
                        uint64_t *inverse_out) {
  K lo = (K)k->dense.lo;
  dense_unique_kernel<K><<<tdm__grid(k->dense.S), TDM_GPU_BLOCK, 0, s>>>(k->dense.cnt, k->dense.first, k->dense.sum,
                                                                        k->dense.first_seen, lo, k->dense.num,
                                                                        keys_out, first_out, counts_out, k->dense.S);
  if (inverse_out && k->dense.num)
    dense_inverse_kernel<K><<<tdm__grid(k->dense.n), TDM_GPU_BLOCK, 0, s>>>((const K *)k->dense.keys, k->dense.n, lo,
                                                                           k->dense.num, inverse_out);
}
static tdm_status blk_dense_put(tdm__call *c, void *keys_out, uint64_t *first_out, uint64_t *counts_out,
                                uint64_t *inverse_out) {
  gpu_call *k = gpu_call_of(c);
  cudaStream_t s = tdm__stream(c->ctx);
  if (k->dense.ks == 4) dense_put_t<uint32_t>(k, s, (uint32_t *)keys_out, first_out, counts_out, inverse_out);
  else dense_put_t<uint64_t>(k, s, (uint64_t *)keys_out, first_out, counts_out, inverse_out);
  return tdm__launch_check(c->fn);
}

const tdm__ops_ops tdm__ops_cuda_ops = {
    .begin = call_begin,
    .end = call_end,
    .in = call_in,
    .out = call_out,
    .scratch = call_scratch,
    .out_trim = call_out_trim,
    .fill = blk_fill,
    .canon_bits = blk_canon_bits,
    .sort_words = blk_sort_words,
    .sort_indexed = blk_sort_indexed,
    .search = blk_search,
    .set_build = blk_set_build,
    .set_probe = blk_set_probe,
    .set_build_rows = blk_set_build_rows,
    .set_build_runs = blk_set_build_runs,
    .repeats_hint = blk_repeats_hint,
    .run_adds = blk_run_adds,
    .join_runs = blk_join_runs,
    .join_bounds = blk_join_bounds,
    .scan_total = blk_scan_total,
    .join_fill = blk_join_fill,
    .bits_set = blk_bits_set,
    .bits_test = blk_bits_test,
    .sort_keys = blk_sort_keys,
    .runs_keys = blk_runs_keys,
    .runs = blk_runs,
    .number = blk_number,
    .number_codes = blk_number_codes,
    .invert = blk_invert,
    .groups_put = blk_groups_put,
    .sort_pairs = blk_sort_pairs,
    .words_keys = blk_words_keys,
    .fold_runs = blk_fold_runs,
    .groups_scatter = blk_groups_scatter,
    .dense_build = blk_dense_build,
    .dense_put = blk_dense_put,
    .minmax = ops_minmax,
    /* The min/max pass is a host round trip here: only a forced DENSE
     * takes the method until a GPU's measurements say where it pays
     * (docs/design.md). */
    .dense_by_rule = 0,
    /* The hash (src/ops_api.c's join rule). */
    .join_method = TDM__OPS_HASH,
    .hash_groups = TDM__HASH_GROUPS_UNORDERED,
};
