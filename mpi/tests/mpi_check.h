/* mpi_check.h: the tally the mpi test programs keep. CHECK counts a pass or
 * prints a failure with the rank, the case being run (g_case) and tandem's
 * last error; check_finish sums the tallies over the ranks, prints them on
 * rank 0, finalises MPI and gives the exit status. */
#ifndef TANDEM_MPI_CHECK_H
#define TANDEM_MPI_CHECK_H

#include <stdio.h>

#include <tandem/mpi.h>

static int g_rank, g_size;
static long g_pass, g_fail;
static char g_case[256];

#define CHECK(cond, ...)                                                                                           \
  do {                                                                                                             \
    if (cond) {                                                                                                    \
      g_pass++;                                                                                                    \
    } else {                                                                                                       \
      g_fail++;                                                                                                    \
      fprintf(stderr, "rank %d: FAIL %s:%d [%s]: ", g_rank, __FILE__, __LINE__, g_case);                           \
      fprintf(stderr, __VA_ARGS__);                                                                                \
      fprintf(stderr, " (last error: %s)\n", tdm_last_error());                                                   \
    }                                                                                                              \
  } while (0)

static int check_finish(const char *prog) {
  long tot[2] = {g_pass, g_fail};
  MPI_Allreduce(MPI_IN_PLACE, tot, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) printf("%s: %d ranks, %ld passed, %ld failed\n", prog, g_size, tot[0], tot[1]);
  MPI_Finalize();
  return tot[1] ? 1 : 0;
}

#endif /* TANDEM_MPI_CHECK_H */
