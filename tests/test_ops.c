/*
 * test_ops.c: the data operations (tandem/ops.h).
 *
 *  - ops_props: on every key type, every key distribution of prop.h (boundary
 *    values: both zeros, NaNs of both signs with payloads, infinities), both
 *    equalities and both orders, tdm_unique, tdm_group_reduce (every agg, on
 *    several value types) and tdm_join (every kind) are compared with a plain
 *    oracle (qsort of (key, index) and nested loops), with each method forced
 *    (hash, sort, dense) and the library's own choice, on one thread and on
 *    all; integer keys also drawn from small ranges (at zero, across the
 *    sign, at the type's extremes), where the dense method applies.
 *    A failing input is shrunk by prop_check.
 *  - ops_dense: the dense method's primitives against plain references:
 *    the min/max pass, isin by the bit table (queries in and out of the
 *    set's range), on small ranges of every integer type; its 16-bit
 *    counts past 65535 rows of one key, on one thread and on all.
 *  - ops_unit: small examples a reader can follow, the float equalities,
 *    summation order, join capacity (size query, exact refusal, nothing
 *    written), skew (all equal, one key with 90 % of the rows, 10^4 x 10^4
 *    matches counted with cap = 0), isin; skewed joins written in full
 *    against a sort-based oracle (one left row with 200000 matches,
 *    2000 x 2000 of one key among unmatched rows, hot rows between long
 *    stretches of unmatched ones) on 1 and 4 threads.
 *  - ops_bad: every argument of every call refused with its status.
 *  - ops_oom: allocation failure at every allocation point of each call and
 *    method: the right status, inputs untouched, then the call succeeds.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blocks.h"
#include "hooks/hooks.h"
#include "prop.h"

#define OK(call)                                                                                          \
  do {                                                                                                    \
    tdm_status s_ = (call);                                                                               \
    cr_assert(s_ == TDM_OK, "%s -> %s: %s (TANDEM_SEED=%" PRIu64 ")", #call, tdm_status_name(s_),         \
              tdm_last_error(), prop_seed());                                                             \
  } while (0)

#define FAILS(st, call)                                                                                   \
  do {                                                                                                    \
    tdm_status s_ = (call);                                                                               \
    cr_assert(s_ == (st), "%s -> %s, expected %s (%s)", #call, tdm_status_name(s_), tdm_status_name(st),  \
              tdm_last_error());                                                                          \
    cr_assert(tdm_last_error()[0] != 0, "%s: no message", #call);                                         \
  } while (0)


/* ---- the oracle ------------------------------------------------------------ */

static int is_float(tdm_type t) { return t == TDM_F32 || t == TDM_F64; }

/* Canonical bits of element i under the equality (the rule of ops.h, written
 * out here independently of the library's helper). */
static uint64_t canon(tdm_type t, const void *keys, size_t i, int numeric) {
  if (tdm_type_size(t) == 4) {
    uint32_t v = ((const uint32_t *)keys)[i];
    if (numeric && is_float(t)) {
      float f;
      memcpy(&f, &v, 4);
      if (f == 0.0f) v = 0;
      else if (isnan(f)) v = 0x7fc00000u;
    }
    return v;
  } else {
    uint64_t v = ((const uint64_t *)keys)[i];
    if (numeric && is_float(t)) {
      double f;
      memcpy(&f, &v, 8);
      if (f == 0.0) v = 0;
      else if (isnan(f)) v = 0x7ff8000000000000ull;
    }
    return v;
  }
}

typedef struct orc {
  size_t G;
  uint64_t *first, *count, *inverse; /* G, G, n */
  size_t **members;                  /* G lists, ascending */
} orc;

static tdm_type g_sort_type;
static const uint64_t *g_sort_canon;
static int cmp_idx(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  uint64_t kx = g_sort_canon[x], ky = g_sort_canon[y];
  int c;
  if (tdm_type_size(g_sort_type) == 4) {
    uint32_t ax = (uint32_t)kx, ay = (uint32_t)ky;
    c = prop_cmp_keys(g_sort_type, &ax, &ay);
  } else {
    c = prop_cmp_keys(g_sort_type, &kx, &ky);
  }
  if (c) return c;
  return (x > y) - (x < y);
}

static orc oracle(tdm_type t, const void *keys, size_t n, int numeric, int first_seen) {
  orc o;
  size_t *idx = malloc((n + 1) * sizeof *idx), i, g, r = 0;
  uint64_t *cb = malloc((n + 1) * 8);
  size_t *gorder;
  memset(&o, 0, sizeof o);
  for (i = 0; i < n; i++) {
    cb[i] = canon(t, keys, i, numeric);
    idx[i] = i;
  }
  g_sort_type = t;
  g_sort_canon = cb;
  qsort(idx, n, sizeof *idx, cmp_idx);
  o.first = calloc(n + 1, 8);
  o.count = calloc(n + 1, 8);
  o.inverse = calloc(n + 1, 8);
  o.members = calloc(n + 1, sizeof *o.members);
  /* Runs in ascending order. */
  for (i = 0; i < n; i = r) {
    size_t k;
    for (r = i; r < n && cb[idx[r]] == cb[idx[i]]; r++) {}
    o.first[o.G] = idx[i];
    o.count[o.G] = r - i;
    o.members[o.G] = malloc((r - i) * sizeof(size_t));
    for (k = i; k < r; k++) o.members[o.G][k - i] = idx[k];
    o.G++;
  }
  if (first_seen) { /* selection sort of groups by first index: plain */
    gorder = malloc((o.G + 1) * sizeof *gorder);
    for (g = 0; g < o.G; g++) gorder[g] = g;
    for (g = 0; g < o.G; g++) {
      size_t best = g, h;
      for (h = g + 1; h < o.G; h++)
        if (o.first[gorder[h]] < o.first[gorder[best]]) best = h;
      if (best != g) {
        size_t tmp = gorder[g];
        gorder[g] = gorder[best];
        gorder[best] = tmp;
      }
    }
    {
      uint64_t *f2 = malloc((o.G + 1) * 8), *c2 = malloc((o.G + 1) * 8);
      size_t **m2 = malloc((o.G + 1) * sizeof *m2);
      for (g = 0; g < o.G; g++) {
        f2[g] = o.first[gorder[g]];
        c2[g] = o.count[gorder[g]];
        m2[g] = o.members[gorder[g]];
      }
      memcpy(o.first, f2, o.G * 8);
      memcpy(o.count, c2, o.G * 8);
      memcpy(o.members, m2, o.G * sizeof *m2);
      free(f2);
      free(c2);
      free(m2);
    }
    free(gorder);
  }
  for (g = 0; g < o.G; g++)
    for (i = 0; i < o.count[g]; i++) o.inverse[o.members[g][i]] = g;
  free(idx);
  free(cb);
  return o;
}

static void oracle_free(orc *o) {
  size_t g;
  for (g = 0; g < o->G; g++) free(o->members[g]);
  free(o->members);
  free(o->first);
  free(o->count);
  free(o->inverse);
}

