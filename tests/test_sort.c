/*
 * test_sort.c: properties of tdm_sort, tdm_sort_pairs and tdm_argsort on every
 * key type, value type, distribution, size and direction, on each available
 * backend, against a stable reference sort (qsort of (key, index) under the
 * contract's order).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tandem/services.h> /* tdm_svc_key_order: the reference's order words */

#include "../src/internal.h" /* tdm__cpu_threads_avail */
#include "hooks/hooks.h"
#include "prop.h"

static const tdm_type all_types[] = {TDM_U32, TDM_U64, TDM_I32, TDM_I64, TDM_F32, TDM_F64};

/* ---- the reference: stable sort by (key order, input index) -------------- */

/* Each key's place in the contract's order as an unsigned word
 * (tdm_svc_key_order: the bits prop_cmp_keys compares; complemented when
 * descending), beside its index: qsort of these 16-byte items by (word,
 * index) is the stable order, and its comparator is two integer compares (a
 * comparator that decoded the keys each time was most of this file's run
 * time). */
typedef struct ref_item {
  uint64_t word;
  size_t idx;
} ref_item;

static int ref_cmp(const void *pa, const void *pb) {
  const ref_item *a = (const ref_item *)pa, *b = (const ref_item *)pb;
  if (a->word != b->word) return a->word < b->word ? -1 : 1;
  return (a->idx > b->idx) - (a->idx < b->idx);
}

/* The last reference made, with a copy of its keys: a test that checks
 * several operations on one input (hot_keys: sort, argsort, sort of a copy)
 * sorts it once. Reachable until exit, so not a leak to LeakSanitizer. */
static struct {
  tdm_type t;
  int desc;
  size_t n;
  char *keys;
  size_t *perm;
} ref_last;

/* perm[i] = input index of the i-th element of the stable sorted order
 * (owned by ref_last: valid until the next call). */
static const size_t *reference_perm(tdm_type t, const void *keys, size_t n, int desc) {
  size_t ks = tdm_type_size(t), i;
  if (ref_last.perm && ref_last.t == t && ref_last.desc == desc && ref_last.n == n &&
      memcmp(ref_last.keys, keys, n * ks) == 0)
    return ref_last.perm;
  ref_item *items = (ref_item *)malloc((n + 1) * sizeof *items);
  size_t *perm = (size_t *)malloc((n + 1) * sizeof *perm);
  cr_assert(items && perm);
  for (i = 0; i < n; i++) {
    uint64_t w = tdm_svc_key_order(t, keys, i);
    items[i].word = desc ? ~w : w;
    items[i].idx = i;
  }
  qsort(items, n, sizeof *items, ref_cmp);
  for (i = 0; i < n; i++) perm[i] = items[i].idx;
  free(items);
  free(ref_last.perm);
  free(ref_last.keys);
  ref_last.keys = (char *)malloc(n * ks + 8);
  cr_assert(ref_last.keys);
  memcpy(ref_last.keys, keys, n * ks);
  ref_last.t = t;
  ref_last.desc = desc;
  ref_last.n = n;
  ref_last.perm = perm;
  return perm;
}

/* ---- the properties ------------------------------------------------------ */

typedef struct sort_env {
  tdm_ctx *ctx;
  tdm_type key_type;
  tdm_type value_type; /* for pairs and argsort indices */
  int desc;
  int op; /* 0 sort, 1 sort_pairs, 2 argsort; CPU sort of a copy: 3 with values, 4 keys only, 5 with
           * values and a sink taking part of each bucket */
  int want_taken; /* op 5: fail unless the sink took some pairs */
} sort_env;

static const char *op_name(int op) {
  static const char *names[] = {"sort", "sort_pairs", "argsort", "sort_copy (pairs)", "sort_copy (keys)",
                                 "sort_copy (pairs, sink)"};
  return names[op];
}

/* Value i of a pairs run: the index in the value type's width, so stability
 * is visible in the output. */
static void put_value(tdm_type vt, void *values, size_t i) {
  if (tdm_type_size(vt) == 4) ((uint32_t *)values)[i] = (uint32_t)(i * 2654435761u);
  else ((uint64_t *)values)[i] = (uint64_t)i * 0x9e3779b97f4a7c15ull;
}

