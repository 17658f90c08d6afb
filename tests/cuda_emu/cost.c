/*
 * cost.c: what each bulk operation of tandem's CUDA backend costs on the
 * emulated device's meter (src/meter.cc; make cuda-emu-cost), one row per
 * operation and key type, design "cuda" (tandem's CUDA backend), on device
 * arrays, on a stream-ordered context (so a host wait is one the operation
 * needs).
 * With --peers it measures instead the benchmark's GPU peers
 * (bench/bench_peers.h: raw CUB, a binary search over sorted keys, a
 * linear-probing table), rows whose design is the peer's name, on the same
 * inputs. Test-only.
 *   tandem-cost [--n N] [--csv FILE] [--append] [--budgets FILE] [--only PART] [--peers]
 *   tandem-cost-profile [--n N] [--only PART] [--peers] --profile STRUCTURE/OPERATION/KEY
 * prints a table, writes (or appends) the CSV rows and, with --budgets,
 * fails when a row exceeds its limits (cost-budgets.txt says how to read it).
 * The ideal column is the I/O bound: each input read once, each output
 * written once, plus one 32-byte sector of the structure per random probe
 * (tests/cuda_emu/README.md, "Cost meter", has the table).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "bench_peers.h"
#include "tandem/tandem.h"

#ifndef TDM_EMU_METERED
#define TDM_EMU_METERED 0
#endif
/* TDM_COST_PROFILE: the same program built against the real CUDA library
 * (tandem-cost-profile), for the GPU check's calibration: `--profile
 * STRUCTURE/OPERATION/KEY` runs every row as usual but brackets only that
 * row's call with cudaProfilerStart and cudaProfilerStop, so that Nsight
 * Compute (--profile-from-start off) reads the hardware's counters of
 * exactly the call the meter measured, at the same n on the same inputs. */
#ifndef TDM_COST_PROFILE
#define TDM_COST_PROFILE 0
#endif
#if TDM_COST_PROFILE
#include <cuda_profiler_api.h>
typedef struct tdm_emu_meter {
  unsigned long long sectors, atomics, max_same_address_atomics, launches, host_syncs, allocs, h2d_bytes, d2h_bytes;
} tdm_emu_meter;
static const char *profile_row; /* STRUCTURE/OPERATION/KEY, or NULL */
static int profiling, profiled;
#else
#include "emu_meter.h"
#endif

typedef struct row {
  const char *structure, *operation, *design, *key_type, *value_type;
  double ideal; /* sectors per key */
  tdm_emu_meter m;
} row;

static size_t n_keys = (size_t)1 << 18;
static const char *design = "cuda";
static FILE *csv;
static int over_budget, rows_done, peers;
static const char *budgets_path;

static void die(const char *what, tdm_status s) {
  fprintf(stderr, "tandem-cost: %s: %s: %s\n", what, tdm_status_name(s), tdm_last_error());
  exit(2);
}
#define CHECK(call)                      \
  do {                                   \
    tdm_status s_ = (call);              \
    if (s_ != TDM_OK) die(#call, s_);    \
  } while (0)

static void *dev(size_t bytes) {
  void *p = NULL;
  if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) {
    fprintf(stderr, "tandem-cost: cudaMalloc of %zu bytes failed\n", bytes);
    exit(2);
  }
  return p;
}
static void up(void *d, const void *h, size_t bytes) {
  if (cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
    fprintf(stderr, "tandem-cost: upload failed\n");
    exit(2);
  }
}

static uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

#if !TDM_COST_PROFILE
/* The budget of a row: its limits, or none (a new row fails: add it). */
typedef struct budget {
  double sectors, atomics;
  unsigned long long max_same, launches, syncs, ptr_queries;
  int found;
} budget;

static budget find_budget(const row *r) {
  budget b;
  char line[512];
  memset(&b, 0, sizeof b);
  FILE *f = fopen(budgets_path, "r");
  if (!f) {
    fprintf(stderr, "tandem-cost: cannot read %s\n", budgets_path);
    exit(2);
  }
  while (fgets(line, sizeof line, f)) {
    char st[64], op[64], de[64], kt[64], vt[64];
    budget x;
    if (line[0] == '#' || line[0] == '\n') continue;
    if (sscanf(line, "%63s %63s %63s %63s %63s %lf %lf %llu %llu %llu %llu", st, op, de, kt, vt, &x.sectors,
               &x.atomics, &x.max_same, &x.launches, &x.syncs, &x.ptr_queries) != 11)
      continue;
    if (!strcmp(st, r->structure) && !strcmp(op, r->operation) && !strcmp(de, r->design) && !strcmp(kt, r->key_type) &&
        !strcmp(vt, r->value_type)) {
      b = x;
      b.found = 1;
    }
  }
  fclose(f);
  return b;
}

