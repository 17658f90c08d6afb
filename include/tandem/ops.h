/** @file
 * tandem/ops.h: whole-array data operations built from the sort and the hash
 * table: distinct keys (tdm_unique), membership (tdm_isin), group-by
 * reduction (tdm_group_reduce) and many-to-many joins (tdm_join).
 *
 * Semantics shared by every call:
 *  - Every tdm_type is a valid key type. Two keys are equal when their bits
 *    are equal (default), so -0.0 and +0.0 are distinct keys and so are NaNs
 *    with different payloads. With TDM_EQ_NUMERIC, float keys compare as
 *    numpy and pandas compare them for grouping: -0.0 equals +0.0 and every
 *    NaN equals every NaN (integer keys are unaffected).
 *  - Groups (the distinct keys) come in ascending key order by default: the
 *    contract's key order (floats in IEEE-754 totalOrder; with
 *    TDM_EQ_NUMERIC the zero group sits where +0.0 does and the NaN group
 *    after +inf). TDM_ORDER_FIRST_SEEN orders them by their first occurrence
 *    in the input instead.
 *  - The key written for a group is the key of its first occurrence, bit for
 *    bit (with TDM_EQ_NUMERIC, a group whose first member is -0.0 is written
 *    as -0.0).
 *  - The method (hashing, sorting, or for integer keys whose range is small
 *    a dense table indexed by key - min, decided from one min/max pass) is
 *    chosen per call by a rule that docs/design.md states with its
 *    measurements; the results never depend on it: the same bytes either
 *    way, and on every thread count (tested on the CPU).
 *  - Backends: both. The CUDA backend sorts, or takes the dense table
 *    (host or device arrays), and gives the CPU's bytes: compared bit for
 *    bit with the CPU on the emulated device (tests/test_ops_cuda.c); not
 *    yet run on a GPU.
 *  - All-or-nothing: a failed call changes no input; outputs of a failed call
 *    are unspecified, except where TDM_ERR_CAPACITY says otherwise (tdm_join).
 *  - n == 0 is valid; array pointers may then be NULL.
 *  - Inputs and outputs must not overlap.
 *  - On a CPU context a device pointer is TDM_ERR_INVALID_ARGUMENT.
 *  - Each call writes a size to host memory, so in stream-ordered mode
 *    (TDM_CTX_STREAM_ORDERED) every call here waits for its work to finish
 *    before it returns.
 *  - Errors: TDM_ERR_INVALID_ARGUMENT (NULL ctx, NULL array with n > 0, bad
 *    type, agg or join kind, unknown flag bits, size overflow, misaligned or
 *    overlapping arrays, device pointer on a CPU context),
 *    TDM_ERR_UNSUPPORTED (a combination an operation does not define),
 *    TDM_ERR_OUT_OF_MEMORY, TDM_ERR_CAPACITY (tdm_join), TDM_ERR_DEVICE.
 *  - Memory: O(n) scratch (O(n_left + n_right + output) for tdm_join).
 */
#ifndef TANDEM_OPS_H
#define TANDEM_OPS_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Flags of the data operations. */
enum {
  /** Floats: -0.0 equals +0.0 and every NaN equals every NaN (numpy/pandas);
   *  default: keys are equal when their bits are equal. */
  TDM_EQ_NUMERIC = 1u << 0,
  /** Outputs in order of first occurrence; default: ascending key order. */
  TDM_ORDER_FIRST_SEEN = 1u << 1
};

/** The distinct keys of keys[0..n).
 *  flags: TDM_EQ_NUMERIC, TDM_ORDER_FIRST_SEEN.
 *  unique_out (capacity n, key_type; may be NULL): the distinct keys, each as
 *  its first occurrence. first_index_out (capacity n; may be NULL): the
 *  position of each distinct key's first occurrence. counts_out (capacity n;
 *  may be NULL): its number of occurrences. inverse_out (n entries; may be
 *  NULL): for each keys[i], the index of its key in unique_out.
 *  *n_unique_out (required, host memory) receives the number of distinct keys.
 *  Stream-ordered context: waits (the count is written to host memory). */
TDM_API tdm_status tdm_unique(tdm_ctx *ctx, tdm_type key_type, const void *keys, size_t n, unsigned flags,
                              void *unique_out, uint64_t *first_index_out, uint64_t *counts_out,
                              uint64_t *inverse_out, size_t *n_unique_out);

/** found_out[i] = 1 if queries[i] equals some element of set[0..m), else 0.
 *  flags: TDM_EQ_NUMERIC. queries and set share key_type; either size may be
 *  0 (an empty set finds nothing).
 *  Stream-ordered context: waits. */
TDM_API tdm_status tdm_isin(tdm_ctx *ctx, tdm_type key_type, const void *queries, size_t n, const void *set,
                            size_t m, unsigned flags, uint8_t *found_out);

