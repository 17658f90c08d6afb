/*
 * hash_v2.cu: the v2 design's hash insert and find.
 *
 * Find: a lane group per key reads its probe a 64-byte bucket at a time
 * (find_group_kernel).
 *
 * Insert, v2: sort, reduce, one claim per distinct key (SUM: step 4 alone,
 * one claim per copy, see below).
 *  1. hash_pairs_kernel writes each key's sort word (sort_word: a 64-bit
 *     key's hash, tdm__hash_mix; a 32-bit key itself) and value;
 *  2. CUB radix sort of the (word, value) pairs on all the word's bits
 *     (8 digit passes for 64-bit keys, 4 for 32-bit ones);
 *  3. CUB reduce-by-key over the sorted hashes with the policy as operator;
 *  4. claim_runs_kernel: a lane group per distinct key claims its slot and
 *     combines with a present value.
 * Why this shape:
 *  - The mixer is a bijection (tdm__hash_unmix inverts it), so equal hashes
 *    are equal keys: the sort puts all copies of a key together and the key
 *    need not travel with it (the claim recovers it from the hash). The
 *    sort is stable, so each run keeps batch order. Reduce-by-key folds
 *    SUM / MIN / MAX values with tdm__dup_combine (commutative for those);
 *    KEEP_FIRST / KEEP_LAST reduce the copies' positions in the sorted batch
 *    with min / max (tdm__dup_pick) and the claim reads the value there, the
 *    run's first / last, because CUB does not document that ReduceByKey
 *    applies its operator in input order. That is the whole election: no
 *    per-slot ballot, no table-sized scratch, and a key repeated through
 *    the whole batch is reduced by the whole grid instead of a chain of
 *    atomics on one word.
 *  - Each distinct key is claimed once, so the claim never races another
 *    copy of itself, and its value is written by one lane with a plain store
 *    (tdm__hs_put_run): the policy's combine with a present value is fused
 *    into the claim.
 *  - Homes are the hash's top bits, so for 64-bit keys sorted hashes are
 *    sorted homes: the claims of neighbouring lane groups walk neighbouring
 *    buckets and the table is written nearly in order instead of at random.
 *  - The claim probes like the v2 find: a tile of 64 / slot-size lanes reads
 *    one 64-byte bucket together, three tile ballots give the bucket's
 *    match / empty / tombstone masks and tdm__hs_claim_step decides; one
 *    lane swaps the key in (tdm__hs_claim_cas_outcome; a lost swap probes
 *    again).
 *  - Scratch is batch-sized only: the sort words and values and their sort
 *    alternates, 2 * (word + value size) bytes per key, plus CUB's temporary
 *    storage, sized for the largest chunk and taken before the table
 *    changes. Chunks of at most 2^28 keys (8 GiB of scratch for 64-bit
 *    values) bound it; chunks are consecutive inserts, as in legacy.
 *  - SUM (integer values, wrapping) needs no sort: adds are order-free, so
 *    every copy claims with the same lane-group probe and adds its value
 *    atomically into the slot (a free slot's value is 0); no scratch at all.
 *  - 32-bit keys sort themselves (4 passes over 4 + value-size bytes,
 *    instead of 8 over 8 + value-size for a 64-bit hash): the run grouping
 *    only needs a bijection of the key, and a 32-bit image of the 64-bit
 *    hash is not one. Their claims then walk the table in key order, not
 *    home order.
 *  - Claim grids are one resident wave (tdm__grid_resident: 8 blocks per
 *    SM), so the block counters' global flushes stay a few thousand.
 *  The cost is the sort (8 or 4 passes); which design, and which of these
 *  trades, is faster is for bench/device-check.sh on a GPU to say.
 */
#include <string.h>

#include <new>
#include <type_traits>

#include <cub/device/device_reduce.cuh>

#include <cooperative_groups.h>
#include <thrust/iterator/counting_iterator.h>

#include "hash_gpu.cuh"
#include "sort_cub.cuh"

namespace cg = cooperative_groups;

/* The v2 find: a tile of G lanes (the slots of one 64-byte bucket: 4 of 16
 * bytes, 8 of 8 bytes) probes for one key. Lane j reads slot j of the
 * bucket, so the group's reads of a bucket are one coalesced 64-byte
 * transaction; two tile ballots give the bucket's match and empty masks, and
 * every lane takes the same decision (tdm__hs_lookup_step). A warp serves
 * 32 / G keys at once, and no lane walks a bucket slot by slot. */
