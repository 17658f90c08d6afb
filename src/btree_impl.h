/*
 * btree_impl.h: the B+ tree handle shared by the public layer
 * (src/btree_api.c), the CPU backend (cpu/btree_cpu.c) and the CUDA backend
 * (gpu/btree_gpu.cu, through src/btree_gpu_iface.h).
 *
 * A CPU tree keeps its nodes in host memory (`nodes`) and is a classic B+ tree
 * that splits, borrows and merges in place. A CUDA tree keeps its nodes in
 * device memory (`d_nodes`) and is always in bulk-loaded layout (see
 * btree_node.h): its batched updates merge the batch with the stored keys and
 * rebuild, so `geom` describes it exactly.
 */
#ifndef TANDEM_BTREE_IMPL_H
#define TANDEM_BTREE_IMPL_H

#include "btree_node.h"
#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

struct tdm_btree {
  tdm_ctx *ctx;
  tdm_type key_type, value_type;
  int dup;          /* tdm_dup */
  int kind, vkind;  /* keybits kinds of key and value types */
  uint32_t ks, vs;  /* key and value widths in bytes */

  uint64_t size;    /* keys stored */
  unsigned height;  /* 0 empty, 1 a single leaf */
  uint32_t root;    /* TDM_BT_NIL when empty */
  uint32_t first_leaf, last_leaf;

  /* CPU trees: node storage. */
  tdm_bt_node *nodes;  /* cap slots; [0, used) have been handed out */
  void *nodes_raw;     /* the mapping holding nodes */
  size_t map_bytes;    /* its length */
  uint32_t cap, used;  /* slots allocated / slots ever handed out */
  uint32_t live;       /* nodes in the tree (used minus free) */
  uint32_t free_head;  /* free list through next; TDM_BT_NIL when empty */

  /* CUDA trees: node storage and the bulk-load geometry that describes it. */
  tdm_bt_node *d_nodes;
  tdm_bt_geom geom;
};

/* Test-only hook, exported for the test suite and not declared in the public
 * headers: breaks one invariant of a CPU tree so tests can check that
 * tdm_btree_validate names it. what: 1 key order (swap two leaf keys),
 * 2 separator bounds (raise a separator above its right child's keys),
 * 3 subtree count, 4 leaf chain, 5 fill (underfull leaf), 6 reachable twice,
 * 7 level, 8 padding. Returns TDM_ERR_UNSUPPORTED when the tree has no node of
 * the shape needed (e.g. 2 on a single leaf) or lives on a device. */
TDM_API tdm_status tdm_test_btree_corrupt(tdm_btree *t, int what);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_BTREE_IMPL_H */
