/*
 * ops_gpu.cu: the CUDA backend's data operations (tandem/ops.h).
 *
 * Everything is sort based (the dense method aside, below), and builds the
 * same group description as the CPU's sort method (cpu/ops_cpu.c), except
 * unique of sorted distinct keys alone (unique_sorted_keys_t): the canonical keys as order-preserving
 * bits (ops_keys.h) are radix sorted with their indices as values
 * (sort_bits_indexed; 32-bit indices below 2^32 rows; CUB's radix sort is
 * stable, so each run of equal keys lists its indices ascending); a head flag per sorted position and its exclusive sum number
 * the runs; the runs' starts give each group's members at
 * mem[off[r] .. off[r + 1]), in ascending key order, or by first index
 * (a second sort of (first index, run) pairs) for TDM_ORDER_FIRST_SEEN.
 * Every output is read from that description by one thread per output
 * element, so the bytes equal the CPU's, except that tdm_group_reduce never
 * leaves a long group to one thread (reduce_t says how). The hash method is tdm_group_reduce's for COUNT and
 * integer SUM, MIN, MAX in ascending order (a scratch table folds the rows,
 * then the groups alone are sorted: group_hashed_t; in first-seen order a
 * table of first rows orders the groups: group_first_seen_t) and tdm_unique's, in
 * ascending order with an inverse (a table counts the keys, a second maps
 * the sorted distinct keys to the rows: unique_hashed_t) and in first-seen
 * order (a table keeps each key's first row: unique_first_seen_t); the
 * sort method's bytes are the contract's either way.
 * The dense method (integer keys of a small range, src/ops_api.c) is the
 * CPU's tables on the device: unique counts rows per slot with atomicAdd,
 * notes each slot's first row with atomicMin, and numbers the slots by an
 * exclusive sum of flags (slots in use, or rows that are their slot's
 * first).
 * tdm_isin and tdm_join are written once (src/ops_isin.c, src/ops_join.c)
 * over the building blocks at the end of this file: a set is a scratch
 * table of the hash table's kernels, a bit table's bits are set with
 * atomicOr, and the join's rows are written by output position
 * (join_fill_kernel: a span of rows per warp, one search per span), so a
 * hot key is spread over the grid, with the per-row logic the CPU runs
 * (ops_keys.h).
 *
 * Caller arrays may be host or device memory (staged through the call's
 * tdm__gpu_scope). Output sizes come to the host, so unique, group_reduce
 * and join wait for the device once, in stream-ordered mode too (for the
 * size; their outputs are then queued). All scratch and
 * all output buffers are taken before anything of the caller's is written.
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

/* The grouping, as the kernels read it. The members (row indices in
 * sorted order) are 32-bit while the input has fewer than 2^32 rows. */
struct grp_view {
  const void *mem;
  int mem32;
  const uint64_t *off, *rid, *ord, *rank; /* ord, rank: NULL in ascending order */
};

__device__ static inline uint64_t grp_mem(const grp_view &g, size_t k) {
  return g.mem32 ? (uint64_t)((const uint32_t *)g.mem)[k] : ((const uint64_t *)g.mem)[k];
}

/* First-seen order: (first index of run r, r) pairs to sort. */
__global__ void first_index_kernel(grp_view g, uint64_t *fr, uint64_t *runs, size_t G) {
  TDM_GRID_STRIDE(r, G) {
    fr[r] = grp_mem(g, g.off[r]);
    runs[r] = r;
  }
}

__global__ void rank_kernel(const uint64_t *ord, uint64_t *rank, size_t G) {
  TDM_GRID_STRIDE(g, G) rank[ord[g]] = g;
}

__device__ static inline size_t grp_at(grp_view g, size_t p) { return g.ord ? (size_t)g.ord[p] : p; }

template <typename K>
__global__ void unique_kernel(grp_view g, const K *keys, K *unique_out, uint64_t *first_out, uint64_t *counts_out,
                              size_t G) {
  TDM_GRID_STRIDE(p, G) {
    size_t r = grp_at(g, p), s = g.off[r], f = grp_mem(g, s);
    if (unique_out) unique_out[p] = keys[f];
    if (first_out) first_out[p] = f;
    if (counts_out) counts_out[p] = g.off[r + 1] - s;
  }
}

/* inverse[mem[k]] = output position of the run holding sorted position k. */
__global__ void inverse_kernel(grp_view g, uint64_t *inverse_out, size_t n) {
  TDM_GRID_STRIDE(k, n) {
    uint64_t r = g.rid[k + 1] - 1;
    inverse_out[grp_mem(g, k)] = g.rank ? g.rank[r] : r;
  }
}

/* gv[k] = v[mem[k]]: the values in member order, each group's contiguous
 * and in input order (the members are ascending), read at random once by
 * the whole grid and written coalesced, so that no thread gathers a long
 * group by itself. */
template <typename V>
__global__ void gather_kernel(grp_view g, const V *v, V *gv, size_t n) {
  TDM_GRID_STRIDE(k, n) gv[k] = v[grp_mem(g, k)];
}

/* One thread per output group: its key, and its value from
 *  - by_run[r] when given (the order-free aggregations, reduced by run);
 *  - else the fold of v over positions [s, e) of the gathered values, or
 *    for COUNT, FIRST and LAST (not gathered) O(1) values in place (the
 *    members are ascending, so a group's first and last rows are its first
 *    and last members), float SUM and MEAN fold the group's values in
 *    input order, bit for bit the CPU's left fold, here for groups of at
 *    most long_from rows; longer ones are fold_long_kernel's. */
