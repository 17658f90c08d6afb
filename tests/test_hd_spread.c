/*
 * test_hd_spread.c: the per-element functions that let the CUDA kernels
 * spread work one thread would otherwise do alone over unbounded input,
 * run on the CPU against a direct computation.
 *  - tdm__csr_owner: the owner of an output position of a CSR result (a
 *    B-tree range's query, a join's left row: work by output position
 *    instead of by owner), and tdm__csr_next, the walk from an earlier
 *    position's owner, over long stretches of empty owners too.
 *  - tdm_join's fill by output position (tdm__ops_join_fill64, the walk and
 *    tdm__ops_join_right64, one of the two widths the CUDA kernel runs): every kind, a hot left row,
 *    unmatched rows between matched ones, the output split into ranges at
 *    random points, equals the plain per-left-row loop.
 *  - the CUDA hash join's run words (tdm__ops_join_run_add summed in any
 *    order per key give each run's start and length).
 *  - tdm__dup_combine grouped in any way (what a parallel reduce-by-key over
 *    a run of equal keys does) equals the sequential fold tdm__bt_reduce_run.
 *  - the order-free form the CUDA reduce-by-key runs (tdm__dup_by_position,
 *    tdm__dup_pick): combined in any grouping and any operand order, since
 *    CUB's ReduceByKey documents no order, it still equals that fold.
 *  - tdm_group_reduce's long groups on CUDA (ops_keys.h): the order-free
 *    aggregations (tdm__ops_order_free) combined with tdm__ops_step in any
 *    grouping and order, and the float sums folded chunk after chunk over
 *    the gathered values (tdm__ops_fold_on, tdm__ops_fold_put), equal the
 *    fold the CPU runs (tdm__ops_fold), bit for bit.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tandem/detail/btree_node.h"
#include "tandem/detail/csr.h"
#include "tandem/detail/ops_keys.h"

Test(hd_spread, csr_owner_matches_a_linear_walk) {
  enum { N = 300 };
  uint64_t off[N + 1], seed = 7;
  for (int trial = 0; trial < 40; trial++) {
    uint64_t n = 1 + (uint64_t)trial * 7 % N, j, i = 0;
    off[0] = 0;
    for (uint64_t q = 0; q < n; q++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      /* Many empty ranges, some long ones, one query holding almost all. */
      uint64_t r = seed >> 33, len = r % 3 == 0 ? 0 : r % 5;
      if (q == n / 2 && trial % 2) len = 5000;
      off[q + 1] = off[q] + len;
    }
    for (j = 0; j < off[n]; j++) {
      while (!(off[i] <= j && j < off[i + 1])) i++; /* the owner, walking */
      cr_assert_eq(tdm__csr_owner(off, n, j), i, "trial %d, n %llu, position %llu", trial, (unsigned long long)n,
                   (unsigned long long)j);
    }
  }
}

Test(hd_spread, csr_owner_single_query_takes_everything) {
  uint64_t off[2] = {0, (uint64_t)1 << 40};
  cr_assert_eq(tdm__csr_owner(off, 1, 0), 0u);
  cr_assert_eq(tdm__csr_owner(off, 1, ((uint64_t)1 << 40) - 1), 0u);
}

static uint64_t lcg(uint64_t *seed) {
  *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
  return *seed >> 33;
}

/* The walk equals the search at every position: from the previous
 * position's owner (consecutive positions, as the workers walk) and from
 * the owner of a random earlier position, over offsets with single empty
 * owners, long stretches of them (the galloping step), and a hot owner. */
