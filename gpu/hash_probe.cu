/*
 * hash_probe.cu: the CUDA hash table's insert, find and erase: the kernels
 * that take a policy, and the policy table that fixes it per key / value
 * width.
 *
 * Policies (template parameters of the kernels):
 *  - G, the lanes per key. G = 1: one thread walks the key's probe
 *    (tdm__hs_lookup / tdm__hs_claim). G = the slots of one 32-byte sector
 *    (2 of 16 bytes, 4 of 8 bytes; sector_lanes): lane j of the group reads
 *    slot pos + j, so a step reads one sector, and the 64-byte probe bucket
 *    is read half by half in its own order, which ends a probe where the
 *    bucket scan ends it; tile ballots give the step's match / empty /
 *    tombstone masks and every lane takes the same decision
 *    (tdm__hs_lookup_step, tdm__hs_claim_step); one lane swaps a key in and
 *    the group learns the outcome by a shuffle. A find reads each slot
 *    whole, key and value by one load, and the matching lane hands the value
 *    on.
 *  - The insert strategy: claim directly. Every copy of a key claims (two
 *    copies probe the same path, so one takes the slot and the other finds
 *    it, tdm__hs_claim's argument), then the duplicate policy runs on the
 *    claimed slots:
 *     - SUM: an atomic add into the value (a free slot's value is 0, the
 *       invariant; integer SUM wraps, so the order of the adds does not
 *       matter), in the claim kernel itself;
 *     - MAX of unsigned values: an atomic max into the value, in the claim
 *       kernel itself, as SUM's add (0, a free slot's value, is below
 *       every value, so a new key needs no first store);
 *     - MIN, and MAX of signed or float values (whose order is not their
 *       bits'): each claimer stores its own value, then the other copies
 *       fold in with a CAS loop (the result is order-free);
 *     - KEEP_LAST: each claimer stores its value in its new slot, which is
 *       final when no copy of the chunk found its slot taken (every key
 *       new and one of a kind: a bulk load), and a per-chunk word says
 *       whether one did; only then do the election's passes run, in each
 *       touched slot's own value word (its old value is overwritten
 *       anyway): clear it, atomicMax(i + 1), each copy learns whether it
 *       won, the winner writes its value;
 *     - KEEP_FIRST: only keys new in this batch change: the claimer parks
 *       its batch index in the new slot's value word, the other copies find
 *       their claimer there and vote at its word of a batch-sized array,
 *       the lowest index winning, and the claimer writes the winner's
 *       value; keys that were present before the batch keep their value.
 *    Scratch is batch-sized: 8 bytes a key for the slots, 4 more for
 *    KEEP_FIRST (and a word per chunk for KEEP_LAST). (A 4-byte election
 *    word per table slot, 512 MiB at 2^27 slots, did this before.) Batches are cut into chunks of 2^31 keys so
 *    indices fit the 32-bit words; consecutive chunks are consecutive
 *    inserts, so the results are the same.
 *    The other strategy the backend once had, sorting the batch by hash and
 *    folding each key's copies before one claim per key, measured 13.95
 *    sectors a key on the cost meter against 7.69 for the direct claim
 *    (KEEP_LAST, u64 -> u64, 2^18 keys): it is gone (docs/design.md).
 *
 * A data operation's scratch table that will be exported also lists the
 * slots its claims take (tdm__hash_gpu's list): a warp writes its new
 * slots, a ballot's worth a turn, into its own stretch of the list and
 * their number at the end, no atomic, so the export reads those slots
 * rather than the whole table.
 *
 * Hot keys: copies of one key in one warp are folded in the warp before any
 * global atomic. The lanes with the same slot find each other with
 * __match_any_sync, fold their values (warp_fold_peers) and the lowest of
 * them issues the one atomic: SUM's add, MIN / MAX's CAS loop, the
 * election's clear and vote. So a key repeated through the batch takes at
 * most one atomic on its word per warp turn (32 / G keys), and the outcome
 * counters one shared atomic per outcome per warp turn (block_counts).
 * SUM goes further: a warp carries its most repeated slot's sum across its
 * turns (warp_carry), so a key that fills the batch takes about one atomic
 * per warp of the grid.
 *
 * The policy table (policies<K, V>, one per width, picked at create): sector
 * lanes for find, erase and the claim (no table instantiates G = 1 today: its
 * branches are the one-thread probe functions the CPU tests run, kept so a
 * GPU measurement can choose it by editing the table). The cost meter's
 * figures (u64 -> u64, 2^18 keys, docs/gpu-cost.md): a find_hit by sector
 * lanes reading whole slots 1.92 sectors a key (1.88 since a warp writes
 * its 32 found bytes by one store), by bucket lanes reading key
 * words 3.72 (then a load of the value), by one thread 5.73 (a load per
 * slot); the insert (KEEP_LAST, distinct new keys) with a sector-lane claim
 * 3.12 since the claimer stores its value and the election runs only for
 * a chunk with a taken slot (5.10 with it always; 5.35 before the claim
 * cleared found slots itself), with a bucket-lane claim 6.10, with a
 * one-thread claim 7.69 (both with the election always). An H100 ran the
 * always-elect insert at 0.43x the linear-probing peer (docs/results.md);
 * no GPU has run this one yet.
 */