static int sort_property(void *penv, const void *input, size_t n, char *why, size_t wl) {
  sort_env *e = (sort_env *)penv;
  size_t ks = tdm_type_size(e->key_type), vs = tdm_type_size(e->value_type), i;
  unsigned flags = e->desc ? TDM_SORT_DESCENDING : 0;
  const size_t *perm = reference_perm(e->key_type, input, n, e->desc);
  char *keys = (char *)malloc(n * ks + 8), *vals = (char *)malloc(n * vs + 8);
  char *expect_vals = (char *)malloc(n * vs + 8);
  tdm_status s;
  int ok = 1;

  cr_assert(keys && vals && expect_vals);
  memcpy(keys, input, n * ks);
  for (i = 0; i < n; i++) {
    put_value(e->value_type, expect_vals, i);
  }
  if (e->op == 0) {
    s = tdm_sort(e->ctx, e->key_type, keys, n, flags);
  } else if (e->op == 1) {
    memcpy(vals, expect_vals, n * vs);
    s = tdm_sort_pairs(e->ctx, e->key_type, keys, e->value_type, vals, n, flags);
  } else if (e->op == 2) {
    s = tdm_argsort(e->ctx, e->key_type, input, e->value_type, vals, n, flags);
  } else {
    /* The sort of a copy reads its own input (a copy here, compared after)
     * and writes outputs that start as garbage. */
    char *kin = (char *)malloc(n * ks + 8), *vin = (char *)malloc(n * vs + 8);
    int bad = 0;
    cr_assert(kin && vin);
    memcpy(kin, input, n * ks);
    memcpy(vin, expect_vals, n * vs);
    memset(keys, 0xA5, n * ks);
    memset(vals, 0x5A, n * vs);
    if (e->op == 5) {
      /* What the sink took (save the last of each span) is in the side
       * arrays, and the output holds junk there; put back from the side
       * arrays, the output must be whole. */
      char *side_k = (char *)malloc(n * ks + 8), *side_v = (char *)malloc(n * vs + 8);
      unsigned char *taken = (unsigned char *)malloc(n + 8);
      size_t took = 0;
      cr_assert(side_k && side_v && taken);
      s = tdm_test_sort_copy_sink(e->ctx, e->key_type, kin, keys, e->value_type, vin, vals, n, e->desc, side_k,
                                  side_v, taken);
      for (i = 0; s == TDM_OK && i < n; i++) {
        if (!taken[i]) continue;
        took++;
        memcpy(keys + i * ks, side_k + i * ks, ks);
        memcpy(vals + i * vs, side_v + i * vs, vs);
      }
      free(side_k);
      free(side_v);
      free(taken);
      if (s == TDM_OK && e->want_taken && n >= 300000 && !took) { /* (the size the large inputs start at) */
        snprintf(why, wl, "sort_copy offered its sink no bucket of %zu pairs", n);
        bad = 1;
      }
    } else {
      s = tdm_test_sort_copy(e->ctx, e->key_type, kin, keys, e->value_type, e->op == 3 ? vin : NULL,
                             e->op == 3 ? vals : NULL, n, e->desc);
    }
    if (!bad && s == TDM_OK && (memcmp(kin, input, n * ks) != 0 || memcmp(vin, expect_vals, n * vs) != 0)) {
      snprintf(why, wl, "%s modified its input", op_name(e->op));
      bad = 1;
    }
    free(kin);
    free(vin);
    if (bad) {
      free(keys);
      free(vals);
      free(expect_vals);
      return 0;
    }
  }
  if (s != TDM_OK) {
    snprintf(why, wl, "%s returned %s: %s", op_name(e->op), tdm_status_name(s), tdm_last_error());
    ok = 0;
  }
  for (i = 0; ok && i < n; i++) {
    const char *want = (const char *)input + perm[i] * ks;
    if (e->op != 2 && memcmp(keys + i * ks, want, ks) != 0) {
      snprintf(why, wl, "%s: key at position %zu differs from the stable reference (input index %zu)",
               op_name(e->op), i, perm[i]);
      ok = 0;
    }
    if (ok && (e->op == 1 || e->op == 3 || e->op == 5) && memcmp(vals + i * vs, expect_vals + perm[i] * vs, vs) != 0) {
      snprintf(why, wl, "%s: value at position %zu is not the one of input index %zu (unstable?)", op_name(e->op),
               i, perm[i]);
      ok = 0;
    }
    if (ok && e->op == 2) {
      uint64_t got = vs == 4 ? ((uint32_t *)vals)[i] : ((uint64_t *)vals)[i];
      if (got != perm[i]) {
        snprintf(why, wl, "argsort: perm[%zu] = %llu, stable reference says %zu", i, (unsigned long long)got,
                 perm[i]);
        ok = 0;
      }
    }
  }
  if (ok && e->op == 2 && memcmp(keys, input, n * ks) != 0) {
    snprintf(why, wl, "argsort modified its keys");
    ok = 0;
  }
  free(keys);
  free(vals);
  free(expect_vals);
  return ok;
}

/* Runs every property for one key type over sizes and distributions. */
static void run_sort_properties(tdm_type t, size_t max_n) {
  tdm_backend backends[2];
  int nb = prop_backends(backends), b, op, desc;
  size_t sizes[64], ns, si, ks = tdm_type_size(t);
  prop_rng r;
  uint64_t case_id = (uint64_t)t << 32;

  prop_rng_init(&r, case_id);
  ns = prop_sizes(&r, sizes, 40, max_n);
  for (b = 0; b < nb; b++) {
    tdm_ctx *ctx = prop_ctx(backends[b], 0);
    for (si = 0; si < ns; si++) {
      prop_dist d;
      for (d = 0; d < PROP_DIST_COUNT; d++) {
        size_t n = sizes[si];
        void *in = malloc(n * ks + 8);
        prop_rng cr;
        case_id++;
        prop_rng_init(&cr, case_id);
        prop_fill(&cr, t, in, n, d);
        /* On the CPU also the sort of a copy (what B-tree builds use), at
         * every fourth size: the same sort underneath, and the suite runs
         * under the sanitizers too. */
        for (op = 0; op < (backends[b] == TDM_BACKEND_CPU && si % 4 == 0 ? 6 : 3); op++) {
          if (op == 5 && si % 8) continue; /* the sink at every eighth size: its own paths are few */
          for (desc = 0; desc < 2; desc++) {
            sort_env e;
            char name[128];
            e.ctx = ctx;
            e.key_type = t;
            /* Cycle the value/index types with the case so all are covered. */
            e.value_type = op == 2 ? ((case_id + desc) & 1 ? TDM_U64 : TDM_U32)
                                   : all_types[(case_id + (uint64_t)desc) % 6];
            e.desc = desc;
            e.op = op;
            e.want_taken = 0;
            snprintf(name, sizeof name, "%s %s %s %s values %s backend %s n=%zu", op_name(op),
                     tdm_type_name(t), desc ? "desc" : "asc", prop_dist_name(d), tdm_type_name(e.value_type),
                     backends[b] == TDM_BACKEND_CPU ? "cpu" : "cuda", n);
            prop_check(name, case_id, t, ks, in, n, sort_property, &e);
          }
        }
        free(in);
      }
    }
    tdm_ctx_destroy(ctx);
  }
}

Test(sort_props, u32) { run_sort_properties(TDM_U32, 1u << 17); }
Test(sort_props, u64) { run_sort_properties(TDM_U64, 1u << 17); }
Test(sort_props, i32) { run_sort_properties(TDM_I32, 1u << 16); }
Test(sort_props, i64) { run_sort_properties(TDM_I64, 1u << 16); }
Test(sort_props, f32) { run_sort_properties(TDM_F32, 1u << 16); }
Test(sort_props, f64) { run_sort_properties(TDM_F64, 1u << 16); }

