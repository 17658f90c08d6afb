/*
 * ops_api.c: the public data operations (tandem/ops.h). Arguments are
 * checked here, the method (hashing or sorting) is picked here, and the call
 * goes to the context's backend table (tdm__ops_ops), which runs it with
 * that method.
 *
 * The method rule is below (pick_join_method, pick_unique_method,
 * tdm_isin's choice by set size, and the dense method for integer keys of a
 * small range, decided from one min/max pass: pick_dense); docs/design.md
 * has the measurements behind it.
 */
#include <stdio.h>
#include <string.h>

#include "backend.h"

int tdm__ops_force_method = TDM__OPS_AUTO;

/* tdm_isin binary-searches a sorted set of at most this many keys (it stays
 * in L1) and hashes a larger one. */
#define OPS_ISIN_SORT_MAX_SET ((size_t)64)

/* ---- argument checks ---------------------------------------------------- */

/* One array argument, for the overlap checks. */
typedef struct ops_arr {
  const char *what;
  const void *p;
  size_t bytes;
} ops_arr;

static tdm_status check_disjoint(const char *fn, const ops_arr *a, int na) {
  int i, j;
  for (i = 0; i < na; i++)
    for (j = i + 1; j < na; j++)
      if (a[i].p && a[j].p && tdm__overlap(a[i].p, a[i].bytes, a[j].p, a[j].bytes))
        return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: %s and %s overlap", fn, a[i].what, a[j].what);
  return TDM_OK;
}

static tdm_status check_start(tdm_ctx *ctx, const char *fn, tdm_type key_type, unsigned flags, unsigned allowed) {
  tdm_status st = tdm__check_ctx(ctx, fn);
  if (st != TDM_OK) return st;
  if (!tdm__type_valid(key_type))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: key_type %d is not a tdm_type", fn, (int)key_type);
  if (flags & ~allowed)
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: unknown flag bits 0x%x (this call takes 0x%x)", fn,
                     flags & ~allowed, allowed);
  if (!ctx->be->ops)
    return tdm__fail(TDM_ERR_UNSUPPORTED, "%s: the data operations are not available on the %s backend", fn,
                     ctx->backend == TDM_BACKEND_CUDA ? "CUDA" : "CPU");
  return TDM_OK;
}

/* An optional output of n elements: checked when non-NULL. */
static tdm_status check_opt(const tdm_ctx *ctx, const char *fn, const char *what, const void *p, size_t n,
                            size_t elem, size_t *bytes) {
  *bytes = 0;
  if (!p) return TDM_OK;
  return tdm__check_array(ctx, fn, what, p, n, elem, bytes);
}

static tdm_status check_size_out(const char *fn, const char *what, const size_t *p) {
  if (!p) return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, what);
  if (tdm__is_device_ptr(p))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: %s must be host memory", fn, what);
  return TDM_OK;
}

static int is_float(tdm_type t) { return t == TDM_F32 || t == TDM_F64; }

/* ---- method rule -------------------------------------------------------- */

/* The method for tdm_join (tdm_group_reduce and tdm_unique: below): the
 * backend's (its ops table's join_method), fixed per backend; the join is
 * written once (src/ops_join.c), so the method is only how a left row finds
 * its run of matches in the sorted right side.
 * CUDA: the hash (one probe of a table of the runs instead of two binary
 * searches of the sorted keys): the cost meter's join_inner fell from 41.22
 * to 21.67 sectors a key with it and 32-bit right indices, then to 16.02
 * with a run's start and length in one table word and a coalesced fill
 * (docs/gpu-cost.md); no GPU has timed it.
 * CPU: the hash as well. The searches are a cache miss per level once the
 * right side leaves the caches: 10^7 distinct u64 keys a side on an Intel
 * Xeon (tandem-bench ops, medians of 5) ran at 1.8 M/s on one thread by the
 * searches and 11.4 by the table, where the CPU's earlier join (a stable
 * sort of both sides together) ran at 10.8; on two threads 3.8, 21.3 and
 * 22.3 (a tie within the runs' spread). */
static int pick_join_method(const tdm_ctx *ctx) {
  return tdm__ops_force_method != TDM__OPS_AUTO ? tdm__ops_force_method : ctx->be->ops->join_method;
}

