/*
 * btree_cpu.c: the CPU backend of the B+ tree (layout and invariants in
 * include/tandem/detail/btree_node.h).
 *
 *  - build: copy the input, stable radix sort (tdm__cpu_sort), one parallel
 *    pass that fills the leaves (14 of 16 slots, see tdm__bt_bulk_parts)
 *    straight from the sorted copy and checks for duplicates on the way; only
 *    input with duplicates pays a reduction pass (policy per run) and a
 *    second fill. Sort-bound.
 *  - find / rank / range_count: queries go through the tree in groups of
 *    GROUP, level by level: each query of the group computes its child and
 *    prefetches it, so by the time the group comes back to a query its node is
 *    in cache and GROUP memory accesses are in flight at once. The in-node
 *    search is compiled for AVX-512, AVX2 and plain x86-64, picked at run time.
 *    range_count takes both bounds down together (one descent while they
 *    share a path) and subtracts their ranks below the split.
 *  - insert / erase: the batch is sorted and deduplicated like a build, then
 *    applied key by key with the classic algorithm: descend recording the
 *    path, split full nodes 9 / 8 bottom-up (root split adds a level); on
 *    underflow borrow from the left, else the right sibling, else merge (root
 *    collapse removes a level). Sorted order keeps consecutive descents in
 *    cache, and a walk AHEAD keys in front prefetches the leaves.
 *  - all-or-nothing: every allocation a mutation can need (batch copies, the
 *    worst-case node capacity) is made before the first node changes; after
 *    that nothing can fail.
 */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cpu.h"

/* The CPU state of tree t. */
#define BT(t) tdm__btree_cpu_of(t)

enum { GROUP = 32 };

/* Code compiled for an instruction-set level above the build's baseline
 * (picked at run time once per tree, bt_pick_fns). */
#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define ISA_AVX2 __attribute__((target("avx2,popcnt")))
#define ISA_AVX512 __attribute__((target("avx512f,popcnt")))

/* The loops of one instruction-set level (tdm__bt_isa), chosen once when
 * the tree is built (bt_build) and called through BT(t)->fn. AVX2 runs the
 * shared leaf fill: the vector one is built on AVX-512's masked loads. */
struct tdm__bt_isa_fns {
  int (*leaves)(tdm__bt_node *nodes, const tdm__bt_geom *g, const void *keys, const void *vals, uint32_t ks,
                uint32_t vs, int kind, uint64_t koff, uint64_t lo, uint64_t hi, uint64_t *last);
  void (*find)(const tdm_btree *t, const void *keys, void *values_out, uint8_t *found_out, size_t n);
  void (*rank)(const tdm_btree *t, const void *keys, uint64_t *rank_out, size_t n);
  void (*count)(const tdm_btree *t, const void *lo, const void *hi, uint64_t *out, size_t n);
};

_Static_assert(sizeof(tdm__bt_node) == 384, "a node is six cache lines");

/* ---- node storage --------------------------------------------------------- */

/* Node storage is an anonymous mapping: pages are committed only when first
 * touched, so capacity reserved ahead costs address space, not memory, and
 * growing moves the pages (mremap) instead of copying them. Mappings of 8 MiB
 * and more are 2 MiB aligned and advised as huge pages: lookups touch random
 * nodes, and with 4 KiB pages nearly every one would also miss the TLB. */
#define BIG_MAP ((size_t)8 << 20)

static size_t map_len(uint64_t cap) {
  size_t bytes = (size_t)cap * sizeof(tdm__bt_node), unit = bytes >= BIG_MAP ? TDM__HUGE_PAGE : 4096;
  return (bytes + unit - 1) & ~(unit - 1);
}

/* Makes room for at least need node slots, keeping the contents. Fails only
 * before anything changed. */
static tdm_status nodes_reserve(tdm_btree *t, uint64_t need, const char *fn) {
  uint64_t cap;
  size_t len;
  void *nn;
  if (need <= BT(t)->cap) return TDM_OK;
  cap = 2 * (uint64_t)BT(t)->cap;
  if (cap < need) cap = need;
  if (cap >= TDM_BT_NIL) cap = TDM_BT_NIL - 1;
  if (need > cap) return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "%s: the tree would need more than 2^32 - 1 nodes", fn);
  len = map_len(cap);
  /* Not zeroed (a kept block holds its last user's bytes): a build writes
   * every node it uses whole (tdm__bt_fill_leaf, tdm__bt_fill_inner),
   * node_new clears each node it hands out, and no slot past `used` is read.
   * Zeroing the reserve cost a build 21-29 % of its time. */
  nn = tdm__ctx_map(t->ctx, len, len >= BIG_MAP, 1, 0);
  if (!nn)
    return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "%s: out of memory for %llu tree nodes", fn, (unsigned long long)cap);
  if (BT(t)->nodes_raw && t->ctx->has_alloc) {
    /* The caller's memory: copy into the new block, free the old one. */
    memcpy(nn, BT(t)->nodes_raw, BT(t)->map_bytes);
    tdm__ctx_unmap(t->ctx, BT(t)->nodes_raw, BT(t)->map_bytes);
  } else if (BT(t)->nodes_raw &&
      mremap(BT(t)->nodes_raw, BT(t)->map_bytes, BT(t)->map_bytes, MREMAP_MAYMOVE | MREMAP_FIXED, nn) == MAP_FAILED) {
    tdm__ctx_unmap(t->ctx, nn, len);
    return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "%s: could not move %zu bytes of tree nodes", fn, BT(t)->map_bytes);
  }
  BT(t)->nodes_raw = nn;
  BT(t)->nodes = (tdm__bt_node *)nn;
  BT(t)->map_bytes = len;
  BT(t)->cap = (uint32_t)(len / sizeof(tdm__bt_node) < TDM_BT_NIL - 1 ? len / sizeof(tdm__bt_node) : TDM_BT_NIL - 1);
  return TDM_OK;
}

/* A fresh node slot; capacity was reserved beforehand. */
static uint32_t node_new(tdm_btree *t) {
  uint32_t i;
  if (BT(t)->free_head != TDM_BT_NIL) {
    i = BT(t)->free_head;
    BT(t)->free_head = BT(t)->nodes[i].next;
  } else {
    i = BT(t)->used++;
  }
  BT(t)->live++;
  memset(&BT(t)->nodes[i], 0, sizeof(tdm__bt_node));
  return i;
}

static void node_release(tdm_btree *t, uint32_t i) {
  tdm__bt_node *x = &BT(t)->nodes[i];
  memset(x, 0, sizeof *x);
  x->level = TDM_BT_FREE;
  x->next = BT(t)->free_head;
  BT(t)->free_head = i;
  BT(t)->live--;
}

static void bt_free(tdm_btree *t) {
  tdm__ctx_unmap(t->ctx, BT(t)->nodes_raw, BT(t)->map_bytes);
  BT(t)->nodes_raw = NULL;
  BT(t)->nodes = NULL;
}

/* ---- batch preparation ---------------------------------------------------- */

/* A batch copied and sorted (raw keys kraw, values vraw), then reduced to a
 * duplicate-free run of 64-bit key bits kb and values vb (vb NULL for
 * key-only batches). For 8-byte types kb / vb share the raw arrays:
 * widening in place is safe and compaction only moves elements left. */
typedef struct batch {
  tdm_ctx *ctx;
  void *block;
  size_t block_bytes;
  void *kraw, *vraw;
  uint64_t *kb, *vb;
  size_t n, m;
} batch;

static void batch_free(batch *b) {
  if (b->block) tdm__ctx_free(b->ctx, b->block, b->block_bytes);
  b->block = NULL;
}

/* Sorts a copy of n keys (and values when non-NULL) stably; equal keys stay
 * in input order. */
