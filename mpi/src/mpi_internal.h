/* mpi_internal.h: what the distributed structures share: the communicator
 * wrapper, collective status agreement, allocation, the all-to-all exchange,
 * routing of batches to owner ranks, key bits and host staging of device
 * arrays. Built only on the public tandem API. */
#ifndef TANDEM_MPI_INTERNAL_H
#define TANDEM_MPI_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <tandem/mpi.h>

/* Sets the message and yields the status (visibly to static analysis, which
 * cannot see that tdm_set_last_error returns its first argument). */
#define TDM__MPI_FAIL(s, ...) (tdm_set_last_error((s), __VA_ARGS__), (s))

/* 128-bit products for proportional sample counts and owner ranks. */
__extension__ typedef unsigned __int128 tdm__mpi_u128;

/* A private duplicate of the caller's communicator with MPI_ERRORS_RETURN. */
typedef struct tdm__mpi_comm {
  MPI_Comm comm;
  int rank, size;
} tdm__mpi_comm;

/* Checks comm (MPI_COMM_NULL, MPI not initialised) and duplicates it. Local:
 * on failure there is no communicator to agree on. */
tdm_status tdm__mpi_comm_dup(MPI_Comm comm, const char *fn, tdm__mpi_comm *out);
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

/* malloc / free with the test-only failure injection. tdm__mpi_alloc sets
 * tdm_last_error on failure. bytes == 0 returns a valid 1-byte block. */
void *tdm__mpi_alloc(size_t bytes, const char *what);
void tdm__mpi_free(void *p);

/* Multiplies with overflow check; sets the error on overflow. */
tdm_status tdm__mpi_mul(size_t a, size_t b, size_t *out, const char *fn);

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

/* Raw bits of element i, zero-extended (the key's identity). Inline: these
 * run once per element in every routing loop. */
static inline uint64_t tdm__mpi_raw_bits(tdm_type t, const void *keys, size_t i) {
  if (t == TDM_U32 || t == TDM_I32 || t == TDM_F32) {
    uint32_t v;
    memcpy(&v, (const char *)keys + i * 4, 4);
    return v;
  }
  uint64_t v;
  memcpy(&v, (const char *)keys + i * 8, 8);
  return v;
}

/* Order-preserving bits: unsigned comparison of the results orders the keys as
 * tandem does. Signed: flip the sign bit. Floats (totalOrder): negative values
 * have all bits flipped, positive ones only the sign bit, so -NaN < -inf < -0
 * < +0 < +inf < +NaN as unsigned integers. */
static inline uint64_t tdm__mpi_obits(tdm_type t, const void *keys, size_t i) {
  uint64_t v = tdm__mpi_raw_bits(t, keys, i);
  switch (t) {
  case TDM_I32: return v ^ 0x80000000u;
  case TDM_I64: return v ^ 0x8000000000000000ull;
  case TDM_F32: return (v & 0x80000000u) ? (~v & 0xffffffffu) : (v | 0x80000000u);
  case TDM_F64: return (v >> 63) ? ~v : (v | 0x8000000000000000ull);
  default: return v;
  }
}

/* dst[pos[i]] = src[i] (scatter) or dst[i] = src[pos[i]] (gather) for n
 * elements of elem bytes. */
void tdm__mpi_permute(void *dst, const void *src, const size_t *pos, size_t n, size_t elem, int gather);

/* Checks a caller array: NULL with n > 0, misalignment; on a CUDA build also
 * the memory space (device pointers are only allowed on a CUDA context). */
tdm_status tdm__mpi_check_array(tdm_ctx *ctx, const void *p, size_t n, size_t elem, const char *fn,
                                const char *name);

/* Host view of a caller array: when p is device memory, a host copy (copy_in:
 * filled from p) is allocated; otherwise *host = p. tdm__mpi_unstage copies
 * back (copy_out) and frees. */
typedef struct tdm__mpi_stage {
  void *host;
  void *dev;
  size_t bytes;
} tdm__mpi_stage;
tdm_status tdm__mpi_stage_in(const void *p, size_t bytes, int copy_in, tdm__mpi_stage *s);
tdm_status tdm__mpi_stage_out(tdm__mpi_stage *s); /* copies host -> device when staged */
void tdm__mpi_stage_free(tdm__mpi_stage *s);
/* 1 when p is CUDA device (or managed) memory. */
int tdm__mpi_is_device(const void *p);

/* Bytes sent to other ranks, for tdm_mpi_bytes_sent. */
void tdm__mpi_count_sent(uint64_t bytes);


/* ---- batches routed to owners (mpi_batch.c) ------------------------------- */

typedef uint32_t (*tdm__mpi_owner_fn)(const void *env, tdm_type kt, const void *keys, size_t i);

/* A caller batch on its way to the owners: staged caller arrays, the route,
 * and what this rank received (rk, rv: route.nrecv elements, in
 * concatenation order). */
typedef struct tdm__mpi_batch {
  tdm__mpi_route route;
  tdm__mpi_stage sk, sv;
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
/* Test builds only: fail the k-th allocation from now (0: never); cap the
 * elements per MPI call to force the piecewise exchange (0: MPI's limit);
 * report the k-th exchange from now as failed (after doing it). */
void tdm__mpi_test_fail_alloc(long k);
long tdm__mpi_test_alloc_countdown(void); /* > 0: the armed failure has not happened */
void tdm__mpi_test_count_limit(size_t max_elems);
void tdm__mpi_test_fail_exchange(long k);
/* Make the k-th local structure change from now fail (without doing it), as
 * a local out-of-memory would: exercises the restore on the other ranks. */
void tdm__mpi_test_fail_apply(long k);
#endif

#endif /* TANDEM_MPI_INTERNAL_H */
