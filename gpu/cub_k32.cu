/* cub_k32.cu: the CUB radix sorts for 32-bit key bits. */
#include "sort_cub_impl.cuh"

TDM__CUB_INSTANTIATE(uint32_t)
