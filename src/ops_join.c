/*
 * ops_join.c: tdm_join, written once over the backends' building blocks
 * (backend.h, tdm__ops_ops), the same steps on every backend:
 *
 *  1. each left row's run of matches among the right rows, start ms[i] and
 *     length mc[i]:
 *     - hash, by single rows first (when the right side has no more rows
 *       than the left): a SUM table of the right keys' canonical bits as
 *       they come, each right row a run of its own (ops_keys.h,
 *       TDM__OPS_JOIN_MULTI), one probe a left row. Every
 *       count is exact, and so is every start whose key has one right row:
 *       a left row's start is then its right row, with no sort at all.
 *       Only when right rows repeat a key that a left row matches (and the
 *       right rows are asked for: INNER or LEFT with right_out) are the
 *       starts taken again from the sorted runs below; the counts, the
 *       offsets and the total stay. The CPU first looks at a sample of
 *       the right keys (repeats_hint) and goes to the sorted runs when it
 *       repeats, and knows right after the table whether any right key
 *       repeats; CUDA learns it with the total (the flag word in the scan,
 *       one wait for both);
 *     - hash, by sorted runs: the right keys' canonical bits sorted with
 *       their row indices (stable: a run of equal keys lists its right rows
 *       ascending; 32-bit indices while the right side has fewer than
 *       2^32 rows), a SUM table of the runs (tdm__ops_join_run_add: every
 *       sorted right row adds to its key's entry, which ends up as the
 *       run's start and length in one word), one probe a left row;
 *     - sort: two binary searches of the sorted bits a left row (also the
 *       hash method's when the right side is too long for the table's
 *       words);
 *     and its output rows by the kind (tdm__ops_join_rows);
 *  2. their exclusive sum, in place: each left row's first output row, and
 *     the total, the one value that comes to the host (a wait on the GPU),
 *     which is *n_out and is checked against cap before any output is
 *     taken;
 *  3. the output by output position (tdm__ops_join_fill: a chunk of rows
 *     finds its first left row by one search), so a left row with most of
 *     the matches is split like any others; its right rows are the starts
 *     themselves (single rows) or the sorted indices from them.
 * The same runs by every method, so the same bytes.
 */
#include "backend.h"
#include "tandem/detail/ops_keys.h"

/* The right rows' runs by sort (step 1's sorted runs): the starts of the
 * left rows' runs in ms, their lengths in mc and, unless rows is NULL,
 * their output rows, for the left keys' bits lq; idx receives the sorted
 * right indices the starts point into. */
static tdm_status sorted_runs(tdm__call *c, const tdm__join_args *a, const void *right, void *rbits, void *idx,
                              size_t iw, uint64_t *add, const void *lq, uint64_t *ms, uint64_t *mc, uint64_t *rows) {
  const tdm__ops_ops *o = c->ops;
  size_t ks = tdm_type_size(a->key_type), nr = a->n_right;
  tdm_status st;
  if ((st = o->sort_indexed(c, a->key_type, a->numeric, right, nr, rbits, idx, iw)) != TDM_OK ||
      (st = o->run_adds(c, ks, rbits, nr, add)) != TDM_OK || (st = o->set_build(c, ks, rbits, add, nr, NULL)) != TDM_OK ||
      (st = o->set_probe(c, lq, a->n_left, ms, NULL)) != TDM_OK)
    return st;
  return o->join_runs(c, a->kind, ms, mc, rows, a->n_left, NULL);
}

