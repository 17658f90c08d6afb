/*
 * ops_keys.h: per-element logic of the data operations (tandem/ops.h) that
 * both backends and the tests share: the canonical form of a key under the
 * call's equality, and the folds of tdm_group_reduce.
 *
 * Under bit equality a key is its own canonical form. Under TDM_EQ_NUMERIC a
 * float key maps -0.0 to +0.0 and every NaN to the positive quiet NaN with no
 * payload, so that equal keys become equal bits: hashing and sorting the
 * canonical bits then find the same groups, and the canonical NaN sorts after
 * +inf (where numpy puts NaN).
 *
 * tdm_join's output rows are written by output position on both backends
 * (tdm__ops_join_fill32 / 64 and the pieces it is made of, at the end), so a left
 * row with many matches is spread over every worker.
 */
#ifndef TANDEM_OPS_KEYS_H
#define TANDEM_OPS_KEYS_H

#include "../ops.h"
#include "csr.h"
#include "hd.h"
#include "keybits.h"

TDM_HD uint32_t tdm__ops_canon32(uint32_t raw, int numeric_float) {
  uint32_t mag = raw & 0x7fffffffu;
  if (!numeric_float) return raw;
  if (mag == 0) return 0;
  if (mag > 0x7f800000u) return 0x7fc00000u;
  return raw;
}

TDM_HD uint64_t tdm__ops_canon64(uint64_t raw, int numeric_float) {
  uint64_t mag = raw & 0x7fffffffffffffffull;
  if (!numeric_float) return raw;
  if (mag == 0) return 0;
  if (mag > 0x7ff0000000000000ull) return 0x7ff8000000000000ull;
  return raw;
}

/* A key's canonical form as order-preserving sort bits (keybits.h): the
 * GPU's radix sorts and searches group equal keys by these. */
TDM_HD uint32_t tdm__ops_canon_bits32(uint32_t raw, int kind, int numeric_float) {
  return tdm__bits32_from_key(tdm__ops_canon32(raw, numeric_float), kind);
}
TDM_HD uint64_t tdm__ops_canon_bits64(uint64_t raw, int kind, int numeric_float) {
  return tdm__bits64_from_key(tdm__ops_canon64(raw, numeric_float), kind);
}

/* The value kinds of the folds: how SUM adds and MIN / MAX compare. */
enum { TDM__OPS_V_UINT = 0, TDM__OPS_V_SINT = 1, TDM__OPS_V_F32 = 2, TDM__OPS_V_F64 = 3 };

/* SUM of two values of a 4-byte type given as bits: wrapping for integers,
 * an IEEE add for float32 whose NaN results are the canonical quiet NaN:
 * which operand's NaN payload an add keeps depends on the instruction and on
 * operand order the compiler may swap, and GPUs return a canonical NaN, so
 * only a canonical NaN is the same bits everywhere. */
TDM_HD uint32_t tdm__ops_add32(uint32_t a, uint32_t b, int vkind) {
  if (vkind == TDM__OPS_V_F32) {
    union { uint32_t u; float f; } x, y;
    x.u = a;
    y.u = b;
    x.f = x.f + y.f;
    return x.f != x.f ? 0x7fc00000u : x.u;
  }
  return a + b;
}
TDM_HD uint64_t tdm__ops_add64(uint64_t a, uint64_t b, int vkind) {
  if (vkind == TDM__OPS_V_F64) {
    union { uint64_t u; double f; } x, y;
    x.u = a;
    y.u = b;
    x.f = x.f + y.f;
    return x.f != x.f ? 0x7ff8000000000000ull : x.u;
  }
  return a + b;
}

/* A float sum as written: a NaN (a one-value group's own NaN too) becomes
 * the canonical quiet NaN; integers and other floats are kept. */
