/* mpi_btree.c: the distributed B+ tree, range-partitioned over the ranks.
 *
 * p - 1 splitters (order bits of keys, non-decreasing) cut the key space;
 * rank r owns the keys k with spl[r-1] <= k < spl[r]. All copies of a key
 * therefore meet on one rank, in concatenation order, and the local tree
 * resolves duplicates exactly as one tree fed the concatenation. Queries go
 * to the owner; a global rank is the owner's local rank plus the sizes of the
 * ranks before it (every key there is smaller). */
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

struct tdm_mpi_btree {
  tdm__mpi_comm c;
  tdm_ctx *ctx;
  tdm_btree *local;
  tdm_btree_opts opts;
  uint64_t *spl;   /* size - 1 splitters (at least one slot allocated) */
  uint64_t *sizes; /* local sizes of every rank, refreshed after each change */
};

typedef struct split_env {
  const uint64_t *spl;
  size_t ns;
} split_env;

static uint32_t owner_of(const void *env, tdm_type kt, const void *keys, size_t i) {
  const split_env *e = env;
  uint64_t ob = tdm_svc_key_order(kt, keys, i);
  size_t lo = 0, hi = e->ns;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (e->spl[mid] <= ob)
      lo = mid + 1;
    else
      hi = mid;
  }
  return (uint32_t)lo;
}

static tdm_status l_find(const void *s, const void *k, void *v, uint8_t *f, size_t n) {
  return tdm_btree_find(s, k, v, f, n);
}
static tdm_status l_insert(void *s, const void *k, const void *v, size_t n) { return tdm_btree_insert(s, k, v, n); }
static tdm_status l_erase(void *s, const void *k, size_t n, size_t *e) { return tdm_btree_erase(s, k, n, e); }
static const tdm__mpi_local_ops btree_ops = {l_find, l_insert, l_erase};

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Collective: splitters from a regular sample of (n_q keys on rank q, all_n
 * known). spl has room for size - 1 entries. */
static tdm_status pick_splitters(const tdm__mpi_comm *c, tdm_type kt, const void *keys, size_t n,
                                 const uint64_t *all_n, uint64_t *spl) {
  size_t p = (size_t)c->size;
  uint64_t total = 0;
  for (size_t q = 0; q < p; q++) total += all_n[q];
  uint64_t want = total < 256 * (uint64_t)p ? total : 256 * (uint64_t)p;
  int *cnt = tdm__mpi_alloc(c, 2 * p * sizeof(int), "sample counts");
  uint64_t *mine = NULL, *all = NULL;
  size_t nall = 0, nmine = 0;
  if (cnt) {
    for (size_t q = 0; q < p; q++) {
      uint64_t s = all_n[q] ? (uint64_t)(((tdm__mpi_u128)all_n[q] * (tdm__mpi_u128)want) / total) : 0;
      if (all_n[q] && s == 0) s = 1;
      cnt[q] = (int)s;
      cnt[p + q] = (int)nall;
      nall += (size_t)s;
      if ((int)q == c->rank) nmine = (size_t)s;
    }
    mine = tdm__mpi_alloc(c, nmine * sizeof(uint64_t), "the local sample");
    all = tdm__mpi_alloc(c, nall * sizeof(uint64_t), "the gathered sample");
  }
  tdm_status st = tdm__mpi_agree(c, cnt && mine && all ? TDM_OK : TDM_ERR_OUT_OF_MEMORY);
  if (st == TDM_OK) {
    for (size_t j = 0; j < nmine; j++)
      mine[j] = tdm_svc_key_order(kt, keys, (size_t)((((tdm__mpi_u128)j * 2 + 1) * n) / ((tdm__mpi_u128)nmine * 2)));
    int rc = MPI_Allgatherv(mine, (int)nmine, MPI_UINT64_T, all, cnt, cnt + p, MPI_UINT64_T, c->comm);
    st = tdm__mpi_agree(c, rc == MPI_SUCCESS ? TDM_OK : tdm__mpi_err(rc, "MPI_Allgatherv (sample)"));
  }
  if (st == TDM_OK) {
    qsort(all, nall, sizeof(uint64_t), cmp_u64);
    for (size_t q = 1; q < p; q++)
      /* No keys at all: spread the bit space evenly. */
      spl[q - 1] = nall ? all[q * nall / p] : (UINT64_MAX / p) * q;
  }
  tdm_svc_free(cnt);
  tdm_svc_free(mine);
  tdm_svc_free(all);
  return st;
}

