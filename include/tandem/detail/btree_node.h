/*
 * btree_node.h: the one node layout of tandem's B+ tree, shared by the CPU
 * backend, the CUDA kernels and the tests, with the per-node logic both
 * backends run (in-node search, value combining, bulk-load geometry).
 *
 * A tree is a flat array of 384-byte nodes addressed by 32-bit index (never by
 * pointer), so it copies between host and device as one block and the same
 * code walks it on either side.
 *
 * Keys are stored as order-preserving "sort bits" (keybits.h) widened to
 * 64 bits, values as raw 64-bit words (32-bit values zero-extended). So every
 * comparison is one unsigned compare, float totalOrder and signed order come
 * for free, and one code path serves all twelve key/value type pairs.
 *
 *   byte 0           128            192            256            320   336  384
 *        +------------+--------------+--------------+--------------+-----+----+
 *   leaf | key[0..15] | val[0..7]    | val[8..15]   | 0 (unused)   | hdr | -- |
 *        +------------+--------------+--------------+--------------+-----+----+
 *  inner | key[0..15] | child[0..15] | cum[0..7]    | cum[8..15]   | hdr | -- |
 *        | separators | (u32)        | (u64)        | (u64)        |     |    |
 *        +------------+--------------+--------------+--------------+-----+----+
 *   hdr = count, level, next, prev (u32 each); 384 bytes = six cache lines.
 *
 * Fanout 16 on both levels: 16 u64 keys are two cache lines, searched with
 * one fixed-length count (two AVX-512 compares on CPUs that have them). A
 * search touches key lines 0-1 and then one more line: the child line of an
 * inner node or a value line of a leaf; rank adds one load from a cum line
 * (prefix counts make a node's share of a rank one load). The header sits
 * out of the way because searches never need it (the padding sentinel below
 * makes the node search count-free).
 *
 * Invariants (checked by tdm_btree_validate, in this order of naming):
 *  - "level": leaves have level 0; a child's level is its parent's minus one,
 *    so every leaf lies at the same depth (height - 1).
 *  - "fill": a leaf holds 1..16 keys, an inner node 2..16 children; every node
 *    but the root holds at least 8 (TDM_BT_MIN).
 *  - "padding": key slots at and after `count` (leaf) or `count - 1` (inner:
 *    count children have count - 1 separators) hold TDM_BT_PAD (all ones);
 *    unused child slots hold TDM_BT_NIL and unused cum slots 0.
 *  - "key order": keys (leaf) and separators (inner) strictly increase.
 *  - "separator bounds": child i of an inner node holds only keys k with
 *    key[i-1] < k <= key[i] (the bounds of the first and last child come from
 *    the ancestors). A separator is thus an upper bound of its left child, so
 *    erasing keys never needs to touch a separator.
 *  - "subtree count": cum[i] is the number of keys under children 0..i; the
 *    root's cum[count - 1] is the tree's size.
 *  - "leaf chain": next/prev link the leaves in key order, the first leaf has
 *    prev NIL, the last next NIL, and the chain visits exactly the leaves.
 *  - "reachable twice": every node is reachable from the root exactly once,
 *    and the reachable nodes are exactly the live (non-free) ones.
 * Free nodes (after merges) carry level TDM_BT_FREE and are chained by next.
 *
 * Search: tdm__bt_lower counts the slots whose key is < q over all 16 slots.
 * Padding is all ones, never < q, so the count equals the lower-bound position
 * without looking at `count`: in a leaf it is the slot of the first key >= q,
 * in an inner node the child whose range holds q (separators are upper bounds
 * of their left child). The loop has a fixed trip count and no branches.
 */
#ifndef TANDEM_BTREE_NODE_H
#define TANDEM_BTREE_NODE_H

#include "hd.h"
#include "dup.h"
#include "keybits.h"

