/* mpi_alloc.c: host allocation for the distributed calls, with a failure
 * injection point compiled only into the test build. */
#include <stdlib.h>

#include "mpi_internal.h"

#ifdef TANDEM_MPI_TEST_HOOKS
static long fail_countdown;
void tdm__mpi_test_fail_alloc(long k) { fail_countdown = k; }
long tdm__mpi_test_alloc_countdown(void) { return fail_countdown; }
#endif

void *tdm__mpi_alloc(size_t bytes, const char *what) {
#ifdef TANDEM_MPI_TEST_HOOKS
  if (fail_countdown > 0 && --fail_countdown == 0) {
    tdm_set_last_error(TDM_ERR_OUT_OF_MEMORY, "out of host memory allocating %zu bytes for %s (injected)", bytes,
                       what);
    return NULL;
  }
#endif
  void *p = malloc(bytes ? bytes : 1);
  if (!p) tdm_set_last_error(TDM_ERR_OUT_OF_MEMORY, "out of host memory allocating %zu bytes for %s", bytes, what);
  return p;
}

void tdm__mpi_free(void *p) { free(p); }

tdm_status tdm__mpi_mul(size_t a, size_t b, size_t *out, const char *fn) {
  if (b && a > SIZE_MAX / b) return TDM__MPI_FAIL(TDM_ERR_INVALID_ARGUMENT, "%s: size overflow (%zu x %zu)", fn, a, b);
  *out = a * b;
  return TDM_OK;
}
