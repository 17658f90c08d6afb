/* mpi_exchange.c: the all-to-all exchange and batch routing.
 *
 * MPI counts and displacements are ints. An element type of elem bytes keeps
 * counts in elements, so MPI_Alltoallv serves every exchange whose per-rank
 * offsets stay below 2^31 elements; larger exchanges go as point-to-point
 * messages of at most that many elements each (Open MPI 4 has no MPI-4
 * large-count calls). */
#include <limits.h>
#include <string.h>

#include "mpi_internal.h"

/* Process-wide; calls on different communicators may run on several threads. */
static uint64_t bytes_sent;
void tdm__mpi_count_sent(uint64_t bytes) { __atomic_fetch_add(&bytes_sent, bytes, __ATOMIC_RELAXED); }
uint64_t tdm_mpi_bytes_sent(void) { return __atomic_load_n(&bytes_sent, __ATOMIC_RELAXED); }

#ifdef TANDEM_MPI_TEST_HOOKS
static size_t count_limit;
static long fail_exchange_countdown;
void tdm__mpi_test_count_limit(size_t max_elems) { count_limit = max_elems; }
void tdm__mpi_test_fail_exchange(long k) { fail_exchange_countdown = k; }
static size_t max_count(void) { return count_limit ? count_limit : (size_t)INT_MAX; }
#else
static size_t max_count(void) { return (size_t)INT_MAX; }
#endif

tdm_status tdm__mpi_counts(const tdm__mpi_comm *c, const uint64_t *send_counts, uint64_t *recv_counts) {
  int rc = MPI_Alltoall(send_counts, 1, MPI_UINT64_T, recv_counts, 1, MPI_UINT64_T, c->comm);
  return tdm__mpi_agree(c, rc == MPI_SUCCESS ? TDM_OK : tdm__mpi_err(rc, "MPI_Alltoall (counts)"));
}

static int alltoallv(const tdm__mpi_comm *c, const char *send, const uint64_t *sc, char *recv, const uint64_t *rc_,
                     int *iv, MPI_Datatype t) {
  int p = c->size;
  int *scnt = iv, *sdis = iv + p, *rcnt = iv + (size_t)2 * p, *rdis = iv + (size_t)3 * p;
  uint64_t so = 0, ro = 0;
  for (int q = 0; q < p; q++) {
    scnt[q] = (int)sc[q];
    sdis[q] = (int)so;
    rcnt[q] = (int)rc_[q];
    rdis[q] = (int)ro;
    so += sc[q];
    ro += rc_[q];
  }
  return MPI_Alltoallv(send, scnt, sdis, t, recv, rcnt, rdis, t, c->comm);
}

/* Point-to-point: every rank posts its receives, then its sends, in pieces of
 * at most lim elements; MPI's non-overtaking rule keeps pieces in order. */
static int pieces(const tdm__mpi_comm *c, const char *send, const uint64_t *sc, char *recv, const uint64_t *rcn,
                  size_t elem, size_t lim, MPI_Datatype t, MPI_Request *req, size_t nreq) {
  int p = c->size, rc = MPI_SUCCESS;
  size_t k = 0;
  uint64_t ro = 0;
  for (int q = 0; q < p && rc == MPI_SUCCESS; q++) {
    for (uint64_t done = 0; q != c->rank && done < rcn[q] && rc == MPI_SUCCESS;) {
      size_t m = (size_t)(rcn[q] - done) < lim ? (size_t)(rcn[q] - done) : lim;
      rc = MPI_Irecv(recv + (size_t)(ro + done) * elem, (int)m, t, q, 0, c->comm, &req[k++]);
      done += m;
    }
    ro += rcn[q];
  }
  uint64_t so = 0;
  for (int q = 0; q < p && rc == MPI_SUCCESS; q++) {
    for (uint64_t done = 0; q != c->rank && done < sc[q] && rc == MPI_SUCCESS;) {
      size_t m = (size_t)(sc[q] - done) < lim ? (size_t)(sc[q] - done) : lim;
      rc = MPI_Isend(send + (size_t)(so + done) * elem, (int)m, t, q, 0, c->comm, &req[k++]);
      done += m;
    }
    so += sc[q];
  }
  /* Requests not posted stay MPI_REQUEST_NULL; wait for those that were. */
  int wrc = MPI_Waitall((int)nreq, req, MPI_STATUSES_IGNORE);
  if (rc == MPI_SUCCESS) rc = wrc;
  /* This rank's own part is a copy. */
  uint64_t sself = 0, rself = 0;
  for (int q = 0; q < c->rank; q++) {
    sself += sc[q];
    rself += rcn[q];
  }
  if (rc == MPI_SUCCESS && sc[c->rank])
    memcpy(recv + (size_t)rself * elem, send + (size_t)sself * elem, (size_t)sc[c->rank] * elem);
  return rc;
}