#define TDM_BT_B 16u             /* slots per node: keys in a leaf, children in an inner node */
#define TDM_BT_MIN 8u            /* minimum fill of every node but the root */
#define TDM_BT_BULK 14u          /* fill of nodes made by a bulk load: two slots left free */
#define TDM_BT_NIL 0xFFFFFFFFu   /* no node */
#define TDM_BT_FREE 0xFFFFFFFFu  /* level of a node on the free list */
#define TDM_BT_PAD 0xFFFFFFFFFFFFFFFFull /* key of an unused slot */
#define TDM_BT_MAX_HEIGHT 32u    /* 8^31 keys: more than any address space */

typedef struct tdm__bt_inner {
  uint32_t child[16]; /* node index of each child; TDM_BT_NIL when unused */
  uint64_t cum[16];   /* keys under children 0..i (inclusive prefix); 0 when unused */
} tdm__bt_inner;

typedef struct tdm__bt_node {
  uint64_t key[16]; /* leaf: keys as sort bits; inner: separators; unused: TDM_BT_PAD */
  union {
    uint64_t val[16]; /* leaf: values, raw bits zero-extended to 64 */
    tdm__bt_inner in;  /* inner */
  } u;
  uint32_t count;   /* leaf: keys; inner: children */
  uint32_t level;   /* 0 for leaves, height - 1 at the root, TDM_BT_FREE when free */
  uint32_t next;    /* leaf chain (and free list) */
  uint32_t prev;    /* leaf chain */
  uint64_t pad[6];  /* to 384 bytes: six whole cache lines (words: one 8-byte store each) */
} tdm__bt_node;

/* Number of keys in key[0..15] that are < q: the lower-bound slot of q. */
TDM_HD uint32_t tdm__bt_lower(const uint64_t *key, uint64_t q) {
  uint32_t c = 0;
  int i;
  for (i = 0; i < 16; i++) c += (uint32_t)(key[i] < q);
  return c;
}

/* Keys under the children left of child c: one load from the prefix counts
 * (0 for c == 0, without a branch). */
TDM_HD uint64_t tdm__bt_left_size(const uint64_t *cum, uint32_t c) {
  return cum[(c - 1) & 15] & (0 - (uint64_t)(c != 0));
}

/* 1 if leaf slot pos (from tdm__bt_lower) holds q. Padding equals q only when q
 * is all ones, so only then is the count consulted. */
TDM_HD int tdm__bt_leaf_hit(const tdm__bt_node *leaf, uint32_t pos, uint64_t q) {
  if (pos >= 16 || leaf->key[pos] != q) return 0;
  return q != TDM_BT_PAD || pos < leaf->count;
}

/* Takes key bits q from the root to its leaf: *leaf receives the leaf, *pos
 * the lower-bound slot in it; returns the rank of q (keys < q). The tree is
 * non-empty and height >= 1. The one-query form of the CPU's grouped search;
 * the CUDA kernels run it per thread. */
TDM_HD uint64_t tdm__bt_descend(const tdm__bt_node *nodes, uint32_t root, uint32_t height, uint64_t q,
                               uint32_t *leaf, uint32_t *pos) {
  uint64_t rank = 0;
  uint32_t n = root, l, c;
  for (l = height; l > 1; l--) {
    const tdm__bt_node *x = &nodes[n];
    c = tdm__bt_lower(x->key, q);
    rank += tdm__bt_left_size(x->u.in.cum, c);
    n = x->u.in.child[c];
  }
  *leaf = n;
  *pos = tdm__bt_lower(nodes[n].key, q);
  return rank + *pos;
}

/* Key bits of a raw key of ks bytes (4 or 8) read from p, widened to 64. */
TDM_HD uint64_t tdm__bt_key_bits(const void *p, uint64_t i, uint32_t ks, int kind) {
  if (ks == 4) return (uint64_t)tdm__bits32_from_key(((const uint32_t *)p)[i], kind);
  return tdm__bits64_from_key(((const uint64_t *)p)[i], kind);
}
/* Inverse of tdm__bt_key_bits, stored at p[i]. */
TDM_HD void tdm__bt_store_key(void *p, uint64_t i, uint64_t bits, uint32_t ks, int kind) {
  if (ks == 4) ((uint32_t *)p)[i] = tdm__key_from_bits32((uint32_t)bits, kind);
  else ((uint64_t *)p)[i] = tdm__key_from_bits64(bits, kind);
}
TDM_HD uint64_t tdm__bt_load_val(const void *p, uint64_t i, uint32_t vs) {
  if (vs == 4) return ((const uint32_t *)p)[i];
  return ((const uint64_t *)p)[i];
}
TDM_HD void tdm__bt_store_val(void *p, uint64_t i, uint64_t v, uint32_t vs) {
  if (vs == 4) ((uint32_t *)p)[i] = (uint32_t)v;
  else ((uint64_t *)p)[i] = v;
}