Test(hd_spread, csr_next_matches_the_owner_search) {
  enum { N = 30000 };
  static uint64_t off[N + 1];
  uint64_t seed = 11;
  for (int trial = 0; trial < 12; trial++) {
    uint64_t n = 1 + lcg(&seed) % N, j, i = 0;
    off[0] = 0;
    for (uint64_t q = 0; q < n; q++) {
      uint64_t r = lcg(&seed), len = r % 3 == 0 ? 0 : r % 4;
      /* a stretch of up to 5000 empty owners, now and then */
      if (trial % 3 == 1 && r % 200 == 0) {
        uint64_t e = q + 1 + r % 5000;
        for (; q < e && q < n; q++) off[q + 1] = off[q];
        if (q >= n) break;
      }
      if (q == n / 3 && trial % 2) len = 20000;
      off[q + 1] = off[q] + len;
    }
    if (off[n] == 0) continue;
    for (j = 0; j < off[n]; j++) {
      uint64_t want = tdm__csr_owner(off, n, j), back = j - lcg(&seed) % (j + 1);
      i = tdm__csr_next(off, n, i, j);
      cr_assert_eq(i, want, "trial %d, n %llu, position %llu: walk %llu, search %llu", trial, (unsigned long long)n,
                   (unsigned long long)j, (unsigned long long)i, (unsigned long long)want);
      cr_assert_eq(tdm__csr_next(off, n, tdm__csr_owner(off, n, back), j), want, "trial %d, position %llu from %llu",
                   trial, (unsigned long long)j, (unsigned long long)back);
    }
  }
}

/* The per-left-row loop tdm_join's fill was before it went by output
 * position: the reference bytes. */
static void join_rows_ref(int kind, const uint64_t *o, uint64_t nl, const uint64_t *ms, const uint64_t *mc,
                          const uint64_t *ridx, uint64_t *lo, uint64_t *ro) {
  for (uint64_t i = 0; i < nl; i++) {
    uint64_t at = o[i];
    if (kind == TDM_JOIN_SEMI || kind == TDM_JOIN_ANTI) {
      if (tdm__ops_join_rows(kind, mc[i])) lo[at] = i;
      continue;
    }
    for (uint64_t t = 0; t < mc[i]; t++) lo[at + t] = i, ro[at + t] = ridx[ms[i] + t];
    if (!mc[i] && kind == TDM_JOIN_LEFT) lo[at] = i, ro[at] = TDM_NO_MATCH;
  }
}

/* Random joins: per left row a match count (none for many, a hot row of
 * thousands on most trials, long stretches of unmatched rows on some) and
 * a start in a pool of right indices; every kind, with right_out and (INNER,
 * LEFT) without; the output filled range by range, the ranges cut at random
 * points (1 to 700 rows, so many cuts fall inside the hot row) and filled in
 * an order of their own, then once whole. Rows past the total stay untouched. */
