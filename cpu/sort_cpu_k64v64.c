/* sort_cpu_k64v64.c: the CPU radix sort for 64-bit keys and 64-bit values. */
#include "sort_cpu.h"

#define RS_K uint64_t
#define RS_V uint64_t
#define RS_HAS_V 1
#define RS_UNSORT RS_UNSORT64
#define RS_VQ_SORT tdm__vq_sort_u64
#define RS_SFX k64v64
#include "radix_impl.h"
