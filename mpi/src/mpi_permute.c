/* mpi_permute.c: permutations of element arrays along a route. */
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
