/*
 * hash_inst.h: instantiates a hash-table template header once per key/value
 * width pair (k32v32, k32v64, k64v32, k64v64). The includer defines
 * HS_TEMPLATE as the header's name in quotes; the template sees HS_K, HS_V
 * (the slot word types), HS_KW, HS_VW (their widths in bits) and HS_SFX (the
 * suffix for its function names). May be included several times.
 */
#ifndef HS_TEMPLATE
#error "define HS_TEMPLATE before including hash_inst.h"
#endif

#define HS_K uint32_t
#define HS_KW 32
#define HS_V uint32_t
#define HS_VW 32
#define HS_SFX k32v32
#include HS_TEMPLATE
#undef HS_V
#undef HS_VW
#undef HS_SFX
#define HS_V uint64_t
#define HS_VW 64
#define HS_SFX k32v64
#include HS_TEMPLATE
#undef HS_K
#undef HS_KW
#undef HS_V
#undef HS_VW
#undef HS_SFX

#define HS_K uint64_t
#define HS_KW 64
#define HS_V uint32_t
#define HS_VW 32
#define HS_SFX k64v32
#include HS_TEMPLATE
#undef HS_V
#undef HS_VW
#undef HS_SFX
#define HS_V uint64_t
#define HS_VW 64
#define HS_SFX k64v64
#include HS_TEMPLATE
#undef HS_K
#undef HS_KW
#undef HS_V
#undef HS_VW
#undef HS_SFX

#undef HS_TEMPLATE