/* Collective: partitions (keys, values) by freshly sampled splitters and
 * builds the local trees. On success *local and spl are the new ones; on
 * failure nothing is left allocated. */
static tdm_status partition_build(const tdm__mpi_comm *c, tdm_ctx *ctx, const tdm_btree_opts *o, const void *keys,
                                  const void *values, size_t n, const uint64_t *all_n, uint64_t *spl,
                                  tdm_btree **local) {
  tdm_svc_stage sk;
  tdm_status st = tdm_svc_stage_in(ctx, keys, n * tdm_type_size(o->key_type), 1, &sk);
  st = tdm__mpi_agree(c, st);
  if (st != TDM_OK) return st;
  st = pick_splitters(c, o->key_type, sk.host, n, all_n, spl);
  tdm_svc_stage_free(&sk);
  if (st != TDM_OK) return st;
  split_env env = {spl, (size_t)c->size - 1};
  tdm__mpi_batch b;
  st = tdm__mpi_batch_send(c, TDM_OK, o->key_type, keys, values, tdm_type_size(o->value_type), n, owner_of, &env, &b);
  if (st != TDM_OK) return st;
  tdm_btree *t = NULL;
  st = tdm_btree_build(ctx, o, b.rk, b.rv, b.route.nrecv, &t);
  tdm__mpi_batch_free(&b);
  st = tdm__mpi_agree(c, st);
  if (st != TDM_OK) {
    tdm_btree_destroy(t);
    return st;
  }
  *local = t;
  return TDM_OK;
}

static tdm_status refresh_sizes(tdm_mpi_btree *t) {
  uint64_t l = tdm_btree_size(t->local);
  int rc = MPI_Allgather(&l, 1, MPI_UINT64_T, t->sizes, 1, MPI_UINT64_T, t->c.comm);
  return tdm__mpi_agree(&t->c, rc == MPI_SUCCESS ? TDM_OK : tdm__mpi_err(rc, "MPI_Allgather (sizes)"));
}

static uint64_t total_size(const tdm_mpi_btree *t) {
  uint64_t s = 0;
  for (int q = 0; q < t->c.size; q++) s += t->sizes[q];
  return s;
}

