/*
 * ops_join.c: tdm_join, written once over the backends' building blocks
 * (backend.h, tdm__ops_ops), the same steps on every backend:
 *
 *  1. the right keys' canonical sort bits sorted with their row indices
 *     (stable: a run of equal keys lists its right rows ascending; 32-bit
 *     indices while the right side has fewer than 2^32 rows);
 *  2. each left row's run of matches in them, start ms[i] and length mc[i]:
 *     - hash: a SUM table of the runs (ops_keys.h, tdm__ops_join_run_add:
 *       every sorted right row adds to its key's entry, which ends up as
 *       the run's start and length in one word), one probe a left row;
 *     - sort: two binary searches of the sorted bits a left row (also
 *       the hash method's when a right side is too long for the word);
 *     and its output rows by the kind (tdm__ops_join_rows);
 *  3. their exclusive sum, in place: each left row's first output row, and the total,
 *     the one value that comes to the host (a wait on the GPU), which is
 *     *n_out and is checked against cap before any output is taken;
 *  4. the output by output position (tdm__ops_join_fill: a chunk of rows
 *     finds its first left row by one search), so a left row with most of
 *     the matches is split like any others.
 * The same runs by either method, so the same bytes.
 */
#include "backend.h"
#include "tandem/detail/ops_keys.h"

static tdm_status join_steps(tdm__call *c, const tdm__join_args *a, int method) {
  const tdm__ops_ops *o = c->ops;
  size_t ks = tdm_type_size(a->key_type), nl = a->n_left, nr = a->n_right;
  size_t iw = nr <= UINT32_MAX ? 4 : 8;
  const void *left, *right;
  void *rbits = NULL, *ridx = NULL, *lbits = NULL, *lo = NULL, *ro = NULL;
  uint64_t *ms, *mc, *off, *add = NULL, total = 0;
  tdm_status st;

  if ((st = o->in(c, a->left, nl * ks, &left)) != TDM_OK || (st = o->in(c, a->right, nr * ks, &right)) != TDM_OK ||
      (st = o->scratch(c, nr * ks, &rbits)) != TDM_OK || (st = o->scratch(c, nr * iw, &ridx)) != TDM_OK ||
      (st = o->scratch(c, nl * 8, (void **)&ms)) != TDM_OK || (st = o->scratch(c, nl * 8, (void **)&mc)) != TDM_OK ||
      (st = o->scratch(c, (nl + 1) * 8, (void **)&off)) != TDM_OK)
    return st;
  if (nr > 0 && (st = o->sort_indexed(c, a->key_type, a->numeric, right, nr, rbits, ridx, iw)) != TDM_OK) return st;
  if (method == TDM__OPS_HASH && nr > 0 && nr <= TDM__OPS_JOIN_RUN_MAX) {
    /* The table is keyed by the sorted bits: the left rows are mapped the
     * same way, unless that is the identity (unsigned keys). */
    const void *lq = left;
    if ((st = o->scratch(c, nr * 8, (void **)&add)) != TDM_OK) return st;
    if (tdm__key_kind(a->key_type) != TDM_KIND_UNSIGNED || a->numeric) {
      if ((st = o->scratch(c, nl * ks, &lbits)) != TDM_OK ||
          (st = o->canon_bits(c, a->key_type, left, lbits, nl, a->numeric)) != TDM_OK)
        return st;
      lq = lbits;
    }
    if ((st = o->run_adds(c, ks, rbits, nr, add)) != TDM_OK || (st = o->set_build(c, ks, rbits, add, nr)) != TDM_OK ||
        (st = o->set_probe(c, lq, nl, ms, NULL)) != TDM_OK ||
        (st = o->join_runs(c, a->kind, ms, mc, off, nl)) != TDM_OK)
      return st;
  } else if ((st = o->join_bounds(c, a->kind, a->key_type, a->numeric, left, nl, rbits, nr, ms, mc, off)) != TDM_OK) {
    return st;
  }
  /* Each left row's output rows, in off, become their exclusive sum. */
  if ((st = o->scan_total(c, off, off, nl + 1, &total)) != TDM_OK) return st;
  *a->n_out = (size_t)total;
  if (total > a->cap)
    return tdm__fail(TDM_ERR_CAPACITY, "%s: the join has %llu rows but cap is %zu; *n_out holds the size needed", c->fn,
                     (unsigned long long)total, a->cap);
  if (total == 0) return TDM_OK;
  if ((st = o->out(c, a->left_out, total * 8, &lo)) != TDM_OK ||
      (a->right_out && (st = o->out(c, a->right_out, total * 8, &ro)) != TDM_OK))
    return st;
  return o->join_fill(c, a->kind, ms, mc, off, ridx, iw, nl, (uint64_t *)lo, (uint64_t *)ro, total);
}

tdm_status tdm__join_run(tdm_ctx *ctx, const tdm__join_args *a, int method) {
  tdm__call c;
  tdm_status st = tdm__call_open(&c, ctx, "tdm_join");
  if (st != TDM_OK) return st;
  return c.ops->end(&c, join_steps(&c, a, method));
}