template <typename K, typename V>
__global__ void __launch_bounds__(TDM_GPU_BLOCK) find_group_kernel(const typename hs<K, V>::S *s, unsigned l,
                                                                   const K *keys, V *vo, uint8_t *fo, size_t n) {
  constexpr unsigned G = 64u / sizeof(typename hs<K, V>::S);
  static_assert(32u % G == 0 && TDM_GPU_BLOCK % 32u == 0, "a lane group must lie within one warp");
  cg::thread_block_tile<G> tile = cg::tiled_partition<G>(cg::this_thread_block());
  const unsigned lane = tile.thread_rank();
  const uint64_t cap = (uint64_t)1 << l, mask = cap - 1u;
  const size_t groups = (size_t)gridDim.x * blockDim.x / G;
  for (size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / G; i < n; i += groups) {
    K key = keys[i];
    uint64_t pos = hs<K, V>::start(key, l), at = TDM_HASH_NONE;
    if (pos >= cap) {
      at = hs<K, V>::lookup(s, l, key, pos, 0); /* a side slot: one read */
    } else {
      for (uint64_t g = 0; g < cap / G; g++) {
        unsigned eq, em;
        hs<K, V>::lane_bits(s, pos, key, lane, &eq, &em);
        eq = tile.ballot(eq != 0);
        em = tile.ballot(em != 0);
        if (hs<K, V>::lookup_step(pos, eq, em, &at)) break;
        pos = (pos + G) & mask;
      }
    }
    if (lane == 0) {
      if (vo) vo[i] = at != TDM_HASH_NONE ? s[at].v : (V)0;
      if (fo) fo[i] = (uint8_t)(at != TDM_HASH_NONE);
    }
  }
}

/* ---- the insert (see the top of the file) ---------------------------------- */

/* The word a key is sorted by (step 2): 64-bit keys by their hash
 * (tdm__hash_mix, a bijection, so equal words are equal keys and sorted
 * words are sorted homes); 32-bit keys by themselves, 32 bits, so CUB makes
 * 4 digit passes over 4 + value-size bytes instead of 8 over 8 + value-size
 * (the claims then come in key order, not home order: a trade only a GPU
 * run can weigh). sort_key / key_of are inverses. */
template <typename K>
struct sort_word {
  typedef typename std::conditional<sizeof(K) == 4, uint32_t, uint64_t>::type W;
  static __host__ __device__ __forceinline__ W sort_key(K k) {
    return sizeof(K) == 4 ? (W)k : (W)tdm__hash_mix((uint64_t)k);
  }
  static __host__ __device__ __forceinline__ K key_of(W w) {
    return sizeof(K) == 4 ? (K)w : (K)tdm__hash_unmix((uint64_t)w);
  }
};

/* Step 1: the sort's input, each key's sort word and its value. */
template <typename K, typename V>
__global__ void hash_pairs_kernel(const K *keys, const V *vals, typename sort_word<K>::W *hk, V *hv, size_t n) {
  TDM_GRID_STRIDE(i, n) {
    hk[i] = sort_word<K>::sort_key(keys[i]);
    hv[i] = vals[i];
  }
}

/* Step 3's operators, both commutative and associative, so the result does
 * not depend on the order in which CUB combines partial results (its
 * ReduceByKey documents no order). run_op: SUM / MIN / MAX on the values
 * (tdm__dup_combine). pick_op: KEEP_FIRST / KEEP_LAST on the copies'
 * positions in the sorted batch (tdm__dup_pick: the smallest / largest, the
 * run's first / last copy since the sort is stable). tests/test_hd_spread.c
 * folds both in any grouping and operand order. */
static __device__ __forceinline__ uint32_t dup_v(uint32_t a, uint32_t b, int dup, int vk) {
  return tdm__dup_combine32(a, b, dup, vk);
}
static __device__ __forceinline__ uint64_t dup_v(uint64_t a, uint64_t b, int dup, int vk) {
  return tdm__dup_combine64(a, b, dup, vk);
}
template <typename V>
struct run_op {
  int dup, vkind;
  __device__ __forceinline__ V operator()(const V &a, const V &b) const { return dup_v(a, b, dup, vkind); }
};
template <typename V>
struct pick_op {
  int dup;
  __device__ __forceinline__ V operator()(const V &a, const V &b) const {
    return (V)tdm__dup_pick((uint64_t)a, (uint64_t)b, dup);
  }
};

/* Step 3 for a sorted chunk of n (hash, value) pairs: unique hashes to ku,
 * per run either the folded value (run_op) or, for KEEP_FIRST / KEEP_LAST,
 * the kept copy's position in the sorted chunk, held in a V (a chunk has at
 * most 2^28 keys), to vu; the run count to *runs. With temp NULL only sizes
 * temp_bytes: the sizing and the call go through this one function, so they
 * always name the same CUB instantiation. */
