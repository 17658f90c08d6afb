/*
 * fault_sweep.c: all-or-nothing on the CUDA backend, checked by failing every
 * runtime call an operation makes, one at a time (emulated device only).
 *
 * For each public operation (a case below) and each class of runtime call
 * (malloc, copy, memset, launch, event, stream), the operation first runs
 * with nothing failing, which counts its calls of that class and records its
 * result. Then for k = 1..count, from the same starting state, the k-th call
 * of the class fails (tdm_emu_fail_nth, an entry point of the emulated
 * runtime) and the sweep checks:
 *   - the status is not TDM_OK and tdm_last_error() says something (or the
 *     call recovered and its result is the one recorded);
 *   - the caller's inputs and the structure are exactly as before (contents
 *     and size, and the structure validates);
 *   - the same call, made again with nothing failing, succeeds with the
 *     recorded result (the context stays usable, no CUDA error left pending);
 *   - once everything is destroyed, no device memory is left allocated.
 * A sticky pass then turns one kernel of each operation into a device fault
 * (tdm_emu_fault_nth): the call (or the next tdm_ctx_sync) must return
 * TDM_ERR_DEVICE with the CUDA error, and so must every later call on the
 * faulted device, without crashing or hanging.
 *
 * Usage: tandem-fault-sweep [-v] [CASE-SUBSTRING].
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <tandem/tandem.h>

/* The emulated runtime's test entry points (tests/cuda_emu/src/runtime.cc). */
void tdm_emu_fail_nth(const char *cls, long k);
long tdm_emu_calls(const char *cls);
size_t tdm_emu_live_bytes(void);
long tdm_emu_fault_nth(long k);
void tdm_emu_clear_faults(void);

enum { N = 1500, MAXARR = 6 };

static int verbose, failures;

static void failf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "FAIL ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  failures++;
}

/* ---- the state one case works on ------------------------------------------ */

typedef struct arr {
  void *p;       /* host or device */
  size_t bytes;  /* whole allocation */
  int device;
  int input;     /* must survive a failed call */
  size_t elem;   /* output: bytes per element of the reported count (0: whole array) */
} arr;

typedef struct env {
  tdm_ctx *ctx;
  tdm_hash *h;
  tdm_btree *t;
  int dev;             /* arrays in device memory, stream-ordered context */
  cudaStream_t stream; /* the caller's stream (capture), or NULL */
  arr a[MAXARR];
  int na;
  size_t count;        /* a count the operation reports (n_unique, n_out, ...) */
  uint64_t cap;        /* capacity or a second size */
  tdm_type kt, vt;
  unsigned flags;
} env;

typedef struct sweep_case {
  const char *name;
  int dev;                        /* 1: device arrays on a stream-ordered context */
  void (*setup)(env *e);          /* arrays and structure (nothing fails) */
  tdm_status (*op)(env *e);       /* the operation under test */
} sweep_case;