#include <string.h>

#include <cooperative_groups.h>

#include "hash_gpu.cuh"

namespace cg = cooperative_groups;

/* pos[] entries: slot index, with this bit set when the key claimed the slot. */
#define NEW_BIT ((uint64_t)1 << 63)
/* Keys per kernel chunk, so batch indices fit 31 bits. */
#define CHUNK ((size_t)1 << 31)

/* The lanes of a warp that are the first lane of their group of G: the ones
 * that hold a key's value and count its outcome. */
template <unsigned G>
static __device__ __forceinline__ unsigned group_firsts() {
  unsigned m = 0;
  for (unsigned l = 0; l < 32u; l += G) m |= 1u << l;
  return m;
}

/* The lanes of a probe step: the slots of one 32-byte sector (2 of 16
 * bytes, 4 of 8). A probe bucket is two sectors, and a key is in the first
 * far more often than not, so reading the bucket half by half reads fewer
 * sectors than reading it whole (the top of the file has the figures). */
template <typename K, typename V>
struct sector_lanes {
  static constexpr unsigned value = 32u / sizeof(typename hs<K, V>::S);
};

/* The slot of key (a table key or a marker value), or TDM_HASH_NONE, by G
 * lanes; every lane of the group gets it. WHOLE (a find: the table does not
 * change meanwhile): each lane loads its whole slot through the read-only
 * path and *v gets the key's value (0 when absent). Else (an erase, while
 * other lanes of the grid turn slots into tombstones or empty ones): the
 * key words are read atomically and *v is left alone. */
template <typename K, typename V, unsigned G, bool WHOLE>
static __device__ __forceinline__ uint64_t probe_find(const cg::thread_block_tile<G> &tile,
                                                      const typename hs<K, V>::S *s, unsigned l, K key, V *v,
                                                      const typename hs<K, V>::S *pre = nullptr) {
  typedef typename hs<K, V>::S S;
  const uint64_t cap = (uint64_t)1 << l, mask = cap - 1u;
  const unsigned lane = tile.thread_rank();
  uint64_t pos = hs<K, V>::start(key, l), at = TDM_HASH_NONE;
  if (WHOLE) *v = 0;
  if (G == 1 || pos >= cap) { /* a side slot: one read */
    at = hs<K, V>::lookup(s, l, key, pos, !WHOLE);
    if (WHOLE && at != TDM_HASH_NONE) *v = s[at].v;
    return at;
  }
  for (uint64_t g = 0; g < cap / G; g++) {
    unsigned eq, em, tm;
    S c = S();
    if (WHOLE) {
      c = g == 0 && pre ? *pre : slot_load<S>::at(&s[pos + lane]);
      hs<K, V>::word_bits(c.k, key, lane, &eq, &em);
    } else {
      hs<K, V>::claim_bits(s, pos, key, lane, &eq, &em, &tm);
    }
    eq = tile.ballot(eq != 0);
    em = tile.ballot(em != 0);
    if (hs<K, V>::lookup_step(pos, eq, em, &at)) {
      if (WHOLE && at != TDM_HASH_NONE) *v = tile.shfl(c.v, (int)(at - pos));
      break;
    }
    pos = (pos + G) & mask;
  }
  return at;
}

/* Finds key's slot or claims one for it, by G lanes: the slot (every lane
 * of the group gets it) and *o the outcome (TDM_HASH_FOUND / NEW_*), or
 * TDM_HASH_NONE when no slot is free (a corrupt table). A marker key needs
 * no probe: the group's first lane claims its side slot (the others get
 * TDM_HASH_NONE). */
template <typename K, typename V, unsigned G>
static __device__ __forceinline__ uint64_t probe_claim(const cg::thread_block_tile<G> &tile, typename hs<K, V>::S *s,
                                                       unsigned l, K key, int *o) {
  const uint64_t cap = (uint64_t)1 << l, mask = cap - 1u;
  const unsigned lane = tile.thread_rank();
  uint64_t at = TDM_HASH_NONE;
  *o = TDM_HASH_FOUND;
  if (G == 1 || (sizeof(K) == 4 ? tdm__hash_side32((uint32_t)key) : tdm__hash_side64((uint64_t)key))) {
    if (lane == 0) at = hs<K, V>::claim(s, l, key, hs<K, V>::start(key, l), o);
    return at;
  }
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
    if (step == TDM_HASH_STEP_ON) return TDM_HASH_NONE; /* no free slot: a corrupt table */
    if (step == TDM_HASH_STEP_FOUND) { /* after a lost swap *o holds RETRY: reset it, as tdm__hs_claim does */
      *o = TDM_HASH_FOUND;
      return at;
    }
    if (lane == 0) prev = cas_v(&s[at].k, expect, key);
    *o = hs<K, V>::cas_outcome(tile.shfl(prev, 0), expect, key);
    if (*o != TDM_HASH_RETRY) return at;
  }
}