Test(hd_spread, join_fill_by_position_equals_the_per_row_loop) {
  enum { NL = 3000, POOL = 20000, CAP = 40000 };
  static uint64_t ms[NL], mc[NL], o[NL + 1], ridx[POOL], wl[CAP], wr[CAP], gl[CAP], gr[CAP], cut[CAP + 1];
  uint64_t seed = 5;
  for (uint64_t k = 0; k < POOL; k++) ridx[k] = lcg(&seed) * 977 + k;
  for (int trial = 0; trial < 24; trial++) {
    uint64_t nl = 1 + lcg(&seed) % NL, hot = lcg(&seed) % nl;
    for (uint64_t i = 0; i < nl; i++) {
      uint64_t r = lcg(&seed);
      mc[i] = r % 2 ? 0 : r % 5;
      if (trial % 4 == 1 && (i / 300) % 2) mc[i] = 0; /* 300 unmatched rows in a row */
      if (trial % 4 != 3 && i == hot) mc[i] = 2000 + r % 9000;
      if (trial % 8 == 6) mc[i] = i == hot ? 15000 : 0; /* one row has every match */
      ms[i] = lcg(&seed) % (POOL - mc[i] + 1);
    }
    for (int kind = TDM_JOIN_INNER; kind <= TDM_JOIN_ANTI; kind++)
      for (int with_right = 0; with_right < 2; with_right++) {
        uint64_t total, nc = 0, *rout = with_right ? gr : NULL;
        if (!with_right && kind > TDM_JOIN_LEFT) continue;
        o[0] = 0;
        for (uint64_t i = 0; i < nl; i++) o[i + 1] = o[i] + tdm__ops_join_rows(kind, mc[i]);
        total = o[nl];
        cr_assert_lt(total, (uint64_t)CAP);
        memset(wl, 0xee, sizeof wl), memset(wr, 0xee, sizeof wr);
        join_rows_ref(kind, o, nl, ms, mc, ridx, wl, wr);
        for (int whole = 0; whole < 2; whole++) {
          memset(gl, 0xee, sizeof gl), memset(gr, 0xee, sizeof gr);
          if (whole) {
            tdm__ops_join_fill64(kind, o, nl, ms, mc, ridx, gl, rout, 0, total);
          } else {
            for (uint64_t at = 0; at < total; at += 1 + lcg(&seed) % 700) cut[nc++] = at;
            cut[nc] = total;
            for (uint64_t c = 0; c < nc; c++) { /* first, last, second, ...: the ranges out of order */
              uint64_t k = c % 2 ? nc - 1 - c / 2 : c / 2;
              tdm__ops_join_fill64(kind, o, nl, ms, mc, ridx, gl, rout, cut[k], cut[k + 1]);
            }
          }
          for (uint64_t r = 0; r <= total; r++) {
            cr_assert_eq(gl[r], wl[r], "trial %d kind %d whole %d: row %llu of %llu: left %llx, want %llx", trial,
                         kind, whole, (unsigned long long)r, (unsigned long long)total, (unsigned long long)gl[r],
                         (unsigned long long)wl[r]);
            if (with_right && kind <= TDM_JOIN_LEFT)
              cr_assert_eq(gr[r], wr[r], "trial %d kind %d whole %d: row %llu of %llu: right %llx, want %llx", trial,
                           kind, whole, (unsigned long long)r, (unsigned long long)total, (unsigned long long)gr[r],
                           (unsigned long long)wr[r]);
            else cr_assert_eq(gr[r], 0xeeeeeeeeeeeeeeeeull, "trial %d kind %d: right_out written", trial, kind);
          }
        }
      }
  }
}

/* The CUDA hash join's table of runs: every sorted right row's
 * tdm__ops_join_run_add, summed per distinct key in a random order (as the
 * SUM claims land), gives each run's start and length; runs of one row, a
 * hot run of most rows, a run at the end and the largest start the word
 * holds (a right side of TDM__OPS_JOIN_RUN_MAX rows), and a miss (0) is no
 * run. */
Test(hd_spread, join_run_words_sum_to_start_and_length) {
  enum { N = 5000 };
  static uint64_t keys[N], order[N];
  uint64_t seed = 23;
  for (int trial = 0; trial < 30; trial++) {
    uint64_t n = 1 + lcg(&seed) % N, k, runs = 0;
    keys[0] = 0;
    for (k = 1; k < n; k++) keys[k] = keys[k - 1] + (trial % 5 == 2 && k > n / 10 ? 0 : lcg(&seed) % 3 == 0);
    for (k = 0; k < n; k++) order[k] = k;
    for (k = n - 1; k > 0; k--) { /* the adds in a random order */
      uint64_t j = lcg(&seed) % (k + 1), t = order[k];
      order[k] = order[j], order[j] = t;
    }
    for (uint64_t start = 0; start < n; runs++) {
      uint64_t end = start + 1, w = 0;
      while (end < n && keys[end] == keys[start]) end++;
      for (k = 0; k < n; k++) {
        uint64_t at = order[k];
        if (keys[at] == keys[start]) w += tdm__ops_join_run_add(at == 0 || keys[at] != keys[at - 1], at);
      }
      cr_assert_eq(tdm__ops_join_run_start(w), start, "trial %d run %llu", trial, (unsigned long long)runs);
      cr_assert_eq(tdm__ops_join_run_count(w), end - start, "trial %d run %llu", trial, (unsigned long long)runs);
      start = end;
    }
  }
  {
    uint64_t last = TDM__OPS_JOIN_RUN_MAX - 1, w = tdm__ops_join_run_add(1, last);
    cr_assert_eq(tdm__ops_join_run_start(w), last);
    cr_assert_eq(tdm__ops_join_run_count(w), 1u);
    w = tdm__ops_join_run_add(1, 0);
    for (uint64_t k = 1; k < 1000; k++) w += tdm__ops_join_run_add(0, k);
    cr_assert_eq(tdm__ops_join_run_start(w), 0u);
    cr_assert_eq(tdm__ops_join_run_count(w), 1000u);
    cr_assert_eq(tdm__ops_join_run_count(0), 0u);
    cr_assert_eq(tdm__ops_join_run_start(0), 0u);
  }
}

