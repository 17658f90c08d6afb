/* hash_cpu_k64v32.c: the CPU hash table loops for 64-bit keys and 32-bit values. */
#include "cpu.h"

#define HS_K uint64_t
#define HS_KW 64
#define HS_V uint32_t
#define HS_VW 32
#define HS_SFX k64v32
#include "hash_cpu_impl.h"
