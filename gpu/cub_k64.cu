/* cub_k64.cu: the CUB radix sorts for 64-bit key bits. */
#include "sort_cub_impl.cuh"

TDM__CUB_INSTANTIATE(uint64_t)
