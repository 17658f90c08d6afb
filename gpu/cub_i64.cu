/* cub_i64.cu: the CUB radix sorts for 64-bit signed keys. */
#include "sort_cub_impl.cuh"

TDM__CUB_INSTANTIATE(int64_t)