/* Find: a group of G lanes per key. A warp takes 32 consecutive keys at a
 * time in G turns of 32 / G keys; each turn's first lanes of the groups
 * write the values (one coalesced store of the turn's keys), and the found
 * bytes wait in lane j for key j, so that the warp writes its 32 bytes by
 * one store: a sector per 32 keys instead of one per turn. Every lane
 * loads its slot of each turn's first probe sector before the first turn
 * starts: G independent loads in flight a lane, so a warp waits on the
 * first sectors of its 32 keys at once, as 32 threads of one key each
 * would, instead of on 32 / G keys a turn (the same sectors; a probe that
 * goes on past its first sector loads the rest in its turn). */
template <typename K, typename V, unsigned G>
__global__ void __launch_bounds__(TDM_GPU_BLOCK) find_kernel(const typename hs<K, V>::S *s, unsigned l,
                                                             const K *keys, V *vo, uint8_t *fo, size_t n) {
  static_assert(32u % G == 0 && TDM_GPU_BLOCK % 32u == 0, "a lane group must lie within one warp");
  const cg::thread_block_tile<G> tile = cg::tiled_partition<G>(cg::this_thread_block());
  const unsigned lane = threadIdx.x & 31u, per_turn = 32u / G;
  const size_t warps = (size_t)gridDim.x * blockDim.x / 32u;
  typedef typename hs<K, V>::S S;
  const uint64_t cap = (uint64_t)1 << l;
  /* The loop is the warp's as a whole, so every lane reaches the shuffles. */
  for (size_t c = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32u * 32u; c < n; c += warps * 32u) {
    unsigned found = 0;
    K key[G];
    S first[G];
    for (unsigned turn = 0; turn < G; turn++) {
      const size_t i = c + turn * per_turn + lane / G;
      key[turn] = i < n ? keys[i] : (K)0;
      /* A side slot's key is read by its own probe (pos + lane would pass
       * the table's end); a bucket's home is G-aligned, so pos + lane is in
       * it. */
      const uint64_t home = hs<K, V>::start(key[turn], l);
      first[turn] = S();
      if (G > 1 && i < n && home < cap) first[turn] = slot_load<S>::at(&s[home + tile.thread_rank()]);
    }
    for (unsigned turn = 0; turn < G; turn++) {
      const size_t i = c + turn * per_turn + lane / G;
      unsigned hit = 0;
      if (i < n) { /* the whole group, or none of it */
        V v;
        hit = probe_find<K, V, G, true>(tile, s, l, key[turn], &v, &first[turn]) != TDM_HASH_NONE;
        if (vo && tile.thread_rank() == 0) vo[i] = v;
      }
      /* Lane j takes key j's answer from its group's first lane. */
      hit = __shfl_sync(0xffffffffu, hit, (lane - turn * per_turn) * G & 31u);
      if (lane / per_turn == turn) found = hit;
    }
    if (fo && c + lane < n) fo[c + lane] = (uint8_t)found;
  }
}

/* The warp turns of a kernel over n keys of G lanes each (warp_turns), with
 * the tile of the calling lane's group. */
template <unsigned G>
struct group_turns : warp_turns<G> {
  static_assert(32u % G == 0 && TDM_GPU_BLOCK % 32u == 0, "a lane group must lie within one warp");
  const cg::thread_block_tile<G> tile;
  __device__ group_turns() : tile(cg::tiled_partition<G>(cg::this_thread_block())) {}
};

/* Erase: a group of G lanes finds each key; its first lane erases it
 * (tdm__hs_erase_at: the CAS that lets one of several copies win, the
 * tombstone or the empty slot). The outcome counts go in warp by warp. */
template <typename K, typename V, unsigned G>
__global__ void __launch_bounds__(TDM_GPU_BLOCK)
    erase_kernel(typename hs<K, V>::S *s, unsigned l, const K *keys, size_t n, unsigned long long *cnt) {
  __shared__ unsigned long long sh[NCOUNT];
  block_counts bc;
  bc.init(sh);
  const group_turns<G> t;
  for (size_t b = t.first; b < n; b += t.stride) {
    const size_t i = t.item(b);
    const bool live = i < n;
    int code = -1;
    if (live) { /* the whole group, or none of it */
      const K key = keys[i];
      V unused;
      const uint64_t at = probe_find<K, V, G, false>(t.tile, s, l, key, &unused);
      if (t.tile.thread_rank() == 0) code = 4 + hs<K, V>::erase_at(s, l, key, at);
    }
    bc.add_warp(code);
  }
  bc.flush(cnt);
}