/* ---- bulk-load geometry ---------------------------------------------------
 * A bulk-loaded tree of m keys has levels 0 (leaves) .. h-1 (root) with
 * cnt[0] = tdm__bt_bulk_parts(m, 14) leaves and cnt[l] =
 * tdm__bt_bulk_parts(cnt[l-1], 16) nodes above. Items of each level (keys for
 * leaves, child nodes above) are spread evenly, so sizes differ by at most
 * one, stay within the fill, and are >= 8 in every node when a level has two
 * or more. Level
 * l's nodes sit at indices base[l] .. base[l] + cnt[l] - 1, leaves first, root
 * last, so leaves are contiguous in key order. Both backends fill nodes with
 * the same functions below, one node per loop iteration or thread. */

typedef struct tdm__bt_geom {
  uint64_t m;                          /* keys */
  uint32_t h;                          /* levels */
  uint32_t cnt[TDM_BT_MAX_HEIGHT];     /* nodes per level */
  uint32_t base[TDM_BT_MAX_HEIGHT];    /* index of each level's first node */
  uint64_t nodes;                      /* total nodes */
} tdm__bt_geom;

/* Nodes a bulk load makes for c >= 1 items of one level at fill f: about
 * c / f, but never so many that a node would get fewer than TDM_BT_MIN items.
 * Leaves use f = TDM_BT_BULK, keeping two slots free, so a fresh tree takes a
 * batch of random inserts without splitting most leaves (as database fill
 * factors do); inner levels are packed full (f = 16) to keep the tree low. */
TDM_HD uint64_t tdm__bt_bulk_parts(uint64_t c, uint64_t f) {
  uint64_t p = (c + f - 1) / f, most = c / TDM_BT_MIN;
  if (p > most) p = most;
  return p ? p : 1;
}

/* Geometry of a bulk-loaded tree of m >= 1 keys. */
TDM_HD void tdm__bt_geom_init(tdm__bt_geom *g, uint64_t m) {
  uint64_t c = tdm__bt_bulk_parts(m, TDM_BT_BULK), b = 0;
  uint32_t l = 0;
  g->m = m;
  for (;;) {
    g->cnt[l] = (uint32_t)c;
    g->base[l] = (uint32_t)b;
    b += c;
    l++;
    if (c == 1) break;
    c = tdm__bt_bulk_parts(c, TDM_BT_B);
  }
  g->h = l;
  g->nodes = b;
}

/* Start of part i when total items are split evenly into parts. */
TDM_HD uint64_t tdm__bt_even_start(uint64_t total, uint64_t parts, uint64_t i) {
  return i * (total / parts) + (i < total % parts ? i : total % parts);
}
/* The part holding item x under the same split. */
TDM_HD uint64_t tdm__bt_even_part(uint64_t total, uint64_t parts, uint64_t x) {
  uint64_t q = total / parts, r = total % parts;
  if (x < r * (q + 1)) return x / (q + 1);
  return r + (x - r * (q + 1)) / q;
}
/* Index of the first leaf under node i of level l. */
TDM_HD uint64_t tdm__bt_geom_leaf_start(const tdm__bt_geom *g, uint32_t l, uint64_t i) {
  for (; l > 0 && l < TDM_BT_MAX_HEIGHT; l--) i = tdm__bt_even_start(g->cnt[l - 1], g->cnt[l], i);
  return i;
}
/* Index of the first key under node i of level l. */
TDM_HD uint64_t tdm__bt_geom_key_start(const tdm__bt_geom *g, uint32_t l, uint64_t i) {
  return tdm__bt_even_start(g->m, g->cnt[0], tdm__bt_geom_leaf_start(g, l, i));
}

