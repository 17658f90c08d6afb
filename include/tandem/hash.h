/*
 * tandem/hash.h: an open-addressing hash table with bulk operations, on the
 * CPU and on CUDA.
 *
 *  - Every key value is a valid key, 0 and all-ones included: no sentinel is
 *    reserved from the user.
 *  - Keys: TDM_U32, TDM_U64, TDM_I32, TDM_I64 (float keys: TDM_ERR_UNSUPPORTED).
 *    Values: any tdm_type.
 *  - Duplicate handling is deterministic: the same sequence of calls gives the
 *    same table contents on CPU and GPU, whatever the thread schedule.
 *  - A batch is all-or-nothing: growth, capacity refusal and out-of-memory leave
 *    the table exactly as it was.
 */
#ifndef TANDEM_HASH_H
#define TANDEM_HASH_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What an insert does with a key that is already present (in the table or
 *  earlier in the same batch). */
typedef enum tdm_dup {
  TDM_DUP_KEEP_FIRST = 0, /**< existing value stays; within one batch the lowest index wins */
  TDM_DUP_KEEP_LAST = 1,  /**< the batch overwrites; within one batch the highest index wins */
  TDM_DUP_SUM = 2,        /**< integer values only: wrapping add */
  TDM_DUP_MIN = 3,        /**< smaller value in the value type's key order */
  TDM_DUP_MAX = 4,        /**< larger value in the value type's key order */
} tdm_dup;

/** Options for tdm_hash_create. */
typedef struct tdm_hash_opts {
  tdm_type key_type;    /**< TDM_U32, TDM_U64, TDM_I32, TDM_I64 */
  tdm_type value_type;  /**< any tdm_type */
  size_t capacity;      /**< expected number of keys; 0 allowed */
  double max_load;      /**< 0 = library default; otherwise in (0, 1) */
  int fixed_capacity;   /**< nonzero: never grow; an insert that might not fit fails with TDM_ERR_CAPACITY */
  tdm_dup on_duplicate; /**< duplicate policy */
} tdm_hash_opts;

typedef struct tdm_hash tdm_hash;

TDM_API tdm_status tdm_hash_create(tdm_ctx *ctx, const tdm_hash_opts *opts, tdm_hash **out);
TDM_API void tdm_hash_destroy(tdm_hash *h);
TDM_API tdm_status tdm_hash_insert(tdm_hash *h, const void *keys, const void *values, size_t n);
TDM_API tdm_status tdm_hash_find(const tdm_hash *h, const void *keys, void *values_out,
                                 uint8_t *found_out, size_t n);
TDM_API tdm_status tdm_hash_erase(tdm_hash *h, const void *keys, size_t n, size_t *erased_out);
TDM_API size_t tdm_hash_size(const tdm_hash *h);
TDM_API tdm_status tdm_hash_export(const tdm_hash *h, void *keys_out, void *values_out,
                                   size_t cap, size_t *n_out);
TDM_API tdm_status tdm_hash_clear(tdm_hash *h);
TDM_API tdm_status tdm_hash_validate(const tdm_hash *h);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_HASH_H */
