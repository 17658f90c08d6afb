/*
 * ops_unique.c: tdm_unique, written once over the backends' building blocks
 * (backend.h, tdm__ops_ops), by the method src/ops_api.c picked:
 *
 *  - dense (integer keys of a small range): the call's dense table counts
 *    the rows of each value and numbers the values in use (dense_build),
 *    and every output is read from it (dense_put);
 *  - sort, keys alone (ascending, by bits, no first indices or inverse):
 *    the keys sorted alone, and their runs (sort_keys, runs_keys);
 *  - sort: the canonical sort bits sorted with their rows (stable: a run
 *    lists its rows ascending), the runs' starts (runs); in first-seen
 *    order the runs sorted by first row; outputs by output position
 *    (groups_put) and the inverse by sorted position (groups_scatter);
 *  - hash: the keys (under TDM_EQ_NUMERIC their canonical bits) numbered
 *    by the hash table's insert-or-number (number): in first-seen order
 *    that numbering is the output order and each row's number is its
 *    inverse (number_codes); in ascending order the few distinct words are
 *    sorted, and the inverse is each row's group's rank (number_codes
 *    through the ranks) or, where the numbering does not give each row's
 *    group as it numbers (a backend's hash_groups), one probe a row of a
 *    table mapping each distinct word to its position (set_build_rows).
 *    Past the distinct keys the rule allows the numbering stops, and the
 *    sort starts.
 * The sort's and the hash's groups are src/ops_grouping.c's, shared with
 * tdm_group_reduce.
 * Each group's first row, count and key are the same whichever way it was
 * found, so the methods give the same bytes, on every backend. Every
 * output is taken (out) only once its size is known, after the scratch
 * its writer needs; the keys-only path writes its n-sized outputs and then
 * keeps their first G entries (out_trim).
 */
#include "backend.h"
#include "tandem/detail/keybits.h"

typedef struct uq_outs {
  void *keys;
  uint64_t *first, *counts, *inverse;
} uq_outs;

/* The outputs sized for G groups (the inverse for every row). */
static tdm_status outs_open(tdm__call *c, const tdm__unique_args *a, size_t G, uq_outs *o) {
  const tdm__ops_ops *ops = c->ops;
  size_t ks = tdm_type_size(a->key_type);
  tdm_status st;
  o->keys = NULL;
  o->first = o->counts = o->inverse = NULL;
  if ((a->unique_out && (st = ops->out(c, a->unique_out, G * ks, &o->keys)) != TDM_OK) ||
      (a->first_index_out && (st = ops->out(c, a->first_index_out, G * 8, (void **)&o->first)) != TDM_OK) ||
      (a->counts_out && (st = ops->out(c, a->counts_out, G * 8, (void **)&o->counts)) != TDM_OK) ||
      (a->inverse_out && (st = ops->out(c, a->inverse_out, a->n * 8, (void **)&o->inverse)) != TDM_OK))
    return st;
  return TDM_OK;
}

static tdm_status unique_dense(tdm__call *c, const tdm__unique_args *a, const void *keys, size_t *G) {
  const tdm__ops_ops *o = c->ops;
  uq_outs out;
  tdm_status st;
  if ((st = o->dense_build(c, a->key_type, keys, a->n, a->dense_min, a->dense_span, a->first_seen,
                           a->first_index_out != NULL, a->inverse_out != NULL, G)) != TDM_OK ||
      (st = outs_open(c, a, *G, &out)) != TDM_OK)
    return st;
  return o->dense_put(c, out.keys, out.first, out.counts, out.inverse);
}

/* Every member of a group has the same bits, so the keys sorted alone and
 * their runs are the whole answer: a key moves through the sort alone. */
static tdm_status unique_keys_only(tdm__call *c, const tdm__unique_args *a, const void *keys, size_t *G) {
  const tdm__ops_ops *o = c->ops;
  size_t ks = tdm_type_size(a->key_type), n = a->n;
  void *sorted, *uk = NULL;
  uint64_t *cnt = NULL;
  tdm_status st;
  if ((st = o->sort_keys(c, a->key_type, keys, n, &sorted)) != TDM_OK ||
      (a->unique_out && (st = o->out(c, a->unique_out, n * ks, &uk)) != TDM_OK) ||
      (a->counts_out && (st = o->out(c, a->counts_out, n * 8, (void **)&cnt)) != TDM_OK) ||
      (st = o->runs_keys(c, a->key_type, sorted, n, uk, cnt, G)) != TDM_OK ||
      (uk && (st = o->out_trim(c, uk, *G * ks)) != TDM_OK))
    return st;
  return cnt ? o->out_trim(c, cnt, *G * 8) : TDM_OK;
}