template <typename W, typename V>
static cudaError_t reduce_runs(void *temp, size_t &temp_bytes, const W *k, W *ku, const V *v, V *vu,
                               uint64_t *runs, int dup, int vkind, size_t n, cudaStream_t st) {
  if (tdm__dup_by_position(dup)) {
    pick_op<V> op = {dup};
    return cub::DeviceReduce::ReduceByKey(temp, temp_bytes, k, ku, thrust::counting_iterator<V>((V)0), vu, runs, op,
                                          (int64_t)n, st);
  }
  run_op<V> op = {dup, vkind};
  return cub::DeviceReduce::ReduceByKey(temp, temp_bytes, k, ku, v, vu, runs, op, (int64_t)n, st);
}

/* Step 4: a tile of G lanes (the slots of one 64-byte bucket) per distinct
 * key: uw[u] is the key's sort word (sort_word), uv[u] its run's value,
 * *d_runs the number of distinct keys; with picked (KEEP_FIRST / KEEP_LAST)
 * uv[u] is a position in picked, the sorted values, and the run's value is
 * picked[uv[u]]. The group reads the key's probe a bucket at a time, as the
 * v2 find does, with three ballots (match, empty, tombstone) per bucket;
 * tdm__hs_claim_step decides, lane 0 swaps the key into the chosen slot and
 * the group learns the outcome by a shuffle. A marker key (side slot) needs
 * no probe: lane 0 claims its side slot. Lane 0 then stores the value
 * (tdm__hs_put_run) and counts the outcome as legacy's claim pass does.
 * COPIES (SUM only, no sort): uw are the batch's keys themselves, d_runs is
 * NULL and n_copies their count; every copy claims, and lane 0 adds its
 * value with an atomic add (a free slot's value is 0, the table's
 * invariant; integer SUM wraps, so the order of the adds does not matter).
 * Two copies of one key probe the same path, so one claims and the other
 * finds it (tdm__hs_claim's argument). */
template <typename K, typename V, bool COPIES>
__global__ void __launch_bounds__(TDM_GPU_BLOCK)
    claim_runs_kernel(typename hs<K, V>::S *s, unsigned l, const typename sort_word<K>::W *uw, const V *uv,
                      const V *picked, const uint64_t *d_runs, size_t n_copies, int dup, int vkind,
                      unsigned long long *cnt) {
  constexpr unsigned G = 64u / sizeof(typename hs<K, V>::S);
  static_assert(32u % G == 0 && TDM_GPU_BLOCK % 32u == 0, "a lane group must lie within one warp");
  __shared__ unsigned long long sh[NCOUNT];
  block_counts bc;
  bc.init(sh);
  cg::thread_block_tile<G> tile = cg::tiled_partition<G>(cg::this_thread_block());
  const unsigned lane = tile.thread_rank();
  const uint64_t cap = (uint64_t)1 << l, mask = cap - 1u, runs = COPIES ? (uint64_t)n_copies : *d_runs;
  const size_t groups = (size_t)gridDim.x * blockDim.x / G;
  for (size_t u = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / G; u < runs; u += groups) {
    const K key = COPIES ? (K)uw[u] : sort_word<K>::key_of(uw[u]);
    uint64_t at = TDM_HASH_NONE;
    int o = TDM_HASH_FOUND;
    if (sizeof(K) == 4 ? tdm__hash_side32((uint32_t)key) : tdm__hash_side64((uint64_t)key)) {
      if (lane == 0) at = hs<K, V>::claim(s, l, key, hs<K, V>::start(key, l), &o);
    } else {
      const uint64_t home = hs<K, V>::home(key, l);
      for (;;) {
        uint64_t pos = home, tomb = TDM_HASH_NONE;
        K expect = 0, prev = 0;
        int step = TDM_HASH_STEP_ON;
        for (uint64_t g = 0; g < cap / G && step == TDM_HASH_STEP_ON; g++) {
          unsigned eq, em, tm;
          hs<K, V>::claim_bits(s, pos, key, lane, &eq, &em, &tm);
          eq = tile.ballot(eq != 0);
          em = tile.ballot(em != 0);
          tm = tile.ballot(tm != 0);
          step = hs<K, V>::claim_step(pos, eq, em, tm, &tomb, &at, &expect);
          pos = (pos + G) & mask;
        }
        if (step == TDM_HASH_STEP_ON) step = hs<K, V>::claim_last(tomb, &at, &expect);
        if (step == TDM_HASH_STEP_ON) { /* no free slot: a corrupt table */
          at = TDM_HASH_NONE;
          break;
        }
        if (step == TDM_HASH_STEP_FOUND) { /* after a lost swap o holds RETRY: reset it, as tdm__hs_claim does */
          o = TDM_HASH_FOUND;
          break;
        }
        if (lane == 0) prev = cas_v(&s[at].k, expect, key);
        o = hs<K, V>::cas_outcome(tile.shfl(prev, 0), expect, key);
        if (o != TDM_HASH_RETRY) break;
      }
    }
    if (lane == 0) {
      if (at == TDM_HASH_NONE) {
        bc.add(TDM_HASH_FOUND);
      } else {
        if (o != TDM_HASH_FOUND) bc.add(o);
        if (COPIES) atomic_add_v(&s[at].v, uv[u]);
        else hs<K, V>::put_run(s, at, o, picked ? picked[(size_t)uv[u]] : uv[u], dup, vkind);
      }
    }
  }
  bc.flush(cnt);
}

