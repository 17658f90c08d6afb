/*
 * btree_corrupt.c: test hook that breaks one invariant of a CPU tree so the
 * tests can check that tdm_btree_validate names it. Compiled into the test
 * programs only, never into the library.
 */
#include "../../cpu/cpu.h"
#include "hooks.h"

/* First node of the given level in the tree (in-order), or NIL. */
static uint32_t first_at_level(const tdm_btree *t, uint32_t lvl) {
  const tdm__btree_cpu *c = tdm__btree_cpu_of(t);
  uint32_t n = t->root;
  if (n == TDM_BT_NIL || c->nodes[n].level < lvl) return TDM_BT_NIL;
  while (c->nodes[n].level > lvl) n = c->nodes[n].u.in.child[0];
  return n;
}

tdm_status tdm_test_btree_corrupt(tdm_btree *t, int what) {
  uint32_t n, m;
  uint64_t kk;
  tdm__bt_node *x;
  tdm__btree_cpu *c;
  if (!t || t->ops != tdm__cpu_backend.btree || t->root == TDM_BT_NIL)
    return tdm__fail(TDM_ERR_UNSUPPORTED, "tdm_test_btree_corrupt: needs a non-empty CPU tree");
  c = tdm__btree_cpu_of(t);
  if (!c->nodes)
    return tdm__fail(TDM_ERR_UNSUPPORTED, "tdm_test_btree_corrupt: needs a non-empty CPU tree");
  switch (what) {
  case 1: /* key order: swap the first two keys of the first leaf */
    x = &c->nodes[first_at_level(t, 0)];
    if (x->count < 2) break;
    kk = x->key[0];
    x->key[0] = x->key[1];
    x->key[1] = kk;
    return TDM_OK;
  case 2: /* separator bounds: lower separator 0 below its left child's last key */
    n = first_at_level(t, 1);
    if (n == TDM_BT_NIL) break;
    x = &c->nodes[n];
    m = x->u.in.child[0];
    while (c->nodes[m].level > 0) m = c->nodes[m].u.in.child[c->nodes[m].count - 1];
    x->key[0] = c->nodes[m].key[c->nodes[m].count - 1] - 1;
    return TDM_OK;
  case 3: /* subtree count */
    n = first_at_level(t, 1);
    if (n == TDM_BT_NIL) break;
    c->nodes[n].u.in.cum[0]++;
    return TDM_OK;
  case 4: /* leaf chain: the first leaf skips its successor */
    n = t->first_leaf;
    if (c->nodes[n].next == TDM_BT_NIL) break;
    c->nodes[n].next = c->nodes[c->nodes[n].next].next;
    return TDM_OK;
  case 5: /* fill: a non-root leaf shrinks below the minimum */
    if (t->height < 2) break;
    x = &c->nodes[first_at_level(t, 0)];
    for (m = TDM_BT_MIN - 1; m < 16; m++) x->key[m] = TDM_BT_PAD;
    x->count = TDM_BT_MIN - 1;
    return TDM_OK;
  case 6: /* reachable twice */
    n = first_at_level(t, 1);
    if (n == TDM_BT_NIL) break;
    c->nodes[n].u.in.child[1] = c->nodes[n].u.in.child[0];
    return TDM_OK;
  case 7: /* level */
    c->nodes[first_at_level(t, 0)].level = 1;
    return TDM_OK;
  case 8: /* padding */
    x = &c->nodes[t->root];
    if (x->level > 0) x->key[15] = 0;
    else if (x->count < 16) x->key[x->count] = 0;
    else break;
    return TDM_OK;
  default: break;
  }
  return tdm__fail(TDM_ERR_UNSUPPORTED, "tdm_test_btree_corrupt: corruption %d does not apply to this tree",
                   what);
}