/* Folds vals[s, e) as a parallel reduction would: chunks of random length
 * folded on their own, then the chunk results folded in order. */
static uint64_t chunked_fold(const uint64_t *vals, uint64_t s, uint64_t e, int dup, uint32_t vs, int vkind,
                             uint64_t *seed) {
  uint64_t acc = 0;
  int have = 0;
  while (s < e) {
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t len = 1 + (*seed >> 33) % 9, ce = s + len < e ? s + len : e, part = vals[s];
    for (uint64_t i = s + 1; i < ce; i++) part = tdm__dup_combine(part, vals[i], dup, vs, vkind);
    acc = have ? tdm__dup_combine(acc, part, dup, vs, vkind) : part;
    have = 1;
    s = ce;
  }
  return acc;
}

Test(hd_spread, dup_policies_fold_in_any_grouping) {
  enum { N = 257 };
  uint64_t vals[N], seed = 99;
  static const int kinds[] = {TDM_KIND_UNSIGNED, TDM_KIND_SIGNED, TDM_KIND_FLOAT};
  for (int dup = TDM__DUP_KEEP_FIRST; dup <= TDM__DUP_MAX; dup++)
    for (uint32_t vs = 4; vs <= 8; vs += 4)
      for (int k = 0; k < 3; k++) {
        if (dup == TDM__DUP_SUM && kinds[k] == TDM_KIND_FLOAT) continue; /* refused by the API */
        for (int trial = 0; trial < 20; trial++) {
          for (int i = 0; i < N; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            vals[i] = vs == 4 ? (seed >> 32) : seed ^ (seed >> 29);
          }
          uint64_t e = 1 + (uint64_t)trial * 13 % N;
          uint64_t want = tdm__bt_reduce_run(vals, 0, e, dup, vs, kinds[k]);
          uint64_t got = chunked_fold(vals, 0, e, dup, vs, kinds[k], &seed);
          cr_assert_eq(got, want, "policy %d, %u-byte values, kind %d, run of %llu: grouped %llx, sequential %llx",
                       dup, vs, kinds[k], (unsigned long long)e, (unsigned long long)got, (unsigned long long)want);
        }
      }
}

/* Folds vals[s, e) in a random binary tree with the operands of every node in
 * a random order: what a reduction that may combine partial results in any
 * order can do. Values for SUM / MIN / MAX; for KEEP_FIRST / KEEP_LAST the
 * copies' positions (tdm__dup_pick), then the value at the kept one, as the
 * CUDA hash insert and B+ tree build do. */
static uint64_t any_order_fold(const uint64_t *vals, uint64_t s, uint64_t e, int dup, uint32_t vs, int vkind,
                               uint64_t *seed) {
  uint64_t mid, a, b;
  *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
  if (e - s == 1) return tdm__dup_by_position(dup) ? s : vals[s];
  mid = s + 1 + (*seed >> 33) % (e - s - 1);
  a = any_order_fold(vals, s, mid, dup, vs, vkind, seed);
  b = any_order_fold(vals, mid, e, dup, vs, vkind, seed);
  if (*seed >> 63) { /* the right part first */
    uint64_t t = a;
    a = b;
    b = t;
  }
  return tdm__dup_by_position(dup) ? tdm__dup_pick(a, b, dup) : tdm__dup_combine(a, b, dup, vs, vkind);
}