/* ---- host side ---------------------------------------------------------------- */

/* The design's part of an insert's scratch (tdm__hg_scratch::design);
 * empty for SUM, which needs no sort. */
struct v2_scratch {
  void *hk[2];        /* the chunk's sort words (sort_word) and the sort's alternate */
  void *hv[2];        /* its values and the sort's alternate */
  void *temp;         /* CUB's temporary storage, for the sort, then the reduce */
  size_t temp_bytes;
  uint64_t *runs;     /* distinct keys in the chunk (written by the reduce) */
};
static_assert(sizeof(v2_scratch) <= sizeof(tdm__hg_scratch::design), "scratch fits");

/* Keys per chunk of a v2 insert: bounds the scratch (16 + 2 * value-size
 * bytes a key) at 8 GiB; a bigger batch goes in consecutive chunks. */
#define V2_CHUNK ((size_t)1 << 28)

/* CUB's temporary storage for a v2 chunk of m keys: the sort's, then the
 * reduce's, in one block (they run one after the other). The null pointers
 * only size the call. */
template <typename K, typename V>
static void v2_temp_bytes(tdm_hash *h, size_t m, size_t *bytes, cudaError_t *err) {
  typedef typename sort_word<K>::W W;
  cub::DoubleBuffer<W> kb(NULL, NULL);
  cub::DoubleBuffer<V> vb(NULL, NULL);
  size_t sort_bytes = 0, reduce_bytes = 0;
  cudaStream_t st = tdm__stream(h->ctx);
  *err = tdm__cub_sort<W, V>(NULL, sort_bytes, kb, vb, m, 0, (int)sizeof(W) * 8, 0, st);
  if (*err == cudaSuccess)
    *err = reduce_runs<W, V>(NULL, reduce_bytes, NULL, NULL, NULL, NULL, NULL, (int)h->dup, h->vkind, m, st);
  if (reduce_bytes > sort_bytes) sort_bytes = reduce_bytes;
  if (sort_bytes > *bytes) *bytes = sort_bytes;
}

template <typename K, typename V>
static tdm_status scratch_take(tdm_hash *h, tdm__gpu_scope &sc, size_t n, size_t final_cap, tdm__hg_scratch *x) {
  typedef typename sort_word<K>::W W;
  tdm_status st;
  cudaError_t err = cudaSuccess;
  (void)final_cap;
  memset(x, 0, sizeof *x);
  v2_scratch *vx = new (x->design) v2_scratch();
  x->chunk = n < V2_CHUNK ? n : V2_CHUNK;
  if (h->dup == TDM__DUP_SUM) return TDM_OK; /* claimed copy by copy, no scratch */
  /* The last chunk is smaller: size CUB's storage for both lengths. */
  v2_temp_bytes<K, V>(h, x->chunk, &vx->temp_bytes, &err);
  if (err == cudaSuccess && n % x->chunk) v2_temp_bytes<K, V>(h, n % x->chunk, &vx->temp_bytes, &err);
  TDM_CUDA_TRY(err, (void)0);
  if ((st = sc.alloc(x->chunk * sizeof(W), &vx->hk[0])) != TDM_OK ||
      (st = sc.alloc(x->chunk * sizeof(W), &vx->hk[1])) != TDM_OK ||
      (st = sc.alloc(x->chunk * h->vs, &vx->hv[0])) != TDM_OK ||
      (st = sc.alloc(x->chunk * h->vs, &vx->hv[1])) != TDM_OK ||
      (st = sc.alloc(vx->temp_bytes ? vx->temp_bytes : 1, &vx->temp)) != TDM_OK ||
      (st = sc.alloc(sizeof(uint64_t), &vx->runs)) != TDM_OK)
    return st;
  return TDM_OK;
}