/* The quiet NaNs a NaN sum is written as. */
static float canon_nan32(void) {
  uint32_t u = 0x7fc00000u;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static double canon_nan64(void) {
  uint64_t u = 0x7ff8000000000000ull;
  double d;
  memcpy(&d, &u, 8);
  return d;
}

/* The oracle's fold of group g for agg, written into out (value bytes). */
static void oracle_fold(const orc *o, size_t g, tdm_type vt, const void *vals, tdm_agg agg, void *out) {
  size_t c = o->count[g], k;
  const size_t *m = o->members[g];
  size_t vs = tdm_type_size(vt);
  const char *v = (const char *)vals;
  if (agg == TDM_AGG_COUNT) {
    uint64_t x = c;
    memcpy(out, &x, 8);
    return;
  }
  if (agg == TDM_AGG_FIRST) { memcpy(out, v + m[0] * vs, vs); return; }
  if (agg == TDM_AGG_LAST) { memcpy(out, v + m[c - 1] * vs, vs); return; }
  if (agg == TDM_AGG_MIN || agg == TDM_AGG_MAX) {
    const char *best = v + m[0] * vs;
    for (k = 1; k < c; k++) {
      int cmp = prop_cmp_keys(vt, v + m[k] * vs, best);
      if ((agg == TDM_AGG_MIN && cmp < 0) || (agg == TDM_AGG_MAX && cmp > 0)) best = v + m[k] * vs;
    }
    memcpy(out, best, vs);
    return;
  }
  if (agg == TDM_AGG_MEAN) {
    double s = 0;
    for (k = 0; k < c; k++) {
      const char *p = v + m[k] * vs;
      double x;
      switch (vt) {
      case TDM_U32: x = (double)*(const uint32_t *)p; break;
      case TDM_U64: x = (double)*(const uint64_t *)p; break;
      case TDM_I32: x = (double)*(const int32_t *)p; break;
      case TDM_I64: x = (double)*(const int64_t *)p; break;
      case TDM_F32: x = (double)*(const float *)p; break;
      default: x = *(const double *)p; break;
      }
      s = k ? s + x : x;
    }
    s /= (double)c;
    if (isnan(s)) s = canon_nan64();
    memcpy(out, &s, 8);
    return;
  }
  /* SUM: wrapping integers, left fold for floats. */
  switch (vt) {
  case TDM_U32: case TDM_I32: {
    uint32_t s = 0;
    for (k = 0; k < c; k++) s += *(const uint32_t *)(v + m[k] * vs);
    memcpy(out, &s, 4);
    break;
  }
  case TDM_U64: case TDM_I64: {
    uint64_t s = 0;
    for (k = 0; k < c; k++) s += *(const uint64_t *)(v + m[k] * vs);
    memcpy(out, &s, 8);
    break;
  }
  case TDM_F32: {
    float s = *(const float *)(v + m[0] * vs);
    for (k = 1; k < c; k++) s += *(const float *)(v + m[k] * vs);
    if (isnan(s)) s = canon_nan32();
    memcpy(out, &s, 4);
    break;
  }
  default: {
    double s = *(const double *)(v + m[0] * vs);
    for (k = 1; k < c; k++) s += *(const double *)(v + m[k] * vs);
    if (isnan(s)) s = canon_nan64();
    memcpy(out, &s, 8);
    break;
  }
  }
}

/* ---- the properties -------------------------------------------------------- */

typedef struct env {
  tdm_type t;
  unsigned flags;
  tdm_ctx *ctx[2]; /* one thread, all threads */
  uint64_t case_id;
} env;

#define NMETHODS 4
static const int methods[NMETHODS] = {TDM_TEST_OPS_HASH, TDM_TEST_OPS_SORT, TDM_TEST_OPS_DENSE, TDM_TEST_OPS_AUTO};

#define CHECK(cond, ...)                                                                                  \
  do {                                                                                                    \
    if (!(cond)) {                                                                                        \
      snprintf(why, why_len, __VA_ARGS__);                                                                \
      goto out;                                                                                           \
    }                                                                                                     \
  } while (0)

static int unique_property(void *envp, const void *keys, size_t n, char *why, size_t why_len) {
  env *e = (env *)envp;
  size_t ks = tdm_type_size(e->t), nu = 0, g, ci, mi;
  orc o = oracle(e->t, keys, n, (e->flags & TDM_EQ_NUMERIC) != 0, (e->flags & TDM_ORDER_FIRST_SEEN) != 0);
  char *u = malloc(n * ks + 8);
  uint64_t *fi = malloc(n * 8 + 8), *cn = malloc(n * 8 + 8), *inv = malloc(n * 8 + 8);
  int ok = 0;
  for (ci = 0; ci < 2; ci++)
    for (mi = 0; mi < NMETHODS; mi++) {
      tdm_status st;
      tdm_test_ops_method(methods[mi]);
      st = tdm_unique(e->ctx[ci], e->t, keys, n, e->flags, u, fi, cn, inv, &nu);
      tdm_test_ops_method(TDM_TEST_OPS_AUTO);
      CHECK(st == TDM_OK, "tdm_unique: %s: %s", tdm_status_name(st), tdm_last_error());
      CHECK(nu == o.G, "method %d ctx %zu: %zu groups, oracle %zu", methods[mi], ci, nu, o.G);
      for (g = 0; g < o.G; g++) {
        CHECK(fi[g] == o.first[g], "method %d ctx %zu: group %zu first %" PRIu64 ", oracle %" PRIu64, methods[mi],
              ci, g, fi[g], o.first[g]);
        CHECK(cn[g] == o.count[g], "method %d ctx %zu: group %zu count %" PRIu64 ", oracle %" PRIu64, methods[mi],
              ci, g, cn[g], o.count[g]);
        CHECK(!memcmp(u + g * ks, (const char *)keys + o.first[g] * ks, ks), "method %d: group %zu key differs",
              methods[mi], g);
      }
      for (g = 0; g < n; g++)
        CHECK(inv[g] == o.inverse[g], "method %d ctx %zu: inverse[%zu] = %" PRIu64 ", oracle %" PRIu64,
              methods[mi], ci, g, inv[g], o.inverse[g]);
      /* Outputs are optional: counts alone give the same. */
      memset(cn, 0xab, n * 8);
      tdm_test_ops_method(methods[mi]);
      memset(u, 0xab, n * ks);
      st = tdm_unique(e->ctx[ci], e->t, keys, n, e->flags, u, NULL, cn, NULL, &nu);
      tdm_test_ops_method(TDM_TEST_OPS_AUTO);
      CHECK(st == TDM_OK && nu == o.G, "tdm_unique with keys and counts only: %s", tdm_last_error());
      for (g = 0; g < o.G; g++) {
        CHECK(cn[g] == o.count[g], "keys and counts only: group %zu count differs", g);
        CHECK(!memcmp(u + g * ks, (const char *)keys + o.first[g] * ks, ks), "keys and counts only: group %zu key",
              g);
      }
    }
  ok = 1;
out:
  tdm_test_ops_method(TDM_TEST_OPS_AUTO);
  oracle_free(&o);
  free(u);
  free(fi);
  free(cn);
  free(inv);
  return ok;
}

/* Values for group_reduce derived from the keys (so shrinking keeps them
 * aligned): element i's bits mixed with i, then in the value type. For
 * floats a few specials (NaN, -0.0, inf) come through from the key bits. */
static void make_values(tdm_type vt, const void *keys, tdm_type kt, size_t n, void *out) {
  size_t i, ks = tdm_type_size(kt);
  for (i = 0; i < n; i++) {
    uint64_t k = ks == 4 ? ((const uint32_t *)keys)[i] : ((const uint64_t *)keys)[i];
    uint64_t x = (k * 0x9E3779B97F4A7C15ull) ^ (i * 0xBF58476D1CE4E5B9ull);
    if (vt == TDM_F32) {
      float f = (float)((int64_t)(x >> 40) - (1 << 23)) / 64.0f;
      if (i % 17 == 3) memcpy(&f, &k, 4); /* any bits, NaNs included */
      ((float *)out)[i] = f;
    } else if (vt == TDM_F64) {
      double d = (double)((int64_t)(x >> 11) - (1ll << 52)) / 1024.0;
      if (i % 17 == 3) d = (double)(int64_t)k * 1e-3;
      if (i % 29 == 5) d = -0.0;
      ((double *)out)[i] = d;
    } else if (tdm_type_size(vt) == 4) {
      ((uint32_t *)out)[i] = (uint32_t)x;
    } else {
      ((uint64_t *)out)[i] = x;
    }
  }
}

static int group_property(void *envp, const void *keys, size_t n, char *why, size_t why_len) {
  static const tdm_type vts[3] = {TDM_I32, TDM_U64, TDM_F64};
  env *e = (env *)envp;
  size_t ks = tdm_type_size(e->t), ng = 0, g, ci, mi, vi;
  orc o = oracle(e->t, keys, n, (e->flags & TDM_EQ_NUMERIC) != 0, (e->flags & TDM_ORDER_FIRST_SEEN) != 0);
  char *ko = malloc(n * ks + 8), *vo = malloc(n * 8 + 8), *vals = malloc(n * 8 + 8), want[8];
  int ok = 0, agg;
  for (vi = 0; vi < 4; vi++) {
    tdm_type vt = vi < 3 ? vts[vi] : TDM_F32;
    make_values(vt, keys, e->t, n, vals);
    for (agg = TDM_AGG_COUNT; agg <= TDM_AGG_MEAN; agg++) {
      size_t os = agg == TDM_AGG_COUNT || agg == TDM_AGG_MEAN ? 8 : tdm_type_size(vt);
      for (ci = 0; ci < 2; ci++)
        for (mi = 0; mi < NMETHODS; mi++) {
          tdm_status st;
          tdm_test_ops_method(methods[mi]);
          st = tdm_group_reduce(e->ctx[ci], e->t, keys, vt, vals, n, (tdm_agg)agg, e->flags, ko, vo, &ng);
          tdm_test_ops_method(TDM_TEST_OPS_AUTO);
          CHECK(st == TDM_OK, "tdm_group_reduce: %s: %s", tdm_status_name(st), tdm_last_error());
          CHECK(ng == o.G, "agg %d method %d: %zu groups, oracle %zu", agg, methods[mi], ng, o.G);
          for (g = 0; g < o.G; g++) {
            oracle_fold(&o, g, vt, vals, (tdm_agg)agg, want);
            CHECK(!memcmp(vo + g * os, want, os), "agg %d value type %s method %d ctx %zu: group %zu differs", agg,
                  tdm_type_name(vt), methods[mi], ci, g);
            CHECK(!memcmp(ko + g * ks, (const char *)keys + o.first[g] * ks, ks), "agg %d: group %zu key differs",
                  agg, g);
          }
        }
    }
  }
  ok = 1;
out:
  tdm_test_ops_method(TDM_TEST_OPS_AUTO);
  oracle_free(&o);
  free(ko);
  free(vo);
  free(vals);
  return ok;
}

/* Join: the left side is the first half of the input, the right side the
 * second half, compared with nested loops. */
static int join_property(void *envp, const void *keys, size_t n, char *why, size_t why_len) {
  env *e = (env *)envp;
  size_t ks = tdm_type_size(e->t), nl = n / 2 + (n & 1), nr = n / 2, i, j, cap = 0, got, ci, mi;
  const void *L = keys, *R = (const char *)keys + nl * ks;
  int numeric = (e->flags & TDM_EQ_NUMERIC) != 0, kind, ok = 0;
  uint64_t *wl = NULL, *wr = NULL, *ol = NULL, *orr = NULL;
  for (kind = TDM_JOIN_INNER; kind <= TDM_JOIN_ANTI; kind++) {
    size_t w = 0;
    free(wl);
    free(wr);
    wl = malloc((nl * nr + nl + 1) * 8);
    wr = malloc((nl * nr + nl + 1) * 8);
    for (i = 0; i < nl; i++) {
      size_t m = 0;
      for (j = 0; j < nr; j++)
        if (canon(e->t, L, i, numeric) == canon(e->t, R, j, numeric)) {
          m++;
          if (kind <= TDM_JOIN_LEFT) wl[w] = i, wr[w++] = j;
        }
      if ((kind == TDM_JOIN_LEFT && !m)) wl[w] = i, wr[w++] = TDM_NO_MATCH;
      if ((kind == TDM_JOIN_SEMI && m) || (kind == TDM_JOIN_ANTI && !m)) wl[w++] = i;
    }
    cap = w + 1;
    free(ol);
    free(orr);
    ol = malloc(cap * 8);
    orr = malloc(cap * 8);
    for (ci = 0; ci < 2; ci++)
      for (mi = 0; mi < NMETHODS; mi++) {
        tdm_status st;
        tdm_test_ops_method(methods[mi]);
        st = tdm_join(e->ctx[ci], (tdm_join_kind)kind, e->t, L, nl, R, nr, e->flags & TDM_EQ_NUMERIC, NULL, NULL,
                      0, &got);
        CHECK((w == 0 && st == TDM_OK) || (w > 0 && st == TDM_ERR_CAPACITY), "size query: %s",
              tdm_status_name(st));
        CHECK(got == w, "kind %d method %d: size query %zu, oracle %zu", kind, methods[mi], got, w);
        st = tdm_join(e->ctx[ci], (tdm_join_kind)kind, e->t, L, nl, R, nr, e->flags & TDM_EQ_NUMERIC, ol, orr, cap,
                      &got);
        tdm_test_ops_method(TDM_TEST_OPS_AUTO);
        CHECK(st == TDM_OK, "tdm_join: %s: %s", tdm_status_name(st), tdm_last_error());
        CHECK(got == w, "kind %d method %d: %zu rows, oracle %zu", kind, methods[mi], got, w);
        for (i = 0; i < w; i++) {
          CHECK(ol[i] == wl[i], "kind %d method %d ctx %zu: row %zu left %" PRIu64 ", oracle %" PRIu64, kind,
                methods[mi], ci, i, ol[i], wl[i]);
          if (kind <= TDM_JOIN_LEFT)
            CHECK(orr[i] == wr[i], "kind %d method %d ctx %zu: row %zu right %" PRIu64 ", oracle %" PRIu64, kind,
                  methods[mi], ci, i, orr[i], wr[i]);
        }
      }
  }
  ok = 1;
out:
  tdm_test_ops_method(TDM_TEST_OPS_AUTO);
  free(wl);
  free(wr);
  free(ol);
  free(orr);
  return ok;
}

static void run_props(tdm_type t, size_t max_n, size_t join_max) {
  prop_rng r;
  size_t sizes[24], ns, si, ks = tdm_type_size(t);
  int d, fl;
  env e;
  e.t = t;
  e.ctx[0] = prop_ctx(TDM_BACKEND_CPU, 1);
  e.ctx[1] = prop_ctx(TDM_BACKEND_CPU, 0);
  prop_rng_init(&r, 0x0950000 + (uint64_t)t);
  ns = prop_sizes(&r, sizes, 24, max_n);
  for (d = 0; d < PROP_DIST_COUNT; d++)
    for (si = 0; si < ns; si++)
      for (fl = 0; fl < 4; fl++) {
        size_t n = sizes[si];
        uint64_t id = ((uint64_t)t << 32) | ((uint64_t)d << 24) | ((uint64_t)si << 8) | (uint64_t)fl;
        void *in = malloc(n * ks + 8);
        char name[96];
        prop_rng_init(&r, id);
        prop_fill(&r, t, in, n, (prop_dist)d);
        e.flags = (unsigned)fl;
        e.case_id = id;
        snprintf(name, sizeof name, "unique %s %s flags %d", tdm_type_name(t), prop_dist_name((prop_dist)d), fl);
        prop_check(name, id, t, ks, in, n, unique_property, &e);
        snprintf(name, sizeof name, "group_reduce %s %s flags %d", tdm_type_name(t), prop_dist_name((prop_dist)d),
                 fl);
        if (n <= max_n / 4) prop_check(name, id, t, ks, in, n, group_property, &e);
        snprintf(name, sizeof name, "join %s %s flags %d", tdm_type_name(t), prop_dist_name((prop_dist)d), fl);
        if (n <= join_max && !(fl & TDM_ORDER_FIRST_SEEN)) prop_check(name, id, t, ks, in, n, join_property, &e);
        free(in);
      }
  if (!is_float(t))
    for (d = 0; d < PROP_SMALL_RANGE_BASES; d++)
      for (si = 0; si < ns; si++)
        for (fl = 0; fl < 4; fl += 2) { /* TDM_EQ_NUMERIC is a no-op on integers */
          size_t n = sizes[si];
          uint64_t id = ((uint64_t)t << 32) | 0x800000u | ((uint64_t)d << 16) | ((uint64_t)si << 8) | (uint64_t)fl;
          void *in = malloc(n * ks + 8);
          char name[96];
          prop_rng_init(&r, id);
          prop_fill_small_range(&r, t, in, n, d);
          e.flags = (unsigned)fl;
          e.case_id = id;
          snprintf(name, sizeof name, "unique %s small range %d flags %d", tdm_type_name(t), d, fl);
          prop_check(name, id, t, ks, in, n, unique_property, &e);
          snprintf(name, sizeof name, "group_reduce %s small range %d flags %d", tdm_type_name(t), d, fl);
          if (n <= max_n / 4) prop_check(name, id, t, ks, in, n, group_property, &e);
          snprintf(name, sizeof name, "join %s small range %d flags %d", tdm_type_name(t), d, fl);
          if (n <= join_max && !(fl & TDM_ORDER_FIRST_SEEN)) prop_check(name, id, t, ks, in, n, join_property, &e);
          free(in);
        }
  tdm_ctx_destroy(e.ctx[0]);
  tdm_ctx_destroy(e.ctx[1]);
}

Test(ops_props, u32) { run_props(TDM_U32, 1u << 17, 600); }
Test(ops_props, u64) { run_props(TDM_U64, 1u << 17, 600); }
Test(ops_props, i32) { run_props(TDM_I32, 1u << 15, 600); }
Test(ops_props, i64) { run_props(TDM_I64, 1u << 15, 600); }
Test(ops_props, f32) { run_props(TDM_F32, 1u << 16, 600); }
Test(ops_props, f64) { run_props(TDM_F64, 1u << 16, 600); }

/* ---- unit tests ------------------------------------------------------------ */

static tdm_ctx *cpu_all(void) { return prop_ctx(TDM_BACKEND_CPU, 0); }

Test(ops_unit, unique_small_example) {
  tdm_ctx *c = cpu_all();
  int64_t k[7] = {5, -1, 5, 0, -1, 5, 7}, u[7];
  uint64_t fi[7], cn[7], inv[7];
  size_t nu;
  OK(tdm_unique(c, TDM_I64, k, 7, 0, u, fi, cn, inv, &nu));
  cr_assert_eq(nu, 4);
  cr_assert(u[0] == -1 && u[1] == 0 && u[2] == 5 && u[3] == 7);
  cr_assert(fi[0] == 1 && fi[1] == 3 && fi[2] == 0 && fi[3] == 6);
  cr_assert(cn[0] == 2 && cn[1] == 1 && cn[2] == 3 && cn[3] == 1);
  cr_assert(inv[0] == 2 && inv[1] == 0 && inv[3] == 1 && inv[6] == 3);
  OK(tdm_unique(c, TDM_I64, k, 7, TDM_ORDER_FIRST_SEEN, u, fi, cn, inv, &nu));
  cr_assert(u[0] == 5 && u[1] == -1 && u[2] == 0 && u[3] == 7);
  cr_assert(inv[0] == 0 && inv[1] == 1 && inv[3] == 2 && inv[6] == 3);
  OK(tdm_unique(c, TDM_I64, NULL, 0, 0, NULL, NULL, NULL, NULL, &nu));
  cr_assert_eq(nu, 0);
  tdm_ctx_destroy(c);
}

Test(ops_unit, float_equalities) {
  tdm_ctx *c = cpu_all();
  double nan1 = nan(""), nan2 = -nan("7"), k[6] = {0.0, -0.0, 1.0, 0, 0, 1.0}, u[6];
  uint64_t cn[6];
  size_t nu;
  k[3] = nan1;
  k[4] = nan2;
  OK(tdm_unique(c, TDM_F64, k, 6, 0, u, NULL, cn, NULL, &nu));
  cr_assert_eq(nu, 5, "bit equality: -0.0, +0.0 and two NaNs are distinct");
  cr_assert(signbit(u[0]) && isnan(u[0]), "totalOrder: -NaN first");
  OK(tdm_unique(c, TDM_F64, k, 6, TDM_EQ_NUMERIC, u, NULL, cn, NULL, &nu));
  cr_assert_eq(nu, 3, "numeric: one zero, one NaN, 1.0");
  cr_assert(u[0] == 0.0 && !signbit(u[0]) && cn[0] == 2, "the zero group keeps its first member +0.0");
  cr_assert(u[1] == 1.0 && cn[1] == 2);
  cr_assert(isnan(u[2]) && cn[2] == 2, "NaN after everything, as numpy");
  tdm_ctx_destroy(c);
}

Test(ops_unit, float_sum_is_input_order) {
  tdm_ctx *c = cpu_all();
  float v[4] = {1e8f, 1.0f, -1e8f, 1.0f};
  uint32_t k[4] = {3, 3, 3, 3};
  float s[4];
  double m[4];
  size_t ng;
  OK(tdm_group_reduce(c, TDM_U32, k, TDM_F32, v, 4, TDM_AGG_SUM, 0, NULL, s, &ng));
  cr_assert(ng == 1 && s[0] == ((1e8f + 1.0f) + -1e8f) + 1.0f, "left fold in input order, got %g", (double)s[0]);
  OK(tdm_group_reduce(c, TDM_U32, k, TDM_F32, v, 4, TDM_AGG_MEAN, 0, NULL, m, &ng));
  cr_assert(m[0] == 0.5, "float64 mean, got %g", m[0]);
  tdm_ctx_destroy(c);
}

Test(ops_unit, isin_small_and_large) {
  tdm_ctx *c = cpu_all();
  enum { NQ = 200000, M = 50000 };
  uint64_t *q = malloc(NQ * 8), *s = malloc(M * 8);
  uint8_t *f = malloc(NQ), *f2 = malloc(NQ);
  double dq[4] = {-0.0, 0, 2.0, 3.0}, ds[2] = {0.0, 0};
  uint8_t df[4];
  size_t i;
  int mi;
  for (i = 0; i < M; i++) s[i] = i * 3;
  for (i = 0; i < NQ; i++) q[i] = i;
  for (mi = 0; mi < NMETHODS; mi++) {
    tdm_test_ops_method(methods[mi]);
    OK(tdm_isin(c, TDM_U64, q, NQ, s, M, 0, f));
    for (i = 0; i < NQ; i++) cr_assert_eq(f[i], i % 3 == 0 && i < 3 * M, "query %zu method %d", i, methods[mi]);
    OK(tdm_isin(c, TDM_U64, q, NQ, s, 5, 0, f2)); /* a set small enough for the search */
    for (i = 0; i < NQ; i++) cr_assert_eq(f2[i], i % 3 == 0 && i < 15);
    OK(tdm_isin(c, TDM_U64, q, NQ, s, 0, 0, f2));
    for (i = 0; i < NQ; i++) cr_assert_eq(f2[i], 0);
    dq[1] = nan("");
    ds[1] = -nan("3");
    OK(tdm_isin(c, TDM_F64, dq, 4, ds, 2, 0, df));
    cr_assert(df[0] == 0 && df[1] == 0 && df[2] == 0 && df[3] == 0, "bit equality");
    OK(tdm_isin(c, TDM_F64, dq, 4, ds, 2, TDM_EQ_NUMERIC, df));
    cr_assert(df[0] == 1 && df[1] == 1 && df[2] == 0 && df[3] == 0, "numeric equality");
  }
  tdm_test_ops_method(TDM_TEST_OPS_AUTO);
  free(q);
  free(s);
  free(f);
  free(f2);
  tdm_ctx_destroy(c);
}

/* Skewed keys: all equal, one key with 90 % of the rows, zipf; every method
 * and thread count gives the oracle's groups and sums. */
Test(ops_unit, skew) {
  enum { N = 400000 };
  tdm_ctx *c1 = prop_ctx(TDM_BACKEND_CPU, 1), *ca = cpu_all();
  uint64_t *k = malloc(N * 8), *v = malloc(N * 8), *cn = malloc(N * 8), *sum = malloc(N * 8), *ref = malloc(N * 8);
  uint64_t *u = malloc(N * 8);
  prop_rng r;
  size_t i, nu, ng, nref = 0;
  int shape, mi, ci;
  prop_rng_init(&r, 0x5CE3);
  for (shape = 0; shape < 3; shape++) {
    for (i = 0; i < N; i++) {
      v[i] = prop_next(&r);
      if (shape == 0) k[i] = 42;
      else if (shape == 1) k[i] = prop_below(&r, 10) ? 7 : prop_next(&r);
    }
    if (shape == 2) prop_fill(&r, TDM_U64, k, N, PROP_ZIPF);
    for (ci = 0; ci < 2; ci++)
      for (mi = 0; mi < NMETHODS; mi++) {
        tdm_test_ops_method(methods[mi]);
        OK(tdm_unique(ci ? ca : c1, TDM_U64, k, N, 0, u, NULL, cn, NULL, &nu));
        OK(tdm_group_reduce(ci ? ca : c1, TDM_U64, k, TDM_U64, v, N, TDM_AGG_SUM, 0, NULL, sum, &ng));
        tdm_test_ops_method(TDM_TEST_OPS_AUTO);
        cr_assert_eq(nu, ng);
        if (ci == 0 && mi == 0) {
          orc o = oracle(TDM_U64, k, N, 0, 0);
          size_t g;
          cr_assert_eq(o.G, nu, "shape %d", shape);
          for (g = 0; g < o.G; g++) {
            cr_assert_eq(cn[g], o.count[g]);
            oracle_fold(&o, g, TDM_U64, v, TDM_AGG_SUM, &ref[g]);
          }
          nref = o.G;
          oracle_free(&o);
        }
        cr_assert_eq(nu, nref);
        cr_assert(!memcmp(sum, ref, nu * 8), "shape %d method %d ctx %d: sums differ", shape, methods[mi], ci);
      }
    if (shape == 0) cr_assert_eq(nu, 1);
  }
  free(k);
  free(v);
  free(cn);
  free(sum);
  free(ref);
  free(u);
  tdm_ctx_destroy(c1);
  tdm_ctx_destroy(ca);
}

/* One key matching 10^4 x 10^4 rows: 10^8 pairs counted exactly with cap = 0
 * and refused with TDM_ERR_CAPACITY, nothing written, when the buffer is
 * short; a smaller many-to-many join is written in (i, j) order. */
/* The join's repeats_hint on the CPU, past its sample's size: distinct
 * words are never said to repeat (a 1 is two equal sampled words), a
 * sorted column's neighbours and scattered pairs are found; and a join by
 * single rows whose right keys repeat only where the sample does not look
 * still gives the sorted runs' bytes. */
Test(ops_unit, join_repeats_hint) {
  enum { N = 1000000 };
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 1);
  uint64_t *w = malloc(N * 8), *l = malloc(N * 8), *lo[2], *ro[2];
  size_t i, n_out[2];
  int hint = 2, mi;
  prop_rng r;
  prop_rng_init(&r, 0x4E9);
  for (i = 0; i < N; i++) w[i] = prop_next(&r); /* two of the sample equal: about 2^-32 */
  OK(tdm_test_block_repeats_hint(c, 8, w, N, &hint));
  cr_assert_eq(hint, 0, "distinct words");
  memcpy(l, w, N * 8);
  l[1] = l[0];
  OK(tdm_test_block_repeats_hint(c, 8, l, N, &hint));
  cr_assert_eq(hint, 1, "neighbours in the first run");
  for (i = 0; i < N; i++) l[i] = w[i / 2];
  for (i = N - 1; i > 0; i--) {
    size_t j = (size_t)prop_below(&r, i + 1);
    uint64_t x = l[i];
    l[i] = l[j];
    l[j] = x;
  }
  OK(tdm_test_block_repeats_hint(c, 8, l, N, &hint));
  cr_assert_eq(hint, 1, "each word twice, scattered");
  /* one repeat the sample does not see (rows 2000 and 3000 lie between its
   * first runs), matched by left rows 7, 2000 and 3000: the table sees it,
   * and the sorted runs give the sort method's bytes */
  w[3000] = w[2000];
  memcpy(l, w, N * 8);
  l[7] = w[2000];
  for (mi = 0; mi < 2; mi++) {
    lo[mi] = malloc((N + 8) * 8);
    ro[mi] = malloc((N + 8) * 8);
    tdm_test_ops_method(mi ? TDM_TEST_OPS_SORT : TDM_TEST_OPS_AUTO);
    OK(tdm_join(c, TDM_JOIN_INNER, TDM_U64, l, N, w, N, 0, lo[mi], ro[mi], N + 8, &n_out[mi]));
  }
  tdm_test_ops_method(TDM_TEST_OPS_AUTO);
  OK(tdm_test_block_repeats_hint(c, 8, w, N, &hint));
  cr_assert_eq(hint, 0, "a repeat between the sample's runs");
  cr_assert(n_out[0] == (size_t)N + 3 && n_out[1] == n_out[0], "%zu and %zu rows", n_out[0], n_out[1]);
  cr_assert(!memcmp(lo[0], lo[1], n_out[0] * 8) && !memcmp(ro[0], ro[1], n_out[0] * 8), "the sort method's rows");
  for (mi = 0; mi < 2; mi++) {
    free(lo[mi]);
    free(ro[mi]);
  }
  free(w);
  free(l);
  tdm_ctx_destroy(c);
}