tdm_status tdm_mpi_btree_build(tdm_ctx *ctx, MPI_Comm comm, const tdm_btree_opts *opts, const void *keys,
                               const void *values, size_t n, tdm_mpi_btree **out) {
  static const char fn[] = "tdm_mpi_btree_build";
  tdm_status st = TDM_OK;
  tdm_btree_opts o;
  memset(&o, 0, sizeof o);
  if (opts) o = *opts;
  size_t ksz = tdm_type_size(o.key_type), vsz = tdm_type_size(o.value_type);
  if (!ctx || !opts || !out)
    st = TDM__MPI_FAIL(TDM_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, !ctx ? "ctx" : !opts ? "opts" : "out");
  else if (!ksz || !vsz)
    st = TDM__MPI_FAIL(TDM_ERR_INVALID_ARGUMENT, "%s: %s %d is not a tdm_type", fn,
                            !ksz ? "opts->key_type" : "opts->value_type", !ksz ? (int)o.key_type : (int)o.value_type);
  if (st == TDM_OK) st = tdm_svc_check_array(ctx, fn, "keys", keys, n, ksz);
  if (st == TDM_OK) st = tdm_svc_check_array(ctx, fn, "values", values, n, vsz);
  tdm__mpi_comm c;
  tdm_status cst = tdm__mpi_comm_dup(ctx, comm, fn, &c);
  if (cst != TDM_OK) return cst;
  size_t p = (size_t)c.size;
  tdm_mpi_btree *t = tdm__mpi_alloc(&c, sizeof *t, "the tree handle");
  if (t) {
    memset(t, 0, sizeof *t);
    t->spl = tdm__mpi_alloc(&c, p * sizeof(uint64_t), "the splitters");
    t->sizes = tdm__mpi_alloc(&c, p * sizeof(uint64_t), "rank sizes");
  }
  if (st == TDM_OK && !(t && t->spl && t->sizes)) st = TDM_ERR_OUT_OF_MEMORY;
  const int64_t params[] = {(int64_t)o.key_type, (int64_t)o.value_type, (int64_t)o.on_duplicate};
  const char *const names[] = {"opts->key_type", "opts->value_type", "opts->on_duplicate"};
  st = tdm__mpi_begin(&c, fn, st, params, names, 3, n, st == TDM_OK ? t->sizes : NULL);
  if (st == TDM_OK) st = partition_build(&c, ctx, &o, keys, values, n, t->sizes, t->spl, &t->local);
  if (st == TDM_OK) {
    t->c = c;
    t->ctx = ctx;
    t->opts = o;
    st = refresh_sizes(t);
  }
  if (st != TDM_OK) {
    if (t) {
      tdm_btree_destroy(t->local);
      tdm_svc_free(t->spl);
      tdm_svc_free(t->sizes);
    }
    tdm_svc_free(t);
    tdm__mpi_comm_free(&c);
    return st;
  }
  *out = t;
  return TDM_OK;
}

void tdm_mpi_btree_destroy(tdm_mpi_btree *t) {
  if (!t) return;
  tdm_btree_destroy(t->local);
  tdm__mpi_comm_free(&t->c);
  tdm_svc_free(t->spl);
  tdm_svc_free(t->sizes);
  tdm_svc_free(t);
}

static tdm_status null_handle(const char *fn) {
  return TDM__MPI_FAIL(TDM_ERR_INVALID_ARGUMENT, "%s: the tree is NULL", fn);
}

/* The rebalance rule: when one rank holds more than twice the mean (and the
 * tree has at least 64 keys per rank), export every local tree and partition
 * again from a fresh sample. The tree stays valid either way, so a failure
 * here keeps the old partition and is not reported. */
static void maybe_rebalance(tdm_mpi_btree *t) {
  size_t p = (size_t)t->c.size;
  uint64_t total = total_size(t), max = 0;
  for (size_t q = 0; q < p; q++) max = t->sizes[q] > max ? t->sizes[q] : max;
  if (p < 2 || total < 64 * (uint64_t)p || max * p <= 2 * total) return;
  size_t n = (size_t)t->sizes[t->c.rank];
  size_t ksz = tdm_type_size(t->opts.key_type), vsz = tdm_type_size(t->opts.value_type);
  char *k = tdm__mpi_alloc(&t->c, n * ksz, "rebalance keys"), *v = tdm__mpi_alloc(&t->c, n * vsz, "rebalance values");
  uint64_t *spl = tdm__mpi_alloc(&t->c, p * sizeof(uint64_t), "new splitters");
  tdm_status st = k && v && spl ? tdm_btree_export(t->local, k, v, n, NULL) : TDM_ERR_OUT_OF_MEMORY;
  st = tdm__mpi_agree(&t->c, st);
  tdm_btree *fresh = NULL;
  if (st == TDM_OK) st = partition_build(&t->c, t->ctx, &t->opts, k, v, n, t->sizes, spl, &fresh);
  if (st == TDM_OK) {
    tdm_btree_destroy(t->local);
    t->local = fresh;
    memcpy(t->spl, spl, (p - 1) * sizeof(uint64_t));
    (void)refresh_sizes(t);
  }
  tdm_svc_free(k);
  tdm_svc_free(v);
  tdm_svc_free(spl);
}

