/* mpi_hash.c: the distributed hash table. A key lives on the rank picked by
 * a hash of its bits (splitmix64's finaliser: a different mix from the local
 * table's, so the keys one rank owns still spread over its local table). */
#include <math.h>
#include <string.h>

#include "mpi_internal.h"

struct tdm_mpi_hash {
  tdm__mpi_comm c;
  tdm_ctx *ctx;
  tdm_hash *local;
  tdm_hash_opts opts;
};

static uint32_t owner_of(const void *env, tdm_type kt, const void *keys, size_t i) {
  uint64_t x = tdm_svc_key_raw(kt, keys, i);
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  uint64_t p = (uint64_t)((const tdm_mpi_hash *)env)->c.size;
  return (uint32_t)(((tdm__mpi_u128)x * p) >> 64);
}

static tdm_status l_find(const void *s, const void *k, void *v, uint8_t *f, size_t n) {
  return tdm_hash_find(s, k, v, f, n);
}
static tdm_status l_insert(void *s, const void *k, const void *v, size_t n) { return tdm_hash_insert(s, k, v, n); }
static tdm_status l_erase(void *s, const void *k, size_t n, size_t *e) { return tdm_hash_erase(s, k, n, e); }
static const tdm__mpi_local_ops hash_ops = {l_find, l_insert, l_erase};

tdm_status tdm_mpi_hash_create(tdm_ctx *ctx, MPI_Comm comm, const tdm_hash_opts *opts, tdm_mpi_hash **out) {
  static const char fn[] = "tdm_mpi_hash_create";
  tdm_status st = TDM_OK;
  if (!ctx || !opts || !out)
    st = TDM__MPI_FAIL(TDM_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, !ctx ? "ctx" : !opts ? "opts" : "out");
  tdm__mpi_comm c;
  tdm_status cst = tdm__mpi_comm_dup(ctx, comm, fn, &c);
  if (cst != TDM_OK) return cst;
  tdm_hash_opts o;
  memset(&o, 0, sizeof o);
  if (opts) o = *opts;
  int64_t load_bits;
  memcpy(&load_bits, &o.max_load, sizeof load_bits);
  const int64_t params[] = {(int64_t)o.key_type, (int64_t)o.value_type, (int64_t)o.capacity, load_bits,
                            (int64_t)(o.fixed_capacity != 0), (int64_t)o.on_duplicate};
  const char *const names[] = {"opts->key_type", "opts->value_type", "opts->capacity", "opts->max_load (bits)",
                               "opts->fixed_capacity", "opts->on_duplicate"};
  st = tdm__mpi_begin(&c, fn, st, params, names, 6, 0, NULL);
  tdm_mpi_hash *h = NULL;
  if (st == TDM_OK) {
    h = tdm__mpi_alloc(&c, sizeof *h, "the table handle");
    if (!h) st = TDM_ERR_OUT_OF_MEMORY;
  }
  if (st == TDM_OK) {
    /* This rank's share of the capacity with room for the spread of the
     * hash: mean + 4 standard deviations (+ a little for tiny tables). */
    tdm_hash_opts lo = o;
    double share = (double)o.capacity / c.size, want = share + 4.0 * sqrt(share) + 16.0;
    /* An absurd capacity is left for tdm_hash_create to refuse. */
    lo.capacity = !o.capacity ? 0 : want >= (double)o.capacity ? o.capacity : (size_t)want;
    memset(h, 0, sizeof *h);
    st = tdm_hash_create(ctx, &lo, &h->local);
  }
  st = tdm__mpi_agree(&c, st);
  if (st != TDM_OK) {
    if (h) tdm_hash_destroy(h->local);
    tdm_svc_free(h);
    tdm__mpi_comm_free(&c);
    return st;
  }
  h->c = c;
  h->ctx = ctx;
  h->opts = o;
  *out = h;
  return TDM_OK;
}

void tdm_mpi_hash_destroy(tdm_mpi_hash *h) {
  if (!h) return;
  tdm_hash_destroy(h->local);
  tdm__mpi_comm_free(&h->c);
  tdm_svc_free(h);
}

static tdm_status null_handle(const char *fn) {
  return TDM__MPI_FAIL(TDM_ERR_INVALID_ARGUMENT, "%s: the table is NULL", fn);
}

tdm_status tdm_mpi_hash_insert(tdm_mpi_hash *h, const void *keys, const void *values, size_t n) {
  static const char fn[] = "tdm_mpi_hash_insert";
  if (!h) return null_handle(fn);
  size_t ksz = tdm_type_size(h->opts.key_type), vsz = tdm_type_size(h->opts.value_type);
  tdm_status st = tdm_svc_check_array(h->ctx, fn, "keys", keys, n, ksz);
  if (st == TDM_OK) st = tdm_svc_check_array(h->ctx, fn, "values", values, n, vsz);
  tdm__mpi_batch b;
  st = tdm__mpi_batch_send(&h->c, st, h->opts.key_type, keys, values, vsz, n, owner_of, h, &b);
  if (st != TDM_OK) return st;
  st = tdm__mpi_apply(&h->c, h->ctx, &hash_ops, h->local, h->opts.key_type, h->opts.value_type, b.rk, b.rv,
                      b.route.nrecv, NULL);
  tdm__mpi_batch_free(&b);
  return st;
}