/** Reductions of tdm_group_reduce. */
typedef enum tdm_agg {
  TDM_AGG_COUNT = 0, /**< rows per group, uint64; values may be NULL */
  TDM_AGG_SUM = 1,   /**< integers wrap; floats: see tdm_group_reduce */
  TDM_AGG_MIN = 2,   /**< in the contract's key order (floats: totalOrder) */
  TDM_AGG_MAX = 3,   /**< in the contract's key order (floats: totalOrder) */
  TDM_AGG_FIRST = 4, /**< the value of the group's first row */
  TDM_AGG_LAST = 5,  /**< the value of the group's last row */
  TDM_AGG_MEAN = 6   /**< float64: the float64 sum (as SUM) over the count */
} tdm_agg;

/** Reduces values[0..n) by the groups of keys[0..n) (groups as tdm_unique).
 *  flags: TDM_EQ_NUMERIC, TDM_ORDER_FIRST_SEEN.
 *  keys_out (capacity n, key_type; may be NULL): the distinct keys, in the
 *  order of tdm_unique. values_out (capacity n; required): per group, of
 *  value_type for SUM, MIN, MAX, FIRST and LAST, uint64 for COUNT, float64
 *  for MEAN. For COUNT, values and value_type are not read (values may be NULL).
 *  Summation order (SUM, MEAN): each group's sum is the left fold of its
 *  values in input order, starting from its first value (s = v0; s = s + v1;
 *  ...), in the value type for SUM and in float64 for MEAN (each value
 *  converted to float64 first). The order is fixed by the input alone, so
 *  float sums are the same bits on every backend, thread count and method.
 *  NaN values propagate (no skipping); a NaN sum or mean is written as the
 *  canonical quiet NaN (0x7fc00000, 0x7ff8000000000000), since which NaN
 *  payload an add keeps is not the same on every processor.
 *  Skew: on CUDA, COUNT, FIRST and LAST cost O(1) per group and integer SUM,
 *  MIN and MAX are a reduce-by-key over the whole device, so a hot key's
 *  rows are split over many threads like any others. Float SUM and MEAN are defined as the left fold above,
 *  a chain of dependent adds: a group of c rows takes c sequential adds on
 *  every backend (on CUDA one thread makes them, over the group's values
 *  gathered into contiguous memory and staged on chip by the rest of its
 *  block), so a hot key bounds their time by its row count. Compared bit
 *  for bit with the CPU on the emulated device; not yet timed on a GPU.
 *  *n_groups_out (required, host memory) receives the number of groups.
 *  Stream-ordered context: waits. */
TDM_API tdm_status tdm_group_reduce(tdm_ctx *ctx, tdm_type key_type, const void *keys, tdm_type value_type,
                                    const void *values, size_t n, tdm_agg agg, unsigned flags, void *keys_out,
                                    void *values_out, size_t *n_groups_out);

/** Kinds of tdm_join. */
typedef enum tdm_join_kind {
  TDM_JOIN_INNER = 0, /**< every matching pair (i, j) */
  TDM_JOIN_LEFT = 1,  /**< inner pairs, plus (i, TDM_NO_MATCH) for a left row without a match */
  TDM_JOIN_SEMI = 2,  /**< left rows with at least one match (left indices only) */
  TDM_JOIN_ANTI = 3   /**< left rows without a match (left indices only) */
} tdm_join_kind;

/** Right index of a LEFT join row without a match. */
#define TDM_NO_MATCH UINT64_MAX

/** Joins left_keys[0..n_left) with right_keys[0..n_right) on key equality
 *  (flags: TDM_EQ_NUMERIC).
 *  INNER writes every pair (i, j) with left_keys[i] equal to right_keys[j],
 *  many-to-many, ordered by i, then j. LEFT adds (i, TDM_NO_MATCH) for each
 *  left row without a match, in its place in that order. SEMI and ANTI write
 *  left indices only, ascending (right_index_out is not written and may be
 *  NULL). right_index_out may be NULL for INNER and LEFT too, when only the
 *  left indices are wanted.
 *  *n_out (required, host memory) receives the number of rows. When that
 *  exceeds cap: TDM_ERR_CAPACITY, *n_out set to the exact size needed, and
 *  nothing else written. cap = 0 with NULL outputs asks for the size alone
 *  (TDM_OK when it is 0, else TDM_ERR_CAPACITY). left_index_out must be
 *  non-NULL when cap > 0.
 *  Memory: O(n_left + n_right + output).
 *  Stream-ordered context: waits. */
TDM_API tdm_status tdm_join(tdm_ctx *ctx, tdm_join_kind kind, tdm_type key_type, const void *left_keys,
                            size_t n_left, const void *right_keys, size_t n_right, unsigned flags,
                            uint64_t *left_index_out, uint64_t *right_index_out, size_t cap, size_t *n_out);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_OPS_H */