template <typename V>
struct add_op {
  __device__ __forceinline__ V operator()(V a, V b) const { return a + b; }
};
template <typename K, typename V>
struct combine_op {
  int dup, vkind;
  __device__ __forceinline__ V operator()(V a, V b) const { return hs<K, V>::combine(a, b, dup, vkind); }
};
struct max_op {
  __device__ __forceinline__ uint32_t operator()(uint32_t a, uint32_t b) const { return a > b ? a : b; }
};

/* SUM's hot key across the turns of one warp: the warp carries one slot's
 * running sum in registers (the same in every lane) instead of adding to it
 * at every turn, and adds it to the table when it lets the slot go or at its
 * end. Which slot: when no lane's slot at this turn is the carried one, the
 * slot with the most copies at this turn if it has two or more (a key
 * repeated within a turn is likely repeated at the next). So a key that
 * fills the batch takes about one atomic per warp of the (resident) grid on
 * its value word instead of one per warp turn, and a batch of distinct keys
 * carries nothing. Integer SUM wraps, so when the sum lands does not matter. */
template <typename K, typename V>
struct warp_carry {
  uint64_t at = TDM_HASH_NONE;
  V sum = 0;
  /* Every lane of the warp calls it at once, each with its slot at this
   * turn (TDM_HASH_NONE but for the lowest lane of each slot), that slot's
   * folded sum and its copies. True: the lane's sum went into the carry and
   * needs no atomic of its own. */
  __device__ __forceinline__ bool take(typename hs<K, V>::S *s, uint64_t slot, V add, unsigned copies) {
    const unsigned lane = threadIdx.x & 31u;
    const bool mine = slot != TDM_HASH_NONE && slot == at;
    const unsigned hit = __ballot_sync(0xffffffffu, mine);
    if (hit) {
      sum += __shfl_sync(0xffffffffu, add, __ffs((int)hit) - 1);
      return mine;
    }
    /* The slot with the most copies, the lowest lane on a tie; a turn of
     * distinct keys (the common case) settles it with this one vote. */
    if (!__any_sync(0xffffffffu, copies >= 2u)) return false;
    unsigned best = copies >= 2u ? copies << 5 | (31u - lane) : 0u;
    for (int o = 16; o; o >>= 1) {
      const unsigned other = __shfl_xor_sync(0xffffffffu, best, o);
      best = other > best ? other : best;
    }
    if (!best) return false;
    const int src = (int)(31u - (best & 31u));
    const uint64_t next = __shfl_sync(0xffffffffu, slot, src);
    const V next_sum = __shfl_sync(0xffffffffu, add, src);
    if (at != TDM_HASH_NONE && lane == 0) atomic_add_v(&s[at].v, sum);
    at = next;
    sum = next_sum;
    return (int)lane == src;
  }
  /* Adds what the warp still carries; every lane calls it. */
  __device__ __forceinline__ void flush(typename hs<K, V>::S *s) {
    if (at != TDM_HASH_NONE && (threadIdx.x & 31u) == 0) atomic_add_v(&s[at].v, sum);
  }
};

/* pos[] bit of a KEEP_LAST copy that won its slot's election. */
#define WIN_BIT ((uint64_t)1 << 62)

/* The slot of a pos[] entry (TDM_HASH_NONE stays). */
static __device__ __forceinline__ uint64_t slot_of(uint64_t p) {
  return p == TDM_HASH_NONE ? p : p & ~(NEW_BIT | WIN_BIT);
}

static __device__ __forceinline__ void atomic_exch_v(uint32_t *p, uint32_t v) { (void)atomicExch((unsigned int *)p, v); }
static __device__ __forceinline__ void atomic_exch_v(uint64_t *p, uint64_t v) {
  (void)atomicExch((unsigned long long *)p, (unsigned long long)v);
}
static __device__ __forceinline__ void atomic_max_v(uint32_t *p, uint32_t v) { (void)atomicMax((unsigned int *)p, v); }
static __device__ __forceinline__ void atomic_max_v(uint64_t *p, uint64_t v) {
  (void)atomicMax((unsigned long long *)p, (unsigned long long)v);
}
template <typename V>
struct max_v_op {
  __device__ __forceinline__ V operator()(V a, V b) const { return a > b ? a : b; }
};

/* Row i's value in a claim: vals[i], or, without values, what the
 * scratch table's rows (enum tdm__hg_rows) make of its position in the
 * batch, base + i. */