/* Large inputs exercise the partitioned path and threads (buckets larger
 * than the cache budget, skewed keys that recurse). */
Test(sort_cpu, large_inputs) {
  size_t i;
  for (i = 0; i < 6; i++) {
    tdm_type t = all_types[i];
    size_t ks = tdm_type_size(t);
    prop_rng r;
    prop_dist dists[] = {PROP_UNIFORM, PROP_ZIPF, PROP_FEW_DISTINCT};
    size_t di;
    tdm_ctx *ctx = prop_ctx(TDM_BACKEND_CPU, 2);
    for (di = 0; di < 3; di++) {
      size_t n;
      void *in;
      sort_env e = {ctx, t, all_types[(i + di) % 6], (int)(di & 1), 1, 0};
      prop_rng_init(&r, 0xB16000 + i * 8 + di);
      /* Several times the cache budget at either tier (cpu/sort_cpu.c). */
      n = 300000 + (size_t)prop_below(&r, prop_scaled(100000, 700000));
      in = malloc(n * ks);
      prop_fill(&r, t, in, n, dists[di]);
      prop_check("large sort_pairs", 0xB16000 + i * 8 + di, t, ks, in, n, sort_property, &e);
      e.op = 0;
      prop_check("large sort", 0xB16000 + i * 8 + di, t, ks, in, n, sort_property, &e);
      e.op = 3;
      prop_check("large sort_copy", 0xB16000 + i * 8 + di, t, ks, in, n, sort_property, &e);
      e.op = 5;
      e.want_taken = dists[di] != PROP_FEW_DISTINCT; /* few distinct keys: buckets of equal keys, never sorted */
      prop_check("large sort_copy with a sink", 0xB16000 + i * 8 + di, t, ks, in, n, sort_property, &e);
      e.want_taken = 0;
      free(in);
    }
    tdm_ctx_destroy(ctx);
  }
}

/* Keys that agree on their high bits and differ only in a few low ones, and
 * keys differing only in the top bit: the constant-digit skipping paths. */
Test(sort_cpu, constant_digits) {
  tdm_ctx *ctx = prop_ctx(TDM_BACKEND_CPU, 2);
  size_t n = 200000, i;
  uint64_t *k = (uint64_t *)malloc(n * 8);
  prop_rng r;
  int pattern;
  prop_rng_init(&r, 0xC0457);
  for (pattern = 0; pattern < 4; pattern++) {
    sort_env e = {ctx, TDM_U64, TDM_U32, pattern & 1, pattern < 2 ? 0 : 2, 0};
    for (i = 0; i < n; i++) {
      uint64_t x = prop_next(&r);
      switch (pattern) {
      case 0: k[i] = 0xABCD000000000000ull | (x & 0xff); break;             /* only low byte varies */
      case 1: k[i] = (x & 1ull << 63) | 0x1234; break;                         /* only top bit varies */
      case 2: k[i] = 0x5555000000000000ull | ((x & 0xf) << 20) | (x >> 60); break; /* two sparse digits */
      default: k[i] = (x & 0xffff000000000000ull) | 7; break;                  /* only the top 16 bits */
      }
    }
    prop_check("constant digits", 0xC0457 + (uint64_t)pattern, TDM_U64, 8, k, n, sort_property, &e);
    e.op = 3; /* the top digit is constant: the first partition still reads the input */
    prop_check("constant digits (sort_copy)", 0xC0457 + (uint64_t)pattern, TDM_U64, 8, k, n, sort_property, &e);
    e.op = 5;
    prop_check("constant digits (sort_copy with a sink)", 0xC0457 + (uint64_t)pattern, TDM_U64, 8, k, n,
               sort_property, &e);
  }
  free(k);
  tdm_ctx_destroy(ctx);
}

/* Shapes of the in-cache bucket sort (cache_sort in cpu/radix_impl.h):
 * groups of 20 keys sharing their top 32 bits (sub-buckets between the rank
 * sort's limit and the insertion sort's, and pairs of groups that take a
 * second MSD level), one varying bit per byte (each MSD digit splits a bucket
 * in a few, so the third level falls back to LSD passes), runs of 1000 equal
 * keys (buckets whose keys are all equal) and 32-bit-wide ranges in 64-bit
 * keys (the LSD passes for narrow ranges), and spread-out keys drawn about
 * three times each (equal keys inside the rank-sorted sub-buckets). Pairs
 * and argsort, on 1 and 2 threads, against the stable reference. */
Test(sort_cpu, cache_sort_shapes) {
  size_t n = 120000, i;
  uint64_t *k = (uint64_t *)malloc(n * 8), g = 0;
  int pattern, th, b;
  prop_rng r;
  prop_rng_init(&r, 0xCA5E);
  for (th = 1; th <= 2; th++) {
    tdm_ctx *ctx = prop_ctx(TDM_BACKEND_CPU, th);
    for (pattern = 0; pattern < 5; pattern++) {
      sort_env e = {ctx, TDM_U64, TDM_U64, pattern == 3, 1, 0};
      for (i = 0; i < n; i++) {
        uint64_t x = prop_next(&r), y = 0;
        switch (pattern) {
        case 0:
          if (i % 20 == 0) g = prop_next(&r) & 0xffffffff00000000ull;
          k[i] = g | (x & 0xffffffffull);
          break;
        case 1:
          for (b = 0; b < 8; b++) y |= (x >> b & 1) << (8 * b + 7);
          k[i] = y;
          break;
        case 2:
          if (i % 1000 == 0) g = prop_next(&r);
          k[i] = g;
          break;
        case 3: k[i] = 0x0123000000000000ull | (x & 0xffffffffull) << 8; break;
        default: k[i] = (x % (n / 3)) * 0x9e3779b97f4a7c15ull; break;
        }
      }
      prop_check("cache_sort shapes", 0xCA5E + (uint64_t)(pattern + 8 * th), TDM_U64, 8, k, n, sort_property, &e);
      e.op = 2;
      prop_check("cache_sort shapes (argsort)", 0xCA5E + (uint64_t)(pattern + 8 * th), TDM_U64, 8, k, n,
                 sort_property, &e);
    }
    tdm_ctx_destroy(ctx);
  }
  free(k);
}

