/* bench.c: --bench, the candidate's throughput against tandem's on the same
 * keys, as CSV rows in tandem-bench's format.
 *
 * The candidate runs in a child process (so a crash or an endless loop is
 * reported, not fatal) one call per element, as its ABI is; tandem runs its
 * bulk calls in this process on one thread and on all cores, and on CUDA
 * when a device is usable. The candidate is measured first: after tandem has
 * started its OpenMP threads, a forked child could not use OpenMP itself.
 * Every row is the median, min and max over reps timed runs after a warm-up.
 *
 * Operations: sort: sort (u32 and u64 keys), sort_pairs (u64 + u64, when the
 * candidate has it). map (tandem's hash table): insert, find_hit,
 * find_miss50, erase. ordered (tandem's B+ tree): build (the candidate
 * inserts one key at a time into an empty map; tandem bulk-builds), find_hit,
 * find_miss50, and rank and range_count on min(n, 1000) queries when the
 * candidate has them.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tandem/tandem.h>

#include "jdg.h"

#define REPS 5
#define RANK_QUERIES 1000

enum { B_SORT32, B_SORT64, B_PAIRS, B_INSERT, B_FIND_HIT, B_FIND_MISS, B_ERASE, B_RANK, B_RANGE, B_COUNT };
static const char *op_names[B_COUNT] = {"sort", "sort", "sort_pairs", "insert", "find_hit",
                                        "find_miss50", "erase", "rank", "range_count"};

typedef struct inputs {
  const jdg_cand *c;
  size_t n, q;         /* elements, rank/range queries */
  uint64_t *keys;      /* n distinct keys */
  uint64_t *miss;      /* n queries, half of them stored keys */
  uint64_t *lo, *hi;   /* q range queries */
  int ops[B_COUNT];    /* which operations this kind measures */
} inputs;

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The unsorted input of a sort operation, fresh for every run: the keys in
 * b32 or buf, and values 0..n-1 for sort_pairs. Other operations read the
 * inputs directly. */
static void sort_input(const inputs *in, int op, uint32_t *b32, uint64_t *buf, uint64_t *vals) {
  size_t i;
  if (op == B_SORT32)
    for (i = 0; i < in->n; i++) b32[i] = (uint32_t)in->keys[i];
  if (op == B_SORT64 || op == B_PAIRS) memcpy(buf, in->keys, in->n * sizeof *buf);
  if (op == B_PAIRS)
    for (i = 0; i < in->n; i++) vals[i] = i;
}

/* Seconds of every (op, rep), in op order; rep -1 is the warm-up. */
static void bench_child(void *arg, int fd) {
  const inputs *in = arg;
  const jdg_cand *c = in->c;
  size_t n = in->n, i;
  int rep, op;
  uint64_t *buf = malloc((n ? n : 1) * sizeof *buf), sink = 0, v;
  uint32_t *b32 = malloc((n ? n : 1) * sizeof *b32);
  uint64_t *vals = malloc((n ? n : 1) * sizeof *vals);
  if (!buf || !b32 || !vals) _exit(70);
  for (rep = -1; rep < REPS; rep++) {
    double t[B_COUNT] = {0};
    void *m = NULL;
    for (op = 0; op < B_COUNT; op++) {
      double t0;
      if (!in->ops[op]) continue;
      sort_input(in, op, b32, buf, vals);
      t0 = jdg_now();
      switch (op) {
      case B_SORT32: c->sort_u32(b32, n); break;
      case B_SORT64: c->sort_u64(buf, n); break;
      case B_PAIRS: c->sort_pairs_u64(buf, vals, n); break;
      case B_INSERT:
        m = c->create();
        if (!m) _exit(71);
        for (i = 0; i < n; i++) sink += (uint64_t)c->insert(m, in->keys[i], i);
        break;
      case B_FIND_HIT:
        for (i = 0; i < n; i++) sink += (uint64_t)c->find(m, in->keys[i], &v);
        break;
      case B_FIND_MISS:
        for (i = 0; i < n; i++) sink += (uint64_t)c->find(m, in->miss[i], &v);
        break;
      case B_RANK:
        for (i = 0; i < in->q; i++) sink += c->rank(m, in->lo[i]);
        break;
      case B_RANGE:
        for (i = 0; i < in->q; i++) sink += c->range_count(m, in->lo[i], in->hi[i]);
        break;
      case B_ERASE:
        for (i = 0; i < n; i++) sink += (uint64_t)c->erase(m, in->keys[i]);
        break;
      }
      t[op] = jdg_now() - t0;
    }
    if (m) c->destroy(m);
    if (rep >= 0 && jdg_write_all(fd, t, sizeof t) != 0) _exit(0);
  }
  /* The sink keeps the calls from being optimised away. */
  if (sink == 42) _exit(0);
}

typedef struct stats {
  double med, min, max;
} stats;

static stats rates(const double *sec, double elements) {
  double r[REPS];
  int i;
  stats s;
  for (i = 0; i < REPS; i++) r[i] = sec[i] > 0 ? elements / sec[i] / 1e6 : 0;
  qsort(r, REPS, sizeof r[0], cmp_dbl);
  s.med = r[REPS / 2];
  s.min = r[0];
  s.max = r[REPS - 1];
  return s;
}