/* tdm_group_reduce by hashing (COUNT is tdm_unique's keys and counts, by
 * its rule, below), per backend (its ops table's hash_groups).
 * CPU (TDM__HASH_GROUPS_IN_ORDER): the hash table numbers the rows (one
 * probe each, in input order) and one more pass folds each row into its
 * group's state, in input order, so the same bits as the sort's left
 * folds; no (key, value) sort. Measured at 10^7 u64 rows, f64 SUM
 * (docs/design.md): one thread, 1.6x the sort at 100 distinct keys, 2x at
 * 10^4, 1.1x at 10^5, 0.5x at 10^6; but both passes are sequential, so on
 * two threads, where the sort splits, it ties at 100 distinct keys and
 * loses from 10^4 on. So: the hash on one thread (the context's, or all the
 * load guard leaves) up to n / 128 distinct keys (found while hashing: past
 * them the sort starts), else the sort.
 * CUDA (TDM__HASH_GROUPS_UNORDERED): a scratch table folds each row's
 * value into its key's slot, for the aggregations whose result does not
 * depend on the order the rows arrive in, in ascending key order by bits;
 * the groups alone are then sorted. On the cost meter (docs/gpu-cost.md,
 * 2^18 rows, 2^14 groups) group_sum fell from 10.12 sectors a key (the sort
 * of the rows) to 5.19, 4.14 with an export in one read; no GPU has timed
 * it. In first-seen order (and under TDM_EQ_NUMERIC, by canonical bits) a
 * table of each key's first row orders the groups, and the same folding
 * table, probed once per group, gives their values. Other calls sort. */
#define OPS_REDUCE_HASH_RATIO ((size_t)128)

static int reduce_hashable(const tdm_ctx *ctx, const tdm__group_args *a) {
  if (ctx->be->ops->hash_groups == TDM__HASH_GROUPS_IN_ORDER) return 1;
  if (a->numeric && !a->first_seen) return 0;
  return (a->agg == TDM_AGG_SUM || a->agg == TDM_AGG_MIN || a->agg == TDM_AGG_MAX) && !is_float(a->value_type);
}

static int pick_reduce_method(const tdm_ctx *ctx, const tdm__group_args *a, size_t *hash_max_groups) {
  int hashable = reduce_hashable(ctx, a);
  *hash_max_groups = SIZE_MAX;
  if (tdm__ops_force_method != TDM__OPS_AUTO)
    return tdm__ops_force_method == TDM__OPS_HASH && hashable ? TDM__OPS_HASH : TDM__OPS_SORT;
  if (!hashable) return TDM__OPS_SORT;
  if (ctx->be->ops->hash_groups == TDM__HASH_GROUPS_UNORDERED) return TDM__OPS_HASH;
  if (tdm__threads_for(ctx, a->n, (size_t)1 << 15) > 1) return TDM__OPS_SORT;
  *hash_max_groups = a->n / OPS_REDUCE_HASH_RATIO;
  return TDM__OPS_HASH;
}

/* tdm_unique hashes low-cardinality keys: one probe per row numbers the
 * keys by first occurrence (the hash table's insert-or-number,
 * tdm__hash_number), which is the first-seen order for free, and ascending
 * order then sorts only the distinct keys. Once the
 * table outgrows the caches each probe is a cache miss, and a radix sort of
 * the rows is cheaper. Measured at 10^7 u64 rows (docs/design.md): in
 * ascending order the hash wins below about n / 100 distinct keys and loses
 * 2x at n / 10; in first-seen order (where the sort needs a second sort of
 * the groups and a scatter) it wins to at least n / 4. So the hash method
 * gives way to the sort past these many distinct keys, found while hashing:
 * the pass stops at the limit, and the sort starts.
 * CUDA (TDM__HASH_GROUPS_UNORDERED) hashes a call in first-seen order: a
 * table keeps each key's first row, the groups' first rows alone are
 * sorted, and a second table of the groups gives each row its code by one
 * probe (the cost meter's factorize: 10.35 sectors a key by the sort, 5.81
 * so). In ascending order it hashes a call that asks for the inverse (and
 * no first indices, by bits): a table counts the keys, its groups are
 * sorted, and a second table of the sorted keys gives each row its group by
 * one probe (unique_counts_inverse: 9.60 sectors a key by the sort, 6.46
 * so). No GPU has timed either. */
#define OPS_UNIQUE_HASH_RATIO_ASC ((size_t)128)
#define OPS_UNIQUE_HASH_RATIO_FIRST_SEEN ((size_t)4)