/* One key holding most of the input (hot_split in cpu/radix_impl.h): 90 %
 * of the rows on one key at the middle, the smallest or the largest key
 * value; 60 % (a split inside the first level's bucket, not at the top);
 * two keys of 45 % each; one key on exactly every sampled position but
 * little else (the sample says hot, the count says no: the normal path);
 * a key on 51 % of the rows. Pairs and argsort, every key width and kind,
 * both directions, on 1 and 2 threads, against the stable reference. */
Test(sort_cpu, hot_keys) {
  static const tdm_type types[] = {TDM_U64, TDM_I32, TDM_F64, TDM_U32};
  size_t n = 300000, i;
  uint64_t *k = (uint64_t *)malloc(n * 8);
  int pattern, th, ti;
  prop_rng r;
  prop_rng_init(&r, 0x407E7);
  for (th = 1; th <= 2; th++) {
    tdm_ctx *ctx = prop_ctx(TDM_BACKEND_CPU, th);
    for (ti = 0; ti < 4; ti++) {
      tdm_type t = types[ti];
      size_t ks = tdm_type_size(t);
      for (pattern = 0; pattern < 7; pattern++) {
        sort_env e = {ctx, t, ti & 1 ? TDM_U32 : TDM_U64, (pattern + ti) & 1, 1, 0};
        uint32_t *k32 = (uint32_t *)k;
        prop_fill(&r, t, k, n, PROP_UNIFORM);
        for (i = 0; i < n; i++) {
          uint64_t x = prop_next(&r) % 100, hot = 0;
          int set = 0;
          switch (pattern) {
          case 0: set = x < 90; hot = ks == 4 ? k32[n / 2] : k[n / 2]; break;
          case 1: set = x < 90; hot = 0; break; /* the smallest unsigned bits of U64 / U32; 0 for I32 and F64 */
          case 2: set = x < 90; hot = ks == 4 ? 0x7fffffffu : 0x7fefffffffffffffull; break;
          case 3: set = x < 60; hot = ks == 4 ? k32[1] : k[1]; break;
          case 4:
            set = x < 90;
            hot = x < 45 ? (ks == 4 ? k32[3] : k[3]) : (ks == 4 ? k32[5] : k[5]);
            break;
          case 5: set = i % (n / 64) == 0; hot = 12345; break;
          default: set = x < 51; hot = ks == 4 ? k32[7] : k[7]; break;
          }
          if (!set) continue;
          if (ks == 4) k32[i] = (uint32_t)hot;
          else k[i] = hot;
        }
        prop_check("hot keys", 0x407E7 + (uint64_t)(pattern + 8 * ti + 64 * th), t, ks, k, n, sort_property, &e);
        e.op = 2;
        prop_check("hot keys (argsort)", 0x407E7 + (uint64_t)(pattern + 8 * ti + 64 * th), t, ks, k, n,
                   sort_property, &e);
        e.op = 3; /* the split reads the input of a sort of a copy where it lies */
        prop_check("hot keys (sort_copy)", 0x407E7 + (uint64_t)(pattern + 8 * ti + 64 * th), t, ks, k, n,
                   sort_property, &e);
        e.op = 5;
        prop_check("hot keys (sort_copy with a sink)", 0x407E7 + (uint64_t)(pattern + 8 * ti + 64 * th), t, ks, k,
                   n, sort_property, &e);
      }
    }
    tdm_ctx_destroy(ctx);
  }
  free(k);
}

/* Results must not depend on the thread count. */
Test(sort_cpu, thread_counts_agree) {
  size_t n = 400000, i;
  uint32_t *a = (uint32_t *)malloc(n * 4), *b = (uint32_t *)malloc(n * 4);
  uint32_t *va = (uint32_t *)malloc(n * 4), *vb = (uint32_t *)malloc(n * 4);
  prop_rng r;
  int threads[] = {1, 2, 3, 7};
  int ti;
  prop_rng_init(&r, 0x7777);
  prop_fill(&r, TDM_F32, a, n, PROP_BOUNDARY);
  for (i = 0; i < n; i++) va[i] = (uint32_t)i;
  for (ti = 0; ti < 4; ti++) {
    tdm_ctx *ctx = prop_ctx(TDM_BACKEND_CPU, threads[ti]);
    memcpy(b, a, n * 4);
    memcpy(vb, va, n * 4);
    cr_assert_eq(tdm_sort_pairs(ctx, TDM_F32, b, TDM_U32, vb, n, TDM_SORT_DESCENDING), TDM_OK);
    if (ti == 0) {
      memcpy(a, b, n * 4);
      memcpy(va, vb, n * 4);
    } else {
      cr_assert(memcmp(a, b, n * 4) == 0 && memcmp(va, vb, n * 4) == 0,
                "sort_pairs with %d threads differs from 1 thread (TANDEM_SEED=%llu)", threads[ti],
                (unsigned long long)prop_seed());
    }
    tdm_ctx_destroy(ctx);
  }
  free(a); free(b); free(va); free(vb);
}

/* Keys-only sorts take Highway's vqsort when tandem is built with it
 * (cpu/sort_vq.h): over the whole array on one thread and below the
 * partition threshold (2^18 keys) on several, else for the buckets of the
 * radix partition. Checked against the reference on every instruction set
 * Highway can dispatch to on this CPU, for every key type, both directions,
 * NaNs and -0.0 (the boundary distribution), and sizes around each threshold
 * of the CPU sort: the insertion-sort cutoff (24), small vqsort sizes, the
 * cache target of a bucket (local_max: 131072 u32 or 65536 u64 keys) and
 * twice it (a bucket that recurses), and just over the partition threshold
 * (two threads partition when two cores are free). Built without Highway,
 * every size is the radix path. */
