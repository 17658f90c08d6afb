/* mpi_internal.h: what the distributed structures share: the communicator
 * wrapper, collective status agreement, the all-to-all exchange and routing
 * of batches to owner ranks. Built only on tandem's installed headers: the
 * core's services (tandem/services.h) allocate through the context's
 * allocator, check and stage caller arrays and give the keys' bits. */
#ifndef TANDEM_MPI_INTERNAL_H
#define TANDEM_MPI_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <tandem/services.h>
#include <tandem/mpi.h>

/* Sets the message and yields the status (visibly to static analysis, which
 * cannot see that tdm_set_last_error returns its first argument). */
#define TDM__MPI_FAIL(s, ...) (tdm_set_last_error((s), __VA_ARGS__), (s))

/* 128-bit products for proportional sample counts and owner ranks. */
__extension__ typedef unsigned __int128 tdm__mpi_u128;

/* A private duplicate of the caller's communicator with MPI_ERRORS_RETURN,
 * and the context whose allocator every buffer of the call comes from. */
typedef struct tdm__mpi_comm {
  MPI_Comm comm;
  int rank, size;
  tdm_ctx *ctx; /* NULL when the caller passed none (the call fails) */
} tdm__mpi_comm;

/* Checks comm (MPI_COMM_NULL, MPI not initialised) and duplicates it. Local:
 * on failure there is no communicator to agree on. */
tdm_status tdm__mpi_comm_dup(tdm_ctx *ctx, MPI_Comm comm, const char *fn, tdm__mpi_comm *out);
void tdm__mpi_comm_free(tdm__mpi_comm *c);

/* Turns an MPI error code into TDM_ERR_COMM with MPI's error string. */
tdm_status tdm__mpi_err(int rc, const char *what);

/* Collective: every rank passes its local status (with tdm_last_error() set
 * when it is not TDM_OK); every rank gets the first failing rank's status and
 * its message prefixed with "rank R: ". */
tdm_status tdm__mpi_agree_all(const tdm__mpi_comm *c, tdm_status st);
/* A local failure always fails the agreement (the first failing rank is at
 * most this one); spelled out so that static analysis can follow it. */
static inline tdm_status tdm__mpi_agree(const tdm__mpi_comm *c, tdm_status st) {
  tdm_status a = tdm__mpi_agree_all(c, st);
  return st != TDM_OK && a == TDM_OK ? st : a;
}

/* Collective opening of a call: agrees on the local status like
 * tdm__mpi_agree, checks that the k parameters (names[j] = params[j]) are the
 * same on every rank, and, when all_n is not NULL, gathers every rank's n into
 * all_n[size]. */
tdm_status tdm__mpi_begin_all(const tdm__mpi_comm *c, const char *fn, tdm_status st, const int64_t *params,
                              const char *const *names, int k, uint64_t n, uint64_t *all_n);
static inline tdm_status tdm__mpi_begin(const tdm__mpi_comm *c, const char *fn, tdm_status st,
                                        const int64_t *params, const char *const *names, int k, uint64_t n,
                                        uint64_t *all_n) {
  tdm_status a = tdm__mpi_begin_all(c, fn, st, params, names, k, n, all_n);
  return st != TDM_OK && a == TDM_OK ? st : a;
}

/* A host buffer of the call from c's context (tdm_svc_alloc: the caller's
 * allocator sees it; 0 bytes is a valid block); free with tdm_svc_free. */
static inline void *tdm__mpi_alloc(const tdm__mpi_comm *c, size_t bytes, const char *what) {
  return tdm_svc_alloc(c->ctx, bytes, what);
}

/* Exchanges counts: recv[q] = what rank q sends to this rank. */
tdm_status tdm__mpi_counts(const tdm__mpi_comm *c, const uint64_t *send_counts, uint64_t *recv_counts);

/* All-to-all of elements of elem bytes: send holds the elements for rank 0,
 * then rank 1, ... (send_counts[q] each); recv receives from rank 0, 1, ...
 * in order. MPI_Alltoallv when every count and offset fits MPI's int,
 * otherwise point-to-point messages of at most that many elements. */
tdm_status tdm__mpi_exchange(const tdm__mpi_comm *c, const void *send, const uint64_t *send_counts,
                             void *recv, const uint64_t *recv_counts, size_t elem);