Test(ops_unit, join_capacity_and_hot_key) {
  enum { S = 10000 };
  tdm_ctx *c = cpu_all();
  uint32_t *l = malloc(S * 4), *r = malloc(S * 4);
  uint64_t lo[64], ro[64];
  size_t i, n_out, w;
  int mi;
  for (i = 0; i < S; i++) l[i] = r[i] = 77;
  l[5] = 1; /* one left row without a match */
  for (mi = 0; mi < NMETHODS; mi++) {
    tdm_test_ops_method(methods[mi]);
    FAILS(TDM_ERR_CAPACITY, tdm_join(c, TDM_JOIN_INNER, TDM_U32, l, S, r, S, 0, NULL, NULL, 0, &n_out));
    cr_assert_eq(n_out, (size_t)(S - 1) * S, "exact inner size");
    FAILS(TDM_ERR_CAPACITY, tdm_join(c, TDM_JOIN_LEFT, TDM_U32, l, S, r, S, 0, NULL, NULL, 0, &n_out));
    cr_assert_eq(n_out, (size_t)(S - 1) * S + 1, "exact left size");
    memset(lo, 0xee, sizeof lo);
    memset(ro, 0xee, sizeof ro);
    FAILS(TDM_ERR_CAPACITY, tdm_join(c, TDM_JOIN_INNER, TDM_U32, l, S, r, S, 0, lo, ro, 64, &n_out));
    cr_assert_eq(n_out, (size_t)(S - 1) * S);
    for (i = 0; i < 64; i++) cr_assert(lo[i] == 0xeeeeeeeeeeeeeeeeull && ro[i] == lo[i], "nothing written");
    OK(tdm_join(c, TDM_JOIN_ANTI, TDM_U32, l, S, r, S, 0, lo, NULL, 64, &n_out));
    cr_assert(n_out == 1 && lo[0] == 5);
    /* 8 x 8: the rows by i, then j; row 5 of the left side misses. */
    OK(tdm_join(c, TDM_JOIN_LEFT, TDM_U32, l, 7, r + 100, 8, 0, lo, ro, 64, &n_out));
    cr_assert_eq(n_out, 6 * 8 + 1);
    for (i = 0, w = 0; i < 7; i++) {
      size_t j;
      if (i == 5) {
        cr_assert(lo[w] == 5 && ro[w] == TDM_NO_MATCH);
        w++;
        continue;
      }
      for (j = 0; j < 8; j++, w++) cr_assert(lo[w] == i && ro[w] == j, "row %zu", w);
    }
  }
  tdm_test_ops_method(TDM_TEST_OPS_AUTO);
  free(l);
  free(r);
  tdm_ctx_destroy(c);
}