template <typename V>
static __device__ __forceinline__ V row_value(const V *vals, size_t i, int rows, size_t base) {
  if (vals) return vals[i];
  if (rows == TDM__HG_ROWS_ONE) return (V)1;
  if (rows == TDM__HG_ROWS_RUN) return (V)(((uint64_t)(base + i) + 1u) << 32 | 1u);
  return rows == TDM__HG_ROWS_INDEX ? (V)(base + i) : (V) ~(V)(base + i);
}

/* KEEP_FIRST ballot of batch index i: the largest wins, so the lowest index. */
static __device__ __forceinline__ uint32_t first_ballot(size_t i) { return 0xffffffffu - (uint32_t)i; }

/* Whether the claim folds dup itself by one atomic per slot: SUM (integer
 * adds wrap), and MAX of unsigned values (a free slot's 0 is the identity). */
static __host__ __device__ __forceinline__ bool claim_folds(int dup, int vkind) {
  return dup == TDM__DUP_SUM || (dup == TDM__DUP_MAX && vkind == TDM_KIND_UNSIGNED);
}

/* Pass 1 of an insert: a group of G lanes finds or claims each key's slot.
 * SUM adds right here, one atomic per distinct slot per warp (and MAX of
 * unsigned values takes its atomic max, claim_folds), each row's value
 * from vals or, when vals is NULL, from rows and base (row_value); the other
 * policies record the slot (and whether this key claimed it) in pos_out and
 * make their first move, which the kernel boundary orders before every
 * other copy's: MIN / MAX's claimer stores its value in its new slot,
 * KEEP_FIRST's parks its batch index there and seeds its election word,
 * KEEP_LAST clears the value word of each found slot (a new one holds 0). */
template <typename K, typename V, unsigned G>
__global__ void __launch_bounds__(TDM_GPU_BLOCK)
    claim_kernel(typename hs<K, V>::S *s, unsigned l, const K *keys, const V *vals, int rows, size_t base, size_t n,
                 int dup, int vkind, uint64_t *pos_out, uint32_t *e, uint32_t *taken, unsigned long long *cnt,
                 uint32_t *list, uint32_t *list_n, size_t per_warp) {
  __shared__ unsigned long long sh[NCOUNT];
  __shared__ uint32_t block_taken;
  block_counts bc;
  if (threadIdx.x == 0) block_taken = 0;
  bc.init(sh); /* its barrier orders block_taken's reset too */
  const group_turns<G> t;
  warp_carry<K, V> carry;
  const size_t warp = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32u;
  uint32_t listed = 0; /* the slots this warp claimed so far (list) */
  for (size_t b = t.first; b < n; b += t.stride) {
    const size_t i = t.item(b);
    const bool live = i < n, first = live && t.tile.thread_rank() == 0;
    uint64_t at = TDM_HASH_NONE;
    int o = TDM_HASH_FOUND;
    if (live) at = probe_claim<K, V, G>(t.tile, s, l, keys[i], &o); /* the whole group, or none of it */
    if (list) { /* a scratch table: the claimed slot on the warp's list */
      const bool fresh = first && at != TDM_HASH_NONE && o != TDM_HASH_FOUND;
      const unsigned m = __ballot_sync(0xffffffffu, fresh);
      if (fresh) list[warp * per_warp + listed + (uint32_t)__popc(m & lanes_below())] = (uint32_t)at;
      listed += (uint32_t)__popc(m);
    }
    /* A key without a slot counts as FOUND: hg_sync_counts reports it. */
    bc.add_warp(!first ? -1 : at == TDM_HASH_NONE ? TDM_HASH_FOUND : o != TDM_HASH_FOUND ? o : -1);
    if (dup == TDM__DUP_SUM && !vals && rows == TDM__HG_ROWS_NONE) {
      /* A set (a data operation's scratch table of keys alone): nothing to add. */
    } else if (dup == TDM__DUP_SUM) {
      const bool in = first && at != TDM_HASH_NONE;
      const unsigned peers = __match_any_sync(0xffffffffu, in ? at : TDM_HASH_NONE);
      const V sum = warp_fold_peers(peers, in, in ? row_value(vals, i, rows, base) : (V)0, add_op<V>());
      const bool lead = in && !(peers & lanes_below());
      if (!carry.take(s, lead ? at : TDM_HASH_NONE, sum, lead ? (unsigned)__popc(peers) : 0u) && lead)
        atomic_add_v(&s[at].v, sum);
    } else if (claim_folds(dup, vkind)) { /* MAX of unsigned values */
      const bool in = first && at != TDM_HASH_NONE;
      const unsigned peers = __match_any_sync(0xffffffffu, in ? at : TDM_HASH_NONE);
      const V m = warp_fold_peers(peers, in, in ? row_value(vals, i, rows, base) : (V)0, max_v_op<V>());
      if (in && !(peers & lanes_below())) atomic_max_v(&s[at].v, m);
    } else {
      const bool claimed = first && at != TDM_HASH_NONE && o != TDM_HASH_FOUND;
      if (first) pos_out[i] = at == TDM_HASH_NONE ? TDM_HASH_NONE : at | (claimed ? NEW_BIT : 0);
      if (dup == TDM__DUP_KEEP_LAST) {
        /* The claimer of a new slot is the only thread that writes its
         * value word in this kernel (a copy that finds the slot reads key
         * words alone), so a plain store does; a copy that found its slot
         * taken marks the chunk for the election's passes, once per warp
         * in the block's word, once per block in the chunk's. */
        const bool found = first && at != TDM_HASH_NONE && !claimed;
        if (claimed) s[at].v = vals[i];
        if (__any_sync(0xffffffffu, found) && (threadIdx.x & 31u) == 0) atomicOr(&block_taken, 1u);
      } else if (claimed && dup == TDM__DUP_KEEP_FIRST) {
        s[at].v = (V)i;
        e[i] = first_ballot(i);
      } else if (claimed) { /* MIN / MAX */
        s[at].v = vals[i];
      }
    }
  }
  carry.flush(s);
  if (list && (threadIdx.x & 31u) == 0) list_n[warp] = listed;
  bc.flush(cnt); /* its barrier orders the warps' block_taken */
  if (threadIdx.x == 0 && block_taken && taken) atomicOr(taken, 1u);
}

