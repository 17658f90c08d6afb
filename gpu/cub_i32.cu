/* cub_i32.cu: the CUB radix sorts for 32-bit signed keys. */
#include "sort_cub_impl.cuh"

TDM__CUB_INSTANTIATE(int32_t)
