/*
 * ops_group.c: tdm_group_reduce (every aggregation but COUNT, which is
 * tdm_unique's keys and counts: src/ops_api.c), written once over the
 * backends' building blocks (backend.h, tdm__ops_ops), by the method
 * src/ops_api.c picked:
 *
 *  - hash: the keys (under TDM_EQ_NUMERIC their canonical bits) numbered
 *    by the hash table's insert-or-number with the fold (number): each
 *    group's values folded as the rows are numbered (in input order on the
 *    CPU; on CUDA only the order-free aggregations, which the rule alone
 *    sends there, folded in a scratch table in any order); in ascending
 *    order the few distinct words are then sorted. Past the distinct keys
 *    the rule allows the numbering stops, and the sort starts;
 *  - sort, ascending under bit equality: the (key, value) pairs sorted
 *    (sort_pairs, stable: a run keeps its values in input order), their
 *    runs (runs), each run folded over contiguous values (fold_runs), the
 *    keys read back from the sort words (words_keys);
 *  - sort, first-seen order or TDM_EQ_NUMERIC: the canonical sort bits
 *    sorted with their rows (sort_indexed), the runs, in first-seen order
 *    sorted by first row; each run folded over its rows, which the stable
 *    sort left ascending (fold_runs).
 * The groups by hash and by the sort with rows are src/ops_grouping.c's,
 * shared with tdm_unique.
 * Every group's fold is the left fold in input order (or an order-free
 * one), its key the one at its first row (or, under bit equality, any
 * member's: the same bits), so the methods give the same bytes on every
 * backend. Outputs are taken (out) once the number of groups is known,
 * after the scratch their writers need.
 */
#include "backend.h"

typedef struct grp_outs {
  void *keys, *values;
} grp_outs;

static tdm_status outs_open(tdm__call *c, const tdm__group_args *a, const tdm__fold *f, size_t G, grp_outs *o) {
  tdm_status st;
  o->keys = o->values = NULL;
  if (a->keys_out && (st = c->ops->out(c, a->keys_out, G * tdm_type_size(a->key_type), &o->keys)) != TDM_OK)
    return st;
  return c->ops->out(c, a->values_out, G * tdm__fold_width(f), &o->values);
}

/* *too_many: the numbering stopped at the rule's limit, nothing written. */
static tdm_status group_hashed(tdm__call *c, const tdm__group_args *a, const tdm__fold *f, const void *keys,
                               size_t *G, int *too_many) {
  /* Under TDM_EQ_NUMERIC a group's key is the one at its first row. */
  int want_first = a->numeric && a->keys_out;
  unsigned want = (a->first_seen ? TDM__NUMBER_FIRST_SEEN : 0) | (want_first ? TDM__NUMBER_FIRST : 0) |
                  (!a->first_seen || !want_first ? TDM__NUMBER_BITS : 0);
  tdm__hashed h;
  grp_outs out;
  tdm_status st;
  if ((st = tdm__hashed_groups(c, a->key_type, a->numeric, a->first_seen, keys, a->n, want, a->hash_max_groups, f,
                               &h)) != TDM_OK)
    return st;
  *too_many = h.g.too_many;
  if (h.g.too_many) return TDM_OK;
  *G = h.g.G;
  if ((st = outs_open(c, a, f, h.g.G, &out)) != TDM_OK) return st;
  return c->ops->groups_put(c, tdm_type_size(a->key_type), keys, &h.g, h.ord, h.ow, out.keys, NULL, NULL,
                            out.values);
}

/* Ascending, bit equality: a stable sort of (key, value) pairs puts each
 * group's values together in input order, so the folds read them in
 * sequence instead of gathering them by row. */
static tdm_status group_sorted_pairs(tdm__call *c, const tdm__group_args *a, const tdm__fold *f, const void *keys,
                                     size_t *G) {
  const tdm__ops_ops *o = c->ops;
  size_t ks = tdm_type_size(a->key_type), vs = tdm_type_size(a->value_type), n = a->n;
  void *words, *vals;
  tdm__fold sf = *f;
  tdm__groups g;
  grp_outs out;
  tdm_status st;
  if ((st = o->scratch(c, n * ks, &words)) != TDM_OK || (st = o->scratch(c, n * vs, &vals)) != TDM_OK ||
      (st = o->sort_pairs(c, a->key_type, keys, f->values, vs, n, words, vals)) != TDM_OK ||
      (st = o->runs(c, ks, words, NULL, 0, n, 0, &g)) != TDM_OK || (st = outs_open(c, a, f, g.G, &out)) != TDM_OK)
    return st;
  *G = g.G;
  sf.values = vals;
  if (out.keys && ((st = o->groups_put(c, ks, words, &g, NULL, 0, out.keys, NULL, NULL, NULL)) != TDM_OK ||
                   (st = o->words_keys(c, a->key_type, out.keys, g.G)) != TDM_OK))
    return st;
  return o->fold_runs(c, &g, NULL, 0, &sf, out.values);
}

static tdm_status group_sorted(tdm__call *c, const tdm__group_args *a, const tdm__fold *f, const void *keys,
                               size_t *G) {
  const tdm__ops_ops *o = c->ops;
  tdm__sorted s;
  grp_outs out;
  tdm_status st;
  if ((st = tdm__sorted_groups(c, a->key_type, a->numeric, a->first_seen, keys, a->n, &s)) != TDM_OK ||
      (st = outs_open(c, a, f, s.g.G, &out)) != TDM_OK ||
      (out.keys && (st = o->groups_put(c, tdm_type_size(a->key_type), keys, &s.g, s.ord, s.ow, out.keys, NULL, NULL,
                                       NULL)) != TDM_OK))
    return st;
  *G = s.g.G;
  return o->fold_runs(c, &s.g, s.ord, s.ow, f, out.values);
}

static tdm_status group_steps(tdm__call *c, const tdm__group_args *a, int method, size_t *G) {
  const tdm__ops_ops *o = c->ops;
  tdm__fold f;
  const void *keys;
  int too_many = 0;
  tdm_status st;
  f.agg = a->agg;
  f.value_type = a->value_type;
  if ((st = o->in(c, a->keys, a->n * tdm_type_size(a->key_type), &keys)) != TDM_OK ||
      (st = o->in(c, a->values, a->n * tdm_type_size(a->value_type), &f.values)) != TDM_OK)
    return st;
  if (method == TDM__OPS_HASH && ((st = group_hashed(c, a, &f, keys, G, &too_many)) != TDM_OK || !too_many))
    return st;
  if (!a->numeric && !a->first_seen) return group_sorted_pairs(c, a, &f, keys, G);
  return group_sorted(c, a, &f, keys, G);
}

tdm_status tdm__group_run(tdm_ctx *ctx, const tdm__group_args *a, int method) {
  tdm__call c;
  size_t G = 0;
  tdm_status st = tdm__call_open(&c, ctx, "tdm_group_reduce");
  if (st != TDM_OK) return st;
  if ((st = c.ops->end(&c, group_steps(&c, a, method, &G))) == TDM_OK) *a->n_groups_out = G;
  return st;
}