static uint64_t rng_state = 0x5EED;
static uint64_t rnd(void) {
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void cuda_ok(cudaError_t e, const char *what) {
  if (e != cudaSuccess) {
    fprintf(stderr, "fault_sweep: %s: %s\n", what, cudaGetErrorString(e));
    exit(2);
  }
}

/* An array of bytes (host, or device when e->dev), filled from init (NULL:
 * zeros). */
static void *arr_new(env *e, size_t bytes, const void *init, int input, size_t elem) {
  arr *a = &e->a[e->na++];
  a->bytes = bytes;
  a->device = e->dev;
  a->input = input;
  a->elem = elem;
  if (e->dev) {
    cuda_ok(cudaMalloc(&a->p, bytes), "cudaMalloc");
    if (init) cuda_ok(cudaMemcpy(a->p, init, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    else cuda_ok(cudaMemset(a->p, 0, bytes), "cudaMemset");
    cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  } else {
    a->p = malloc(bytes);
    if (init) memcpy(a->p, init, bytes);
    else memset(a->p, 0, bytes);
  }
  return a->p;
}

/* Keys of width ks: n values below range (duplicates when range < n). */
static void *keys_new(env *e, size_t ks, size_t n, uint64_t range, int input) {
  unsigned char *h = malloc(n * ks);
  void *p;
  for (size_t i = 0; i < n; i++) {
    uint64_t v = range ? rnd() % range : rnd();
    if (ks == 4) ((uint32_t *)h)[i] = (uint32_t)v;
    else ((uint64_t *)h)[i] = v;
  }
  p = arr_new(e, n * ks, h, input, 0);
  free(h);
  return p;
}

static tdm_ctx *ctx_new(int stream_ordered, cudaStream_t stream) {
  tdm_ctx_opts o;
  tdm_ctx *c = NULL;
  memset(&o, 0, sizeof o);
  o.backend = TDM_BACKEND_CUDA;
  o.flags = stream_ordered ? TDM_CTX_STREAM_ORDERED : 0;
  o.cuda_stream = stream;
  if (tdm_ctx_create(&o, &c) != TDM_OK) {
    fprintf(stderr, "fault_sweep: tdm_ctx_create: %s\n", tdm_last_error());
    exit(2);
  }
  return c;
}

/* ---- digests ---------------------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

static uint64_t bytes_digest(uint64_t h, const void *p, size_t bytes, int device) {
  unsigned char *b = malloc(bytes ? bytes : 1);
  if (device) cuda_ok(cudaMemcpy(b, p, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy (digest)");
  else memcpy(b, p, bytes);
  for (size_t i = 0; i < bytes; i++) h = mix(h, b[i]);
  free(b);
  return h;
}

/* Order-independent digest of a structure's pairs (exported to the host), its
 * size, and whether it validates. */
static uint64_t pairs_digest(const uint64_t *k, const uint64_t *v, size_t n) {
  uint64_t s = 0;
  for (size_t i = 0; i < n; i++) s += mix(mix(0x51, k[i]), v[i]);
  return mix(s, n);
}

/* Widens n packed elements of width w (4 or 8) in place in a buffer of n
 * 8-byte slots. */
static void widen(uint64_t *p, size_t n, size_t w) {
  if (w == 8) return;
  for (size_t i = n; i-- > 0;) p[i] = ((uint32_t *)p)[i];
}

static uint64_t structure_digest(env *e, const char *what) {
  uint64_t d = 0;
  size_t n = 0;
  if (e->h) {
    size_t cap = tdm_hash_size(e->h) + 1;
    uint64_t *k = calloc(cap, 8), *v = calloc(cap, 8);
    tdm_status st = tdm_hash_export(e->h, k, v, cap, &n);
    if (st != TDM_OK) failf("%s: tdm_hash_export: %s", what, tdm_last_error());
    if (tdm_hash_validate(e->h) != TDM_OK) failf("%s: tdm_hash_validate: %s", what, tdm_last_error());
    widen(k, n, tdm_type_size(e->kt));
    widen(v, n, tdm_type_size(e->vt));
    d = mix(d, pairs_digest(k, v, n));
    free(k);
    free(v);
  }
  if (e->t) {
    size_t cap = tdm_btree_size(e->t) + 1;
    uint64_t *k = calloc(cap, 8), *v = calloc(cap, 8);
    tdm_status st = tdm_btree_export(e->t, k, v, cap, &n);
    if (st != TDM_OK) failf("%s: tdm_btree_export: %s", what, tdm_last_error());
    if (tdm_btree_validate(e->t) != TDM_OK) failf("%s: tdm_btree_validate: %s", what, tdm_last_error());
    widen(k, n, tdm_type_size(e->kt));
    widen(v, n, tdm_type_size(e->vt));
    d = mix(d, pairs_digest(k, v, n));
    free(k);
    free(v);
  }
  return d;
}

/* Inputs and structure (what a failed call must leave alone); with outputs
 * set, the outputs (and the reported count) too. */
static uint64_t digest(env *e, int outputs, const char *what) {
  uint64_t d = 0;
  tdm_status st = tdm_ctx_sync(e->ctx);
  if (st != TDM_OK) failf("%s: tdm_ctx_sync: %s", what, tdm_last_error());
  for (int i = 0; i < e->na; i++) {
    arr *a = &e->a[i];
    if (a->input) d = bytes_digest(d, a->p, a->bytes, a->device);
    else if (outputs) {
      size_t b = a->elem ? e->count * a->elem : a->bytes;
      d = bytes_digest(d, a->p, b < a->bytes ? b : a->bytes, a->device);
    }
  }
  if (outputs) d = mix(mix(d, e->count), e->cap);
  return mix(d, structure_digest(e, what));
}

static void env_free(env *e) {
  tdm_hash_destroy(e->h);
  tdm_btree_destroy(e->t);
  tdm_ctx_destroy(e->ctx);
  for (int i = 0; i < e->na; i++) {
    if (e->a[i].device) cuda_ok(cudaFree(e->a[i].p), "cudaFree");
    else free(e->a[i].p);
  }
  if (e->stream) cuda_ok(cudaStreamDestroy(e->stream), "cudaStreamDestroy");
  memset(e, 0, sizeof *e);
}

/* ---- the cases ----------------------------------------------------------------- */
/* Each setup makes the starting state from the same random stream (reset by
 * the driver before every run), so every run of a case starts alike. */

static tdm_status hash_new(env *e, tdm_type kt, tdm_type vt, size_t cap, tdm_hash **out) {
  tdm_hash_opts o;
  memset(&o, 0, sizeof o);
  o.key_type = kt;
  o.value_type = vt;
  o.capacity = cap;
  o.on_duplicate = TDM_DUP_SUM;
  return tdm_hash_create(e->ctx, &o, out);
}

static tdm_status btree_new(env *e, const void *k, const void *v, size_t n, tdm_btree **out) {
  tdm_btree_opts o;
  memset(&o, 0, sizeof o);
  o.key_type = e->kt;
  o.value_type = e->vt;
  o.on_duplicate = TDM_DUP_KEEP_LAST;
  return tdm_btree_build(e->ctx, &o, k, v, n, out);
}

static void must(tdm_status st, const char *what) {
  if (st != TDM_OK) {
    fprintf(stderr, "fault_sweep: setup: %s: %s\n", what, tdm_last_error());
    exit(2);
  }
}

/* sort: keys (a[0]) of e->kt, values (a[1]) of e->vt when e->vt != 0 */
static void sort_setup(env *e) {
  size_t ks = tdm_type_size(e->kt);
  keys_new(e, ks, N, 0, 1);
  if (e->vt) keys_new(e, tdm_type_size(e->vt), N, 0, 1);
}
static tdm_status sort_op(env *e) {
  if (e->vt) return tdm_sort_pairs(e->ctx, e->kt, e->a[0].p, e->vt, e->a[1].p, N, e->flags);
  return tdm_sort(e->ctx, e->kt, e->a[0].p, N, e->flags);
}
static void argsort_setup(env *e) {
  keys_new(e, tdm_type_size(e->kt), N, 300, 1);
  arr_new(e, N * tdm_type_size(e->vt), NULL, 0, 0);
}
static tdm_status argsort_op(env *e) { return tdm_argsort(e->ctx, e->kt, e->a[0].p, e->vt, e->a[1].p, N, e->flags); }

#define SORT_CASE(fn, kt_, vt_, fl)                 \
  static void fn(env *e) {                           \
    e->kt = kt_;                                     \
    e->vt = vt_;                                     \
    e->flags = fl;                                   \
    sort_setup(e);                                   \
  }
SORT_CASE(sort_u32, TDM_U32, 0, 0)
SORT_CASE(sort_f64_desc, TDM_F64, 0, TDM_SORT_DESCENDING)
SORT_CASE(sort_i32_pairs_u64, TDM_I32, TDM_U64, 0)
SORT_CASE(sort_u64_pairs_u32, TDM_U64, TDM_U32, TDM_SORT_DESCENDING)
SORT_CASE(sort_f32_pairs_f32, TDM_F32, TDM_F32, 0)
SORT_CASE(sort_i64_pairs_i64, TDM_I64, TDM_I64, 0)
static void argsort_f32_u32(env *e) {
  e->kt = TDM_F32;
  e->vt = TDM_U32;
  argsort_setup(e);
}
static void argsort_i64_u64(env *e) {
  e->kt = TDM_I64;
  e->vt = TDM_U64;
  e->flags = TDM_SORT_DESCENDING;
  argsort_setup(e);
}

/* hash: a[0] keys, a[1] values, the table holding N/2 pairs of them */
static void hash_setup_kv(env *e, tdm_type kt, tdm_type vt, size_t cap, int fill) {
  e->kt = kt;
  e->vt = vt;
  keys_new(e, tdm_type_size(kt), N, 2 * N, 1);
  keys_new(e, tdm_type_size(vt), N, 1000, 1);
  if (cap) must(hash_new(e, kt, vt, cap, &e->h), "tdm_hash_create");
  if (fill) {
    /* insert the first half (host copies on a device-array case) */
    size_t ks = tdm_type_size(kt), vs = tdm_type_size(vt);
    void *k = malloc(N * ks), *v = malloc(N * vs);
    if (e->dev) {
      cuda_ok(cudaMemcpy(k, e->a[0].p, N * ks, cudaMemcpyDeviceToHost), "cudaMemcpy");
      cuda_ok(cudaMemcpy(v, e->a[1].p, N * vs, cudaMemcpyDeviceToHost), "cudaMemcpy");
    } else {
      memcpy(k, e->a[0].p, N * ks);
      memcpy(v, e->a[1].p, N * vs);
    }
    must(tdm_hash_insert(e->h, k, v, N / 2), "tdm_hash_insert");
    must(tdm_ctx_sync(e->ctx), "tdm_ctx_sync");
    free(k);
    free(v);
  }
}
static void hash_create_setup(env *e) { e->kt = TDM_U64, e->vt = TDM_U32; }
static tdm_status hash_create_op(env *e) { return hash_new(e, e->kt, e->vt, 5000, &e->h); }
static void hash_insert_u64(env *e) { hash_setup_kv(e, TDM_U64, TDM_U64, 4 * N, 1); }
static void hash_insert_u32(env *e) { hash_setup_kv(e, TDM_U32, TDM_U32, 4 * N, 1); }
static void hash_grow_setup(env *e) { hash_setup_kv(e, TDM_I64, TDM_U32, 64, 0); }
static void hash_grow_fill(env *e) { hash_setup_kv(e, TDM_U32, TDM_U64, 16, 1); }
static tdm_status hash_insert_op(env *e) { return tdm_hash_insert(e->h, e->a[0].p, e->a[1].p, N); }
static void hash_find_setup(env *e) {
  hash_setup_kv(e, TDM_U64, TDM_U64, 4 * N, 1);
  arr_new(e, N * 8, NULL, 0, 0);
  arr_new(e, N, NULL, 0, 0);
}
static tdm_status hash_find_op(env *e) {
  return tdm_hash_find(e->h, e->a[0].p, e->a[2].p, (uint8_t *)e->a[3].p, N);
}
static tdm_status hash_erase_op(env *e) { return tdm_hash_erase(e->h, e->a[0].p, N, &e->count); }
static tdm_status hash_clear_op(env *e) { return tdm_hash_clear(e->h); }
static void hash_export_setup(env *e) {
  hash_setup_kv(e, TDM_U64, TDM_U64, 4 * N, 1);
}
static tdm_status hash_export_op(env *e) {
  uint64_t *k = malloc(N * 8), *v = malloc(N * 8);
  tdm_status st = tdm_hash_export(e->h, k, v, N, &e->count);
  if (st == TDM_OK) e->cap = pairs_digest(k, v, e->count);
  free(k);
  free(v);
  return st;
}
static tdm_status views_op(env *e) {
  tdm_hash_view hv;
  tdm_btree_view bv;
  tdm_status st = tdm_hash_view_get(e->h, &hv);
  if (st == TDM_OK) st = tdm_btree_view_get(e->t, &bv);
  return st;
}
static void views_setup(env *e) {
  hash_setup_kv(e, TDM_U64, TDM_U64, 4 * N, 1);
  must(btree_new(e, e->a[0].p, e->a[1].p, N, &e->t), "tdm_btree_build");
}

/* B+ tree: a[0] keys, a[1] values */
static void bt_setup(env *e, int build) {
  e->kt = TDM_U64;
  e->vt = TDM_U64;
  keys_new(e, 8, N, 3 * N, 1);
  keys_new(e, 8, N, 0, 1);
  if (build) {
    size_t half = N / 2;
    void *k = e->a[0].p, *v = e->a[1].p;
    must(btree_new(e, k, v, half, &e->t), "tdm_btree_build");
  }
}
static void bt_build_setup(env *e) { bt_setup(e, 0); }
static void bt_build_setup_32(env *e) {
  e->kt = TDM_I32;
  e->vt = TDM_F32;
  keys_new(e, 4, N, 3 * N, 1);
  keys_new(e, 4, N, 1 << 20, 1);
}
static tdm_status bt_build_op(env *e) { return btree_new(e, e->a[0].p, e->a[1].p, N, &e->t); }
static void bt_built_setup(env *e) { bt_setup(e, 1); }
static void bt_find_setup(env *e) {
  bt_setup(e, 1);
  arr_new(e, N * 8, NULL, 0, 0);
  arr_new(e, N, NULL, 0, 0);
}
static tdm_status bt_find_op(env *e) { return tdm_btree_find(e->t, e->a[0].p, e->a[2].p, (uint8_t *)e->a[3].p, N); }
static tdm_status bt_rank_op(env *e) { return tdm_btree_rank(e->t, e->a[0].p, (uint64_t *)e->a[2].p, N); }
static tdm_status bt_range_count_op(env *e) {
  return tdm_btree_range_count(e->t, e->a[0].p, e->a[1].p, (uint64_t *)e->a[2].p, N);
}
static void bt_range_setup(env *e) {
  bt_setup(e, 1);
  arr_new(e, (N + 1) * 8, NULL, 0, 0);
  arr_new(e, 8 * N * 8, NULL, 0, 0);
  arr_new(e, 8 * N * 8, NULL, 0, 0);
}
static tdm_status bt_range_op(env *e) {
  /* lo = keys, hi = keys + 0..3 (a[1] are values: use keys as both ends,
   * so hits are the exact matches) */
  return tdm_btree_range(e->t, e->a[0].p, e->a[0].p, N, (uint64_t *)e->a[2].p, e->a[3].p, e->a[4].p, 8 * N);
}
static tdm_status bt_insert_op(env *e) { return tdm_btree_insert(e->t, e->a[0].p, e->a[1].p, N); }
static tdm_status bt_erase_op(env *e) { return tdm_btree_erase(e->t, e->a[0].p, N / 3, &e->count); }

/* data operations: a[0] keys (u64, duplicates), a[1] values, then outputs */
static void ops_setup(env *e) {
  e->kt = TDM_U64;
  keys_new(e, 8, N, N / 3, 1);
  keys_new(e, 8, N, 1000, 1);
}
static void unique_setup(env *e) {
  ops_setup(e);
  arr_new(e, N * 8, NULL, 0, 8);
  arr_new(e, N * 8, NULL, 0, 8);
  arr_new(e, N * 8, NULL, 0, 8);
  arr_new(e, N * 8, NULL, 0, 0);
}
static tdm_status unique_op(env *e) {
  return tdm_unique(e->ctx, TDM_U64, e->a[0].p, N, e->flags, e->a[2].p, (uint64_t *)e->a[3].p,
                    (uint64_t *)e->a[4].p, (uint64_t *)e->a[5].p, &e->count);
}
static void unique_fs_setup(env *e) {
  unique_setup(e);
  e->flags = TDM_ORDER_FIRST_SEEN;
}
static void isin_setup(env *e) {
  ops_setup(e);
  arr_new(e, N, NULL, 0, 0);
}
static tdm_status isin_op(env *e) {
  return tdm_isin(e->ctx, TDM_U64, e->a[0].p, N, e->a[1].p, N / 2, 0, (uint8_t *)e->a[2].p);
}
static void group_setup(env *e) {
  ops_setup(e);
  arr_new(e, N * 8, NULL, 0, 8);
  arr_new(e, N * 8, NULL, 0, 8);
}
static tdm_status group_sum_op(env *e) {
  return tdm_group_reduce(e->ctx, TDM_U64, e->a[0].p, TDM_U64, e->a[1].p, N, TDM_AGG_SUM, 0, e->a[2].p, e->a[3].p,
                          &e->count);
}
static tdm_status group_mean_op(env *e) {
  return tdm_group_reduce(e->ctx, TDM_U64, e->a[0].p, TDM_I64, e->a[1].p, N, TDM_AGG_MEAN, TDM_ORDER_FIRST_SEEN,
                          e->a[2].p, e->a[3].p, &e->count);
}
static tdm_status group_min_op(env *e) {
  return tdm_group_reduce(e->ctx, TDM_U64, e->a[0].p, TDM_F64, e->a[1].p, N, TDM_AGG_MIN, 0, e->a[2].p, e->a[3].p,
                          &e->count);
}
/* Two keys over 5000 rows: both groups are longer than the 2048 rows the
 * CUDA backend folds on one thread, so float SUM takes fold_long_kernel. */
enum { HOT_N = 5000 };
static void group_hot_setup(env *e) {
  e->kt = TDM_U64;
  keys_new(e, 8, HOT_N, 2, 1);
  keys_new(e, 8, HOT_N, 1000, 1);
  arr_new(e, HOT_N * 8, NULL, 0, 8);
  arr_new(e, HOT_N * 8, NULL, 0, 8);
}
static tdm_status group_hot_op(env *e) {
  return tdm_group_reduce(e->ctx, TDM_U64, e->a[0].p, TDM_F64, e->a[1].p, HOT_N, TDM_AGG_SUM, 0, e->a[2].p,
                          e->a[3].p, &e->count);
}
static void join_setup(env *e) {
  ops_setup(e);
  arr_new(e, 8 * N * 8, NULL, 0, 8);
  arr_new(e, 8 * N * 8, NULL, 0, 8);
}
static tdm_status join_inner_op(env *e) {
  return tdm_join(e->ctx, TDM_JOIN_INNER, TDM_U64, e->a[0].p, N, e->a[1].p, N / 2, 0, (uint64_t *)e->a[2].p,
                  (uint64_t *)e->a[3].p, 8 * N, &e->count);
}
static tdm_status join_left_op(env *e) {
  return tdm_join(e->ctx, TDM_JOIN_LEFT, TDM_U64, e->a[0].p, N, e->a[1].p, N / 2, 0, (uint64_t *)e->a[2].p,
                  (uint64_t *)e->a[3].p, 8 * N, &e->count);
}
static tdm_status join_anti_op(env *e) {
  return tdm_join(e->ctx, TDM_JOIN_ANTI, TDM_U64, e->a[0].p, N, e->a[1].p, N / 2, 0, (uint64_t *)e->a[2].p, NULL,
                  8 * N, &e->count);
}

/* Graph capture on the caller's stream: a sort of device keys captured,
 * instantiated and replayed. */
static void capture_setup(env *e) {
  e->kt = TDM_U64;
  keys_new(e, 8, N, 0, 1);
}
static tdm_status capture_op(env *e) {
  cudaGraph_t g = NULL;
  cudaGraphExec_t x = NULL;
  tdm_status st;
  cudaError_t ce;
  if ((ce = cudaStreamBeginCapture(e->stream, cudaStreamCaptureModeGlobal)) != cudaSuccess)
    return tdm_set_last_error(TDM_ERR_DEVICE, "cudaStreamBeginCapture: %s", cudaGetErrorString(ce));
  st = tdm_sort(e->ctx, TDM_U64, e->a[0].p, N, 0);
  ce = cudaStreamEndCapture(e->stream, &g);
  if (st != TDM_OK) {
    if (g) cudaGraphDestroy(g);
    return st;
  }
  if (ce != cudaSuccess) return tdm_set_last_error(TDM_ERR_DEVICE, "cudaStreamEndCapture: %s", cudaGetErrorString(ce));
  ce = cudaGraphInstantiate(&x, g, 0);
  cudaGraphDestroy(g);
  if (ce != cudaSuccess) return tdm_set_last_error(TDM_ERR_DEVICE, "cudaGraphInstantiate: %s", cudaGetErrorString(ce));
  ce = cudaGraphLaunch(x, e->stream);
  cudaGraphExecDestroy(x);
  if (ce != cudaSuccess) return tdm_set_last_error(TDM_ERR_DEVICE, "cudaGraphLaunch: %s", cudaGetErrorString(ce));
  return tdm_ctx_sync(e->ctx);
}

/* A second context on the same device, created and destroyed (its
 * stream is the one runtime object it makes). */
static void ctx_create_setup(env *e) { (void)e; }
static tdm_status ctx_create_op(env *e) {
  tdm_ctx_opts o;
  tdm_ctx *c = NULL;
  tdm_status st;
  memset(&o, 0, sizeof o);
  o.backend = TDM_BACKEND_CUDA;
  st = tdm_ctx_create(&o, &c);
  if (st == TDM_OK) {
    e->count = tdm_ctx_backend(c);
    tdm_ctx_destroy(c);
  }
  return st;
}

static const sweep_case cases[] = {
    {"context create", 0, ctx_create_setup, ctx_create_op},
    {"sort u32", 0, sort_u32, sort_op},
    {"sort u32 (device)", 1, sort_u32, sort_op},
    {"sort f64 desc", 0, sort_f64_desc, sort_op},
    {"sort f64 desc (device)", 1, sort_f64_desc, sort_op},
    {"sort_pairs i32/u64", 0, sort_i32_pairs_u64, sort_op},
    {"sort_pairs i32/u64 (device)", 1, sort_i32_pairs_u64, sort_op},
    {"sort_pairs u64/u32 desc", 0, sort_u64_pairs_u32, sort_op},
    {"sort_pairs f32/f32 (device)", 1, sort_f32_pairs_f32, sort_op},
    {"sort_pairs i64/i64", 0, sort_i64_pairs_i64, sort_op},
    {"argsort f32/u32", 0, argsort_f32_u32, argsort_op},
    {"argsort f32/u32 (device)", 1, argsort_f32_u32, argsort_op},
    {"argsort i64/u64 desc (device)", 1, argsort_i64_u64, argsort_op},
    {"hash create", 0, hash_create_setup, hash_create_op},
    {"hash insert u64/u64", 0, hash_insert_u64, hash_insert_op},
    {"hash insert u64/u64 (device)", 1, hash_insert_u64, hash_insert_op},
    {"hash insert u32/u32", 0, hash_insert_u32, hash_insert_op},
    {"hash insert grow i64/u32", 0, hash_grow_setup, hash_insert_op},
    {"hash insert grow u32/u64 (device)", 1, hash_grow_fill, hash_insert_op},
    {"hash find", 0, hash_find_setup, hash_find_op},
    {"hash find (device)", 1, hash_find_setup, hash_find_op},
    {"hash erase", 0, hash_insert_u64, hash_erase_op},
    {"hash erase (device)", 1, hash_insert_u32, hash_erase_op},
    {"hash clear", 0, hash_insert_u64, hash_clear_op},
    {"hash export", 0, hash_export_setup, hash_export_op},
    {"views", 0, views_setup, views_op},
    {"btree build", 0, bt_build_setup, bt_build_op},
    {"btree build i32/f32 (device)", 1, bt_build_setup_32, bt_build_op},
    {"btree find", 0, bt_find_setup, bt_find_op},
    {"btree find (device)", 1, bt_find_setup, bt_find_op},
    {"btree rank", 0, bt_find_setup, bt_rank_op},
    {"btree range_count", 0, bt_find_setup, bt_range_count_op},
    {"btree range_count (device)", 1, bt_find_setup, bt_range_count_op},
    {"btree range", 0, bt_range_setup, bt_range_op},
    {"btree insert", 0, bt_built_setup, bt_insert_op},
    {"btree insert (device)", 1, bt_built_setup, bt_insert_op},
    {"btree erase", 0, bt_built_setup, bt_erase_op},
    {"unique", 0, unique_setup, unique_op},
    {"unique first-seen (device)", 1, unique_fs_setup, unique_op},
    {"isin", 0, isin_setup, isin_op},
    {"isin (device)", 1, isin_setup, isin_op},
    {"group_reduce sum", 0, group_setup, group_sum_op},
    {"group_reduce mean first-seen (device)", 1, group_setup, group_mean_op},
    {"group_reduce min f64", 0, group_setup, group_min_op},
    {"group_reduce sum f64, long groups (device)", 1, group_hot_setup, group_hot_op},
    {"join inner", 0, join_setup, join_inner_op},
    {"join left (device)", 1, join_setup, join_left_op},
    {"join anti", 0, join_setup, join_anti_op},
    {"graph capture of a sort", 2, capture_setup, capture_op},
};

static const char *const classes[] = {"malloc", "copy", "memset", "launch", "event", "stream"};

/* ---- the driver ------------------------------------------------------------------- */

static void start(env *e, const sweep_case *c) {
  memset(e, 0, sizeof *e);
  rng_state = 0x5EED;
  e->dev = c->dev != 0;
  if (c->dev == 2) cuda_ok(cudaStreamCreateWithFlags(&e->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  e->ctx = ctx_new(c->dev, e->stream);
  c->setup(e);
  must(tdm_ctx_sync(e->ctx), "tdm_ctx_sync");
}

/* One operation and one class: counts the calls, then fails each in turn. */
static void sweep_class(const sweep_case *c, const char *cls, long *points) {
  env e;
  uint64_t ref;
  long n, k;
  size_t live0 = tdm_emu_live_bytes();
  char what[160];

  start(&e, c);
  tdm_emu_fail_nth(cls, 0);
  tdm_status st = c->op(&e);
  n = tdm_emu_calls(cls);
  snprintf(what, sizeof what, "%s [%s]", c->name, cls);
  if (st != TDM_OK) {
    failf("%s: fails with nothing failing: %s: %s", what, tdm_status_name(st), tdm_last_error());
    env_free(&e);
    return;
  }
  ref = digest(&e, 1, what);
  env_free(&e);
  /* The emulator keeps a captured graph's allocations for the process (its
   * free nodes release nothing): no leak check after a capture. */
  if (c->dev == 2) live0 = (size_t)-1;
  if (live0 != (size_t)-1 && tdm_emu_live_bytes() != live0) failf("%s: device bytes leaked by a call that succeeded", what);

  for (k = 1; k <= n; k++) {
    uint64_t before;
    size_t live;
    snprintf(what, sizeof what, "%s [%s call %ld of %ld]", c->name, cls, k, n);
    start(&e, c);
    before = digest(&e, 0, what);
    tdm_emu_fail_nth(cls, k);
    tdm_set_last_error(TDM_OK, "%s", "");
    st = c->op(&e);
    tdm_emu_fail_nth(NULL, 0);
    (*points)++;
    if (st == TDM_OK) {
      /* recovered (a fallback path): the result must be the same */
      if (digest(&e, 1, what) != ref) failf("%s: recovered with a different result", what);
    } else {
      if (!tdm_last_error()[0]) failf("%s: %s without a message", what, tdm_status_name(st));
      if (st != TDM_ERR_DEVICE && st != TDM_ERR_OUT_OF_MEMORY)
        failf("%s: unexpected status %s: %s", what, tdm_status_name(st), tdm_last_error());
      if (verbose) fprintf(stderr, "  %s: %s: %s\n", what, tdm_status_name(st), tdm_last_error());
      if (digest(&e, 0, what) != before) failf("%s: the failed call changed its inputs or the structure", what);
      /* the context is usable: the same call succeeds with the same result */
      st = c->op(&e);
      if (st != TDM_OK) failf("%s: the call after the failure fails: %s: %s", what, tdm_status_name(st), tdm_last_error());
      else if (digest(&e, 1, what) != ref) failf("%s: the call after the failure gives a different result", what);
    }
    if (cudaPeekAtLastError() != cudaSuccess) {
      failf("%s: a CUDA error is left pending: %s", what, cudaGetErrorName(cudaGetLastError()));
    }
    env_free(&e);
    live = tdm_emu_live_bytes();
    if (live0 != (size_t)-1 && live != live0) {
      failf("%s: %zu device bytes leaked", what, live - live0);
      live0 = live;
    }
  }
  if (verbose) fprintf(stderr, "  %s %s: %ld calls\n", c->name, cls, n);
}

/* The sticky pass: the k-th kernel faults on the device (a sticky error),
 * for each kernel of the operation. */
static void sweep_sticky(const sweep_case *c, long *points) {
  env e;
  long n, k;
  char what[160];
  start(&e, c);
  tdm_emu_fail_nth(NULL, 0);
  tdm_emu_fault_nth(0);
  if (c->op(&e) != TDM_OK) {
    env_free(&e);
    return;
  }
  n = tdm_emu_fault_nth(0);
  env_free(&e);
  for (k = 1; k <= n; k++) {
    tdm_status st;
    snprintf(what, sizeof what, "%s [device fault in kernel %ld of %ld]", c->name, k, n);
    start(&e, c);
    tdm_emu_fail_nth(NULL, 0);
    tdm_emu_fault_nth(k);
    st = c->op(&e);
    if (st == TDM_OK) st = tdm_ctx_sync(e.ctx);
    tdm_emu_fault_nth(0);
    (*points)++;
    if (st != TDM_ERR_DEVICE || !strstr(tdm_last_error(), "cudaErrorLaunchFailure"))
      failf("%s: %s: %s (TDM_ERR_DEVICE with the CUDA error expected)", what, tdm_status_name(st), tdm_last_error());
    /* every later call returns the sticky error cleanly */
    st = c->op(&e);
    if (st == TDM_OK) st = tdm_ctx_sync(e.ctx);
    if (st != TDM_ERR_DEVICE) failf("%s: the call after the fault: %s (TDM_ERR_DEVICE expected)", what, tdm_status_name(st));
    tdm_emu_clear_faults();
    env_free(&e);
  }
}

int main(int argc, char **argv) {
  const char *only = NULL;
  long points = 0, sticky = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-v")) verbose = 1;
    else only = argv[i];
  }
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const sweep_case *c = &cases[i];
    long before = points;
    int f0 = failures;
    if (only && !strstr(c->name, only)) continue;
    for (size_t j = 0; j < sizeof classes / sizeof classes[0]; j++) sweep_class(c, classes[j], &points);
    sweep_sticky(c, &sticky);
    printf("%s %s: %ld failure points\n", failures == f0 ? "ok  " : "FAIL", c->name, points - before);
    fflush(stdout);
  }
  printf("fault sweep: %ld failure points and %ld device faults, %d problems\n", points, sticky, failures);
  return failures ? 1 : 0;
}