/* Fills x as leaf i from sorted keys (raw, ks bytes, keybits kind) and values (vs
 * bytes; NULL gives zero values); the CUDA build passes 64-bit bits with
 * kind UNSIGNED. The arrays hold the sorted keys from index koff on (key s at
 * keys[s - koff]; koff <= the leaf's first key), so a part of the sorted order
 * can fill its own leaves. Returns 1 when the leaf's keys strictly increase
 * starting from the key before its first (when that key is in the arrays), so
 * 1 from every leaf proves the input free of duplicates. */
TDM_HD int tdm__bt_fill_leaf_into(tdm__bt_node *x, const tdm__bt_geom *g, const void *keys, const void *vals,
                                 uint32_t ks, uint32_t vs, int kind, uint64_t koff, uint64_t i);

/* Word j (0..15) of the last 128 bytes of leaf i holding c keys (bytes
 * 256 + 8 j .. 256 + 8 j + 7: the inner nodes' cum[8..15], unused in a leaf,
 * then count and level, next and prev, the padding) as those bytes read as
 * one little-endian word: tandem's backends are little-endian (x86-64,
 * AArch64, the GPU), and the AVX-512 leaf fill and the CUDA build store the
 * tail as such words (one store each, where the fields took six). */
TDM_HD uint64_t tdm__bt_leaf_tail_word(const tdm__bt_geom *g, uint64_t i, uint32_t c, uint32_t j) {
  if (j == 8) return c; /* level 0 above */
  if (j == 9)
    return (i + 1 < g->cnt[0] ? i + 1 : (uint64_t)TDM_BT_NIL) |
           (uint64_t)(i > 0 ? (uint32_t)(i - 1) : TDM_BT_NIL) << 32;
  return 0; /* zero, so trees are byte-identical */
}

/* Stores w at p as 8 little-endian bytes (byte stores: p's object is a node
 * whose fields differ in type; compilers merge them into one store). */
TDM_HD void tdm__bt_put_word(void *p, uint64_t w) {
  unsigned char *b = (unsigned char *)p;
  int k;
  for (k = 0; k < 8; k++) b[k] = (unsigned char)(w >> (8 * k));
}

/* Slot j (0..15) of leaf i, whose keys are [s, s + c) (tdm__bt_even_start):
 * key[j] and val[j], and word j of the node's last 128 bytes
 * (tdm__bt_leaf_tail_word), so every byte of the leaf is written by exactly
 * one slot. The CPU's scalar fill loops over j; the CUDA build fills a leaf
 * with sixteen threads, a slot each, from the same tail words. Returns 0 when
 * the slot's key is not above the key before it (that key when it is in the
 * arrays; see tdm__bt_fill_leaf_into). */
TDM_HD int tdm__bt_fill_leaf_slot(tdm__bt_node *x, const tdm__bt_geom *g, const void *keys, const void *vals,
                                  uint32_t ks, uint32_t vs, int kind, uint64_t koff, uint64_t i, uint64_t s,
                                  uint32_t c, uint32_t j) {
  int ok = 1;
  if (j < c) {
    uint64_t k = tdm__bt_key_bits(keys, s - koff + j, ks, kind);
    if (s + j != koff) ok = k > tdm__bt_key_bits(keys, s + j - 1 - koff, ks, kind);
    x->key[j] = k;
    x->u.val[j] = vals ? tdm__bt_load_val(vals, s - koff + j, vs) : 0;
  } else {
    x->key[j] = TDM_BT_PAD;
    x->u.val[j] = 0;
  }
  tdm__bt_put_word((unsigned char *)x + 256 + (size_t)8 * j, tdm__bt_leaf_tail_word(g, i, c, j));
  return ok;
}