static tdm_status batch_sort(const tdm_btree *t, const void *keys, const void *values, size_t n, batch *b,
                             const tdm__sort_sink *sink, const char *fn) {
  size_t ks = t->ks, vs = values ? t->vs : 0, off = 0, o_k, o_v, o_kb, o_vb;
  char *base;
  tdm_status st;
  memset(b, 0, sizeof *b);
  o_k = tdm__carve(&off, n * ks);
  o_v = tdm__carve(&off, n * vs);
  o_kb = ks == 8 ? o_k : tdm__carve(&off, n * 8);
  o_vb = (vs == 8 || vs == 0) ? o_v : tdm__carve(&off, n * 8);
  b->ctx = t->ctx;
  b->block_bytes = off;
  b->block = tdm__ctx_alloc(t->ctx, off);
  if (!b->block) {
    (void)tdm__fail(TDM_ERR_OUT_OF_MEMORY, "%s: out of host memory for a %zu-byte copy of the batch", fn, off);
    return TDM_ERR_OUT_OF_MEMORY;
  }
  base = (char *)b->block;
  b->n = n;
  b->kraw = base + o_k;
  b->vraw = vs ? base + o_v : NULL;
  b->kb = (uint64_t *)(base + o_kb);
  b->vb = vs ? (uint64_t *)(base + o_vb) : NULL;
  /* The sort reads the caller's arrays and writes the sorted copy: where its
   * radix partition serves, the copy costs no pass of its own. */
  st = tdm__cpu_sort_copy(t->ctx, t->key_type, keys, b->kraw, t->value_type, values, b->vraw, n, 0, sink);
  if (st != TDM_OK) {
    batch_free(b);
    return st;
  }
  return TDM_OK;
}

/* Widens a sorted batch to 64-bit key bits and values and reduces each run of
 * equal keys under the tree's policy. */
static void batch_reduce(const tdm_btree *t, batch *b) {
  size_t n = b->n, i, s, w;
  for (i = 0; i < n; i++) b->kb[i] = tdm__bt_key_bits(b->kraw, i, t->ks, t->kind);
  if (b->vb && t->vs == 4)
    for (i = 0; i < n; i++) b->vb[i] = ((const uint32_t *)b->vraw)[i];
  for (s = 0, w = 0; s < n; w++) {
    size_t e = s + 1;
    uint64_t k = b->kb[s];
    while (e < n && b->kb[e] == k) e++;
    if (b->vb) b->vb[w] = tdm__bt_reduce_run(b->vb, s, e, t->dup, t->vs, t->vkind);
    b->kb[w] = k;
    s = e;
  }
  b->m = w;
}

static tdm_status batch_make(const tdm_btree *t, const void *keys, const void *values, size_t n, batch *b,
                             const char *fn) {
  tdm_status st = batch_sort(t, keys, values, n, b, NULL, fn);
  if (st == TDM_OK) batch_reduce(t, b);
  return st;
}

/* ---- build ---------------------------------------------------------------- */

/* A bulk load writes every line of the node array once and finds none in
 * cache, so each node is filled in a copy in cache, or in registers, and
 * streamed to its place (ordinary stores would first read every line from
 * memory). The leaves come first, by the loop of the tree's instruction-set
 * level (leaves_scalar, leaves_avx512), most of them straight from the sort's
 * buckets while those are in cache (build_take); each leaf's last key goes to
 * a side array, last[], from which the inner levels are filled afterwards
 * (fill_inners): read from the sorted keys, every separator was a miss. */

/* Inner nodes [lo, hi) of level l from the leaves' last keys, streamed;
 * fill_inners runs each level in parallel parts. */
static void fill_inner_range(tdm__bt_node *nodes, const tdm__bt_geom *g, const uint64_t *last, uint32_t l,
                             uint64_t lo, uint64_t hi) {
  tdm__bt_node x __attribute__((aligned(64)));
  uint64_t i;
  for (i = lo; i < hi; i++) {
    tdm__bt_fill_inner_into(&x, g, last, 8, TDM_KIND_UNSIGNED, last, l, i); /* (keys unused with last) */
    tdm__stream_copy(&nodes[g->base[l] + i], &x, sizeof x);
  }
  tdm__stream_fence();
}

static void fill_inners(const tdm_btree *t, const tdm__bt_geom *g, const uint64_t *last) {
  uint32_t l;
  long p, parts;
  for (l = 1; l < g->h; l++) {
    parts = tdm__threads_for(t->ctx, g->cnt[l], 1024);
    TDM__PAR_FOR(parts, p, parts,
                 fill_inner_range(BT(t)->nodes, g, last, l,
                                  tdm__bt_even_start(g->cnt[l], (uint64_t)parts, (uint64_t)p),
                                  tdm__bt_even_start(g->cnt[l], (uint64_t)parts, (uint64_t)p + 1)));
  }
}

/* Leaves [lo, hi), their last keys into last[], by the shared per-leaf code
 * (btree_node.h); keys and vals as tdm__bt_fill_leaf_into takes them. Returns
 * 0 when the keys hold duplicates. */
static int leaves_scalar(tdm__bt_node *nodes, const tdm__bt_geom *g, const void *keys, const void *vals, uint32_t ks,
                         uint32_t vs, int kind, uint64_t koff, uint64_t lo, uint64_t hi, uint64_t *last) {
  tdm__bt_node x __attribute__((aligned(64)));
  uint64_t i;
  int ok = 1;
  for (i = lo; i < hi; i++) {
    ok &= tdm__bt_fill_leaf_into(&x, g, keys, vals, ks, vs, kind, koff, i);
    last[i] = x.key[x.count - 1];
    tdm__stream_copy(&nodes[g->base[0] + i], &x, sizeof x);
  }
  tdm__stream_fence();
  return ok;
}

/* ---- the AVX-512 leaf fill -------------------------------------------------
 * The same leaves as tdm__bt_fill_leaf_into, eight slots per instruction:
 * masked loads of the leaf's keys and values (masked-off lanes read nothing),
 * key bits as keybits.h computes them, the duplicate check as one compare of
 * the keys against themselves shifted by a slot, and each line streamed from
 * a register. The shared loop spends most of its time per slot (loads through
 * a width switch, stores into the copy, the copy streamed 16 bytes at a time):
 * 48 ms against 28 ms for 10^7 keys on one thread. test_btree compares the
 * trees both make byte for byte. */

/* Key bits of eight raw keys at keys[s..] (lanes in m; the rest 0). */
ISA_AVX512 ALWAYS_INLINE __m512i bits8_avx512(const void *keys, uint64_t s, __mmask8 m, uint32_t ks, int kind) {
  __m512i x;
  if (ks == 8) {
    x = _mm512_maskz_loadu_epi64(m, (const uint64_t *)keys + s);
    if (kind == TDM_KIND_SIGNED) x = _mm512_xor_si512(x, _mm512_set1_epi64((long long)0x8000000000000000ull));
    if (kind == TDM_KIND_FLOAT)
      x = _mm512_xor_si512(x, _mm512_or_si512(_mm512_srai_epi64(x, 63),
                                              _mm512_set1_epi64((long long)0x8000000000000000ull)));
    return x;
  }
  x = _mm512_maskz_loadu_epi32((__mmask16)m, (const uint32_t *)keys + s);
  if (kind == TDM_KIND_SIGNED) x = _mm512_xor_si512(x, _mm512_set1_epi32((int)0x80000000u));
  if (kind == TDM_KIND_FLOAT)
    x = _mm512_xor_si512(x, _mm512_or_si512(_mm512_srai_epi32(x, 31), _mm512_set1_epi32((int)0x80000000u)));
  return _mm512_maskz_mov_epi64(m, _mm512_cvtepu32_epi64(_mm512_castsi512_si256(x)));
}

/* Eight values at vals[s..] widened to 64 bits (lanes in m; the rest 0). */
ISA_AVX512 ALWAYS_INLINE __m512i vals8_avx512(const void *vals, uint64_t s, __mmask8 m, uint32_t vs) {
  if (!vals) return _mm512_setzero_si512();
  if (vs == 8) return _mm512_maskz_loadu_epi64(m, (const uint64_t *)vals + s);
  return _mm512_cvtepu32_epi64(_mm512_castsi512_si256(_mm512_maskz_loadu_epi32((__mmask16)m, (const uint32_t *)vals + s)));
}