/* ---- skewed joins ----------------------------------------------------------- */

typedef struct key_at {
  uint64_t k, j;
} key_at;

static int key_at_cmp(const void *a, const void *b) {
  const key_at *x = (const key_at *)a, *y = (const key_at *)b;
  if (x->k != y->k) return x->k < y->k ? -1 : 1;
  return x->j < y->j ? -1 : x->j > y->j;
}

/* Row *w of a join (wl NULL: only counted). */
static void put_row(uint64_t *wl, uint64_t *wr, size_t *w, uint64_t i, uint64_t j) {
  if (wl) wl[*w] = i;
  if (wl && wr) wr[*w] = j;
  ++*w;
}

/* The rows of a join of uint64 keys under bit equality, by a sort of the
 * right side and a binary search per left row (the skewed inputs are too
 * large for the nested loops of join_property); returns the row count. */
static size_t join_ref_u64(int kind, const uint64_t *l, size_t nl, const uint64_t *r, size_t nr, uint64_t *wl,
                           uint64_t *wr) {
  key_at *s = malloc((nr ? nr : 1) * sizeof *s);
  size_t i, w = 0;
  for (i = 0; i < nr; i++) s[i].k = r[i], s[i].j = i;
  qsort(s, nr, sizeof *s, key_at_cmp);
  for (i = 0; i < nl; i++) {
    size_t lo = 0, hi = nr, m;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (s[mid].k < l[i]) lo = mid + 1;
      else hi = mid;
    }
    for (m = lo; m < nr && s[m].k == l[i]; m++)
      if (kind <= TDM_JOIN_LEFT) put_row(wl, wr, &w, i, s[m].j);
    m -= lo;
    if (kind == TDM_JOIN_LEFT && !m) put_row(wl, wr, &w, i, TDM_NO_MATCH);
    if ((kind == TDM_JOIN_SEMI && m) || (kind == TDM_JOIN_ANTI && !m)) put_row(wl, NULL, &w, i, 0);
  }
  free(s);
  return w;
}