static void report(row *r) {
  const tdm_emu_meter *m = &r->m;
  double n = (double)n_keys, spk = (double)m->sectors / n, apk = (double)m->atomics / n;
  if (!rows_done++)
    printf("%-6s %-21s %-14s %-4s %-4s %9s %7s %7s %8s %8s %6s %5s %6s %5s %8s %8s %8s %8s\n", "struct", "operation",
           "design", "key", "val", "sect/key", "ideal", "x ideal", "atom/key", "max-addr", "launch", "syncs", "allocs",
           "ptr-q", "smem/key", "repl/acc", "h2d", "d2h");
  printf("%-6s %-21s %-14s %-4s %-4s %9.3f %7.3f %7.2f %8.3f %8llu %6llu %5llu %6llu %5llu %8.3f %8.3f %8llu %8llu\n",
         r->structure, r->operation, r->design, r->key_type, r->value_type, spk, r->ideal, spk / r->ideal, apk,
         m->max_same_address_atomics, m->launches, m->host_syncs, m->allocs, m->ptr_queries,
         (double)m->shared_requests / n, m->shared_requests ? (double)m->bank_conflict_replays / m->shared_requests : 0.0,
         m->h2d_bytes, m->d2h_bytes);
  if (csv)
    fprintf(csv, "%s,%s,%s,%s,%s,%zu,%.4f,%.4f,%.4f,%llu,%llu,%llu,%llu,%llu,%llu\n", r->structure, r->operation,
            r->design, r->key_type, r->value_type, n_keys, spk, r->ideal, apk, m->max_same_address_atomics,
            m->launches, m->host_syncs, m->h2d_bytes, m->d2h_bytes, m->ptr_queries);
  if (budgets_path) {
    budget b = find_budget(r);
    if (!b.found) {
      printf("  OVER BUDGET: no budget for this row in %s\n", budgets_path);
      over_budget++;
    } else {
      /* compared as the CSV prints them */
      double s4 = (double)(long long)(spk * 10000 + 0.5) / 10000, a4 = (double)(long long)(apk * 10000 + 0.5) / 10000;
      if (s4 > b.sectors + 1e-9) printf("  OVER BUDGET: sectors_per_key %.4f > %.4f\n", s4, b.sectors), over_budget++;
      if (a4 > b.atomics + 1e-9) printf("  OVER BUDGET: atomics_per_key %.4f > %.4f\n", a4, b.atomics), over_budget++;
      if (m->max_same_address_atomics > b.max_same)
        printf("  OVER BUDGET: max_same_address_atomics %llu > %llu\n", m->max_same_address_atomics, b.max_same),
            over_budget++;
      if (m->launches > b.launches) printf("  OVER BUDGET: launches %llu > %llu\n", m->launches, b.launches), over_budget++;
      if (m->host_syncs > b.syncs) printf("  OVER BUDGET: host_syncs %llu > %llu\n", m->host_syncs, b.syncs), over_budget++;
      if (m->ptr_queries > b.ptr_queries)
        printf("  OVER BUDGET: ptr_queries %llu > %llu\n", m->ptr_queries, b.ptr_queries), over_budget++;
    }
  }
  fflush(stdout);
}

#endif

/* begin, then end (a row of tandem's, the design measured) or end_as (a
 * row of the peer de) around each measured call. */
#if TDM_COST_PROFILE
static void begin(const char *st, const char *op, const char *kt) {
  char name[160];
  snprintf(name, sizeof name, "%s/%s/%s", st, op, kt);
  profiling = profile_row && !strcmp(name, profile_row);
  /* Queued work of earlier rows must not fall inside the profiled range. */
  if (profiling && (cudaDeviceSynchronize() != cudaSuccess || cudaProfilerStart() != cudaSuccess)) {
    fprintf(stderr, "tandem-cost: cudaProfilerStart failed\n");
    exit(2);
  }
}
static void end_as(row *r, const char *st, const char *op, const char *de, const char *kt, const char *vt,
                   double ideal) {
  (void)r, (void)vt, (void)ideal;
  if (!profiling) return;
  if (cudaDeviceSynchronize() != cudaSuccess || cudaProfilerStop() != cudaSuccess) {
    fprintf(stderr, "tandem-cost: the profiled call failed on the device\n");
    exit(2);
  }
  printf("profiled: %s,%s,%s,%s,%s,%zu\n", st, op, de, kt, vt, n_keys);
  profiling = 0;
  profiled++;
}
#else
static void begin(const char *st, const char *op, const char *kt) {
  (void)st, (void)op, (void)kt;
  tdm_emu_meter_start();
}
static void end_as(row *r, const char *st, const char *op, const char *de, const char *kt, const char *vt,
                   double ideal) {
  tdm_emu_meter_read(&r->m);
  tdm_emu_meter_stop();
  r->structure = st;
  r->design = de;
  r->operation = op;
  r->key_type = kt;
  r->value_type = vt;
  r->ideal = ideal;
  report(r);
}
#endif
static void end(row *r, const char *st, const char *op, const char *kt, const char *vt, double ideal) {
  end_as(r, st, op, design, kt, vt, ideal);
}

/* Hot-key inputs: keys h[0..n) with one key on 90 % of the rows (chosen by
 * a hash of the row, so they are spread), the other rows distinct keys;
 * values h[n..2n). Returns the number of distinct keys. */