/* MIN / MAX, pass 2: every other copy folds in. The copies of one slot in a
 * warp fold first; the lowest of them takes the CAS loop. */
template <typename K, typename V>
__global__ void minmax_fold_kernel(typename hs<K, V>::S *s, const V *vals, const uint64_t *pos, size_t n, int dup,
                                   int vkind) {
  const warp_turns<1> t;
  const combine_op<K, V> op = {dup, vkind};
  for (size_t b = t.first; b < n; b += t.stride) {
    const size_t i = t.item(b);
    const uint64_t p = i < n ? pos[i] : TDM_HASH_NONE;
    const bool in = p != TDM_HASH_NONE && !(p & NEW_BIT);
    const unsigned peers = __match_any_sync(0xffffffffu, in ? p : TDM_HASH_NONE);
    const V v = warp_fold_peers(peers, in, in ? vals[i] : (V)0, op);
    if (!in || (peers & lanes_below())) continue;
    V *dst = &s[p].v, old = load_v(dst);
    for (;;) {
      V want = op(old, v), seen;
      if (want == old) break;
      seen = cas_v(dst, old, want);
      if (seen == old) break;
      old = seen;
    }
  }
}

/* KEEP_LAST: the batch's last copy of a key wins, whether the key was there
 * before or not. The claim wrote each new slot's value, its claimer's:
 * right when no copy of the chunk found its slot taken (then every key is
 * new and one of a kind, the common bulk load), and the passes below do
 * nothing but read the chunk's taken word, once per block. Otherwise they
 * run an election in each touched slot's value word (its old value, or its
 * claimer's, is overwritten anyway): no scratch beyond pos. */
static __device__ __forceinline__ bool chunk_taken(const uint32_t *taken) {
  __shared__ uint32_t t;
  if (threadIdx.x == 0) t = *taken;
  __syncthreads();
  return t != 0;
}

/* KEEP_LAST, passes 2 (VOTE false) and 3 (VOTE true), over each copy's
 * slot. Pass 2 clears the value word of every touched slot: the copies of
 * one slot in a warp clear it once, by an atomic exchange (plain stores of
 * even the same value from several threads are a data race in CUDA's
 * memory model). Pass 3: each copy votes its batch index + 1 (chunks of at
 * most 2^31 keys: it fits a 32-bit value word), the copies of one slot in a
 * warp as one (their largest); the largest wins. */
template <typename K, typename V, bool VOTE>
__global__ void last_slot_kernel(typename hs<K, V>::S *s, const uint64_t *pos, size_t n, const uint32_t *taken) {
  if (!chunk_taken(taken)) return;
  const warp_turns<1> t;
  for (size_t b = t.first; b < n; b += t.stride) {
    const size_t i = t.item(b);
    const uint64_t slot = slot_of(i < n ? pos[i] : TDM_HASH_NONE);
    const bool in = slot != TDM_HASH_NONE;
    const unsigned peers = __match_any_sync(0xffffffffu, slot);
    if (VOTE) {
      const V v = warp_fold_peers(peers, in, in ? (V)(i + 1u) : (V)0, max_v_op<V>());
      if (in && !(peers & lanes_below())) atomic_max_v(&s[slot].v, v);
    } else if (in && !(peers & lanes_below())) {
      atomic_exch_v(&s[slot].v, (V)0);
    }
  }
}