ISA_AVX512 static int leaves_avx512(tdm__bt_node *nodes, const tdm__bt_geom *g, const void *keys, const void *vals,
                                    uint32_t ks, uint32_t vs, int kind, uint64_t koff, uint64_t lo, uint64_t hi,
                                    uint64_t *last) {
  const __m512i pad = _mm512_set1_epi64((long long)TDM_BT_PAD), zero = _mm512_setzero_si512();
  uint64_t q = g->m / g->cnt[0], r = g->m % g->cnt[0], i, s = tdm__bt_even_start(g->m, g->cnt[0], lo) - koff;
  int ok = 1;
  /* s counts in the arrays (key s + koff of the sorted order) */
  for (i = lo; i < hi; i++) {
    uint32_t c = (uint32_t)(q + (i < r)), m = (1u << c) - 1; /* 1 <= c <= 16 */
    __mmask8 m0 = (__mmask8)m, m1 = (__mmask8)(m >> 8), first = (__mmask8)(s == 0); /* no predecessor in the arrays */
    __m512i k0 = bits8_avx512(keys, s, m0, ks, kind), k1 = bits8_avx512(keys, s + 8, m1, ks, kind);
    __m512i prev = _mm512_set1_epi64(s ? (long long)tdm__bt_key_bits(keys, s - 1, ks, kind) : 0);
    __mmask8 up0 = _mm512_cmpgt_epu64_mask(k0, _mm512_alignr_epi64(k0, prev, 7));
    __mmask8 up1 = _mm512_cmpgt_epu64_mask(k1, _mm512_alignr_epi64(k1, k0, 7));
    char *d = (char *)&nodes[g->base[0] + i];
    ok &= ((up0 | first) & m0) == m0 && (up1 & m1) == m1;
    _mm512_stream_si512((void *)d, _mm512_mask_mov_epi64(pad, m0, k0));
    _mm512_stream_si512((void *)(d + 64), _mm512_mask_mov_epi64(pad, m1, k1));
    _mm512_stream_si512((void *)(d + 128), vals8_avx512(vals, s, m0, vs));
    _mm512_stream_si512((void *)(d + 192), vals8_avx512(vals, s + 8, m1, vs));
    _mm512_stream_si512((void *)(d + 256), zero);
    /* count, level 0, next, prev, then the zero padding */
    _mm512_stream_si512((void *)(d + 320),
                        _mm512_zextsi128_si512(_mm_setr_epi32((int)c, 0, (int)(i + 1 < g->cnt[0] ? i + 1 : TDM_BT_NIL),
                                                              (int)(i > 0 ? i - 1 : TDM_BT_NIL))));
    last[i] = tdm__bt_key_bits(keys, s + c - 1, ks, kind);
    s += c;
  }
  tdm__stream_fence();
  return ok;
}

/* The build's sink (tdm__sort_sink): fills the leaves that lie whole inside
 * each sorted bucket from the sort's buffer, while it is in cache, so those
 * pairs are never written out and read back. A bucket's first leaf has no
 * predecessor to check against when it starts the bucket: the buckets hold
 * disjoint ranges of keys. */
typedef struct build_sink {
  const tdm_btree *t;
  const tdm__bt_geom *g;
  uint64_t *last;
  uint8_t *filled; /* filled[i]: leaf i was filled here */
  int dup;         /* a leaf held two equal keys */
} build_sink;

static size_t build_take(void *arg, size_t at, const void *keys, const void *vals, size_t n, size_t *end) {
  build_sink *k = (build_sink *)arg;
  const tdm_btree *t = k->t;
  const tdm__bt_geom *g = k->g;
  uint64_t lo = tdm__bt_even_part(g->m, g->cnt[0], at), hi = tdm__bt_even_part(g->m, g->cnt[0], at + n - 1) + 1;
  if (tdm__bt_even_start(g->m, g->cnt[0], lo) < at) lo++;
  if (tdm__bt_even_start(g->m, g->cnt[0], hi) > at + n) hi--;
  *end = 0;
  if (lo >= hi) return 0;
  if (!BT(t)->fn->leaves(BT(t)->nodes, g, keys, vals, t->ks, t->vs, t->kind, at, lo, hi, k->last))
    __atomic_store_n(&k->dup, 1, __ATOMIC_RELAXED);
  memset(k->filled + lo, 1, (size_t)(hi - lo));
  *end = (size_t)(tdm__bt_even_start(g->m, g->cnt[0], hi) - at);
  return (size_t)(tdm__bt_even_start(g->m, g->cnt[0], lo) - at);
}

/* Fills a tree's nodes in bulk-load layout from sorted keys (raw as
 * tdm__bt_fill_leaf takes them): the leaves not marked in filled (NULL: all),
 * then the inner levels. Returns 0 when the keys hold duplicates; the nodes
 * are then garbage and the caller refills from a reduced batch. */
static int bulk_fill(tdm_btree *t, const tdm__bt_geom *g, const void *keys, const void *vals, uint32_t ks,
                     uint32_t vs, int kind, uint64_t *last, const uint8_t *filled) {
  long i, parts = tdm__threads_for(t->ctx, g->cnt[0], 4096);
  int ok = 1;
  TDM__PAR_FOR_REDUCE(parts, &, ok, i, parts, {
    uint64_t lo = tdm__bt_even_start(g->cnt[0], (uint64_t)parts, (uint64_t)i);
    uint64_t hi = tdm__bt_even_start(g->cnt[0], (uint64_t)parts, (uint64_t)i + 1), e;
    while (lo < hi) { /* each run of leaves still to fill */
      if (filled && filled[lo]) {
        lo++;
        continue;
      }
      for (e = lo + 1; e < hi && !(filled && filled[e]); e++) {}
      ok &= BT(t)->fn->leaves(BT(t)->nodes, g, keys, vals, ks, vs, kind, 0, lo, e, last);
      lo = e;
    }
  });
  if (!ok) return 0;
  fill_inners(t, g, last);
  t->size = g->m;
  t->height = g->h;
  t->root = (uint32_t)(g->nodes - 1);
  t->first_leaf = 0;
  t->last_leaf = g->cnt[0] - 1;
  BT(t)->used = BT(t)->live = (uint32_t)g->nodes;
  BT(t)->free_head = TDM_BT_NIL;
  return 1;
}

/* Puts the pairs of the leaves the sink filled back into the sorted batch
 * (for the reduction, when the input held duplicates). */
static void unfill(const tdm_btree *t, const tdm__bt_geom *g, const uint8_t *filled, batch *b) {
  uint64_t i, s;
  uint32_t j;
  for (i = 0; i < g->cnt[0]; i++) {
    const tdm__bt_node *x = &BT(t)->nodes[g->base[0] + i];
    if (!filled[i]) continue;
    s = tdm__bt_even_start(g->m, g->cnt[0], i);
    for (j = 0; j < x->count; j++) {
      tdm__bt_store_key(b->kraw, s + j, x->key[j], t->ks, t->kind);
      if (b->vraw) tdm__bt_store_val(b->vraw, s + j, x->u.val[j], t->vs);
    }
  }
}

static void bt_pick_fns(tdm_btree *t);

/* Sorts into a batch, the sink filling most leaves on the way (and checking
 * for duplicates), then fills the rest from the batch; only input with
 * duplicates pays a reduction pass and a second fill. Capacity is reserved
 * with slack so that later inserts rarely need to grow the mapping. */
