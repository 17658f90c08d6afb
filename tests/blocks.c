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

/* A (bits, row) pair of the stable sort's plain reference. */
typedef struct bits_row {
  uint64_t b;
  uint64_t i;
} bits_row;
static int cmp_bits_row(const void *x, const void *y) {
  const bits_row *a = (const bits_row *)x, *b = (const bits_row *)y;
  if (a->b != b->b) return a->b < b->b ? -1 : 1;
  return (a->i > b->i) - (a->i < b->i);
}

static int words_same(const void *got, const uint64_t *want, size_t w, size_t n, char *why, size_t len,
                      const char *block, tdm_type t) {
  size_t i;
  for (i = 0; i < n; i++)
    if (word(got, w, i) != want[i]) return fail(why, len, block, t, n, i, "differs from the plain loop");
  return 1;
}

/* The join's blocks: sort_indexed of the keys; a SUM set of the first m
 * set keys' rows (m <= 200), or of their single-row runs, against plain
 * sums; run_adds of the sorted
 * bits; join_runs of words, join_bounds of the keys in the set's sorted
 * bits, scan_total of their rows and join_fill of those runs, against
 * plain loops. */
static int check_join_blocks(tdm_ctx *ctx, int device, prop_rng *r, tdm_type t, size_t n, int numeric,
                             const void *keys, const void *set, size_t m, char *why, size_t len) {
  size_t ks = tdm_type_size(t), iw = prop_below(r, 2) ? 8 : 4, i, j, p;
  int kind = (int)prop_below(r, 4);
  bits_row *br = malloc((n > m ? n : m) * sizeof *br);
  uint64_t *want = malloc((n + 1) * 8), *vals = malloc(m * 8), *ms = malloc(n * 8), *mc = malloc(n * 8),
           *rows = malloc((n + 1) * 8), *off = malloc((n + 1) * 8), *idx = malloc(m * 8), total = 0, got_total = 0;
  void *rb = malloc(m * ks + 8);
  uint8_t *fw = malloc(n + 1);
  arr a, b, x, f, v;
  tdm_status st;
  int ok = 1;

  /* sort_indexed */
  for (i = 0; i < n; i++) br[i].b = canon(t, word(keys, ks, i), numeric), br[i].i = i;
  qsort(br, n, sizeof *br, cmp_bits_row);
  arr_init(&a, keys, n * ks, device);
  arr_init(&b, NULL, n * ks, device);
  arr_init(&x, NULL, n * iw, device);
  st = tdm_test_block_sort_indexed(ctx, t, numeric, arr_arg(&a), n, arr_arg(&b), arr_arg(&x), iw);
  arr_back(&b);
  arr_back(&x);
  if ((ok = status_ok(st, why, len, "sort_indexed", t, n))) {
    for (i = 0; i < n; i++) want[i] = br[i].b;
    ok = words_same(b.h, want, ks, n, why, len, "sort_indexed (bits)", t);
    for (i = 0; i < n; i++) want[i] = br[i].i;
    if (ok) ok = words_same(x.h, want, iw, n, why, len, "sort_indexed (rows)", t);
  }
  arr_free(&x);
  /* run_adds of the sorted bits */
  if (ok) {
    arr_init(&f, NULL, n * 8, device);
    st = tdm_test_block_run_adds(ctx, ks, arr_arg(&b), n, (uint64_t *)arr_arg(&f));
    arr_back(&f);
    for (i = 0; i < n; i++) want[i] = tdm__ops_join_run_add(i == 0 || br[i].b != br[i - 1].b, i);
    if ((ok = status_ok(st, why, len, "run_adds", t, n))) ok = words_same(f.h, want, 8, n, why, len, "run_adds", t);
    arr_free(&f);
  }
  arr_free(&b);
  /* a set with values: each key's value the wrapping sum of its rows';
   * whether its words repeat, where the backend can tell; or (runs) each
   * row a run of its own, the join by single rows' set_build_runs */
  if (ok) {
    int repeats = 2, want_rep = 0, runs = (int)prop_below(r, 2);
    for (j = 0; j < m; j++) vals[j] = runs ? tdm__ops_join_run_add(1, j) : prop_next(r);
    for (j = 0; j < m && !want_rep; j++)
      for (p = 0; p < j && !want_rep; p++) want_rep = word(set, ks, p) == word(set, ks, j);
    for (i = 0; i < n; i++) {
      uint64_t s = 0;
      fw[i] = 0;
      for (j = 0; j < m; j++)
        if (word(set, ks, j) == word(keys, ks, i)) s += vals[j], fw[i] = 1;
      want[i] = s;
    }
    arr_init(&b, set, m * ks, device);
    arr_init(&v, vals, m * 8, device);
    arr_init(&f, NULL, n * 8, device);
    arr_init(&x, NULL, n, device);
    st = runs ? tdm_test_block_set_runs(ctx, ks, arr_arg(&b), m, arr_arg(&a), n, (uint64_t *)arr_arg(&f),
                                        (uint8_t *)arr_arg(&x), &repeats)
              : tdm_test_block_set(ctx, ks, arr_arg(&b), (const uint64_t *)arr_arg(&v), m, arr_arg(&a), n,
                                   (uint64_t *)arr_arg(&f), (uint8_t *)arr_arg(&x), &repeats);
    arr_back(&f);
    arr_back(&x);
    if ((ok = status_ok(st, why, len, "set (sums)", t, n))) ok = words_same(f.h, want, 8, n, why, len, "set (sums)", t);
    if (ok) ok = found_same(x.h, fw, n, why, len, "set (sums, found)", t);
    if (ok && repeats != -1 && repeats != want_rep)
      ok = fail(why, len, "set (repeats)", t, n, m, "repeats differs from the plain loop");
    /* the hint samples every word of so few: exact, or no answer */
    if (ok) {
      int hint = 2;
      st = tdm_test_block_repeats_hint(ctx, ks, arr_arg(&b), m, &hint);
      if ((ok = status_ok(st, why, len, "repeats_hint", t, m)) && hint != -1 && hint != want_rep)
        ok = fail(why, len, "repeats_hint", t, m, m, "differs from the plain loop");
    }
    arr_free(&b);
    arr_free(&v);
    arr_free(&f);
    arr_free(&x);
  }
  /* join_runs of words: misses (0) and runs (start + 1, count) */
  if (ok) {
    for (i = 0; i < n; i++) {
      uint64_t start = prop_below(r, 1u << 30), cnt = 1 + prop_below(r, prop_below(r, 2) ? 3 : 1u << 30);
      want[i] = prop_below(r, 3) ? (start + 1) << 32 | cnt : 0;
    }
    arr_init(&v, want, n * 8, device);
    arr_init(&b, NULL, n * 8, device);
    arr_init(&f, NULL, n * 8, device);
    int with_rows = (int)prop_below(r, 4) != 0;
    uint64_t multi = 1, want_multi = 0;
    arr_init(&x, NULL, n * 8, device);
    st = tdm_test_block_join_runs(ctx, kind, (const uint64_t *)arr_arg(&v), n, (uint64_t *)arr_arg(&b),
                                  (uint64_t *)arr_arg(&f), with_rows ? (uint64_t *)arr_arg(&x) : NULL, &multi);
    arr_back(&b);
    arr_back(&f);
    if (with_rows) arr_back(&x);
    if ((ok = status_ok(st, why, len, "join_runs", t, n)))
      for (i = 0; i < n && ok; i++) {
        uint64_t w = want[i], c = w & 0xffffffffu, s0 = w ? (w >> 32) - 1 : 0;
        want_multi |= c > 1 ? TDM__OPS_JOIN_MULTI : 0;
        if (((uint64_t *)b.h)[i] != s0 || ((uint64_t *)f.h)[i] != c ||
            (with_rows && ((uint64_t *)x.h)[i] != tdm__ops_join_rows(kind, c)))
          ok = fail(why, len, "join_runs", t, n, i, "differs from the plain loop");
      }
    if (ok && multi != want_multi) ok = fail(why, len, "join_runs", t, n, n, "the multi flag differs");
    arr_free(&v);
    arr_free(&b);
    arr_free(&f);
    arr_free(&x);
  }
  /* join_bounds of the keys in the set's sorted canonical bits */
  if (ok) {
    for (j = 0; j < m; j++) br[j].b = canon(t, word(set, ks, j), numeric), br[j].i = j;
    qsort(br, m, sizeof *br, cmp_bits_row);
    for (j = 0; j < m; j++) put_word(rb, ks, j, br[j].b), idx[j] = prop_below(r, 1u << 31);
    for (i = 0; i < n; i++) {
      uint64_t q = canon(t, word(keys, ks, i), numeric);
      for (p = 0; p < m && br[p].b < q; p++) continue;
      ms[i] = p;
      for (; p < m && br[p].b == q; p++) continue;
      mc[i] = p - ms[i];
      rows[i] = tdm__ops_join_rows(kind, mc[i]);
    }
    rows[n] = 0;
    arr_init(&b, rb, m * ks, device);
    arr_init(&v, NULL, n * 8, device);
    arr_init(&f, NULL, n * 8, device);
    arr_init(&x, NULL, (n + 1) * 8, device);
    st = tdm_test_block_join_bounds(ctx, kind, t, numeric, arr_arg(&a), n, arr_arg(&b), m, (uint64_t *)arr_arg(&v),
                                    (uint64_t *)arr_arg(&f), (uint64_t *)arr_arg(&x));
    arr_back(&v);
    arr_back(&f);
    arr_back(&x);
    if ((ok = status_ok(st, why, len, "join_bounds", t, n)) &&
        (ok = words_same(v.h, ms, 8, n, why, len, "join_bounds (starts)", t)) &&
        (ok = words_same(f.h, mc, 8, n, why, len, "join_bounds (counts)", t)))
      ok = words_same(x.h, rows, 8, n + 1, why, len, "join_bounds (rows)", t);
    arr_free(&b);
    arr_free(&v);
    arr_free(&f);
    arr_free(&x);
  }
  /* scan_total of those rows */
  if (ok) {
    /* in place (the join's use) or into a second array */
    int inplace = (int)prop_below(r, 2);
    for (i = 0; i <= n; i++) off[i] = total, total += rows[i];
    arr_init(&b, rows, (n + 1) * 8, device);
    arr_init(&f, NULL, (n + 1) * 8, device);
    st = tdm_test_block_scan_total(ctx, (const uint64_t *)arr_arg(&b), n + 1,
                                   (uint64_t *)arr_arg(inplace ? &b : &f), &got_total);
    arr_back(inplace ? &b : &f);
    if (inplace) memcpy(f.h, b.h, (n + 1) * 8);
    if ((ok = status_ok(st, why, len, "scan_total", t, n)) &&
        (ok = words_same(f.h, off, 8, n + 1, why, len, "scan_total", t)) && got_total != total)
      ok = fail(why, len, "scan_total", t, n, n, "total differs");
    arr_free(&b);
    arr_free(&f);
  }
  /* join_fill of those runs, right indices idx */
  if (ok && total > 0) {
    int pairs = kind == TDM_JOIN_INNER || kind == TDM_JOIN_LEFT, single = (int)prop_below(r, 3) == 0;
    uint64_t *wl = malloc(total * 8), *wr = malloc(total * 8), o = 0;
    arr c, d, e, g;
    void *ix = malloc(m * iw + 8);
    for (j = 0; j < m; j++) put_word(ix, iw, j, idx[j]);
    /* single: no indices, the starts are right rows */
    for (i = 0; i < n; i++)
      for (j = 0; j < rows[i]; j++, o++) {
        wl[o] = i;
        wr[o] = !mc[i] ? TDM_NO_MATCH : single ? ms[i] + j : idx[ms[i] + j];
      }
    arr_init(&b, ms, n * 8, device);
    arr_init(&c, mc, n * 8, device);
    arr_init(&d, off, (n + 1) * 8, device);
    arr_init(&e, single ? NULL : ix, m * iw, device);
    arr_init(&f, NULL, total * 8, device);
    arr_init(&g, NULL, total * 8, device);
    st = tdm_test_block_join_fill(ctx, kind, (const uint64_t *)arr_arg(&b), (const uint64_t *)arr_arg(&c),
                                  (const uint64_t *)arr_arg(&d), single ? NULL : arr_arg(&e), iw, n, m,
                                  (uint64_t *)arr_arg(&f),
                                  pairs ? (uint64_t *)arr_arg(&g) : NULL, total);
    arr_back(&f);
    arr_back(&g);
    if ((ok = status_ok(st, why, len, "join_fill", t, n)) &&
        (ok = words_same(f.h, wl, 8, (size_t)total, why, len, "join_fill (left)", t)) && pairs)
      ok = words_same(g.h, wr, 8, (size_t)total, why, len, "join_fill (right)", t);
    arr_free(&b);
    arr_free(&c);
    arr_free(&d);
    arr_free(&e);
    arr_free(&f);
    arr_free(&g);
    free(ix);
    free(wl);
    free(wr);
  }
  arr_free(&a);
  free(br);
  free(want);
  free(vals);
  free(ms);
  free(mc);
  free(rows);
  free(off);
  free(idx);
  free(rb);
  free(fw);
  return ok;
}