static const char *structure(jdg_kind k) { return k == JDG_SORT ? "sort" : k == JDG_MAP ? "hash" : "btree"; }

static void row(FILE *f, const inputs *in, int op, const char *impl, const char *backend, int threads,
                stats s) {
  jdg_kind k = in->c->kind;
  const char *key = op == B_SORT32 ? "u32" : "u64";
  const char *val = (op == B_SORT32 || op == B_SORT64) ? "" : "u64";
  const char *name = op_names[op];
  size_t queries = 0;
  if (k == JDG_ORDERED && op == B_INSERT) name = "build";
  if (op == B_FIND_HIT || op == B_FIND_MISS) queries = in->n;
  if (op == B_RANK || op == B_RANGE) queries = in->q;
  fprintf(f, "%s,%s,%s,%s,%s,%s,%zu,%zu,%d,%d,%.3f,%.3f,%.3f\n", structure(k), name, impl, backend, key, val, in->n,
          queries, threads, REPS, s.med, s.min, s.max);
}

static double elements_of(const inputs *in, int op) {
  return (double)(op == B_RANK || op == B_RANGE ? in->q : in->n);
}

/* tandem's side: the same operations as bulk calls on ctx. */
static int bench_tandem(FILE *f, const inputs *in, tdm_ctx *ctx, const char *backend, int threads) {
  size_t n = in->n;
  double sec[B_COUNT][REPS];
  uint64_t *buf = malloc((n ? n : 1) * sizeof *buf), *vals = malloc((n ? n : 1) * sizeof *vals);
  uint64_t *cnt = malloc((in->q ? in->q : 1) * sizeof *cnt);
  uint32_t *b32 = malloc((n ? n : 1) * sizeof *b32);
  uint8_t *found = malloc(n ? n : 1);
  int rep, op, ok = 1;
  size_t i, erased;
  memset(sec, 0, sizeof sec);
  if (!buf || !vals || !cnt || !b32 || !found) ok = 0;
  for (i = 0; ok && i < n; i++) vals[i] = i;
  for (rep = -1; ok && rep < REPS; rep++) {
    tdm_hash *h = NULL;
    tdm_btree *t = NULL;
    for (op = 0; ok && op < B_COUNT; op++) {
      double t0;
      tdm_status s = TDM_OK;
      if (!in->ops[op]) continue;
      sort_input(in, op, b32, buf, vals);
      t0 = jdg_now();
      switch (op) {
      case B_SORT32: s = tdm_sort(ctx, TDM_U32, b32, n, 0); break;
      case B_SORT64: s = tdm_sort(ctx, TDM_U64, buf, n, 0); break;
      case B_PAIRS: s = tdm_sort_pairs(ctx, TDM_U64, buf, TDM_U64, vals, n, 0); break;
      case B_INSERT:
        if (in->c->kind == JDG_MAP) {
          tdm_hash_opts o = {TDM_U64, TDM_U64, 0, 0.0, 0, TDM_DUP_KEEP_LAST};
          s = tdm_hash_create(ctx, &o, &h);
          if (s == TDM_OK) s = tdm_hash_insert(h, in->keys, vals, n);
        } else {
          tdm_btree_opts o = {TDM_U64, TDM_U64, TDM_DUP_KEEP_LAST};
          s = tdm_btree_build(ctx, &o, in->keys, vals, n, &t);
        }
        break;
      case B_FIND_HIT:
      case B_FIND_MISS: {
        const uint64_t *q = op == B_FIND_HIT ? in->keys : in->miss;
        s = h ? tdm_hash_find(h, q, buf, found, n) : tdm_btree_find(t, q, buf, found, n);
        break;
      }
      case B_RANK: s = tdm_btree_rank(t, in->lo, cnt, in->q); break;
      case B_RANGE: s = tdm_btree_range_count(t, in->lo, in->hi, cnt, in->q); break;
      case B_ERASE: s = tdm_hash_erase(h, in->keys, n, &erased); break;
      }
      if (rep >= 0) sec[op][rep] = jdg_now() - t0;
      if (s != TDM_OK) {
        fprintf(stderr, "tandem-judge: bench: tandem %s on %s failed: %s: %s\n", op_names[op], backend,
                tdm_status_name(s), tdm_last_error());
        ok = 0;
      }
    }
    tdm_hash_destroy(h);
    tdm_btree_destroy(t);
  }
  for (op = 0; ok && op < B_COUNT; op++)
    if (in->ops[op]) row(f, in, op, "tandem", backend, threads, rates(sec[op], elements_of(in, op)));
  free(buf);
  free(vals);
  free(cnt);
  free(b32);
  free(found);
  return ok ? 0 : 2;
}