static tdm_status bt_build(tdm_btree *t, const void *keys, const void *values, size_t n) {
  static const char fn[] = "tdm_btree_build";
  batch b;
  tdm__bt_geom g;
  tdm_status st;
  build_sink sk;
  tdm__sort_sink sink = {build_take, &sk};
  size_t aux_bytes;
  uint64_t *aux;
  bt_pick_fns(t);
  t->root = t->first_leaf = t->last_leaf = TDM_BT_NIL;
  BT(t)->free_head = TDM_BT_NIL;
  if (n == 0) return TDM_OK;
  tdm__bt_geom_init(&g, n);
  st = nodes_reserve(t, g.nodes + g.nodes / 2 + 16, fn);
  if (st != TDM_OK) return st;
  aux_bytes = (size_t)g.cnt[0] * 9; /* last[] and filled[] */
  aux = (uint64_t *)tdm__ctx_alloc(t->ctx, aux_bytes);
  if (!aux)
    return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "%s: out of host memory for %zu bytes of leaf keys", fn, aux_bytes);
  sk.t = t;
  sk.g = &g;
  sk.last = aux;
  sk.filled = (uint8_t *)(aux + g.cnt[0]);
  sk.dup = 0;
  memset(sk.filled, 0, (size_t)g.cnt[0]);
  st = batch_sort(t, keys, values, n, &b, &sink, fn);
  if (st == TDM_OK && (__atomic_load_n(&sk.dup, __ATOMIC_RELAXED) ||
                       !bulk_fill(t, &g, b.kraw, b.vraw, t->ks, t->vs, t->kind, aux, sk.filled))) {
    unfill(t, &g, sk.filled, &b);
    batch_reduce(t, &b);
    tdm__bt_geom_init(&g, b.m);
    (void)bulk_fill(t, &g, b.kb, b.vb, 8, 8, TDM_KIND_UNSIGNED, aux, NULL);
  }
  batch_free(&b);
  tdm__ctx_free(t->ctx, aux, aux_bytes);
  return st;
}

/* ---- searches ------------------------------------------------------------- */

/* Always inlined: as an ordinary static inline function GCC 12's mod/ref
 * analysis (-fipa-modref) found it free of side effects and dropped every
 * call before inlining, so the searches ran without their node prefetches
 * (25-35 % slower finds and range counts) whenever the unit's inlining
 * decisions changed. */
static inline __attribute__((always_inline)) void prefetch_lines(const tdm__bt_node *x, int lines) {
  const char *p = (const char *)x;
  __builtin_prefetch(p);
  __builtin_prefetch(p + 64);
  if (lines > 2) __builtin_prefetch(p + 128);
  if (lines > 3) {
    __builtin_prefetch(p + 192);
    __builtin_prefetch(p + 256);
  }
}

/* The in-node search runs as tdm__bt_lower (btree_node.h, the code the
 * kernels and tests share) or, where the CPU has them, as the same count in
 * AVX2 or AVX-512 compares. The query loops below are compiled once per
 * variant (target attributes), with the search inlined, into one table per
 * level (bt_isa_fns). */
typedef uint32_t (*lower_fn)(const uint64_t *key, uint64_t q);

ALWAYS_INLINE uint32_t lower_scalar(const uint64_t *key, uint64_t q) { return tdm__bt_lower(key, q); }

/* Unsigned key < q as a signed compare after flipping the sign bits. */
ISA_AVX2 ALWAYS_INLINE uint32_t lower_avx2(const uint64_t *key, uint64_t q) {
  const __m256i sign = _mm256_set1_epi64x((long long)0x8000000000000000ull);
  const __m256i qv = _mm256_xor_si256(_mm256_set1_epi64x((long long)q), sign);
  uint32_t m = 0;
  int i;
  for (i = 0; i < 4; i++) {
    __m256i k = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(key + 4 * (size_t)i)), sign);
    m |= (uint32_t)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(qv, k))) << (4 * i);
  }
  return (uint32_t)__builtin_popcount(m);
}

ISA_AVX512 ALWAYS_INLINE uint32_t lower_avx512(const uint64_t *key, uint64_t q) {
  const __m512i qv = _mm512_set1_epi64((long long)q);
  uint32_t a = _mm512_cmplt_epu64_mask(_mm512_loadu_si512(key), qv);
  uint32_t b = _mm512_cmplt_epu64_mask(_mm512_loadu_si512(key + 8), qv);
  return (uint32_t)__builtin_popcount(a | (b << 8));
}

/* Takes g <= GROUP queries (key bits q) down the tree: node[j] receives the
 * leaf, pos[j] the lower-bound slot in it and, when want_rank, rank[j] the
 * number of keys < q[j]. The tree is non-empty.
 *
 * Each level is one pass over the group: a query compares its node's two key
 * lines (prefetched one pass earlier), then prefetches its child's key and
 * child lines. Rank needs one prefix count per level, cum[c - 1], whose line
 * is known only once c is: it is prefetched then and added one pass later,
 * so each query keeps only three or four lines in flight per level. */
ALWAYS_INLINE void search_group(const tdm_btree *t, const uint64_t *q, int g, uint32_t *node, uint32_t *pos,
                                uint64_t *rank, int want_rank, lower_fn lower) {
  static const uint64_t zero = 0;
  const tdm__bt_node *nodes = BT(t)->nodes;
  const uint64_t *pend[GROUP];
  unsigned lvl;
  int j;
  for (j = 0; j < g; j++) {
    node[j] = t->root;
    if (want_rank) {
      rank[j] = 0;
      pend[j] = &zero;
    }
  }
  for (lvl = t->height - 1; lvl > 0; lvl--) {
    int lines = lvl > 1 ? 3 : 2;
    for (j = 0; j < g; j++) {
      const tdm__bt_node *x = &nodes[node[j]];
      uint32_t c = lower(x->key, q[j]);
      if (want_rank) {
        rank[j] += *pend[j];
        pend[j] = c ? &x->u.in.cum[c - 1] : &zero;
        __builtin_prefetch(pend[j]);
      }
      node[j] = x->u.in.child[c];
      prefetch_lines(&nodes[node[j]], lines);
    }
  }
  for (j = 0; j < g; j++) {
    uint32_t p = lower(nodes[node[j]].key, q[j]);
    pos[j] = p;
    if (want_rank) rank[j] += *pend[j] + p;
  }
}

ALWAYS_INLINE void load_bits(const tdm_btree *t, const void *keys, size_t at, int g, uint64_t *q) {
  int j;
  if (t->ks == 4)
    for (j = 0; j < g; j++) q[j] = tdm__bits32_from_key(((const uint32_t *)keys)[at + (size_t)j], t->kind);
  else
    for (j = 0; j < g; j++) q[j] = tdm__bits64_from_key(((const uint64_t *)keys)[at + (size_t)j], t->kind);
}

static int query_threads(const tdm_btree *t, size_t n) { return tdm__threads_for(t->ctx, n, 8192); }

/* Group gi of a find: the leaf search, then a prefetch of every value line
 * before the values are read. */
ALWAYS_INLINE void find_group(const tdm_btree *t, const void *keys, void *values_out, uint8_t *found_out, size_t n,
                              long gi, lower_fn lower) {
  uint64_t q[GROUP];
  uint32_t node[GROUP], pos[GROUP];
  size_t at = (size_t)gi * GROUP;
  int j, g = (int)(n - at < GROUP ? n - at : GROUP);
  load_bits(t, keys, at, g, q);
  search_group(t, q, g, node, pos, NULL, 0, lower);
  for (j = 0; j < g; j++) __builtin_prefetch(&BT(t)->nodes[node[j]].u.val[pos[j] & 15]);
  for (j = 0; j < g; j++) {
    const tdm__bt_node *x = &BT(t)->nodes[node[j]];
    int hit = tdm__bt_leaf_hit(x, pos[j], q[j]);
    if (found_out) found_out[at + (size_t)j] = (uint8_t)hit;
    if (values_out) tdm__bt_store_val(values_out, at + (size_t)j, hit ? x->u.val[pos[j]] : 0, t->vs);
  }
}

ALWAYS_INLINE void rank_group(const tdm_btree *t, const void *keys, uint64_t *rank_out, size_t n, long gi,
                              lower_fn lower) {
  uint64_t q[GROUP];
  uint32_t node[GROUP], pos[GROUP];
  size_t at = (size_t)gi * GROUP;
  int g = (int)(n - at < GROUP ? n - at : GROUP);
  load_bits(t, keys, at, g, q);
  search_group(t, q, g, node, pos, rank_out + at, 1, lower);
}

/* Number of keys k with lo <= k <= hi for the pairs of group gi, as
 * rank_le(hi) - rank(lo) in one descent of both bounds together. A rank is a
 * sum of one prefix count per level; while the two bounds share a node and
 * pick the same child the two terms cancel, so such levels cost what a find's
 * do (the node's key and child lines, read once for both bounds). From the
 * node where they part (for ranges of a few keys, the leaves' parent) each
 * bound follows its own path and adds its prefix count, prefetched one pass
 * before it is read, so the count takes the same number of dependent memory
 * rounds as a find: only the second leaf's key lines and one or two prefix
 * count lines per level below the split are extra. The common short range,
 * whose bounds part at the leaves' parent into neighbouring leaves, reads
 * no prefix counts at all: the difference of the two is the first leaf's
 * size, which its key lines (read anyway) tell, as the slots below the
 * padding (that leaf has a right neighbour, so it cannot hold the all-ones
 * key that padding equals). */
