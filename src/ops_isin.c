/*
 * ops_isin.c: tdm_isin, written once over the backends' building blocks
 * (backend.h, tdm__ops_ops): the same steps on every backend, each step the
 * backend's own loop or kernel, so the three methods give the same bytes on
 * the CPU and the GPU by construction.
 *
 *  - dense (integer keys, the set's range small; src/ops_api.c's rule): a
 *    bit per value of the set's range, set from the set, tested per query;
 *  - hash: a set of the set's keys (the hash table's), one probe a query;
 *    under TDM_EQ_NUMERIC both sides are first mapped to canonical bits, so
 *    that -0.0 meets 0.0 and every NaN meets every NaN;
 *  - sort: the set's canonical bits sorted, one binary search a query.
 */
#include "backend.h"

static tdm_status isin_steps(tdm__call *c, const tdm__isin_args *a, int method) {
  const tdm__ops_ops *o = c->ops;
  size_t ks = tdm_type_size(a->key_type);
  const void *q, *s;
  void *sk = NULL, *qk = NULL;
  uint8_t *found;
  tdm_status st;

  if ((st = o->in(c, a->queries, a->n * ks, &q)) != TDM_OK || (st = o->in(c, a->set, a->m * ks, &s)) != TDM_OK ||
      (st = o->out(c, a->found_out, a->n, (void **)&found)) != TDM_OK)
    return st;
  if (a->m == 0) return o->fill(c, found, 0, a->n);
  if (method == TDM__OPS_DENSE) {
    size_t words = tdm__bits_words(a->dense_span);
    uint64_t *bits;
    if ((st = o->scratch(c, words * 8, (void **)&bits)) != TDM_OK || (st = o->fill(c, bits, 0, words * 8)) != TDM_OK ||
        (st = o->bits_set(c, ks, s, a->m, a->dense_min, bits)) != TDM_OK)
      return st;
    return o->bits_test(c, ks, q, a->n, a->dense_min, a->dense_span, bits, found);
  }
  if (method == TDM__OPS_HASH) {
    if (a->numeric) {
      if ((st = o->scratch(c, a->m * ks, &sk)) != TDM_OK || (st = o->scratch(c, a->n * ks, &qk)) != TDM_OK ||
          (st = o->canon_bits(c, a->key_type, s, sk, a->m, 1)) != TDM_OK ||
          (st = o->canon_bits(c, a->key_type, q, qk, a->n, 1)) != TDM_OK)
        return st;
      s = sk;
      q = qk;
    }
    if ((st = o->set_build(c, ks, s, NULL, a->m, NULL)) != TDM_OK) return st;
    return o->set_probe(c, q, a->n, NULL, found);
  }
  if ((st = o->scratch(c, a->m * ks, &sk)) != TDM_OK ||
      (st = o->canon_bits(c, a->key_type, s, sk, a->m, a->numeric)) != TDM_OK ||
      (st = o->sort_words(c, ks, sk, a->m)) != TDM_OK)
    return st;
  return o->search(c, a->key_type, a->numeric, sk, a->m, q, a->n, found);
}

tdm_status tdm__isin_run(tdm_ctx *ctx, const tdm__isin_args *a, int method) {
  tdm__call c;
  tdm_status st = tdm__call_open(&c, ctx, "tdm_isin");
  if (st != TDM_OK) return st;
  return c.ops->end(&c, isin_steps(&c, a, method));
}