static tdm_status join_steps(tdm__call *c, const tdm__join_args *a, int method) {
  const tdm__ops_ops *o = c->ops;
  size_t ks = tdm_type_size(a->key_type), nl = a->n_left, nr = a->n_right;
  size_t iw = nr <= UINT32_MAX ? 4 : 8;
  const void *left, *right;
  void *rbits = NULL, *ridx = NULL, *idx = NULL, *lbits = NULL, *lo = NULL, *ro = NULL;
  uint64_t *ms, *mc, *off, *add = NULL, total = 0;
  tdm_status st;

  /* off: nl rows, then the flag word of the single rows, then a 0 (so the
   * scan's total is the rows' sum plus the flag). ridx is taken whatever
   * the path (untouched pages cost nothing), so every call takes its
   * scratch in one order. */
  if ((st = o->in(c, a->left, nl * ks, &left)) != TDM_OK || (st = o->in(c, a->right, nr * ks, &right)) != TDM_OK ||
      (st = o->scratch(c, nr * ks, &rbits)) != TDM_OK || (st = o->scratch(c, nr * iw, &ridx)) != TDM_OK ||
      (st = o->scratch(c, nl * 8, (void **)&ms)) != TDM_OK ||
      (st = o->scratch(c, nl * 8, (void **)&mc)) != TDM_OK || (st = o->scratch(c, (nl + 2) * 8, (void **)&off)) != TDM_OK)
    return st;
  if (method == TDM__OPS_HASH && nr > 0 && nr <= TDM__OPS_JOIN_RUN_MAX) {
    /* The table is keyed by canonical bits: each side is mapped, unless
     * that is the identity (unsigned keys). */
    int mapped = tdm__key_kind(a->key_type) != TDM_KIND_UNSIGNED || a->numeric;
    /* Single rows first where the right side is no longer than the left
     * (a table of distinct keys, a dimension, most often); a longer right
     * side likely repeats keys, and a failed first try costs its table
     * (and on CUDA its probe). */
    int single = nr <= nl && nl < TDM__OPS_JOIN_SINGLE_MAX, repeats = 0;
    int pairs = tdm__ops_join_pairs(a->kind, a->right_out);
    const void *lq = left, *rq = right;
    if ((st = o->scratch(c, nr * 8, (void **)&add)) != TDM_OK) return st;
    if (mapped) {
      if ((st = o->scratch(c, nl * ks, &lbits)) != TDM_OK ||
          (st = o->canon_bits(c, a->key_type, left, lbits, nl, a->numeric)) != TDM_OK)
        return st;
      lq = lbits;
    }
    if (single) {
      if (mapped && (st = o->canon_bits(c, a->key_type, right, rbits, nr, a->numeric)) != TDM_OK) return st;
      if (mapped) rq = rbits;
      /* A sample of the right keys that repeats (where the backend can
       * look without a wait): the sorted runs at once. */
      single = !(pairs && o->repeats_hint(c, ks, rq, nr) == 1);
    }
    if (single) {
      if ((st = o->set_build_runs(c, ks, rq, nr, add, &repeats)) != TDM_OK) return st;
      single = !(pairs && repeats == 1); /* the CPU knows now: straight to the sorted runs */
    }
    if (single) {
      if ((st = o->set_probe(c, lq, nl, ms, NULL)) != TDM_OK || (st = o->fill(c, off + nl, 0, 16)) != TDM_OK ||
          (st = o->join_runs(c, a->kind, ms, mc, off, nl, pairs ? off + nl : NULL)) != TDM_OK ||
          (st = o->scan_total(c, off, off, nl + 2, &total)) != TDM_OK)
        return st;
      if (total & TDM__OPS_JOIN_MULTI) { /* the starts of repeated keys: from the sorted runs */
        total &= ~TDM__OPS_JOIN_MULTI;
        if ((st = sorted_runs(c, a, right, rbits, ridx, iw, add, lq, ms, mc, NULL)) != TDM_OK) return st;
        idx = ridx;
      }
    } else {
      idx = ridx;
      if ((st = sorted_runs(c, a, right, rbits, ridx, iw, add, lq, ms, mc, off)) != TDM_OK ||
          (st = o->fill(c, off + nl, 0, 8)) != TDM_OK || (st = o->scan_total(c, off, off, nl + 1, &total)) != TDM_OK)
        return st;
    }
  } else {
    idx = ridx;
    if ((nr > 0 && (st = o->sort_indexed(c, a->key_type, a->numeric, right, nr, rbits, ridx, iw)) != TDM_OK) ||
        (st = o->join_bounds(c, a->kind, a->key_type, a->numeric, left, nl, rbits, nr, ms, mc, off)) != TDM_OK ||
        (st = o->scan_total(c, off, off, nl + 1, &total)) != TDM_OK)
      return st;
  }
  /* Each left row's output rows are now their exclusive sum in off. */
  *a->n_out = (size_t)total;
  if (total > a->cap)
    return tdm__fail(TDM_ERR_CAPACITY, "%s: the join has %llu rows but cap is %zu; *n_out holds the size needed", c->fn,
                     (unsigned long long)total, a->cap);
  if (total == 0) return TDM_OK;
  if ((st = o->out(c, a->left_out, total * 8, &lo)) != TDM_OK ||
      (a->right_out && (st = o->out(c, a->right_out, total * 8, &ro)) != TDM_OK))
    return st;
  return o->join_fill(c, a->kind, ms, mc, off, idx, iw, nl, (uint64_t *)lo, (uint64_t *)ro, total);
}

tdm_status tdm__join_run(tdm_ctx *ctx, const tdm__join_args *a, int method) {
  tdm__call c;
  tdm_status st = tdm__call_open(&c, ctx, "tdm_join");
  if (st != TDM_OK) return st;
  return c.ops->end(&c, join_steps(&c, a, method));
}
