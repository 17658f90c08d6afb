/* ops_blocks.c: the test programs' handle on the data operations' building
 * blocks (src/backend.h): each runs one block (or a set's build and probe,
 * a bit table's fill, set and test) in a call of its own on ctx's backend,
 * so the caller's arrays may be host or device memory as for a data
 * operation, staged through the call's memory. */
#include "../../src/backend.h"
#include "hooks.h"

/* Starts a call on ctx, or returns its status. */
#define BLOCK_BEGIN(c, ctx)                                      \
  tdm__call c;                                                   \
  tdm_status st_;                                                \
  if ((st_ = tdm__call_open(&c, ctx, "test block")) != TDM_OK) return st_

tdm_status tdm_test_block_fill(tdm_ctx *ctx, void *out, int byte, size_t bytes) {
  void *d;
  BLOCK_BEGIN(c, ctx);
  if ((st_ = c.ops->out(&c, out, bytes, &d)) == TDM_OK) st_ = c.ops->fill(&c, d, byte, bytes);
  return c.ops->end(&c, st_);
}

tdm_status tdm_test_block_canon_bits(tdm_ctx *ctx, tdm_type t, const void *keys, size_t n, int numeric,
                                     void *bits_out) {
  const void *k;
  void *b;
  size_t ks = tdm_type_size(t);
  BLOCK_BEGIN(c, ctx);
  if ((st_ = c.ops->in(&c, keys, n * ks, &k)) == TDM_OK && (st_ = c.ops->out(&c, bits_out, n * ks, &b)) == TDM_OK)
    st_ = c.ops->canon_bits(&c, t, k, b, n, numeric);
  return c.ops->end(&c, st_);
}

tdm_status tdm_test_block_sort_words(tdm_ctx *ctx, size_t ks, const void *words, size_t n, void *sorted_out) {
  const void *w;
  void *s;
  BLOCK_BEGIN(c, ctx);
  /* The canonical bits of unsigned keys are the keys: a copy. */
  if ((st_ = c.ops->in(&c, words, n * ks, &w)) == TDM_OK && (st_ = c.ops->out(&c, sorted_out, n * ks, &s)) == TDM_OK &&
      (st_ = c.ops->canon_bits(&c, ks == 4 ? TDM_U32 : TDM_U64, w, s, n, 0)) == TDM_OK)
    st_ = c.ops->sort_words(&c, ks, s, n);
  return c.ops->end(&c, st_);
}

tdm_status tdm_test_block_search(tdm_ctx *ctx, tdm_type t, int numeric, const void *sorted, size_t m,
                                 const void *queries, size_t n, uint8_t *found_out) {
  const void *s, *q;
  void *f;
  size_t ks = tdm_type_size(t);
  BLOCK_BEGIN(c, ctx);
  if ((st_ = c.ops->in(&c, sorted, m * ks, &s)) == TDM_OK && (st_ = c.ops->in(&c, queries, n * ks, &q)) == TDM_OK &&
      (st_ = c.ops->out(&c, found_out, n, &f)) == TDM_OK)
    st_ = c.ops->search(&c, t, numeric, s, m, q, n, (uint8_t *)f);
  return c.ops->end(&c, st_);
}

tdm_status tdm_test_block_set(tdm_ctx *ctx, size_t ks, const void *keys, const uint64_t *vals, size_t m,
                              const void *queries, size_t n, uint64_t *values_out, uint8_t *found_out, int *repeats) {
  const void *k, *q, *v = NULL;
  void *f = NULL, *vo = NULL;
  BLOCK_BEGIN(c, ctx);
  if ((st_ = c.ops->in(&c, keys, m * ks, &k)) == TDM_OK && (st_ = c.ops->in(&c, queries, n * ks, &q)) == TDM_OK &&
      (!vals || (st_ = c.ops->in(&c, vals, m * 8, &v)) == TDM_OK) &&
      (!found_out || (st_ = c.ops->out(&c, found_out, n, &f)) == TDM_OK) &&
      (!values_out || (st_ = c.ops->out(&c, values_out, n * 8, &vo)) == TDM_OK) &&
      (st_ = c.ops->set_build(&c, ks, k, (const uint64_t *)v, m, repeats)) == TDM_OK)
    st_ = c.ops->set_probe(&c, q, n, (uint64_t *)vo, (uint8_t *)f);
  return c.ops->end(&c, st_);
}