/* KEEP_LAST, pass 4: each copy learns whether it won (its own pos entry),
 * before any winner overwrites the election word with its value. */
template <typename K, typename V>
__global__ void last_check_kernel(const typename hs<K, V>::S *s, uint64_t *pos, size_t n, const uint32_t *taken) {
  if (!chunk_taken(taken)) return;
  TDM_GRID_STRIDE(i, n) {
    uint64_t p = pos[i];
    if (p != TDM_HASH_NONE && s[slot_of(p)].v == (V)(i + 1u)) pos[i] = p | WIN_BIT;
  }
}

/* KEEP_LAST, pass 5: the winner writes its value. */
template <typename K, typename V>
__global__ void last_write_kernel(typename hs<K, V>::S *s, const V *vals, const uint64_t *pos, size_t n,
                                  const uint32_t *taken) {
  if (!chunk_taken(taken)) return;
  TDM_GRID_STRIDE(i, n) {
    uint64_t p = pos[i];
    if (p != TDM_HASH_NONE && (p & WIN_BIT)) s[slot_of(p)].v = vals[i];
  }
}

/* KEEP_FIRST: only keys new in this batch change, to their first copy's
 * value; the election of a new key runs in a batch-sized word of its
 * claimer, e[claimer], which the claim seeded with the claimer's own ballot
 * after parking its batch index in the new slot's value word (which no one
 * needs until the winner's value lands). */
/* KEEP_FIRST, pass 2: every other copy reads its slot's value word c; the
 * key is new in this batch exactly when c < n and pos[c] says c claimed
 * this slot (a key that was there before holds a value for which that
 * cannot be true: no copy claimed its slot), and then votes at e[c], the
 * copies of one claimer in a warp as one. A key that was there before keeps
 * its value. */
template <typename K, typename V>
__global__ void first_vote_kernel(const typename hs<K, V>::S *s, uint32_t *e, const uint64_t *pos, size_t n) {
  const warp_turns<1> t;
  for (size_t b = t.first; b < n; b += t.stride) {
    const size_t i = t.item(b);
    const uint64_t p = i < n ? pos[i] : TDM_HASH_NONE;
    uint64_t c = TDM_HASH_NONE;
    if (p != TDM_HASH_NONE && !(p & NEW_BIT)) {
      const uint64_t held = (uint64_t)s[slot_of(p)].v;
      if (held < n && pos[held] == (slot_of(p) | NEW_BIT)) c = held;
    }
    const bool in = c != TDM_HASH_NONE;
    const unsigned peers = __match_any_sync(0xffffffffu, c);
    const uint32_t v = warp_fold_peers(peers, in, in ? first_ballot(i) : 0u, max_op());
    if (in && !(peers & lanes_below())) atomicMax(&e[c], v);
  }
}

/* KEEP_FIRST, pass 3: the claimer writes the winner's value over its parked
 * index. */
template <typename K, typename V>
__global__ void first_write_kernel(typename hs<K, V>::S *s, const V *vals, const uint32_t *e, const uint64_t *pos,
                                   size_t n) {
  TDM_GRID_STRIDE(i, n) {
    uint64_t p = pos[i];
    if (p != TDM_HASH_NONE && (p & NEW_BIT)) s[slot_of(p)].v = vals[0xffffffffu - e[i]];
  }
}

/* ---- host side ---------------------------------------------------------------- */

/* The direct claim's scratch, batch-sized: each key's slot (not for SUM),
 * and for KEEP_FIRST an election word per key (used by the claimers'). */
static tdm_status scratch_take(tdm_hash *h, tdm__gpu_scope &sc, size_t n, size_t final_cap, tdm__hg_scratch *x) {
  tdm_status st;
  (void)final_cap;
  memset(x, 0, sizeof *x);
  x->chunk = n < CHUNK ? n : CHUNK;
  if ((!claim_folds(h->dup, h->vkind) && (st = sc.alloc(x->chunk * sizeof(uint64_t), &x->pos)) != TDM_OK) ||
      (h->dup == TDM__DUP_KEEP_FIRST && (st = sc.alloc(x->chunk * sizeof(uint32_t), &x->e)) != TDM_OK))
    return st;
  if (h->dup == TDM__DUP_KEEP_LAST) {
    const size_t chunks = (n + x->chunk - 1) / x->chunk;
    if ((st = sc.alloc(chunks * sizeof(uint32_t), &x->taken)) != TDM_OK) return st;
    TDM_CUDA_TRY(cudaMemsetAsync(x->taken, 0, chunks * sizeof(uint32_t), tdm__stream(h->ctx)), (void)0);
  }
  return TDM_OK;
}

