/* blocks.c: see blocks.h. */
#include "blocks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hooks/hooks.h"
#include "prop.h"
#include "tandem/detail/ops_keys.h"

static const tdm_type types[6] = {TDM_U32, TDM_U64, TDM_I32, TDM_I64, TDM_F32, TDM_F64};

/* A caller array: host memory, or a device copy of it. */
typedef struct arr {
  void *h, *d;
  size_t bytes;
} arr;

static void arr_init(arr *a, const void *h, size_t bytes, int device) {
  a->bytes = bytes ? bytes : 1;
  a->h = calloc(1, a->bytes);
  if (h && bytes) memcpy(a->h, h, bytes);
  a->d = device ? prop_dev_alloc(a->bytes, 0) : NULL;
  if (a->d) prop_h2d(a->d, a->h, a->bytes);
}
static void *arr_arg(const arr *a) { return a->d ? a->d : a->h; }
static void arr_back(arr *a) {
  if (a->d) prop_d2h(a->h, a->d, a->bytes);
}
static void arr_free(arr *a) {
  if (a->d) prop_dev_free(a->d);
  free(a->h);
}

static uint64_t word(const void *p, size_t ks, size_t i) {
  return ks == 4 ? ((const uint32_t *)p)[i] : ((const uint64_t *)p)[i];
}
static void put_word(void *p, size_t ks, size_t i, uint64_t w) {
  if (ks == 4) ((uint32_t *)p)[i] = (uint32_t)w;
  else ((uint64_t *)p)[i] = w;
}
static uint64_t canon(tdm_type t, uint64_t raw, int numeric) {
  int kind = tdm__key_kind(t);
  return tdm_type_size(t) == 4 ? tdm__ops_canon_bits32((uint32_t)raw, kind, numeric)
                               : tdm__ops_canon_bits64(raw, kind, numeric);
}
static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}
static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}
/* 1 if w is among the m ascending words of s. */
static int has(const void *s, size_t ks, size_t m, uint64_t w) {
  uint32_t w32 = (uint32_t)w;
  return ks == 4 ? bsearch(&w32, s, m, 4, cmp_u32) != NULL : bsearch(&w, s, m, 8, cmp_u64) != NULL;
}

static int fail(char *why, size_t len, const char *block, tdm_type t, size_t n, size_t at, const char *what) {
  snprintf(why, len, "%s, %s, n %zu: %s at %zu", block, tdm_type_name(t), n, what, at);
  return 0;
}

static int status_ok(tdm_status st, char *why, size_t len, const char *block, tdm_type t, size_t n) {
  if (st == TDM_OK) return 1;
  snprintf(why, len, "%s, %s, n %zu: %s (%s)", block, tdm_type_name(t), n, tdm_status_name(st), tdm_last_error());
  return 0;
}

/* found[i] against the plain answer for each query. */
static int found_same(const uint8_t *found, const uint8_t *want, size_t n, char *why, size_t len, const char *block,
                      tdm_type t) {
  size_t i;
  for (i = 0; i < n; i++)
    if (found[i] != want[i]) return fail(why, len, block, t, n, i, "found differs from the plain loop");
  return 1;
}