TDM_HD uint32_t tdm__ops_sum_out32(uint32_t a, int vkind) {
  return vkind == TDM__OPS_V_F32 && (a & 0x7fffffffu) > 0x7f800000u ? 0x7fc00000u : a;
}
TDM_HD uint64_t tdm__ops_sum_out64(uint64_t a, int vkind) {
  return vkind == TDM__OPS_V_F64 && (a & 0x7fffffffffffffffull) > 0x7ff0000000000000ull ? 0x7ff8000000000000ull : a;
}

/* The canonical quiet NaN for a NaN float64 (MEAN's result), else d. */
TDM_HD double tdm__ops_canon_f64(double d) {
  union { uint64_t u; double f; } x;
  x.f = d;
  if (d != d) x.u = 0x7ff8000000000000ull;
  return x.f;
}

/* A value as float64 (MEAN). */
TDM_HD double tdm__ops_to_f64_32(uint32_t v, int vkind) {
  union { uint32_t u; float f; } x;
  x.u = v;
  if (vkind == TDM__OPS_V_F32) return (double)x.f;
  if (vkind == TDM__OPS_V_SINT) return (double)(int32_t)v;
  return (double)v;
}
TDM_HD double tdm__ops_to_f64_64(uint64_t v, int vkind) {
  union { uint64_t u; double f; } x;
  x.u = v;
  if (vkind == TDM__OPS_V_F64) return x.f;
  if (vkind == TDM__OPS_V_SINT) return (double)(int64_t)v;
  return (double)v;
}

/* MIN / MAX in the contract's key order (keybits.h kinds). */
TDM_HD uint32_t tdm__ops_min32(uint32_t a, uint32_t b, int kind) { return tdm__cmp_raw32(b, a, kind) < 0 ? b : a; }
TDM_HD uint32_t tdm__ops_max32(uint32_t a, uint32_t b, int kind) { return tdm__cmp_raw32(b, a, kind) > 0 ? b : a; }
TDM_HD uint64_t tdm__ops_min64(uint64_t a, uint64_t b, int kind) { return tdm__cmp_raw64(b, a, kind) < 0 ? b : a; }
TDM_HD uint64_t tdm__ops_max64(uint64_t a, uint64_t b, int kind) { return tdm__cmp_raw64(b, a, kind) > 0 ? b : a; }

/* The value kind of a value type (SUM's add, MEAN's conversion). */
TDM_HD int tdm__ops_value_kind(tdm_type t) {
  switch (t) {
  case TDM_I32: case TDM_I64: return TDM__OPS_V_SINT;
  case TDM_F32: return TDM__OPS_V_F32;
  case TDM_F64: return TDM__OPS_V_F64;
  default: return TDM__OPS_V_UINT;
  }
}

/* Reduces one group of tdm_group_reduce (not COUNT) into out[p]: the values
 * v[mem[k]] for k in [s, e) (mem NULL: v[k]), with mem ascending, so every
 * fold is a left fold in input order starting from the group's first value.
 * out is of the value type, float64 for MEAN. vk: the value kind, kind: the
 * value type's keybits.h kind (MIN / MAX order). tdm__ops_fold32 / 64 take
 * 64-bit members, tdm__ops_fold32_m32 / 64_m32 32-bit ones. */
