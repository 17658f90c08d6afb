/* sort_cpu_k32v32.c: the CPU radix sort for 32-bit keys and 32-bit values. */
#include "sort_cpu.h"

#define RS_K uint32_t
#define RS_V uint32_t
#define RS_HAS_V 1
#define RS_UNSORT RS_UNSORT32
#define RS_VQ_SORT tdm__vq_sort_u32
#define RS_SFX k32v32
#include "radix_impl.h"
