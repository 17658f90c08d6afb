/* cub_k32.cu: CUB radix sort instantiations for u32 key bits. */
#include <cub/device/device_radix_sort.cuh>

#include "sort_cub.cuh"

template <typename K, typename V>
cudaError_t tdm_cub_sort(void *d_temp, size_t &temp_bytes, cub::DoubleBuffer<K> &d_keys,
                         cub::DoubleBuffer<V> &d_values, size_t n, int begin_bit, int end_bit,
                         cudaStream_t stream) {
  return cub::DeviceRadixSort::SortPairs(d_temp, temp_bytes, d_keys, d_values, n, begin_bit, end_bit, stream);
}

template <>
cudaError_t tdm_cub_sort<uint32_t, tdm_no_value>(void *d_temp, size_t &temp_bytes,
                                                  cub::DoubleBuffer<uint32_t> &d_keys,
                                                  cub::DoubleBuffer<tdm_no_value> &, size_t n,
                                                  int begin_bit, int end_bit, cudaStream_t stream) {
  return cub::DeviceRadixSort::SortKeys(d_temp, temp_bytes, d_keys, n, begin_bit, end_bit, stream);
}

template cudaError_t tdm_cub_sort<uint32_t, uint32_t>(void *, size_t &, cub::DoubleBuffer<uint32_t> &,
                                                       cub::DoubleBuffer<uint32_t> &, size_t, int, int,
                                                       cudaStream_t);
template cudaError_t tdm_cub_sort<uint32_t, uint64_t>(void *, size_t &, cub::DoubleBuffer<uint32_t> &,
                                                       cub::DoubleBuffer<uint64_t> &, size_t, int, int,
                                                       cudaStream_t);