template <typename K, typename V>
__global__ void reduce_kernel(grp_view g, const K *keys, const V *v, int gathered, const V *by_run, int agg, int vk,
                              int kind, size_t long_from, K *keys_out, void *values_out, size_t G) {
  TDM_GRID_STRIDE(p, G) {
    size_t r = grp_at(g, p), s = g.off[r], e = g.off[r + 1], f;
    if (keys_out) keys_out[p] = keys[grp_mem(g, s)];
    if (agg == TDM_AGG_COUNT) {
      ((uint64_t *)values_out)[p] = e - s;
    } else if (by_run) {
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
 * miss). */
__global__ void join_runs_kernel(int jkind, uint64_t *ms, uint64_t *mc, uint64_t *rows, size_t nl) {
  TDM_GRID_STRIDE(i, nl + 1) {
    if (i == nl) {
      rows[nl] = 0;
    } else {
      uint64_t w = ms[i], c = tdm__ops_join_run_count(w);
      ms[i] = tdm__ops_join_run_start(w);
      mc[i] = c;
      rows[i] = tdm__ops_join_rows(jkind, c);
    }
  }
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

/* One device word to the host, waiting for the stream. */
static tdm_status word_to_host(tdm_ctx *ctx, const uint64_t *d, uint64_t *h, const char *where) {
  TDM_CUDA_TRY(cudaMemcpyAsync(h, d, 8, cudaMemcpyDeviceToHost, tdm__stream(ctx)), (void)0);
  return tdm__gpu_sync(ctx, where);
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

/* A caller output that may be NULL (then a->d stays NULL). */
static tdm_status opt_out(tdm__gpu_scope &sc, void *user, size_t bytes, tdm__dev_array *a) {
  memset(a, 0, sizeof *a);
  return user ? sc.out(user, bytes, a) : TDM_OK;
}

/* The four optional outputs of tdm_unique for G groups (outs[0..3]: keys,
 * first rows, counts, inverse). */
static tdm_status unique_outs(tdm__gpu_scope &sc, const tdm__unique_args *a, size_t G, size_t ks,
                              tdm__dev_array *outs) {
  tdm_status st;
  if ((st = opt_out(sc, a->unique_out, G * ks, &outs[0])) != TDM_OK ||
      (st = opt_out(sc, a->first_index_out, G * 8, &outs[1])) != TDM_OK ||
      (st = opt_out(sc, a->counts_out, G * 8, &outs[2])) != TDM_OK)
    return st;
  return opt_out(sc, a->inverse_out, a->n * 8, &outs[3]);
}

/* Copies the staged outputs back, then ends the call (tdm__gpu_scope's
 * finish): no wait in stream-ordered mode when nothing was staged through
 * the host, so a call that brought a size to the host waits once, for it
 * (call_end, below, ends an operation written once the same way: tdm_isin
 * waits not at all). */
static tdm_status finish_outs(tdm__gpu_scope &sc, tdm_ctx *ctx, tdm__dev_array *outs, int count, const char *where) {
  tdm_status st;
  for (int i = 0; i < count; i++)
    if (outs[i].d && (st = tdm__gpu_out_finish(ctx, &outs[i])) != TDM_OK) return st;
  return sc.finish(where);
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

/* Groups the n device keys d_keys (see the top of the file) into buffers of
 * sc; *G receives the number of groups. */
template <typename K>
static tdm_status grp_build(tdm_ctx *ctx, tdm__gpu_scope &sc, const char *fn, tdm_type key_type, const K *d_keys,
                            size_t n, int numeric, int first_seen, grp_view *g, size_t *G) {
  cudaStream_t s = tdm__stream(ctx);
  int kind = tdm__key_kind(key_type);
  K *bits;
  void *mem;
  uint64_t *flag, *rid, *off, *fr = NULL, *ord = NULL, *rank = NULL, g64 = 0;
  tdm_status st;
  memset(g, 0, sizeof *g);
  g->mem32 = n <= UINT32_MAX;
  if ((st = sc.alloc(n * sizeof(K), &bits)) != TDM_OK || (st = sc.alloc(n * (g->mem32 ? 4 : 8), &mem)) != TDM_OK ||
      (st = sc.alloc((n + 1) * 8, &flag)) != TDM_OK || (st = sc.alloc((n + 1) * 8, &rid)) != TDM_OK)
    return st;
  g->mem = mem;
  st = g->mem32 ? sort_bits_indexed<K, uint32_t>(ctx, sc, fn, d_keys, n, kind, numeric, bits, (uint32_t *)mem)
                : sort_bits_indexed<K, uint64_t>(ctx, sc, fn, d_keys, n, kind, numeric, bits, (uint64_t *)mem);
  if (st != TDM_OK) return st;
  heads_kernel<K><<<tdm__grid(n + 1), TDM_GPU_BLOCK, 0, s>>>(bits, flag, n);
  if ((st = tdm__launch_check(fn)) != TDM_OK) return st;
  if ((st = exclusive_sum(ctx, flag, rid, n + 1)) != TDM_OK) return st;
  if ((st = word_to_host(ctx, rid + n, &g64, fn)) != TDM_OK) return st;
  *G = (size_t)g64;
  if ((st = sc.alloc((*G + 1) * 8, &off)) != TDM_OK) return st;
  run_starts_kernel<<<tdm__grid(n + 1), TDM_GPU_BLOCK, 0, s>>>(flag, rid, off, n);
  if ((st = tdm__launch_check(fn)) != TDM_OK) return st;
  g->off = off;
  g->rid = rid;
  if (first_seen && *G > 1) {
    if ((st = sc.alloc(*G * 8, &fr)) != TDM_OK || (st = sc.alloc(*G * 8, &ord)) != TDM_OK ||
        (st = sc.alloc(*G * 8, &rank)) != TDM_OK)
      return st;
    first_index_kernel<<<tdm__grid(*G), TDM_GPU_BLOCK, 0, s>>>(*g, fr, ord, *G);
    if ((st = tdm__launch_check(fn)) != TDM_OK) return st;
    if ((st = sort_in_place(ctx, fr, ord, *G, 8)) != TDM_OK) return st;
    rank_kernel<<<tdm__grid(*G), TDM_GPU_BLOCK, 0, s>>>(ord, rank, *G);
    if ((st = tdm__launch_check(fn)) != TDM_OK) return st;
  }
  g->ord = ord;
  g->rank = rank;
  return TDM_OK;
}

/* ---- the operations ----------------------------------------------------- */

template <typename K>
static tdm_status unique_t(tdm_ctx *ctx, const tdm__unique_args *a) {
  static const char fn[] = "tdm_unique";
  tdm__gpu_scope sc(ctx);
  tdm__dev_array keys, outs[4];
  grp_view g;
  size_t n = a->n, G = 0;
  tdm_status st;
  if ((st = enter_waiting(sc, ctx, fn)) != TDM_OK || (st = sc.in(a->keys, n * sizeof(K), &keys)) != TDM_OK ||
      (st = grp_build<K>(ctx, sc, fn, a->key_type, (const K *)keys.d, n, a->numeric, a->first_seen, &g, &G)) !=
          TDM_OK)
    return st;
  if ((st = unique_outs(sc, a, G, sizeof(K), outs)) != TDM_OK) return st;
  cudaStream_t s = tdm__stream(ctx);
  unique_kernel<K><<<tdm__grid(G), TDM_GPU_BLOCK, 0, s>>>(g, (const K *)keys.d, (K *)outs[0].d,
                                                         (uint64_t *)outs[1].d, (uint64_t *)outs[2].d, G);
  if (outs[3].d) inverse_kernel<<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>(g, (uint64_t *)outs[3].d, n);
  if ((st = tdm__launch_check(fn)) != TDM_OK || (st = finish_outs(sc, ctx, outs, 4, fn)) != TDM_OK) return st;
  *a->n_unique_out = G;
  return TDM_OK;
}

/* CUB's reduce-by-key of the gathered values gv by run (keys: rid[k + 1],
 * run r's number plus one at each of its positions) into by_run; with temp
 * NULL only sizes temp_bytes, so the sizing and the call always name the
 * same instantiation. */
template <typename V>
static cudaError_t reduce_by_run(void *temp, size_t &temp_bytes, const grp_view &g, const V *gv, uint64_t *runs_out,
                                 V *by_run, uint64_t *d_runs, order_free_op<V> op, size_t n, cudaStream_t s) {
  return cub::DeviceReduce::ReduceByKey(temp, temp_bytes, g.rid + 1, runs_out, gv, by_run, d_runs, op, (int64_t)n, s);
}

/* The values of tdm_group_reduce, by what each aggregation needs so that no
 * thread walks a long group alone:
 *  - COUNT, FIRST, LAST: O(1) per group, read in place (reduce_kernel).
 *  - the rest first gather the values in member order (gather_kernel); then
 *  - order-free ones (integer SUM, MIN, MAX: tdm__ops_order_free) are a
 *    reduce-by-key over the sorted positions' run numbers, which CUB splits
 *    over the whole grid however long a run is, so a hot key is as fast as
 *    any other;
 *  - float SUM and MEAN, whose bits are the left fold in input order, fold
 *    contiguous memory: a thread per group of at most TDM__OPS_LONG rows,
 *    a block per longer group (fold_long_kernel). That fold is serial: a
 *    group of c rows costs c dependent adds, the limit ops.h states. */
template <typename K, typename V>
static tdm_status reduce_t(tdm_ctx *ctx, tdm__gpu_scope &sc, const char *fn, const tdm__group_args *a,
                           const grp_view &g, const K *keys, const V *v, K *keys_out, void *values_out, size_t n,
                           size_t G) {
  cudaStream_t s = tdm__stream(ctx);
  int agg = a->agg, vk = tdm__ops_value_kind(a->value_type), kind = tdm__key_kind(a->value_type);
  int gathered = n && agg != TDM_AGG_COUNT && agg != TDM_AGG_FIRST && agg != TDM_AGG_LAST;
  int order_free = gathered && tdm__ops_order_free(agg, vk);
  V *gv = NULL, *by_run = NULL;
  uint64_t *runs_out = NULL, *d_runs = NULL;
  void *temp = NULL;
  size_t temp_bytes = 0, long_from = (size_t)-1;
  order_free_op<V> op = {agg, vk, kind};
  tdm_status st;
  if (gathered) {
    if ((st = sc.alloc(n * sizeof(V), &gv)) != TDM_OK) return st;
    if (order_free &&
        ((st = sc.alloc(G * 8, &runs_out)) != TDM_OK || (st = sc.alloc(G * sizeof(V), &by_run)) != TDM_OK ||
         (st = sc.alloc(8, &d_runs)) != TDM_OK))
      return st;
    if (order_free)
      TDM_CUDA_TRY(reduce_by_run<V>(NULL, temp_bytes, g, gv, runs_out, by_run, d_runs, op, n, s), (void)0);
    if (order_free && (st = sc.alloc(temp_bytes, &temp)) != TDM_OK) return st;
    gather_kernel<V><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>(g, v, gv, n);
    if ((st = tdm__launch_check(fn)) != TDM_OK) return st;
    if (order_free) TDM_CUDA_TRY(reduce_by_run<V>(temp, temp_bytes, g, gv, runs_out, by_run, d_runs, op, n, s), (void)0);
    else long_from = TDM__OPS_LONG;
    v = gv;
  }
  reduce_kernel<K, V><<<tdm__grid(G), TDM_GPU_BLOCK, 0, s>>>(g, keys, v, gathered, by_run, agg, vk, kind, long_from,
                                                              keys_out, values_out, G);
  if (long_from < n) {
    size_t nb = (n + TDM__OPS_LONG - 1) / TDM__OPS_LONG, cap = 65535u * 16u;
    fold_long_kernel<V><<<(unsigned)(nb < cap ? nb : cap), TDM_GPU_BLOCK, 0, s>>>(g, gv, agg, vk, kind, values_out,
                                                                                  n);
  }
  return tdm__launch_check(fn);
}

template <typename K>
static tdm_status group_reduce_t(tdm_ctx *ctx, const tdm__group_args *a) {
  static const char fn[] = "tdm_group_reduce";
  tdm__gpu_scope sc(ctx);
  tdm__dev_array keys, vals, outs[2];
  grp_view g;
  size_t n = a->n, G = 0, vs = tdm_type_size(a->value_type);
  size_t os = a->agg == TDM_AGG_COUNT || a->agg == TDM_AGG_MEAN ? 8 : vs;
  tdm_status st;
  memset(&vals, 0, sizeof vals);
  if ((st = enter_waiting(sc, ctx, fn)) != TDM_OK || (st = sc.in(a->keys, n * sizeof(K), &keys)) != TDM_OK ||
      (a->values && (st = sc.in(a->values, n * vs, &vals)) != TDM_OK) ||
      (st = grp_build<K>(ctx, sc, fn, a->key_type, (const K *)keys.d, n, a->numeric, a->first_seen, &g, &G)) !=
          TDM_OK)
    return st;
  if ((st = opt_out(sc, a->keys_out, G * sizeof(K), &outs[0])) != TDM_OK ||
      (st = opt_out(sc, a->values_out, G * os, &outs[1])) != TDM_OK)
    return st;
  st = vs == 4 ? reduce_t<K, uint32_t>(ctx, sc, fn, a, g, (const K *)keys.d, (const uint32_t *)vals.d,
                                       (K *)outs[0].d, outs[1].d, n, G)
               : reduce_t<K, uint64_t>(ctx, sc, fn, a, g, (const K *)keys.d, (const uint64_t *)vals.d,
                                       (K *)outs[0].d, outs[1].d, n, G);
  if (st != TDM_OK || (st = finish_outs(sc, ctx, outs, 2, fn)) != TDM_OK) return st;
  *a->n_groups_out = G;
  return TDM_OK;
}

/* The hash method's groups in ascending key order: group p is the
 * exported pair ord[p] (the exported keys' bits sorted with their
 * positions); either output may be NULL. */
template <typename K, typename V, typename I>
__global__ void group_put_kernel(const K *ek, const V *ev, const I *ord, K *keys_out, V *values_out, size_t G) {
  TDM_GRID_STRIDE(p, G) {
    size_t q = (size_t)ord[p];
    if (keys_out) keys_out[p] = ek[q];
    if (values_out) values_out[p] = ev[q];
  }
}

/* The groups of the hash method (src/ops_api.c's rule, TDM__HASH_GROUPS_UNORDERED):
 * a scratch table keyed by the n keys' bits folds each row's value into its
 * key's slot by dup (values NULL: COUNT, a SUM of ones the claim makes,
 * TDM__HG_ROWS_ONE, when count is set, else a set whose values stay 0, no
 * add per row; integer SUM wraps and
 * MIN / MAX pick, so the order the rows land in does not matter), its
 * live slots are exported (the call's one wait, for their count: *G) into
 * *ek / *ev, and their bits sorted with their positions into *ord, by the
 * order bits of the sort method, so ascending key order is the same. V:
 * the value bits (uint64_t for COUNT). */
template <typename K, typename V, typename I>
static tdm_status hashed_groups(tdm_ctx *ctx, tdm__gpu_scope &sc, const char *fn, tdm_type key_type, const K *d_keys,
                                size_t n, int dup, tdm_type value_type, const V *d_vals, int count, const K **ek,
                                const V **ev, const I **ord, size_t *G) {
  const tdm_type kbits = bits_type_of<K>();
  void *k = NULL, *v = NULL;
  K *sorted;
  I *o;
  tdm_hash h;
  tdm__hash_gpu be;
  tdm_status st;
  if (!d_vals && count) value_type = TDM_U64;
  if ((st = tdm__hg_scratch_table(ctx, sc, kbits, value_type, dup, d_keys, d_vals,
                                  count ? TDM__HG_ROWS_ONE : TDM__HG_ROWS_NONE, n, &h, &be, fn)) != TDM_OK ||
      (st = tdm__hg_scratch_export(ctx, sc, &h, &k, &v, G, fn)) != TDM_OK ||
      (st = sc.alloc(*G * sizeof(K), &sorted)) != TDM_OK || (st = sc.alloc(*G * sizeof(I), &o)) != TDM_OK ||
      (st = sort_bits_indexed<K, I>(ctx, sc, fn, (const K *)k, *G, tdm__key_kind(key_type), 0, sorted, o)) != TDM_OK)
    return st;
  *ek = (const K *)k;
  *ev = (const V *)v;
  *ord = o;
  return TDM_OK;
}

template <typename K, typename V, typename I>
static tdm_status group_first_seen_t(tdm_ctx *ctx, const tdm__group_args *a);

/* tdm_group_reduce by the hash method (COUNT, and SUM, MIN, MAX of integer
 * values, in ascending order by bits): hashed_groups, then each group's key
 * and value in place; in first-seen order group_first_seen_t. The same
 * bytes as the sort's. */
template <typename K, typename V, typename I>
static tdm_status group_hashed_t(tdm_ctx *ctx, const tdm__group_args *a) {
  static const char fn[] = "tdm_group_reduce";
  if (a->first_seen) return group_first_seen_t<K, V, I>(ctx, a);
  tdm__gpu_scope sc(ctx);
  tdm__dev_array keys, vals, outs[2];
  int dup = a->agg == TDM_AGG_MIN ? TDM__DUP_MIN : a->agg == TDM_AGG_MAX ? TDM__DUP_MAX : TDM__DUP_SUM;
  size_t n = a->n, G = 0;
  const K *ek;
  const V *ev;
  const I *ord;
  tdm_status st;
  memset(&vals, 0, sizeof vals);
  if ((st = enter_waiting(sc, ctx, fn)) != TDM_OK || (st = sc.in(a->keys, n * sizeof(K), &keys)) != TDM_OK ||
      (a->values && (st = sc.in(a->values, n * sizeof(V), &vals)) != TDM_OK) ||
      (st = hashed_groups<K, V, I>(ctx, sc, fn, a->key_type, (const K *)keys.d, n, dup, a->value_type,
                                   (const V *)vals.d, 1, &ek, &ev, &ord, &G)) != TDM_OK ||
      (st = opt_out(sc, a->keys_out, G * sizeof(K), &outs[0])) != TDM_OK ||
      (st = opt_out(sc, a->values_out, G * sizeof(V), &outs[1])) != TDM_OK)
    return st;
  if (G) {
    group_put_kernel<K, V, I><<<tdm__grid(G), TDM_GPU_BLOCK, 0, tdm__stream(ctx)>>>(ek, ev, ord, (K *)outs[0].d,
                                                                                     (V *)outs[1].d, G);
    if ((st = tdm__launch_check(fn)) != TDM_OK) return st;
  }
  if ((st = finish_outs(sc, ctx, outs, 2, fn)) != TDM_OK) return st;
  *a->n_groups_out = G;
  return TDM_OK;
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
                                  &h, &be, fn)) != TDM_OK)
    return st;
  be.policy->find(&h, rows, code, NULL, n);
  return tdm__launch_check(fn);
}

/* tdm_unique by the hash method (an inverse, no first indices, ascending
 * order by bits): hashed_groups counts the keys; the distinct keys and
 * counts go out in order; a second scratch table maps each distinct key to
 * its position (a SUM of one value per key), and one probe per row reads
 * the row's inverse from it. */
template <typename K, typename I>
static tdm_status unique_hashed_t(tdm_ctx *ctx, const tdm__unique_args *a) {
  static const char fn[] = "tdm_unique";
  tdm__gpu_scope sc(ctx);
  tdm__dev_array keys, outs[4];
  cudaStream_t s = tdm__stream(ctx);
  size_t n = a->n, G = 0;
  const K *ek;
  const uint64_t *ev;
  const I *ord;
  K *uk;
  tdm_status st;
  if ((st = enter_waiting(sc, ctx, fn)) != TDM_OK || (st = sc.in(a->keys, n * sizeof(K), &keys)) != TDM_OK ||
      (st = hashed_groups<K, uint64_t, I>(ctx, sc, fn, a->key_type, (const K *)keys.d, n, TDM__DUP_SUM, TDM_U64,
                                          NULL, a->counts_out != NULL, &ek, &ev, &ord, &G)) != TDM_OK ||
      (st = unique_outs(sc, a, G, sizeof(K), outs)) != TDM_OK)
    return st;
  uk = (K *)outs[0].d;
  if (!uk && (st = sc.alloc(G * sizeof(K), &uk)) != TDM_OK) return st;
  if (G) {
    group_put_kernel<K, uint64_t, I><<<tdm__grid(G), TDM_GPU_BLOCK, 0, s>>>(ek, ev, ord, uk, (uint64_t *)outs[2].d,
                                                                            G);
    if ((st = tdm__launch_check(fn)) != TDM_OK ||
        (st = codes_by_table<K>(ctx, sc, fn, uk, G, (const K *)keys.d, n, (uint64_t *)outs[3].d)) != TDM_OK)
      return st;
  }
  if ((st = finish_outs(sc, ctx, outs, 4, fn)) != TDM_OK) return st;
  *a->n_unique_out = G;
  return TDM_OK;
}

/* Group p (first-seen order) of unique_first_seen_t: its first row f
 * (first holds the complements of the first rows, sorted) gives the key
 * (the caller's, as the CPU writes it), the first index and, for the second
 * table, the key's bits. */
template <typename K, typename I>
__global__ void first_seen_put_kernel(const K *keys, const K *bits, const I *first, K *unique_out,
                                      uint64_t *first_out, K *pbits, size_t G) {
  TDM_GRID_STRIDE(p, G) {
    size_t f = (size_t)(I)~first[G - 1 - p]; /* complements, ascending: the first rows, descending */
    if (unique_out) unique_out[p] = keys[f];
    if (first_out) first_out[p] = f;
    if (pbits) pbits[p] = bits[f];
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

/* The rows' bits a scratch table is keyed by: the keys' own, or their
 * canonical bits under TDM_EQ_NUMERIC (into sc). */
template <typename K>
static tdm_status rows_bits(tdm_ctx *ctx, tdm__gpu_scope &sc, const char *fn, tdm_type key_type, int numeric,
                            const K *d_keys, size_t n, const K **kb) {
  K *canon;
  tdm_status st;
  *kb = d_keys;
  if (!numeric) return TDM_OK;
  if ((st = sc.alloc(n * sizeof(K), &canon)) != TDM_OK) return st;
  canon_bits_kernel<K><<<tdm__grid(n), TDM_GPU_BLOCK, 0, tdm__stream(ctx)>>>(d_keys, canon, n, tdm__key_kind(key_type),
                                                                             1);
  *kb = canon;
  return tdm__launch_check(fn);
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
  if ((st = tdm__hg_first_rows(ctx, sc, bits_type_of<K>(), bits_type_of<I>(), kb, n, &h, &be, fn)) != TDM_OK ||
      (st = tdm__hg_scratch_export(ctx, sc, &h, &ek, &ev, G, fn)) != TDM_OK ||
      (st = sort_in_place(ctx, ev, NULL, *G, sizeof(I))) != TDM_OK)
    return st;
  *first = (const I *)ev;
  return TDM_OK;
}

/* tdm_unique in first-seen order by the hash method (what factorize asks):
 * the groups of the rows' bits (rows_bits) in first-seen order
 * (first_seen_groups): position p holds the p-th key to appear. Keys and first indices
 * go out from there; for the inverse or the counts each row's code comes
 * from a second table of the groups (codes_by_table), and the counts add
 * the codes up. A group's first
 * row and count do not depend on the order of the claims, so the bytes are
 * the sort method's (and the CPU's numbering). */
template <typename K, typename I>
static tdm_status unique_first_seen_t(tdm_ctx *ctx, const tdm__unique_args *a) {
  static const char fn[] = "tdm_unique";
  tdm__gpu_scope sc(ctx);
  tdm__dev_array keys, outs[4];
  cudaStream_t s = tdm__stream(ctx);
  const int coded = a->inverse_out || a->counts_out;
  size_t n = a->n, G = 0;
  const K *kb;
  const I *first;
  K *pb = NULL;
  uint64_t *code = NULL;
  tdm_status st;
  if ((st = enter_waiting(sc, ctx, fn)) != TDM_OK || (st = sc.in(a->keys, n * sizeof(K), &keys)) != TDM_OK ||
      (st = rows_bits<K>(ctx, sc, fn, a->key_type, a->numeric, (const K *)keys.d, n, &kb)) != TDM_OK ||
      (st = first_seen_groups<K, I>(ctx, sc, fn, kb, n, &first, &G)) != TDM_OK ||
      (st = unique_outs(sc, a, G, sizeof(K), outs)) != TDM_OK)
    return st;
  code = (uint64_t *)outs[3].d;
  if (coded && ((st = sc.alloc(G * sizeof(K), &pb)) != TDM_OK || (!code && (st = sc.alloc(n * 8, &code)) != TDM_OK)))
    return st;
  first_seen_put_kernel<K, I><<<tdm__grid(G), TDM_GPU_BLOCK, 0, s>>>((const K *)keys.d, kb, first, (K *)outs[0].d,
                                                                     (uint64_t *)outs[1].d, pb, G);
  if ((st = tdm__launch_check(fn)) != TDM_OK) return st;
  if (coded) {
    if ((st = codes_by_table<K>(ctx, sc, fn, pb, G, kb, n, code)) != TDM_OK) return st;
    if (outs[2].d) {
      TDM_CUDA_TRY(cudaMemsetAsync(outs[2].d, 0, G * 8, s), (void)0);
      count_codes_kernel<<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>(code, (uint64_t *)outs[2].d, n);
    }
    if ((st = tdm__launch_check(fn)) != TDM_OK) return st;
  }
  if ((st = finish_outs(sc, ctx, outs, 4, fn)) != TDM_OK) return st;
  *a->n_unique_out = G;
  return TDM_OK;
}

/* tdm_group_reduce in first-seen order by the hash method (SUM, MIN, MAX
 * of integer values; COUNT is tdm_unique's, src/ops_api.c): the groups in
 * first-seen order (first_seen_groups) give each group's key and bits, and
 * a second scratch table folds every row's value into its key's slot by the
 * aggregation (order-free: integer SUM wraps, MIN / MAX pick), read by one
 * probe per group. */
template <typename K, typename V, typename I>
static tdm_status group_first_seen_t(tdm_ctx *ctx, const tdm__group_args *a) {
  static const char fn[] = "tdm_group_reduce";
  tdm__gpu_scope sc(ctx);
  tdm__dev_array keys, vals, outs[2];
  cudaStream_t s = tdm__stream(ctx);
  int dup = a->agg == TDM_AGG_MIN ? TDM__DUP_MIN : a->agg == TDM_AGG_MAX ? TDM__DUP_MAX : TDM__DUP_SUM;
  size_t n = a->n, G = 0;
  const K *kb;
  const I *first;
  K *pb;
  tdm_hash h;
  tdm__hash_gpu be;
  tdm_status st;
  if ((st = enter_waiting(sc, ctx, fn)) != TDM_OK || (st = sc.in(a->keys, n * sizeof(K), &keys)) != TDM_OK ||
      (st = sc.in(a->values, n * sizeof(V), &vals)) != TDM_OK ||
      (st = rows_bits<K>(ctx, sc, fn, a->key_type, a->numeric, (const K *)keys.d, n, &kb)) != TDM_OK ||
      (st = first_seen_groups<K, I>(ctx, sc, fn, kb, n, &first, &G)) != TDM_OK ||
      (st = opt_out(sc, a->keys_out, G * sizeof(K), &outs[0])) != TDM_OK ||
      (st = opt_out(sc, a->values_out, G * sizeof(V), &outs[1])) != TDM_OK ||
      (st = sc.alloc(G * sizeof(K), &pb)) != TDM_OK)
    return st;
  first_seen_put_kernel<K, I><<<tdm__grid(G), TDM_GPU_BLOCK, 0, s>>>((const K *)keys.d, kb, first, (K *)outs[0].d,
                                                                     NULL, pb, G);
  if ((st = tdm__launch_check(fn)) != TDM_OK) return st;
  if (outs[1].d) {
    if ((st = tdm__hg_scratch_table(ctx, sc, bits_type_of<K>(), a->value_type, dup, kb, vals.d, TDM__HG_ROWS_NONE, n,
                                    &h, &be, fn)) != TDM_OK)
      return st;
    be.policy->find(&h, pb, outs[1].d, NULL, G);
    if ((st = tdm__launch_check(fn)) != TDM_OK) return st;
  }
  if ((st = finish_outs(sc, ctx, outs, 2, fn)) != TDM_OK) return st;
  *a->n_groups_out = G;
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
  TDM_CUDA_TRY(cudaMemcpyAsync(h, mm, 16, cudaMemcpyDeviceToHost, s), (void)0);
  if ((st = tdm__gpu_sync(ctx, fn)) != TDM_OK) return st;
  *min_bits = (uint64_t)((K)h[0] ^ flip);
  *max_bits = (uint64_t)((K)h[1] ^ flip);
  return TDM_OK;
}

/* tdm_unique by the dense table (see dense_flag_kernel for the numbering);
 * the bytes are the CPU's. */
template <typename K>
static tdm_status unique_dense_t(tdm_ctx *ctx, const tdm__unique_args *a) {
  static const char fn[] = "tdm_unique";
  tdm__gpu_scope sc(ctx);
  tdm__dev_array keys, outs[4];
  cudaStream_t s = tdm__stream(ctx);
  size_t n = a->n, S = (size_t)a->dense_span + 1, len = a->first_seen ? n : S;
  K lo = (K)a->dense_min;
  unsigned long long *cnt, *first = NULL;
  uint64_t *flag, *sum, *num = NULL, G = 0;
  tdm_status st;
  if ((st = enter_waiting(sc, ctx, fn)) != TDM_OK || (st = sc.in(a->keys, n * sizeof(K), &keys)) != TDM_OK ||
      (st = sc.alloc(S * 8, &cnt)) != TDM_OK ||
      ((a->first_seen || a->first_index_out) && (st = sc.alloc(S * 8, &first)) != TDM_OK) ||
      (st = sc.alloc((len + 1) * 8, &flag)) != TDM_OK || (st = sc.alloc((len + 1) * 8, &sum)) != TDM_OK ||
      (a->inverse_out && (st = sc.alloc(S * 8, &num)) != TDM_OK))
    return st;
  TDM_CUDA_TRY(cudaMemsetAsync(cnt, 0, S * 8, s), (void)0);
  if (first) TDM_CUDA_TRY(cudaMemsetAsync(first, 0xff, S * 8, s), (void)0);
  dense_count_kernel<K><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>((const K *)keys.d, n, lo, cnt, first);
  dense_flag_kernel<K><<<tdm__grid(len + 1), TDM_GPU_BLOCK, 0, s>>>((const K *)keys.d, lo, cnt, first, a->first_seen,
                                                                   flag, len);
  if ((st = tdm__launch_check(fn)) != TDM_OK || (st = exclusive_sum(ctx, flag, sum, len + 1)) != TDM_OK ||
      (st = word_to_host(ctx, sum + len, &G, fn)) != TDM_OK)
    return st;
  if ((st = unique_outs(sc, a, G, sizeof(K), outs)) != TDM_OK) return st;
  dense_unique_kernel<K><<<tdm__grid(S), TDM_GPU_BLOCK, 0, s>>>(cnt, first, sum, a->first_seen, lo, num,
                                                               (K *)outs[0].d, (uint64_t *)outs[1].d,
                                                               (uint64_t *)outs[2].d, S);
  if (num)
    dense_inverse_kernel<K><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>((const K *)keys.d, n, lo, num,
                                                                  (uint64_t *)outs[3].d);
  if ((st = tdm__launch_check(fn)) != TDM_OK || (st = finish_outs(sc, ctx, outs, 4, fn)) != TDM_OK) return st;
  *a->n_unique_out = (size_t)G;
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

/* tdm_unique without first indices or inverse, in sorted order, keys equal
 * by their bits (the CPU's unique_keys_only): the keys' order-preserving
 * sort bits (keybits.h; the map is the identity for unsigned keys, so an
 * unsigned device array is sorted straight out of the caller's array)
 * sorted alone, CUB's reduce-by-key over them writing the distinct bits and each run's first
 * position, the distinct bits mapped back to keys in place; counts are the
 * distances between the first positions. No (key, index) pairs, no group
 * description: a 64-bit key moves 8 bytes through the sort, not 16. */
template <typename U>
static tdm_status unique_sorted_keys_t(tdm_ctx *ctx, const tdm__unique_args *a) {
  static const char fn[] = "tdm_unique";
  tdm__gpu_scope sc(ctx);
  tdm__dev_array keys, outs[2];
  size_t n = a->n, temp_bytes = 0, G;
  const thrust::counting_iterator<uint64_t> at(0);
  U *sorted, *uk;
  uint64_t *st, *d_runs, runs = 0;
  void *temp;
  tdm_status s_;
  cudaStream_t s = tdm__stream(ctx);
  memset(outs, 0, sizeof outs);
  if ((s_ = enter_waiting(sc, ctx, fn)) != TDM_OK || (s_ = sc.in(a->keys, n * sizeof(U), &keys)) != TDM_OK) return s_;
  const int kind = tdm__key_kind(a->key_type);
  /* Unsigned keys in device memory are their own bits: CUB sorts them out
   * of the caller's array into the scratch (tdm__gpu_sort_from). */
  const int from_caller = !keys.staged && kind == TDM_KIND_UNSIGNED;
  if (keys.staged) {
    sorted = (U *)keys.d; /* the call's own copy already */
    if (kind != TDM_KIND_UNSIGNED) tdm__gpu_map_bits(s, sorted, sorted, n, sizeof(U), kind, 0, 1);
  } else {
    if ((s_ = sc.alloc(n * sizeof(U), &sorted)) != TDM_OK) return s_;
    if (!from_caller) tdm__gpu_map_bits(s, keys.d, sorted, n, sizeof(U), kind, 0, 1);
  }
  if ((s_ = tdm__launch_check(fn)) != TDM_OK) return s_;
  if ((s_ = opt_out(sc, a->unique_out, n * sizeof(U), &outs[0])) != TDM_OK ||
      (s_ = opt_out(sc, a->counts_out, n * 8, &outs[1])) != TDM_OK)
    return s_;
  uk = outs[0].d ? (U *)outs[0].d : NULL;
  if (!uk && (s_ = sc.alloc(n * sizeof(U), &uk)) != TDM_OK) return s_;
  TDM_CUDA_TRY(cub::DeviceReduce::ReduceByKey(NULL, temp_bytes, sorted, uk, at, (uint64_t *)NULL, (uint64_t *)NULL,
                                              first_pos_op(), (int64_t)n, s),
               (void)0);
  if ((s_ = sc.alloc(n * 8, &st)) != TDM_OK || (s_ = sc.alloc(8, &d_runs)) != TDM_OK ||
      (s_ = sc.alloc(temp_bytes ? temp_bytes : 1, &temp)) != TDM_OK)
    return s_;
  if ((s_ = from_caller ? tdm__gpu_sort_from(ctx, sc, keys.d, NULL, sorted, NULL, n, TDM_KIND_UNSIGNED, sizeof(U), 0, 0)
                        : sort_in_place(ctx, sorted, NULL, n, sizeof(U))) != TDM_OK)
    return s_;
  TDM_CUDA_TRY(cub::DeviceReduce::ReduceByKey(temp, temp_bytes, sorted, uk, at, st, d_runs, first_pos_op(),
                                              (int64_t)n, s),
               (void)0);
  if ((s_ = word_to_host(ctx, d_runs, &runs, fn)) != TDM_OK) return s_;
  G = (size_t)runs;
  if (outs[0].d && kind != TDM_KIND_UNSIGNED) tdm__gpu_map_bits(s, uk, uk, G, sizeof(U), kind, 0, 0);
  if (outs[1].d) run_lengths_kernel<<<tdm__grid(G), TDM_GPU_BLOCK, 0, s>>>(st, (uint64_t *)outs[1].d, G, n);
  if ((s_ = tdm__launch_check(fn)) != TDM_OK) return s_;
  /* Only the G entries written go back to a host array. */
  outs[0].bytes = G * sizeof(U);
  outs[1].bytes = G * 8;
  if ((s_ = finish_outs(sc, ctx, outs, 2, fn)) != TDM_OK) return s_;
  *a->n_unique_out = G;
  return TDM_OK;
}

/* The key width is an argument of each call, so each call picks its
 * instantiation; method matters only as the dense one (see the top of the
 * file), and a call asking for neither first indices nor the inverse, in
 * sorted order and by bits, sorts its keys alone. */
static tdm_status ops_unique(tdm_ctx *ctx, const tdm__unique_args *a, int method) {
  int wide = tdm_type_size(a->key_type) == 8;
  if (method == TDM__OPS_DENSE) return wide ? unique_dense_t<uint64_t>(ctx, a) : unique_dense_t<uint32_t>(ctx, a);
  if (method == TDM__OPS_HASH && a->first_seen && a->n <= UINT32_MAX)
    return wide ? unique_first_seen_t<uint64_t, uint32_t>(ctx, a) : unique_first_seen_t<uint32_t, uint32_t>(ctx, a);
  if (method == TDM__OPS_HASH && a->first_seen)
    return wide ? unique_first_seen_t<uint64_t, uint64_t>(ctx, a) : unique_first_seen_t<uint32_t, uint64_t>(ctx, a);
  if (method == TDM__OPS_HASH && a->n <= UINT32_MAX)
    return wide ? unique_hashed_t<uint64_t, uint32_t>(ctx, a) : unique_hashed_t<uint32_t, uint32_t>(ctx, a);
  if (method == TDM__OPS_HASH)
    return wide ? unique_hashed_t<uint64_t, uint64_t>(ctx, a) : unique_hashed_t<uint32_t, uint64_t>(ctx, a);
  if (!a->first_index_out && !a->inverse_out && !a->numeric && !a->first_seen)
    return wide ? unique_sorted_keys_t<uint64_t>(ctx, a) : unique_sorted_keys_t<uint32_t>(ctx, a);
  return wide ? unique_t<uint64_t>(ctx, a) : unique_t<uint32_t>(ctx, a);
}
static tdm_status ops_group_reduce(tdm_ctx *ctx, const tdm__group_args *a, int method) {
  int wide = tdm_type_size(a->key_type) == 8, wide_v = tdm_type_size(a->value_type) == 8;
  if (method == TDM__OPS_HASH && a->n <= UINT32_MAX) {
    if (wide) return wide_v ? group_hashed_t<uint64_t, uint64_t, uint32_t>(ctx, a)
                            : group_hashed_t<uint64_t, uint32_t, uint32_t>(ctx, a);
    return wide_v ? group_hashed_t<uint32_t, uint64_t, uint32_t>(ctx, a)
                  : group_hashed_t<uint32_t, uint32_t, uint32_t>(ctx, a);
  }
  if (method == TDM__OPS_HASH) {
    if (wide) return wide_v ? group_hashed_t<uint64_t, uint64_t, uint64_t>(ctx, a)
                            : group_hashed_t<uint64_t, uint32_t, uint64_t>(ctx, a);
    return wide_v ? group_hashed_t<uint32_t, uint64_t, uint64_t>(ctx, a)
                  : group_hashed_t<uint32_t, uint32_t, uint64_t>(ctx, a);
  }
  return wide ? group_reduce_t<uint64_t>(ctx, a) : group_reduce_t<uint32_t>(ctx, a);
}

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
  enum { MAX_ARR = 8 };
  tdm__gpu_scope sc;
  tdm__dev_array arr[MAX_ARR];
  int is_out[MAX_ARR];
  int narr;
  tdm_hash set;
  tdm__hash_gpu set_be;
  int have_set;
  explicit gpu_call(tdm_ctx *ctx) : sc(ctx), narr(0), have_set(0) {}
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
static tdm_status blk_set_build(tdm__call *c, size_t ks, const void *keys, const uint64_t *vals, size_t m) {
  gpu_call *k = gpu_call_of(c);
  tdm_type t = ks == 4 ? TDM_U32 : TDM_U64;
  tdm_status st;
  if (k->have_set) return tdm__fail(TDM_ERR_DEVICE, "%s: internal: a second set in one call", c->fn);
  st = tdm__hg_scratch_table(c->ctx, k->sc, t, vals ? TDM_U64 : t, TDM__DUP_SUM, keys, vals, TDM__HG_ROWS_NONE, m,
                             &k->set, &k->set_be, c->fn);
  k->have_set = st == TDM_OK;
  return st;
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

static tdm_status blk_run_adds(tdm__call *c, size_t ks, const void *sorted, size_t n, uint64_t *add) {
  cudaStream_t s = tdm__stream(c->ctx);
  if (ks == 4) join_adds_kernel<uint32_t><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>((const uint32_t *)sorted, add, n);
  else join_adds_kernel<uint64_t><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>((const uint64_t *)sorted, add, n);
  return tdm__launch_check(c->fn);
}

static tdm_status blk_join_runs(tdm__call *c, int kind, uint64_t *ms, uint64_t *mc, uint64_t *rows, size_t nl) {
  join_runs_kernel<<<tdm__grid(nl + 1), TDM_GPU_BLOCK, 0, tdm__stream(c->ctx)>>>(kind, ms, mc, rows, nl);
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
  return st != TDM_OK ? st : word_to_host(c->ctx, off + n - 1, total, c->fn);
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

const tdm__ops_ops tdm__ops_cuda_ops = {
    .unique = ops_unique,
    .group_reduce = ops_group_reduce,
    .begin = call_begin,
    .end = call_end,
    .in = call_in,
    .out = call_out,
    .scratch = call_scratch,
    .fill = blk_fill,
    .canon_bits = blk_canon_bits,
    .sort_words = blk_sort_words,
    .sort_indexed = blk_sort_indexed,
    .search = blk_search,
    .set_build = blk_set_build,
    .set_probe = blk_set_probe,
    .run_adds = blk_run_adds,
    .join_runs = blk_join_runs,
    .join_bounds = blk_join_bounds,
    .scan_total = blk_scan_total,
    .join_fill = blk_join_fill,
    .bits_set = blk_bits_set,
    .bits_test = blk_bits_test,
    .minmax = ops_minmax,
    /* The min/max pass is a host round trip here: only a forced DENSE
     * takes the method until a GPU's measurements say where it pays
     * (docs/design.md). */
    .dense_by_rule = 0,
    /* The hash (src/ops_api.c's join rule). */
    .join_method = TDM__OPS_HASH,
    .hash_groups = TDM__HASH_GROUPS_UNORDERED,
};
