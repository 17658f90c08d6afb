/* ops_blocks.c: the test programs' handle on the data operations' building
 * blocks (src/backend.h): each runs one block (or a set's build and probe,
 * a bit table's fill, set and test) in a call of its own on ctx's backend,
 * so the caller's arrays may be host or device memory as for a data
 * operation, staged through the call's memory. */
#include "../../src/backend.h"
#include "hooks.h"

/* Starts a call on ctx, or returns its status. */
#define BLOCK_BEGIN(c, ctx)                    \
  tdm__call c;                                 \
  tdm_status st_;                              \
  c.ctx = (ctx);                               \
  c.fn = "test block";                         \
  c.ops = (ctx)->be->ops;                      \
  if ((st_ = c.ops->begin(&c)) != TDM_OK) return st_

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

tdm_status tdm_test_block_set(tdm_ctx *ctx, size_t ks, const void *keys, size_t m, const void *queries, size_t n,
                              uint8_t *found_out) {
  const void *k, *q;
  void *f;
  BLOCK_BEGIN(c, ctx);
  if ((st_ = c.ops->in(&c, keys, m * ks, &k)) == TDM_OK && (st_ = c.ops->in(&c, queries, n * ks, &q)) == TDM_OK &&
      (st_ = c.ops->out(&c, found_out, n, &f)) == TDM_OK && (st_ = c.ops->set_build(&c, ks, k, m)) == TDM_OK)
    st_ = c.ops->set_probe(&c, q, n, (uint8_t *)f);
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