#define TDM__OPS_FOLD(W, SFX, M)                                                                               \
  TDM_HD void tdm__ops_fold##W##SFX(const uint##W##_t *v, const M *mem, size_t s, size_t e, int agg, int vk,   \
                                    int kind, void *out, size_t p) {                                           \
    size_t k;                                                                                                  \
    uint##W##_t acc = v[mem ? mem[s] : s];                                                                     \
    switch (agg) {                                                                                             \
    case TDM_AGG_SUM:                                                                                          \
      for (k = s + 1; k < e; k++) acc = tdm__ops_add##W(acc, v[mem ? mem[k] : k], vk);                         \
      acc = tdm__ops_sum_out##W(acc, vk);                                                                      \
      break;                                                                                                   \
    case TDM_AGG_MIN:                                                                                          \
      for (k = s + 1; k < e; k++) acc = tdm__ops_min##W(acc, v[mem ? mem[k] : k], kind);                       \
      break;                                                                                                   \
    case TDM_AGG_MAX:                                                                                          \
      for (k = s + 1; k < e; k++) acc = tdm__ops_max##W(acc, v[mem ? mem[k] : k], kind);                       \
      break;                                                                                                   \
    case TDM_AGG_LAST: acc = v[mem ? mem[e - 1] : e - 1]; break;                                               \
    case TDM_AGG_MEAN: {                                                                                       \
      double m = tdm__ops_to_f64_##W(acc, vk);                                                                 \
      for (k = s + 1; k < e; k++) m += tdm__ops_to_f64_##W(v[mem ? mem[k] : k], vk);                           \
      ((double *)out)[p] = tdm__ops_canon_f64(m / (double)(e - s));                                            \
      return;                                                                                                  \
    }                                                                                                          \
    default: break; /* FIRST */                                                                                \
    }                                                                                                          \
    ((uint##W##_t *)out)[p] = acc;                                                                             \
  }
TDM__OPS_FOLD(32, , uint64_t)
TDM__OPS_FOLD(64, , uint64_t)
TDM__OPS_FOLD(32, _m32, uint32_t)
TDM__OPS_FOLD(64, _m32, uint32_t)
#undef TDM__OPS_FOLD

/* ---- folds split over many threads (the CUDA backend's long groups) ----- */

/* The aggregations whose result does not depend on how a group's values are
 * grouped or ordered: SUM of integers (wrapping adds), MIN and MAX (a total
 * order of the bits, so two different values never tie and the kept operand
 * is the same either way). A parallel reduce-by-key may combine their values
 * in any grouping and operand order and still give the left fold's bits.
 * Float SUM and MEAN are not among them: a float add does not associate. */
TDM_HD int tdm__ops_order_free(int agg, int vk) {
  if (agg == TDM_AGG_MIN || agg == TDM_AGG_MAX) return 1;
  return agg == TDM_AGG_SUM && vk != TDM__OPS_V_F32 && vk != TDM__OPS_V_F64;
}

/* One step of the SUM, MIN or MAX fold: acc combined with the next value x. */
TDM_HD uint32_t tdm__ops_step32(uint32_t acc, uint32_t x, int agg, int vk, int kind) {
  if (agg == TDM_AGG_SUM) return tdm__ops_add32(acc, x, vk);
  return agg == TDM_AGG_MIN ? tdm__ops_min32(acc, x, kind) : tdm__ops_max32(acc, x, kind);
}
TDM_HD uint64_t tdm__ops_step64(uint64_t acc, uint64_t x, int agg, int vk, int kind) {
  if (agg == TDM_AGG_SUM) return tdm__ops_add64(acc, x, vk);
  return agg == TDM_AGG_MIN ? tdm__ops_min64(acc, x, kind) : tdm__ops_max64(acc, x, kind);
}

/* A group's fold continued over its next contiguous values c[0..len): the
 * fold state is acc (SUM, MIN, MAX: the value so far) and m (MEAN: the
 * float64 sum so far). A group's values gathered in member order and folded
 * chunk after chunk from (acc, m) = (v0, v0 as float64) over v1, v2, ...
 * make the same operations in the same order as tdm__ops_fold, so the same
 * bits; tdm__ops_fold_put then writes the result as tdm__ops_fold does. */
#define TDM__OPS_FOLD_ON(W)                                                                                      \
  TDM_HD void tdm__ops_fold_on##W(uint##W##_t *acc, double *m, const uint##W##_t *c, size_t len, int agg, int vk, \
                                  int kind) {                                                                    \
    size_t i;                                                                                                    \
    if (agg == TDM_AGG_MEAN) {                                                                                   \
      double t = *m;                                                                                             \
      for (i = 0; i < len; i++) t += tdm__ops_to_f64_##W(c[i], vk);                                              \
      *m = t;                                                                                                    \
    } else {                                                                                                     \
      uint##W##_t a = *acc;                                                                                      \
      for (i = 0; i < len; i++) a = tdm__ops_step##W(a, c[i], agg, vk, kind);                                    \
      *acc = a;                                                                                                  \
    }                                                                                                            \
  }                                                                                                              \
  TDM_HD void tdm__ops_fold_put##W(uint##W##_t acc, double m, size_t count, int agg, int vk, void *out,          \
                                   size_t p) {                                                                   \
    if (agg == TDM_AGG_MEAN) ((double *)out)[p] = tdm__ops_canon_f64(m / (double)count);                         \
    else ((uint##W##_t *)out)[p] = agg == TDM_AGG_SUM ? tdm__ops_sum_out##W(acc, vk) : acc;                      \
  }
TDM__OPS_FOLD_ON(32)
TDM__OPS_FOLD_ON(64)
#undef TDM__OPS_FOLD_ON

/* Output rows of a left row with mc right matches, per tdm_join_kind. */
TDM_HD uint64_t tdm__ops_join_rows(int kind, uint64_t mc) {
  switch (kind) {
  case TDM_JOIN_INNER: return mc;
  case TDM_JOIN_LEFT: return mc ? mc : 1;
  case TDM_JOIN_SEMI: return mc != 0;
  default: return mc == 0;
  }
}

/* The CUDA hash join's table of the right side's runs (sorted by bits) is a
 * SUM table: sorted right row k adds tdm__ops_join_run_add(head, k) to its
 * key's entry, head saying that k starts the run. In whatever order the adds
 * land, an entry then holds its run's start plus one in the high half and
 * its length in the low half, one word a probe reads at once. Both halves
 * fit while the right side has at most TDM__OPS_JOIN_RUN_MAX rows (larger
 * ones take the binary searches). A miss (the word 0) is a run of 0. */
#define TDM__OPS_JOIN_RUN_MAX ((uint64_t)UINT32_MAX)
TDM_HD uint64_t tdm__ops_join_run_add(int head, uint64_t k) { return 1u + (head ? (k + 1) << 32 : 0); }
TDM_HD uint64_t tdm__ops_join_run_start(uint64_t w) { return w ? (w >> 32) - 1 : 0; }
TDM_HD uint64_t tdm__ops_join_run_count(uint64_t w) { return w & 0xffffffffu; }

/* The join by single rows (src/ops_join.c) fills the same table from the
 * right rows as they come, each row k a run of its own (k's add with head
 * set): a key of one right row gets that row as its run, exactly the
 * sorted table's word but for the start's meaning (the row itself, no
 * index array between); a key of several rows gets their count right and
 * a start that means nothing. So the counts, and with them every left
 * row's output rows and the total, are exact either way, and only a left
 * row whose key has several right rows needs the sorted table's start:
 * the runs step marks the call's flag word with TDM__OPS_JOIN_MULTI, which
 * the total's scan carries to the host with the total (both sides below
 * 2^31 rows keep the total below that bit). */
#define TDM__OPS_JOIN_MULTI ((uint64_t)1 << 63)
#define TDM__OPS_JOIN_SINGLE_MAX ((uint64_t)1 << 31)

/* The first position in the ascending s[0..m) whose value is not below b
 * (upper: above b); m when none. The sorted-set searches of isin and join. */
#define TDM__OPS_BOUND(W)                                                                 \
  TDM_HD size_t tdm__ops_bound##W(const uint##W##_t *s, size_t m, uint##W##_t b, int upper) { \
    size_t lo = 0, hi = m;                                                                \
    while (lo < hi) {                                                                     \
      size_t mid = lo + (hi - lo) / 2;                                                    \
      if (s[mid] < b || (upper && s[mid] == b)) lo = mid + 1;                             \
      else hi = mid;                                                                      \
    }                                                                                     \
    return lo;                                                                            \
  }
TDM__OPS_BOUND(32)
TDM__OPS_BOUND(64)
#undef TDM__OPS_BOUND

/* ---- the join's output rows, by output position ------------------------- */

/* Both backends describe a join the same way: left row i's right matches
 * are ridx[ms[i] .. ms[i] + mc[i]) (right indices, ascending), and its
 * output rows are [o[i], o[i + 1]), o the exclusive sum of
 * tdm__ops_join_rows over the n_left rows (o[n_left] = the total). Output
 * row r then belongs to the left row tdm__csr_owner(o, n_left, r) (left
 * rows of no rows skipped), and is its (r - o[i])-th row. */

/* The right index of output row r of left row i (o[i] <= r < o[i + 1]) of
 * an INNER or LEFT join: i's (r - o[i])-th match, or TDM_NO_MATCH for the
 * one row of a LEFT row without a match (SEMI and ANTI write none); ridx
 * NULL: the runs' starts are right rows (the join by single rows). Per
 * width of the right indices: the CUDA join sorts 32-bit ones while the
 * right side has fewer than 2^32 rows. */
#define TDM__OPS_JOIN_RIGHT(W)                                                                                  \
  TDM_HD uint64_t tdm__ops_join_right##W(const uint64_t *o, const uint64_t *ms, const uint64_t *mc,             \
                                         const uint##W##_t *ridx, uint64_t i, uint64_t r) {                     \
    return !mc[i] ? TDM_NO_MATCH : ridx ? (uint64_t)ridx[ms[i] + (r - o[i])] : ms[i] + (r - o[i]);             \
  }