Test(hd_spread, order_free_reduce_matches_the_fold_in_any_order) {
  enum { N = 200 };
  uint64_t vals[N], seed = 5;
  static const int kinds[] = {TDM_KIND_UNSIGNED, TDM_KIND_SIGNED, TDM_KIND_FLOAT};
  for (int dup = TDM__DUP_KEEP_FIRST; dup <= TDM__DUP_MAX; dup++)
    for (uint32_t vs = 4; vs <= 8; vs += 4)
      for (int k = 0; k < 3; k++) {
        if (dup == TDM__DUP_SUM && kinds[k] == TDM_KIND_FLOAT) continue;
        for (int trial = 0; trial < 30; trial++) {
          for (int i = 0; i < N; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            /* Few distinct values, so MIN / MAX see ties of equal bits too. */
            uint64_t r = trial % 2 ? seed % 5 : seed;
            vals[i] = vs == 4 ? (uint32_t)(r ^ (r >> 32)) : r ^ (r >> 29);
          }
          uint64_t e = 1 + (uint64_t)trial * 17 % N;
          uint64_t want = tdm__bt_reduce_run(vals, 0, e, dup, vs, kinds[k]);
          uint64_t got = any_order_fold(vals, 0, e, dup, vs, kinds[k], &seed);
          if (tdm__dup_by_position(dup)) got = vals[got];
          cr_assert_eq(got, want, "policy %d, %u-byte values, kind %d, run of %llu: any order %llx, sequential %llx",
                       dup, vs, kinds[k], (unsigned long long)e, (unsigned long long)got, (unsigned long long)want);
        }
      }
}

/* Why KEEP_FIRST / KEEP_LAST reduce positions: on values their combine keeps
 * one operand, so swapping the operands changes the result, which an
 * operator that CUB may apply in either order must not do. */
Test(hd_spread, keep_policies_are_not_commutative_on_values_but_are_on_positions) {
  for (int dup = TDM__DUP_KEEP_FIRST; dup <= TDM__DUP_KEEP_LAST; dup++) {
    cr_assert(tdm__dup_by_position(dup));
    cr_assert_neq(tdm__dup_combine(1, 2, dup, 8, TDM_KIND_UNSIGNED), tdm__dup_combine(2, 1, dup, 8, TDM_KIND_UNSIGNED));
    cr_assert_eq(tdm__dup_pick(3, 9, dup), tdm__dup_pick(9, 3, dup));
    cr_assert_eq(tdm__dup_pick(3, 9, dup), dup == TDM__DUP_KEEP_FIRST ? 3u : 9u);
  }
  for (int dup = TDM__DUP_SUM; dup <= TDM__DUP_MAX; dup++) cr_assert(!tdm__dup_by_position(dup));
}

/* ---- tdm_group_reduce's long groups (ops_keys.h) ------------------------ */

static const tdm_type ops_vtypes[6] = {TDM_U32, TDM_U64, TDM_I32, TDM_I64, TDM_F32, TDM_F64};

/* n values of type t as raw words at positions mem[0..n) of v (4-byte
 * types in the low half), with floats' specials (NaN payloads, both zeros,
 * infinities) among them, and few distinct values on odd trials so that
 * MIN / MAX see ties. */
static void ops_values(tdm_type t, uint64_t *v, size_t n, int trial, uint64_t *seed) {
  static const uint64_t f64s[] = {0x7ff8000000000001ull, 0x8000000000000000ull, 0, 0x7ff0000000000000ull,
                                  0xfff0000000000000ull, 0xfff8000000000000ull};
  static const uint32_t f32s[] = {0x7fc00001u, 0x80000000u, 0, 0x7f800000u, 0xff800000u, 0xffc00000u};
  for (size_t i = 0; i < n; i++) {
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t r = trial % 2 ? *seed % 5 : *seed ^ (*seed >> 29);
    if (t == TDM_F64) {
      double d = (double)(int64_t)(r % 2000001) / 7.0 - 1e5;
      memcpy(&r, &d, 8);
      if (*seed % 97 == 0) r = f64s[(*seed >> 40) % 6];
    } else if (t == TDM_F32) {
      float f = (float)(int64_t)(r % 2000001) / 7.0f - 1e5f;
      uint32_t b;
      memcpy(&b, &f, 4);
      if (*seed % 97 == 0) b = f32s[(*seed >> 40) % 6];
      r = b;
    }
    v[i] = tdm_type_size(t) == 4 ? (uint32_t)r : r;
  }
}

