/*
 * ops_grouping.c: the groups of equal keys that tdm_unique
 * (src/ops_unique.c) and tdm_group_reduce (src/ops_group.c) share, by
 * either method:
 *  - sort: the canonical sort bits sorted with their rows (stable: a run
 *    lists its rows ascending) and their runs; in first-seen order the runs
 *    sorted by first row;
 *  - hash: the keys numbered by the hash table's insert-or-number (the
 *    number block) and, in ascending order, the few distinct words sorted
 *    with their groups.
 */
#include "backend.h"

tdm_status tdm__hashed_groups(tdm__call *c, tdm_type key_type, int numeric, int first_seen, const void *keys,
                              size_t n, unsigned want, size_t max_groups, const tdm__fold *fold, tdm__hashed *h) {
  const tdm__ops_ops *o = c->ops;
  size_t ks = tdm_type_size(key_type);
  /* Without TDM_EQ_NUMERIC the keys' own bits are numbered (and so are a
   * group's word: its key); with it their canonical bits. Unsigned words
   * are their own canonical sort bits. */
  tdm_type wt = numeric ? (ks == 4 ? TDM_U32 : TDM_U64) : key_type;
  void *cb;
  tdm_status st;
  h->words = keys;
  h->sorted = h->ord = NULL;
  h->ow = 0;
  if (numeric && ((st = o->scratch(c, n * ks, &cb)) != TDM_OK ||
                  (st = o->canon_bits(c, key_type, keys, cb, n, 1)) != TDM_OK))
    return st;
  if (numeric) h->words = cb;
  if ((st = o->number(c, ks, h->words, n, want, max_groups, fold, &h->g)) != TDM_OK || h->g.too_many ||
      first_seen || h->g.G < 2)
    return st;
  h->ow = h->g.G <= UINT32_MAX ? 4 : 8;
  if ((st = o->scratch(c, h->g.G * ks, &h->sorted)) != TDM_OK ||
      (st = o->scratch(c, h->g.G * h->ow, &h->ord)) != TDM_OK)
    return st;
  return o->sort_indexed(c, wt, 0, h->g.bits, h->g.G, h->sorted, h->ord, h->ow);
}

tdm_status tdm__sorted_groups(tdm__call *c, tdm_type key_type, int numeric, int first_seen, const void *keys,
                              size_t n, tdm__sorted *s) {
  const tdm__ops_ops *o = c->ops;
  size_t ks = tdm_type_size(key_type);
  void *bits, *fb;
  tdm_status st;
  s->iw = n <= UINT32_MAX ? 4 : 8;
  s->ord = NULL;
  s->ow = 0;
  if ((st = o->scratch(c, n * ks, &bits)) != TDM_OK || (st = o->scratch(c, n * s->iw, &s->idx)) != TDM_OK ||
      (st = o->sort_indexed(c, key_type, numeric, keys, n, bits, s->idx, s->iw)) != TDM_OK ||
      (st = o->runs(c, ks, bits, s->idx, s->iw, n, first_seen, &s->g)) != TDM_OK || !first_seen || s->g.G < 2)
    return st;
  /* The runs by first row: a stable sort of their first rows. */
  s->ow = s->g.G <= UINT32_MAX ? 4 : 8;
  if ((st = o->scratch(c, s->g.G * 8, &fb)) != TDM_OK || (st = o->scratch(c, s->g.G * s->ow, &s->ord)) != TDM_OK)
    return st;
  return o->sort_indexed(c, TDM_U64, 0, s->g.first, s->g.G, fb, s->ord, s->ow);
}