static tdm_status unique_sorted(tdm__call *c, const tdm__unique_args *a, const void *keys, size_t *G) {
  const tdm__ops_ops *o = c->ops;
  uint64_t *rank = NULL;
  tdm__sorted s;
  uq_outs out;
  tdm_status st;
  if ((st = tdm__sorted_groups(c, a->key_type, a->numeric, a->first_seen, keys, a->n, &s)) != TDM_OK) return st;
  *G = s.g.G;
  if (s.ord && a->inverse_out &&
      ((st = o->scratch(c, s.g.G * 8, (void **)&rank)) != TDM_OK ||
       (st = o->invert(c, s.ord, s.ow, s.g.G, rank)) != TDM_OK))
    return st;
  if ((st = outs_open(c, a, s.g.G, &out)) != TDM_OK ||
      (st = o->groups_put(c, tdm_type_size(a->key_type), keys, &s.g, s.ord, s.ow, out.keys, out.first, out.counts,
                          NULL)) != TDM_OK)
    return st;
  return out.inverse ? o->groups_scatter(c, &s.g, s.idx, s.iw, rank, a->n, out.inverse) : TDM_OK;
}

/* *too_many: the numbering stopped at the rule's limit, nothing written. */
static tdm_status unique_hashed(tdm__call *c, const tdm__unique_args *a, const void *keys, size_t *G,
                                int *too_many) {
  const tdm__ops_ops *o = c->ops;
  size_t ks = tdm_type_size(a->key_type), n = a->n;
  tdm_type wt = a->numeric ? (ks == 4 ? TDM_U32 : TDM_U64) : a->key_type;
  int want_first = a->first_seen || a->first_index_out || (a->numeric && a->unique_out);
  /* Each row's position in ascending order: where the numbering gives
   * each row's group in the pass that numbers (TDM__HASH_GROUPS_IN_ORDER),
   * those groups' ranks; else one probe a row of a table of the distinct
   * words in output order, each valued at its position. */
  int by_codes = a->inverse_out && (a->first_seen || o->hash_groups == TDM__HASH_GROUPS_IN_ORDER);
  int by_table = a->inverse_out && !by_codes;
  /* The words are sorted in ascending order; without first rows a group's
   * key is its word. */
  unsigned want = (a->first_seen ? TDM__NUMBER_FIRST_SEEN : 0) | (want_first ? TDM__NUMBER_FIRST : 0) |
                  (a->counts_out ? TDM__NUMBER_COUNT : 0) | (!a->first_seen || !want_first ? TDM__NUMBER_BITS : 0) |
                  (by_codes ? TDM__NUMBER_CODES : 0);
  const void *sw;
  void *cb;
  uint64_t *rank = NULL;
  tdm__hashed h;
  uq_outs out;
  tdm_status st;
  if ((st = tdm__hashed_groups(c, a->key_type, a->numeric, a->first_seen, keys, n, want, a->hash_max_groups, NULL,
                               &h)) != TDM_OK)
    return st;
  *too_many = h.g.too_many;
  if (h.g.too_many) return TDM_OK;
  *G = h.g.G;
  if (by_codes && h.ord &&
      ((st = o->scratch(c, h.g.G * 8, (void **)&rank)) != TDM_OK ||
       (st = o->invert(c, h.ord, h.ow, h.g.G, rank)) != TDM_OK))
    return st;
  if (by_table) {
    /* Made before any output is written. The words in output order: the
     * sorted bits when the words are unsigned, else put from the words. */
    sw = h.sorted ? h.sorted : h.g.bits;
    if (h.sorted && tdm__key_kind(wt) != TDM_KIND_UNSIGNED) {
      if ((st = o->scratch(c, h.g.G * ks, &cb)) != TDM_OK ||
          (st = o->groups_put(c, ks, h.words, &h.g, h.ord, h.ow, cb, NULL, NULL, NULL)) != TDM_OK)
        return st;
      sw = cb;
    }
    if ((st = o->set_build_rows(c, ks, sw, h.g.G)) != TDM_OK) return st;
  }
  if ((st = outs_open(c, a, h.g.G, &out)) != TDM_OK ||
      (st = o->groups_put(c, ks, keys, &h.g, h.ord, h.ow, out.keys, out.first, out.counts, NULL)) != TDM_OK ||
      !out.inverse)
    return st;
  return by_codes ? o->number_codes(c, rank, out.inverse) : o->set_probe(c, h.words, n, out.inverse, NULL);
}

static tdm_status unique_steps(tdm__call *c, const tdm__unique_args *a, int method, size_t *G) {
  size_t ks = tdm_type_size(a->key_type);
  const void *keys;
  int too_many = 0;
  tdm_status st;
  if ((st = c->ops->in(c, a->keys, a->n * ks, &keys)) != TDM_OK) return st;
  if (method == TDM__OPS_DENSE) return unique_dense(c, a, keys, G);
  if (method == TDM__OPS_HASH && ((st = unique_hashed(c, a, keys, G, &too_many)) != TDM_OK || !too_many)) return st;
  if (!a->first_index_out && !a->inverse_out && !a->numeric && !a->first_seen) return unique_keys_only(c, a, keys, G);
  return unique_sorted(c, a, keys, G);
}

tdm_status tdm__unique_run(tdm_ctx *ctx, const tdm__unique_args *a, int method) {
  tdm__call c;
  size_t G = 0;
  tdm_status st = tdm__call_open(&c, ctx, "tdm_unique");
  if (st != TDM_OK) return st;
  if ((st = c.ops->end(&c, unique_steps(&c, a, method, &G))) == TDM_OK) *a->n_unique_out = G;
  return st;
}