/* Inserts one chunk of n keys by the direct claim with G lanes per key. */
template <typename K, typename V, unsigned G>
static void launch_insert(tdm_hash *h, const void *keys, const void *vals, size_t n, const tdm__hg_scratch *x,
                          size_t chunk, unsigned long long *cnt) {
  cudaStream_t st = tdm__stream(h->ctx);
  unsigned g = tdm__grid(n);
  typename hs<K, V>::S *s = (typename hs<K, V>::S *)tdm__hg(h)->slots;
  const K *k = (const K *)keys;
  const V *v = (const V *)vals;
  int dup = (int)h->dup;
  /* One resident wave: each block flushes its outcome counters once, so
   * the flushes stay a few per SM instead of one per 256 / G keys. */
  const unsigned grid = tdm__grid_resident(h->ctx, n * G);
  tdm__hash_gpu *be = tdm__hg(h);
  if (be->list) {
    /* Warp w takes items w * 32 / G + j * stride (warp_turns): at most
     * ceil(n / stride) turns of 32 / G keys each. scratch_list sized the
     * list for the widest grid of n keys. */
    const size_t warps = (size_t)grid * (TDM_GPU_BLOCK / 32u), stride = (size_t)grid * TDM_GPU_BLOCK / G;
    be->list_per_warp = (n + stride - 1) / stride * (32u / G);
    be->list_warps = warps;
  }
  claim_kernel<K, V, G><<<grid, TDM_GPU_BLOCK, 0, st>>>(s, h->log2cap, k, v, be->rows, chunk * x->chunk, n, dup,
                                                        h->vkind, x->pos, x->e, x->taken ? x->taken + chunk : NULL,
                                                        cnt, be->list, be->list_n, be->list_per_warp);
  if (claim_folds(dup, h->vkind)) return;
  switch (h->dup) {
  case TDM__DUP_MIN:
  case TDM__DUP_MAX:
    minmax_fold_kernel<K, V><<<g, TDM_GPU_BLOCK, 0, st>>>(s, v, x->pos, n, dup, h->vkind);
    break;
  case TDM__DUP_KEEP_LAST: {
    /* Resident grids: when the chunk's taken word is 0 (the common bulk
     * load) each block only reads it and leaves, so a few per SM do. */
    const unsigned r = tdm__grid_resident(h->ctx, n);
    const uint32_t *taken = x->taken + chunk;
    last_slot_kernel<K, V, false><<<r, TDM_GPU_BLOCK, 0, st>>>(s, x->pos, n, taken); /* clear */
    last_slot_kernel<K, V, true><<<r, TDM_GPU_BLOCK, 0, st>>>(s, x->pos, n, taken);  /* vote */
    last_check_kernel<K, V><<<r, TDM_GPU_BLOCK, 0, st>>>(s, x->pos, n, taken);
    last_write_kernel<K, V><<<r, TDM_GPU_BLOCK, 0, st>>>(s, v, x->pos, n, taken);
    break;
  }
  default: /* KEEP_FIRST */
    first_vote_kernel<K, V><<<g, TDM_GPU_BLOCK, 0, st>>>(s, x->e, x->pos, n);
    first_write_kernel<K, V><<<g, TDM_GPU_BLOCK, 0, st>>>(s, v, x->e, x->pos, n);
    break;
  }
}

template <typename K, typename V, unsigned G>
static void launch_erase(tdm_hash *h, const void *keys, size_t n, unsigned long long *cnt) {
  erase_kernel<K, V, G><<<tdm__grid_resident(h->ctx, n * G), TDM_GPU_BLOCK, 0, tdm__stream(h->ctx)>>>(
      (typename hs<K, V>::S *)tdm__hg(h)->slots, h->log2cap, (const K *)keys, n, cnt);
}

template <typename K, typename V, unsigned G>
static void launch_find(const tdm_hash *h, const void *keys, void *vo, uint8_t *fo, size_t n) {
  typedef typename hs<K, V>::S S;
  find_kernel<K, V, G><<<tdm__grid(n), TDM_GPU_BLOCK, 0, tdm__stream(h->ctx)>>>(
      (const S *)tdm__hg(h)->slots, h->log2cap, (const K *)keys, (V *)vo, fo, n);
}

/* The policy table of one width: bucket lanes for the claim and the find
 * (the top of the file says why). */
template <typename K, typename V>
static const tdm__hg_policy policies = {
    .scratch = scratch_take,
    .insert = launch_insert<K, V, sector_lanes<K, V>::value>,
    .find = launch_find<K, V, sector_lanes<K, V>::value>,
    .erase = launch_erase<K, V, sector_lanes<K, V>::value>,
};

const tdm__hg_policy *const tdm__hg_policies[4] = {
    &policies<uint32_t, uint32_t>,
    &policies<uint32_t, uint64_t>,
    &policies<uint64_t, uint32_t>,
    &policies<uint64_t, uint64_t>,
};