/* The group's result as the CPU computes it: tdm__ops_fold over the members
 * mem[0..n) of the scattered values (out: one 8-byte word). */
static uint64_t ops_fold_ref(tdm_type t, const void *scattered, const uint64_t *mem, size_t n, int agg) {
  uint64_t out = 0;
  if (tdm_type_size(t) == 4)
    tdm__ops_fold32((const uint32_t *)scattered, mem, 0, n, agg, tdm__ops_value_kind(t), tdm__key_kind(t), &out, 0);
  else
    tdm__ops_fold64((const uint64_t *)scattered, mem, 0, n, agg, tdm__ops_value_kind(t), tdm__key_kind(t), &out, 0);
  return out;
}

/* The CUDA float SUM / MEAN of a long group: the gathered values g[0..n)
 * folded chunk after chunk of random lengths from (g[0], g[0] as float64),
 * then written by tdm__ops_fold_put. */
static uint64_t ops_fold_chunks(tdm_type t, const uint64_t *g, size_t n, int agg, uint64_t *seed) {
  int vk = tdm__ops_value_kind(t), kind = tdm__key_kind(t), narrow = tdm_type_size(t) == 4;
  uint64_t out = 0, acc = g[0];
  double m = narrow ? tdm__ops_to_f64_32((uint32_t)acc, vk) : tdm__ops_to_f64_64(acc, vk);
  size_t c = 1;
  while (c < n) {
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    size_t len = 1 + (*seed >> 33) % 40;
    if (len > n - c) len = n - c;
    if (narrow) { /* the chunk as 4-byte words, as the kernel stages it */
      uint32_t w[40], a32 = (uint32_t)acc;
      for (size_t i = 0; i < len; i++) w[i] = (uint32_t)g[c + i];
      tdm__ops_fold_on32(&a32, &m, w, len, agg, vk, kind);
      acc = a32;
    } else {
      tdm__ops_fold_on64(&acc, &m, g + c, len, agg, vk, kind);
    }
    c += len;
  }
  if (narrow) tdm__ops_fold_put32((uint32_t)acc, m, n, agg, vk, &out, 0);
  else tdm__ops_fold_put64(acc, m, n, agg, vk, &out, 0);
  return out;
}

/* g[s..e) combined with tdm__ops_step in a random binary tree, the operands
 * of every node in a random order (what CUB's reduce-by-key may do). */
static uint64_t ops_any_order(tdm_type t, const uint64_t *g, size_t s, size_t e, int agg, uint64_t *seed) {
  int vk = tdm__ops_value_kind(t), kind = tdm__key_kind(t);
  uint64_t a, b, mid;
  *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
  if (e - s == 1) return g[s];
  mid = s + 1 + (*seed >> 33) % (e - s - 1);
  a = ops_any_order(t, g, s, mid, agg, seed);
  b = ops_any_order(t, g, mid, e, agg, seed);
  if (*seed >> 63) {
    uint64_t x = a;
    a = b;
    b = x;
  }
  return tdm_type_size(t) == 4 ? tdm__ops_step32((uint32_t)a, (uint32_t)b, agg, vk, kind)
                               : tdm__ops_step64(a, b, agg, vk, kind);
}

/* Scatters n values of type t at ascending random members of a larger
 * array (as a group's rows lie in the input), gathers them back in member
 * order (gather_kernel), and compares the CUDA forms with the CPU's fold. */