tdm_status tdm_test_block_set_runs(tdm_ctx *ctx, size_t ks, const void *keys, size_t m, const void *queries, size_t n,
                                   uint64_t *values_out, uint8_t *found_out, int *repeats) {
  const void *k, *q;
  void *f, *vo, *add;
  BLOCK_BEGIN(c, ctx);
  if ((st_ = c.ops->in(&c, keys, m * ks, &k)) == TDM_OK && (st_ = c.ops->in(&c, queries, n * ks, &q)) == TDM_OK &&
      (st_ = c.ops->out(&c, found_out, n, &f)) == TDM_OK && (st_ = c.ops->out(&c, values_out, n * 8, &vo)) == TDM_OK &&
      (st_ = c.ops->scratch(&c, m * 8, &add)) == TDM_OK &&
      (st_ = c.ops->set_build_runs(&c, ks, k, m, (uint64_t *)add, repeats)) == TDM_OK)
    st_ = c.ops->set_probe(&c, q, n, (uint64_t *)vo, (uint8_t *)f);
  return c.ops->end(&c, st_);
}

tdm_status tdm_test_block_sort_indexed(tdm_ctx *ctx, tdm_type t, int numeric, const void *keys, size_t n,
                                       void *bits_out, void *idx_out, size_t iw) {
  const void *k;
  void *b, *x;
  size_t ks = tdm_type_size(t);
  BLOCK_BEGIN(c, ctx);
  if ((st_ = c.ops->in(&c, keys, n * ks, &k)) == TDM_OK && (st_ = c.ops->out(&c, bits_out, n * ks, &b)) == TDM_OK &&
      (st_ = c.ops->out(&c, idx_out, n * iw, &x)) == TDM_OK)
    st_ = c.ops->sort_indexed(&c, t, numeric, k, n, b, x, iw);
  return c.ops->end(&c, st_);
}

tdm_status tdm_test_block_repeats_hint(tdm_ctx *ctx, size_t ks, const void *words, size_t n, int *hint) {
  const void *w;
  BLOCK_BEGIN(c, ctx);
  if ((st_ = c.ops->in(&c, words, n * ks, &w)) == TDM_OK) *hint = c.ops->repeats_hint(&c, ks, w, n);
  return c.ops->end(&c, st_);
}

tdm_status tdm_test_block_run_adds(tdm_ctx *ctx, size_t ks, const void *sorted, size_t n, uint64_t *add_out) {
  const void *s;
  void *a;
  BLOCK_BEGIN(c, ctx);
  if ((st_ = c.ops->in(&c, sorted, n * ks, &s)) == TDM_OK && (st_ = c.ops->out(&c, add_out, n * 8, &a)) == TDM_OK)
    st_ = c.ops->run_adds(&c, ks, s, n, (uint64_t *)a);
  return c.ops->end(&c, st_);
}

tdm_status tdm_test_block_join_runs(tdm_ctx *ctx, int kind, const uint64_t *words, size_t nl, uint64_t *ms_out,
                                    uint64_t *mc_out, uint64_t *rows_out, uint64_t *multi_out) {
  const void *w;
  void *ms, *mc, *rows = NULL, *multi = NULL;
  BLOCK_BEGIN(c, ctx);
  /* The canonical bits of unsigned words are the words: a copy into ms. */
  if ((st_ = c.ops->in(&c, words, nl * 8, &w)) == TDM_OK && (st_ = c.ops->out(&c, ms_out, nl * 8, &ms)) == TDM_OK &&
      (st_ = c.ops->out(&c, mc_out, nl * 8, &mc)) == TDM_OK &&
      (!rows_out || (st_ = c.ops->out(&c, rows_out, nl * 8, &rows)) == TDM_OK) &&
      (!multi_out || ((st_ = c.ops->out(&c, multi_out, 8, &multi)) == TDM_OK &&
                      (st_ = c.ops->fill(&c, multi, 0, 8)) == TDM_OK)) &&
      (st_ = c.ops->canon_bits(&c, TDM_U64, w, ms, nl, 0)) == TDM_OK)
    st_ = c.ops->join_runs(&c, kind, (uint64_t *)ms, (uint64_t *)mc, (uint64_t *)rows, nl, (uint64_t *)multi);
  return c.ops->end(&c, st_);
}