ALWAYS_INLINE void count_group(const tdm_btree *t, const void *lo, const void *hi, uint64_t *out, size_t n, long gi,
                               lower_fn lower) {
  static const uint64_t zero = 0;
  const tdm__bt_node *nodes = BT(t)->nodes;
  uint64_t q[GROUP], h[GROUP], acc[GROUP], adj[GROUP];
  const uint64_t *pa[GROUP], *pb[GROUP];
  uint32_t a[GROUP], b[GROUP];
  size_t at = (size_t)gi * GROUP;
  unsigned lvl;
  int j, g = (int)(n - at < GROUP ? n - at : GROUP);
  load_bits(t, lo, at, g, q);
  load_bits(t, hi, at, g, h);
  for (j = 0; j < g; j++) {
    a[j] = b[j] = t->root;
    acc[j] = adj[j] = 0;
    pa[j] = pb[j] = &zero;
  }
  for (lvl = t->height - 1; lvl > 0; lvl--) {
    int lines = lvl > 1 ? 3 : 2;
    for (j = 0; j < g; j++) {
      const tdm__bt_node *x = &nodes[a[j]], *y = &nodes[b[j]];
      /* The node holding hi is the one holding its lower bound: separators
       * are upper bounds of their left child. */
      uint32_t ca = lower(x->key, q[j]), cb = lower(y->key, h[j]);
      acc[j] += *pb[j] - *pa[j];
      if (a[j] == b[j] && (ca == cb || (lvl == 1 && cb == ca + 1))) {
        /* One path on, or parted into neighbouring leaves (lvl 1): adj says
         * the leaf step adds the first one's size. */
        adj[j] = ca != cb;
        pa[j] = pb[j] = &zero;
      } else {
        pa[j] = ca ? &x->u.in.cum[ca - 1] : &zero;
        pb[j] = cb ? &y->u.in.cum[cb - 1] : &zero;
        __builtin_prefetch(pa[j]);
        __builtin_prefetch(pb[j]);
      }
      a[j] = x->u.in.child[ca];
      b[j] = y->u.in.child[cb];
      prefetch_lines(&nodes[a[j]], lines);
      if (b[j] != a[j]) prefetch_lines(&nodes[b[j]], lines);
    }
  }
  for (j = 0; j < g; j++) {
    const tdm__bt_node *y = &nodes[b[j]];
    uint64_t below_lo = lower(nodes[a[j]].key, q[j]);
    /* Keys <= hi in its leaf; padding is all ones, so for hi all ones the
     * leaf's count says how many slots are keys. */
    uint64_t upto_hi = h[j] == TDM_BT_PAD ? y->count : lower(y->key, h[j] + 1);
    uint64_t left = (0 - adj[j]) & lower(nodes[a[j]].key, TDM_BT_PAD);
    uint64_t c = acc[j] + *pb[j] - *pa[j] + left + upto_hi - below_lo;
    out[at + (size_t)j] = q[j] > h[j] ? 0 : c;
  }
}

/* NOLINTBEGIN(bugprone-macro-parentheses): ISA is an attribute list and SFX a
 * name suffix; neither can be parenthesised. */
#define QUERY_LOOPS(SFX, ISA, LOWER)                                                                          \
  ISA static void find_##SFX(const tdm_btree *t, const void *keys, void *values_out, uint8_t *found_out,       \
                             size_t n) {                                                                      \
    long gi, ng = (long)((n + GROUP - 1) / GROUP);                                                            \
    TDM__PAR_FOR(query_threads(t, n), gi, ng, find_group(t, keys, values_out, found_out, n, gi, (LOWER)));    \
  }                                                                                                           \
  ISA static void rank_##SFX(const tdm_btree *t, const void *keys, uint64_t *rank_out, size_t n) {            \
    long gi, ng = (long)((n + GROUP - 1) / GROUP);                                                            \
    TDM__PAR_FOR(query_threads(t, n), gi, ng, rank_group(t, keys, rank_out, n, gi, (LOWER)));                 \
  }                                                                                                           \
  ISA static void count_##SFX(const tdm_btree *t, const void *lo, const void *hi, uint64_t *out, size_t n) {  \
    long gi, ng = (long)((n + GROUP - 1) / GROUP);                                                            \
    TDM__PAR_FOR(query_threads(t, n), gi, ng, count_group(t, lo, hi, out, n, gi, (LOWER)));                   \
  }

#define ISA_NONE
QUERY_LOOPS(scalar, ISA_NONE, lower_scalar)
QUERY_LOOPS(avx2, ISA_AVX2, lower_avx2)
QUERY_LOOPS(avx512, ISA_AVX512, lower_avx512)
/* NOLINTEND(bugprone-macro-parentheses) */

static const tdm__bt_isa_fns bt_isa_fns[TDM__BT_ISA_LEVELS] = {
    [TDM__BT_ISA_SCALAR] = {.leaves = leaves_scalar, .find = find_scalar, .rank = rank_scalar, .count = count_scalar},
    [TDM__BT_ISA_AVX2] = {.leaves = leaves_scalar, .find = find_avx2, .rank = rank_avx2, .count = count_avx2},
    [TDM__BT_ISA_AVX512] = {.leaves = leaves_avx512, .find = find_avx512, .rank = rank_avx512, .count = count_avx512},
};

int tdm__bt_isa_cap = TDM__BT_ISA_LEVELS - 1;

/* The best level this CPU runs, at most tdm__bt_isa_cap. */
static tdm__bt_isa bt_isa_pick(void) {
  int l, cap = __atomic_load_n(&tdm__bt_isa_cap, __ATOMIC_RELAXED);
  __builtin_cpu_init();
  l = __builtin_cpu_supports("avx512f") ? TDM__BT_ISA_AVX512
      : __builtin_cpu_supports("avx2")  ? TDM__BT_ISA_AVX2
                                        : TDM__BT_ISA_SCALAR;
  if (cap >= TDM__BT_ISA_SCALAR && cap < l) l = cap;
  return (tdm__bt_isa)l;
}

/* Fixes tree t's loops: called once, by bt_build. */
static void bt_pick_fns(tdm_btree *t) {
  BT(t)->isa = bt_isa_pick();
  BT(t)->fn = &bt_isa_fns[BT(t)->isa];
}

static tdm_status bt_find(const tdm_btree *t, const void *keys, void *values_out, uint8_t *found_out,
                            size_t n) {
  if (t->size == 0) {
    if (values_out) memset(values_out, 0, n * t->vs);
    if (found_out) memset(found_out, 0, n);
    return TDM_OK;
  }
  BT(t)->fn->find(t, keys, values_out, found_out, n);
  return TDM_OK;
}

static tdm_status bt_rank(const tdm_btree *t, const void *keys, uint64_t *rank_out, size_t n) {
  if (t->size == 0) {
    memset(rank_out, 0, n * sizeof *rank_out);
    return TDM_OK;
  }
  BT(t)->fn->rank(t, keys, rank_out, n);
  return TDM_OK;
}

static tdm_status bt_range_count(const tdm_btree *t, const void *lo, const void *hi, uint64_t *count_out,
                                   size_t n) {
  if (t->size == 0) {
    memset(count_out, 0, n * sizeof *count_out);
    return TDM_OK;
  }
  BT(t)->fn->count(t, lo, hi, count_out, n);
  return TDM_OK;
}