TDM_HD int tdm__bt_fill_leaf_into(tdm__bt_node *x, const tdm__bt_geom *g, const void *keys, const void *vals,
                                 uint32_t ks, uint32_t vs, int kind, uint64_t koff, uint64_t i) {
  uint64_t s = tdm__bt_even_start(g->m, g->cnt[0], i), e = tdm__bt_even_start(g->m, g->cnt[0], i + 1);
  uint32_t j;
  int ok = 1;
  for (j = 0; j < 16; j++) ok &= tdm__bt_fill_leaf_slot(x, g, keys, vals, ks, vs, kind, koff, i, s, (uint32_t)(e - s), j);
  return ok;
}
/* tdm__bt_fill_leaf into leaf i's place in the node array. (The CPU fills a
 * copy in cache and streams it out: its node array is not in cache.) */
TDM_HD int tdm__bt_fill_leaf(tdm__bt_node *nodes, const tdm__bt_geom *g, const void *keys, const void *vals,
                            uint32_t ks, uint32_t vs, int kind, uint64_t i) {
  return tdm__bt_fill_leaf_into(&nodes[g->base[0] + i], g, keys, vals, ks, vs, kind, 0, i);
}

/* Fills x as inner node i of level l >= 1: separators are the last key under
 * each child but the last, read from the sorted keys (as for
 * tdm__bt_fill_leaf, koff 0) or, when last is non-NULL, from last[f]: the key
 * bits of leaf f's last key (keys is then unused). */
TDM_HD void tdm__bt_fill_inner_into(tdm__bt_node *x, const tdm__bt_geom *g, const void *keys, uint32_t ks, int kind,
                                   const uint64_t *last, uint32_t l, uint64_t i) {
  uint64_t cs = tdm__bt_even_start(g->cnt[l - 1], g->cnt[l], i);
  uint64_t ce = tdm__bt_even_start(g->cnt[l - 1], g->cnt[l], i + 1);
  /* The leaves' split read once into locals: stores into x may alias *g, so
   * the compiler would otherwise divide again for every child. */
  uint64_t m = g->m, c0 = g->cnt[0], lf[TDM_BT_B + 1], st[TDM_BT_B + 1];
  uint32_t j, c = (uint32_t)(ce - cs);
  for (j = 0; j <= c; j++) { /* first leaf and key under each child, and past the last */
    lf[j] = tdm__bt_geom_leaf_start(g, l - 1, cs + j);
    st[j] = tdm__bt_even_start(m, c0, lf[j]);
  }
  for (j = 0; j < 16; j++) {
    x->key[j] = j + 1 >= c ? TDM_BT_PAD
                : last ? last[lf[j + 1] - 1]
                       : tdm__bt_key_bits(keys, st[j + 1] - 1, ks, kind);
    x->u.in.child[j] = j < c ? g->base[l - 1] + (uint32_t)(cs + j) : TDM_BT_NIL;
    x->u.in.cum[j] = j < c ? st[j + 1] - st[0] : 0;
  }
  x->count = c;
  x->level = l;
  x->next = TDM_BT_NIL;
  x->prev = TDM_BT_NIL;
  for (j = 0; j < 6; j++) x->pad[j] = 0;
}
/* tdm__bt_fill_inner_into into the node's place in the node array. */
TDM_HD void tdm__bt_fill_inner(tdm__bt_node *nodes, const tdm__bt_geom *g, const void *keys, uint32_t ks, int kind,
                              uint32_t l, uint64_t i) {
  tdm__bt_fill_inner_into(&nodes[g->base[l] + i], g, keys, ks, kind, (const uint64_t *)0, l, i);
}

/* Run reduction shared by build and insert: given sorted key bits where equal
 * keys are adjacent in input order, the value of the run [s, e) under dup. */
TDM_HD uint64_t tdm__bt_reduce_run(const uint64_t *vals, uint64_t s, uint64_t e, int dup, uint32_t vs,
                                  int vkind) {
  uint64_t v = vals[s], i;
  if (dup == TDM__DUP_KEEP_FIRST) return v;
  if (dup == TDM__DUP_KEEP_LAST) return vals[e - 1];
  for (i = s + 1; i < e; i++) v = tdm__dup_combine(v, vals[i], dup, vs, vkind);
  return v;
}

#endif /* TANDEM_BTREE_NODE_H */