tdm_status tdm__mpi_exchange(const tdm__mpi_comm *c, const void *send, const uint64_t *send_counts, void *recv,
                             const uint64_t *recv_counts, size_t elem) {
  int p = c->size;
  size_t lim = max_count();
  uint64_t stot = 0, rtot = 0, sent_remote = 0;
  size_t nreq = 0;
  int small = 1;
  for (int q = 0; q < p; q++) {
    /* Offsets as well as counts must fit: the last offset is the largest. */
    if (stot + send_counts[q] > lim || rtot + recv_counts[q] > lim) small = 0;
    stot += send_counts[q];
    rtot += recv_counts[q];
    if (q != c->rank) {
      nreq += (size_t)((send_counts[q] + lim - 1) / lim + (recv_counts[q] + lim - 1) / lim);
      sent_remote += send_counts[q];
    }
  }
  /* Every rank must take the same path: agree on "small" as well as on the
   * allocation below. */
  int all_small = small;
  int rc = MPI_Allreduce(&small, &all_small, 1, MPI_INT, MPI_MIN, c->comm);
  tdm_status st = rc == MPI_SUCCESS ? TDM_OK : tdm__mpi_err(rc, "MPI_Allreduce (exchange path)");
  void *scratch = NULL;
  if (st == TDM_OK) {
    size_t bytes = all_small ? (size_t)4 * (size_t)p * sizeof(int) : (nreq ? nreq : 1) * sizeof(MPI_Request);
    scratch = tdm__mpi_alloc(c, bytes, "the exchange's request table");
    if (!scratch) st = TDM_ERR_OUT_OF_MEMORY;
  }
  st = tdm__mpi_agree(c, st);
  if (st != TDM_OK) {
    tdm_svc_free(scratch);
    return st;
  }
  MPI_Datatype t;
  rc = MPI_Type_contiguous((int)elem, MPI_BYTE, &t);
  if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&t);
  if (rc == MPI_SUCCESS) {
    if (all_small) {
      rc = alltoallv(c, send, send_counts, recv, recv_counts, scratch, t);
    } else {
      MPI_Request *req = scratch;
      for (size_t i = 0; i < nreq; i++) req[i] = MPI_REQUEST_NULL;
      rc = pieces(c, send, send_counts, recv, recv_counts, elem, lim, t, req, nreq);
    }
    MPI_Type_free(&t);
  }
  tdm_svc_free(scratch);
#ifdef TANDEM_MPI_TEST_HOOKS
  if (rc == MPI_SUCCESS && fail_exchange_countdown > 0 && --fail_exchange_countdown == 0) rc = MPI_ERR_OTHER;
#endif
  if (rc == MPI_SUCCESS) tdm__mpi_count_sent(sent_remote * elem);
  return tdm__mpi_agree(c, rc == MPI_SUCCESS ? TDM_OK : tdm__mpi_err(rc, "the all-to-all exchange"));
}

/* ---- routing --------------------------------------------------------------- */

void tdm__mpi_route_free(tdm__mpi_route *r) {
  tdm_svc_free(r->scounts);
  tdm_svc_free(r->pos);
  memset(r, 0, sizeof *r);
}

tdm_status tdm__mpi_route_plan(const tdm__mpi_comm *c, const uint32_t *dest, size_t n, tdm__mpi_route *r) {
  memset(r, 0, sizeof *r);
  r->n = n;
  size_t p = (size_t)c->size;
  r->scounts = tdm__mpi_alloc(c, 2 * p * sizeof(uint64_t), "routing counts");
  r->pos = r->scounts ? tdm__mpi_alloc(c, n * sizeof(size_t), "routing positions") : NULL;
  tdm_status st = tdm__mpi_agree(c, r->scounts && r->pos ? TDM_OK : TDM_ERR_OUT_OF_MEMORY);
  if (st != TDM_OK) {
    tdm__mpi_route_free(r);
    return st;
  }
  r->rcounts = r->scounts + p;
  memset(r->scounts, 0, p * sizeof(uint64_t));
  for (size_t i = 0; i < n; i++) r->scounts[dest[i]]++;
  /* Stable counting sort: element i goes after every earlier element with the
   * same owner, so each owner receives a rank's elements in index order. */
  uint64_t *next = r->rcounts; /* borrowed as scratch until the exchange below */
  uint64_t acc = 0;
  for (size_t q = 0; q < p; q++) {
    next[q] = acc;
    acc += r->scounts[q];
  }
  for (size_t i = 0; i < n; i++) r->pos[i] = (size_t)next[dest[i]]++;
  st = tdm__mpi_counts(c, r->scounts, r->rcounts);
  if (st != TDM_OK) {
    tdm__mpi_route_free(r);
    return st;
  }
  r->nrecv = 0;
  for (size_t q = 0; q < p; q++) r->nrecv += (size_t)r->rcounts[q];
  return TDM_OK;
}

tdm_status tdm__mpi_route_forward(const tdm__mpi_comm *c, const tdm__mpi_route *r, const void *src, size_t elem,
                                  void *recv) {
  char *send = tdm__mpi_alloc(c, r->n * elem, "the send buffer");
  tdm_status st = tdm__mpi_agree(c, send ? TDM_OK : TDM_ERR_OUT_OF_MEMORY);
  if (st != TDM_OK) {
    tdm_svc_free(send);
    return st;
  }
  tdm__mpi_permute(send, src, r->pos, r->n, elem, 0);
  st = tdm__mpi_exchange(c, send, r->scounts, recv, r->rcounts, elem);
  tdm_svc_free(send);
  return st;
}

tdm_status tdm__mpi_route_back(const tdm__mpi_comm *c, const tdm__mpi_route *r, const void *answers, size_t elem,
                               void *out) {
  char *back = tdm__mpi_alloc(c, r->n * elem, "the answer buffer");
  tdm_status st = tdm__mpi_agree(c, back ? TDM_OK : TDM_ERR_OUT_OF_MEMORY);
  if (st != TDM_OK) {
    tdm_svc_free(back);
    return st;
  }
  st = tdm__mpi_exchange(c, answers, r->rcounts, back, r->scounts, elem);
  if (st == TDM_OK && out) tdm__mpi_permute(out, back, r->pos, r->n, elem, 1);
  tdm_svc_free(back);
  return st;
}