static const uint64_t hot_key = 0x5eed5eed5eedull;
static int is_hot(size_t i) { return mix(i ^ 0xabcdefull) % 10 != 0; }
static size_t hot90(uint64_t *h, size_t n) {
  size_t distinct = 1;
  for (size_t i = 0; i < n; i++) {
    h[i] = is_hot(i) ? hot_key : mix(i) | 1ull << 63; /* the hot key's top bit is clear */
    distinct += !is_hot(i);
    h[n + i] = mix(i + n);
  }
  return distinct;
}

/* ---- sort ------------------------------------------------------------------ */
static void sorts(tdm_ctx *ctx) {
  size_t n = n_keys;
  uint64_t *h = malloc(n * 16);
  void *dk = dev(n * 8), *dv = dev(n * 8), *dp = dev(n * 8);
  row r;
  struct {
    tdm_type t;
    const char *name;
    size_t size;
  } kinds[] = {{TDM_U32, "u32", 4}, {TDM_U64, "u64", 8}, {TDM_F32, "f32", 4}};
  for (size_t i = 0; i < 2 * n; i++) h[i] = mix(i);
  for (int k = 0; k < 3; k++) {
    if (kinds[k].t == TDM_F32) /* finite floats of every sign and magnitude */
      for (size_t i = 0; i < n; i++) {
        float f = (float)((double)(int64_t)h[i] / 9.2e12);
        memcpy((char *)h + i * 4, &f, 4);
      }
    up(dk, h, n * kinds[k].size);
    begin("sort", "keys", kinds[k].name);
    CHECK(tdm_sort(ctx, kinds[k].t, dk, n, 0));
    end(&r, "sort", "keys", kinds[k].name, "none", 2.0 * kinds[k].size / 32);
  }
  for (size_t i = 0; i < 2 * n; i++) h[i] = mix(i);
  up(dk, h, n * 8);
  up(dv, h + n, n * 8);
  begin("sort", "pairs", "u64");
  CHECK(tdm_sort_pairs(ctx, TDM_U64, dk, TDM_U64, dv, n, 0));
  end(&r, "sort", "pairs", "u64", "u64", 2.0 * 16 / 32);
  up(dk, h, n * 8);
  begin("sort", "argsort", "u64");
  CHECK(tdm_argsort(ctx, TDM_U64, dk, TDM_U64, dp, n, 0));
  end(&r, "sort", "argsort", "u64", "u64", (8.0 + 8.0) / 32);
  hot90(h, n);
  up(dk, h, n * 8);
  up(dv, h + n, n * 8);
  begin("sort", "pairs_hot90", "u64");
  CHECK(tdm_sort_pairs(ctx, TDM_U64, dk, TDM_U64, dv, n, 0));
  end(&r, "sort", "pairs_hot90", "u64", "u64", 2.0 * 16 / 32);
  cudaFree(dk);
  cudaFree(dv);
  cudaFree(dp);
  free(h);
}

/* Raw CUB on the same inputs: keys u32 and u64, pairs u64 + u64. */
static void peer_sorts(void) {
  size_t n = n_keys, tb = bench_cub_temp_bytes(n, 8, 1);
  uint64_t *h = malloc(n * 16);
  void *dk = dev(n * 8), *dka = dev(n * 8), *dv = dev(n * 8), *dva = dev(n * 8), *dt = dev(tb);
  row r;
  for (size_t i = 0; i < 2 * n; i++) h[i] = mix(i);
  up(dk, h, n * 4);
  begin("sort", "keys", "u32");
  bench_cub_sort(dt, tb, dk, dka, NULL, NULL, n, 4);
  end_as(&r, "sort", "keys", "cub", "u32", "none", 2.0 * 4 / 32);
  up(dk, h, n * 8);
  begin("sort", "keys", "u64");
  bench_cub_sort(dt, tb, dk, dka, NULL, NULL, n, 8);
  end_as(&r, "sort", "keys", "cub", "u64", "none", 2.0 * 8 / 32);
  up(dk, h, n * 8);
  up(dv, h + n, n * 8);
  begin("sort", "pairs", "u64");
  bench_cub_sort(dt, tb, dk, dka, dv, dva, n, 8);
  end_as(&r, "sort", "pairs", "cub", "u64", "u64", 2.0 * 16 / 32);
  cudaFree(dk);
  cudaFree(dka);
  cudaFree(dv);
  cudaFree(dva);
  cudaFree(dt);
  free(h);
}

/* ---- hash table (u64 -> u64) ------------------------------------------------ */
/* Stored keys h[0..n) (top bit clear), values h[n..2n), queries h[2n..3n):
 * half stored, half never. */
static void hash_inputs(uint64_t *h, size_t n) {
  for (size_t i = 0; i < n; i++) {
    h[i] = mix(2 * i) >> 1;
    h[n + i] = mix(3 * i + 7);
    h[2 * n + i] = i % 2 ? mix(2 * i + 1) >> 1 | 1ull << 63 : h[i];
  }
}

