/* mpi_batch.c: routing a caller's batch to the owner ranks, and applying a
 * mutation to the local structures all-or-nothing over all ranks. */
#include <stdio.h>
#include <string.h>

#include "mpi_internal.h"

void tdm__mpi_batch_free(tdm__mpi_batch *b) {
  tdm__mpi_route_free(&b->route);
  tdm_svc_stage_free(&b->sk);
  tdm_svc_stage_free(&b->sv);
  tdm_svc_free(b->dest);
  tdm_svc_free(b->rk);
  tdm_svc_free(b->rv);
  memset(b, 0, sizeof *b);
}

tdm_status tdm__mpi_batch_send(const tdm__mpi_comm *c, tdm_status st, tdm_type kt, const void *keys,
                               const void *values, size_t vsz, size_t n, tdm__mpi_owner_fn owner, const void *env,
                               tdm__mpi_batch *b) {
  memset(b, 0, sizeof *b);
  size_t ksz = tdm_type_size(kt);
  if (st == TDM_OK) st = tdm_svc_stage_in(c->ctx, keys, n * ksz, 1, &b->sk);
  if (st == TDM_OK && vsz) st = tdm_svc_stage_in(c->ctx, values, n * vsz, 1, &b->sv);
  if (st == TDM_OK && !(b->dest = tdm__mpi_alloc(c, n * sizeof(uint32_t), "owner ranks"))) st = TDM_ERR_OUT_OF_MEMORY;
  st = tdm__mpi_agree(c, st);
  if (st != TDM_OK) goto fail;
  for (size_t i = 0; i < n; i++) b->dest[i] = owner(env, kt, b->sk.host, i);
  st = tdm__mpi_route_plan(c, b->dest, n, &b->route);
  if (st != TDM_OK) goto fail;
  size_t m = b->route.nrecv;
  b->rk = tdm__mpi_alloc(c, m * ksz, "received keys");
  if (vsz) b->rv = tdm__mpi_alloc(c, m * vsz, "received values");
  st = tdm__mpi_agree(c, b->rk && (!vsz || b->rv) ? TDM_OK : TDM_ERR_OUT_OF_MEMORY);
  if (st == TDM_OK) st = tdm__mpi_route_forward(c, &b->route, b->sk.host, ksz, b->rk);
  if (st == TDM_OK && vsz) st = tdm__mpi_route_forward(c, &b->route, b->sv.host, vsz, b->rv);
  if (st != TDM_OK) goto fail;
  return TDM_OK;
fail:
  tdm__mpi_batch_free(b);
  return st;
}

/* Restores the entries (keys[j], vals[j]) with found[j] set, after the batch
 * keys were erased. Copies of one key carry the same recorded value; they are
 * reduced to one (sorted by key, neighbours dropped) so a SUM policy does not
 * add them up. */
static tdm_status restore(tdm_ctx *ctx, const tdm__mpi_local_ops *ops, void *local, tdm_type kt, tdm_type vt,
                          const void *keys, const void *vals, const uint8_t *found, size_t m, char *tk, char *tv) {
  size_t ksz = tdm_type_size(kt), vsz = tdm_type_size(vt), k = 0;
  for (size_t j = 0; j < m; j++)
    if (found[j]) {
      memcpy(tk + k * ksz, (const char *)keys + j * ksz, ksz);
      memcpy(tv + k * vsz, (const char *)vals + j * vsz, vsz);
      k++;
    }
  if (k == 0) return TDM_OK;
  tdm_status st = tdm_sort_pairs(ctx, kt, tk, vt, tv, k, 0);
  if (st != TDM_OK) return st;
  size_t u = 1;
  for (size_t j = 1; j < k; j++)
    if (tdm_svc_key_raw(kt, tk, j) != tdm_svc_key_raw(kt, tk, u - 1)) {
      memmove(tk + u * ksz, tk + j * ksz, ksz);
      memmove(tv + u * vsz, tv + j * vsz, vsz);
      u++;
    }
  return ops->insert(local, tk, tv, u);
}

#ifdef TANDEM_MPI_TEST_HOOKS
static long fail_apply_countdown;
void tdm__mpi_test_fail_apply(long k) { fail_apply_countdown = k; }
static int apply_fails(void) { return fail_apply_countdown > 0 && --fail_apply_countdown == 0; }
#else
static int apply_fails(void) { return 0; }
#endif

tdm_status tdm__mpi_apply(const tdm__mpi_comm *c, tdm_ctx *ctx, const tdm__mpi_local_ops *ops, void *local,
                          tdm_type kt, tdm_type vt, const void *rk, const void *rv, size_t m, size_t *erased) {
  size_t ksz = tdm_type_size(kt), vsz = tdm_type_size(vt);
  /* Everything the undo needs is allocated before anything changes. */
  char *old = tdm__mpi_alloc(c, m * vsz, "previous values");
  uint8_t *found = tdm__mpi_alloc(c, m, "previous presence");
  char *tk = tdm__mpi_alloc(c, m * ksz, "undo keys");
  char *tv = tdm__mpi_alloc(c, m * vsz, "undo values");
  tdm_status st = old && found && tk && tv ? TDM_OK : TDM_ERR_OUT_OF_MEMORY;
  if (st == TDM_OK) st = ops->find(local, rk, old, found, m);
  st = tdm__mpi_agree(c, st);
  if (st != TDM_OK) goto done;
  size_t cnt = 0;
  tdm_status mine;
  if (apply_fails())
    mine = TDM__MPI_FAIL(TDM_ERR_OUT_OF_MEMORY, "local structure change failed (injected)");
  else
    mine = rv ? ops->insert(local, rk, rv, m) : ops->erase(local, rk, m, &cnt);
  st = tdm__mpi_agree(c, mine);
  if (st != TDM_OK && mine == TDM_OK && m > 0) {
    /* Another rank failed: put this rank's part back as it was. */
    char reason[512];
    snprintf(reason, sizeof reason, "%s", tdm_last_error());
    tdm_status u = TDM_OK;
    if (rv) u = ops->erase(local, rk, m, NULL);
    if (u == TDM_OK) u = restore(ctx, ops, local, kt, vt, rk, old, found, m, tk, tv);
    if (u != TDM_OK)
      tdm_set_last_error(st, "%s; restoring rank %d's part failed too (%s): its structure may differ", reason,
                         c->rank, tdm_status_name(u));
    else
      tdm_set_last_error(st, "%s", reason);
  }
  if (st == TDM_OK && erased) *erased = cnt;
done:
  tdm_svc_free(old);
  tdm_svc_free(found);
  tdm_svc_free(tk);
  tdm_svc_free(tv);
  return st;
}