/* The v2 insert of one chunk of n keys (steps 1-4 at the top of the file;
 * SUM: step 4 alone, copy by copy). Claim grids are one resident wave
 * (tdm__grid_resident), so each block's counter flush serves many keys. */
template <typename K, typename V>
static tdm_status launch_insert(tdm_hash *h, const void *keys, const void *vals, size_t n, tdm__hg_scratch *xs,
                                unsigned long long *cnt) {
  typedef typename sort_word<K>::W W;
  const v2_scratch *x = std::launder(reinterpret_cast<const v2_scratch *>(xs->design));
  const K *k = (const K *)keys;
  const V *v = (const V *)vals;
  typedef typename hs<K, V>::S S;
  cudaStream_t st = tdm__stream(h->ctx);
  const unsigned claim_grid = tdm__grid_resident(h->ctx, n * (64u / sizeof(S)));
  tdm_status s;
  if (h->dup == TDM__DUP_SUM) {
    claim_runs_kernel<K, V, true><<<claim_grid, TDM_GPU_BLOCK, 0, st>>>(
        (S *)tdm__hg(h)->slots, h->log2cap, (const W *)k, v, NULL, NULL, n, (int)h->dup, h->vkind, cnt);
    return TDM_OK;
  }
  cub::DoubleBuffer<W> kb((W *)x->hk[0], (W *)x->hk[1]);
  cub::DoubleBuffer<V> vb((V *)x->hv[0], (V *)x->hv[1]);
  size_t temp_bytes = x->temp_bytes;
  hash_pairs_kernel<K, V><<<tdm__grid(n), TDM_GPU_BLOCK, 0, st>>>(k, v, kb.Current(), vb.Current(), n);
  if ((s = tdm__launch_check("tdm_hash_insert (hash)")) != TDM_OK) return s;
  TDM_CUDA_TRY((tdm__cub_sort<W, V>(x->temp, temp_bytes, kb, vb, n, 0, (int)sizeof(W) * 8, 0, st)), (void)0);
  temp_bytes = x->temp_bytes;
  /* The reduce writes into the sort's alternates, free now; the sorted
   * values stay in Current() for a KEEP_FIRST / KEEP_LAST claim to pick. */
  TDM_CUDA_TRY((reduce_runs<W, V>(x->temp, temp_bytes, kb.Current(), kb.Alternate(), vb.Current(), vb.Alternate(),
                                  x->runs, (int)h->dup, h->vkind, n, st)),
               (void)0);
  const V *picked = tdm__dup_by_position((int)h->dup) ? vb.Current() : NULL;
  claim_runs_kernel<K, V, false><<<claim_grid, TDM_GPU_BLOCK, 0, st>>>((S *)tdm__hg(h)->slots, h->log2cap,
                                                                         kb.Alternate(), vb.Alternate(), picked,
                                                                         x->runs, 0, (int)h->dup, h->vkind, cnt);
  return TDM_OK;
}


template <typename K, typename V>
static void launch_find(const tdm_hash *h, const void *keys, void *vo, uint8_t *fo, size_t n) {
  typedef typename hs<K, V>::S S;
  size_t lanes = 64u / sizeof(S);
  find_group_kernel<K, V><<<tdm__grid(n * lanes), TDM_GPU_BLOCK, 0, tdm__stream(h->ctx)>>>(
      (const S *)tdm__hg(h)->slots, h->log2cap, (const K *)keys, (V *)vo, fo, n);
}

/* One width's launch functions, instantiated by name below. */
template <typename K, typename V>
static const tdm__hg_design_fns v2_fns = {
    .scratch = scratch_take<K, V>,
    .insert = launch_insert<K, V>,
    .find = launch_find<K, V>,
};
/* In the order of tdm__hash_inst. */
static const tdm__hg_design_fns *const v2_widths[4] = {
    &v2_fns<uint32_t, uint32_t>,
    &v2_fns<uint32_t, uint64_t>,
    &v2_fns<uint64_t, uint32_t>,
    &v2_fns<uint64_t, uint64_t>,
};

static tdm_status create(tdm_hash *h) { return tdm__hg_create(h, v2_widths); }

const tdm__hash_ops tdm__hash_cuda_v2_ops = TDM__HG_OPS(create);