Test(hd_spread, ops_long_group_folds_match_the_cpu_fold) {
  enum { N = 300, SPREAD = 4 * N };
  static uint64_t vals[N], mem[N], g[N], sc64[SPREAD];
  static uint32_t sc32[SPREAD];
  uint64_t seed = 2026;
  for (int ti = 0; ti < 6; ti++) {
    tdm_type t = ops_vtypes[ti];
    int vk = tdm__ops_value_kind(t);
    for (int agg = TDM_AGG_SUM; agg <= TDM_AGG_MEAN; agg++) {
      if (agg == TDM_AGG_FIRST || agg == TDM_AGG_LAST) continue; /* O(1) reads, no fold */
      for (int trial = 0; trial < 24; trial++) {
        size_t n = 1 + (size_t)trial * 37 % N, at = 0;
        uint64_t want, got;
        ops_values(t, vals, n, trial, &seed);
        for (size_t i = 0; i < n; i++) { /* ascending members, gaps of 0..3 */
          seed = seed * 6364136223846793005ull + 1442695040888963407ull;
          at += (seed >> 40) % 4;
          mem[i] = at++;
          sc32[mem[i]] = (uint32_t)vals[i];
          sc64[mem[i]] = vals[i];
        }
        for (size_t i = 0; i < n; i++) g[i] = tdm_type_size(t) == 4 ? sc32[mem[i]] : sc64[mem[i]];
        want = ops_fold_ref(t, tdm_type_size(t) == 4 ? (const void *)sc32 : (const void *)sc64, mem, n, agg);
        if (tdm__ops_order_free(agg, vk)) {
          cr_assert(agg != TDM_AGG_MEAN);
          got = ops_any_order(t, g, 0, n, agg, &seed);
        } else {
          cr_assert(agg == TDM_AGG_MEAN || vk == TDM__OPS_V_F32 || vk == TDM__OPS_V_F64, "type %s agg %d",
                    tdm_type_name(t), agg);
          got = ops_fold_chunks(t, g, n, agg, &seed);
        }
        cr_assert_eq(got, want, "%s agg %d, group of %zu (trial %d): CUDA form %llx, CPU fold %llx", tdm_type_name(t),
                     agg, n, trial, (unsigned long long)got, (unsigned long long)want);
      }
    }
  }
}

/* Why float SUM is not order-free: regrouping a float sum changes its bits
 * ((1e16 + 1) + 1 rounds twice, 1e16 + (1 + 1) once), so CUB may not
 * reduce it; integer SUM, MIN and MAX may. */
Test(hd_spread, ops_float_sum_is_not_order_free) {
  double big = 1e16, one = 1.0;
  uint64_t b, o, left, right;
  memcpy(&b, &big, 8);
  memcpy(&o, &one, 8);
  left = tdm__ops_step64(tdm__ops_step64(b, o, TDM_AGG_SUM, TDM__OPS_V_F64, TDM_KIND_FLOAT), o, TDM_AGG_SUM,
                         TDM__OPS_V_F64, TDM_KIND_FLOAT);
  right = tdm__ops_step64(b, tdm__ops_step64(o, o, TDM_AGG_SUM, TDM__OPS_V_F64, TDM_KIND_FLOAT), TDM_AGG_SUM,
                          TDM__OPS_V_F64, TDM_KIND_FLOAT);
  cr_assert_neq(left, right);
  for (int ti = 0; ti < 6; ti++) {
    int vk = tdm__ops_value_kind(ops_vtypes[ti]), flt = vk == TDM__OPS_V_F32 || vk == TDM__OPS_V_F64;
    cr_assert_eq(tdm__ops_order_free(TDM_AGG_SUM, vk), !flt);
    cr_assert(tdm__ops_order_free(TDM_AGG_MIN, vk) && tdm__ops_order_free(TDM_AGG_MAX, vk));
    cr_assert(!tdm__ops_order_free(TDM_AGG_MEAN, vk) && !tdm__ops_order_free(TDM_AGG_COUNT, vk));
  }
}