static int pick_unique_method(const tdm_ctx *ctx, const tdm__unique_args *a, size_t *hash_max_groups) {
  int unordered = ctx->be->ops->hash_groups == TDM__HASH_GROUPS_UNORDERED;
  /* CUDA: in first-seen order a table of each key's first row (the sort
   * method sorts every row's bits with its index, then the first rows);
   * in ascending order the table for the inverse (its probe per row) and
   * its counts; without an inverse the sort of the keys alone costs less. */
  int hashable = !unordered || a->first_seen || (a->inverse_out && !a->first_index_out && !a->numeric);
  *hash_max_groups = SIZE_MAX;
  if (tdm__ops_force_method != TDM__OPS_AUTO)
    return tdm__ops_force_method == TDM__OPS_HASH && !hashable ? TDM__OPS_SORT : tdm__ops_force_method;
  if (!hashable) return TDM__OPS_SORT;
  if (unordered) return TDM__OPS_HASH;
  *hash_max_groups = a->n / (a->first_seen ? OPS_UNIQUE_HASH_RATIO_FIRST_SEEN : OPS_UNIQUE_HASH_RATIO_ASC);
  return TDM__OPS_HASH;
}

/* The dense method: integer keys whose range is small against the input
 * are counted, numbered or looked up in a table indexed by key - min, one
 * direct access per row instead of a probe or a sort. The backend's min/max
 * pass (one read of the keys, or of the set for tdm_isin) decides it.
 * Measured at 10^7 u64 rows (docs/design.md):
 *  - tdm_unique and tdm_group_reduce COUNT keep a count (and when asked, a
 *    number and a first row) per slot, 2 to 18 bytes; one row is one random
 *    access to it, which beats the hash numbering and the sort (1.4x at
 *    n / 4 slots, 3x at n / 16, with 8-byte counts) until the table
 *    leaves the caches: at n slots it was 1.5x slower. So at most one slot
 *    per 4 rows;
 *  - tdm_isin keeps one bit per value of the set's range: at most 64 slots
 *    per set key, a bit table of at most 8 bytes per set key, smaller than
 *    the hash table of the set it replaces (10x faster than it at 40 slots
 *    per set key, still 1.3x at 160).
 * Floats never take it (their equal keys need not have equal bits under
 * TDM_EQ_NUMERIC, and their range is rarely small); other aggregations of
 * tdm_group_reduce need each group's members listed, which is the sort's
 * or the hash's work anyway. A forced DENSE (tests) takes it up to 64
 * times the rule's slots plus 4096, at most OPS_DENSE_FORCED_MAX_SLOTS
 * (so that two random 32-bit keys do not make a table of 2^31 slots), and
 * falls back to the sort beyond. */
#define OPS_DENSE_ROWS_PER_SLOT ((size_t)4)
#define OPS_DENSE_SLOTS_PER_SET_KEY ((uint64_t)64)
#define OPS_DENSE_FORCED_MAX_SLOTS ((uint64_t)1 << 24)

