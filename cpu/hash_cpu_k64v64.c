/* hash_cpu_k64v64.c: the CPU hash table loops for 64-bit keys and 64-bit values. */
#include "cpu.h"

#define HS_K uint64_t
#define HS_KW 64
#define HS_V uint64_t
#define HS_VW 64
#define HS_SFX k64v64
#include "hash_cpu_impl.h"