/* The first row where a and b differ (n when none). */
static size_t first_diff(const uint64_t *a, const uint64_t *b, size_t n) {
  size_t i;
  for (i = 0; i < n; i++)
    if (a[i] != b[i]) break;
  return i;
}

/* Skew must not change the rows (the fill works by output position, in
 * chunks of output rows that cut through a hot key's rows): one left row
 * with 200000 matches among 1000 others, 2000 x 2000 rows of one key among
 * 3000 other left rows (half unmatched, between the hot ones), and hot rows
 * between stretches of 50000 unmatched left rows; every kind, each method,
 * on 1 and 4 threads, against the oracle. Nothing past the rows is written,
 * nor right indices for SEMI and ANTI. */
Test(ops_unit, join_skew_every_kind_against_the_oracle) {
  static const size_t hots[PROP_JOIN_SHAPES] = {200000, 2000, 40000};
  tdm_ctx *ctx[2];
  int shape, kind, ci, mi;
  prop_rng rng;
  ctx[0] = prop_ctx(TDM_BACKEND_CPU, 1);
  ctx[1] = prop_ctx(TDM_BACKEND_CPU, 4);
  for (shape = 0; shape < PROP_JOIN_SHAPES; shape++) {
    uint64_t *l, *r;
    size_t nl, nr;
    prop_rng_init(&rng, 0x501E7000u + (uint64_t)shape);
    prop_join_skew(&rng, (prop_join_shape)shape, hots[shape], &l, &nl, &r, &nr);
    for (kind = TDM_JOIN_INNER; kind <= TDM_JOIN_ANTI; kind++) {
      size_t want = join_ref_u64(kind, l, nl, r, nr, NULL, NULL), cap = want + 1, got, d;
      uint64_t *wl = malloc(cap * 8), *wr = malloc(cap * 8), *ol = malloc(cap * 8), *orr = malloc(cap * 8);
      join_ref_u64(kind, l, nl, r, nr, wl, wr);
      for (ci = 0; ci < 2; ci++)
        for (mi = 0; mi < NMETHODS; mi++) {
          memset(ol, 0xee, cap * 8);
          memset(orr, 0xee, cap * 8);
          tdm_test_ops_method(methods[mi]);
          OK(tdm_join(ctx[ci], (tdm_join_kind)kind, TDM_U64, l, nl, r, nr, 0, ol, orr, cap, &got));
          tdm_test_ops_method(TDM_TEST_OPS_AUTO);
          cr_assert_eq(got, want, "%s, kind %d, method %d, ctx %d: %zu rows, oracle %zu",
                       prop_join_shape_name((prop_join_shape)shape), kind, methods[mi], ci, got, want);
          d = first_diff(ol, wl, want);
          cr_assert_eq(d, want, "%s, kind %d, method %d, ctx %d: row %zu of %zu: left %" PRIu64 ", oracle %" PRIu64,
                       prop_join_shape_name((prop_join_shape)shape), kind, methods[mi], ci, d, want, ol[d], wl[d]);
          if (kind <= TDM_JOIN_LEFT) {
            d = first_diff(orr, wr, want);
            cr_assert_eq(d, want,
                         "%s, kind %d, method %d, ctx %d: row %zu of %zu: right %" PRIu64 ", oracle %" PRIu64,
                         prop_join_shape_name((prop_join_shape)shape), kind, methods[mi], ci, d, want, orr[d], wr[d]);
          } else {
            for (d = 0; d < cap && orr[d] == 0xeeeeeeeeeeeeeeeeull; d++) continue;
            cr_assert_eq(d, cap, "%s, kind %d: right index %zu written", prop_join_shape_name((prop_join_shape)shape),
                         kind, d);
          }
          cr_assert(ol[want] == 0xeeeeeeeeeeeeeeeeull && orr[want] == ol[want], "%s, kind %d: a row past %zu written",
                    prop_join_shape_name((prop_join_shape)shape), kind, want);
        }
      free(wl);
      free(wr);
      free(ol);
      free(orr);
    }
    free(l);
    free(r);
  }
  tdm_ctx_destroy(ctx[0]);
  tdm_ctx_destroy(ctx[1]);
}