tdm_status tdm_mpi_hash_erase(tdm_mpi_hash *h, const void *keys, size_t n, size_t *erased_out) {
  static const char fn[] = "tdm_mpi_hash_erase";
  if (!h) return null_handle(fn);
  size_t ksz = tdm_type_size(h->opts.key_type);
  tdm_status st = tdm_svc_check_array(h->ctx, fn, "keys", keys, n, ksz);
  tdm__mpi_batch b;
  st = tdm__mpi_batch_send(&h->c, st, h->opts.key_type, keys, NULL, 0, n, owner_of, h, &b);
  if (st != TDM_OK) return st;
  size_t mine = 0;
  st = tdm__mpi_apply(&h->c, h->ctx, &hash_ops, h->local, h->opts.key_type, h->opts.value_type, b.rk, NULL,
                      b.route.nrecv, &mine);
  tdm__mpi_batch_free(&b);
  if (st != TDM_OK) return st;
  uint64_t l = mine, g = 0;
  int rc = MPI_Allreduce(&l, &g, 1, MPI_UINT64_T, MPI_SUM, h->c.comm);
  st = tdm__mpi_agree(&h->c, rc == MPI_SUCCESS ? TDM_OK : tdm__mpi_err(rc, "MPI_Allreduce (erased count)"));
  if (st == TDM_OK && erased_out) *erased_out = (size_t)g;
  return st;
}

tdm_status tdm_mpi_hash_find(const tdm_mpi_hash *h, const void *keys, void *values_out, uint8_t *found_out,
                             size_t n) {
  static const char fn[] = "tdm_mpi_hash_find";
  if (!h) return null_handle(fn);
  size_t ksz = tdm_type_size(h->opts.key_type), vsz = tdm_type_size(h->opts.value_type);
  tdm_status st = tdm_svc_check_array(h->ctx, fn, "keys", keys, n, ksz);
  if (st == TDM_OK && values_out) st = tdm_svc_check_array(h->ctx, fn, "values_out", values_out, n, vsz);
  if (st == TDM_OK && found_out) st = tdm_svc_check_array(h->ctx, fn, "found_out", found_out, n, 1);
  tdm_svc_stage sv, sf;
  memset(&sv, 0, sizeof sv);
  memset(&sf, 0, sizeof sf);
  if (st == TDM_OK && values_out) st = tdm_svc_stage_in(h->ctx, values_out, n * vsz, 0, &sv);
  if (st == TDM_OK && found_out) st = tdm_svc_stage_in(h->ctx, found_out, n, 0, &sf);
  tdm__mpi_batch b;
  st = tdm__mpi_batch_send(&h->c, st, h->opts.key_type, keys, NULL, 0, n, owner_of, h, &b);
  if (st != TDM_OK) goto out;
  size_t m = b.route.nrecv;
  char *av = tdm__mpi_alloc(&h->c, m * vsz, "found values");
  uint8_t *af = tdm__mpi_alloc(&h->c, m, "found flags");
  st = av && af ? tdm_hash_find(h->local, b.rk, av, af, m) : TDM_ERR_OUT_OF_MEMORY;
  st = tdm__mpi_agree(&h->c, st);
  if (st == TDM_OK) st = tdm__mpi_route_back(&h->c, &b.route, av, vsz, sv.host);
  if (st == TDM_OK) st = tdm__mpi_route_back(&h->c, &b.route, af, 1, sf.host);
  if (st == TDM_OK) {
    st = tdm_svc_stage_out(&sv);
    if (st == TDM_OK) st = tdm_svc_stage_out(&sf);
    st = tdm__mpi_agree(&h->c, st);
  }
  tdm_svc_free(av);
  tdm_svc_free(af);
  tdm__mpi_batch_free(&b);
out:
  tdm_svc_stage_free(&sv);
  tdm_svc_stage_free(&sf);
  return st;
}

tdm_status tdm_mpi_hash_size(const tdm_mpi_hash *h, size_t *size_out) {
  static const char fn[] = "tdm_mpi_hash_size";
  if (!h) return null_handle(fn);
  tdm_status st = size_out ? TDM_OK : TDM__MPI_FAIL(TDM_ERR_INVALID_ARGUMENT, "%s: size_out is NULL", fn);
  uint64_t l = tdm_hash_size(h->local), g = 0;
  int rc = MPI_Allreduce(&l, &g, 1, MPI_UINT64_T, MPI_SUM, h->c.comm);
  if (st == TDM_OK && rc != MPI_SUCCESS) st = tdm__mpi_err(rc, "MPI_Allreduce (size)");
  st = tdm__mpi_agree(&h->c, st);
  if (st == TDM_OK) *size_out = (size_t)g;
  return st;
}
