/** @file
 * tandem/view.h: look keys up inside your own code and kernels.
 *
 * A view is a plain struct describing a structure's own storage (no copy).
 * Take one with tdm_hash_view_get / tdm_btree_view_get, pass it by value to
 * your kernel (or use it in host code), and call the inline lookups per
 * element, so a lookup fuses with the work around it instead of costing a
 * separate pass over memory:
 *
 *     __global__ void k(tdm_hash_view v, const uint64_t *keys, uint64_t *out, size_t n) {
 *       size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
 *       uint64_t val = 0;
 *       if (i < n && tdm_hash_view_find(v, keys[i], &val)) out[i] = val;
 *     }
 *
 * Rules:
 *  - key_bits / value_bits carry the element's own bit pattern, zero-extended
 *    for 32-bit types (an i32 -1 is 0xFFFFFFFF, a float is its IEEE bits);
 *    for 32-bit key types only the low 32 bits of key_bits are read. The view
 *    applies the key order itself (signed order, float totalOrder). A miss
 *    leaves *value_bits unchanged; value_bits may be NULL.
 *  - A view reads the structure's storage in place: it is valid until the
 *    next mutating call on the structure (insert, erase, clear, growth) or its
 *    destruction. Take a new view after a mutation; the new view sees it.
 *  - A view of a CUDA structure is used in device code, a view of a CPU
 *    structure in host code (the `device` field says which). In
 *    stream-ordered mode, order your kernel after the call that built or
 *    changed the structure on the same stream (or after tdm_ctx_sync).
 *  - Results equal tdm_hash_find / tdm_btree_find / tdm_btree_rank for the
 *    same keys: the lookups run the shared per-element probe and descent
 *    functions of tandem/detail/; the CPU find and the CUDA kernels reach
 *    the same answers their own way (tag bytes, lane groups), and tests
 *    compare them with these.
 *  - Lookups only read; any number of threads may use one view at once while
 *    no mutating call runs.
 *  - This header compiles as C11, C++17 and CUDA (the lookups are
 *    __host__ __device__ under nvcc).
 * The lookups are tested on the CPU; their use inside CUDA kernels is
 * compiled in CI, and checked on a GPU by bench/device-check.sh.
 */
#ifndef TANDEM_VIEW_H
#define TANDEM_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "hash.h"
#include "btree.h"
#include "detail/btree_node.h"
#include "detail/hash_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A hash table's storage, for inline lookups. Filled by tdm_hash_view_get;
 *  fields are for the lookups below, not to be changed. */
typedef struct tdm_hash_view {
  const void *slots;    /**< 2^log2cap slots and two side slots (detail/hash_layout.h) */
  uint32_t log2cap;     /**< table size */
  uint32_t key_bytes;   /**< 4 or 8 */
  uint32_t value_bytes; /**< 4 or 8 */
  int device;           /**< -1: host memory (CPU table), else the CUDA device of the slots */
} tdm_hash_view;

/** A B+ tree's storage, for inline lookups. Filled by tdm_btree_view_get. */
typedef struct tdm_btree_view {
  const void *nodes;    /**< the node array (detail/btree_node.h); NULL for an empty tree */
  uint32_t root;        /**< root node index */
  uint32_t height;      /**< 0 for an empty tree */
  uint32_t key_bytes;   /**< 4 or 8 */
  uint32_t value_bytes; /**< 4 or 8 */
  int key_kind;         /**< order of the key type (detail/keybits.h: unsigned, signed, float) */
  int device;           /**< -1: host memory (CPU tree), else the CUDA device of the nodes */
  uint64_t size;        /**< keys stored when the view was taken */
} tdm_btree_view;

/** Fills *out with a view of h's storage. TDM_ERR_INVALID_ARGUMENT for NULL
 *  arguments. Never waits for the device. */
TDM_API tdm_status tdm_hash_view_get(const tdm_hash *h, tdm_hash_view *out);
/** Fills *out with a view of t's storage. TDM_ERR_INVALID_ARGUMENT for NULL
 *  arguments. Never waits for the device. */
TDM_API tdm_status tdm_btree_view_get(const tdm_btree *t, tdm_btree_view *out);

/** How the inline lookups are declared: static inline, and __host__
 *  __device__ under nvcc. */
#if defined(__CUDACC__)
#define TDM_VIEW_FN static __host__ __device__ __forceinline__
#else
#define TDM_VIEW_FN static inline
#endif

/** Looks key_bits up: 1 and *value_bits = the value's bits when found, 0 on
 *  a miss (*value_bits unchanged). */
/* tdm__hview_find_k32v32 ... _k64v64: the lookup for one key / value width,
 * one instantiation per width (detail/hash_inst.h, as for the slot functions). */
#define HS_TEMPLATE "hash_view_impl.h"
#include "detail/hash_inst.h"

TDM_VIEW_FN int tdm_hash_view_find(tdm_hash_view v, uint64_t key_bits, uint64_t *value_bits) {
  uint64_t val;
  int hit;
  switch (tdm__hash_inst(v.key_bytes, v.value_bytes)) {
  case 0: hit = tdm__hview_find_k32v32(v.slots, v.log2cap, key_bits, &val); break;
  case 1: hit = tdm__hview_find_k32v64(v.slots, v.log2cap, key_bits, &val); break;
  case 2: hit = tdm__hview_find_k64v32(v.slots, v.log2cap, key_bits, &val); break;
  default: hit = tdm__hview_find_k64v64(v.slots, v.log2cap, key_bits, &val); break;
  }
  if (hit && value_bits) *value_bits = val;
  return hit;
}

/* The tree's order-preserving bits of a query (detail/keybits.h). */
TDM_VIEW_FN uint64_t tdm__btree_view_q(tdm_btree_view v, uint64_t key_bits) {
  if (v.key_bytes == 4) return (uint64_t)tdm__bits32_from_key((uint32_t)key_bits, v.key_kind);
  return tdm__bits64_from_key(key_bits, v.key_kind);
}

/** Looks key_bits up: 1 and *value_bits = the value's bits when found, 0 on
 *  a miss (*value_bits unchanged). */
TDM_VIEW_FN int tdm_btree_view_find(tdm_btree_view v, uint64_t key_bits, uint64_t *value_bits) {
  const tdm__bt_node *nodes = (const tdm__bt_node *)v.nodes;
  uint64_t q;
  uint32_t leaf, pos;
  if (v.height == 0) return 0;
  q = tdm__btree_view_q(v, key_bits);
  (void)tdm__bt_descend(nodes, v.root, v.height, q, &leaf, &pos);
  if (!tdm__bt_leaf_hit(&nodes[leaf], pos, q)) return 0;
  if (value_bits) *value_bits = nodes[leaf].u.val[pos];
  return 1;
}

/** Number of stored keys strictly less than key_bits in key order (the
 *  lower-bound position), as tdm_btree_rank. */
TDM_VIEW_FN uint64_t tdm_btree_view_rank(tdm_btree_view v, uint64_t key_bits) {
  uint32_t leaf, pos;
  if (v.height == 0) return 0;
  return tdm__bt_descend((const tdm__bt_node *)v.nodes, v.root, v.height, tdm__btree_view_q(v, key_bits), &leaf,
                         &pos);
}

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_VIEW_H */