tdm_status tdm_test_block_join_bounds(tdm_ctx *ctx, int kind, tdm_type t, int numeric, const void *left, size_t nl,
                                      const void *rbits, size_t nr, uint64_t *ms_out, uint64_t *mc_out,
                                      uint64_t *rows_out) {
  const void *l, *r;
  void *ms, *mc, *rows;
  size_t ks = tdm_type_size(t);
  BLOCK_BEGIN(c, ctx);
  if ((st_ = c.ops->in(&c, left, nl * ks, &l)) == TDM_OK && (st_ = c.ops->in(&c, rbits, nr * ks, &r)) == TDM_OK &&
      (st_ = c.ops->out(&c, ms_out, nl * 8, &ms)) == TDM_OK && (st_ = c.ops->out(&c, mc_out, nl * 8, &mc)) == TDM_OK &&
      (st_ = c.ops->out(&c, rows_out, (nl + 1) * 8, &rows)) == TDM_OK)
    st_ = c.ops->join_bounds(&c, kind, t, numeric, l, nl, r, nr, (uint64_t *)ms, (uint64_t *)mc, (uint64_t *)rows);
  return c.ops->end(&c, st_);
}

tdm_status tdm_test_block_scan_total(tdm_ctx *ctx, const uint64_t *in, size_t n, uint64_t *off_out, uint64_t *total) {
  const void *i;
  void *o;
  BLOCK_BEGIN(c, ctx);
  if ((st_ = c.ops->in(&c, in, n * 8, &i)) == TDM_OK && (st_ = c.ops->out(&c, off_out, n * 8, &o)) == TDM_OK)
    st_ = c.ops->scan_total(&c, (const uint64_t *)i, (uint64_t *)o, n, total);
  return c.ops->end(&c, st_);
}

tdm_status tdm_test_block_join_fill(tdm_ctx *ctx, int kind, const uint64_t *ms, const uint64_t *mc,
                                    const uint64_t *off, const void *idx, size_t iw, size_t nl, size_t nr,
                                    uint64_t *left_out, uint64_t *right_out, uint64_t total) {
  const void *s, *m, *o, *x = NULL;
  void *lo, *ro = NULL;
  BLOCK_BEGIN(c, ctx);
  if ((st_ = c.ops->in(&c, ms, nl * 8, &s)) == TDM_OK && (st_ = c.ops->in(&c, mc, nl * 8, &m)) == TDM_OK &&
      (st_ = c.ops->in(&c, off, (nl + 1) * 8, &o)) == TDM_OK &&
      (!idx || (st_ = c.ops->in(&c, idx, nr * iw, &x)) == TDM_OK) &&
      (st_ = c.ops->out(&c, left_out, total * 8, &lo)) == TDM_OK &&
      (!right_out || (st_ = c.ops->out(&c, right_out, total * 8, &ro)) == TDM_OK))
    st_ = c.ops->join_fill(&c, kind, (const uint64_t *)s, (const uint64_t *)m, (const uint64_t *)o, x, iw, nl,
                           (uint64_t *)lo, (uint64_t *)ro, total);
  return c.ops->end(&c, st_);
}

tdm_status tdm_test_block_bits(tdm_ctx *ctx, size_t ks, const void *keys, size_t m, uint64_t lo, uint64_t span,
                               const void *queries, size_t n, uint8_t *found_out) {
  const void *k, *q;
  void *f, *bits;
  size_t bytes = tdm__bits_words(span) * 8;
  BLOCK_BEGIN(c, ctx);
  if ((st_ = c.ops->in(&c, keys, m * ks, &k)) == TDM_OK && (st_ = c.ops->in(&c, queries, n * ks, &q)) == TDM_OK &&
      (st_ = c.ops->out(&c, found_out, n, &f)) == TDM_OK && (st_ = c.ops->scratch(&c, bytes, &bits)) == TDM_OK &&
      (st_ = c.ops->fill(&c, bits, 0, bytes)) == TDM_OK &&
      (st_ = c.ops->bits_set(&c, ks, k, m, lo, (uint64_t *)bits)) == TDM_OK)
    st_ = c.ops->bits_test(&c, ks, q, n, lo, span, (const uint64_t *)bits, (uint8_t *)f);
  return c.ops->end(&c, st_);
}