static void hashes(tdm_ctx *ctx) {
  size_t n = n_keys, erased = 0;
  uint64_t *h = malloc(n * 8 * 3);
  void *dk = dev(n * 8), *dv = dev(n * 8), *dq = dev(n * 8), *dout = dev(n * 8), *dfound = dev(n);
  tdm_hash_opts o;
  tdm_hash *t, *t2;
  row r;
  memset(&o, 0, sizeof o);
  o.key_type = TDM_U64;
  o.value_type = TDM_U64;
  o.capacity = n;
  o.on_duplicate = TDM_DUP_KEEP_LAST;
  hash_inputs(h, n);
  up(dk, h, n * 8);
  up(dv, h + n, n * 8);
  CHECK(tdm_hash_create(ctx, &o, &t));
  begin("hash", "insert", "u64");
  CHECK(tdm_hash_insert(t, dk, dv, n));
  /* input 16 B, one slot sector written */
  end(&r, "hash", "insert", "u64", "u64", 16.0 / 32 + 1);
  begin("hash", "find_hit", "u64");
  CHECK(tdm_hash_find(t, dk, dout, (uint8_t *)dfound, n));
  /* key 8 B, one slot sector, value 8 B and found 1 B written */
  end(&r, "hash", "find_hit", "u64", "u64", 17.0 / 32 + 8.0 / 32 + 1);
  up(dq, h + 2 * n, n * 8);
  begin("hash", "find_miss50", "u64");
  CHECK(tdm_hash_find(t, dq, dout, (uint8_t *)dfound, n));
  end(&r, "hash", "find_miss50", "u64", "u64", 17.0 / 32 + 8.0 / 32 + 1);
  /* The same keys again with new values (the queries, still in dq), into
   * a table with room for both batches (so that the insert's growth rule,
   * which counts every key as new, does not rehash): every key finds its
   * slot taken, so KEEP_LAST runs its election; insert above is a bulk load
   * of new keys. */
  o.capacity = 2 * n;
  CHECK(tdm_hash_create(ctx, &o, &t2));
  CHECK(tdm_hash_insert(t2, dk, dv, n));
  begin("hash", "insert_again", "u64");
  CHECK(tdm_hash_insert(t2, dk, dq, n));
  end(&r, "hash", "insert_again", "u64", "u64", 16.0 / 32 + 1);
  tdm_hash_destroy(t2);
  begin("hash", "erase", "u64");
  CHECK(tdm_hash_erase(t, dk, n, &erased));
  end(&r, "hash", "erase", "u64", "u64", 8.0 / 32 + 1);
  if (erased != n) fprintf(stderr, "tandem-cost: hash erase removed %zu of %zu keys\n", erased, n), exit(2);
  tdm_hash_destroy(t);
  cudaFree(dk);
  cudaFree(dv);
  cudaFree(dq);
  cudaFree(dout);
  cudaFree(dfound);
  free(h);
}

/* The benchmark's linear-probing table at load 0.5 (2n slots), same inputs. */
static void peer_hashes(void) {
  size_t n = n_keys, slots = 1;
  uint64_t *h = malloc(n * 8 * 3);
  while (slots < 2 * n) slots *= 2;
  void *dk = dev(n * 8), *dv = dev(n * 8), *dq = dev(n * 8), *dout = dev(n * 8), *dfound = dev(n),
       *dt = dev(slots * 16);
  row r;
  hash_inputs(h, n);
  up(dk, h, n * 8);
  up(dv, h + n, n * 8);
  up(dq, h + 2 * n, n * 8);
  bench_lp_clear(dt, slots);
  begin("hash", "insert", "u64");
  bench_lp_insert(dt, slots, dk, dv, n);
  end_as(&r, "hash", "insert", "linear_probing", "u64", "u64", 16.0 / 32 + 1);
  begin("hash", "find_hit", "u64");
  bench_lp_find(dt, slots, dk, dout, dfound, n);
  end_as(&r, "hash", "find_hit", "linear_probing", "u64", "u64", 17.0 / 32 + 8.0 / 32 + 1);
  begin("hash", "find_miss50", "u64");
  bench_lp_find(dt, slots, dq, dout, dfound, n);
  end_as(&r, "hash", "find_miss50", "linear_probing", "u64", "u64", 17.0 / 32 + 8.0 / 32 + 1);
  cudaFree(dk);
  cudaFree(dv);
  cudaFree(dq);
  cudaFree(dout);
  cudaFree(dfound);
  cudaFree(dt);
  free(h);
}

/* ---- B+ tree (u64 -> u64) ---------------------------------------------------- */
/* Stored keys h[0..n): the even numbers below 2n, shuffled; values
 * h[n..2n); queries h[2n..3n): the stored keys shuffled again (hits; with
 * the low bit set on every other one, half misses; ranges [k, k + 2]). */
