/*
 * hash_legacy.cu: the legacy design's hash insert and find.
 *
 * Find: one thread per key walks the probe (tdm__hs_lookup).
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
 */
#include <string.h>

#include <new>

#include "hash_gpu.cuh"

/* pos[] entries: slot index, with this bit set when the key claimed the slot. */
#define NEW_BIT ((uint64_t)1 << 63)
/* Keys per kernel chunk, so batch indices fit 31 bits. */
#define CHUNK ((size_t)1 << 31)

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

/* Pass 1 of an insert: find or claim every key's slot. SUM adds right
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

/* ---- host side ---------------------------------------------------------------- */

/* The design's part of an insert's scratch (tdm__hg_scratch::design). */
struct legacy_scratch {
  uint64_t *pos; /* each key's slot (not for SUM) */
  uint32_t *w;   /* the election word of every slot of the final table (KEEP_FIRST / KEEP_LAST) */
};
static_assert(sizeof(legacy_scratch) <= sizeof(tdm__hg_scratch::design), "scratch fits");

template <typename K, typename V>
static tdm_status scratch_take(tdm_hash *h, tdm__gpu_scope &sc, size_t n, size_t final_cap, tdm__hg_scratch *x) {
  tdm_status st;
  memset(x, 0, sizeof *x);
  legacy_scratch *ls = new (x->design) legacy_scratch();
  x->chunk = n < CHUNK ? n : CHUNK;
  if ((h->dup != TDM__DUP_SUM && (st = sc.alloc(x->chunk * sizeof(uint64_t), &ls->pos)) != TDM_OK) ||
      ((h->dup == TDM__DUP_KEEP_FIRST || h->dup == TDM__DUP_KEEP_LAST) &&
       (st = sc.alloc((final_cap + 2u) * sizeof(uint32_t), &ls->w)) != TDM_OK))
    return st;
  return TDM_OK;
}

/* Inserts one chunk of n keys (the caller checks for launch errors). */
template <typename K, typename V>
static tdm_status launch_insert(tdm_hash *h, const void *keys, const void *vals, size_t n, tdm__hg_scratch *x,
                                unsigned long long *cnt) {
  const legacy_scratch *ls = std::launder(reinterpret_cast<const legacy_scratch *>(x->design));
  cudaStream_t st = tdm__stream(h->ctx);
  unsigned g = tdm__grid(n);
  typename hs<K, V>::S *s = (typename hs<K, V>::S *)tdm__hg(h)->slots;
  const K *k = (const K *)keys;
  const V *v = (const V *)vals;
  uint64_t *pos = ls->pos;
  uint32_t *w = ls->w;
  int dup = (int)h->dup;
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
  return TDM_OK;
}

template <typename K, typename V>
static void launch_find(const tdm_hash *h, const void *keys, void *vo, uint8_t *fo, size_t n) {
  typedef typename hs<K, V>::S S;
  find_kernel<K, V><<<tdm__grid(n), TDM_GPU_BLOCK, 0, tdm__stream(h->ctx)>>>((const S *)tdm__hg(h)->slots, h->log2cap,
                                                                             (const K *)keys, (V *)vo, fo, n);
}

/* One width's launch functions, instantiated by name below. */
template <typename K, typename V>
static const tdm__hg_design_fns legacy_fns = {
    .scratch = scratch_take<K, V>,
    .insert = launch_insert<K, V>,
    .find = launch_find<K, V>,
};
/* In the order of tdm__hash_inst. */
static const tdm__hg_design_fns *const legacy_widths[4] = {
    &legacy_fns<uint32_t, uint32_t>,
    &legacy_fns<uint32_t, uint64_t>,
    &legacy_fns<uint64_t, uint32_t>,
    &legacy_fns<uint64_t, uint64_t>,
};

static tdm_status create(tdm_hash *h) { return tdm__hg_create(h, legacy_widths); }

const tdm__hash_ops tdm__hash_cuda_legacy_ops = TDM__HG_OPS(create);