tdm_status tdm_mpi_btree_insert(tdm_mpi_btree *t, const void *keys, const void *values, size_t n) {
  static const char fn[] = "tdm_mpi_btree_insert";
  if (!t) return null_handle(fn);
  size_t ksz = tdm_type_size(t->opts.key_type), vsz = tdm_type_size(t->opts.value_type);
  tdm_status st = tdm_svc_check_array(t->ctx, fn, "keys", keys, n, ksz);
  if (st == TDM_OK) st = tdm_svc_check_array(t->ctx, fn, "values", values, n, vsz);
  split_env env = {t->spl, (size_t)t->c.size - 1};
  tdm__mpi_batch b;
  st = tdm__mpi_batch_send(&t->c, st, t->opts.key_type, keys, values, vsz, n, owner_of, &env, &b);
  if (st != TDM_OK) return st;
  st = tdm__mpi_apply(&t->c, t->ctx, &btree_ops, t->local, t->opts.key_type, t->opts.value_type, b.rk, b.rv,
                      b.route.nrecv, NULL);
  tdm__mpi_batch_free(&b);
  if (st != TDM_OK) return st;
  st = refresh_sizes(t);
  if (st == TDM_OK) maybe_rebalance(t);
  return st;
}

tdm_status tdm_mpi_btree_erase(tdm_mpi_btree *t, const void *keys, size_t n, size_t *erased_out) {
  static const char fn[] = "tdm_mpi_btree_erase";
  if (!t) return null_handle(fn);
  size_t ksz = tdm_type_size(t->opts.key_type);
  tdm_status st = tdm_svc_check_array(t->ctx, fn, "keys", keys, n, ksz);
  split_env env = {t->spl, (size_t)t->c.size - 1};
  tdm__mpi_batch b;
  st = tdm__mpi_batch_send(&t->c, st, t->opts.key_type, keys, NULL, 0, n, owner_of, &env, &b);
  if (st != TDM_OK) return st;
  uint64_t before = total_size(t);
  st = tdm__mpi_apply(&t->c, t->ctx, &btree_ops, t->local, t->opts.key_type, t->opts.value_type, b.rk, NULL,
                      b.route.nrecv, NULL);
  tdm__mpi_batch_free(&b);
  if (st == TDM_OK) st = refresh_sizes(t);
  if (st == TDM_OK && erased_out) *erased_out = (size_t)(before - total_size(t));
  return st;
}

tdm_status tdm_mpi_btree_size(const tdm_mpi_btree *t, size_t *size_out) {
  static const char fn[] = "tdm_mpi_btree_size";
  if (!t) return null_handle(fn);
  tdm_status st = size_out ? TDM_OK : TDM__MPI_FAIL(TDM_ERR_INVALID_ARGUMENT, "%s: size_out is NULL", fn);
  uint64_t l = tdm_btree_size(t->local), g = 0;
  int rc = MPI_Allreduce(&l, &g, 1, MPI_UINT64_T, MPI_SUM, t->c.comm);
  if (st == TDM_OK && rc != MPI_SUCCESS) st = tdm__mpi_err(rc, "MPI_Allreduce (size)");
  st = tdm__mpi_agree(&t->c, st);
  if (st == TDM_OK) *size_out = (size_t)g;
  return st;
}

/* Read-only queries: route the keys, answer on the owner, route back.
 * do_find: found flags (and, with do_values, values) to found_out /
 * values_out; do_rank: global ranks to rank_out. */