static tdm_status bt_range(const tdm_btree *t, const void *lo, const void *hi, size_t n, uint64_t *offsets_out,
                             void *keys_out, void *values_out, size_t cap) {
  uint64_t total = 0;
  size_t i;
  long qi;
  tdm_status st = bt_range_count(t, lo, hi, offsets_out, n);
  if (st != TDM_OK) return st;
  for (i = 0; i < n; i++) {
    uint64_t c = offsets_out[i];
    offsets_out[i] = total;
    total += c;
  }
  offsets_out[n] = total;
  if (total > cap)
    return tdm__fail(TDM_ERR_CAPACITY, "tdm_btree_range: the ranges hold %llu keys, but cap is %zu",
                     (unsigned long long)total, cap);
  TDM__PAR_FOR_DYN(query_threads(t, total + n), 64, qi, (long)n, {
    uint64_t q, at = offsets_out[qi], end = offsets_out[qi + 1];
    uint32_t node, pos;
    const tdm__bt_node *x;
    if (at == end) continue;
    load_bits(t, lo, (size_t)qi, 1, &q);
    (void)tdm__bt_descend(BT(t)->nodes, t->root, t->height, q, &node, &pos);
    x = &BT(t)->nodes[node];
    for (; at < end; at++, pos++) {
      if (pos >= x->count) {
        x = &BT(t)->nodes[x->next];
        pos = 0;
      }
      if (keys_out) tdm__bt_store_key(keys_out, at, x->key[pos], t->ks, t->kind);
      if (values_out) tdm__bt_store_val(values_out, at, x->u.val[pos], t->vs);
    }
  });
  return TDM_OK;
}

static tdm_status bt_export(const tdm_btree *t, void *keys_out, void *values_out) {
  uint32_t l = t->first_leaf, j;
  uint64_t at = 0;
  while (l != TDM_BT_NIL) {
    const tdm__bt_node *x = &BT(t)->nodes[l];
    for (j = 0; j < x->count; j++, at++) {
      if (keys_out) tdm__bt_store_key(keys_out, at, x->key[j], t->ks, t->kind);
      if (values_out) tdm__bt_store_val(values_out, at, x->u.val[j], t->vs);
    }
    l = x->next;
  }
  return TDM_OK;
}

/* ---- node editing --------------------------------------------------------- */

/* Keys under a node. */
static uint64_t node_total(const tdm__bt_node *x) {
  return x->level == 0 ? x->count : x->u.in.cum[x->count - 1];
}

/* Writes c keys and values into leaf x, padding the rest. */
static void leaf_set(tdm__bt_node *x, const uint64_t *k, const uint64_t *v, uint32_t c) {
  uint32_t i;
  for (i = 0; i < 16; i++) {
    x->key[i] = i < c ? k[i] : TDM_BT_PAD;
    x->u.val[i] = i < c ? v[i] : 0;
  }
  x->count = c;
}

/* Writes c children (c - 1 separators, per-child key counts sz) into inner
 * node x, padding the rest. */
static void inner_set(tdm__bt_node *x, const uint64_t *sep, const uint32_t *ch, const uint64_t *sz, uint32_t c) {
  uint32_t i;
  uint64_t run = 0;
  for (i = 0; i < 16; i++) {
    run += i < c ? sz[i] : 0;
    x->key[i] = i + 1 < c ? sep[i] : TDM_BT_PAD;
    x->u.in.child[i] = i < c ? ch[i] : TDM_BT_NIL;
    x->u.in.cum[i] = i < c ? run : 0;
  }
  x->count = c;
}

/* Keys under child i of inner node x. */
static uint64_t child_size(const tdm__bt_node *x, uint32_t i) {
  return x->u.in.cum[i] - (i ? x->u.in.cum[i - 1] : 0);
}

/* Adds delta (mod 2^64) to the counts of children c.. of inner node x. */
static void cum_add(tdm__bt_node *x, uint32_t c, uint64_t delta) {
  uint32_t i;
  for (i = c; i < x->count; i++) x->u.in.cum[i] += delta;
}

typedef struct path_step {
  uint32_t node, c; /* an inner node and the child taken */
} path_step;

/* A batch is applied in ascending key order through a cursor: the
 * root-to-leaf path of the last key and the (inclusive) upper bound of every
 * subtree on it. The next key usually lies under the same parent, so the
 * descent restarts at the deepest path node whose subtree can hold it rather
 * than at the root (lower bounds hold because keys ascend). Any change of
 * structure (split, borrow, merge, new or collapsed root) invalidates it. */
typedef struct cursor {
  path_step path[TDM_BT_MAX_HEIGHT]; /* inner nodes passed and children taken */
  uint64_t hi[TDM_BT_MAX_HEIGHT];    /* keys under path[d]'s child are <= hi[d] ... */
  uint8_t open[TDM_BT_MAX_HEIGHT];   /* ... unless open[d]: no bound below the root's */
  unsigned depth;
  uint32_t leaf;
  int valid;
} cursor;

/* Moves the cursor to the leaf that holds (or would hold) key bits k, which
 * is greater than the cursor's previous key; returns the leaf. */
static uint32_t cursor_seek(const tdm_btree *t, cursor *cu, uint64_t k) {
  unsigned d = 0;
  uint32_t n = t->root;
  if (cu->valid) {
    d = cu->depth;
    while (d > 0 && !cu->open[d - 1] && k > cu->hi[d - 1]) d--;
    if (d == cu->depth) return cu->leaf;
    n = cu->path[d].node;
  }
  while (BT(t)->nodes[n].level > 0) {
    const tdm__bt_node *x = &BT(t)->nodes[n];
    uint32_t c = tdm__bt_lower(x->key, k);
    cu->path[d].node = n;
    cu->path[d].c = c;
    /* Separators are below all ones (the right child holds greater keys),
     * so padding marks the last child, bounded by the ancestors. */
    if (x->key[c & 15] != TDM_BT_PAD) {
      cu->hi[d] = x->key[c & 15];
      cu->open[d] = 0;
    } else {
      cu->hi[d] = d ? cu->hi[d - 1] : 0;
      cu->open[d] = d ? cu->open[d - 1] : 1;
    }
    d++;
    n = x->u.in.child[c];
  }
  cu->depth = d;
  cu->leaf = n;
  cu->valid = 1;
  return n;
}

/* Prefetches the leaf a later key k of the batch will probably need, when it
 * lies under the cursor leaf's parent (the parent is in cache), so the leaf
 * misses of consecutive keys overlap. Only a hint: later splits may move k. */
enum { AHEAD = 8 };

static void cursor_prefetch(const tdm_btree *t, const cursor *cu, uint64_t k) {
  unsigned d;
  const tdm__bt_node *p, *x;
  if (!cu->valid || cu->depth == 0) return;
  d = cu->depth - 1;
  if (d > 0 && !cu->open[d - 1] && k > cu->hi[d - 1]) return;
  p = &BT(t)->nodes[cu->path[d].node];
  x = &BT(t)->nodes[p->u.in.child[tdm__bt_lower(p->key, k)]];
  prefetch_lines(x, 5);
  __builtin_prefetch(&x->count);
}

/* ---- insert --------------------------------------------------------------- */

/* Inserts (k, v) into a full leaf at slot pos by splitting it 9 / 8; returns
 * the new right leaf and its separator (the left leaf's last key). */
static uint32_t leaf_split(tdm_btree *t, uint32_t li, uint32_t pos, uint64_t k, uint64_t v, uint64_t *sep) {
  uint64_t kk[17], vv[17];
  uint32_t ri = node_new(t);
  tdm__bt_node *l = &BT(t)->nodes[li], *r = &BT(t)->nodes[ri];
  memcpy(kk, l->key, (size_t)pos * 8);
  memcpy(vv, l->u.val, (size_t)pos * 8);
  kk[pos] = k;
  vv[pos] = v;
  memcpy(kk + pos + 1, l->key + pos, (size_t)(16 - pos) * 8);
  memcpy(vv + pos + 1, l->u.val + pos, (size_t)(16 - pos) * 8);
  leaf_set(l, kk, vv, 9);
  leaf_set(r, kk + 9, vv + 9, 8);
  r->level = 0;
  r->next = l->next;
  r->prev = li;
  if (l->next != TDM_BT_NIL) BT(t)->nodes[l->next].prev = ri;
  else t->last_leaf = ri;
  l->next = ri;
  *sep = kk[8];
  return ri;
}