static void keys_only_sizes_case(tdm_ctx *ctx, int threads, const char *isa, const size_t *sizes, size_t ns,
                                 const prop_dist *dists, size_t nd, uint64_t case_base) {
  size_t ti, si, di;
  for (ti = 0; ti < 6; ti++) {
    tdm_type t = all_types[ti];
    size_t ks = tdm_type_size(t);
    for (si = 0; si < ns; si++) {
      /* The cache-target sizes are in u64 keys; u32 keys get twice as many. */
      size_t n = sizes[si] >= 1000 && ks == 4 ? 2 * sizes[si] : sizes[si];
      void *in = malloc(n * ks + 8);
      cr_assert(in != NULL);
      for (di = 0; di < nd; di++) {
        int desc;
        uint64_t id = case_base + ti * 100000 + si * 100 + di * 10;
        prop_rng r;
        prop_rng_init(&r, id);
        prop_fill(&r, t, in, n, dists[di]);
        for (desc = 0; desc < 2; desc++) {
          sort_env e = {ctx, t, TDM_U32, desc, 0, 0};
          char name[160];
          snprintf(name, sizeof name, "keys-only sort %s %s %s n=%zu threads=%d isa=%s", tdm_type_name(t),
                   desc ? "desc" : "asc", prop_dist_name(dists[di]), n, threads, isa);
          prop_check(name, id + (uint64_t)desc, t, ks, in, n, sort_property, &e);
        }
      }
      free(in);
    }
  }
}

Test(sort_cpu, keys_only_every_isa) {
  static const size_t small[] = {23, 24, 25, 26, 31, 32, 33, 63, 64, 65, 100, 255, 256, 257, 1023, 4099};
  static const size_t large[] = {65535, 65537, 131073, 262145};
  static const prop_dist small_d[] = {PROP_UNIFORM, PROP_FEW_DISTINCT, PROP_BOUNDARY, PROP_REVERSE};
  static const prop_dist large_d[] = {PROP_BOUNDARY, PROP_ZIPF};
  int level, th;
  for (level = 0; level < 4; level++) {
#if TANDEM_TEST_HAVE_HWY
    const char *isa = tdm_test_hwy_limit(level);
#else
    const char *isa = "none (built without Highway: radix passes)";
    if (level > 0) break;
#endif
    cr_log_info("keys-only sort checked with Highway target %s", isa);
    for (th = 1; th <= 2; th++) {
      tdm_ctx *ctx = prop_ctx(TDM_BACKEND_CPU, th);
      keys_only_sizes_case(ctx, th, isa, small, sizeof small / sizeof *small, small_d, 4,
                           0x150A000000ull + (uint64_t)level * 0x1000000 + (uint64_t)th * 0x100000);
      /* The partition and the bucket hand-off do not depend on the
       * instruction set: large sizes run at the best one, once at the
       * baseline, and on two threads at AVX2, whose plan sends 64-bit keys
       * to the radix partition (cpu/sort_plan_cpu.c) when both cores are
       * free. */
      if (level == 0 || (level == 1 && th == 2) || (level == 3 && th == 1))
        keys_only_sizes_case(ctx, th, isa, large, sizeof large / sizeof *large, large_d, 2,
                             0x150B000000ull + (uint64_t)level * 0x1000000 + (uint64_t)th * 0x100000);
      tdm_ctx_destroy(ctx);
    }
  }
#if TANDEM_TEST_HAVE_HWY
  tdm_test_hwy_limit(0);
#endif
}

/* The split sort's partition loops (cpu/sort_plan_cpu.c): a context takes
 * its plan from Highway's targets when it is created, so each mode limits
 * them and makes a two-thread context: 0 the best loop of this CPU, 1 at
 * most AVX2 (its permute loop), 2 at most SSE4 (the scalar loop). NULL when
 * the mode does not exist (built without Highway, only mode 0). *isa names
 * Highway's best target left. */
static tdm_ctx *split_mode_ctx(int mode, const char **isa) {
#if TANDEM_TEST_HAVE_HWY
  *isa = tdm_test_hwy_limit(mode);
#else
  *isa = "none";
  if (mode > 0) return NULL;
#endif
  return prop_ctx(TDM_BACKEND_CPU, 2);
}

/* The two-thread keys-only split sort (cpu/sort_split_cpu.c), forced onto
 * every size so that a loaded machine, where the call would take one
 * thread, still runs it: every key type, both directions, every
 * distribution (all-equal and few distinct keys take its one-thread
 * fallback or put a repeated median on one side; NaNs and -0.0 are in the
 * boundary one), sizes around the vector partitions' cutoffs (under three
 * vectors: the scalar loop, 48 u32 or 24 u64 keys for AVX-512, 24 and 12 for
 * AVX2; tails of one vector) and the sample size, with each partition loop
 * this CPU has (split_mode_ctx). */
