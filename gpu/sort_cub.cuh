/*
 * sort_cub.cuh: the CUB radix sorts the backend is built on, instantiated for
 * unsigned key bits (u32, u64: unsigned keys, and the sort bits of every
 * other key type) and signed keys (i32, i64: CUB orders signed integers
 * numerically itself, so the sort needs no map passes for them), each
 * with every value word (none, u32, u64). Floats are not instantiated: CUB
 * ranks -0.0 and +0.0 equal, tandem orders -0.0 first (IEEE totalOrder), so
 * they sort as their sort bits. sort_cub_impl.cuh holds the one definition;
 * each key type is instantiated in its own translation unit (cub_k32.cu,
 * cub_k64.cu, cub_i32.cu, cub_i64.cu) so builds run in parallel.
 */
#ifndef TANDEM_SORT_CUB_CUH
#define TANDEM_SORT_CUB_CUH

#include <cub/util_type.cuh>
#include <stddef.h>
#include <stdint.h>

/* Value type used when sorting keys only. */
struct tdm__no_value {};

/* Sorts d_keys (and d_values, unless V is tdm__no_value) on bits
 * [begin_bit, end_bit), ascending, or descending when desc (CUB's stable
 * descending order: equal keys keep their input order, as an ascending sort
 * of the inverted bits would); on return Current() of each buffer holds the
 * result. With d_temp NULL, only sets temp_bytes. */
template <typename K, typename V>
cudaError_t tdm__cub_sort(void *d_temp, size_t &temp_bytes, cub::DoubleBuffer<K> &d_keys,
                          cub::DoubleBuffer<V> &d_values, size_t n, int begin_bit, int end_bit, int desc,
                          cudaStream_t stream);

/* As tdm__cub_sort, from the const arrays kin / vin (only read) into kout /
 * vout: CUB's overloads without DoubleBuffer, whose temporary storage holds
 * the alternate buffers of its passes. Saves copying a caller's device
 * array before a sort that must not change it. */
template <typename K, typename V>
cudaError_t tdm__cub_sort_copy(void *d_temp, size_t &temp_bytes, const K *kin, K *kout, const V *vin, V *vout,
                               size_t n, int begin_bit, int end_bit, int desc, cudaStream_t stream);

#endif /* TANDEM_SORT_CUB_CUH */