/* Sorted (u64) order, for the plain count below. */
static int cmp_keys_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* tdm_unique in ascending order without indices (the keys-only sort and
 * one pass over its runs, split across threads by a count of each part's
 * heads): runs that span whole parts (one key throughout, one key over
 * most rows, runs of 100000), runs ending exactly at a part's edge and a
 * scatter, on one thread and on all, against a plain sorted count; keys
 * alone, counts alone and both. */
Test(ops_unit, unique_runs_across_parts) {
  enum { N = 1 << 18, SHAPES = 5 };
  tdm_ctx *ctx[2] = {prop_ctx(TDM_BACKEND_CPU, 1), cpu_all()};
  uint64_t *k = malloc(N * 8), *srt = malloc(N * 8), *want_k = malloc(N * 8), *want_c = malloc(N * 8),
           *u = malloc(N * 8), *c = malloc(N * 8);
  prop_rng r;
  size_t i, G, nu;
  int shape, ci, out;
  prop_rng_init(&r, 0x5EED5);
  for (shape = 0; shape < SHAPES; shape++) {
    for (i = 0; i < N; i++)
      switch (shape) {
      case 0: k[i] = 42; break;
      case 1: k[i] = i % 10 ? 7 : prop_next(&r); break;
      case 2: k[i] = i / 100000; break;
      case 3: k[i] = i / (N / 8); break; /* runs end where parts of 2, 4, 8 end */
      default: k[i] = prop_below(&r, 5000); break;
      }
    memcpy(srt, k, N * 8);
    qsort(srt, N, 8, cmp_keys_u64);
    for (G = 0, i = 0; i < N; i++) {
      if (i == 0 || srt[i] != srt[i - 1]) {
        want_k[G] = srt[i];
        want_c[G++] = 0;
      }
      want_c[G - 1]++;
    }
    for (ci = 0; ci < 2; ci++)
      for (out = 1; out < 4; out++) {
        memset(u, 0xee, N * 8);
        memset(c, 0xee, N * 8);
        tdm_test_ops_method(TDM_TEST_OPS_SORT);
        OK(tdm_unique(ctx[ci], TDM_U64, k, N, 0, out & 1 ? u : NULL, NULL, out & 2 ? c : NULL, NULL, &nu));
        tdm_test_ops_method(TDM_TEST_OPS_AUTO);
        cr_assert(nu == G, "shape %d ctx %d outputs %d: %zu distinct keys, plainly %zu", shape, ci, out, nu, G);
        cr_assert(!(out & 1) || !memcmp(u, want_k, G * 8), "shape %d ctx %d outputs %d: keys differ", shape, ci, out);
        cr_assert(!(out & 2) || !memcmp(c, want_c, G * 8), "shape %d ctx %d outputs %d: counts differ", shape, ci,
                  out);
        cr_assert(!(out & 1) || u[G] == 0xeeeeeeeeeeeeeeeeull, "shape %d ctx %d: a key written past the last", shape,
                  ci);
      }
  }
  free(k);
  free(srt);
  free(want_k);
  free(want_c);
  free(u);
  free(c);
  tdm_ctx_destroy(ctx[0]);
  tdm_ctx_destroy(ctx[1]);
}

Test(ops_unit, large_inputs_both_methods_all_threads) {
  enum { N = 1 << 20 };
  tdm_ctx *c1 = prop_ctx(TDM_BACKEND_CPU, 1), *ca = cpu_all();
  double *k = malloc(N * 8), *v = malloc(N * 8), *s0 = malloc(N * 8), *s1 = malloc(N * 8);
  uint64_t *inv0 = malloc(N * 8), *inv1 = malloc(N * 8);
  size_t n0, n1, i;
  prop_rng r;
  int mi, d;
  prop_rng_init(&r, 0x1A26E);
  for (d = 0; d < 2; d++) {
    prop_fill(&r, TDM_F64, k, N, d ? PROP_UNIFORM : PROP_FEW_DISTINCT);
    for (i = 0; i < N; i++) v[i] = (double)(int64_t)(prop_next(&r) >> 20) * 1e-7;
    tdm_test_ops_method(TDM_TEST_OPS_SORT);
    OK(tdm_group_reduce(c1, TDM_F64, k, TDM_F64, v, N, TDM_AGG_SUM, TDM_EQ_NUMERIC, NULL, s0, &n0));
    OK(tdm_unique(c1, TDM_F64, k, N, TDM_EQ_NUMERIC | TDM_ORDER_FIRST_SEEN, NULL, NULL, NULL, inv0, &n0));
    for (mi = 0; mi < NMETHODS; mi++) {
      tdm_test_ops_method(methods[mi]);
      OK(tdm_group_reduce(ca, TDM_F64, k, TDM_F64, v, N, TDM_AGG_SUM, TDM_EQ_NUMERIC, NULL, s1, &n1));
      cr_assert(n0 == n1 && !memcmp(s0, s1, n0 * 8), "float sums: same bits (method %d)", methods[mi]);
      OK(tdm_unique(ca, TDM_F64, k, N, TDM_EQ_NUMERIC | TDM_ORDER_FIRST_SEEN, NULL, NULL, NULL, inv1, &n1));
      cr_assert(n0 == n1 && !memcmp(inv0, inv1, N * 8), "inverse: same (method %d)", methods[mi]);
    }
  }
  tdm_test_ops_method(TDM_TEST_OPS_AUTO);
  free(k);
  free(v);
  free(s0);
  free(s1);
  free(inv0);
  free(inv1);
  tdm_ctx_destroy(c1);
  tdm_ctx_destroy(ca);
}

/* ---- bad arguments --------------------------------------------------------- */

