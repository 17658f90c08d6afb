/*
 * sort_cub.cuh: the CUB radix sorts the backend is built on, instantiated for
 * unsigned key bits only (u32, u64) and value words (none, u32, u64), so that
 * every key and value type shares six instantiations. Each key width lives in
 * its own translation unit (cub_k32.cu, cub_k64.cu) so builds run in parallel.
 */
#ifndef TANDEM_SORT_CUB_CUH
#define TANDEM_SORT_CUB_CUH

#include <cub/util_type.cuh>
#include <stddef.h>
#include <stdint.h>

/* Value type used when sorting keys only. */
struct tdm_no_value {};

/* Sorts d_keys (and d_values) ascending on bits [begin_bit, end_bit); on
 * return Current() of each buffer holds the result. With d_temp NULL, only
 * sets temp_bytes. */
template <typename K, typename V>
cudaError_t tdm_cub_sort(void *d_temp, size_t &temp_bytes, cub::DoubleBuffer<K> &d_keys,
                         cub::DoubleBuffer<V> &d_values, size_t n, int begin_bit, int end_bit,
                         cudaStream_t stream);

/* Keys-only sorts are specialisations (defined with the other instantiations). */
template <>
cudaError_t tdm_cub_sort<uint32_t, tdm_no_value>(void *, size_t &, cub::DoubleBuffer<uint32_t> &,
                                                cub::DoubleBuffer<tdm_no_value> &, size_t, int, int,
                                                cudaStream_t);
template <>
cudaError_t tdm_cub_sort<uint64_t, tdm_no_value>(void *, size_t &, cub::DoubleBuffer<uint64_t> &,
                                                cub::DoubleBuffer<tdm_no_value> &, size_t, int, int,
                                                cudaStream_t);

#endif /* TANDEM_SORT_CUB_CUH */