/* A random permutation of n entries of pw bytes into perm, its inverse
 * into inv (may be NULL). */
static void random_perm(prop_rng *r, void *perm, size_t pw, uint64_t *inv, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) put_word(perm, pw, i, i);
  for (i = n; i > 1; i--) {
    size_t j = (size_t)prop_below(r, i);
    uint64_t a = word(perm, pw, i - 1), b = word(perm, pw, j);
    put_word(perm, pw, i - 1, b);
    put_word(perm, pw, j, a);
  }
  if (inv)
    for (i = 0; i < n; i++) inv[word(perm, pw, i)] = i;
}

/* The groups of the n words of width ks at w in first-seen order, as plain
 * loops find them: *G groups, group g's first row first[g] and count
 * cnt[g], row i's group code[i] (each array n entries). */
static size_t plain_groups(const void *w, size_t ks, size_t n, uint64_t *first, uint64_t *cnt, uint64_t *code) {
  bits_row *br = malloc(n * sizeof *br);
  uint64_t *num = malloc(n * 8), fr = 0;
  size_t i, k, G = 0;
  for (i = 0; i < n; i++) br[i].b = word(w, ks, i), br[i].i = i;
  qsort(br, n, sizeof *br, cmp_bits_row);
  /* each row's run's first row: the run's first member (rows ascend in a run) */
  for (k = 0; k < n; k++) {
    if (k == 0 || br[k].b != br[k - 1].b) fr = br[k].i;
    code[br[k].i] = fr;
  }
  /* the first rows numbered in row order */
  for (i = 0; i < n; i++)
    if (code[i] == i) first[G] = i, cnt[G] = 0, num[i] = G++;
  for (i = 0; i < n; i++) code[i] = num[code[i]], cnt[code[i]]++;
  free(br);
  free(num);
  return G;
}

