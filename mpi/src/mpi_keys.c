/* mpi_keys.c: key bits and argument checks. */
#include <string.h>

#include "mpi_internal.h"

/* Fixed-size copies let the compiler use plain loads and stores instead of
 * a memcpy call per element. */
/* NOLINTBEGIN(bugprone-macro-parentheses): T is a type name */
#define TDM__MPI_PERMUTE(T)                                                                                         \
  do {                                                                                                              \
    T *d = dst;                                                                                                     \
    const T *s = src;                                                                                               \
    if (gather)                                                                                                     \
      for (size_t i = 0; i < n; i++) memcpy(&d[i], &s[pos[i]], sizeof(T));                                          \
    else                                                                                                            \
      for (size_t i = 0; i < n; i++) memcpy(&d[pos[i]], &s[i], sizeof(T));                                          \
  } while (0)
/* NOLINTEND(bugprone-macro-parentheses) */

void tdm__mpi_permute(void *dst, const void *src, const size_t *pos, size_t n, size_t elem, int gather) {
  switch (elem) {
  case 1: TDM__MPI_PERMUTE(uint8_t); return;
  case 4: TDM__MPI_PERMUTE(uint32_t); return;
  case 8: TDM__MPI_PERMUTE(uint64_t); return;
  default: break;
  }
  char *d = dst;
  const char *s = src;
  for (size_t i = 0; i < n; i++) {
    if (gather)
      memcpy(d + i * elem, s + pos[i] * elem, elem);
    else
      memcpy(d + pos[i] * elem, s + i * elem, elem);
  }
}

tdm_status tdm__mpi_check_array(tdm_ctx *ctx, const void *p, size_t n, size_t elem, const char *fn,
                                const char *name) {
  if (n == 0) return TDM_OK;
  if (!p) return TDM__MPI_FAIL(TDM_ERR_INVALID_ARGUMENT, "%s: %s is NULL with n = %zu", fn, name, n);
  if (elem && (uintptr_t)p % elem)
    return TDM__MPI_FAIL(TDM_ERR_INVALID_ARGUMENT, "%s: %s is not aligned to %zu bytes", fn, name, elem);
  if (elem && n > SIZE_MAX / elem)
    return TDM__MPI_FAIL(TDM_ERR_INVALID_ARGUMENT, "%s: n = %zu overflows the size of %s", fn, n, name);
  if (tdm__mpi_is_device(p) && tdm_ctx_backend(ctx) != TDM_BACKEND_CUDA)
    return TDM__MPI_FAIL(TDM_ERR_INVALID_ARGUMENT, "%s: %s is device memory but the context is not CUDA", fn,
                              name);
  return TDM_OK;
}