static void btree_inputs(uint64_t *h, size_t n) {
  for (size_t i = 0; i < n; i++) h[i] = 2 * i, h[n + i] = mix(i), h[2 * n + i] = 2 * i;
  for (size_t i = n; i > 1; i--) {
    size_t j = mix(i) % i, l = mix(i + n) % i;
    uint64_t x = h[i - 1];
    h[i - 1] = h[j], h[j] = x;
    x = h[2 * n + i - 1], h[2 * n + i - 1] = h[2 * n + l], h[2 * n + l] = x;
  }
}

static void btrees(tdm_ctx *ctx) {
  size_t n = n_keys;
  uint64_t *h = malloc(n * 8 * 4), total = 0;
  void *dk = dev(n * 8), *dv = dev(n * 8), *dq = dev(n * 8), *dhi = dev(n * 8), *dout = dev(n * 8),
       *dfound = dev(n), *doff = dev((n + 1) * 8), *rk, *rv;
  tdm_btree_opts o;
  tdm_btree *t;
  row r;
  memset(&o, 0, sizeof o);
  o.key_type = TDM_U64;
  o.value_type = TDM_U64;
  o.on_duplicate = TDM_DUP_KEEP_LAST;
  btree_inputs(h, n);
  up(dk, h, n * 8);
  up(dv, h + n, n * 8);
  begin("btree", "build", "u64");
  CHECK(tdm_btree_build(ctx, &o, dk, dv, n, &t));
  /* input 16 B; leaves written full: 16 B per key (the inner levels are a
   * sixteenth of that and left out) */
  end(&r, "btree", "build", "u64", "u64", 16.0 / 32 + 16.0 / 32);
  up(dq, h + 2 * n, n * 8);
  begin("btree", "find_hit", "u64");
  CHECK(tdm_btree_find(t, dq, dout, (uint8_t *)dfound, n));
  end(&r, "btree", "find_hit", "u64", "u64", 17.0 / 32 + 8.0 / 32 + 1);
  for (size_t i = 0; i < n; i++) h[3 * n + i] = h[2 * n + i] | (i & 1);
  up(dq, h + 3 * n, n * 8);
  begin("btree", "find_miss50", "u64");
  CHECK(tdm_btree_find(t, dq, dout, (uint8_t *)dfound, n));
  end(&r, "btree", "find_miss50", "u64", "u64", 17.0 / 32 + 8.0 / 32 + 1);
  up(dq, h + 2 * n, n * 8);
  begin("btree", "rank", "u64");
  CHECK(tdm_btree_rank(t, dq, dout, n));
  end(&r, "btree", "rank", "u64", "u64", 16.0 / 32 + 1);
  for (size_t i = 0; i < n; i++) h[3 * n + i] = h[2 * n + i] + 2;
  up(dhi, h + 3 * n, n * 8);
  begin("btree", "range_count", "u64");
  CHECK(tdm_btree_range_count(t, dq, dhi, dout, n));
  /* lo and hi 16 B, a sector at each end, the count 8 B */
  end(&r, "btree", "range_count", "u64", "u64", 24.0 / 32 + 2);
  for (size_t i = 0; i < n; i++) total += h[2 * n + i] + 2 < 2 * n ? 2 : 1;
  rk = dev(total * 8);
  rv = dev(total * 8);
  begin("btree", "range", "u64");
  CHECK(tdm_btree_range(t, dq, dhi, n, doff, rk, rv, total));
  /* lo and hi 16 B, a sector of leaf, the offset 8 B, each hit's key and value */
  end(&r, "btree", "range", "u64", "u64", 24.0 / 32 + 1 + (double)total * 16 / 32 / (double)n);
  tdm_btree_destroy(t);
  cudaFree(rk);
  cudaFree(rv);
  cudaFree(dk);
  cudaFree(dv);
  cudaFree(dq);
  cudaFree(dhi);
  cudaFree(dout);
  cudaFree(dfound);
  cudaFree(doff);
  free(h);
}

/* The benchmark's binary search over the keys sorted by raw CUB (its
 * "build": a pair sort), same inputs and ideals as the tree's rows. */