Test(ops_bad, every_argument) {
  tdm_ctx *c = cpu_all();
  uint64_t k[8] = {1, 2, 3, 1, 2, 3, 4, 5}, o[8], o2[8];
  uint8_t f[8];
  size_t nu;
  const tdm_status I = TDM_ERR_INVALID_ARGUMENT;
  FAILS(I, tdm_unique(NULL, TDM_U64, k, 8, 0, o, NULL, NULL, NULL, &nu));
  FAILS(I, tdm_unique(c, (tdm_type)9, k, 8, 0, o, NULL, NULL, NULL, &nu));
  FAILS(I, tdm_unique(c, TDM_U64, k, 8, 4, o, NULL, NULL, NULL, &nu));
  FAILS(I, tdm_unique(c, TDM_U64, NULL, 8, 0, o, NULL, NULL, NULL, &nu));
  FAILS(I, tdm_unique(c, TDM_U64, k, 8, 0, o, NULL, NULL, NULL, NULL));
  FAILS(I, tdm_unique(c, TDM_U64, k, 8, 0, k, NULL, NULL, NULL, &nu));
  FAILS(I, tdm_unique(c, TDM_U64, k, 8, 0, o, o, NULL, NULL, &nu));
  FAILS(I, tdm_unique(c, TDM_U64, k, 8, 0, o, NULL, NULL, (uint64_t *)((char *)o2 + 1), &nu));
  FAILS(I, tdm_unique(c, TDM_U64, k, SIZE_MAX / 4, 0, o, NULL, NULL, NULL, &nu));
  FAILS(I, tdm_isin(NULL, TDM_U64, k, 8, k, 8, 0, f));
  FAILS(I, tdm_isin(c, TDM_U64, k, 8, k, 8, TDM_ORDER_FIRST_SEEN, f));
  FAILS(I, tdm_isin(c, TDM_U64, k, 8, NULL, 8, 0, f));
  FAILS(I, tdm_isin(c, TDM_U64, k, 8, k, 8, 0, NULL));
  FAILS(I, tdm_isin(c, TDM_U64, k, 8, k, 8, 0, (uint8_t *)k));
  OK(tdm_isin(c, TDM_U64, k, 8, k, 8, 0, f)); /* queries and set may alias */
  FAILS(I, tdm_group_reduce(c, TDM_U64, k, TDM_U64, k, 8, (tdm_agg)7, 0, o, o2, &nu));
  FAILS(I, tdm_group_reduce(c, TDM_U64, k, (tdm_type)0, k, 8, TDM_AGG_SUM, 0, o, o2, &nu));
  FAILS(I, tdm_group_reduce(c, TDM_U64, k, TDM_U64, NULL, 8, TDM_AGG_SUM, 0, o, o2, &nu));
  FAILS(I, tdm_group_reduce(c, TDM_U64, k, TDM_U64, k, 8, TDM_AGG_SUM, 0, o, NULL, &nu));
  FAILS(I, tdm_group_reduce(c, TDM_U64, k, TDM_U64, k, 8, TDM_AGG_SUM, 0, o, o, &nu));
  FAILS(I, tdm_group_reduce(c, TDM_U64, k, TDM_U64, k, 8, TDM_AGG_SUM, 0, o, k, &nu));
  FAILS(I, tdm_group_reduce(c, TDM_U64, k, TDM_U64, k, 8, TDM_AGG_SUM, 0, o, o2, NULL));
  FAILS(I, tdm_group_reduce(c, TDM_U64, k, TDM_U64, k, 8, TDM_AGG_SUM, 8, o, o2, &nu));
  OK(tdm_group_reduce(c, TDM_U64, k, TDM_U64, k, 8, TDM_AGG_SUM, 0, o, o2, &nu)); /* keys may be the values */
  OK(tdm_group_reduce(c, TDM_U64, k, (tdm_type)0, NULL, 8, TDM_AGG_COUNT, 0, o, o2, &nu));
  FAILS(I, tdm_join(NULL, TDM_JOIN_INNER, TDM_U64, k, 8, k, 8, 0, o, o2, 8, &nu));
  FAILS(I, tdm_join(c, (tdm_join_kind)4, TDM_U64, k, 8, k, 8, 0, o, o2, 8, &nu));
  FAILS(I, tdm_join(c, TDM_JOIN_INNER, TDM_U64, k, 8, k, 8, 2, o, o2, 8, &nu));
  FAILS(I, tdm_join(c, TDM_JOIN_INNER, TDM_U64, NULL, 8, k, 8, 0, o, o2, 8, &nu));
  FAILS(I, tdm_join(c, TDM_JOIN_INNER, TDM_U64, k, 8, NULL, 8, 0, o, o2, 8, &nu));
  FAILS(I, tdm_join(c, TDM_JOIN_INNER, TDM_U64, k, 8, k, 8, 0, NULL, o2, 8, &nu));
  FAILS(I, tdm_join(c, TDM_JOIN_INNER, TDM_U64, k, 8, k, 8, 0, o, o, 8, &nu));
  FAILS(I, tdm_join(c, TDM_JOIN_INNER, TDM_U64, k, 8, k, 8, 0, o, k, 8, &nu));
  FAILS(I, tdm_join(c, TDM_JOIN_INNER, TDM_U64, k, 8, k, 8, 0, o, o2, 8, NULL));
  FAILS(I, tdm_join(c, TDM_JOIN_INNER, TDM_U64, k, 8, k, 8, 0, o, o2, SIZE_MAX / 4, &nu));
  tdm_ctx_destroy(c);
}

/* ---- allocation failure ------------------------------------------------------ */

/* Fails the k-th allocation for k = 1, 2, ... until the call succeeds; each
 * failure must be TDM_ERR_OUT_OF_MEMORY with a message and leave the inputs
 * as they were. */
#define OOM_EACH(what, call, inputs_ok)                                                                  \
  do {                                                                                                   \
    long kf;                                                                                             \
    for (kf = 1;; kf++) {                                                                                \
      tdm_status st_;                                                                                    \
      long made_;                                                                                        \
      cr_assert_lt(kf, 1000, "%s: never succeeded", what);                                              \
      tdm_test_alloc_fail_at(kf);                                                                        \
      st_ = (call);                                                                                      \
      made_ = tdm_test_alloc_count();                                                                    \
      tdm_test_alloc_fail_at(0);                                                                         \
      cr_assert(inputs_ok, "%s: inputs changed (allocation %ld failing)", what, kf);                    \
      if (st_ == TDM_ERR_OUT_OF_MEMORY) {                                                                \
        cr_assert(tdm_last_error()[0] != 0, "%s: no message", what);                                    \
        continue;                                                                                        \
      }                                                                                                  \
      cr_assert_eq(st_, TDM_OK, "%s (allocation %ld failing): %s: %s", what, kf, tdm_status_name(st_),   \
                   tdm_last_error());                                                                    \
      if (made_ < kf) break;                                                                             \
    }                                                                                                    \
    cr_assert_gt(kf, 1, "%s: allocated nothing", what);                                                 \
    fprintf(stderr, "oom: %-34s %ld allocation points\n", what, kf - 1);                                \
  } while (0)

Test(ops_oom, every_allocation_point) {
  enum { N = 60000 };
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 2);
  double *k = malloc(N * 8), *k0 = malloc(N * 8), *v = malloc(N * 8), *ko = malloc(N * 8), *vo = malloc(N * 8);
  uint64_t *a = malloc(N * 8), *b = malloc(N * 8), *cn = malloc(N * 8), *inv = malloc(N * 8);
  uint64_t *lo = malloc(4 * N * 8), *ro = malloc(4 * N * 8);
  uint8_t *f = malloc(N);
  size_t nu, i;
  prop_rng r;
  int mi;
  prop_rng_init(&r, 0x00B5);
  prop_fill(&r, TDM_F64, k0, N, PROP_FEW_DISTINCT);
  memcpy(k, k0, N * 8);
  for (i = 0; i < N; i++) {
    v[i] = (double)i;
    b[i] = i * 7 % 20011; /* join keys: a few matches per row */
  }
  memcpy(a, b, N * 8);
  for (mi = 0; mi < 2; mi++) {
    tdm_test_ops_method(methods[mi]);
    OOM_EACH(mi ? "tdm_unique (sort)" : "tdm_unique (hash)",
             tdm_unique(c, TDM_F64, k, N, TDM_EQ_NUMERIC | TDM_ORDER_FIRST_SEEN, ko, lo, cn, inv, &nu),
             !memcmp(k, k0, N * 8));
    OOM_EACH(mi ? "tdm_group_reduce (sort)" : "tdm_group_reduce (hash)",
             tdm_group_reduce(c, TDM_F64, k, TDM_F64, v, N, TDM_AGG_MEAN, 0, ko, vo, &nu), !memcmp(k, k0, N * 8));
    OOM_EACH(mi ? "tdm_isin (sort)" : "tdm_isin (hash)", tdm_isin(c, TDM_F64, k, N, k + 100, 1000, TDM_EQ_NUMERIC, f),
             !memcmp(k, k0, N * 8));
    OOM_EACH(mi ? "tdm_join (sort)" : "tdm_join (hash)",
             tdm_join(c, TDM_JOIN_LEFT, TDM_U64, b, N / 2, b + N / 2, N / 2, 0, lo, ro, 4 * N, &nu),
             !memcmp(a, b, N * 8));
  }
  tdm_test_ops_method(TDM_TEST_OPS_AUTO);
  free(k);
  free(k0);
  free(v);
  free(ko);
  free(vo);
  free(a);
  free(b);
  free(cn);
  free(inv);
  free(lo);
  free(ro);
  free(f);
  tdm_ctx_destroy(c);
}

/* ---- the dense method's primitives ----------------------------------------- */

/* Numeric order of two integer keys' bits, as plainly as it can be said. */
static int int_less(tdm_type t, uint64_t a, uint64_t b) {
  switch (t) {
  case TDM_U32: return (uint32_t)a < (uint32_t)b;
  case TDM_I32: return (int32_t)(uint32_t)a < (int32_t)(uint32_t)b;
  case TDM_I64: return (int64_t)a < (int64_t)b;
  default: return a < b;
  }
}

static uint64_t int_key(tdm_type t, const void *k, size_t i) {
  return tdm_type_size(t) == 4 ? ((const uint32_t *)k)[i] : ((const uint64_t *)k)[i];
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The building blocks of the operations written once (src/backend.h) against
 * plain loops: every key type, sizes up to 3000 (full tier: 40000), one
 * thread and all. */
Test(ops_blocks, against_plain_loops) {
  char why[300];
  int th;
  for (th = 0; th < 2; th++) {
    tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, th ? 0 : 1);
    cr_assert(blocks_check(c, 0, 0xB10C0 + (uint64_t)th, prop_scaled(3000, 40000), why, sizeof why), "%s", why);
    tdm_ctx_destroy(c);
  }
}

/* The min/max pass and isin by the bit table against plain loops, on small
 * ranges of every integer type at each base, with a set from one part of
 * the range and queries from all of it and beyond (below the set's min,
 * above its max), dense forced and by the rule, on one thread and on all. */