/* Child c of inner node pi was split, its upper half becoming node ri with
 * separator sep between them. Adds ri to pi; when pi is full, splits it 9 / 8
 * and returns the new right node with *sep the separator pushed up, else
 * returns TDM_BT_NIL. */
static uint32_t inner_add(tdm_btree *t, uint32_t pi, uint32_t c, uint32_t ri, uint64_t *sep) {
  uint64_t ss[16] = {0}, sz[17] = {0};
  uint32_t ch[17] = {0}, i, nc, qi;
  tdm__bt_node *p = &BT(t)->nodes[pi];
  nc = p->count + 1;
  for (i = 0; i <= c; i++) {
    ch[i] = p->u.in.child[i];
    sz[i] = child_size(p, i);
  }
  sz[c] = node_total(&BT(t)->nodes[ch[c]]);
  ch[c + 1] = ri;
  sz[c + 1] = node_total(&BT(t)->nodes[ri]);
  for (i = c + 1; i < p->count; i++) {
    ch[i + 1] = p->u.in.child[i];
    sz[i + 1] = child_size(p, i);
  }
  for (i = 0; i < c; i++) ss[i] = p->key[i];
  ss[c] = *sep;
  for (i = c; i + 1 < p->count; i++) ss[i + 1] = p->key[i];
  if (nc <= 16) {
    inner_set(p, ss, ch, sz, nc);
    return TDM_BT_NIL;
  }
  qi = node_new(t);
  inner_set(p, ss, ch, sz, 9);
  inner_set(&BT(t)->nodes[qi], ss + 9, ch + 9, sz + 9, 8);
  BT(t)->nodes[qi].level = p->level;
  BT(t)->nodes[qi].next = BT(t)->nodes[qi].prev = TDM_BT_NIL;
  *sep = ss[8];
  return qi;
}

/* Inserts key bits k with value v; an existing key combines values under the
 * policy. Returns 1 when the key is new. Capacity for every split is reserved. */
static int insert_one(tdm_btree *t, cursor *cu, uint64_t k, uint64_t v) {
  const path_step *path;
  unsigned depth, d;
  uint32_t li, pos, ri;
  uint64_t sep;
  tdm__bt_node *l;

  if (t->root == TDM_BT_NIL) {
    li = node_new(t);
    leaf_set(&BT(t)->nodes[li], &k, &v, 1);
    BT(t)->nodes[li].next = BT(t)->nodes[li].prev = TDM_BT_NIL;
    t->root = t->first_leaf = t->last_leaf = li;
    t->height = 1;
    t->size = 1;
    cu->valid = 0;
    return 1;
  }
  li = cursor_seek(t, cu, k);
  path = cu->path;
  depth = cu->depth;
  l = &BT(t)->nodes[li];
  pos = tdm__bt_lower(l->key, k);
  if (tdm__bt_leaf_hit(l, pos, k)) {
    l->u.val[pos] = tdm__dup_combine(l->u.val[pos], v, t->dup, t->vs, t->vkind);
    return 0;
  }
  for (d = 0; d < depth; d++) cum_add(&BT(t)->nodes[path[d].node], path[d].c, 1);
  t->size++;
  if (l->count < 16) {
    memmove(l->key + pos + 1, l->key + pos, (size_t)(l->count - pos) * 8);
    memmove(l->u.val + pos + 1, l->u.val + pos, (size_t)(l->count - pos) * 8);
    l->key[pos] = k;
    l->u.val[pos] = v;
    l->count++;
    return 1;
  }
  cu->valid = 0; /* the path changes from here on */
  ri = leaf_split(t, li, pos, k, v, &sep);
  for (d = depth; d-- > 0;) {
    ri = inner_add(t, path[d].node, path[d].c, ri, &sep);
    if (ri == TDM_BT_NIL) return 1;
  }
  { /* The root split: a new root above the two halves. */
    uint32_t nr = node_new(t), ch[2];
    uint64_t sz[2];
    ch[0] = t->root;
    ch[1] = ri;
    sz[0] = node_total(&BT(t)->nodes[ch[0]]);
    sz[1] = node_total(&BT(t)->nodes[ri]);
    inner_set(&BT(t)->nodes[nr], &sep, ch, sz, 2);
    BT(t)->nodes[nr].level = BT(t)->nodes[t->root].level + 1;
    BT(t)->nodes[nr].next = BT(t)->nodes[nr].prev = TDM_BT_NIL;
    t->root = nr;
    t->height++;
  }
  return 1;
}

/* Upper bound on the node slots a batch of m new keys can take (reserved
 * before the first change, so inserting cannot fail halfway). A node holding
 * e <= 16 entries that receives a more has split into k + 1 nodes of >= 8
 * each, so k <= (16 + a) / 8 - 1 <= 1 + a / 8: splits at a level are at most
 * min(entries added, nodes) + added / 8, plus one for a new root, and the
 * entries added to the next level are those splits. Every level a batch can
 * reach is counted (new levels too). A second bound holds for the whole
 * tree: every non-root node is at least half full, and freed slots are reused
 * first. The bound only reserves address space (see nodes_reserve). */
static uint64_t insert_node_bound(const tdm_btree *t, uint64_t m) {
  uint64_t s = m, total = 0, global;
  unsigned l;
  for (l = 0; l < TDM_BT_MAX_HEIGHT; l++) {
    s = (s < BT(t)->live ? s : BT(t)->live) + s / 8 + 1;
    total += s;
  }
  total += BT(t)->used + 2;
  global = (t->size + m) / 7 + 2 * (uint64_t)TDM_BT_MAX_HEIGHT + 2;
  if (global < BT(t)->used) global = BT(t)->used;
  return total < global ? total : global;
}

static tdm_status bt_insert(tdm_btree *t, const void *keys, const void *values, size_t n) {
  static const char fn[] = "tdm_btree_insert";
  batch b;
  cursor cu;
  size_t i;
  tdm_status st = batch_make(t, keys, values, n, &b, fn);
  if (st != TDM_OK) return st;
  st = nodes_reserve(t, insert_node_bound(t, b.m), fn);
  cu.valid = 0;
  if (st == TDM_OK)
    for (i = 0; i < b.m; i++) {
      if (i + AHEAD < b.m) cursor_prefetch(t, &cu, b.kb[i + AHEAD]);
      (void)insert_one(t, &cu, b.kb[i], b.vb[i]);
    }
  batch_free(&b);
  return st;
}

/* ---- erase ---------------------------------------------------------------- */

/* Removes child j (and separator j - 1, j >= 1) from inner node p after its
 * keys moved into child j - 1: the count of j - 1 becomes the old prefix
 * through j, so the prefix array just loses entry j - 1. */
static void inner_remove(tdm__bt_node *p, uint32_t j) {
  uint32_t i;
  for (i = j; i + 1 < p->count; i++) p->u.in.child[i] = p->u.in.child[i + 1];
  for (i = j - 1; i + 1 < p->count; i++) p->u.in.cum[i] = p->u.in.cum[i + 1];
  for (i = j - 1; i + 2 < p->count; i++) p->key[i] = p->key[i + 1];
  p->count--;
  p->u.in.child[p->count] = TDM_BT_NIL;
  p->u.in.cum[p->count] = 0;
  p->key[p->count - 1] = TDM_BT_PAD;
}

/* Merges child j of parent p into child j - 1 and frees child j. */
static void merge_into_left(tdm_btree *t, uint32_t pi, uint32_t j) {
  tdm__bt_node *p = &BT(t)->nodes[pi];
  uint32_t si = p->u.in.child[j - 1], xi = p->u.in.child[j], i;
  tdm__bt_node *s = &BT(t)->nodes[si], *x = &BT(t)->nodes[xi];
  if (s->level == 0) {
    for (i = 0; i < x->count; i++) {
      s->key[s->count + i] = x->key[i];
      s->u.val[s->count + i] = x->u.val[i];
    }
    s->count += x->count;
    s->next = x->next;
    if (x->next != TDM_BT_NIL) BT(t)->nodes[x->next].prev = si;
    else t->last_leaf = si;
  } else {
    uint64_t base = s->u.in.cum[s->count - 1];
    s->key[s->count - 1] = p->key[j - 1];
    for (i = 0; i < x->count; i++) {
      if (i + 1 < x->count) s->key[s->count + i] = x->key[i];
      s->u.in.child[s->count + i] = x->u.in.child[i];
      s->u.in.cum[s->count + i] = base + x->u.in.cum[i];
    }
    s->count += x->count;
  }
  inner_remove(p, j);
  node_release(t, xi);
}