tdm_status tdm_test_block_unique_keys(tdm_ctx *ctx, tdm_type t, const void *keys, size_t n, void *keys_out,
                                      uint64_t *counts_out, size_t *G) {
  const void *k;
  void *s, *u = NULL, *cnt = NULL;
  size_t ks = tdm_type_size(t);
  BLOCK_BEGIN(c, ctx);
  if ((st_ = c.ops->in(&c, keys, n * ks, &k)) == TDM_OK && (st_ = c.ops->sort_keys(&c, t, k, n, &s)) == TDM_OK &&
      (!keys_out || (st_ = c.ops->out(&c, keys_out, n * ks, &u)) == TDM_OK) &&
      (!counts_out || (st_ = c.ops->out(&c, counts_out, n * 8, &cnt)) == TDM_OK) &&
      (st_ = c.ops->runs_keys(&c, t, s, n, u, (uint64_t *)cnt, G)) == TDM_OK &&
      (!u || (st_ = c.ops->out_trim(&c, u, *G * ks)) == TDM_OK) && cnt)
    st_ = c.ops->out_trim(&c, cnt, *G * 8);
  return c.ops->end(&c, st_);
}

tdm_status tdm_test_block_runs(tdm_ctx *ctx, size_t ks, const void *sorted, const void *idx, size_t iw, size_t n,
                               int want_first, const void *keys, const void *ord, size_t ow, const uint64_t *rank, size_t g_want,
                               void *keys_out, uint64_t *first_out, uint64_t *counts_out, uint64_t *inverse_out,
                               size_t *G) {
  const void *s, *x, *k, *o = NULL, *r = NULL;
  void *ko, *fo, *co, *io;
  tdm__groups g;
  BLOCK_BEGIN(c, ctx);
  if ((st_ = c.ops->in(&c, sorted, n * ks, &s)) == TDM_OK && (st_ = c.ops->in(&c, idx, n * iw, &x)) == TDM_OK &&
      (st_ = c.ops->in(&c, keys, n * ks, &k)) == TDM_OK &&
      (!ord || (st_ = c.ops->in(&c, ord, g_want * ow, &o)) == TDM_OK) &&
      (!rank || (st_ = c.ops->in(&c, rank, g_want * 8, &r)) == TDM_OK) &&
      (st_ = c.ops->runs(&c, ks, s, x, iw, n, want_first, &g)) == TDM_OK) {
    *G = g.G;
    /* The order and ranks were made for the groups the caller expects. */
    if (g.G != g_want) st_ = tdm__fail(TDM_ERR_INVALID_ARGUMENT, "test block: %zu runs, %zu expected", g.G, g_want);
    else if ((st_ = c.ops->out(&c, keys_out, g.G * ks, &ko)) == TDM_OK &&
             (st_ = c.ops->out(&c, first_out, g.G * 8, &fo)) == TDM_OK &&
             (st_ = c.ops->out(&c, counts_out, g.G * 8, &co)) == TDM_OK &&
             (st_ = c.ops->out(&c, inverse_out, n * 8, &io)) == TDM_OK &&
             (st_ = c.ops->groups_put(&c, ks, k, &g, o, ow, ko, (uint64_t *)fo, (uint64_t *)co, NULL)) == TDM_OK)
      st_ = c.ops->groups_scatter(&c, &g, x, iw, (const uint64_t *)r, n, (uint64_t *)io);
  }
  return c.ops->end(&c, st_);
}

tdm_status tdm_test_block_number(tdm_ctx *ctx, size_t ks, const void *words, size_t n, unsigned want,
                                 size_t max_groups, const uint64_t *rank, int *too_many,
                                 void *words_out, uint64_t *first_out, uint64_t *counts_out, uint64_t *codes_out,
                                 size_t *G) {
  const void *w, *r = NULL;
  void *wo, *fo = NULL, *co = NULL, *xo;
  tdm__groups g;
  BLOCK_BEGIN(c, ctx);
  if ((st_ = c.ops->in(&c, words, n * ks, &w)) == TDM_OK && (!rank || (st_ = c.ops->in(&c, rank, n * 8, &r)) == TDM_OK) &&
      (st_ = c.ops->number(&c, ks, w, n, want, max_groups, NULL, &g)) == TDM_OK) {
    *too_many = g.too_many;
    *G = g.G;
    /* The groups' words: from their first rows or their own words, the same. */
    if (!g.too_many && (st_ = c.ops->out(&c, words_out, g.G * ks, &wo)) == TDM_OK &&
        (!(want & TDM__NUMBER_FIRST) || (st_ = c.ops->out(&c, first_out, g.G * 8, &fo)) == TDM_OK) &&
        (!(want & TDM__NUMBER_COUNT) || (st_ = c.ops->out(&c, counts_out, g.G * 8, &co)) == TDM_OK) &&
        (st_ = c.ops->groups_put(&c, ks, w, &g, NULL, 0, wo, (uint64_t *)fo, (uint64_t *)co, NULL)) == TDM_OK &&
        (want & TDM__NUMBER_CODES) &&
        (st_ = c.ops->out(&c, codes_out, n * 8, &xo)) == TDM_OK)
      st_ = c.ops->number_codes(&c, (const uint64_t *)r, (uint64_t *)xo);
  }
  return c.ops->end(&c, st_);
}