/* tdm_unique's blocks against plain loops: the keys sorted alone and their
 * runs (outputs kept to the runs: the entries past them untouched); runs
 * of the sorted canonical bits and rows, put in a random order with random
 * ranks scattered; invert; the numbering, in first-seen order exactly,
 * else as any numbering of the same groups, its codes through random
 * ranks; the dense table. */
static int check_unique_blocks(tdm_ctx *ctx, int device, prop_rng *r, tdm_type t, size_t n, const void *keys,
                               char *why, size_t len) {
  size_t ks = tdm_type_size(t), iw = prop_below(r, 2) ? 8 : 4, ow = prop_below(r, 2) ? 8 : 4, i, k, G = 0, g = 0;
  bits_row *br = malloc(n * sizeof *br);
  uint64_t *first = malloc(n * 8), *cnt = malloc(n * 8), *code = malloc(n * 8), *want = malloc(n * 8),
           *rank = malloc(n * 8), *off = malloc((n + 1) * 8), *hit = malloc(n * 8);
  void *sb = malloc(n * ks + 8), *ix = malloc(n * 8 + 8), *ord = malloc(n * 8 + 8), *wk = malloc(n * ks + 8);
  arr a, b, x, o, q, ko, fo, co, io;
  tdm_status st;
  int ok = 1;

  for (i = 0; i < n; i++) br[i].b = canon(t, word(keys, ks, i), 0), br[i].i = i;
  qsort(br, n, sizeof *br, cmp_bits_row);
  for (k = 0; k < n; k++)
    if (k == 0 || br[k].b != br[k - 1].b) off[G++] = k;
  off[G] = n;
  arr_init(&a, keys, n * ks, device);
  /* unique_keys, over outputs that start as a pattern */
  {
    unsigned char *pat = malloc(n * 8 + 8);
    memset(pat, 0xa5, n * 8 + 8);
    arr_init(&ko, pat, n * ks, device);
    arr_init(&co, pat, n * 8, device);
    st = tdm_test_block_unique_keys(ctx, t, arr_arg(&a), n, arr_arg(&ko), (uint64_t *)arr_arg(&co), &g);
    arr_back(&ko);
    arr_back(&co);
    if ((ok = status_ok(st, why, len, "unique_keys", t, n)) && g != G)
      ok = fail(why, len, "unique_keys", t, n, g, "run count differs");
    for (k = 0; ok && k < G; k++)
      if (word(ko.h, ks, k) != word(keys, ks, br[off[k]].i) || ((uint64_t *)co.h)[k] != off[k + 1] - off[k])
        ok = fail(why, len, "unique_keys", t, n, k, "run differs from the plain loop");
    if (ok && (memcmp((char *)ko.h + G * ks, pat, (n - G) * ks) != 0 ||
               memcmp(&((uint64_t *)co.h)[G], pat, (n - G) * 8) != 0))
      ok = fail(why, len, "unique_keys", t, n, G, "wrote past the runs");
    arr_free(&ko);
    arr_free(&co);
    free(pat);
  }
  /* runs, groups_put, groups_scatter */
  if (ok) {
    int ordered = (int)prop_below(r, 3), ranked = (int)prop_below(r, 3);
    for (k = 0; k < n; k++) put_word(sb, ks, k, br[k].b), put_word(ix, iw, k, br[k].i);
    random_perm(r, ord, ow, NULL, G);
    for (k = 0; k < G; k++) rank[k] = prop_next(r);
    arr_init(&b, sb, n * ks, device);
    arr_init(&x, ix, n * iw, device);
    arr_init(&o, ord, G * ow, device);
    arr_init(&q, rank, G * 8, device);
    arr_init(&ko, NULL, G * ks, device);
    arr_init(&fo, NULL, G * 8, device);
    arr_init(&co, NULL, G * 8, device);
    arr_init(&io, NULL, n * 8, device);
    st = tdm_test_block_runs(ctx, ks, arr_arg(&b), arr_arg(&x), iw, n, (int)prop_below(r, 2), arr_arg(&a),
                             ordered ? arr_arg(&o) : NULL, ow,
                             ranked ? (const uint64_t *)arr_arg(&q) : NULL, G, arr_arg(&ko), (uint64_t *)arr_arg(&fo),
                             (uint64_t *)arr_arg(&co), (uint64_t *)arr_arg(&io), &g);
    arr_back(&ko);
    arr_back(&fo);
    arr_back(&co);
    arr_back(&io);
    if ((ok = status_ok(st, why, len, "runs", t, n)))
      for (k = 0; ok && k < G; k++) {
        size_t rr = ordered ? (size_t)word(ord, ow, k) : k, f = (size_t)br[off[rr]].i;
        if (word(ko.h, ks, k) != word(keys, ks, f) || ((uint64_t *)fo.h)[k] != f ||
            ((uint64_t *)co.h)[k] != off[rr + 1] - off[rr])
          ok = fail(why, len, "runs (groups_put)", t, n, k, "group differs from the plain loop");
      }
    for (k = 0, g = 0; ok && k < n; k++) {
      while (off[g + 1] <= k) g++;
      if (((uint64_t *)io.h)[br[k].i] != (ranked ? rank[g] : g))
        ok = fail(why, len, "runs (groups_scatter)", t, n, br[k].i, "inverse differs from the plain loop");
    }
    arr_free(&b);
    arr_free(&x);
    arr_free(&o);
    arr_free(&q);
    arr_free(&ko);
    arr_free(&fo);
    arr_free(&co);
    arr_free(&io);
  }
  /* invert */
  if (ok) {
    random_perm(r, ord, ow, want, n);
    arr_init(&o, ord, n * ow, device);
    arr_init(&io, NULL, n * 8, device);
    st = tdm_test_block_invert(ctx, arr_arg(&o), ow, n, (uint64_t *)arr_arg(&io));
    arr_back(&io);
    if ((ok = status_ok(st, why, len, "invert", t, n))) ok = words_same(io.h, want, 8, n, why, len, "invert", t);
    arr_free(&o);
    arr_free(&io);
  }
  /* number: the keys' words */
  if (ok) {
    int fs = (int)prop_below(r, 2), wf = (int)prop_below(r, 2), wc = (int)prop_below(r, 2), wx = (int)prop_below(r, 2);
    int wb = !wf || prop_below(r, 2), ranked = (int)prop_below(r, 2), too_many = 0;
    /* the mask of src/backend.h's enum tdm__number_want */
    unsigned mask = (unsigned)(fs * 1 + wf * 2 + wc * 4 + wb * 8 + wx * 16);
    size_t Gp = plain_groups(keys, ks, n, first, cnt, code), mg = prop_below(r, 4) ? SIZE_MAX : Gp / 2;
    for (i = 0; i < n; i++) want[i] = prop_next(r); /* the ranks the codes go through */
    arr_init(&q, want, n * 8, device);
    arr_init(&ko, NULL, n * ks, device);
    arr_init(&fo, NULL, n * 8, device);
    arr_init(&co, NULL, n * 8, device);
    arr_init(&io, NULL, n * 8, device);
    st = tdm_test_block_number(ctx, ks, arr_arg(&a), n, mask, mg, ranked ? (const uint64_t *)arr_arg(&q) : NULL,
                               &too_many, arr_arg(&ko), (uint64_t *)arr_arg(&fo), (uint64_t *)arr_arg(&co),
                               (uint64_t *)arr_arg(&io), &g);
    arr_back(&ko);
    arr_back(&fo);
    arr_back(&co);
    arr_back(&io);
    if ((ok = status_ok(st, why, len, "number", t, n)) && too_many && mg >= Gp)
      ok = fail(why, len, "number", t, n, Gp, "stopped below its limit of groups");
    if (ok && !too_many && g != Gp) ok = fail(why, len, "number", t, n, g, "group count differs");
    /* Each group found: its plain group by its word (the first-seen order
     * itself when asked), the same first row and count, no group twice. */
    for (k = 0; k < Gp; k++) hit[k] = 0;
    for (k = 0; ok && !too_many && k < g; k++) {
      uint64_t w = word(ko.h, ks, k);
      size_t p = fs ? k : (size_t)-1, j;
      if (!fs)
        for (j = 0; j < Gp && p == (size_t)-1; j++)
          if (word(keys, ks, first[j]) == w) p = j;
      if (p == (size_t)-1 || word(keys, ks, first[p]) != w || hit[p]++)
        ok = fail(why, len, "number", t, n, k, "group word differs, or a group twice");
      else if ((wf && ((uint64_t *)fo.h)[k] != first[p]) || (wc && ((uint64_t *)co.h)[k] != cnt[p]))
        ok = fail(why, len, "number", t, n, k, "first row or count differs");
      else rank[p] = k; /* plain group p is number k */
    }
    for (i = 0; ok && !too_many && wx && i < n; i++)
      if (((uint64_t *)io.h)[i] != (ranked ? want[rank[code[i]]] : rank[code[i]]))
        ok = fail(why, len, "number (codes)", t, n, i, "code differs");
    arr_free(&q);
    arr_free(&ko);
    arr_free(&fo);
    arr_free(&co);
    arr_free(&io);
  }
  /* dense: integer keys of a small range */
  if (ok && t != TDM_F32 && t != TDM_F64) {
    int fs = (int)prop_below(r, 2), wf = (int)prop_below(r, 2), wi = (int)prop_below(r, 2);
    uint64_t lo = prop_next(r), span = prop_below(r, 2 * (uint64_t)n + 40), *num = malloc((span + 1) * 8);
    size_t Gd = 0;
    if (ks == 4) lo = (uint32_t)lo;
    for (i = 0; i < n; i++) put_word(wk, ks, i, lo + prop_below(r, span + 1));
    (void)plain_groups(wk, ks, n, first, cnt, code); /* first-seen numbers */
    for (k = 0; k <= span; k++) num[k] = (uint64_t)-1;
    for (i = 0; i < n; i++) num[ks == 4 ? (uint32_t)(word(wk, ks, i) - lo) : word(wk, ks, i) - lo] = code[i];
    if (!fs)
      for (k = 0; k <= span; k++)
        if (num[k] != (uint64_t)-1) rank[num[k]] = Gd++; /* key order */
    arr_free(&a);
    arr_init(&a, wk, n * ks, device);
    arr_init(&ko, NULL, n * ks, device);
    arr_init(&fo, NULL, n * 8, device);
    arr_init(&co, NULL, n * 8, device);
    arr_init(&io, NULL, n * 8, device);
    st = tdm_test_block_dense(ctx, t, arr_arg(&a), n, lo, span, fs, wf, wi, arr_arg(&ko), (uint64_t *)arr_arg(&fo),
                              (uint64_t *)arr_arg(&co), (uint64_t *)arr_arg(&io), &g);
    arr_back(&ko);
    arr_back(&fo);
    arr_back(&co);
    arr_back(&io);
    ok = status_ok(st, why, len, "dense", t, n);
    for (k = 0; ok && k <= span; k++) {
      size_t p;
      if (num[k] == (uint64_t)-1) continue;
      p = fs ? (size_t)num[k] : (size_t)rank[num[k]];
      if (p >= g || word(ko.h, ks, p) != (ks == 4 ? (uint32_t)(lo + k) : lo + k) ||
          ((uint64_t *)co.h)[p] != cnt[num[k]] || (wf && ((uint64_t *)fo.h)[p] != first[num[k]]))
        ok = fail(why, len, "dense", t, n, k, "value differs from the plain loop");
    }
    for (i = 0; ok && wi && i < n; i++)
      if (((uint64_t *)io.h)[i] != (fs ? code[i] : rank[code[i]]))
        ok = fail(why, len, "dense (inverse)", t, n, i, "number differs");
    arr_free(&ko);
    arr_free(&fo);
    arr_free(&co);
    arr_free(&io);
    free(num);
  }
  arr_free(&a);
  free(br);
  free(first);
  free(cnt);
  free(code);
  free(want);
  free(rank);
  free(off);
  free(hit);
  free(sb);
  free(ix);
  free(ord);
  free(wk);
  return ok;
}