static tdm_status query(const tdm_mpi_btree *t, tdm_status st, const void *keys, size_t n, int do_find,
                        int do_values, void *values_out, uint8_t *found_out, int do_rank, uint64_t *rank_out) {
  size_t vsz = tdm_type_size(t->opts.value_type);
  split_env env = {t->spl, (size_t)t->c.size - 1};
  tdm__mpi_batch b;
  st = tdm__mpi_batch_send(&t->c, st, t->opts.key_type, keys, NULL, 0, n, owner_of, &env, &b);
  if (st != TDM_OK) return st;
  size_t m = b.route.nrecv;
  char *av = NULL;
  uint8_t *af = NULL;
  uint64_t *ar = NULL;
  if (do_find) {
    av = tdm__mpi_alloc(&t->c, m * vsz, "found values");
    af = tdm__mpi_alloc(&t->c, m, "found flags");
    st = av && af ? tdm_btree_find(t->local, b.rk, av, af, m) : TDM_ERR_OUT_OF_MEMORY;
  }
  if (st == TDM_OK && do_rank) {
    ar = tdm__mpi_alloc(&t->c, m * sizeof(uint64_t), "ranks");
    st = ar ? tdm_btree_rank(t->local, b.rk, ar, m) : TDM_ERR_OUT_OF_MEMORY;
    if (st == TDM_OK) {
      uint64_t below = 0;
      for (int q = 0; q < t->c.rank; q++) below += t->sizes[q];
      for (size_t j = 0; j < m; j++) ar[j] += below;
    }
  }
  st = tdm__mpi_agree(&t->c, st);
  /* do_find / do_rank are the same on every rank (fixed per call); a NULL
   * output only drops the answers. */
  if (st == TDM_OK && do_find && do_values) st = tdm__mpi_route_back(&t->c, &b.route, av, vsz, values_out);
  if (st == TDM_OK && do_find) st = tdm__mpi_route_back(&t->c, &b.route, af, 1, found_out);
  if (st == TDM_OK && do_rank) st = tdm__mpi_route_back(&t->c, &b.route, ar, sizeof(uint64_t), rank_out);
  tdm_svc_free(av);
  tdm_svc_free(af);
  tdm_svc_free(ar);
  tdm__mpi_batch_free(&b);
  return st;
}

tdm_status tdm_mpi_btree_find(const tdm_mpi_btree *t, const void *keys, void *values_out, uint8_t *found_out,
                              size_t n) {
  static const char fn[] = "tdm_mpi_btree_find";
  if (!t) return null_handle(fn);
  size_t ksz = tdm_type_size(t->opts.key_type), vsz = tdm_type_size(t->opts.value_type);
  tdm_status st = tdm_svc_check_array(t->ctx, fn, "keys", keys, n, ksz);
  if (st == TDM_OK && values_out) st = tdm_svc_check_array(t->ctx, fn, "values_out", values_out, n, vsz);
  if (st == TDM_OK && found_out) st = tdm_svc_check_array(t->ctx, fn, "found_out", found_out, n, 1);
  tdm_svc_stage sv, sf;
  memset(&sv, 0, sizeof sv);
  memset(&sf, 0, sizeof sf);
  if (st == TDM_OK && values_out) st = tdm_svc_stage_in(t->ctx, values_out, n * vsz, 0, &sv);
  if (st == TDM_OK && found_out) st = tdm_svc_stage_in(t->ctx, found_out, n, 0, &sf);
  st = query(t, st, keys, n, 1, 1, sv.host, sf.host, 0, NULL);
  if (st == TDM_OK) {
    st = tdm_svc_stage_out(&sv);
    if (st == TDM_OK) st = tdm_svc_stage_out(&sf);
    st = tdm__mpi_agree(&t->c, st);
  }
  tdm_svc_stage_free(&sv);
  tdm_svc_stage_free(&sf);
  return st;
}