static uint64_t mul_sat(uint64_t a, uint64_t b) { return b && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

/* The most slots the dense method may take for keys that allow it, from
 * the rule above: auto_slots when the method is the library's choice. */
static uint64_t dense_max_slots(const tdm_ctx *ctx, tdm_type t, uint64_t auto_slots) {
  if (is_float(t)) return 0;
  if (tdm__ops_force_method == TDM__OPS_AUTO) return ctx->be->ops->dense_by_rule ? auto_slots : 0;
  if (tdm__ops_force_method != TDM__OPS_DENSE) return 0;
  auto_slots = mul_sat(auto_slots, 64);
  return auto_slots < OPS_DENSE_FORCED_MAX_SLOTS - 4096 ? auto_slots + 4096 : OPS_DENSE_FORCED_MAX_SLOTS;
}

/* Turns *method into TDM__OPS_DENSE, with the keys' range in *lo / *span
 * (key - lo <= span, in the key's width), when the n > 0 keys fit the
 * slots the rule allows (auto_slots when the method is the library's
 * choice; 0: never dense, and no pass); a forced DENSE that does not fit
 * becomes the sort. */
static tdm_status pick_dense(tdm_ctx *ctx, tdm_type t, const void *keys, size_t n, uint64_t auto_slots, int *method,
                             uint64_t *lo, uint64_t *span) {
  uint64_t mn = 0, mx = 0, s, max_slots = dense_max_slots(ctx, t, auto_slots);
  tdm_status st;
  *lo = *span = 0;
  if (*method == TDM__OPS_DENSE) *method = TDM__OPS_SORT;
  if (max_slots == 0 || n == 0 || !ctx->be->ops->minmax) return TDM_OK;
  if ((st = ctx->be->ops->minmax(ctx, t, keys, n, max_slots, &mn, &mx)) != TDM_OK) return st;
  s = tdm_type_size(t) == 4 ? (uint64_t)(uint32_t)(mx - mn) : mx - mn;
  if (s < max_slots) {
    *method = TDM__OPS_DENSE;
    *lo = mn;
    *span = s;
  }
  return TDM_OK;
}

/* ---- the calls ---------------------------------------------------------- */

tdm_status tdm_unique(tdm_ctx *ctx, tdm_type key_type, const void *keys, size_t n, unsigned flags,
                      void *unique_out, uint64_t *first_index_out, uint64_t *counts_out, uint64_t *inverse_out,
                      size_t *n_unique_out) {
  static const char fn[] = "tdm_unique";
  tdm__unique_args a;
  ops_arr arr[6];
  size_t ks, kb, ub, fb, cb, ib;
  int method;
  tdm_status st = check_start(ctx, fn, key_type, flags, TDM_EQ_NUMERIC | TDM_ORDER_FIRST_SEEN);
  if (st != TDM_OK) return st;
  ks = tdm_type_size(key_type);
  if ((st = tdm__check_array(ctx, fn, "keys", keys, n, ks, &kb)) != TDM_OK) return st;
  if ((st = check_opt(ctx, fn, "unique_out", unique_out, n, ks, &ub)) != TDM_OK) return st;
  if ((st = check_opt(ctx, fn, "first_index_out", first_index_out, n, 8, &fb)) != TDM_OK) return st;
  if ((st = check_opt(ctx, fn, "counts_out", counts_out, n, 8, &cb)) != TDM_OK) return st;
  if ((st = check_opt(ctx, fn, "inverse_out", inverse_out, n, 8, &ib)) != TDM_OK) return st;
  if ((st = check_size_out(fn, "n_unique_out", n_unique_out)) != TDM_OK) return st;
  arr[0] = (ops_arr){"keys", keys, kb};
  arr[1] = (ops_arr){"unique_out", unique_out, ub};
  arr[2] = (ops_arr){"first_index_out", first_index_out, fb};
  arr[3] = (ops_arr){"counts_out", counts_out, cb};
  arr[4] = (ops_arr){"inverse_out", inverse_out, ib};
  arr[5] = (ops_arr){"n_unique_out", n_unique_out, sizeof *n_unique_out};
  if ((st = check_disjoint(fn, arr, 6)) != TDM_OK) return st;
  if (n == 0) {
    *n_unique_out = 0;
    return TDM_OK;
  }
  a.key_type = key_type;
  a.keys = keys;
  a.n = n;
  a.numeric = (flags & TDM_EQ_NUMERIC) && is_float(key_type);
  a.first_seen = (flags & TDM_ORDER_FIRST_SEEN) != 0;
  a.unique_out = unique_out;
  a.first_index_out = first_index_out;
  a.counts_out = counts_out;
  a.inverse_out = inverse_out;
  a.n_unique_out = n_unique_out;
  method = pick_unique_method(ctx, &a, &a.hash_max_groups);
  st = pick_dense(ctx, key_type, keys, n, n / OPS_DENSE_ROWS_PER_SLOT, &method, &a.dense_min, &a.dense_span);
  if (st != TDM_OK) return st;
  return tdm__unique_run(ctx, &a, method);
}

tdm_status tdm_isin(tdm_ctx *ctx, tdm_type key_type, const void *queries, size_t n, const void *set, size_t m,
                    unsigned flags, uint8_t *found_out) {
  static const char fn[] = "tdm_isin";
  tdm__isin_args a;
  ops_arr arr[3];
  size_t ks, qb, sb, fb;
  int method;
  tdm_status st = check_start(ctx, fn, key_type, flags, TDM_EQ_NUMERIC);
  if (st != TDM_OK) return st;
  ks = tdm_type_size(key_type);
  if ((st = tdm__check_array(ctx, fn, "queries", queries, n, ks, &qb)) != TDM_OK) return st;
  if ((st = tdm__check_array(ctx, fn, "set", set, m, ks, &sb)) != TDM_OK) return st;
  if ((st = tdm__check_array(ctx, fn, "found_out", found_out, n, 1, &fb)) != TDM_OK) return st;
  /* queries and set may be the same array: both are only read. */
  arr[0] = (ops_arr){"queries", queries, qb};
  arr[1] = (ops_arr){"found_out", found_out, fb};
  arr[2] = (ops_arr){"set", set, sb};
  if ((st = check_disjoint(fn, arr, 2)) != TDM_OK) return st;
  if ((st = check_disjoint(fn, arr + 1, 2)) != TDM_OK) return st;
  if (n == 0) return TDM_OK;
  a.key_type = key_type;
  a.queries = queries;
  a.set = set;
  a.n = n;
  a.m = m;
  a.numeric = (flags & TDM_EQ_NUMERIC) && is_float(key_type);
  a.found_out = found_out;
  /* A lookup never needs order, so the set's cardinality does not matter
   * the way it does for grouping: a table of the set answers each query with
   * one probe, a sorted set with log2(m) dependent reads. */
  method = tdm__ops_force_method != TDM__OPS_AUTO ? tdm__ops_force_method
           : m <= OPS_ISIN_SORT_MAX_SET          ? TDM__OPS_SORT
                                                 : TDM__OPS_HASH;
  st = pick_dense(ctx, key_type, set, m, mul_sat(m, OPS_DENSE_SLOTS_PER_SET_KEY), &method, &a.dense_min,
                  &a.dense_span);
  if (st != TDM_OK) return st;
  return tdm__isin_run(ctx, &a, method);
}

tdm_status tdm_group_reduce(tdm_ctx *ctx, tdm_type key_type, const void *keys, tdm_type value_type,
                            const void *values, size_t n, tdm_agg agg, unsigned flags, void *keys_out,
                            void *values_out, size_t *n_groups_out) {
  static const char fn[] = "tdm_group_reduce";
  tdm__group_args a;
  ops_arr arr[5];
  size_t ks, vs = 0, os, kb, vb = 0, kob, vob;
  int method;
  tdm_status st = check_start(ctx, fn, key_type, flags, TDM_EQ_NUMERIC | TDM_ORDER_FIRST_SEEN);
  if (st != TDM_OK) return st;
  if ((int)agg < TDM_AGG_COUNT || (int)agg > TDM_AGG_MEAN)
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: agg %d is not a tdm_agg", fn, (int)agg);
  ks = tdm_type_size(key_type);
  if ((st = tdm__check_array(ctx, fn, "keys", keys, n, ks, &kb)) != TDM_OK) return st;
  if (agg != TDM_AGG_COUNT) {
    if (!tdm__type_valid(value_type))
      return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: value_type %d is not a tdm_type", fn, (int)value_type);
    vs = tdm_type_size(value_type);
    if ((st = tdm__check_array(ctx, fn, "values", values, n, vs, &vb)) != TDM_OK) return st;
  }
  os = agg == TDM_AGG_COUNT || agg == TDM_AGG_MEAN ? 8 : vs;
  if ((st = check_opt(ctx, fn, "keys_out", keys_out, n, ks, &kob)) != TDM_OK) return st;
  if ((st = tdm__check_array(ctx, fn, "values_out", values_out, n, os, &vob)) != TDM_OK) return st;
  if ((st = check_size_out(fn, "n_groups_out", n_groups_out)) != TDM_OK) return st;
  arr[0] = (ops_arr){"keys", keys, kb};
  arr[1] = (ops_arr){"values", agg == TDM_AGG_COUNT ? NULL : values, vb};
  arr[2] = (ops_arr){"keys_out", keys_out, kob};
  arr[3] = (ops_arr){"values_out", values_out, vob};
  arr[4] = (ops_arr){"n_groups_out", n_groups_out, sizeof *n_groups_out};
  /* The inputs are only read: keys and values may share memory. */
  if ((st = check_disjoint(fn, arr + 1, 4)) != TDM_OK) return st;
  arr[1] = arr[0];
  if ((st = check_disjoint(fn, arr + 1, 4)) != TDM_OK) return st;
  if (n == 0) {
    *n_groups_out = 0;
    return TDM_OK;
  }
  if (agg == TDM_AGG_COUNT) {
    /* tdm_unique's keys and counts, by its method. */
    tdm__unique_args u;
    memset(&u, 0, sizeof u);
    u.key_type = key_type;
    u.keys = keys;
    u.n = n;
    u.numeric = (flags & TDM_EQ_NUMERIC) && is_float(key_type);
    u.first_seen = (flags & TDM_ORDER_FIRST_SEEN) != 0;
    u.unique_out = keys_out;
    u.counts_out = (uint64_t *)values_out;
    u.n_unique_out = n_groups_out;
    method = pick_unique_method(ctx, &u, &u.hash_max_groups);
    if ((st = pick_dense(ctx, key_type, keys, n, n / OPS_DENSE_ROWS_PER_SLOT, &method, &u.dense_min,
                         &u.dense_span)) != TDM_OK)
      return st;
    if ((st = tdm__unique_run(ctx, &u, method)) != TDM_OK) {
      /* The message names the call the caller made. */
      char inner[400];
      snprintf(inner, sizeof inner, "%s", tdm_last_error());
      return tdm__fail(st, "%s (COUNT): %s", fn, inner);
    }
    return TDM_OK;
  }
  a.key_type = key_type;
  a.value_type = value_type;
  a.keys = keys;
  a.values = values;
  a.n = n;
  a.agg = (int)agg;
  a.numeric = (flags & TDM_EQ_NUMERIC) && is_float(key_type);
  a.first_seen = (flags & TDM_ORDER_FIRST_SEEN) != 0;
  a.keys_out = keys_out;
  a.values_out = values_out;
  a.n_groups_out = n_groups_out;
  /* No dense method: the other aggregations need each group's members
   * folded, which the hash or the sort finds anyway. */
  method = pick_reduce_method(ctx, &a, &a.hash_max_groups);
  return tdm__group_run(ctx, &a, method);
}

tdm_status tdm_join(tdm_ctx *ctx, tdm_join_kind kind, tdm_type key_type, const void *left_keys, size_t n_left,
                    const void *right_keys, size_t n_right, unsigned flags, uint64_t *left_index_out,
                    uint64_t *right_index_out, size_t cap, size_t *n_out) {
  static const char fn[] = "tdm_join";
  tdm__join_args a;
  ops_arr arr[5];
  size_t ks, lb, rb, lob, rob;
  int method, pairs;
  tdm_status st = check_start(ctx, fn, key_type, flags, TDM_EQ_NUMERIC);
  if (st != TDM_OK) return st;
  if ((int)kind < TDM_JOIN_INNER || (int)kind > TDM_JOIN_ANTI)
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: kind %d is not a tdm_join_kind", fn, (int)kind);
  pairs = kind == TDM_JOIN_INNER || kind == TDM_JOIN_LEFT;
  ks = tdm_type_size(key_type);
  if ((st = tdm__check_array(ctx, fn, "left_keys", left_keys, n_left, ks, &lb)) != TDM_OK) return st;
  if ((st = tdm__check_array(ctx, fn, "right_keys", right_keys, n_right, ks, &rb)) != TDM_OK) return st;
  if (cap > 0 && !left_index_out)
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: left_index_out is NULL but cap = %zu", fn, cap);
  if ((st = check_opt(ctx, fn, "left_index_out", left_index_out, cap, 8, &lob)) != TDM_OK) return st;
  if (!pairs) right_index_out = NULL;
  if ((st = check_opt(ctx, fn, "right_index_out", right_index_out, cap, 8, &rob)) != TDM_OK) return st;
  if ((st = check_size_out(fn, "n_out", n_out)) != TDM_OK) return st;
  arr[0] = (ops_arr){"left_index_out", left_index_out, lob};
  arr[1] = (ops_arr){"right_index_out", right_index_out, rob};
  arr[2] = (ops_arr){"n_out", n_out, sizeof *n_out};
  arr[3] = (ops_arr){"left_keys", left_keys, lb};
  arr[4] = (ops_arr){"right_keys", right_keys, rb};
  /* The two key arrays are only read and may be the same. */
  if ((st = check_disjoint(fn, arr, 4)) != TDM_OK) return st;
  arr[3] = arr[4];
  if ((st = check_disjoint(fn, arr, 4)) != TDM_OK) return st;
  if (n_left == 0) {
    *n_out = 0;
    return TDM_OK;
  }
  a.kind = (int)kind;
  a.key_type = key_type;
  a.left = left_keys;
  a.right = right_keys;
  a.n_left = n_left;
  a.n_right = n_right;
  a.numeric = (flags & TDM_EQ_NUMERIC) && is_float(key_type);
  a.left_out = left_index_out;
  a.right_out = right_index_out;
  a.cap = cap;
  a.n_out = n_out;
  /* No dense join: its output is pairs of rows, which the table would not
   * shorten. */
  method = pick_join_method(ctx);
  if (method == TDM__OPS_DENSE) method = TDM__OPS_SORT;
  return tdm__join_run(ctx, &a, method);
}