/* A run's fold as the plain loop makes it: tdm__ops_fold over its c rows
 * mem[0 .. c) (ascending) into out[p]. */
static void plain_fold(tdm_type vt, const void *v, const uint64_t *mem, size_t c, int agg, void *out, size_t p) {
  int vk = tdm__ops_value_kind(vt), kind = tdm__key_kind(vt);
  if (tdm_type_size(vt) == 4) tdm__ops_fold32((const uint32_t *)v, mem, 0, c, agg, vk, kind, out, p);
  else tdm__ops_fold64((const uint64_t *)v, mem, 0, c, agg, vk, kind, out, p);
}

/* The run of bits w among the G ascending run bits rb, or G. */
static size_t run_of(const uint64_t *rb, size_t G, uint64_t w) {
  size_t lo = 0, hi = G;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (rb[mid] < w) lo = mid + 1;
    else hi = mid;
  }
  return lo < G && rb[lo] == w ? lo : G;
}

/* tdm_group_reduce's blocks against plain loops, for a random aggregation
 * of random values: the (key, value) pairs sorted and their runs folded
 * (keys read back from the sort words); the runs of sorted bits with their
 * rows folded in a random order; the numbering's fold (on a backend that
 * folds in any order, an order-free aggregation), each group found by its
 * word, in first-seen order when asked. Results compared byte for byte. */
