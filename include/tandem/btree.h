/** @file
 * tandem/btree.h: a bulk-loaded B+ tree (an ordered map with unique keys) with
 * batched queries and updates, on the CPU and on CUDA.
 */
#ifndef TANDEM_BTREE_H
#define TANDEM_BTREE_H

#include "common.h"
#include "hash.h" /* tdm_dup */

#ifdef __cplusplus
extern "C" {
#endif

/** Options for tdm_btree_build. */
typedef struct tdm_btree_opts {
  tdm_type key_type;    /**< any tdm_type */
  tdm_type value_type;  /**< any tdm_type */
  tdm_dup on_duplicate; /**< as for the hash table; "lowest index" = earliest in the input */
} tdm_btree_opts;

/** A B+ tree: an ordered map with unique keys and one value per key, on the
 *  backend of the context it was built with. Keys are ordered as the contract
 *  says (numeric; floats by IEEE-754 totalOrder, so -0.0 and +0.0 and NaNs of
 *  different payloads are distinct keys). On the CPU it is a classic B+ tree
 *  (16 slots per node) updated in place; on CUDA it lives in device memory and
 *  batched updates rebuild it (see tdm_btree_insert). Every call is
 *  all-or-nothing: a failed call leaves the tree exactly as it was. Read-only
 *  calls (find, rank, range_count, range, export, size, height, validate) may
 *  run concurrently; insert, erase and destroy need exclusive access. */
typedef struct tdm_btree tdm_btree;

/** Builds a tree from n keys in any order with their values (keys[i] gets
 *  values[i]); duplicate keys are resolved by opts->on_duplicate: KEEP_FIRST
 *  keeps the earliest, KEEP_LAST the latest, SUM adds (wrapping; integer value
 *  types only), MIN / MAX keep the smallest / largest value in the value
 *  type's order (floats by totalOrder). keys and values are only read and may
 *  live in host or (CUDA context) device memory; n == 0 builds an empty tree
 *  and both may then be NULL. Cost: one stable radix sort of the input plus a
 *  linear pass; memory: the tree (about 24 bytes per key on the CPU with
 *  full nodes) plus a sorted copy of the input during the call.
 *  Returns TDM_ERR_INVALID_ARGUMENT (NULL ctx, opts, out or array with n > 0;
 *  a type or policy outside its enum; size overflow; device memory on a CPU
 *  context), TDM_ERR_UNSUPPORTED (SUM with float values),
 *  TDM_ERR_OUT_OF_MEMORY, TDM_ERR_DEVICE. *out is set only on success.
 *  Stream-ordered context: waits for the device (it needs a device-computed value on the host: the tree's shape). */
TDM_API tdm_status tdm_btree_build(tdm_ctx *ctx, const tdm_btree_opts *opts, const void *keys,
                                   const void *values, size_t n, tdm_btree **out);

/** Frees a tree and all its memory. NULL is a no-op. */
TDM_API void tdm_btree_destroy(tdm_btree *t);

/** Looks up n keys: found_out[i] = 1 and values_out[i] = the value when keys[i]
 *  is stored, else found_out[i] = 0 and values_out[i] all-zero bits. Either
 *  output may be NULL (not wanted). Outputs must not overlap keys or each
 *  other. O(n log size); the CPU walks queries in groups, level by level,
 *  with prefetching. Returns TDM_ERR_INVALID_ARGUMENT (NULL t, NULL keys with
 *  n > 0, overlap, wrong memory space), TDM_ERR_OUT_OF_MEMORY and
 *  TDM_ERR_DEVICE (CUDA staging).
 *  Stream-ordered context (TDM_CTX_STREAM_ORDERED), all arrays in device memory: queued on the context's stream, returns without waiting; with a host array: waits. */
TDM_API tdm_status tdm_btree_find(const tdm_btree *t, const void *keys, void *values_out,
                                  uint8_t *found_out, size_t n);

/** rank_out[i] = number of stored keys strictly less than keys[i] (the
 *  lower-bound position of keys[i] in the ascending export). rank_out is
 *  required when n > 0 and must not overlap keys. O(n log size). Errors as
 *  for tdm_btree_find.
 *  Stream-ordered context (TDM_CTX_STREAM_ORDERED), all arrays in device memory: queued on the context's stream, returns without waiting; with a host array: waits. */
TDM_API tdm_status tdm_btree_rank(const tdm_btree *t, const void *keys, uint64_t *rank_out, size_t n);

/** count_out[i] = number of stored keys k with lo[i] <= k <= hi[i]; 0 when
 *  lo[i] > hi[i]. count_out is required when n > 0 and must not overlap lo or
 *  hi (lo and hi may overlap each other). O(n log size), independent of the
 *  counts. Errors as for tdm_btree_find.
 *  Stream-ordered context (TDM_CTX_STREAM_ORDERED), all arrays in device memory: queued on the context's stream, returns without waiting; with a host array: waits. */
TDM_API tdm_status tdm_btree_range_count(const tdm_btree *t, const void *lo, const void *hi,
                                         uint64_t *count_out, size_t n);

/** All stored entries with lo[i] <= key <= hi[i], for every i, in CSR form:
 *  query i's hits, ascending, at [offsets_out[i], offsets_out[i+1]) of
 *  keys_out / values_out (either may be NULL: not wanted), offsets_out[0] = 0
 *  and offsets_out[n] = the total. offsets_out has n + 1 entries (required
 *  when n > 0; with n == 0 it may be NULL, else receives the single 0); cap is
 *  the capacity of keys_out / values_out in elements. When the total exceeds
 *  cap: TDM_ERR_CAPACITY, offsets_out filled, nothing else written (call again
 *  with cap = offsets_out[n]). No output may overlap another argument.
 *  O(n log size + total). Other errors as for tdm_btree_find.
 *  Stream-ordered context: waits for the device (it needs a device-computed value on the host: the total for the capacity check). */
TDM_API tdm_status tdm_btree_range(const tdm_btree *t, const void *lo, const void *hi, size_t n,
                                   uint64_t *offsets_out, void *keys_out, void *values_out, size_t cap);

/** Inserts n (key, value) pairs. A key already stored combines with the batch
 *  under the tree's policy, the stored value counting as earlier than the
 *  whole batch: KEEP_FIRST keeps it, KEEP_LAST takes the batch's last value,
 *  SUM adds all, MIN / MAX compare all; within the batch duplicates resolve as
 *  in tdm_btree_build. keys / values are only read (host or device memory).
 *  CPU: the batch is sorted (radix), then inserted in key order with the
 *  classic algorithm (splits, root split), O(n log n + n log size).
 *  CUDA: the batch is merged with the stored entries and the tree rebuilt,
 *  O(size + n) work and up to about 100 bytes of device scratch per stored
 *  or new entry per call: cheap for big batches, costly for small ones.
 *  Results equal the CPU's.
 *  Returns TDM_ERR_INVALID_ARGUMENT (NULL t, NULL arrays with n > 0, wrong
 *  memory space), TDM_ERR_OUT_OF_MEMORY, TDM_ERR_DEVICE; on any failure the
 *  tree is unchanged.
 *  Stream-ordered context: waits for the device (it needs a device-computed value on the host: the tree's new shape). */
TDM_API tdm_status tdm_btree_insert(tdm_btree *t, const void *keys, const void *values, size_t n);

/** Erases the stored keys among keys[0..n) (absent keys and duplicates in the
 *  batch are ignored); *erased_out (may be NULL) receives how many were
 *  removed. CPU: sorted batch, classic deletion (borrow from the left or right
 *  sibling, else merge; root collapse), O(n log n + n log size). CUDA: the
 *  survivors are compacted and the tree rebuilt, O(size + n log n). Errors and
 *  all-or-nothing as for tdm_btree_insert.
 *  Stream-ordered context: waits for the device (it needs a device-computed value on the host: the erase count and the tree's shape). */
TDM_API tdm_status tdm_btree_erase(tdm_btree *t, const void *keys, size_t n, size_t *erased_out);

/** Number of stored keys; 0 for NULL. O(1). */
TDM_API size_t tdm_btree_size(const tdm_btree *t);

/** Levels of the tree: 0 for an empty tree, 1 for a single leaf. After
 *  updates, trees holding the same keys may differ in height between the CPU
 *  (updated in place) and CUDA (rebuilt). 0 for NULL. O(1). */
TDM_API unsigned tdm_btree_height(const tdm_btree *t);

/** Writes all entries in ascending key order to keys_out / values_out (either
 *  may be NULL: not wanted), cap elements of room each. *n_out (may be NULL)
 *  receives the size. TDM_ERR_CAPACITY when cap < size (nothing written; *n_out
 *  still set). Outputs must not overlap. O(size).
 *  Stream-ordered context: waits for the device (it needs a device-computed value on the host: the pairs). */
TDM_API tdm_status tdm_btree_export(const tdm_btree *t, void *keys_out, void *values_out,
                                    size_t cap, size_t *n_out);

/** Checks every structural invariant, in the style of SQLite's integrity
 *  check: keys sorted within each node, separator bounds passed down and
 *  respected, all leaves at the same depth, node fill within bounds (root
 *  excepted), subtree counts consistent, the leaf chain complete and ordered,
 *  no node reachable twice. TDM_OK, or TDM_ERR_CORRUPT with tdm_last_error()
 *  naming the node and the invariant ("node 17 (leaf, level 0): key order:
 *  ..."). TDM_ERR_INVALID_ARGUMENT for NULL, TDM_ERR_OUT_OF_MEMORY. O(nodes);
 *  a CUDA tree is checked on a host copy of its nodes. */
TDM_API tdm_status tdm_btree_validate(const tdm_btree *t);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_BTREE_H */
