/* mpi_agree.c: the private communicator and collective status agreement.
 *
 * Every distributed call moves through phases separated by agreements: each
 * rank does what can fail locally (checks, allocation, the local structure
 * call), then all ranks agree on the first failure before anyone enters the
 * next collective. So a rank that fails never leaves the others waiting in an
 * exchange it will not join. */
#include <stdio.h>
#include <string.h>

#include "mpi_internal.h"

enum { TDM__MPI_MSG = 480 };

tdm_status tdm__mpi_err(int rc, const char *what) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "MPI error %d", rc);
  return TDM__MPI_FAIL(TDM_ERR_COMM, "%s failed: %s", what, text);
}

tdm_status tdm__mpi_comm_dup(tdm_ctx *ctx, MPI_Comm comm, const char *fn, tdm__mpi_comm *out) {
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (!inited || finalized)
    return TDM__MPI_FAIL(TDM_ERR_INVALID_ARGUMENT, "%s: MPI is not initialised (call MPI_Init first)", fn);
  if (comm == MPI_COMM_NULL)
    return TDM__MPI_FAIL(TDM_ERR_INVALID_ARGUMENT, "%s: comm is MPI_COMM_NULL", fn);
  int inter = 0;
  if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
    return TDM__MPI_FAIL(TDM_ERR_INVALID_ARGUMENT, "%s: comm must be an intracommunicator", fn);
  /* The duplicate keeps our messages apart from the caller's and lets us
   * return errors without touching the caller's error handler. */
  out->ctx = ctx;
  int rc = MPI_Comm_dup(comm, &out->comm);
  if (rc != MPI_SUCCESS) return tdm__mpi_err(rc, "MPI_Comm_dup");
  rc = MPI_Comm_set_errhandler(out->comm, MPI_ERRORS_RETURN);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(out->comm, &out->rank);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_size(out->comm, &out->size);
  if (rc != MPI_SUCCESS) {
    MPI_Comm_free(&out->comm);
    return tdm__mpi_err(rc, "MPI_Comm_set_errhandler");
  }
  return TDM_OK;
}

void tdm__mpi_comm_free(tdm__mpi_comm *c) {
  if (c->comm != MPI_COMM_NULL) MPI_Comm_free(&c->comm);
  c->comm = MPI_COMM_NULL;
}

/* The first failing rank (by rank number) tells everyone its status and
 * message. */
static tdm_status agree_on(const tdm__mpi_comm *c, tdm_status st, int first_failing) {
  struct {
    int status;
    char msg[TDM__MPI_MSG];
  } m;
  memset(&m, 0, sizeof m);
  if (c->rank == first_failing) {
    m.status = (int)st;
    snprintf(m.msg, sizeof m.msg, "%s", tdm_last_error());
  }
  int rc = MPI_Bcast(&m, (int)sizeof m, MPI_BYTE, first_failing, c->comm);
  if (rc != MPI_SUCCESS) return tdm__mpi_err(rc, "MPI_Bcast (status agreement)");
  if (c->rank == first_failing)
    return TDM__MPI_FAIL(st, "rank %d: %s", first_failing, m.msg);
  return TDM__MPI_FAIL((tdm_status)m.status, "rank %d: %s", first_failing, m.msg);
}

tdm_status tdm__mpi_agree_all(const tdm__mpi_comm *c, tdm_status st) {
  int mine = st == TDM_OK ? c->size : c->rank, first = c->size;
  int rc = MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, c->comm);
  if (rc != MPI_SUCCESS) return tdm__mpi_err(rc, "MPI_Allreduce (status agreement)");
  if (first == c->size) return TDM_OK;
  return agree_on(c, st, first);
}

tdm_status tdm__mpi_begin_all(const tdm__mpi_comm *c, const char *fn, tdm_status st, const int64_t *params,
                              const char *const *names, int k, uint64_t n, uint64_t *all_n) {
  enum { MAXK = 8 };
  int64_t row[MAXK + 2];
  const int w = k + 2;
  row[0] = (int64_t)st;
  row[1] = (int64_t)n;
  for (int j = 0; j < k; j++) row[2 + j] = params[j];
  size_t bytes = (size_t)c->size * (size_t)w * sizeof(int64_t);
  int64_t *all = tdm__mpi_alloc(c, bytes, "the call's parameter table");
  /* Even a failed allocation must join the collective: agree first. */
  tdm_status ast = tdm__mpi_agree(c, all ? TDM_OK : TDM_ERR_OUT_OF_MEMORY);
  if (ast != TDM_OK || !all) {
    tdm_svc_free(all);
    return ast != TDM_OK ? ast : TDM_ERR_OUT_OF_MEMORY;
  }
  int rc = MPI_Allgather(row, w, MPI_INT64_T, all, w, MPI_INT64_T, c->comm);
  ast = tdm__mpi_agree(c, rc == MPI_SUCCESS ? TDM_OK : tdm__mpi_err(rc, "MPI_Allgather (call parameters)"));
  if (ast != TDM_OK) {
    tdm_svc_free(all);
    return ast;
  }
  int first = c->size;
  for (int q = 0; q < c->size; q++)
    if (all[(size_t)q * w] != TDM_OK) {
      first = q;
      break;
    }
  tdm_status out = TDM_OK;
  if (first < c->size) {
    out = agree_on(c, st, first);
  } else {
    for (int j = 0; j < k && out == TDM_OK; j++)
      for (int q = 1; q < c->size; q++)
        if (all[(size_t)q * w + 2 + j] != all[2 + j]) {
          out = TDM__MPI_FAIL(TDM_ERR_INVALID_ARGUMENT,
                                   "rank %d: %s: %s is %lld on this rank but %lld on rank 0; it must be the "
                                   "same on every rank",
                                   q, fn, names[j], (long long)all[(size_t)q * w + 2 + j], (long long)all[2 + j]);
          break;
        }
  }
  if (out == TDM_OK && all_n)
    for (int q = 0; q < c->size; q++) all_n[q] = (uint64_t)all[(size_t)q * w + 1];
  tdm_svc_free(all);
  return out;
}