static int check_group_blocks(tdm_ctx *ctx, int device, prop_rng *r, tdm_type t, size_t n, const void *keys,
                              char *why, size_t len) {
  tdm_type vt = types[prop_below(r, 6)];
  int agg = 1 + (int)prop_below(r, 6), ok = 1;
  size_t ks = tdm_type_size(t), vs = tdm_type_size(vt), iw = prop_below(r, 2) ? 8 : 4, ow = prop_below(r, 2) ? 8 : 4;
  size_t fw = agg == TDM_AGG_MEAN ? 8 : vs, G = 0, g = 0, i, k;
  bits_row *br = malloc(n * sizeof *br);
  uint64_t *mem = malloc(n * 8), *off = malloc((n + 1) * 8), *rb = malloc(n * 8), *hit = malloc(n * 8);
  void *vals = malloc(n * vs + 8), *wantv = malloc(n * 8 + 8), *sb = malloc(n * ks + 8), *ix = malloc(n * 8 + 8),
       *ord = malloc(n * 8 + 8);
  arr a, v, b, x, o, ko, vo;
  tdm_status st;

  prop_fill(r, vt, vals, n, (prop_dist)prop_below(r, PROP_DIST_COUNT));
  for (i = 0; i < n; i++) br[i].b = canon(t, word(keys, ks, i), 0), br[i].i = i;
  qsort(br, n, sizeof *br, cmp_bits_row);
  for (k = 0; k < n; k++) {
    mem[k] = br[k].i;
    if (k == 0 || br[k].b != br[k - 1].b) rb[G] = br[k].b, off[G++] = k;
  }
  off[G] = n;
  for (k = 0; k < G; k++) plain_fold(vt, vals, mem + off[k], off[k + 1] - off[k], agg, wantv, k);
  arr_init(&a, keys, n * ks, device);
  arr_init(&v, vals, n * vs, device);
  /* sort_pairs, runs, groups_put, words_keys, fold_runs */
  arr_init(&ko, NULL, n * ks, device);
  arr_init(&vo, NULL, n * fw, device);
  st = tdm_test_block_fold_pairs(ctx, t, arr_arg(&a), vt, arr_arg(&v), n, agg, arr_arg(&ko), arr_arg(&vo), &g);
  arr_back(&ko);
  arr_back(&vo);
  if ((ok = status_ok(st, why, len, "fold_pairs", t, n)) && g != G)
    ok = fail(why, len, "fold_pairs", t, n, g, "run count differs");
  for (k = 0; ok && k < G; k++)
    if (word(ko.h, ks, k) != word(keys, ks, mem[off[k]]))
      ok = fail(why, len, "fold_pairs", t, n, k, "key differs from the plain loop");
  if (ok && memcmp(vo.h, wantv, G * fw) != 0) ok = fail(why, len, "fold_pairs", t, n, 0, "folds differ");
  arr_free(&ko);
  arr_free(&vo);
  /* runs of sorted bits with rows, folded in a random order */
  if (ok) {
    int ordered = (int)prop_below(r, 2);
    for (k = 0; k < n; k++) put_word(sb, ks, k, br[k].b), put_word(ix, iw, k, br[k].i);
    random_perm(r, ord, ow, NULL, G);
    arr_init(&b, sb, n * ks, device);
    arr_init(&x, ix, n * iw, device);
    arr_init(&o, ord, G * ow, device);
    arr_init(&vo, NULL, n * fw, device);
    st = tdm_test_block_fold_runs(ctx, ks, arr_arg(&b), arr_arg(&x), iw, n, ordered ? arr_arg(&o) : NULL, ow, G, vt,
                                  arr_arg(&v), agg, arr_arg(&vo));
    arr_back(&vo);
    ok = status_ok(st, why, len, "fold_runs", t, n);
    for (k = 0; ok && k < G; k++) {
      size_t q = ordered ? (size_t)word(ord, ow, k) : k;
      if (memcmp((char *)vo.h + k * fw, (char *)wantv + q * fw, fw) != 0)
        ok = fail(why, len, "fold_runs", t, n, k, "fold differs from the plain loop");
    }
    arr_free(&b);
    arr_free(&x);
    arr_free(&o);
    arr_free(&vo);
  }
  /* number with a fold: the keys' words */
  if (ok) {
    int fs = (int)prop_below(r, 2), nagg = agg;
    if (tdm_test_block_hash_groups(ctx) != 0 && !tdm__ops_order_free(agg, tdm__ops_value_kind(vt))) {
      nagg = vt == TDM_F32 || vt == TDM_F64 ? TDM_AGG_MIN + (int)prop_below(r, 2) : TDM_AGG_SUM + (int)prop_below(r, 3);
      fw = vs;
      for (k = 0; k < G; k++) plain_fold(vt, vals, mem + off[k], off[k + 1] - off[k], nagg, wantv, k);
    }
    arr_init(&ko, NULL, n * ks, device);
    arr_init(&vo, NULL, n * fw, device);
    st = tdm_test_block_number_fold(ctx, ks, arr_arg(&a), n, fs, vt, arr_arg(&v), nagg, arr_arg(&ko), arr_arg(&vo),
                                    &g);
    arr_back(&ko);
    arr_back(&vo);
    if ((ok = status_ok(st, why, len, "number (fold)", t, n)) && g != G)
      ok = fail(why, len, "number (fold)", t, n, g, "group count differs");
    for (k = 0; k < G; k++) hit[k] = 0;
    for (k = 0; ok && k < G; k++) {
      size_t q = run_of(rb, G, canon(t, word(ko.h, ks, k), 0));
      if (q == G || hit[q]++) ok = fail(why, len, "number (fold)", t, n, k, "group word unknown, or a group twice");
      else if (fs && k > 0 && mem[off[q]] < mem[off[run_of(rb, G, canon(t, word(ko.h, ks, k - 1), 0))]])
        ok = fail(why, len, "number (fold)", t, n, k, "not in first-seen order");
      else if (memcmp((char *)vo.h + k * fw, (char *)wantv + q * fw, fw) != 0)
        ok = fail(why, len, "number (fold)", t, n, k, "fold differs from the plain loop");
    }
    arr_free(&ko);
    arr_free(&vo);
  }
  arr_free(&a);
  arr_free(&v);
  free(br);
  free(mem);
  free(off);
  free(rb);
  free(hit);
  free(vals);
  free(wantv);
  free(sb);
  free(ix);
  free(ord);
  return ok;
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
    st = tdm_test_block_set(ctx, ks, arr_arg(&b), NULL, m, arr_arg(&a), n, NULL, (uint8_t *)arr_arg(&f), NULL);
    arr_back(&f);
    if ((ok = status_ok(st, why, len, "set", t, n))) ok = found_same(f.h, want, n, why, len, "set", t);
    arr_free(&b);
    arr_free(&f);
  }
  /* set valued at rows: the set's distinct words, in a random order */
  if (ok) {
    size_t d = 0, j;
    uint64_t *vw = malloc(n * 8 + 8), *pos = malloc(m * 8 + 8);
    void *dk = malloc(m * ks + 8);
    arr v;
    for (i = 0; i < m; i++)
      if (i == 0 || word(ref, ks, i) != word(ref, ks, i - 1)) put_word(ref, ks, d++, word(ref, ks, i));
    random_perm(r, pos, 8, NULL, d);
    for (j = 0; j < d; j++) put_word(dk, ks, j, word(ref, ks, pos[j]));
    for (i = 0; i < n; i++) {
      vw[i] = 0;
      for (j = 0; j < d; j++)
        if (word(dk, ks, j) == word(keys, ks, i)) vw[i] = j;
    }
    arr_init(&b, dk, d * ks, device);
    arr_init(&v, NULL, n * 8, device);
    arr_init(&f, NULL, n, device);
    st = tdm_test_block_set_rows(ctx, ks, arr_arg(&b), d, arr_arg(&a), n, (uint64_t *)arr_arg(&v),
                                 (uint8_t *)arr_arg(&f), (int)(prop_next(r) & 1u));
    arr_back(&v);
    arr_back(&f);
    if ((ok = status_ok(st, why, len, "set_rows", t, n)) && (ok = found_same(f.h, want, n, why, len, "set_rows", t)))
      ok = words_same(v.h, vw, 8, n, why, len, "set_rows (values)", t);
    arr_free(&b);
    arr_free(&v);
    arr_free(&f);
    free(vw);
    free(pos);
    free(dk);
  }
  if (ok) ok = check_join_blocks(ctx, device, r, t, n, numeric, keys, set, m < 200 ? m : 200, why, len);
  if (ok) ok = check_unique_blocks(ctx, device, r, t, n, keys, why, len);
  if (ok) ok = check_group_blocks(ctx, device, r, t, n, keys, why, len);
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