static int check_one(tdm_ctx *ctx, int device, prop_rng *r, tdm_type t, size_t n, char *why, size_t len) {
  size_t ks = tdm_type_size(t), m = 1 + (size_t)prop_below(r, n + 1), i;
  int numeric = (t == TDM_F32 || t == TDM_F64) && prop_below(r, 2);
  void *keys = malloc(n * ks + 8), *set = malloc(m * ks + 8), *ref = malloc((n > m ? n : m) * ks + 8);
  uint8_t *want = malloc(n + 1);
  arr a, b, f;
  tdm_status st;
  int ok = 1;

  prop_fill(r, t, keys, n, (prop_dist)prop_below(r, PROP_DIST_COUNT));
  prop_fill(r, t, set, m, (prop_dist)prop_below(r, PROP_DIST_COUNT));
  /* Queries share keys with the set about half the time. */
  for (i = 0; i < n; i++)
    if (prop_below(r, 2)) put_word(keys, ks, i, word(set, ks, (size_t)prop_below(r, m)));

  /* fill */
  {
    int byte = (int)prop_below(r, 256);
    arr_init(&f, NULL, n, device);
    st = tdm_test_block_fill(ctx, arr_arg(&f), byte, n);
    arr_back(&f);
    if (!(ok = status_ok(st, why, len, "fill", t, n))) goto out_f;
    for (i = 0; i < n && ok; i++)
      if (((uint8_t *)f.h)[i] != (uint8_t)byte) ok = fail(why, len, "fill", t, n, i, "byte differs");
  out_f:
    arr_free(&f);
    if (!ok) goto done;
  }
  /* canon_bits */
  arr_init(&a, keys, n * ks, device);
  arr_init(&b, NULL, n * ks, device);
  st = tdm_test_block_canon_bits(ctx, t, arr_arg(&a), n, numeric, arr_arg(&b));
  arr_back(&b);
  if ((ok = status_ok(st, why, len, "canon_bits", t, n)))
    for (i = 0; i < n && ok; i++)
      if (word(b.h, ks, i) != canon(t, word(keys, ks, i), numeric))
        ok = fail(why, len, "canon_bits", t, n, i, "bits differ");
  arr_free(&b);
  /* sort_words (the keys' raw words) */
  if (ok) {
    arr_init(&b, NULL, n * ks, device);
    st = tdm_test_block_sort_words(ctx, ks, arr_arg(&a), n, arr_arg(&b));
    arr_back(&b);
    memcpy(ref, keys, n * ks);
    qsort(ref, n, ks, ks == 4 ? cmp_u32 : cmp_u64);
    if ((ok = status_ok(st, why, len, "sort_words", t, n)) && memcmp(b.h, ref, n * ks) != 0)
      ok = fail(why, len, "sort_words", t, n, 0, "not the words ascending");
    arr_free(&b);
  }
  /* search: the set's canonical bits sorted */
  if (ok) {
    for (i = 0; i < m; i++) put_word(ref, ks, i, canon(t, word(set, ks, i), numeric));
    qsort(ref, m, ks, ks == 4 ? cmp_u32 : cmp_u64);
    for (i = 0; i < n; i++) want[i] = (uint8_t)has(ref, ks, m, canon(t, word(keys, ks, i), numeric));
    arr_init(&b, ref, m * ks, device);
    arr_init(&f, NULL, n, device);
    st = tdm_test_block_search(ctx, t, numeric, arr_arg(&b), m, arr_arg(&a), n, (uint8_t *)arr_arg(&f));
    arr_back(&f);
    if ((ok = status_ok(st, why, len, "search", t, n))) ok = found_same(f.h, want, n, why, len, "search", t);
    arr_free(&b);
    arr_free(&f);
  }
  /* set: raw words */
  if (ok) {
    memcpy(ref, set, m * ks);
    qsort(ref, m, ks, ks == 4 ? cmp_u32 : cmp_u64);
    for (i = 0; i < n; i++) want[i] = (uint8_t)has(ref, ks, m, word(keys, ks, i));
    arr_init(&b, set, m * ks, device);
    arr_init(&f, NULL, n, device);
    st = tdm_test_block_set(ctx, ks, arr_arg(&b), m, arr_arg(&a), n, (uint8_t *)arr_arg(&f));
    arr_back(&f);
    if ((ok = status_ok(st, why, len, "set", t, n))) ok = found_same(f.h, want, n, why, len, "set", t);
    arr_free(&b);
    arr_free(&f);
  }
  /* bits: integer keys of a small range (every set key inside it), the
   * queries around it and far from it */
  if (ok && t != TDM_F32 && t != TDM_F64) {
    uint64_t lo = prop_next(r), span = prop_below(r, 3 * (uint64_t)m + 70);
    if (ks == 4) lo = (uint32_t)lo;
    for (i = 0; i < m; i++) put_word(set, ks, i, lo + prop_below(r, span + 1));
    for (i = 0; i < n; i++)
      if (prop_below(r, 4)) put_word(keys, ks, i, lo + prop_below(r, span + 40) - 20);
    memcpy(ref, set, m * ks);
    qsort(ref, m, ks, ks == 4 ? cmp_u32 : cmp_u64);
    for (i = 0; i < n; i++) {
      uint64_t w = word(keys, ks, i), s = ks == 4 ? (uint32_t)(w - lo) : w - lo;
      want[i] = (uint8_t)(s <= span && has(ref, ks, m, w));
    }
    arr_free(&a);
    arr_init(&a, keys, n * ks, device);
    arr_init(&b, set, m * ks, device);
    arr_init(&f, NULL, n, device);
    st = tdm_test_block_bits(ctx, ks, arr_arg(&b), m, lo, span, arr_arg(&a), n, (uint8_t *)arr_arg(&f));
    arr_back(&f);
    if ((ok = status_ok(st, why, len, "bits", t, n))) ok = found_same(f.h, want, n, why, len, "bits", t);
    arr_free(&b);
    arr_free(&f);
  }
  arr_free(&a);
done:
  free(keys);
  free(set);
  free(ref);
  free(want);
  return ok;
}

int blocks_check(tdm_ctx *ctx, int device, uint64_t case_id, size_t max_n, char *why, size_t why_len) {
  prop_rng r;
  size_t sizes[12], ns, s;
  int ti;
  prop_rng_init(&r, case_id);
  ns = prop_sizes(&r, sizes, 12, max_n);
  for (ti = 0; ti < 6; ti++)
    for (s = 0; s < ns; s++)
      if (sizes[s] > 0 && !check_one(ctx, device, &r, types[ti], sizes[s], why, why_len)) return 0;
  return 1;
}
