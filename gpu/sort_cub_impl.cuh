/*
 * sort_cub_impl.cuh: the definitions of tdm__cub_sort and tdm__cub_sort_copy
 * (sort_cub.cuh), and the macro that instantiates both for one key width
 * with every value word.
 * Included only by the instantiation files cub_k32.cu and cub_k64.cu.
 */
#ifndef TANDEM_SORT_CUB_IMPL_CUH
#define TANDEM_SORT_CUB_IMPL_CUH

#include <cub/device/device_radix_sort.cuh>
#include <stdint.h>
#include <type_traits>

#include "sort_cub.cuh"

/* One sort with the item count as type N: CUB derives its offset type, and
 * so its tuning, from N (32-bit offsets for a 32-bit count). */
template <typename K, typename V, typename N, bool DESC>
static cudaError_t cub_sort_n(void *d_temp, size_t &temp_bytes, cub::DoubleBuffer<K> &d_keys,
                              cub::DoubleBuffer<V> &d_values, N n, int begin_bit, int end_bit, cudaStream_t stream) {
  if constexpr (std::is_same<V, tdm__no_value>::value) {
    (void)d_values;
    if constexpr (DESC)
      return cub::DeviceRadixSort::SortKeysDescending(d_temp, temp_bytes, d_keys, n, begin_bit, end_bit, stream);
    else
      return cub::DeviceRadixSort::SortKeys(d_temp, temp_bytes, d_keys, n, begin_bit, end_bit, stream);
  } else {
    if constexpr (DESC)
      return cub::DeviceRadixSort::SortPairsDescending(d_temp, temp_bytes, d_keys, d_values, n, begin_bit, end_bit,
                                                       stream);
    else
      return cub::DeviceRadixSort::SortPairs(d_temp, temp_bytes, d_keys, d_values, n, begin_bit, end_bit, stream);
  }
}

/* Below 2^32 items the count goes to CUB as 32 bits: CUB's 32-bit offset
 * path, its tuned one, instead of 64-bit offsets for every sort. The sizing
 * call and the sort take the same branch for the same n and desc, so the
 * temporary storage always fits the sort it was sized for. */
template <typename K, typename V>
cudaError_t tdm__cub_sort(void *d_temp, size_t &temp_bytes, cub::DoubleBuffer<K> &d_keys,
                          cub::DoubleBuffer<V> &d_values, size_t n, int begin_bit, int end_bit, int desc,
                          cudaStream_t stream) {
  const int small = n <= (size_t)UINT32_MAX;
  const uint32_t n32 = (uint32_t)n;
  if (small && desc)
    return cub_sort_n<K, V, uint32_t, true>(d_temp, temp_bytes, d_keys, d_values, n32, begin_bit, end_bit, stream);
  if (small)
    return cub_sort_n<K, V, uint32_t, false>(d_temp, temp_bytes, d_keys, d_values, n32, begin_bit, end_bit, stream);
  if (desc)
    return cub_sort_n<K, V, size_t, true>(d_temp, temp_bytes, d_keys, d_values, n, begin_bit, end_bit, stream);
  return cub_sort_n<K, V, size_t, false>(d_temp, temp_bytes, d_keys, d_values, n, begin_bit, end_bit, stream);
}

/* tdm__cub_sort_copy's one sort with the item count as type N. */
template <typename K, typename V, typename N, bool DESC>
static cudaError_t cub_sort_copy_n(void *d_temp, size_t &temp_bytes, const K *kin, K *kout, const V *vin, V *vout,
                                   N n, int begin_bit, int end_bit, cudaStream_t stream) {
  if constexpr (std::is_same<V, tdm__no_value>::value) {
    (void)vin;
    (void)vout;
    if constexpr (DESC)
      return cub::DeviceRadixSort::SortKeysDescending(d_temp, temp_bytes, kin, kout, n, begin_bit, end_bit, stream);
    else
      return cub::DeviceRadixSort::SortKeys(d_temp, temp_bytes, kin, kout, n, begin_bit, end_bit, stream);
  } else {
    if constexpr (DESC)
      return cub::DeviceRadixSort::SortPairsDescending(d_temp, temp_bytes, kin, kout, vin, vout, n, begin_bit,
                                                       end_bit, stream);
    else
      return cub::DeviceRadixSort::SortPairs(d_temp, temp_bytes, kin, kout, vin, vout, n, begin_bit, end_bit,
                                             stream);
  }
}

/* The same choice of count type as tdm__cub_sort. */
template <typename K, typename V>
cudaError_t tdm__cub_sort_copy(void *d_temp, size_t &temp_bytes, const K *kin, K *kout, const V *vin, V *vout,
                               size_t n, int begin_bit, int end_bit, int desc, cudaStream_t stream) {
  const int small = n <= (size_t)UINT32_MAX;
  const uint32_t n32 = (uint32_t)n;
  if (small && desc)
    return cub_sort_copy_n<K, V, uint32_t, true>(d_temp, temp_bytes, kin, kout, vin, vout, n32, begin_bit, end_bit,
                                                 stream);
  if (small)
    return cub_sort_copy_n<K, V, uint32_t, false>(d_temp, temp_bytes, kin, kout, vin, vout, n32, begin_bit, end_bit,
                                                  stream);
  if (desc)
    return cub_sort_copy_n<K, V, size_t, true>(d_temp, temp_bytes, kin, kout, vin, vout, n, begin_bit, end_bit,
                                               stream);
  return cub_sort_copy_n<K, V, size_t, false>(d_temp, temp_bytes, kin, kout, vin, vout, n, begin_bit, end_bit,
                                              stream);
}

#define TDM__CUB_INSTANTIATE_V(K, V)                                                                              \
  template cudaError_t tdm__cub_sort<K, V>(void *, size_t &, cub::DoubleBuffer<K> &, cub::DoubleBuffer<V> &, size_t, \
                                           int, int, int, cudaStream_t);                                           \
  template cudaError_t tdm__cub_sort_copy<K, V>(void *, size_t &, const K *, K *, const V *, V *, size_t, \
                                                int, int, int, cudaStream_t);
#define TDM__CUB_INSTANTIATE(K)              \
  TDM__CUB_INSTANTIATE_V(K, tdm__no_value)   \
  TDM__CUB_INSTANTIATE_V(K, uint32_t)        \
  TDM__CUB_INSTANTIATE_V(K, uint64_t)

#endif /* TANDEM_SORT_CUB_IMPL_CUH */
