/* tandem-mpi-bench: throughput of the distributed structures under mpirun.
 *
 *   mpirun -n R tandem-mpi-bench [--n N] [--reps K] [--type u32|u64|i32|i64]
 *                                [--threads T] [--csv FILE]
 *
 * N keys per rank (default 1e6), uniformly random from a fixed seed. Measures
 * sort, hash insert and find (all hits), B-tree build and find (all hits).
 * Each timed run starts after a barrier and ends when the slowest rank is
 * done; the rate is keys (or queries) per second per rank. Also reports the
 * bytes each call sends between ranks per key (tdm_mpi_bytes_sent summed
 * over ranks), which does not depend on the machine.
 *
 * The CSV has the contract's header, with the rank count in `threads`, n the
 * keys per rank and queries the queries per rank; bytes per key go to the
 * printed table and to FILE.volume.csv. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tandem/mpi.h>

static int rank_, size_;

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static void fill(tdm_type t, void *a, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++) {
    uint64_t v = mix(seed + i);
    if (tdm_type_size(t) == 4) {
      uint32_t w = (uint32_t)v;
      memcpy((char *)a + 4 * i, &w, 4);
    } else {
      memcpy((char *)a + 8 * i, &v, 8);
    }
  }
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void die(const char *what, tdm_status s) {
  if (rank_ == 0) fprintf(stderr, "tandem-mpi-bench: %s: %s: %s\n", what, tdm_status_name(s), tdm_last_error());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

typedef struct result {
  double med, min, max, bytes_per_key;
} result;

/* Times fn over reps runs (after one warm-up); rate per rank from the slowest
 * rank's time. */