Test(ops_dense, minmax_and_isin_against_plain_loops) {
  static const tdm_type ts[4] = {TDM_U32, TDM_U64, TDM_I32, TDM_I64};
  static const size_t sizes[5] = {1, 2, 63, 1000, 70001};
  tdm_ctx *ctx[2] = {prop_ctx(TDM_BACKEND_CPU, 1), cpu_all()};
  prop_rng r;
  int ti, base, ci, mi;
  size_t si;
  prop_rng_init(&r, 0xDE45E);
  for (ti = 0; ti < 4; ti++)
    for (base = 0; base < PROP_SMALL_RANGE_BASES; base++)
      for (si = 0; si < 5; si++) {
        tdm_type t = ts[ti];
        size_t n = sizes[si], m = n / 3 + 1, ks = tdm_type_size(t), i, j;
        char *q = malloc(n * ks), *s = malloc(m * ks);
        uint8_t *f = malloc(n), *want = malloc(n);
        uint64_t mn, mx, wmn, wmx, *sb = malloc(m * 8);
        prop_fill_small_range(&r, t, q, n, base);
        memcpy(s, q + (n - m) * ks, m * ks);
        wmn = wmx = int_key(t, q, 0);
        for (i = 1; i < n; i++) {
          uint64_t k = int_key(t, q, i);
          if (int_less(t, k, wmn)) wmn = k;
          if (int_less(t, wmx, k)) wmx = k;
        }
        /* Membership by bits: the set's bits sorted, each query searched. */
        for (j = 0; j < m; j++) sb[j] = int_key(t, s, j);
        qsort(sb, m, 8, cmp_u64);
        for (i = 0; i < n; i++) {
          uint64_t k = int_key(t, q, i);
          want[i] = bsearch(&k, sb, m, 8, cmp_u64) != NULL;
        }
        for (ci = 0; ci < 2; ci++) {
          OK(tdm_test_ops_minmax(ctx[ci], t, q, n, &mn, &mx));
          cr_assert(mn == wmn && mx == wmx, "%s base %d n %zu: min/max %" PRIx64 "/%" PRIx64 ", plain %" PRIx64
                    "/%" PRIx64, tdm_type_name(t), base, n, mn, mx, wmn, wmx);
          for (mi = 0; mi < 2; mi++) {
            tdm_test_ops_method(mi ? TDM_TEST_OPS_AUTO : TDM_TEST_OPS_DENSE);
            memset(f, 0xee, n);
            OK(tdm_isin(ctx[ci], t, q, n, s, m, 0, f));
            tdm_test_ops_method(TDM_TEST_OPS_AUTO);
            cr_assert(!memcmp(f, want, n), "%s base %d n %zu method %d ctx %d: isin differs", tdm_type_name(t), base,
                      n, mi, ci);
          }
        }
        free(q);
        free(s);
        free(f);
        free(want);
        free(sb);
      }
  tdm_ctx_destroy(ctx[0]);
  tdm_ctx_destroy(ctx[1]);
}

/* The dense table counts in 16 bits and logs a count that would pass
 * 65535 (cpu/ops_cpu.c, DENSE_SPILL): slots of exactly 65535, 65536,
 * 131071 and 200000 rows among a scatter of small ones, shuffled, on one
 * thread and on all (each thread its own table), in both orders, with and
 * without first rows and the inverse, and COUNT: every count against a
 * plain count, every output against the sort method's. */
Test(ops_dense, counts_past_sixteen_bits) {
  static const size_t hot[4] = {65535, 65536, 131071, 200000};
  static const tdm_type ts[2] = {TDM_U32, TDM_I64};
  enum { SCATTER = 3000, RANGE = 1000 };
  tdm_ctx *ctx[2] = {prop_ctx(TDM_BACKEND_CPU, 1), cpu_all()};
  size_t n = SCATTER, i, j, h, nu[2], ng[2];
  uint64_t *key, *plain = calloc(RANGE + 4, 8), *out[2][5];
  prop_rng r;
  int ti, ci, fl, mi;
  for (h = 0; h < 4; h++) n += hot[h];
  key = malloc(n * 8);
  prop_rng_init(&r, 0x16B17);
  for (i = 0; i < SCATTER; i++) key[i] = prop_below(&r, RANGE);
  for (h = 0; h < 4; h++)
    for (j = 0; j < hot[h]; j++) key[i++] = RANGE + h;
  for (i = n - 1; i > 0; i--) {
    uint64_t x = key[i];
    j = (size_t)prop_below(&r, i + 1);
    key[i] = key[j];
    key[j] = x;
  }
  for (i = 0; i < n; i++) plain[key[i]]++;
  for (mi = 0; mi < 2; mi++)
    for (j = 0; j < 5; j++) out[mi][j] = malloc(n * 8);
  for (ti = 0; ti < 2; ti++) {
    tdm_type t = ts[ti];
    size_t ks = tdm_type_size(t);
    char *k = malloc(n * ks);
    /* i64 keys below zero: key - 500, the same slots. */
    for (i = 0; i < n; i++)
      if (ks == 4) ((uint32_t *)k)[i] = (uint32_t)key[i];
      else ((int64_t *)k)[i] = (int64_t)key[i] - 500;
    for (ci = 0; ci < 2; ci++)
      for (fl = 0; fl < 4; fl++) {
        unsigned flags = fl & 1 ? TDM_ORDER_FIRST_SEEN : 0;
        int extras = fl & 2;
        for (mi = 0; mi < 2; mi++) {
          tdm_test_ops_method(mi ? TDM_TEST_OPS_SORT : TDM_TEST_OPS_DENSE);
          for (j = 0; j < 5; j++) memset(out[mi][j], 0xee, n * 8);
          OK(tdm_unique(ctx[ci], t, k, n, flags, out[mi][0], extras ? out[mi][1] : NULL, out[mi][2],
                        extras ? out[mi][3] : NULL, &nu[mi]));
          OK(tdm_group_reduce(ctx[ci], t, k, TDM_U64, NULL, n, TDM_AGG_COUNT, flags, NULL, out[mi][4], &ng[mi]));
          tdm_test_ops_method(TDM_TEST_OPS_AUTO);
        }
        cr_assert(nu[0] == nu[1] && ng[0] == nu[0], "%s ctx %d flags %d: %zu / %zu groups, the sort %zu",
                  tdm_type_name(t), ci, fl, nu[0], ng[0], nu[1]);
        for (j = 0; j < 5; j++)
          cr_assert(!memcmp(out[0][j], out[1][j], (j == 3 ? n : nu[0]) * (j == 0 ? ks : 8)),
                    "%s ctx %d flags %d: output %zu differs from the sort's", tdm_type_name(t), ci, fl, j);
        for (j = 0; j < nu[0]; j++) {
          uint64_t kb = ks == 4 ? ((uint32_t *)out[0][0])[j] : (uint64_t)(((int64_t *)out[0][0])[j] + 500);
          cr_assert(kb < RANGE + 4 && out[0][2][j] == plain[kb] && out[0][4][j] == plain[kb],
                    "%s ctx %d flags %d: group %zu (key %" PRIu64 ") counts %" PRIu64 " / %" PRIu64
                    ", plain %" PRIu64, tdm_type_name(t), ci, fl, j, kb, out[0][2][j], out[0][4][j],
                    kb < RANGE + 4 ? plain[kb] : 0);
        }
      }
    free(k);
  }
  for (mi = 0; mi < 2; mi++)
    for (j = 0; j < 5; j++) free(out[mi][j]);
  free(key);
  free(plain);
  tdm_ctx_destroy(ctx[0]);
  tdm_ctx_destroy(ctx[1]);
}

/* A dense table that cannot be allocated is TDM_ERR_OUT_OF_MEMORY, inputs
 * untouched, and then the call succeeds. */
Test(ops_dense, every_allocation_point) {
  enum { N = 60000 };
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 2);
  int64_t *k = malloc(N * 8), *k0 = malloc(N * 8), *ko = malloc(N * 8);
  uint64_t *fi = malloc(N * 8), *cn = malloc(N * 8), *inv = malloc(N * 8);
  uint8_t *f = malloc(N);
  size_t nu, i;
  for (i = 0; i < N; i++) k0[i] = (int64_t)(i * 7919 % 30011) - 15000;
  memcpy(k, k0, N * 8);
  tdm_test_ops_method(TDM_TEST_OPS_DENSE);
  OOM_EACH("tdm_unique (dense)", tdm_unique(c, TDM_I64, k, N, TDM_ORDER_FIRST_SEEN, ko, fi, cn, inv, &nu),
           !memcmp(k, k0, N * 8));
  OOM_EACH("tdm_group_reduce (dense)", tdm_group_reduce(c, TDM_I64, k, TDM_U64, NULL, N, TDM_AGG_COUNT, 0, ko, cn, &nu),
           !memcmp(k, k0, N * 8));
  OOM_EACH("tdm_isin (dense)", tdm_isin(c, TDM_I64, k, N, k + 100, 1000, 0, f), !memcmp(k, k0, N * 8));
  tdm_test_ops_method(TDM_TEST_OPS_AUTO);
  free(k);
  free(k0);
  free(ko);
  free(fi);
  free(cn);
  free(inv);
  free(f);
  tdm_ctx_destroy(c);
}