Test(sort_cpu, keys_split_two_threads) {
  static const size_t sizes[] = {1,  2,  3,  11, 12, 13,   23,   24,   25,    47,    48,
                                 49, 95, 97, 1000, 4095, 4097, 65537, 200003};
  int mode;
  tdm_test_keys_split(1);
  for (mode = 0; mode <= 2; mode++) {
    size_t ti, si;
    const char *isa;
    tdm_ctx *ctx = split_mode_ctx(mode, &isa);
    if (!ctx) break;
    for (ti = 0; ti < 6; ti++) {
      tdm_type t = all_types[ti];
      size_t ks = tdm_type_size(t);
      for (si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        size_t n = sizes[si];
        void *in = malloc(n * ks + 8);
        prop_dist d;
        cr_assert(in != NULL);
        for (d = 0; d < PROP_DIST_COUNT; d++) {
          int desc;
          uint64_t id = 0x5B117000000ull + (uint64_t)(mode + 1) * 0x1000000 + ti * 100000 + si * 100 + (uint64_t)d * 10;
          prop_rng r;
          /* The large sizes on a few distributions only: the reference
           * sort dominates the time. */
          if (n > 10000 && d != PROP_UNIFORM && d != PROP_FEW_DISTINCT && d != PROP_BOUNDARY) continue;
          if (n > 100000 && d == PROP_BOUNDARY) continue;
          prop_rng_init(&r, id);
          prop_fill(&r, t, in, n, d);
          for (desc = 0; desc < 2; desc++) {
            sort_env e = {ctx, t, TDM_U32, desc, 0, 0};
            char name[160];
            snprintf(name, sizeof name, "keys-only split sort %s %s %s n=%zu isa=%s", tdm_type_name(t),
                     desc ? "desc" : "asc", prop_dist_name(d), n, isa);
            prop_check(name, id + (uint64_t)desc, t, ks, in, n, sort_property, &e);
          }
        }
        free(in);
      }
    }
    tdm_ctx_destroy(ctx);
  }
#if TANDEM_TEST_HAVE_HWY
  tdm_test_hwy_limit(0);
#endif
  tdm_test_keys_split(0);
}

/* Fills in[0, n) of ks-byte keys for split_matches_one_thread's shape s:
 * 0 two distinct keys, one on 7 rows of 8; 1 two keys alternating; 2 +0.0
 * and -0.0 (floats; integers: 0 and the sign bit); 3 NaNs of both signs and
 * several payloads among -0.0, +0.0 and infinities; 4 the low key on one row
 * of 9 only, the sample's bound at the edge of its 1/8 fallback; 5 sorted
 * with runs of four equal keys. */
static void split_shape_fill(void *in, size_t ks, int shape, size_t n, prop_rng *r) {
  static const uint32_t special32[] = {0x7fc00000u, 0xffc00000u, 0x7fc00001u, 0xff800001u, 0x80000000u,
                                       0x00000000u, 0x7f800000u, 0xff800000u};
  static const uint64_t special64[] = {0x7ff8000000000000ull, 0xfff8000000000000ull, 0x7ff8000000000001ull,
                                       0xfff0000000000001ull, 0x8000000000000000ull, 0x0000000000000000ull,
                                       0x7ff0000000000000ull, 0xfff0000000000000ull};
  size_t i;
  for (i = 0; i < n; i++) {
    uint64_t x = prop_next(r), v;
    switch (shape) {
    case 0: v = x % 8 ? 5 : 3; break;
    case 1: v = i & 1 ? 9 : 4; break;
    case 2: v = x & 1 ? (ks == 4 ? 0x80000000u : 0x8000000000000000ull) : 0; break;
    case 3: v = ks == 4 ? special32[x % 8] : special64[x % 8]; break;
    case 4: v = x % 9 ? 1000 + x % 3 : 7; break;
    default: v = i / 4; break;
    }
    if (ks == 4) ((uint32_t *)in)[i] = (uint32_t)v;
    else ((uint64_t *)in)[i] = v;
  }
}

/* The split sort's bytes against the one-thread sort's (one vqsort of the
 * whole array, or the radix passes built without Highway) on inputs made to
 * strain its bound and its partition: every key type, both directions, the
 * shapes of split_shape_fill and sizes around the halves' and the vectors'
 * edges, with each partition loop of this CPU. */
Test(sort_cpu, keys_split_matches_one_thread) {
  static const size_t sizes[] = {2, 3, 5, 24, 25, 26, 48, 49, 50, 97, 98, 4096, 4097, 20001};
  int mode, shape;
  tdm_ctx *one = prop_ctx(TDM_BACKEND_CPU, 1);
  for (mode = 0; mode <= 2; mode++) {
    size_t ti, si;
    const char *isa;
    tdm_ctx *two = split_mode_ctx(mode, &isa);
    if (!two) break;
    for (ti = 0; ti < 6; ti++) {
      tdm_type t = all_types[ti];
      size_t ks = tdm_type_size(t);
      for (si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        size_t n = sizes[si];
        char *in = (char *)malloc(n * ks), *a = (char *)malloc(n * ks), *b = (char *)malloc(n * ks);
        cr_assert(in && a && b);
        for (shape = 0; shape < 6; shape++) {
          int desc;
          prop_rng r;
          prop_rng_init(&r, 0x5B11D000000ull + (uint64_t)mode * 0x100000 + ti * 10000 + si * 10 + (uint64_t)shape);
          split_shape_fill(in, ks, shape, n, &r);
          for (desc = 0; desc < 2; desc++) {
            unsigned flags = desc ? TDM_SORT_DESCENDING : 0;
            memcpy(a, in, n * ks);
            memcpy(b, in, n * ks);
            cr_assert_eq(tdm_sort(one, t, a, n, flags), TDM_OK);
            tdm_test_keys_split(1);
            cr_assert_eq(tdm_sort(two, t, b, n, flags), TDM_OK);
            tdm_test_keys_split(0);
            cr_assert(memcmp(a, b, n * ks) == 0, "split sort %s %s shape %d n=%zu isa=%s: bytes differ from 1 thread",
                      tdm_type_name(t), desc ? "desc" : "asc", shape, n, isa);
          }
        }
        free(in);
        free(a);
        free(b);
      }
    }
    tdm_ctx_destroy(two);
  }
#if TANDEM_TEST_HAVE_HWY
  tdm_test_hwy_limit(0);
#endif
  tdm_ctx_destroy(one);
}

