/* mpi_keys.c: key bits and argument checks. */
#include <string.h>

#include "mpi_internal.h"

uint64_t tdm__mpi_raw_bits(tdm_type t, const void *keys, size_t i) {
  if (tdm_type_size(t) == 4) {
    uint32_t v;
    memcpy(&v, (const char *)keys + i * 4, 4);
    return v;
  }
  uint64_t v;
  memcpy(&v, (const char *)keys + i * 8, 8);
  return v;
}

/* Signed: flip the sign bit. Floats (totalOrder): negative values have all
 * bits flipped, positive ones only the sign bit, so -NaN < -inf < -0 < +0 <
 * +inf < +NaN as unsigned integers. */
uint64_t tdm__mpi_obits(tdm_type t, const void *keys, size_t i) {
  uint64_t v = tdm__mpi_raw_bits(t, keys, i);
  switch (t) {
  case TDM_U32:
  case TDM_U64: return v;
  case TDM_I32: return v ^ 0x80000000u;
  case TDM_I64: return v ^ 0x8000000000000000ull;
  case TDM_F32: return (v & 0x80000000u) ? (~v & 0xffffffffu) : (v | 0x80000000u);
  case TDM_F64: return (v >> 63) ? ~v : (v | 0x8000000000000000ull);
  }
  return v;
}

tdm_status tdm__mpi_check_array(tdm_ctx *ctx, const void *p, size_t n, size_t elem, const char *fn,
                                const char *name) {
  if (n == 0) return TDM_OK;
  if (!p) return tdm_set_last_error(TDM_ERR_INVALID_ARGUMENT, "%s: %s is NULL with n = %zu", fn, name, n);
  if (elem && (uintptr_t)p % elem)
    return tdm_set_last_error(TDM_ERR_INVALID_ARGUMENT, "%s: %s is not aligned to %zu bytes", fn, name, elem);
  if (elem && n > SIZE_MAX / elem)
    return tdm_set_last_error(TDM_ERR_INVALID_ARGUMENT, "%s: n = %zu overflows the size of %s", fn, n, name);
  if (tdm__mpi_is_device(p) && tdm_ctx_backend(ctx) != TDM_BACKEND_CUDA)
    return tdm_set_last_error(TDM_ERR_INVALID_ARGUMENT, "%s: %s is device memory but the context is not CUDA", fn,
                              name);
  return TDM_OK;
}