typedef tdm_status (*bench_fn)(void *env);
static result measure(bench_fn fn, void *env, void (*reset)(void *), size_t per_rank, int reps) {
  double *t = malloc(sizeof(double) * (size_t)reps);
  uint64_t b0 = 0, b1 = 0;
  if (!t) die("allocating timings", TDM_ERR_OUT_OF_MEMORY);
  for (int r = -1; r < reps; r++) {
    if (reset) reset(env);
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t before = tdm_mpi_bytes_sent();
    double s = MPI_Wtime();
    tdm_status st = fn(env);
    double e = MPI_Wtime() - s;
    if (st != TDM_OK) die("benchmark call", st);
    MPI_Allreduce(MPI_IN_PLACE, &e, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (r >= 0) t[r] = e;
    if (r == 0) {
      b0 = before;
      b1 = tdm_mpi_bytes_sent();
    }
  }
  uint64_t sent = b1 - b0;
  MPI_Allreduce(MPI_IN_PLACE, &sent, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  qsort(t, (size_t)reps, sizeof(double), cmp_d);
  result res;
  res.med = per_rank / t[reps / 2] / 1e6;
  res.min = per_rank / t[reps - 1] / 1e6;
  res.max = per_rank / t[0] / 1e6;
  res.bytes_per_key = (double)sent / ((double)per_rank * size_);
  free(t);
  return res;
}

typedef struct env {
  tdm_ctx *ctx;
  tdm_type kt;
  size_t n;
  void *keys, *work, *vals, *out;
  uint8_t *found;
  tdm_mpi_hash *h;
  tdm_mpi_btree *t;
} env;

static void reset_sort(void *p) {
  env *e = p;
  memcpy(e->work, e->keys, e->n * tdm_type_size(e->kt));
}
static tdm_status run_sort(void *p) {
  env *e = p;
  return tdm_mpi_sort(e->ctx, MPI_COMM_WORLD, e->kt, e->work, e->n, 0);
}
static void reset_hash(void *p) {
  env *e = p;
  tdm_mpi_hash_destroy(e->h);
  e->h = NULL;
  tdm_hash_opts o = {e->kt, TDM_U64, e->n * (size_t)size_, 0, 0, TDM_DUP_KEEP_LAST};
  tdm_status s = tdm_mpi_hash_create(e->ctx, MPI_COMM_WORLD, &o, &e->h);
  if (s != TDM_OK) die("hash create", s);
}
static tdm_status run_hash_insert(void *p) {
  env *e = p;
  return tdm_mpi_hash_insert(e->h, e->keys, e->vals, e->n);
}
static tdm_status run_hash_find(void *p) {
  env *e = p;
  return tdm_mpi_hash_find(e->h, e->keys, e->out, e->found, e->n);
}
static void reset_btree(void *p) {
  env *e = p;
  tdm_mpi_btree_destroy(e->t);
  e->t = NULL;
}
static tdm_status run_btree_build(void *p) {
  env *e = p;
  tdm_btree_opts o = {e->kt, TDM_U64, TDM_DUP_KEEP_LAST};
  return tdm_mpi_btree_build(e->ctx, MPI_COMM_WORLD, &o, e->keys, e->vals, e->n, &e->t);
}
static tdm_status run_btree_find(void *p) {
  env *e = p;
  return tdm_mpi_btree_find(e->t, e->keys, e->out, e->found, e->n);
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  size_t n = 1000000;
  int reps = 5, threads = 1;
  tdm_type kt = TDM_U64;
  const char *csv = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--n") && v) n = (size_t)strtod(argv[++i], NULL);
    else if (!strcmp(a, "--reps") && v) reps = atoi(argv[++i]);
    else if (!strcmp(a, "--threads") && v) threads = atoi(argv[++i]);
    else if (!strcmp(a, "--csv") && v) csv = argv[++i];
    else if (!strcmp(a, "--type") && v) {
      ++i;
      kt = !strcmp(v, "u32") ? TDM_U32 : !strcmp(v, "i32") ? TDM_I32 : !strcmp(v, "i64") ? TDM_I64
         : !strcmp(v, "u64") ? TDM_U64 : (tdm_type)0;
      if (!kt) {
        if (rank_ == 0) fprintf(stderr, "tandem-mpi-bench: --type must be u32, u64, i32 or i64\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
    } else {
      if (rank_ == 0)
        fprintf(stderr, "usage: mpirun -n R tandem-mpi-bench [--n N] [--reps K] [--type T] [--threads T] "
                        "[--csv FILE]\n(unknown or incomplete argument '%s')\n", a);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (reps < 1 || threads < 0) {
    if (rank_ == 0) fprintf(stderr, "tandem-mpi-bench: --reps must be >= 1 and --threads >= 0\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  env e;
  memset(&e, 0, sizeof e);
  e.kt = kt;
  e.n = n;
  tdm_ctx_opts co = {TDM_BACKEND_CPU, threads, 0, NULL, 0, NULL};
  tdm_status s = tdm_ctx_create(&co, &e.ctx);
  if (s != TDM_OK) die("context", s);
  size_t ksz = tdm_type_size(kt);
  e.keys = malloc(n * ksz);
  e.work = malloc(n * ksz);
  e.vals = malloc(n * 8);
  e.out = malloc(n * 8);
  e.found = malloc(n);
  if (!e.keys || !e.work || !e.vals || !e.out || !e.found) die("allocating inputs", TDM_ERR_OUT_OF_MEMORY);
  fill(kt, e.keys, n, 12345 + (uint64_t)rank_ * n);
  fill(TDM_U64, e.vals, n, 999);

  struct {
    const char *structure, *op, *vt;
    bench_fn fn;
    void (*reset)(void *);
  } rows[] = {
      {"sort", "sort", "", run_sort, reset_sort},
      {"hash", "insert", "u64", run_hash_insert, reset_hash},
      {"hash", "find_hit", "u64", run_hash_find, NULL},
      {"btree", "build", "u64", run_btree_build, reset_btree},
      {"btree", "find_hit", "u64", run_btree_find, NULL},
  };
  FILE *f = NULL, *fv = NULL;
  if (rank_ == 0 && csv) {
    char vol[1024];
    snprintf(vol, sizeof vol, "%s.volume.csv", csv);
    f = fopen(csv, "w");
    fv = fopen(vol, "w");
    if (!f || !fv) {
      fprintf(stderr, "tandem-mpi-bench: cannot write %s\n", !f ? csv : vol);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    fprintf(f, "structure,operation,impl,backend,key_type,value_type,n,queries,threads,reps,median_mops,min_mops,"
               "max_mops\n");
    fprintf(fv, "structure,operation,ranks,key_type,n_per_rank,bytes_sent_per_key\n");
  }
  if (rank_ == 0)
    printf("%d ranks, %zu %s keys per rank, %d threads per rank, %d reps (cuda-aware MPI: %s)\n"
           "%-6s %-9s %14s %14s %14s %12s\n",
           size_, n, tdm_type_name(kt), threads, reps, tdm_mpi_cuda_aware() ? "yes" : "no", "struct", "op",
           "Mkeys/s/rank", "min", "max", "bytes/key");
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    if (rows[i].fn == run_hash_find && !e.h) reset_hash(&e), run_hash_insert(&e);
    if (rows[i].fn == run_btree_find && !e.t) run_btree_build(&e);
    result r = measure(rows[i].fn, &e, rows[i].reset, n, reps);
    /* The last build leaves its tree for the find row. */
    if (rows[i].fn == run_btree_build && !e.t) run_btree_build(&e);
    if (rank_ == 0) {
      printf("%-6s %-9s %14.2f %14.2f %14.2f %12.2f\n", rows[i].structure, rows[i].op, r.med, r.min, r.max,
             r.bytes_per_key);
      int q = strstr(rows[i].op, "find") != NULL;
      if (f)
        fprintf(f, "%s,%s,tandem,cpu,%s,%s,%zu,%zu,%d,%d,%.3f,%.3f,%.3f\n", rows[i].structure, rows[i].op,
                tdm_type_name(kt), rows[i].vt, n, q ? n : 0, size_, reps, r.med, r.min, r.max);
      if (fv)
        fprintf(fv, "%s,%s,%d,%s,%zu,%.3f\n", rows[i].structure, rows[i].op, size_, tdm_type_name(kt), n,
                r.bytes_per_key);
    }
  }
  if (f) fclose(f);
  if (fv) fclose(fv);
  tdm_mpi_hash_destroy(e.h);
  tdm_mpi_btree_destroy(e.t);
  tdm_ctx_destroy(e.ctx);
  free(e.keys), free(e.work), free(e.vals), free(e.out), free(e.found);
  MPI_Finalize();
  return 0;
}
