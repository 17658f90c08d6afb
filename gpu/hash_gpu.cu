/*
 * hash_gpu.cu: the CUDA backend of the hash table.
 *
 * The table lives in device memory in the layout of include/tandem/detail/hash_layout.h; the
 * kernels are thin loops around the same probe functions the CPU runs. Two
 * designs (TANDEM_GPU_DESIGN, gpu_common.cuh); results are identical to the
 * CPU's under both, for every duplicate policy.
 *
 * Insert, legacy: one thread per key. Claims are a CAS on the slot's key
 * word; values follow the duplicate policy deterministically:
 *  - SUM: atomicAdd into the value (a free slot's value is 0, the invariant),
 *    in the claim pass itself.
 *  - MIN / MAX: after the claim pass, each claimer writes its own value, then
 *    the other copies fold in with a CAS loop (the result is order-free).
 *  - KEEP_LAST: an election per slot in a scratch word: atomicMax(i + 1), and
 *    the batch index that wins writes its value.
 *  - KEEP_FIRST: the same on the slots claimed in this batch only (the
 *    claimer marks them), with the lowest index winning; keys that were
 *    present before the batch keep their value.
 * Batches are cut into chunks of 2^31 keys so indices fit the 32-bit scratch
 * words; consecutive chunks are consecutive inserts, so the results are the
 * same.
 *
 * Insert, v2: sort, reduce, one claim per distinct key.
 *  1. hash_pairs_kernel writes each key's hash (tdm__hash_mix) and value;
 *  2. CUB radix sort of the (hash, value) pairs on all 64 bits;
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
 *  - Homes are the hash's top bits, so sorted hashes are sorted homes: the
 *    claims of neighbouring lane groups walk neighbouring buckets and the
 *    table is written nearly in order instead of at random.
 *  - The claim probes like the v2 find: a tile of 64 / slot-size lanes reads
 *    one 64-byte bucket together, three tile ballots give the bucket's
 *    match / empty / tombstone masks and tdm__hs_claim_step decides; one
 *    lane swaps the key in (tdm__hs_claim_cas_outcome; a lost swap probes
 *    again).
 *  - Scratch is batch-sized only: the hashes and values and their sort
 *    alternates, 16 + 2 * value-size bytes per key, plus CUB's temporary
 *    storage, sized for the largest chunk and taken before the table
 *    changes. Chunks of at most 2^28 keys (8 GiB of scratch for 64-bit
 *    values) bound it; chunks are consecutive inserts, as in legacy.
 *  The cost is the sort (8 passes over 12 or 16 bytes per key); SUM alone
 *  could do without it (atomic adds are order-free), but one path for every
 *  policy keeps the results easy to trust. Which design is faster is for
 *  bench/device-check.sh on a GPU to say.
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
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#include <cooperative_groups.h>
#include <thrust/iterator/counting_iterator.h>

#include "gpu_common.cuh"
#include "sort_cub.cuh"

namespace cg = cooperative_groups;

/* Per-width access to the shared functions, so the kernels can be templates. */
template <typename K, typename V> struct hs;
#define HS_TRAITS(KT, VT, SFX)                                                                                 \
  template <> struct hs<KT, VT> {                                                                              \
    typedef tdm__hslot_##SFX S;                                                                                 \
    static __device__ __forceinline__ uint64_t start(KT k, unsigned l) { return tdm__hs_start_##SFX(k, l); }    \
    static __device__ __forceinline__ uint64_t home(KT k, unsigned l) { return tdm__hs_home_##SFX(k, l); }      \
    static __device__ __forceinline__ uint64_t lookup(const S *s, unsigned l, KT k, uint64_t st, int at) {     \
      return tdm__hs_lookup_##SFX(s, l, k, st, at);                                                             \
    }                                                                                                          \
    static __device__ __forceinline__ uint64_t claim(S *s, unsigned l, KT k, uint64_t st, int *o) {            \
      return tdm__hs_claim_##SFX(s, l, k, st, 1, TDM_HASH_NONE, o);                                             \
    }                                                                                                          \
    static __device__ __forceinline__ int erase(S *s, unsigned l, KT k, uint64_t st) {                         \
      return tdm__hs_erase_##SFX(s, l, k, st, 1);                                                               \
    }                                                                                                          \
    static __device__ __forceinline__ void lane_bits(const S *s, uint64_t p, KT k, unsigned lane, unsigned *eq,  \
                                                     unsigned *em) {                                           \
      unsigned tm;                                                                                             \
      tdm__hs_lane_bits_##SFX(s, p, k, lane, 0, eq, em, &tm);                                                  \
    }                                                                                                          \
    static __device__ __forceinline__ int lookup_step(uint64_t p, unsigned eq, unsigned em, uint64_t *at) {     \
      return tdm__hs_lookup_step_##SFX(p, eq, em, at);                                                         \
    }                                                                                                          \
    static __device__ __forceinline__ void claim_bits(const S *s, uint64_t p, KT k, unsigned lane, unsigned *eq,  \
                                                      unsigned *em, unsigned *tm) {                            \
      tdm__hs_lane_bits_##SFX(s, p, k, lane, 1, eq, em, tm);                                                   \
    }                                                                                                          \
    static __device__ __forceinline__ int claim_step(uint64_t p, unsigned eq, unsigned em, unsigned tm,         \
                                                     uint64_t *tomb, uint64_t *at, KT *expect) {               \
      return tdm__hs_claim_step_##SFX(p, eq, em, tm, tomb, at, expect);                                        \
    }                                                                                                          \
    static __device__ __forceinline__ int claim_last(uint64_t tomb, uint64_t *at, KT *expect) {                \
      return tdm__hs_claim_last_##SFX(tomb, at, expect);                                                       \
    }                                                                                                          \
    static __device__ __forceinline__ int cas_outcome(KT prev, KT expect, KT k) {                              \
      return tdm__hs_claim_cas_outcome_##SFX(prev, expect, k);                                                 \
    }                                                                                                          \
    static __device__ __forceinline__ void put_run(S *s, uint64_t at, int o, VT r, int dup, int vk) {          \
      tdm__hs_put_run_##SFX(s, at, o, r, dup, vk);                                                             \
    }                                                                                                          \
    static __device__ __forceinline__ VT combine(VT a, VT b, int dup, int vk) {                                \
      return tdm__hs_combine_##SFX(a, b, dup, vk);                                                              \
    }                                                                                                          \
  };
HS_TRAITS(uint32_t, uint32_t, k32v32)
HS_TRAITS(uint32_t, uint64_t, k32v64)
HS_TRAITS(uint64_t, uint32_t, k64v32)
HS_TRAITS(uint64_t, uint64_t, k64v64)
#undef HS_TRAITS

static __device__ __forceinline__ void atomic_add_v(uint32_t *p, uint32_t v) { atomicAdd((unsigned int *)p, v); }
static __device__ __forceinline__ void atomic_add_v(uint64_t *p, uint64_t v) {
  atomicAdd((unsigned long long *)p, (unsigned long long)v);
}
static __device__ __forceinline__ uint32_t cas_v(uint32_t *p, uint32_t e, uint32_t d) { return tdm__hash_cas32(p, e, d); }
static __device__ __forceinline__ uint64_t cas_v(uint64_t *p, uint64_t e, uint64_t d) { return tdm__hash_cas64(p, e, d); }
static __device__ __forceinline__ uint32_t load_v(const uint32_t *p) { return tdm__hash_load32(p); }
static __device__ __forceinline__ uint64_t load_v(const uint64_t *p) { return tdm__hash_load64(p); }

/* pos[] entries: slot index, with this bit set when the key claimed the slot. */
#define NEW_BIT ((uint64_t)1 << 63)
/* Counters: [0..3] claim outcomes, [4..7] erase outcomes, as on the CPU. */
enum { NCOUNT = 8 };
/* Keys per kernel chunk, so batch indices fit 31 bits. */
#define CHUNK ((size_t)1 << 31)

/* Block-local counters, flushed with one global atomic each. */
struct block_counts {
  unsigned long long *c;
  __device__ void init(unsigned long long *sh) {
    c = sh;
    if (threadIdx.x < NCOUNT) c[threadIdx.x] = 0;
    __syncthreads();
  }
  __device__ void add(int i) { atomicAdd(&c[i], 1ull); }
  __device__ void flush(unsigned long long *global) {
    __syncthreads();
    if (threadIdx.x < NCOUNT && c[threadIdx.x]) atomicAdd(&global[threadIdx.x], c[threadIdx.x]);
  }
};

template <typename K, typename V>
__global__ void find_kernel(const typename hs<K, V>::S *s, unsigned l, const K *keys, V *vo, uint8_t *fo, size_t n) {
  TDM_GRID_STRIDE(i, n) {
    K key = keys[i];
    uint64_t pos = hs<K, V>::lookup(s, l, key, hs<K, V>::start(key, l), 0);
    int hit = pos != TDM_HASH_NONE;
    if (vo) vo[i] = hit ? s[pos].v : (V)0;
    if (fo) fo[i] = (uint8_t)hit;
  }
}

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

/* Legacy pass 1 of an insert: find or claim every key's slot. SUM adds right
 * here; the other policies record the slot (and whether this thread claimed
 * it). */
template <typename K, typename V>
__global__ void claim_kernel(typename hs<K, V>::S *s, unsigned l, const K *keys, const V *vals, size_t n, int dup,
                             uint64_t *pos_out, unsigned long long *cnt) {
  __shared__ unsigned long long sh[NCOUNT];
  block_counts bc;
  bc.init(sh);
  TDM_GRID_STRIDE(i, n) {
    K key = keys[i];
    int o;
    uint64_t pos = hs<K, V>::claim(s, l, key, hs<K, V>::start(key, l), &o);
    if (pos == TDM_HASH_NONE) { /* no free slot: cannot happen below the load limit */
      bc.add(TDM_HASH_FOUND);
      if (pos_out) pos_out[i] = TDM_HASH_NONE;
      continue;
    }
    if (o != TDM_HASH_FOUND) bc.add(o);
    if (dup == TDM__DUP_SUM) atomic_add_v(&s[pos].v, vals[i]);
    else pos_out[i] = pos | (o != TDM_HASH_FOUND ? NEW_BIT : 0);
  }
  bc.flush(cnt);
}

/* MIN / MAX, pass 2: each claimer stores its own value into its new slot. */
template <typename K, typename V>
__global__ void minmax_init_kernel(typename hs<K, V>::S *s, const V *vals, const uint64_t *pos, size_t n) {
  TDM_GRID_STRIDE(i, n) {
    uint64_t p = pos[i];
    if (p != TDM_HASH_NONE && (p & NEW_BIT)) s[p & ~NEW_BIT].v = vals[i];
  }
}

/* MIN / MAX, pass 3: every other copy folds in with a CAS loop. */
template <typename K, typename V>
__global__ void minmax_fold_kernel(typename hs<K, V>::S *s, const V *vals, const uint64_t *pos, size_t n, int dup,
                                   int vkind) {
  TDM_GRID_STRIDE(i, n) {
    uint64_t p = pos[i];
    if (p == TDM_HASH_NONE || (p & NEW_BIT)) continue;
    V in = vals[i];
    V *dst = &s[p].v, old = load_v(dst);
    for (;;) {
      V want = hs<K, V>::combine(old, in, dup, vkind), seen;
      if (want == old) break;
      seen = cas_v(dst, old, want);
      if (seen == old) break;
      old = seen;
    }
  }
}

/* Election, pass 2: clear the scratch word of every touched slot. The copies
 * of one key all clear the same word: an atomic exchange, since plain
 * stores of even the same value from several threads are a data race in
 * CUDA's memory model. */
__global__ void elect_clear_kernel(uint32_t *w, const uint64_t *pos, size_t n) {
  TDM_GRID_STRIDE(i, n) {
    uint64_t p = pos[i];
    if (p != TDM_HASH_NONE) (void)atomicExch((unsigned int *)&w[p & ~NEW_BIT], 0u);
  }
}

/* KEEP_FIRST, pass 3: the claimer marks its slot as new in this batch. */
__global__ void elect_mark_kernel(uint32_t *w, const uint64_t *pos, size_t n) {
  TDM_GRID_STRIDE(i, n) {
    uint64_t p = pos[i];
    if (p != TDM_HASH_NONE && (p & NEW_BIT)) w[p & ~NEW_BIT] = 1;
  }
}

/* Ballot value of batch index i: the largest one wins. KEEP_LAST: i + 1 (the
 * highest index); KEEP_FIRST: 2^32 - 1 - i (the lowest), always >= 2 so it
 * beats the "new" mark 1 and never equals the "old slot" 0. */
static __device__ __forceinline__ uint32_t ballot(size_t i, int first) {
  return first ? 0xffffffffu - (uint32_t)i : (uint32_t)i + 1u;
}

/* Election, pass 4: vote. KEEP_FIRST votes only on slots marked new. */
__global__ void elect_vote_kernel(uint32_t *w, const uint64_t *pos, size_t n, int first) {
  TDM_GRID_STRIDE(i, n) {
    uint64_t p = pos[i];
    if (p == TDM_HASH_NONE) continue;
    p &= ~NEW_BIT;
    if (first && *(volatile uint32_t *)&w[p] == 0) continue; /* present before this batch: keeps its value */
    atomicMax(&w[p], ballot(i, first));
  }
}

/* Election, pass 5: the winner writes its value. */
template <typename K, typename V>
__global__ void elect_write_kernel(typename hs<K, V>::S *s, const V *vals, const uint32_t *w, const uint64_t *pos,
                                   size_t n, int first) {
  TDM_GRID_STRIDE(i, n) {
    uint64_t p = pos[i];
    if (p == TDM_HASH_NONE) continue;
    p &= ~NEW_BIT;
    if (w[p] == ballot(i, first)) s[p].v = vals[i];
  }
}

/* ---- the v2 insert (see the top of the file) ---------------------------------- */

/* Step 1: the sort's input, each key's hash and its value. */
template <typename K, typename V>
__global__ void hash_pairs_kernel(const K *keys, const V *vals, uint64_t *hk, V *hv, size_t n) {
  TDM_GRID_STRIDE(i, n) {
    hk[i] = tdm__hash_mix((uint64_t)keys[i]);
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
template <typename V>
static cudaError_t reduce_runs(void *temp, size_t &temp_bytes, const uint64_t *k, uint64_t *ku, const V *v, V *vu,
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
 * key: uh[u] is the key's hash, uv[u] its run's value, *d_runs the number of
 * distinct keys; with picked (KEEP_FIRST / KEEP_LAST) uv[u] is a position
 * in picked, the sorted values, and the run's value is picked[uv[u]]. The
 * group reads the key's probe a bucket at a time, as the
 * v2 find does, with three ballots (match, empty, tombstone) per bucket;
 * tdm__hs_claim_step decides, lane 0 swaps the key into the chosen slot and
 * the group learns the outcome by a shuffle. A marker key (side slot) needs
 * no probe: lane 0 claims its side slot. Lane 0 then stores the value
 * (tdm__hs_put_run) and counts the outcome as legacy's claim pass does. */
template <typename K, typename V>
__global__ void __launch_bounds__(TDM_GPU_BLOCK)
    claim_runs_kernel(typename hs<K, V>::S *s, unsigned l, const uint64_t *uh, const V *uv, const V *picked,
                      const uint64_t *d_runs, int dup, int vkind, unsigned long long *cnt) {
  constexpr unsigned G = 64u / sizeof(typename hs<K, V>::S);
  static_assert(32u % G == 0 && TDM_GPU_BLOCK % 32u == 0, "a lane group must lie within one warp");
  __shared__ unsigned long long sh[NCOUNT];
  block_counts bc;
  bc.init(sh);
  cg::thread_block_tile<G> tile = cg::tiled_partition<G>(cg::this_thread_block());
  const unsigned lane = tile.thread_rank();
  const uint64_t cap = (uint64_t)1 << l, mask = cap - 1u, runs = *d_runs;
  const size_t groups = (size_t)gridDim.x * blockDim.x / G;
  for (size_t u = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / G; u < runs; u += groups) {
    const uint64_t hash = uh[u];
    const K key = (K)tdm__hash_unmix(hash);
    uint64_t at = TDM_HASH_NONE;
    int o = TDM_HASH_FOUND;
    if (sizeof(K) == 4 ? tdm__hash_side32((uint32_t)key) : tdm__hash_side64((uint64_t)key)) {
      if (lane == 0) at = hs<K, V>::claim(s, l, key, hs<K, V>::start(key, l), &o);
    } else {
      const uint64_t home = tdm__hash_home(hash, l, G); /* = tdm__hs_start(key) */
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
        hs<K, V>::put_run(s, at, o, picked ? picked[(size_t)uv[u]] : uv[u], dup, vkind);
      }
    }
  }
  bc.flush(cnt);
}

template <typename K, typename V>
__global__ void erase_kernel(typename hs<K, V>::S *s, unsigned l, const K *keys, size_t n, unsigned long long *cnt) {
  __shared__ unsigned long long sh[NCOUNT];
  block_counts bc;
  bc.init(sh);
  TDM_GRID_STRIDE(i, n) {
    K key = keys[i];
    bc.add(4 + hs<K, V>::erase(s, l, key, hs<K, V>::start(key, l)));
  }
  bc.flush(cnt);
}

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
 * each tile, an exclusive scan of the tile counts (CUB), and a write pass in
 * which each thread takes EXPORT_ITEMS consecutive slots of its tile and a
 * block scan gives its first output position. */
#define EXPORT_ITEMS 8u
#define EXPORT_TILE ((size_t)TDM_GPU_BLOCK * EXPORT_ITEMS)

template <typename K>
static __device__ __forceinline__ int live_key(K k) {
  const K tomb = (K)(sizeof(K) == 4 ? (uint64_t)TDM_HASH_TOMB32 : TDM_HASH_TOMB64);
  return k != (K)TDM_HASH_EMPTY && k != tomb;
}

/* Live slots of this thread's EXPORT_ITEMS consecutive slots of tile t. */
template <typename K, typename V>
static __device__ __forceinline__ unsigned export_thread_count(const typename hs<K, V>::S *s, size_t cap, size_t t) {
  size_t i0 = t * EXPORT_TILE + (size_t)threadIdx.x * EXPORT_ITEMS;
  unsigned c = 0;
  for (unsigned j = 0; j < EXPORT_ITEMS; j++)
    if (i0 + j < cap) c += (unsigned)live_key<K>(s[i0 + j].k);
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
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    size_t at = 0;
    if (s[cap].k) {
      ko[at] = (K)TDM_HASH_EMPTY;
      vo[at++] = s[cap].v;
    }
    if (s[cap + 1].k) {
      ko[at] = (K)(sizeof(K) == 4 ? (uint64_t)TDM_HASH_TOMB32 : TDM_HASH_TOMB64);
      vo[at] = s[cap + 1].v;
    }
  }
  for (size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    unsigned before;
    size_t i0 = t * EXPORT_TILE + (size_t)threadIdx.x * EXPORT_ITEMS, at;
    scan(tmp).ExclusiveSum(export_thread_count<K, V>(s, cap, t), before);
    at = side + (size_t)tile_off[t] + before;
    for (unsigned j = 0; j < EXPORT_ITEMS; j++) {
      size_t i = i0 + j;
      if (i < cap && live_key<K>(s[i].k)) {
        ko[at] = s[i].k;
        vo[at] = s[i].v;
        at++;
      }
    }
    __syncthreads(); /* tmp is reused by the next tile */
  }
}

/* ---- host side ---------------------------------------------------------------- */

/* A CUDA table's private state (at h->be). */
struct hash_gpu {
  void *slots;                 /* cap + 2 slots in device memory */
  unsigned long long *counts;  /* NCOUNT insert outcome counts not yet folded, device memory */
};

static void *&d_slots(const tdm_hash *h) { return ((hash_gpu *)h->be)->slots; }
static unsigned long long *&d_counts(const tdm_hash *h) { return ((hash_gpu *)h->be)->counts; }

/* Runs F<K, V> for the table's widths (order of tdm__hash_inst). */
#define DISPATCH(h, F, ...)                                        \
  do {                                                             \
    switch (tdm__hash_inst((h)->ks, (h)->vs)) {                    \
    case 0: F<uint32_t, uint32_t>(__VA_ARGS__); break;             \
    case 1: F<uint32_t, uint64_t>(__VA_ARGS__); break;             \
    case 2: F<uint64_t, uint32_t>(__VA_ARGS__); break;             \
    default: F<uint64_t, uint64_t>(__VA_ARGS__); break;            \
    }                                                              \
  } while (0)

static tdm_status hg_create(tdm_hash *h) {
  tdm_ctx *ctx = h->ctx;
  size_t bytes = tdm__hash_table_bytes(h, h->log2cap);
  tdm__gpu_scope sc(ctx);
  void *slots;
  unsigned long long *counts;
  tdm_status st;
  if ((st = sc.enter()) != TDM_OK) return st;
  if ((st = sc.alloc(bytes, &slots)) != TDM_OK ||
      (st = sc.alloc(NCOUNT * sizeof(unsigned long long), &counts)) != TDM_OK)
    return st;
  TDM_CUDA_TRY(cudaMemsetAsync(slots, 0, bytes, tdm__stream(ctx)), (void)0);
  TDM_CUDA_TRY(cudaMemsetAsync(counts, 0, NCOUNT * sizeof(unsigned long long), tdm__stream(ctx)), (void)0);
  if ((st = tdm__gpu_sync(ctx, "tdm_hash_create")) != TDM_OK) return st;
  sc.keep(slots);
  sc.keep(counts);
  d_slots(h) = slots;
  d_counts(h) = counts;
  return TDM_OK;
}

static void hg_destroy(tdm_hash *h) {
  tdm__gpu_device dev;
  if (!d_slots(h)) return;
  if (dev.enter(h->ctx) == TDM_OK) {
    tdm__gpu_free(h->ctx, d_slots(h));
    tdm__gpu_free(h->ctx, d_counts(h));
    (void)cudaStreamSynchronize(tdm__stream(h->ctx));
    (void)cudaGetLastError();
  }
  d_slots(h) = NULL;
  d_counts(h) = NULL;
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
  DISPATCH(h, launch_rehash, ctx, d_slots(h), h->cap, dst, dl);
  if ((st = tdm__launch_check("tdm_hash_insert (rehash)")) != TDM_OK) return st;
  TDM_CUDA_TRY(cudaMemcpyAsync((char *)dst + dcap * sb, (const char *)d_slots(h) + h->cap * sb, 2u * sb,
                               cudaMemcpyDeviceToDevice, tdm__stream(ctx)),
               (void)0);
  sc.keep(dst);
  tdm__gpu_free(ctx, d_slots(h));
  d_slots(h) = dst;
  h->log2cap = dl;
  h->cap = dcap;
  h->limit = (size_t)tdm__hash_limit(dl, h->max_load);
  h->tombs = 0;
  return TDM_OK;
}

/* The device scratch of one insert, all taken (insert_scratch_take) before
 * the table changes and reused by every chunk of the batch. */
struct insert_scratch {
  size_t chunk;       /* keys per launch_insert call */
  /* legacy */
  uint64_t *pos;      /* each key's slot (not for SUM) */
  uint32_t *w;        /* the election word of every slot of the final table (KEEP_FIRST / KEEP_LAST) */
  /* v2 */
  uint64_t *hk[2];    /* the chunk's hashes and the sort's alternate */
  void *hv[2];        /* its values and the sort's alternate */
  void *temp;         /* CUB's temporary storage, for the sort, then the reduce */
  size_t temp_bytes;
  uint64_t *runs;     /* distinct keys in the chunk (written by the reduce) */
};

/* Keys per chunk of a v2 insert: bounds the scratch (16 + 2 * value-size
 * bytes a key) at 8 GiB; a bigger batch goes in consecutive chunks. */
#define V2_CHUNK ((size_t)1 << 28)

/* CUB's temporary storage for a v2 chunk of m keys: the sort's, then the
 * reduce's, in one block (they run one after the other). The null pointers
 * only size the call. */
template <typename K, typename V>
static void v2_temp_bytes(tdm_hash *h, size_t m, size_t *bytes, cudaError_t *err) {
  cub::DoubleBuffer<uint64_t> kb(NULL, NULL);
  cub::DoubleBuffer<V> vb(NULL, NULL);
  size_t sort_bytes = 0, reduce_bytes = 0;
  cudaStream_t st = tdm__stream(h->ctx);
  (void)sizeof(K);
  *err = tdm__cub_sort<uint64_t, V>(NULL, sort_bytes, kb, vb, m, 0, 64, st);
  if (*err == cudaSuccess)
    *err = reduce_runs<V>(NULL, reduce_bytes, NULL, NULL, NULL, NULL, NULL, (int)h->dup, h->vkind, m, st);
  if (reduce_bytes > sort_bytes) sort_bytes = reduce_bytes;
  if (sort_bytes > *bytes) *bytes = sort_bytes;
}

/* Takes the scratch of an insert of n keys into a table that will have
 * final_cap slots. */
static tdm_status insert_scratch_take(tdm_hash *h, tdm__gpu_scope &sc, size_t n, size_t final_cap,
                                      insert_scratch *x) {
  tdm_status st;
  memset(x, 0, sizeof *x);
  if (h->ctx->gpu->design == TDM__GPU_LEGACY) {
    x->chunk = n < CHUNK ? n : CHUNK;
    if ((h->dup != TDM__DUP_SUM && (st = sc.alloc(x->chunk * sizeof(uint64_t), &x->pos)) != TDM_OK) ||
        ((h->dup == TDM__DUP_KEEP_FIRST || h->dup == TDM__DUP_KEEP_LAST) &&
         (st = sc.alloc((final_cap + 2u) * sizeof(uint32_t), &x->w)) != TDM_OK))
      return st;
    return TDM_OK;
  }
  cudaError_t err = cudaSuccess;
  x->chunk = n < V2_CHUNK ? n : V2_CHUNK;
  /* The last chunk is smaller: size CUB's storage for both lengths. */
  DISPATCH(h, v2_temp_bytes, h, x->chunk, &x->temp_bytes, &err);
  if (err == cudaSuccess && n % x->chunk) DISPATCH(h, v2_temp_bytes, h, n % x->chunk, &x->temp_bytes, &err);
  TDM_CUDA_TRY(err, (void)0);
  if ((st = sc.alloc(x->chunk * sizeof(uint64_t), &x->hk[0])) != TDM_OK ||
      (st = sc.alloc(x->chunk * sizeof(uint64_t), &x->hk[1])) != TDM_OK ||
      (st = sc.alloc(x->chunk * h->vs, &x->hv[0])) != TDM_OK || (st = sc.alloc(x->chunk * h->vs, &x->hv[1])) != TDM_OK ||
      (st = sc.alloc(x->temp_bytes ? x->temp_bytes : 1, &x->temp)) != TDM_OK ||
      (st = sc.alloc(sizeof(uint64_t), &x->runs)) != TDM_OK)
    return st;
  return TDM_OK;
}

/* The v2 insert of one chunk of n keys (steps 1-4 at the top of the file). */
template <typename K, typename V>
static tdm_status launch_insert_v2(tdm_hash *h, const K *k, const V *v, size_t n, insert_scratch *x,
                                   unsigned long long *cnt) {
  typedef typename hs<K, V>::S S;
  cudaStream_t st = tdm__stream(h->ctx);
  cub::DoubleBuffer<uint64_t> kb(x->hk[0], x->hk[1]);
  cub::DoubleBuffer<V> vb((V *)x->hv[0], (V *)x->hv[1]);
  size_t temp_bytes = x->temp_bytes;
  tdm_status s;
  hash_pairs_kernel<K, V><<<tdm__grid(n), TDM_GPU_BLOCK, 0, st>>>(k, v, kb.Current(), vb.Current(), n);
  if ((s = tdm__launch_check("tdm_hash_insert (hash)")) != TDM_OK) return s;
  TDM_CUDA_TRY((tdm__cub_sort<uint64_t, V>(x->temp, temp_bytes, kb, vb, n, 0, 64, st)), (void)0);
  temp_bytes = x->temp_bytes;
  /* The reduce writes into the sort's alternates, free now; the sorted
   * values stay in Current() for a KEEP_FIRST / KEEP_LAST claim to pick. */
  TDM_CUDA_TRY(reduce_runs<V>(x->temp, temp_bytes, kb.Current(), kb.Alternate(), vb.Current(), vb.Alternate(), x->runs,
                              (int)h->dup, h->vkind, n, st),
               (void)0);
  const V *picked = tdm__dup_by_position((int)h->dup) ? vb.Current() : NULL;
  claim_runs_kernel<K, V><<<tdm__grid(n * (64u / sizeof(S))), TDM_GPU_BLOCK, 0, st>>>(
      (S *)d_slots(h), h->log2cap, kb.Alternate(), vb.Alternate(), picked, x->runs, (int)h->dup, h->vkind, cnt);
  return TDM_OK;
}

/* Inserts one chunk of n keys (the caller checks for launch errors); *out
 * receives a failure of a CUB call. */
template <typename K, typename V>
static void launch_insert(tdm_hash *h, const void *keys, const void *vals, size_t n, insert_scratch *x,
                          unsigned long long *cnt, tdm_status *out) {
  cudaStream_t st = tdm__stream(h->ctx);
  unsigned g = tdm__grid(n);
  typename hs<K, V>::S *s = (typename hs<K, V>::S *)d_slots(h);
  const K *k = (const K *)keys;
  const V *v = (const V *)vals;
  uint64_t *pos = x->pos;
  uint32_t *w = x->w;
  int dup = (int)h->dup;
  *out = TDM_OK;
  if (h->ctx->gpu->design != TDM__GPU_LEGACY) {
    *out = launch_insert_v2<K, V>(h, k, v, n, x, cnt);
    return;
  }
  claim_kernel<K, V><<<g, TDM_GPU_BLOCK, 0, st>>>(s, h->log2cap, k, v, n, dup, pos, cnt);
  switch (h->dup) {
  case TDM__DUP_SUM: break;
  case TDM__DUP_MIN:
  case TDM__DUP_MAX:
    minmax_init_kernel<K, V><<<g, TDM_GPU_BLOCK, 0, st>>>(s, v, pos, n);
    minmax_fold_kernel<K, V><<<g, TDM_GPU_BLOCK, 0, st>>>(s, v, pos, n, dup, h->vkind);
    break;
  default: {
    int first = h->dup == TDM__DUP_KEEP_FIRST;
    elect_clear_kernel<<<g, TDM_GPU_BLOCK, 0, st>>>(w, pos, n);
    if (first) elect_mark_kernel<<<g, TDM_GPU_BLOCK, 0, st>>>(w, pos, n);
    elect_vote_kernel<<<g, TDM_GPU_BLOCK, 0, st>>>(w, pos, n, first);
    elect_write_kernel<K, V><<<g, TDM_GPU_BLOCK, 0, st>>>(s, v, w, pos, n, first);
    break;
  }
  }
}

/* Queues the insert and returns without waiting: the outcome counts go to the
 * table's count buffer, and h->pending grows by n (the public layer folds
 * them, at once unless the insert may stay queued). Staged host arrays are
 * released stream-ordered, so the scope may end before the kernels ran. */
static tdm_status hg_insert(tdm_hash *h, const void *keys, const void *values, size_t n, unsigned grow_log2) {
  tdm_ctx *ctx = h->ctx;
  tdm__gpu_scope sc(ctx);
  tdm__dev_array dk, dv;
  insert_scratch x;
  size_t final_cap = grow_log2 ? (size_t)1 << grow_log2 : h->cap, off;
  tdm_status st;

  if (n == 0) return TDM_OK; /* the public layer never asks; chunk sizes below divide by n's chunk */
  if ((st = sc.enter()) != TDM_OK) return st;
  /* Everything that can run out of memory, before the table changes. */
  if ((st = sc.in(keys, n * h->ks, &dk)) != TDM_OK || (st = sc.in(values, n * h->vs, &dv)) != TDM_OK ||
      (st = insert_scratch_take(h, sc, n, final_cap, &x)) != TDM_OK)
    return st;
  if (grow_log2 && (st = rehash(h, grow_log2)) != TDM_OK) return st;
  /* Before the first launch: pending must bound whatever reaches the count
   * buffer, even when a later launch fails. */
  h->pending += n;
  for (off = 0; off < n; off += x.chunk) {
    size_t m = n - off < x.chunk ? n - off : x.chunk;
    DISPATCH(h, launch_insert, h, (const char *)dk.d + off * h->ks, (const char *)dv.d + off * h->vs, m, &x,
             d_counts(h), &st);
    if (st != TDM_OK || (st = tdm__launch_check("tdm_hash_insert")) != TDM_OK) return st;
  }
  return TDM_OK;
}

/* Reads and resets the table's count buffer (one wait) and folds it into the
 * common counters. Index TDM_HASH_FOUND counts the keys that found no free
 * slot (the claim kernels of both designs count found keys nowhere else). */
static tdm_status hg_sync_counts(tdm_hash *h, const char *fn, size_t *no_slot) {
  tdm_ctx *ctx = h->ctx;
  tdm__gpu_device dev;
  unsigned long long hc[NCOUNT];
  tdm_status st;
  if ((st = dev.enter(ctx)) != TDM_OK) return st;
  TDM_CUDA_TRY(cudaMemcpyAsync(hc, d_counts(h), sizeof hc, cudaMemcpyDeviceToHost, tdm__stream(ctx)), (void)0);
  TDM_CUDA_TRY(cudaMemsetAsync(d_counts(h), 0, sizeof hc, tdm__stream(ctx)), (void)0);
  if ((st = tdm__gpu_sync(ctx, fn)) != TDM_OK) return st;
  h->size += (size_t)(hc[TDM_HASH_NEW_EMPTY] + hc[TDM_HASH_NEW_TOMB] + hc[TDM_HASH_NEW_SIDE]);
  h->side += (size_t)hc[TDM_HASH_NEW_SIDE];
  h->tombs -= (size_t)hc[TDM_HASH_NEW_TOMB];
  *no_slot = (size_t)hc[TDM_HASH_FOUND];
  return TDM_OK;
}

template <typename K, typename V>
static void launch_find(const tdm_hash *h, const void *keys, void *vo, uint8_t *fo, size_t n) {
  typedef typename hs<K, V>::S S;
  if (h->ctx->gpu->design == TDM__GPU_V2) {
    size_t lanes = 64u / sizeof(S);
    find_group_kernel<K, V><<<tdm__grid(n * lanes), TDM_GPU_BLOCK, 0, tdm__stream(h->ctx)>>>(
        (const S *)d_slots(h), h->log2cap, (const K *)keys, (V *)vo, fo, n);
    return;
  }
  find_kernel<K, V><<<tdm__grid(n), TDM_GPU_BLOCK, 0, tdm__stream(h->ctx)>>>((const S *)d_slots(h), h->log2cap,
                                                                             (const K *)keys, (V *)vo, fo, n);
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
  DISPATCH(h, launch_find, h, dk.d, dv.d, (uint8_t *)df.d, n);
  if ((st = tdm__launch_check("tdm_hash_find")) != TDM_OK) return st;
  if ((values_out && (st = tdm__gpu_out_finish(ctx, &dv)) != TDM_OK) ||
      (found_out && (st = tdm__gpu_out_finish(ctx, &df)) != TDM_OK))
    return st;
  return sc.finish("tdm_hash_find");
}

template <typename K, typename V>
static void launch_erase(tdm_hash *h, const void *keys, size_t n, unsigned long long *cnt) {
  erase_kernel<K, V><<<tdm__grid(n), TDM_GPU_BLOCK, 0, tdm__stream(h->ctx)>>>(
      (typename hs<K, V>::S *)d_slots(h), h->log2cap, (const K *)keys, n, cnt);
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
  DISPATCH(h, launch_erase, h, dk.d, n, cnt);
  if ((st = tdm__launch_check("tdm_hash_erase")) != TDM_OK) return st;
  TDM_CUDA_TRY(cudaMemcpyAsync(hc, cnt, sizeof hc, cudaMemcpyDeviceToHost, tdm__stream(ctx)), (void)0);
  if ((st = tdm__gpu_sync(ctx, "tdm_hash_erase")) != TDM_OK) return st;
  *erased = (size_t)(hc[4 + TDM_HASH_GONE_TOMB] + hc[4 + TDM_HASH_GONE_EMPTY] + hc[4 + TDM_HASH_GONE_SIDE]);
  h->size -= *erased;
  h->side -= (size_t)hc[4 + TDM_HASH_GONE_SIDE];
  h->tombs += (size_t)hc[4 + TDM_HASH_GONE_TOMB];
  return TDM_OK;
}

template <typename K, typename V>
static void launch_export_count(const tdm_hash *h, unsigned long long *tile_cnt, size_t tiles) {
  export_count_kernel<K, V><<<tdm__grid(tiles * TDM_GPU_BLOCK), TDM_GPU_BLOCK, 0, tdm__stream(h->ctx)>>>(
      (const typename hs<K, V>::S *)d_slots(h), h->cap, tile_cnt, tiles);
}

template <typename K, typename V>
static void launch_export_write(const tdm_hash *h, const unsigned long long *tile_off, size_t tiles, void *ko,
                                void *vo) {
  export_write_kernel<K, V><<<tdm__grid(tiles * TDM_GPU_BLOCK), TDM_GPU_BLOCK, 0, tdm__stream(h->ctx)>>>(
      (const typename hs<K, V>::S *)d_slots(h), h->cap, tile_off, tiles, (K *)ko, (V *)vo);
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
  DISPATCH(h, launch_export_count, h, cnt, tiles);
  if ((st = tdm__launch_check("tdm_hash_export (count)")) != TDM_OK) return st;
  TDM_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, cnt, off, tiles, tdm__stream(ctx)), (void)0);
  DISPATCH(h, launch_export_write, h, off, tiles, dk.d, dv.d);
  if ((st = tdm__launch_check("tdm_hash_export (write)")) != TDM_OK) return st;
  if ((st = tdm__gpu_out_finish(ctx, &dk)) != TDM_OK || (st = tdm__gpu_out_finish(ctx, &dv)) != TDM_OK) return st;
  return tdm__gpu_sync(ctx, "tdm_hash_export");
}

static tdm_status hg_clear(tdm_hash *h) {
  tdm_ctx *ctx = h->ctx;
  tdm__gpu_device dev;
  tdm_status st;
  if ((st = dev.enter(ctx)) != TDM_OK) return st;
  TDM_CUDA_TRY(cudaMemsetAsync(d_slots(h), 0, tdm__hash_table_bytes(h, h->log2cap), tdm__stream(ctx)), (void)0);
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
  TDM_CUDA_TRY(cudaMemcpyAsync(copy, d_slots(h), bytes, cudaMemcpyDeviceToHost, tdm__stream(ctx)),
               tdm__ctx_free(ctx, copy, bytes));
  if ((st = tdm__gpu_sync(ctx, "tdm_hash_validate")) == TDM_OK) st = tdm__hash_check_slots(h, copy);
  tdm__ctx_free(ctx, copy, bytes);
  return st;
}

/* Positional, in the order of tdm__hash_ops (backend.h). */
static tdm_status hg_view(const tdm_hash *h, tdm_hash_view *out) {
  out->slots = d_slots(h);
  out->device = h->ctx->gpu->device;
  return TDM_OK;
}

const tdm__hash_ops tdm__hash_cuda_ops = {
    sizeof(hash_gpu), hg_create, hg_destroy, hg_insert, hg_find, hg_erase, hg_export, hg_clear, hg_validate, hg_view,
    hg_sync_counts,
};