static void peer_btrees(void) {
  size_t n = n_keys, tb = bench_cub_temp_bytes(n, 8, 1);
  uint64_t *h = malloc(n * 8 * 4);
  void *dk = dev(n * 8), *dka = dev(n * 8), *dv = dev(n * 8), *dva = dev(n * 8), *dt = dev(tb), *dq = dev(n * 8),
       *dhi = dev(n * 8), *dout = dev(n * 8), *dfound = dev(n);
  const uint64_t *sk, *sv;
  row r;
  btree_inputs(h, n);
  up(dk, h, n * 8);
  up(dv, h + n, n * 8);
  begin("btree", "build", "u64");
  int alt = bench_cub_sort(dt, tb, dk, dka, dv, dva, n, 8);
  end_as(&r, "btree", "build", "binary_search", "u64", "u64", 16.0 / 32 + 16.0 / 32);
  sk = alt ? dka : dk;
  sv = alt ? dva : dv;
  up(dq, h + 2 * n, n * 8);
  begin("btree", "find_hit", "u64");
  bench_gpu_binsearch(sk, sv, n, dq, dout, dfound, n);
  end_as(&r, "btree", "find_hit", "binary_search", "u64", "u64", 17.0 / 32 + 8.0 / 32 + 1);
  for (size_t i = 0; i < n; i++) h[3 * n + i] = h[2 * n + i] | (i & 1);
  up(dhi, h + 3 * n, n * 8);
  begin("btree", "find_miss50", "u64");
  bench_gpu_binsearch(sk, sv, n, dhi, dout, dfound, n);
  end_as(&r, "btree", "find_miss50", "binary_search", "u64", "u64", 17.0 / 32 + 8.0 / 32 + 1);
  begin("btree", "rank", "u64");
  bench_gpu_binsearch_rank(sk, n, dq, dout, n);
  end_as(&r, "btree", "rank", "binary_search", "u64", "u64", 16.0 / 32 + 1);
  for (size_t i = 0; i < n; i++) h[3 * n + i] = h[2 * n + i] + 2;
  up(dhi, h + 3 * n, n * 8);
  begin("btree", "range_count", "u64");
  bench_gpu_binsearch_range_count(sk, n, dq, dhi, dout, n);
  end_as(&r, "btree", "range_count", "binary_search", "u64", "u64", 24.0 / 32 + 2);
  cudaFree(dk);
  cudaFree(dka);
  cudaFree(dv);
  cudaFree(dva);
  cudaFree(dt);
  cudaFree(dq);
  cudaFree(dhi);
  cudaFree(dout);
  cudaFree(dfound);
  free(h);
}

/* ---- data operations (u64 keys) -------------------------------------------- */
/* The data operations' method hook (src/backend.h; the library is linked
 * statically): 3 forces the dense method, 0 is the library's rule. */
