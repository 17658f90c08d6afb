/*
 * fuzz_model.h: what the fuzz targets share: a context per thread count, and
 * the reference map the structure fuzzers check against: an
 * unsorted array of (key, value) words with linear search. Small and obviously
 * right, which is the point. Keys and values are raw 64-bit words; 32-bit
 * types use the low half.
 */
#ifndef TANDEM_FUZZ_MODEL_H
#define TANDEM_FUZZ_MODEL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tandem/tandem.h>

#include "../../include/tandem/detail/keybits.h"

/* A mismatch with the model: the reason on stderr, then abort (libFuzzer
 * keeps the input that did it). */
#define FAIL(...) (fprintf(stderr, __VA_ARGS__), fputc('\n', stderr), abort())

typedef struct model {
  uint64_t *k, *v;
  size_t n, cap;
} model;

static inline long model_find(const model *m, uint64_t k) {
  size_t i;
  for (i = 0; i < m->n; i++)
    if (m->k[i] == k) return (long)i;
  return -1;
}

static inline void model_put(model *m, uint64_t k, uint64_t v) {
  if (m->n == m->cap) {
    m->cap = m->cap ? 2 * m->cap : 64;
    m->k = (uint64_t *)realloc(m->k, m->cap * 8);
    m->v = (uint64_t *)realloc(m->v, m->cap * 8);
    if (!m->k || !m->v) abort();
  }
  m->k[m->n] = k;
  m->v[m->n] = v;
  m->n++;
}

static inline int model_erase(model *m, uint64_t k) {
  long i = model_find(m, k);
  if (i < 0) return 0;
  m->k[i] = m->k[m->n - 1];
  m->v[i] = m->v[m->n - 1];
  m->n--;
  return 1;
}

static inline int kind_of(tdm_type t) {
  return (t == TDM_I32 || t == TDM_I64) ? TDM_KIND_SIGNED
         : (t == TDM_F32 || t == TDM_F64) ? TDM_KIND_FLOAT : TDM_KIND_UNSIGNED;
}

/* Compares two values of type t in the contract's order. */
static inline int value_cmp(tdm_type t, uint64_t a, uint64_t b) {
  if (tdm_type_size(t) == 4) return tdm__cmp_raw32((uint32_t)a, (uint32_t)b, kind_of(t));
  return tdm__cmp_raw64(a, b, kind_of(t));
}

/* The value a duplicate policy keeps when `incoming` meets `old`. */
static inline uint64_t merge_value(tdm_dup p, tdm_type vt, uint64_t old, uint64_t incoming) {
  uint64_t mask = tdm_type_size(vt) == 4 ? 0xffffffffull : ~0ull;
  switch (p) {
  case TDM_DUP_KEEP_FIRST: return old;
  case TDM_DUP_KEEP_LAST: return incoming;
  case TDM_DUP_SUM: return (old + incoming) & mask;
  case TDM_DUP_MIN: return value_cmp(vt, incoming, old) < 0 ? incoming : old;
  case TDM_DUP_MAX: return value_cmp(vt, incoming, old) > 0 ? incoming : old;
  }
  return old;
}

/* Reads a word of `bytes` bytes from a little-endian stream; 0 past the end. */
static inline uint64_t take(const uint8_t **p, const uint8_t *end, size_t bytes) {
  uint64_t x = 0;
  size_t i;
  for (i = 0; i < bytes && *p < end; i++, (*p)++) x |= (uint64_t)**p << (8 * i);
  return x;
}

static inline void put_word(void *arr, size_t i, size_t width, uint64_t x) {
  if (width == 4) ((uint32_t *)arr)[i] = (uint32_t)x;
  else ((uint64_t *)arr)[i] = x;
}

static inline uint64_t get_word(const void *arr, size_t i, size_t width) {
  return width == 4 ? ((const uint32_t *)arr)[i] : ((const uint64_t *)arr)[i];
}

/* Inserts a batch (keys of ks bytes, values of vs bytes) into the model one
 * pair at a time, in index order, duplicates resolved by policy p. */
static inline void model_insert_batch(model *m, const void *keys, const void *vals, size_t n, size_t ks, size_t vs,
                                      tdm_dup p, tdm_type vt) {
  size_t i;
  for (i = 0; i < n; i++) {
    uint64_t k = get_word(keys, i, ks), v = get_word(vals, i, vs);
    long at = model_find(m, k);
    if (at < 0) model_put(m, k, v);
    else m->v[at] = merge_value(p, vt, m->v[at], v);
  }
}

/* Erases a batch from the model; returns how many keys it held. */
static inline size_t model_erase_batch(model *m, const void *keys, size_t n, size_t ks) {
  size_t i, erased = 0;
  for (i = 0; i < n; i++) erased += (size_t)model_erase(m, get_word(keys, i, ks));
  return erased;
}

/* Checks an export of n entries: every one must be in the model with its
 * value (n equal to the model's size, so it holds nothing else). */
static inline void model_check_export(const model *m, const void *keys, const void *vals, size_t n, size_t ks,
                                      size_t vs) {
  size_t i;
  for (i = 0; i < n; i++) {
    long j = model_find(m, get_word(keys, i, ks));
    if (j < 0 || m->v[j] != get_word(vals, i, vs)) FAIL("export: entry %zu not in the model", i);
  }
}

/* A CPU context with 1 thread (which == 0) or 2 (which == 1), made once per
 * process and kept: fuzz runs reuse them so each input costs no setup. */
static inline tdm_ctx *fuzz_ctx(int which) {
  static tdm_ctx *ctxs[2];
  if (!ctxs[which]) {
    tdm_ctx_opts co = {TDM_BACKEND_CPU, which ? 2 : 1, 0, NULL, 0, NULL};
    if (tdm_ctx_create(&co, &ctxs[which]) != TDM_OK) abort();
  }
  return ctxs[which];
}

#endif /* TANDEM_FUZZ_MODEL_H */
