/* mpi_sort.c: distributed stable sort (sample sort with exact splitting).
 *
 * Element i of rank r has the global position g = n_0 + ... + n_{r-1} + i. The
 * stable sort of the concatenation orders elements by (key, g), a total order
 * with no ties, so splitters drawn as (key, g) pairs cut runs of equal keys
 * exactly where the single-process sort does. Phases:
 *  1. regular sample of every rank, proportional to its n; every rank sorts
 *     the gathered sample and picks splitter q at the sample quantile of
 *     rank q's first global output position, so buckets come out close to the
 *     final sizes;
 *  2. one exchange moves each element to its bucket's rank, in rank order, so
 *     a stable local tdm_sort of what arrives gives (key, g) order;
 *  3. the rebalance: rank r holds global positions [B_r, B_r + m_r) and must
 *     end with [off_r, off_r + n_r); the overlaps are exchanged.
 * The caller's arrays are written only after every rank has succeeded. */
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

typedef struct tdm__mpi_sample {
  uint64_t ob; /* order bits (inverted for a descending sort) */
  uint64_t g;  /* global position */
} tdm__mpi_sample;

static int cmp_sample(const void *pa, const void *pb) {
  const tdm__mpi_sample *a = pa, *b = pb;
  if (a->ob != b->ob) return a->ob < b->ob ? -1 : 1;
  return (a->g > b->g) - (a->g < b->g);
}

/* Number of splitters <= (ob, g): the element's bucket. */
static uint32_t bucket_of(const tdm__mpi_sample *spl, size_t ns, uint64_t ob, uint64_t g) {
  size_t lo = 0, hi = ns;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (spl[mid].ob < ob || (spl[mid].ob == ob && spl[mid].g <= g))
      lo = mid + 1;
    else
      hi = mid;
  }
  return (uint32_t)lo;
}

static uint64_t overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) {
  uint64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
  return hi > lo ? hi - lo : 0;
}

typedef struct sort_bufs {
  uint64_t *all_n, *all_m, *cnt;    /* size each; cnt: 2 * size */
  tdm__mpi_sample *mine, *all, *spl;
  uint32_t *dest;
  char *rk, *rv, *fk, *fv;
  tdm_svc_stage sk, sv;
  tdm__mpi_route route;
} sort_bufs;

static void sort_bufs_free(sort_bufs *b) {
  void *list[] = {b->all_n, b->all_m, b->cnt, b->mine, b->all, b->spl, b->dest, b->rk, b->rv, b->fk, b->fv};
  for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) tdm_svc_free(list[i]);
  tdm_svc_stage_free(&b->sk);
  tdm_svc_stage_free(&b->sv);
  tdm__mpi_route_free(&b->route);
}

/* Phase 1: splitters from a regular sample. */
static tdm_status choose_splitters(const tdm__mpi_comm *c, sort_bufs *b, tdm_type kt, const void *keys, size_t n,
                                   uint64_t off, uint64_t total, int desc) {
  size_t p = (size_t)c->size;
  /* About 256 samples per rank in all keep the buckets within a few percent
   * of their targets; the gathered sample stays small (16 bytes each). */
  uint64_t want = total < 256 * (uint64_t)p ? total : 256 * (uint64_t)p;
  int *cnt = NULL, *dis = NULL;
  size_t nall = 0, nmine = 0;
  cnt = tdm__mpi_alloc(c, 2 * p * sizeof(int), "sample counts");
  if (cnt) {
    dis = cnt + p;
    for (size_t q = 0; q < p; q++) {
      uint64_t s = b->all_n[q] ? (uint64_t)(((tdm__mpi_u128)b->all_n[q] * (tdm__mpi_u128)want) / total) : 0;
      if (b->all_n[q] && s == 0) s = 1;
      cnt[q] = (int)(s * sizeof(tdm__mpi_sample));
      dis[q] = (int)(nall * sizeof(tdm__mpi_sample));
      nall += (size_t)s;
      if ((int)q == c->rank) nmine = (size_t)s;
    }
    b->mine = tdm__mpi_alloc(c, nmine * sizeof(tdm__mpi_sample), "the local sample");
    b->all = tdm__mpi_alloc(c, nall * sizeof(tdm__mpi_sample), "the gathered sample");
    b->spl = tdm__mpi_alloc(c, p * sizeof(tdm__mpi_sample), "the splitters");
  }
  tdm_status st = tdm__mpi_agree(c, cnt && b->mine && b->all && b->spl ? TDM_OK : TDM_ERR_OUT_OF_MEMORY);
  if (st != TDM_OK) {
    tdm_svc_free(cnt);
    return st;
  }
  for (size_t j = 0; j < nmine; j++) {
    size_t i = (size_t)((((tdm__mpi_u128)j * 2 + 1) * n) / ((tdm__mpi_u128)nmine * 2));
    uint64_t ob = tdm_svc_key_order(kt, keys, i);
    b->mine[j].ob = desc ? ~ob : ob;
    b->mine[j].g = off + i;
  }
  int rc = MPI_Allgatherv(b->mine, (int)(nmine * sizeof(tdm__mpi_sample)), MPI_BYTE, b->all, cnt, dis, MPI_BYTE,
                          c->comm);
  tdm_svc_free(cnt);
  st = tdm__mpi_agree(c, rc == MPI_SUCCESS ? TDM_OK : tdm__mpi_err(rc, "MPI_Allgatherv (sample)"));
  if (st != TDM_OK) return st;
  qsort(b->all, nall, sizeof(tdm__mpi_sample), cmp_sample);
  uint64_t first = 0;
  for (size_t q = 1; q < p; q++) {
    first += b->all_n[q - 1];
    tdm__mpi_sample *s = &b->spl[q - 1];
    if (first == 0) {
      s->ob = 0, s->g = 0; /* every element is at or above it */
    } else if (first >= total) {
      s->ob = UINT64_MAX, s->g = UINT64_MAX; /* no element reaches it */
    } else {
      *s = b->all[(size_t)(((tdm__mpi_u128)first * (tdm__mpi_u128)nall) / total)];
    }
  }
  return TDM_OK;
}