TDM__OPS_JOIN_RIGHT(32)
TDM__OPS_JOIN_RIGHT(64)
#undef TDM__OPS_JOIN_RIGHT

/* Whether a join of this kind writes right indices (into a non-NULL
 * right_out): INNER and LEFT do; SEMI and ANTI write left rows only. */
TDM_HD int tdm__ops_join_pairs(int kind, const uint64_t *right_out) {
  return right_out && (kind == TDM_JOIN_INNER || kind == TDM_JOIN_LEFT);
}

/* Writes output rows [lo, hi) (hi <= o[n_left]) of a join: left_out[r] is
 * row r's left row and, when tdm__ops_join_pairs, right_out[r] its right
 * index. One search for lo's left row, then a walk, so any split of
 * [0, o[n_left]) into ranges writes the same bytes, a hot key's rows split
 * as evenly as any others. SEMI and ANTI need no case of their own: a left
 * row has one output row or none, and the search skips those of none. The
 * CPU fills each chunk of the output with it; the CUDA kernel runs the same
 * walk and tdm__ops_join_right32 / 64, staged through shared memory. Per
 * width of the right indices, as tdm__ops_join_right32 / 64. */
#define TDM__OPS_JOIN_FILL(W)                                                                                \
  TDM_HD void tdm__ops_join_fill##W(int kind, const uint64_t *o, uint64_t n_left, const uint64_t *ms,          \
                                    const uint64_t *mc, const uint##W##_t *ridx, uint64_t *left_out,           \
                                    uint64_t *right_out, uint64_t lo, uint64_t hi) {                           \
    uint64_t i, r;                                                                                             \
    int pairs = tdm__ops_join_pairs(kind, right_out);                                                          \
    if (lo >= hi) return;                                                                                      \
    i = tdm__csr_owner(o, n_left, lo);                                                                         \
    for (r = lo; r < hi; r++) {                                                                                \
      i = tdm__csr_next(o, n_left, i, r);                                                                      \
      left_out[r] = i;                                                                                         \
      if (pairs) right_out[r] = tdm__ops_join_right##W(o, ms, mc, ridx, i, r);                                 \
    }                                                                                                          \
  }
TDM__OPS_JOIN_FILL(32)
TDM__OPS_JOIN_FILL(64)
#undef TDM__OPS_JOIN_FILL

#endif /* TANDEM_OPS_KEYS_H */