extern int tdm__ops_force_method;
static void ops(tdm_ctx *ctx) {
  size_t n = n_keys, groups = n / 16, got = 0;
  double g = (double)groups / (double)n; /* groups per row */
  uint64_t *h = malloc(n * 8 * 3);
  void *dk = dev(n * 8), *dv = dev(n * 8), *dr = dev(n * 8), *o1 = dev(2 * n * 8), *o2 = dev(2 * n * 8),
       *o3 = dev(n * 8);
  row r;
  /* keys: n / 16 distinct, in random order; values: random; the other side
   * (isin's set): n distinct keys, half of them present */
  for (size_t i = 0; i < n; i++) {
    h[i] = mix(mix(i) % groups);
    h[n + i] = mix(i + n);
    h[2 * n + i] = i % 2 ? mix(i) | 1 : mix(i / 2 % groups);
  }
  up(dk, h, n * 8);
  up(dv, h + n, n * 8);
  up(dr, h + 2 * n, n * 8);
  begin("ops", "unique", "u64");
  CHECK(tdm_unique(ctx, TDM_U64, dk, n, 0, o1, NULL, NULL, NULL, &got));
  /* keys 8 B; the distinct keys, 8 B a group */
  end(&r, "ops", "unique", "u64", "u64", 8.0 / 32 + g * 8 / 32);
  begin("ops", "unique_counts_inverse", "u64");
  CHECK(tdm_unique(ctx, TDM_U64, dk, n, 0, o1, NULL, o2, o3, &got));
  /* keys 8 B, the inverse 8 B a row; the distinct keys and counts, 16 B a group */
  end(&r, "ops", "unique_counts_inverse", "u64", "u64", 16.0 / 32 + g * 16 / 32);
  begin("ops", "isin", "u64");
  CHECK(tdm_isin(ctx, TDM_U64, dr, n, dk, n, 0, (uint8_t *)o1));
  /* queries 8 B, the set (n keys) 8 B a key, found 1 B */
  end(&r, "ops", "isin", "u64", "u64", 17.0 / 32);
  begin("ops", "group_sum", "u64");
  CHECK(tdm_group_reduce(ctx, TDM_U64, dk, TDM_U64, dv, n, TDM_AGG_SUM, 0, o1, o2, &got));
  /* keys and values 16 B; a key and a sum per group */
  end(&r, "ops", "group_sum", "u64", "u64", 16.0 / 32 + g * 16 / 32);
  /* join: left = the keys (n / 16 distinct), right = n / 16 of them once
   * each plus keys never present: every left row matches exactly once */
  for (size_t i = 0; i < n; i++) h[2 * n + i] = i < groups ? mix(i) : mix(i + 3 * n) | 1;
  up(dr, h + 2 * n, n * 8);
  begin("ops", "join_inner", "u64");
  CHECK(tdm_join(ctx, TDM_JOIN_INNER, TDM_U64, dk, n, dr, n, 0, (uint64_t *)o1, (uint64_t *)o2, n, &got));
  /* both sides 8 B a key, a pair of 8-byte indices per left row */
  end(&r, "ops", "join_inner", "u64", "u64", (8.0 + 8.0 + 16.0) / 32);
  if (got != n) fprintf(stderr, "tandem-cost: join gave %zu rows, not %zu\n", got, n), exit(2);
  /* join with duplicate keys on both sides: the right side holds each of
   * the n / 16 keys twice, so every left row matches twice (2n rows) */
  for (size_t i = 0; i < n; i++) h[2 * n + i] = i < 2 * groups ? mix(i % groups) : mix(i + 3 * n) | 1;
  up(dr, h + 2 * n, n * 8);
  begin("ops", "join_dup", "u64");
  CHECK(tdm_join(ctx, TDM_JOIN_INNER, TDM_U64, dk, n, dr, n, 0, (uint64_t *)o1, (uint64_t *)o2, 2 * n, &got));
  /* both sides 8 B a key, two pairs of 8-byte indices per left row */
  end(&r, "ops", "join_dup", "u64", "u64", (8.0 + 8.0 + 32.0) / 32);
  if (got != 2 * n) fprintf(stderr, "tandem-cost: join gave %zu rows, not %zu\n", got, 2 * n), exit(2);
  /* The dense method (src/ops_api.c): keys n / 16 distinct values in
   * [0, n / 16), in random order; isin's set n / 16 keys in [0, n / 8),
   * so about half of the queries are members. Forced, as the CUDA rule
   * takes it only then. */
  for (size_t i = 0; i < n; i++) {
    h[i] = mix(i) % groups;
    h[2 * n + i] = mix(i + 5 * n) % (2 * groups);
  }
  up(dk, h, n * 8);
  up(dr, h + 2 * n, n * 8);
  tdm__ops_force_method = 3;
  begin("ops", "unique_dense", "u64");
  CHECK(tdm_unique(ctx, TDM_U64, dk, n, 0, o1, NULL, o2, NULL, &got));
  /* keys 8 B; the distinct keys and counts, 16 B a group */
  end(&r, "ops", "unique_dense", "u64", "u64", 8.0 / 32 + g * 16 / 32);
  begin("ops", "isin_dense", "u64");
  CHECK(tdm_isin(ctx, TDM_U64, dk, n, dr, groups, 0, (uint8_t *)o1));
  /* queries 8 B, found 1 B; the set (n / 16 keys) 8 B a key */
  end(&r, "ops", "isin_dense", "u64", "u64", 9.0 / 32 + g * 8 / 32);
  tdm__ops_force_method = 0;
  /* factorize (pandas.factorize, sort=False): the distinct keys in the
   * order of their first rows and each row's code. Last among these rows
   * (with the first keys again), as the group sum in that order after it,
   * so that adding them moved no row above. */
  for (size_t i = 0; i < n; i++) h[i] = mix(mix(i) % groups);
  up(dk, h, n * 8);
  begin("ops", "factorize", "u64");
  CHECK(tdm_unique(ctx, TDM_U64, dk, n, TDM_ORDER_FIRST_SEEN, o1, NULL, NULL, o3, &got));
  /* keys 8 B, the code 8 B a row; the distinct keys, 8 B a group */
  end(&r, "ops", "factorize", "u64", "u64", 16.0 / 32 + g * 8 / 32);
  /* groupby(sort=False).sum(): the groups in first-seen order */
  begin("ops", "group_sum_first_seen", "u64");
  CHECK(tdm_group_reduce(ctx, TDM_U64, dk, TDM_U64, dv, n, TDM_AGG_SUM, TDM_ORDER_FIRST_SEEN, o1, o2, &got));
  /* keys and values 16 B; a key and a sum per group */
  end(&r, "ops", "group_sum_first_seen", "u64", "u64", 16.0 / 32 + g * 16 / 32);
  cudaFree(dk);
  cudaFree(dv);
  cudaFree(dr);
  cudaFree(o1);
  cudaFree(o2);
  cudaFree(o3);
  free(h);
}

