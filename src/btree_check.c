/*
 * btree_check.c: the B+ tree's invariants (tandem/detail/btree_node.h) checked on a host
 * array of nodes. Backend-neutral: the CPU backend passes its node storage,
 * the CUDA backend a host copy of its device nodes.
 */
#include <string.h>

#include "backend.h"

typedef struct vstate {
  const tdm_btree *t;
  const tdm__bt_node *nodes;
  uint32_t n_nodes;
  uint8_t *seen;
  uint32_t reached;
  uint32_t expect_leaf, prev_leaf; /* leaf chain as the in-order walk expects it */
} vstate;

static const char *kind_name(const tdm__bt_node *x) { return x->level == 0 ? "leaf" : "inner"; }

#define VFAIL(idx, x, inv, fmt, ...)                                                                         \
  tdm__fail(TDM_ERR_CORRUPT, "tdm_btree_validate: node %u (%s, level %u): " inv ": " fmt, (idx), kind_name(x), \
            (x)->level, __VA_ARGS__)

/* Checks the subtree of node idx, expected at level lvl, whose keys must lie
 * in (lo, hi] (bounds absent when has_lo / has_hi are 0); *size_out receives
 * its key count. */
static tdm_status vnode(vstate *v, uint32_t idx, uint32_t lvl, int has_lo, uint64_t lo, int has_hi, uint64_t hi,
                        int is_root, uint64_t *size_out) {
  const tdm__bt_node *x;
  uint32_t i, nk, minc;
  tdm_status st;
  if (idx >= v->n_nodes)
    return tdm__fail(TDM_ERR_CORRUPT, "tdm_btree_validate: node index %u: reachable twice: out of range "
                     "(%u node slots)", idx, v->n_nodes);
  x = &v->nodes[idx];
  if (v->seen[idx]) return VFAIL(idx, x, "reachable twice", "%s", "a second path from the root leads here");
  v->seen[idx] = 1;
  v->reached++;
  if (x->level != lvl)
    return VFAIL(idx, x, "level", "expected level %u (all leaves at the same depth)", lvl);
  minc = is_root ? (lvl == 0 ? 1u : 2u) : TDM_BT_MIN;
  if (x->count < minc || x->count > TDM_BT_B)
    return VFAIL(idx, x, "fill", "holds %u %s, allowed %u..%u", x->count, lvl ? "children" : "keys", minc,
                 TDM_BT_B);
  nk = lvl == 0 ? x->count : x->count - 1;
  for (i = nk; i < 16; i++)
    if (x->key[i] != TDM_BT_PAD) return VFAIL(idx, x, "padding", "unused key slot %u is not all ones", i);
  if (lvl > 0)
    for (i = x->count; i < 16; i++)
      if (x->u.in.child[i] != TDM_BT_NIL || x->u.in.cum[i] != 0)
        return VFAIL(idx, x, "padding", "unused child slot %u is not empty", i);
  for (i = 1; i < nk; i++)
    if (x->key[i - 1] >= x->key[i])
      return VFAIL(idx, x, "key order", "slot %u is not greater than slot %u", i, i - 1);
  for (i = 0; i < nk; i++)
    if ((has_lo && x->key[i] <= lo) || (has_hi && x->key[i] > hi))
      return VFAIL(idx, x, "separator bounds", "key slot %u lies outside the range its ancestors allow", i);
  if (lvl == 0) {
    if (idx != v->expect_leaf)
      return VFAIL(idx, x, "leaf chain", "the chain reaches node %d here instead, in key order",
                   v->expect_leaf == TDM_BT_NIL ? -1 : (int)v->expect_leaf);
    if (x->prev != v->prev_leaf)
      return VFAIL(idx, x, "leaf chain", "prev is %d, expected %d", x->prev == TDM_BT_NIL ? -1 : (int)x->prev,
                   v->prev_leaf == TDM_BT_NIL ? -1 : (int)v->prev_leaf);
    v->prev_leaf = idx;
    v->expect_leaf = x->next;
    *size_out = x->count;
    return TDM_OK;
  }
  *size_out = 0;
  for (i = 0; i < x->count; i++) {
    uint64_t sub;
    int clo = i > 0 ? 1 : has_lo, chi = i + 1 < x->count ? 1 : has_hi;
    uint64_t blo = i > 0 ? x->key[i - 1] : lo, bhi = i + 1 < x->count ? x->key[i] : hi;
    st = vnode(v, x->u.in.child[i], lvl - 1, clo, blo, chi, bhi, 0, &sub);
    if (st != TDM_OK) return st;
    *size_out += sub;
    if (*size_out != x->u.in.cum[i])
      return VFAIL(idx, x, "subtree count", "children 0..%u hold %llu keys, cum[%u] says %llu", i,
                   (unsigned long long)*size_out, i, (unsigned long long)x->u.in.cum[i]);
  }
  return TDM_OK;
}

tdm_status tdm__bt_check_nodes(const tdm_btree *t, const tdm__bt_node *nodes, uint32_t n_nodes, uint32_t live) {
  vstate v;
  uint64_t size = 0;
  tdm_status st;
  if (t->root == TDM_BT_NIL) {
    if (t->size != 0 || t->height != 0 || t->first_leaf != TDM_BT_NIL || live != 0)
      return tdm__fail(TDM_ERR_CORRUPT, "tdm_btree_validate: tree: size: no root, but size %llu, height %u",
                       (unsigned long long)t->size, t->height);
    return TDM_OK;
  }
  if (t->height == 0 || t->height > TDM_BT_MAX_HEIGHT)
    return tdm__fail(TDM_ERR_CORRUPT, "tdm_btree_validate: tree: level: height %u is out of range", t->height);
  memset(&v, 0, sizeof v);
  v.t = t;
  v.nodes = nodes;
  v.n_nodes = n_nodes;
  v.seen = (uint8_t *)tdm__ctx_calloc(t->ctx, n_nodes);
  if (!v.seen) return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "tdm_btree_validate: out of host memory");
  v.expect_leaf = t->first_leaf;
  v.prev_leaf = TDM_BT_NIL;
  st = vnode(&v, t->root, t->height - 1, 0, 0, 0, 0, 1, &size);
  tdm__ctx_free(t->ctx, v.seen, n_nodes);
  if (st != TDM_OK) return st;
  if (v.expect_leaf != TDM_BT_NIL || v.prev_leaf != t->last_leaf)
    return tdm__fail(TDM_ERR_CORRUPT, "tdm_btree_validate: node %u (leaf, level 0): leaf chain: the chain does "
                     "not end at the last leaf of the tree", v.prev_leaf);
  if (size != t->size)
    return tdm__fail(TDM_ERR_CORRUPT, "tdm_btree_validate: tree: subtree count: the leaves hold %llu keys, "
                     "size says %llu", (unsigned long long)size, (unsigned long long)t->size);
  if (v.reached != live)
    return tdm__fail(TDM_ERR_CORRUPT, "tdm_btree_validate: tree: reachable twice: %u nodes reachable, %u live",
                     v.reached, live);
  return TDM_OK;
}