tdm_status tdm_mpi_btree_rank(const tdm_mpi_btree *t, const void *keys, uint64_t *rank_out, size_t n) {
  static const char fn[] = "tdm_mpi_btree_rank";
  if (!t) return null_handle(fn);
  size_t ksz = tdm_type_size(t->opts.key_type);
  tdm_status st = tdm_svc_check_array(t->ctx, fn, "keys", keys, n, ksz);
  if (st == TDM_OK) st = tdm_svc_check_array(t->ctx, fn, "rank_out", rank_out, n, sizeof(uint64_t));
  tdm_svc_stage sr;
  memset(&sr, 0, sizeof sr);
  if (st == TDM_OK) st = tdm_svc_stage_in(t->ctx, rank_out, n * sizeof(uint64_t), 0, &sr);
  st = query(t, st, keys, n, 0, 0, NULL, NULL, 1, sr.host);
  if (st == TDM_OK) st = tdm__mpi_agree(&t->c, tdm_svc_stage_out(&sr));
  tdm_svc_stage_free(&sr);
  return st;
}

/* count = #keys <= hi - #keys < lo = rank(hi) + found(hi) - rank(lo): both
 * ends are answered by their owners, however many ranks the range spans. */
tdm_status tdm_mpi_btree_range_count(const tdm_mpi_btree *t, const void *lo, const void *hi, uint64_t *count_out,
                                     size_t n) {
  static const char fn[] = "tdm_mpi_btree_range_count";
  if (!t) return null_handle(fn);
  tdm_type kt = t->opts.key_type;
  size_t ksz = tdm_type_size(kt);
  tdm_status st = tdm_svc_check_array(t->ctx, fn, "lo", lo, n, ksz);
  if (st == TDM_OK) st = tdm_svc_check_array(t->ctx, fn, "hi", hi, n, ksz);
  if (st == TDM_OK) st = tdm_svc_check_array(t->ctx, fn, "count_out", count_out, n, sizeof(uint64_t));
  tdm_svc_stage sl, sh, sc;
  memset(&sl, 0, sizeof sl);
  memset(&sh, 0, sizeof sh);
  memset(&sc, 0, sizeof sc);
  char *q = NULL;
  uint64_t *r = NULL;
  uint8_t *f = NULL;
  if (st == TDM_OK) st = tdm_svc_stage_in(t->ctx, lo, n * ksz, 1, &sl);
  if (st == TDM_OK) st = tdm_svc_stage_in(t->ctx, hi, n * ksz, 1, &sh);
  if (st == TDM_OK) st = tdm_svc_stage_in(t->ctx, count_out, n * sizeof(uint64_t), 0, &sc);
  if (st == TDM_OK) {
    q = tdm__mpi_alloc(&t->c, 2 * n * ksz, "range ends");
    r = tdm__mpi_alloc(&t->c, 2 * n * sizeof(uint64_t), "range ranks");
    f = tdm__mpi_alloc(&t->c, 2 * n, "range hits");
    if (!q || !r || !f) st = TDM_ERR_OUT_OF_MEMORY;
  }
  if (st == TDM_OK && n) {
    memcpy(q, sl.host, n * ksz);
    memcpy(q + n * ksz, sh.host, n * ksz);
  }
  st = query(t, st, q, 2 * n, 1, 0, NULL, f, 1, r);
  if (st == TDM_OK) {
    uint64_t *out = sc.host;
    for (size_t i = 0; i < n && out && r && f && sl.host && sh.host; i++) {
      int empty = tdm_svc_key_order(kt, sl.host, i) > tdm_svc_key_order(kt, sh.host, i);
      out[i] = empty ? 0 : r[n + i] + f[n + i] - r[i];
    }
    st = tdm__mpi_agree(&t->c, tdm_svc_stage_out(&sc));
  }
  tdm_svc_free(q);
  tdm_svc_free(r);
  tdm_svc_free(f);
  tdm_svc_stage_free(&sl);
  tdm_svc_stage_free(&sh);
  tdm_svc_stage_free(&sc);
  return st;
}