/* The float order of the contract, spelled out. */
Test(sort_unit, float_total_order) {
  tdm_ctx *ctx = prop_ctx(TDM_BACKEND_CPU, 1);
  /* -NaN, -inf, -1, -0.0, +0.0, denormal, 1, +inf, +NaN (bit patterns) */
  uint32_t want[] = {0xffc00000u, 0xff800000u, 0xbf800000u, 0x80000000u, 0x00000000u,
                     0x00000001u, 0x3f800000u, 0x7f800000u, 0x7fc00000u};
  uint32_t in[] = {0x7fc00000u, 0x00000000u, 0xbf800000u, 0xff800000u, 0x3f800000u,
                   0x80000000u, 0x7f800000u, 0xffc00000u, 0x00000001u};
  cr_assert_eq(tdm_sort(ctx, TDM_F32, in, 9, 0), TDM_OK);
  cr_assert_arr_eq(in, want, sizeof want);
  tdm_ctx_destroy(ctx);
}

Test(sort_unit, descending_is_stable_not_reversed) {
  tdm_ctx *ctx = prop_ctx(TDM_BACKEND_CPU, 1);
  int32_t k[] = {1, 3, 1, 3, 2};
  uint32_t v[] = {0, 1, 2, 3, 4};
  int32_t wk[] = {3, 3, 2, 1, 1};
  uint32_t wv[] = {1, 3, 4, 0, 2};
  cr_assert_eq(tdm_sort_pairs(ctx, TDM_I32, k, TDM_U32, v, 5, TDM_SORT_DESCENDING), TDM_OK);
  cr_assert_arr_eq(k, wk, sizeof wk);
  cr_assert_arr_eq(v, wv, sizeof wv);
  tdm_ctx_destroy(ctx);
}

Test(sort_unit, signed_order) {
  tdm_ctx *ctx = prop_ctx(TDM_BACKEND_CPU, 1);
  int64_t k[] = {5, INT64_MIN, -1, INT64_MAX, 0, -5};
  int64_t w[] = {INT64_MIN, -5, -1, 0, 5, INT64_MAX};
  uint64_t perm[6];
  uint64_t wp[] = {1, 5, 2, 4, 0, 3};
  cr_assert_eq(tdm_argsort(ctx, TDM_I64, k, TDM_U64, perm, 6, 0), TDM_OK);
  cr_assert_arr_eq(perm, wp, sizeof wp);
  cr_assert_eq(tdm_sort(ctx, TDM_I64, k, 6, 0), TDM_OK);
  cr_assert_arr_eq(k, w, sizeof w);
  tdm_ctx_destroy(ctx);
}

/* A call forks no more threads than it asked for and at least one, however
 * busy the machine; with another process keeping a core busy, a 2-thread
 * context still sorts exactly as a 1-thread one. */
Test(sort_unit, threads_under_load) {
  size_t n = (size_t)1 << 20, i;
  uint64_t *k1 = malloc(n * 8), *k2 = malloc(n * 8), *v1 = malloc(n * 8), *v2 = malloc(n * 8), x = 12345;
  tdm_ctx *c1 = prop_ctx(TDM_BACKEND_CPU, 1), *c2 = prop_ctx(TDM_BACKEND_CPU, 2);
  pid_t busy;
  int want;
  cr_assert(k1 && k2 && v1 && v2);
  for (want = 1; want <= 8; want++) {
    int got = tdm__cpu_threads_avail(want);
    cr_assert(got >= 1 && got <= want, "%d threads granted of %d", got, want);
  }
  busy = fork();
  cr_assert(busy >= 0);
  if (busy == 0)
    for (;;) x = x * 6364136223846793005u + 1; /* the other process: spins until killed */
  for (i = 0; i < n; i++) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    k1[i] = k2[i] = (x >> 40) % 1000; /* many equal keys: stability shows */
    v1[i] = v2[i] = i;
  }
  cr_assert_eq(tdm_sort_pairs(c1, TDM_U64, k1, TDM_U64, v1, n, 0), TDM_OK);
  cr_assert_eq(tdm_sort_pairs(c2, TDM_U64, k2, TDM_U64, v2, n, 0), TDM_OK);
  kill(busy, SIGKILL);
  waitpid(busy, NULL, 0);
  cr_assert_arr_eq(k1, k2, n * 8);
  cr_assert_arr_eq(v1, v2, n * 8);
  for (i = 1; i < n; i++) cr_assert(k1[i - 1] < k1[i] || (k1[i - 1] == k1[i] && v1[i - 1] < v1[i]));
  free(k1), free(k2), free(v1), free(v2);
  tdm_ctx_destroy(c1);
  tdm_ctx_destroy(c2);
}

/* CUDA and CPU agree bit for bit (skipped with the reason when no device). */
Test(sort_cuda, matches_cpu) {
  const char *why;
  size_t ti;
  if (!prop_cuda_usable(&why)) {
    cr_skip_test("no usable CUDA device: %s", why);
  }
  for (ti = 0; ti < 6; ti++) {
    tdm_type t = all_types[ti];
    size_t ks = tdm_type_size(t), n = 1u << 20;
    char *a = (char *)malloc(n * ks), *b = (char *)malloc(n * ks);
    uint64_t *va = (uint64_t *)malloc(n * 8), *vb = (uint64_t *)malloc(n * 8);
    tdm_ctx *cpu = prop_ctx(TDM_BACKEND_CPU, 0), *gpu = prop_ctx(TDM_BACKEND_CUDA, 0);
    prop_rng r;
    size_t i;
    int desc;
    prop_rng_init(&r, 0xC0DA + ti);
    prop_fill(&r, t, a, n, PROP_BOUNDARY);
    for (desc = 0; desc < 2; desc++) {
      memcpy(b, a, n * ks);
      for (i = 0; i < n; i++) va[i] = vb[i] = i;
      cr_assert_eq(tdm_sort_pairs(cpu, t, a, TDM_U64, va, n, desc), TDM_OK);
      cr_assert_eq(tdm_sort_pairs(gpu, t, b, TDM_U64, vb, n, desc), TDM_OK, "%s", tdm_last_error());
      cr_assert(memcmp(a, b, n * ks) == 0 && memcmp(va, vb, n * 8) == 0, "CUDA differs from CPU for %s",
                tdm_type_name(t));
    }
    tdm_ctx_destroy(cpu);
    tdm_ctx_destroy(gpu);
    free(a); free(b); free(va); free(vb);
  }
}