tdm_status tdm_test_block_invert(tdm_ctx *ctx, const void *perm, size_t pw, size_t n, uint64_t *inv_out) {
  const void *p;
  void *o;
  BLOCK_BEGIN(c, ctx);
  if ((st_ = c.ops->in(&c, perm, n * pw, &p)) == TDM_OK && (st_ = c.ops->out(&c, inv_out, n * 8, &o)) == TDM_OK)
    st_ = c.ops->invert(&c, p, pw, n, (uint64_t *)o);
  return c.ops->end(&c, st_);
}

tdm_status tdm_test_block_dense(tdm_ctx *ctx, tdm_type t, const void *keys, size_t n, uint64_t lo, uint64_t span,
                                int first_seen, int want_first, int want_inverse, void *keys_out, uint64_t *first_out,
                                uint64_t *counts_out, uint64_t *inverse_out, size_t *G) {
  const void *k;
  void *ko, *fo = NULL, *co, *io = NULL;
  size_t ks = tdm_type_size(t);
  BLOCK_BEGIN(c, ctx);
  if ((st_ = c.ops->in(&c, keys, n * ks, &k)) == TDM_OK &&
      (st_ = c.ops->dense_build(&c, t, k, n, lo, span, first_seen, want_first, want_inverse, G)) == TDM_OK &&
      (st_ = c.ops->out(&c, keys_out, *G * ks, &ko)) == TDM_OK &&
      (!want_first || (st_ = c.ops->out(&c, first_out, *G * 8, &fo)) == TDM_OK) &&
      (st_ = c.ops->out(&c, counts_out, *G * 8, &co)) == TDM_OK &&
      (!want_inverse || (st_ = c.ops->out(&c, inverse_out, n * 8, &io)) == TDM_OK))
    st_ = c.ops->dense_put(&c, ko, (uint64_t *)fo, (uint64_t *)co, (uint64_t *)io);
  return c.ops->end(&c, st_);
}

tdm_status tdm_test_block_set_rows(tdm_ctx *ctx, size_t ks, const void *keys, size_t m, const void *queries, size_t n,
                                   uint64_t *values_out, uint8_t *found_out, int replace) {
  const void *k, *q;
  void *v, *f;
  BLOCK_BEGIN(c, ctx);
  if ((st_ = c.ops->in(&c, keys, m * ks, &k)) == TDM_OK && (st_ = c.ops->in(&c, queries, n * ks, &q)) == TDM_OK &&
      (st_ = c.ops->out(&c, values_out, n * 8, &v)) == TDM_OK && (st_ = c.ops->out(&c, found_out, n, &f)) == TDM_OK &&
      (!replace || !n || (st_ = c.ops->set_build(&c, ks, q, NULL, n, NULL)) == TDM_OK) &&
      (st_ = c.ops->set_build_rows(&c, ks, k, m)) == TDM_OK)
    st_ = c.ops->set_probe(&c, q, n, (uint64_t *)v, (uint8_t *)f);
  return c.ops->end(&c, st_);
}

int tdm_test_block_hash_groups(tdm_ctx *ctx) { return ctx->be->ops->hash_groups; }