static tdm_status sort_impl(tdm_ctx *ctx, MPI_Comm comm, const char *fn, tdm_type kt, void *keys, int pairs,
                            tdm_type vt, void *values, size_t n, unsigned flags) {
  tdm_status st = TDM_OK;
  size_t ksz = tdm_type_size(kt), vsz = pairs ? tdm_type_size(vt) : 0;
  if (!ctx) st = TDM__MPI_FAIL(TDM_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  else if (!ksz) st = TDM__MPI_FAIL(TDM_ERR_INVALID_ARGUMENT, "%s: key_type %d is not a tdm_type", fn, (int)kt);
  else if (pairs && !vsz)
    st = TDM__MPI_FAIL(TDM_ERR_INVALID_ARGUMENT, "%s: value_type %d is not a tdm_type", fn, (int)vt);
  else if (flags & ~(unsigned)TDM_SORT_DESCENDING)
    st = TDM__MPI_FAIL(TDM_ERR_INVALID_ARGUMENT, "%s: unknown flags 0x%x", fn,
                            flags & ~(unsigned)TDM_SORT_DESCENDING);
  if (st == TDM_OK) st = tdm_svc_check_array(ctx, fn, "keys", keys, n, ksz);
  if (st == TDM_OK && pairs) st = tdm_svc_check_array(ctx, fn, "values", values, n, vsz);

  tdm__mpi_comm c;
  tdm_status cst = tdm__mpi_comm_dup(ctx, comm, fn, &c);
  if (cst != TDM_OK) return cst;
  sort_bufs b;
  memset(&b, 0, sizeof b);
  size_t p = (size_t)c.size;
  b.all_n = tdm__mpi_alloc(&c, p * sizeof(uint64_t), "rank sizes");
  b.all_m = b.all_n ? tdm__mpi_alloc(&c, p * sizeof(uint64_t), "rank sizes") : NULL;
  b.cnt = b.all_m ? tdm__mpi_alloc(&c, 2 * p * sizeof(uint64_t), "exchange counts") : NULL;
  if (st == TDM_OK && !b.cnt) st = TDM_ERR_OUT_OF_MEMORY;
  const int64_t params[] = {(int64_t)kt, pairs ? (int64_t)vt : 0, (int64_t)flags};
  const char *const names[] = {"key_type", "value_type", "flags"};
  st = tdm__mpi_begin(&c, fn, st, params, names, 3, n, b.cnt ? b.all_n : NULL);
  uint64_t off = 0, total = 0;
  if (st == TDM_OK) {
    for (size_t q = 0; q < p; q++) {
      if ((int)q < c.rank) off += b.all_n[q];
      total += b.all_n[q];
    }
  }
  if (st != TDM_OK || total == 0) goto done;
  if (p == 1) {
    /* One rank: the local sort is the whole job (and all-or-nothing itself). */
    st = pairs ? tdm_sort_pairs(ctx, kt, keys, vt, values, n, flags) : tdm_sort(ctx, kt, keys, n, flags);
    goto done;
  }
  const int desc = (flags & TDM_SORT_DESCENDING) != 0;

  /* Device arrays: work on host copies. */
  st = tdm_svc_stage_in(ctx, keys, n * ksz, 1, &b.sk);
  if (st == TDM_OK && pairs) st = tdm_svc_stage_in(ctx, values, n * vsz, 1, &b.sv);
  if (st == TDM_OK && !(b.dest = tdm__mpi_alloc(&c, n * sizeof(uint32_t), "bucket numbers"))) st = TDM_ERR_OUT_OF_MEMORY;
  st = tdm__mpi_agree(&c, st);
  if (st != TDM_OK) goto done;
  const char *hk = b.sk.host, *hv = b.sv.host;

  st = choose_splitters(&c, &b, kt, hk, n, off, total, desc);
  if (st != TDM_OK) goto done;
  for (size_t i = 0; i < n; i++) {
    uint64_t ob = tdm_svc_key_order(kt, hk, i);
    b.dest[i] = bucket_of(b.spl, p - 1, desc ? ~ob : ob, off + i);
  }
  /* Phase 2: the exchange, then the local sort. */
  st = tdm__mpi_route_plan(&c, b.dest, n, &b.route);
  if (st != TDM_OK) goto done;
  size_t m = b.route.nrecv;
  b.rk = tdm__mpi_alloc(&c, m * ksz, "received keys");
  b.fk = tdm__mpi_alloc(&c, n * ksz, "the result keys");
  if (pairs) {
    b.rv = tdm__mpi_alloc(&c, m * vsz, "received values");
    b.fv = tdm__mpi_alloc(&c, n * vsz, "the result values");
  }
  st = tdm__mpi_agree(&c, b.rk && b.fk && (!pairs || (b.rv && b.fv)) ? TDM_OK : TDM_ERR_OUT_OF_MEMORY);
  if (st == TDM_OK) st = tdm__mpi_route_forward(&c, &b.route, hk, ksz, b.rk);
  if (st == TDM_OK && pairs) st = tdm__mpi_route_forward(&c, &b.route, hv, vsz, b.rv);
  if (st != TDM_OK) goto done;
  st = pairs ? tdm_sort_pairs(ctx, kt, b.rk, vt, b.rv, m, flags) : tdm_sort(ctx, kt, b.rk, m, flags);
  st = tdm__mpi_agree(&c, st);
  if (st != TDM_OK) goto done;

  /* Phase 3: the rebalance. */
  uint64_t mm = m;
  int rc = MPI_Allgather(&mm, 1, MPI_UINT64_T, b.all_m, 1, MPI_UINT64_T, c.comm);
  st = tdm__mpi_agree(&c, rc == MPI_SUCCESS ? TDM_OK : tdm__mpi_err(rc, "MPI_Allgather (bucket sizes)"));
  if (st != TDM_OK) goto done;
  uint64_t *sc = b.cnt, *rcn = b.cnt + p;
  uint64_t my_b = 0, bq = 0, oq = 0;
  for (size_t q = 0; q < (size_t)c.rank; q++) my_b += b.all_m[q];
  for (size_t q = 0; q < p; q++) {
    sc[q] = overlap(my_b, my_b + m, oq, oq + b.all_n[q]);
    rcn[q] = overlap(off, off + n, bq, bq + b.all_m[q]);
    bq += b.all_m[q];
    oq += b.all_n[q];
  }
  st = tdm__mpi_exchange(&c, b.rk, sc, b.fk, rcn, ksz);
  if (st == TDM_OK && pairs) st = tdm__mpi_exchange(&c, b.rv, sc, b.fv, rcn, vsz);
  if (st != TDM_OK) goto done;

  /* Every rank has its result: now, and only now, the caller's arrays. */
  memcpy(b.sk.host, b.fk, n * ksz);
  if (pairs) memcpy(b.sv.host, b.fv, n * vsz);
  st = tdm_svc_stage_out(&b.sk);
  if (st == TDM_OK && pairs) st = tdm_svc_stage_out(&b.sv);
  st = tdm__mpi_agree(&c, st);
done:
  sort_bufs_free(&b);
  tdm__mpi_comm_free(&c);
  return st;
}

tdm_status tdm_mpi_sort(tdm_ctx *ctx, MPI_Comm comm, tdm_type key_type, void *keys, size_t n, unsigned flags) {
  return sort_impl(ctx, comm, "tdm_mpi_sort", key_type, keys, 0, TDM_U32, NULL, n, flags);
}

tdm_status tdm_mpi_sort_pairs(tdm_ctx *ctx, MPI_Comm comm, tdm_type key_type, void *keys, tdm_type value_type,
                              void *values, size_t n, unsigned flags) {
  return sort_impl(ctx, comm, "tdm_mpi_sort_pairs", key_type, keys, 1, value_type, values, n, flags);
}
