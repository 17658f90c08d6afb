/* hash_cpu_k32v64.c: the CPU hash table loops for 32-bit keys and 64-bit values. */
#include "cpu.h"

#define HS_K uint32_t
#define HS_KW 32
#define HS_V uint64_t
#define HS_VW 64
#define HS_SFX k32v64
#include "hash_cpu_impl.h"