tdm_status tdm_test_block_fold_pairs(tdm_ctx *ctx, tdm_type t, const void *keys, tdm_type vt, const void *values,
                                     size_t n, int agg, void *keys_out, void *values_out, size_t *G) {
  const void *k, *v;
  void *w, *sv, *ko, *vo;
  size_t ks = tdm_type_size(t), vs = tdm_type_size(vt);
  tdm__fold f;
  tdm__groups g;
  BLOCK_BEGIN(c, ctx);
  f.agg = agg;
  f.value_type = vt;
  if ((st_ = c.ops->in(&c, keys, n * ks, &k)) == TDM_OK && (st_ = c.ops->in(&c, values, n * vs, &v)) == TDM_OK &&
      (st_ = c.ops->scratch(&c, n * ks, &w)) == TDM_OK && (st_ = c.ops->scratch(&c, n * vs, &sv)) == TDM_OK &&
      (st_ = c.ops->sort_pairs(&c, t, k, v, vs, n, w, sv)) == TDM_OK &&
      (st_ = c.ops->runs(&c, ks, w, NULL, 0, n, 0, &g)) == TDM_OK) {
    *G = g.G;
    f.values = sv;
    if ((st_ = c.ops->out(&c, keys_out, g.G * ks, &ko)) == TDM_OK &&
        (st_ = c.ops->out(&c, values_out, g.G * tdm__fold_width(&f), &vo)) == TDM_OK &&
        (st_ = c.ops->groups_put(&c, ks, w, &g, NULL, 0, ko, NULL, NULL, NULL)) == TDM_OK &&
        (st_ = c.ops->words_keys(&c, t, ko, g.G)) == TDM_OK)
      st_ = c.ops->fold_runs(&c, &g, NULL, 0, &f, vo);
  }
  return c.ops->end(&c, st_);
}

tdm_status tdm_test_block_fold_runs(tdm_ctx *ctx, size_t ks, const void *sorted, const void *idx, size_t iw, size_t n,
                                    const void *ord, size_t ow, size_t g_want, tdm_type vt, const void *values,
                                    int agg, void *values_out) {
  const void *s, *x, *o = NULL, *v;
  void *vo;
  tdm__fold f;
  tdm__groups g;
  BLOCK_BEGIN(c, ctx);
  f.agg = agg;
  f.value_type = vt;
  if ((st_ = c.ops->in(&c, sorted, n * ks, &s)) == TDM_OK && (st_ = c.ops->in(&c, idx, n * iw, &x)) == TDM_OK &&
      (!ord || (st_ = c.ops->in(&c, ord, g_want * ow, &o)) == TDM_OK) &&
      (st_ = c.ops->in(&c, values, n * tdm_type_size(vt), &v)) == TDM_OK &&
      (st_ = c.ops->runs(&c, ks, s, x, iw, n, 0, &g)) == TDM_OK) {
    f.values = v;
    if (g.G != g_want) st_ = tdm__fail(TDM_ERR_INVALID_ARGUMENT, "test block: %zu runs, %zu expected", g.G, g_want);
    else if ((st_ = c.ops->out(&c, values_out, g.G * tdm__fold_width(&f), &vo)) == TDM_OK)
      st_ = c.ops->fold_runs(&c, &g, o, ow, &f, vo);
  }
  return c.ops->end(&c, st_);
}

tdm_status tdm_test_block_number_fold(tdm_ctx *ctx, size_t ks, const void *words, size_t n, int first_seen,
                                      tdm_type vt, const void *values, int agg, void *words_out, void *values_out,
                                      size_t *G) {
  const void *w, *v;
  void *wo, *vo;
  tdm__fold f;
  tdm__groups g;
  BLOCK_BEGIN(c, ctx);
  f.agg = agg;
  f.value_type = vt;
  if ((st_ = c.ops->in(&c, words, n * ks, &w)) == TDM_OK &&
      (st_ = c.ops->in(&c, values, n * tdm_type_size(vt), &v)) == TDM_OK) {
    f.values = v;
    if ((st_ = c.ops->number(&c, ks, w, n, (first_seen ? TDM__NUMBER_FIRST_SEEN : 0) | TDM__NUMBER_BITS, SIZE_MAX,
                             &f, &g)) == TDM_OK &&
        (st_ = c.ops->out(&c, words_out, g.G * ks, &wo)) == TDM_OK &&
        (st_ = c.ops->out(&c, values_out, g.G * tdm__fold_width(&f), &vo)) == TDM_OK) {
      *G = g.G;
      st_ = c.ops->groups_put(&c, ks, w, &g, NULL, 0, wo, NULL, NULL, vo);
    }
  }
  return c.ops->end(&c, st_);
}
