/* sort_cpu_k32v64.c: the CPU radix sort for 32-bit keys and 64-bit values. */
#include "sort_cpu.h"

#define RS_K uint32_t
#define RS_V uint64_t
#define RS_HAS_V 1
#define RS_UNSORT RS_UNSORT32
#define RS_VQ_SORT tdm__vq_sort_u32
#define RS_SFX k32v64
#include "radix_impl.h"
