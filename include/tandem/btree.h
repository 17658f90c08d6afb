/*
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

typedef struct tdm_btree tdm_btree;

TDM_API tdm_status tdm_btree_build(tdm_ctx *ctx, const tdm_btree_opts *opts, const void *keys,
                                   const void *values, size_t n, tdm_btree **out);
TDM_API void tdm_btree_destroy(tdm_btree *t);
TDM_API tdm_status tdm_btree_find(const tdm_btree *t, const void *keys, void *values_out,
                                  uint8_t *found_out, size_t n);
TDM_API tdm_status tdm_btree_rank(const tdm_btree *t, const void *keys, uint64_t *rank_out, size_t n);
TDM_API tdm_status tdm_btree_range_count(const tdm_btree *t, const void *lo, const void *hi,
                                         uint64_t *count_out, size_t n);
TDM_API tdm_status tdm_btree_range(const tdm_btree *t, const void *lo, const void *hi, size_t n,
                                   uint64_t *offsets_out, void *keys_out, void *values_out, size_t cap);
TDM_API tdm_status tdm_btree_insert(tdm_btree *t, const void *keys, const void *values, size_t n);
TDM_API tdm_status tdm_btree_erase(tdm_btree *t, const void *keys, size_t n, size_t *erased_out);
TDM_API size_t tdm_btree_size(const tdm_btree *t);
TDM_API unsigned tdm_btree_height(const tdm_btree *t);
TDM_API tdm_status tdm_btree_export(const tdm_btree *t, void *keys_out, void *values_out,
                                    size_t cap, size_t *n_out);
TDM_API tdm_status tdm_btree_validate(const tdm_btree *t);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_BTREE_H */