/* Device-resident and managed arrays are sorted in place on the device and
 * agree with the CPU; a device pointer on a CPU context is refused. */
/* argsort of integer keys in device memory (read in place by the sort),
 * both orders, 32- and 64-bit indices (the sort's 32-bit ones widened),
 * into device and host permutations: the CPU's permutation, ties in input
 * order. */
Test(sort_cuda, argsort_device_keys) {
  static const tdm_type kts[] = {TDM_U32, TDM_I32, TDM_U64, TDM_I64};
  const char *why;
  size_t n = 50000, ki;
  if (!prop_cuda_usable(&why)) cr_skip_test("no usable CUDA device: %s", why);
  tdm_ctx *cpu = prop_ctx(TDM_BACKEND_CPU, 0), *gpu = prop_ctx(TDM_BACKEND_CUDA, 0);
  char *h = (char *)malloc(n * 8), *want = (char *)malloc(n * 8), *got = (char *)malloc(n * 8);
  void *dk = prop_dev_alloc(n * 8, 0), *dp = prop_dev_alloc(n * 8, 0);
  for (ki = 0; ki < 4; ki++)
    for (int ix = 0; ix < 2; ix++)
      for (int desc = 0; desc < 2; desc++)
        for (int dev_out = 0; dev_out < 2; dev_out++) {
          tdm_type it = ix ? TDM_U64 : TDM_U32;
          unsigned flags = desc ? TDM_SORT_DESCENDING : 0;
          size_t is = tdm_type_size(it);
          prop_rng r;
          prop_rng_init(&r, 0xA5D0 + ki * 8 + (uint64_t)(ix * 4 + desc * 2 + dev_out));
          prop_fill(&r, kts[ki], h, n, (ki + (size_t)desc) % 2 ? PROP_FEW_DISTINCT : PROP_BOUNDARY);
          prop_h2d(dk, h, n * tdm_type_size(kts[ki]));
          cr_assert_eq(tdm_argsort(cpu, kts[ki], h, it, want, n, flags), TDM_OK);
          cr_assert_eq(tdm_argsort(gpu, kts[ki], dk, it, dev_out ? dp : (void *)got, n, flags), TDM_OK, "%s",
                       tdm_last_error());
          if (dev_out) prop_d2h(got, dp, n * is);
          cr_assert(memcmp(want, got, n * is) == 0, "argsort %s -> %s, %s, %s permutation: differs from the CPU",
                    tdm_type_name(kts[ki]), tdm_type_name(it), desc ? "descending" : "ascending",
                    dev_out ? "device" : "host");
        }
  prop_dev_free(dk);
  prop_dev_free(dp);
  free(h); free(want); free(got);
  tdm_ctx_destroy(cpu);
  tdm_ctx_destroy(gpu);
}

Test(sort_cuda, device_and_managed_arrays) {
  const char *why;
  size_t n = 300000, i;
  int managed;
  if (!prop_cuda_usable(&why)) {
    cr_skip_test("no usable CUDA device: %s", why);
  }
  for (managed = 0; managed < 2; managed++) {
    tdm_ctx *cpu = prop_ctx(TDM_BACKEND_CPU, 0), *gpu = prop_ctx(TDM_BACKEND_CUDA, 0);
    double *h = (double *)malloc(n * 8), *back = (double *)malloc(n * 8);
    uint32_t *hv = (uint32_t *)malloc(n * 4), *backv = (uint32_t *)malloc(n * 4);
    uint64_t *perm_h = (uint64_t *)malloc(n * 8), *perm_back = (uint64_t *)malloc(n * 8);
    void *dk = prop_dev_alloc(n * 8, managed), *dv = prop_dev_alloc(n * 4, managed);
    void *dp = prop_dev_alloc(n * 8, managed);
    prop_rng r;
    prop_rng_init(&r, 0xDE71CE + (uint64_t)managed);
    prop_fill(&r, TDM_F64, h, n, PROP_BOUNDARY);
    for (i = 0; i < n; i++) hv[i] = (uint32_t)i;
    prop_h2d(dk, h, n * 8);
    prop_h2d(dv, hv, n * 4);
    cr_assert_eq(tdm_argsort(gpu, TDM_F64, dk, TDM_U64, dp, n, TDM_SORT_DESCENDING), TDM_OK, "%s", tdm_last_error());
    cr_assert_eq(tdm_argsort(cpu, TDM_F64, h, TDM_U64, perm_h, n, TDM_SORT_DESCENDING), TDM_OK);
    prop_d2h(perm_back, dp, n * 8);
    cr_assert(memcmp(perm_h, perm_back, n * 8) == 0, "device argsort differs from CPU");
    cr_assert_eq(tdm_sort_pairs(gpu, TDM_F64, dk, TDM_U32, dv, n, 0), TDM_OK, "%s", tdm_last_error());
    cr_assert_eq(tdm_sort_pairs(cpu, TDM_F64, h, TDM_U32, hv, n, 0), TDM_OK);
    prop_d2h(back, dk, n * 8);
    prop_d2h(backv, dv, n * 4);
    cr_assert(memcmp(h, back, n * 8) == 0 && memcmp(hv, backv, n * 4) == 0,
              "device-resident sort_pairs differs from CPU (managed=%d)", managed);
    /* The CPU backend refuses device memory. */
    cr_assert_eq(tdm_sort(cpu, TDM_F64, dk, n, 0), TDM_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(tdm_last_error(), "device") != NULL, "%s", tdm_last_error());
    prop_dev_free(dk);
    prop_dev_free(dv);
    prop_dev_free(dp);
    free(h); free(back); free(hv); free(backv); free(perm_h); free(perm_back);
    tdm_ctx_destroy(cpu);
    tdm_ctx_destroy(gpu);
  }
}