int jdg_bench(const jdg_cand *c, FILE *f, size_t n, uint64_t seed, double limit) {
  inputs in;
  jdg_rng r;
  size_t i;
  int rfd, pid, op, rep, rc = 0, ncpu, st;
  double sec[B_COUNT][REPS], t[B_COUNT], deadline;
  size_t got;
  char impl[128];
  const char *base = strrchr(c->path, '/');
  tdm_ctx *ctx;
  tdm_ctx_opts o;

  memset(&in, 0, sizeof in);
  memset(sec, 0, sizeof sec);
  in.c = c;
  in.n = n;
  in.q = n < RANK_QUERIES ? n : RANK_QUERIES;
  if (c->kind == JDG_SORT) {
    in.ops[B_SORT32] = in.ops[B_SORT64] = 1;
    in.ops[B_PAIRS] = c->sort_pairs_u64 != NULL;
  } else {
    in.ops[B_INSERT] = in.ops[B_FIND_HIT] = in.ops[B_FIND_MISS] = 1;
    in.ops[B_ERASE] = c->kind == JDG_MAP;
    in.ops[B_RANK] = c->kind == JDG_ORDERED && c->rank;
    in.ops[B_RANGE] = c->kind == JDG_ORDERED && c->range_count;
  }
  in.keys = malloc((n ? n : 1) * sizeof *in.keys);
  in.miss = malloc((n ? n : 1) * sizeof *in.miss);
  in.lo = malloc((in.q ? in.q : 1) * sizeof *in.lo);
  in.hi = malloc((in.q ? in.q : 1) * sizeof *in.hi);
  if (!in.keys || !in.miss || !in.lo || !in.hi) {
    fprintf(stderr, "tandem-judge: bench: out of memory for %zu keys\n", n);
    rc = 2;
    goto out;
  }
  /* Distinct keys: an odd multiplier is a bijection on 64-bit words. */
  jdg_rng_init(&r, seed, 0xbe9c);
  {
    uint64_t off = jdg_next(&r);
    for (i = 0; i < n; i++) in.keys[i] = (i + off) * 0x9e3779b97f4a7c15ull;
    for (i = 0; i < n; i++) in.miss[i] = jdg_below(&r, 2) ? in.keys[jdg_below(&r, n)] : (n + i + off) * 0x9e3779b97f4a7c15ull;
    for (i = 0; i < in.q; i++) {
      in.lo[i] = jdg_next(&r);
      in.hi[i] = in.lo[i] + (jdg_next(&r) >> 4);
      if (in.hi[i] < in.lo[i]) in.hi[i] = ~0ull;
    }
  }

  /* The candidate, in a child, first. */
  pid = jdg_spawn(bench_child, &in, &rfd);
  if (pid < 0) {
    fprintf(stderr, "tandem-judge: bench: cannot start a child process\n");
    rc = 2;
    goto out;
  }
  deadline = jdg_now() + limit;
  for (rep = 0; rep < REPS; rep++) {
    long k = jdg_read_until(rfd, t, sizeof t, deadline, &got);
    if (k != (long)sizeof t) {
      kill(pid, SIGKILL);
      fprintf(stderr, "tandem-judge: bench: the candidate %s (n = %zu, limit %g s)\n",
              k == -2 ? "did not finish in time" : "crashed", n, limit);
      rc = 3;
      break;
    }
    for (op = 0; op < B_COUNT; op++) sec[op][rep] = t[op];
  }
  close(rfd);
  waitpid(pid, &st, 0);
  if (rc) goto out;

  fprintf(f, "structure,operation,impl,backend,key_type,value_type,n,queries,threads,reps,median_mops,min_mops,max_mops\n");
  snprintf(impl, sizeof impl, "%s", base ? base + 1 : c->path);
  for (i = 0; impl[i]; i++)
    if (impl[i] == ',' || impl[i] == '"') impl[i] = '_';
  for (op = 0; op < B_COUNT; op++)
    if (in.ops[op]) row(f, &in, op, impl, "cpu", 1, rates(sec[op], elements_of(&in, op)));

  /* tandem: one thread, all cores, and CUDA when usable. */
  ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (ncpu < 1) ncpu = 1;
  for (i = 0; i < 2 && rc == 0; i++) {
    int threads = i == 0 ? 1 : ncpu;
    if (i == 1 && ncpu == 1) break;
    memset(&o, 0, sizeof o);
    o.backend = TDM_BACKEND_CPU;
    o.cpu_threads = threads;
    if (tdm_ctx_create(&o, &ctx) != TDM_OK) {
      fprintf(stderr, "tandem-judge: bench: %s\n", tdm_last_error());
      rc = 2;
      break;
    }
    rc = bench_tandem(f, &in, ctx, "cpu", threads);
    tdm_ctx_destroy(ctx);
  }
  if (rc == 0) {
    memset(&o, 0, sizeof o);
    o.backend = TDM_BACKEND_CUDA;
    if (tdm_cuda_device_count() > 0 && tdm_ctx_create(&o, &ctx) == TDM_OK) {
      rc = bench_tandem(f, &in, ctx, "cuda", 0);
      tdm_ctx_destroy(ctx);
    } else {
      fprintf(stderr, "tandem-judge: bench: no CUDA rows (no usable device)\n");
    }
  }
out:
  free(in.keys);
  free(in.miss);
  free(in.lo);
  free(in.hi);
  return rc;
}
