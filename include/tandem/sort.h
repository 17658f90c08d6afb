/** @file
 * tandem/sort.h: stable in-place radix sort of keys, key/value pairs, and
 * argsort, on the CPU (parallel LSD/MSD radix sort) and on CUDA (CUB).
 *
 * Semantics shared by the three calls:
 *  - Stable in both directions: equal keys keep their input order. Descending
 *    is therefore not the reverse of ascending when keys tie.
 *  - Every tdm_type is a valid key and value type. Signed keys sort
 *    numerically; float keys by IEEE-754 totalOrder
 *    (-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN, NaNs ordered by
 *    payload), so every bit pattern has one place and CPU and GPU agree bit
 *    for bit.
 *  - All-or-nothing: a failed call leaves keys and values as they were.
 *  - n == 0 is a no-op (pointers may be NULL).
 *  - Arrays may be host or device memory on a CUDA context (device arrays are
 *    sorted in place on the device; host arrays are staged), host only on a
 *    CPU context.
 *  - Complexity: O(n * key bytes) work; O(n * (key + value bytes)) scratch,
 *    taken from and cached in the context.
 */
#ifndef TANDEM_SORT_H
#define TANDEM_SORT_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Flags for the sort calls. */
enum { TDM_SORT_DESCENDING = 1u << 0 };

/** Sorts n keys of key_type in place. flags: 0 or TDM_SORT_DESCENDING.
 *  Errors: TDM_ERR_INVALID_ARGUMENT (NULL ctx, keys NULL with n > 0, bad type,
 *  unknown flag bits, n * size overflow, device pointer on a CPU context),
 *  TDM_ERR_OUT_OF_MEMORY, TDM_ERR_DEVICE.
 *  Stream-ordered context (TDM_CTX_STREAM_ORDERED), all arrays in device memory: queued on the context's stream, returns without waiting; with a host array: waits. */
TDM_API tdm_status tdm_sort(tdm_ctx *ctx, tdm_type key_type, void *keys, size_t n, unsigned flags);

/** Sorts n keys in place and applies the same permutation to values. keys and
 *  values must not overlap. Errors as tdm_sort.
 *  Stream-ordered context (TDM_CTX_STREAM_ORDERED), all arrays in device memory: queued on the context's stream, returns without waiting; with a host array: waits. */
TDM_API tdm_status tdm_sort_pairs(tdm_ctx *ctx, tdm_type key_type, void *keys,
                                  tdm_type value_type, void *values, size_t n, unsigned flags);

/** Writes to perm_out the stable permutation that sorts keys: keys[perm[0]],
 *  keys[perm[1]], ... is sorted. keys are not modified. index_type is TDM_U32
 *  (requires n <= UINT32_MAX, else TDM_ERR_INVALID_ARGUMENT) or TDM_U64 (other
 *  types: TDM_ERR_UNSUPPORTED). keys and perm_out must not overlap.
 *  Stream-ordered context (TDM_CTX_STREAM_ORDERED), all arrays in device memory: queued on the context's stream, returns without waiting; with a host array: waits. */
TDM_API tdm_status tdm_argsort(tdm_ctx *ctx, tdm_type key_type, const void *keys,
                               tdm_type index_type, void *perm_out, size_t n, unsigned flags);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_SORT_H */