/* ---- hot keys: one key on 90 % of the rows (hot90) ----------------------------- */
static void hot(tdm_ctx *ctx) {
  size_t n = n_keys, got = 0;
  uint64_t *h = malloc(n * 24);
  void *dk = dev(n * 8), *dv = dev(n * 8), *dr = dev(n * 8), *o1 = dev(n * 8), *o2 = dev(n * 8);
  double d = (double)hot90(h, n) / (double)n; /* distinct keys per row */
  tdm_hash_opts o;
  tdm_hash *t;
  row r;
  up(dk, h, n * 8);
  up(dv, h + n, n * 8);
  memset(&o, 0, sizeof o);
  o.key_type = TDM_U64;
  o.value_type = TDM_U64;
  o.capacity = n;
  o.on_duplicate = TDM_DUP_SUM;
  CHECK(tdm_hash_create(ctx, &o, &t));
  begin("hash", "insert_sum_hot90", "u64");
  CHECK(tdm_hash_insert(t, dk, dv, n));
  /* input 16 B; one slot sector per distinct key */
  end(&r, "hash", "insert_sum_hot90", "u64", "u64", 16.0 / 32 + d);
  tdm_hash_destroy(t);
  begin("ops", "group_sum_hot90", "u64");
  CHECK(tdm_group_reduce(ctx, TDM_U64, dk, TDM_U64, dv, n, TDM_AGG_SUM, 0, o1, o2, &got));
  /* keys and values 16 B; a key and a sum per group */
  end(&r, "ops", "group_sum_hot90", "u64", "u64", 16.0 / 32 + d * 16 / 32);
  /* join: the right side holds every left key once (the hot one too) and
   * as many absent keys: every left row matches once */
  for (size_t i = 0, j = 0; i < n; i++) {
    if (!is_hot(i)) h[2 * n + j++] = h[i];
    if (i + 1 == n) {
      h[2 * n + j++] = hot_key;
      while (j < n) h[2 * n + j] = mix(j + 7 * n) >> 1, j++; /* top bit clear: never a left key */
    }
  }
  up(dr, h + 2 * n, n * 8);
  begin("ops", "join_hot90", "u64");
  CHECK(tdm_join(ctx, TDM_JOIN_INNER, TDM_U64, dk, n, dr, n, 0, (uint64_t *)o1, (uint64_t *)o2, n, &got));
  end(&r, "ops", "join_hot90", "u64", "u64", (8.0 + 8.0 + 16.0) / 32);
  if (got != n) fprintf(stderr, "tandem-cost: join gave %zu rows, not %zu\n", got, n), exit(2);
  {
    tdm_btree_opts bo;
    tdm_btree *bt;
    memset(&bo, 0, sizeof bo);
    bo.key_type = TDM_U64;
    bo.value_type = TDM_U64;
    bo.on_duplicate = TDM_DUP_KEEP_LAST;
    begin("btree", "build_hot90", "u64");
    CHECK(tdm_btree_build(ctx, &bo, dk, dv, n, &bt));
    /* input 16 B; leaves written full for the distinct keys: 16 B each */
    end(&r, "btree", "build_hot90", "u64", "u64", 16.0 / 32 + d * 16 / 32);
    tdm_btree_destroy(bt);
  }
  cudaFree(dk);
  cudaFree(dv);
  cudaFree(dr);
  cudaFree(o1);
  cudaFree(o2);
  free(h);
}

int main(int argc, char **argv) {
  const char *csv_path = NULL, *only = NULL;
  int append = 0;
  tdm_ctx_opts co;
  tdm_ctx *ctx;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--n") && i + 1 < argc) n_keys = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv_path = argv[++i];
    else if (!strcmp(argv[i], "--append")) append = 1;
    else if (!strcmp(argv[i], "--budgets") && i + 1 < argc) budgets_path = argv[++i];
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--peers")) peers = 1;
#if TDM_COST_PROFILE
    else if (!strcmp(argv[i], "--profile") && i + 1 < argc) profile_row = argv[++i];
#endif
    else {
      fprintf(stderr, "usage: tandem-cost [--n N] [--csv FILE [--append]] [--budgets FILE] [--peers] [--only sort|hash|btree|ops|hot]%s\n",
              TDM_COST_PROFILE ? " [--profile STRUCTURE/OPERATION/KEY]" : "");
      return 2;
    }
  }
  if (!TDM_EMU_METERED && !TDM_COST_PROFILE) {
    fprintf(stderr, "tandem-cost: this emulated build does not meter the library (configure it with -DEMU_METER=ON)\n");
    return 2;
  }
  if (peers) design = "peers";
  if (csv_path) {
    csv = fopen(csv_path, append ? "a" : "w");
    if (!csv) {
      fprintf(stderr, "tandem-cost: cannot write %s\n", csv_path);
      return 2;
    }
    if (!append)
      fprintf(csv, "structure,operation,design,key_type,value_type,n,sectors_per_key,ideal_sectors_per_key,"
                   "atomics_per_key,max_same_address_atomics,launches,host_syncs,h2d_bytes,d2h_bytes,ptr_queries\n");
  }
  if (peers) {
    if (!only || !strcmp(only, "sort")) peer_sorts();
    if (!only || !strcmp(only, "hash")) peer_hashes();
    if (!only || !strcmp(only, "btree")) peer_btrees();
  } else {
    memset(&co, 0, sizeof co);
    co.backend = TDM_BACKEND_CUDA;
    co.flags = TDM_CTX_STREAM_ORDERED;
    CHECK(tdm_ctx_create(&co, &ctx));
    if (!only || !strcmp(only, "sort")) sorts(ctx);
    if (!only || !strcmp(only, "hash")) hashes(ctx);
    if (!only || !strcmp(only, "btree")) btrees(ctx);
    if (!only || !strcmp(only, "ops")) ops(ctx);
    if (!only || !strcmp(only, "hot")) hot(ctx);
    tdm_ctx_destroy(ctx);
  }
  if (csv) fclose(csv);
#if TDM_COST_PROFILE
  (void)rows_done, (void)budgets_path; /* the metered build's: no table, no budgets here */
  if (profile_row && !profiled) {
    fprintf(stderr, "tandem-cost: no row %s (STRUCTURE/OPERATION/KEY, as the table names them)\n", profile_row);
    return 2;
  }
#endif
  if (over_budget) printf("tandem-cost: %d figure(s) over budget (design %s)\n", over_budget, design);
  return over_budget ? 1 : 0;
}