/* Moves the last entry of child c - 1 to the front of child c. */
static void borrow_left(tdm_btree *t, tdm__bt_node *p, uint32_t c) {
  tdm__bt_node *s = &BT(t)->nodes[p->u.in.child[c - 1]], *x = &BT(t)->nodes[p->u.in.child[c]];
  uint64_t moved;
  if (x->level == 0) {
    memmove(x->key + 1, x->key, (size_t)x->count * 8);
    memmove(x->u.val + 1, x->u.val, (size_t)x->count * 8);
    x->key[0] = s->key[s->count - 1];
    x->u.val[0] = s->u.val[s->count - 1];
    x->count++;
    s->count--;
    s->key[s->count] = TDM_BT_PAD;
    s->u.val[s->count] = 0;
    p->key[c - 1] = s->key[s->count - 1];
    moved = 1;
  } else {
    uint32_t i;
    moved = child_size(s, s->count - 1);
    memmove(x->key + 1, x->key, (size_t)(x->count - 1) * 8);
    memmove(x->u.in.child + 1, x->u.in.child, (size_t)x->count * 4);
    for (i = x->count; i > 0; i--) x->u.in.cum[i] = x->u.in.cum[i - 1] + moved;
    x->key[0] = p->key[c - 1];
    x->u.in.child[0] = s->u.in.child[s->count - 1];
    x->u.in.cum[0] = moved;
    x->count++;
    p->key[c - 1] = s->key[s->count - 2];
    s->count--;
    s->key[s->count - 1] = TDM_BT_PAD;
    s->u.in.child[s->count] = TDM_BT_NIL;
    s->u.in.cum[s->count] = 0;
  }
  p->u.in.cum[c - 1] -= moved; /* the prefix through c is unchanged */
}

/* Moves the first entry of child c + 1 to the end of child c. */
static void borrow_right(tdm_btree *t, tdm__bt_node *p, uint32_t c) {
  tdm__bt_node *x = &BT(t)->nodes[p->u.in.child[c]], *r = &BT(t)->nodes[p->u.in.child[c + 1]];
  uint64_t moved;
  if (x->level == 0) {
    x->key[x->count] = r->key[0];
    x->u.val[x->count] = r->u.val[0];
    x->count++;
    p->key[c] = r->key[0];
    memmove(r->key, r->key + 1, (size_t)(r->count - 1) * 8);
    memmove(r->u.val, r->u.val + 1, (size_t)(r->count - 1) * 8);
    r->count--;
    r->key[r->count] = TDM_BT_PAD;
    r->u.val[r->count] = 0;
    moved = 1;
  } else {
    uint32_t i;
    moved = r->u.in.cum[0];
    x->key[x->count - 1] = p->key[c];
    x->u.in.child[x->count] = r->u.in.child[0];
    x->u.in.cum[x->count] = x->u.in.cum[x->count - 1] + moved;
    x->count++;
    p->key[c] = r->key[0];
    memmove(r->key, r->key + 1, (size_t)(r->count - 2) * 8);
    memmove(r->u.in.child, r->u.in.child + 1, (size_t)(r->count - 1) * 4);
    for (i = 0; i + 1 < r->count; i++) r->u.in.cum[i] = r->u.in.cum[i + 1] - moved;
    r->count--;
    r->key[r->count - 1] = TDM_BT_PAD;
    r->u.in.child[r->count] = TDM_BT_NIL;
    r->u.in.cum[r->count] = 0;
  }
  p->u.in.cum[c] += moved; /* the prefix through c + 1 is unchanged */
}

/* Erases key bits k; returns 1 when it was present. */
static int erase_one(tdm_btree *t, cursor *cu, uint64_t k) {
  const path_step *path;
  unsigned depth, d;
  uint32_t li, pos, xi;
  tdm__bt_node *l;

  if (t->root == TDM_BT_NIL) return 0;
  li = cursor_seek(t, cu, k);
  path = cu->path;
  depth = cu->depth;
  l = &BT(t)->nodes[li];
  pos = tdm__bt_lower(l->key, k);
  if (!tdm__bt_leaf_hit(l, pos, k)) return 0;
  memmove(l->key + pos, l->key + pos + 1, (size_t)(l->count - pos - 1) * 8);
  memmove(l->u.val + pos, l->u.val + pos + 1, (size_t)(l->count - pos - 1) * 8);
  l->count--;
  l->key[l->count] = TDM_BT_PAD;
  l->u.val[l->count] = 0;
  for (d = 0; d < depth; d++) cum_add(&BT(t)->nodes[path[d].node], path[d].c, (uint64_t)-1);
  t->size--;

  /* Rebalance bottom-up while a non-root node is underfull. */
  xi = li;
  for (d = depth; d > 0; d--) {
    tdm__bt_node *p = &BT(t)->nodes[path[d - 1].node];
    uint32_t c = path[d - 1].c;
    if (BT(t)->nodes[xi].count >= TDM_BT_MIN) return 1;
    cu->valid = 0;
    if (c > 0 && BT(t)->nodes[p->u.in.child[c - 1]].count > TDM_BT_MIN) borrow_left(t, p, c);
    else if (c + 1 < p->count && BT(t)->nodes[p->u.in.child[c + 1]].count > TDM_BT_MIN) borrow_right(t, p, c);
    else if (c > 0) merge_into_left(t, path[d - 1].node, c);
    else merge_into_left(t, path[d - 1].node, c + 1);
    xi = path[d - 1].node;
  }
  /* xi is the root. */
  l = &BT(t)->nodes[xi];
  if (l->level == 0 && l->count == 0) {
    cu->valid = 0;
    node_release(t, xi);
    t->root = t->first_leaf = t->last_leaf = TDM_BT_NIL;
    t->height = 0;
  } else if (l->level > 0 && l->count == 1) {
    /* Root collapse: a root with one child hands the tree to that child. */
    cu->valid = 0;
    t->root = l->u.in.child[0];
    node_release(t, xi);
    t->height--;
  }
  return 1;
}

static tdm_status bt_erase(tdm_btree *t, const void *keys, size_t n, size_t *erased_out) {
  batch b;
  cursor cu;
  size_t i, erased = 0;
  tdm_status st = batch_make(t, keys, NULL, n, &b, "tdm_btree_erase");
  if (st != TDM_OK) return st;
  cu.valid = 0;
  for (i = 0; i < b.m && t->size > 0; i++) {
    if (i + AHEAD < b.m) cursor_prefetch(t, &cu, b.kb[i + AHEAD]);
    erased += (size_t)erase_one(t, &cu, b.kb[i]);
  }
  batch_free(&b);
  if (erased_out) *erased_out = erased;
  return TDM_OK;
}

/* ---- validate ----------------------------------------------------------------- */

static tdm_status bt_validate(const tdm_btree *t) {
  if (t->root != TDM_BT_NIL && BT(t)->live > BT(t)->used)
    return tdm__fail(TDM_ERR_CORRUPT, "tdm_btree_validate: tree: reachable twice: %u live nodes in %u slots",
                     BT(t)->live, BT(t)->used);
  return tdm__bt_check_nodes(t, BT(t)->nodes, BT(t)->used, BT(t)->live);
}

static tdm_status bt_view(const tdm_btree *t, tdm_btree_view *out) {
  out->nodes = t->root == TDM_BT_NIL ? NULL : BT(t)->nodes;
  return TDM_OK;
}

const tdm__btree_ops tdm__btree_cpu_ops = {
    .state_bytes = sizeof(tdm__btree_cpu),
    .build = bt_build,
    .destroy = bt_free,
    .find = bt_find,
    .rank = bt_rank,
    .range_count = bt_range_count,
    .range = bt_range,
    .insert = bt_insert,
    .erase = bt_erase,
    .export_all = bt_export,
    .validate = bt_validate,
    .view = bt_view,
};