/* Routing of a batch to owner ranks: dest[i] is the owner of element i. */
typedef struct tdm__mpi_route {
  uint64_t *scounts, *rcounts; /* size entries each */
  size_t *pos;                 /* element i's place in the send order */
  size_t n, nrecv;
} tdm__mpi_route;

/* Collective: plans the route (counting sort of dest, stable), exchanges the
 * counts, agrees. */
tdm_status tdm__mpi_route_plan(const tdm__mpi_comm *c, const uint32_t *dest, size_t n, tdm__mpi_route *r);
void tdm__mpi_route_free(tdm__mpi_route *r);
/* Collective: sends src[i] (elem bytes each) to dest[i]; recv (nrecv
 * elements) receives rank 0's elements, then rank 1's, each in its index
 * order: the concatenation order. src may be NULL only when n == 0. */
tdm_status tdm__mpi_route_forward(const tdm__mpi_comm *c, const tdm__mpi_route *r, const void *src, size_t elem,
                                  void *recv);
/* Collective: sends answers (nrecv elements, in received order) back; out[i]
 * receives the answer for element i (out NULL: received and dropped). */
tdm_status tdm__mpi_route_back(const tdm__mpi_comm *c, const tdm__mpi_route *r, const void *answers, size_t elem,
                               void *out);

/* dst[pos[i]] = src[i] (scatter) or dst[i] = src[pos[i]] (gather) for n
 * elements of elem bytes. */
void tdm__mpi_permute(void *dst, const void *src, const size_t *pos, size_t n, size_t elem, int gather);

/* Bytes sent to other ranks, for tdm_mpi_bytes_sent. */
void tdm__mpi_count_sent(uint64_t bytes);


/* ---- batches routed to owners (mpi_batch.c) ------------------------------- */

typedef uint32_t (*tdm__mpi_owner_fn)(const void *env, tdm_type kt, const void *keys, size_t i);

/* A caller batch on its way to the owners: staged caller arrays, the route,
 * and what this rank received (rk, rv: route.nrecv elements, in
 * concatenation order). */
typedef struct tdm__mpi_batch {
  tdm__mpi_route route;
  tdm_svc_stage sk, sv;
  uint32_t *dest;
  void *rk, *rv;
} tdm__mpi_batch;

/* Collective: agrees on st (the caller's local checks), stages keys (and
 * values when vsz != 0), routes them to owner(i). */
tdm_status tdm__mpi_batch_send(const tdm__mpi_comm *c, tdm_status st, tdm_type kt, const void *keys,
                               const void *values, size_t vsz, size_t n, tdm__mpi_owner_fn owner, const void *env,
                               tdm__mpi_batch *b);
void tdm__mpi_batch_free(tdm__mpi_batch *b);

/* A local structure seen through its find / insert / erase. */
typedef struct tdm__mpi_local_ops {
  tdm_status (*find)(const void *s, const void *keys, void *values_out, uint8_t *found_out, size_t n);
  tdm_status (*insert)(void *s, const void *keys, const void *values, size_t n);
  tdm_status (*erase)(void *s, const void *keys, size_t n, size_t *erased_out);
} tdm__mpi_local_ops;

/* Collective: applies the received batch to this rank's local structure
 * (insert when rv != NULL, else erase) so that the call is all-or-nothing
 * over all ranks: before the change each rank records the batch keys'
 * previous values; when any rank fails, the ranks that succeeded erase the
 * batch keys and re-insert the recorded entries. *erased (erase) gets the
 * local count. */
tdm_status tdm__mpi_apply(const tdm__mpi_comm *c, tdm_ctx *ctx, const tdm__mpi_local_ops *ops, void *local,
                          tdm_type kt, tdm_type vt, const void *rk, const void *rv, size_t m, size_t *erased);

#ifdef TANDEM_MPI_TEST_HOOKS
/* Test builds only: cap the elements per MPI call to force the piecewise
 * exchange (0: MPI's limit); report the k-th exchange from now as failed
 * (after doing it). Allocation failures are injected with the core's hook
 * (tests/hooks/alloc_hook.c), which every tdm_svc_alloc passes. */
void tdm__mpi_test_count_limit(size_t max_elems);
void tdm__mpi_test_fail_exchange(long k);
/* Make the k-th local structure change from now fail (without doing it), as
 * a local out-of-memory would: exercises the restore on the other ranks. */
void tdm__mpi_test_fail_apply(long k);
#endif

#endif /* TANDEM_MPI_INTERNAL_H */
