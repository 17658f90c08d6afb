/*
 * tandem-selftest: every operation of the public API on the CUDA backend,
 * compared bit for bit with the CPU backend, on host and on device arrays.
 *
 * It needs nothing but the library (and the CUDA runtime the library links):
 * no test framework, so it runs on a GPU machine where Criterion cannot be
 * installed. Inputs are property-style: uniform random bits, few distinct
 * values, all equal, sorted, reverse sorted, boundary values (0, all-ones,
 * INT_MIN/MAX, -0.0/+0.0, +-inf, NaNs of both signs with payloads,
 * denormals) and a mix, at sizes from 0 to past one GPU tile, from a fixed
 * seed (--seed replays another). Besides CPU == CUDA, the CPU reference is
 * checked on its own where that is cheap (sort order, argsort permutation and
 * stability, export counts), so two backends that agree on a wrong answer
 * still fail.
 *
 * Output: one line per check ("ok   ..." or "FAIL ...: reason"), then
 * "N passed, N failed"; exit status 1 when any check failed. Without a usable
 * CUDA device it prints "SKIP: <reason>" and exits 77 (ctest: skipped).
 *
 *   tandem-selftest [--quick|--minimal] [--seed S] [--only sort|hash|btree|ops] [--shard K/N]
 *                   [--cpu-only]
 *
 * --quick: fewer sizes and distributions; --minimal: two sizes and one mixed
 * distribution, every operation still on host and device arrays (for runs
 * under compute-sanitizer, which makes every launch slow).
 * --shard K/N: only the K-th of every N checks (K = 1..N), in the order they
 *   run: N runs with K = 1..N side by side do the whole set between them
 *   (the race build's run, which is single-threaded per process).
 * --cpu-only: compare the CPU backend on one thread with the CPU backend on
 *   all threads, host arrays only; this exercises the program itself, and the
 *   thread-count independence of the CPU results, on a machine with no GPU.
 * The data operations (tandem/ops.h: unique with every output, isin,
 * group_reduce with every reduction, join of every kind) are the part "ops".
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tandem/tandem.h>

#ifdef TANDEM_SELFTEST_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

/* ---- run state -------------------------------------------------------------- */

static tdm_ctx *g_ref, *g_cand;   /* reference (CPU) and candidate contexts */
static const char *g_cand_name;   /* "cuda" or "cpu-1thread" */
static int g_quick, g_minimal, g_cpu_only;
static unsigned g_shard_k, g_shard_n = 1; /* --shard: checks with index % n == k run */
static unsigned g_check_index;
static uint64_t g_seed = 1;
static int g_passed, g_failed;
static int g_check_failed;        /* the current check already failed */
static char g_check_name[160];
static char g_why[600];

static void fail(const char *fmt, ...) {
  if (g_check_failed) return; /* keep the first reason */
  g_check_failed = 1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_why, sizeof g_why, fmt, ap);
  va_end(ap);
}

static void check_begin(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_check_name, sizeof g_check_name, fmt, ap);
  va_end(ap);
  g_check_failed = 0;
  g_why[0] = 0;
}

static void check_end(void) {
  if (g_check_failed) {
    g_failed++;
    printf("FAIL %s: %s (seed %" PRIu64 ")\n", g_check_name, g_why, g_seed);
  } else {
    g_passed++;
    printf("ok   %s\n", g_check_name);
  }
  fflush(stdout);
}

/* Fatal problems of the harness itself (host out of memory, a CUDA runtime
 * call of the harness failing): the run cannot go on. */
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("FAIL harness: ");
  vprintf(fmt, ap);
  printf("\n%d passed, %d failed\n", g_passed, g_failed + 1);
  va_end(ap);
  exit(1);
}

static void *xmalloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) die("out of host memory (%zu bytes)", bytes);
  return p;
}

/* ---- memory spaces: every buffer handed to the candidate is its own copy, in
 * host memory or (dev = 1) device memory, freed at the end of each size. ---- */

#define ARENA_MAX 256
static struct {
  void *p;
  int dev;
} g_arena[ARENA_MAX];
static int g_arena_n;

static void *arena_add(void *p, int dev) {
  if (g_arena_n == ARENA_MAX) die("arena full");
  g_arena[g_arena_n].p = p;
  g_arena[g_arena_n].dev = dev;
  g_arena_n++;
  return p;
}

static void arena_free(void) {
  for (int i = 0; i < g_arena_n; i++) {
#ifdef TANDEM_SELFTEST_HAVE_CUDA
    if (g_arena[i].dev) {
      cudaFree(g_arena[i].p);
      continue;
    }
#endif
    free(g_arena[i].p);
  }
  g_arena_n = 0;
}

/* A buffer of `bytes` in the space, filled with a poison pattern so an output
 * element the call forgot to write shows as a difference. */
static void *sp_out(size_t bytes, int dev) {
  void *p;
#ifdef TANDEM_SELFTEST_HAVE_CUDA
  if (dev) {
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) die("cudaMalloc(%zu): %s", bytes, cudaGetErrorString(e));
    e = cudaMemset(p, 0xA5, bytes);
    if (e != cudaSuccess) die("cudaMemset: %s", cudaGetErrorString(e));
    return arena_add(p, 1);
  }
#else
  (void)dev;
#endif
  p = xmalloc(bytes);
  memset(p, 0xA5, bytes);
  return arena_add(p, 0);
}

/* A copy of host data in the space. */
static void *sp_in(const void *h, size_t bytes, int dev) {
  void *p = sp_out(bytes, dev);
  if (!bytes) return p;
#ifdef TANDEM_SELFTEST_HAVE_CUDA
  if (dev) {
    cudaError_t e = cudaMemcpy(p, h, bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) die("cudaMemcpy H2D: %s", cudaGetErrorString(e));
    return p;
  }
#endif
  memcpy(p, h, bytes);
  return p;
}

/* Copies a buffer of the space back to host memory h. */
static void sp_get(void *h, const void *p, size_t bytes, int dev) {
  if (!bytes) return;
#ifdef TANDEM_SELFTEST_HAVE_CUDA
  if (dev) {
    cudaError_t e = cudaMemcpy(h, p, bytes, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) die("cudaMemcpy D2H: %s", cudaGetErrorString(e));
    return;
  }
#else
  (void)dev;
#endif
  memcpy(h, p, bytes);
}

/* A host buffer freed with the arena. */
static void *hbuf(size_t bytes) {
  void *p = xmalloc(bytes);
  memset(p, 0x5A, bytes);
  return arena_add(p, 0);
}

/* ---- generators -------------------------------------------------------------- */

static uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

typedef struct {
  uint64_t s;
} rng;
static uint64_t rnext(rng *r) { return mix64(r->s++ * 0x2545f4914f6cdd1dull + 0x1234567ull); }

enum { D_UNIFORM, D_FEW, D_EQUAL, D_SORTED, D_REVERSE, D_BOUNDARY, D_MIXED, D_COUNT };
static const char *const dist_names[D_COUNT] = {"uniform", "few",      "all-equal", "sorted",
                                                "reverse", "boundary", "mixed"};

static const tdm_type all_types[6] = {TDM_U32, TDM_U64, TDM_I32, TDM_I64, TDM_F32, TDM_F64};
static const tdm_type int_types[4] = {TDM_U32, TDM_U64, TDM_I32, TDM_I64};


/* Boundary bit patterns of type t. */
static size_t boundary_values(tdm_type t, uint64_t out[16]) {
  size_t k = 0;
  switch (t) {
  case TDM_U32:
  case TDM_I32: {
    static const uint32_t v[] = {0, 1, 0xffffffffu, 0x7fffffffu, 0x80000000u, 0x80000001u, 0xfffffffeu, 2};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) out[k++] = v[i];
    break;
  }
  case TDM_U64:
  case TDM_I64: {
    static const uint64_t v[] = {0, 1, UINT64_MAX, 0x7fffffffffffffffull, 0x8000000000000000ull,
                                 0x8000000000000001ull, UINT64_MAX - 1, 0xffffffffull, 0x100000000ull};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) out[k++] = v[i];
    break;
  }
  case TDM_F32: {
    static const uint32_t v[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                 0xffc00000u, 0x7f800001u, 0xff800123u, 0x00000001u, 0x80000001u,
                                 0x7f7fffffu, 0xff7fffffu, 0x3f800000u, 0xbf800000u, 0x7fffffffu};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) out[k++] = v[i];
    break;
  }
  case TDM_F64: {
    static const uint64_t v[] = {0, 0x8000000000000000ull, 0x7ff0000000000000ull, 0xfff0000000000000ull,
                                 0x7ff8000000000000ull, 0xfff8000000000000ull, 0x7ff0000000000001ull,
                                 0xfff0000000000abcull, 1, 0x8000000000000001ull, 0x7fefffffffffffffull,
                                 0xffefffffffffffffull, 0x3ff0000000000000ull, 0xbff0000000000000ull,
                                 0x7fffffffffffffffull};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) out[k++] = v[i];
    break;
  }
  }
  return k;
}

/* The key's bits mapped to an unsigned value whose order is the contract's key
 * order (numeric; floats by totalOrder). */
static uint64_t ordered(tdm_type t, uint64_t b) {
  switch (t) {
  case TDM_U32:
  case TDM_U64: return b;
  case TDM_I32: return b ^ 0x80000000u;
  case TDM_I64: return b ^ 0x8000000000000000ull;
  case TDM_F32: return (b & 0x80000000u) ? (~b & 0xffffffffu) : (b | 0x80000000u);
  case TDM_F64: return (b & 0x8000000000000000ull) ? ~b : (b | 0x8000000000000000ull);
  }
  return b;
}

static uint64_t unordered(tdm_type t, uint64_t o) {
  switch (t) {
  case TDM_U32:
  case TDM_U64: return o;
  case TDM_I32: return o ^ 0x80000000u;
  case TDM_I64: return o ^ 0x8000000000000000ull;
  case TDM_F32: return (o & 0x80000000u) ? (o & 0x7fffffffu) : (~o & 0xffffffffu);
  case TDM_F64: return (o & 0x8000000000000000ull) ? (o & 0x7fffffffffffffffull) : ~o;
  }
  return o;
}

static uint64_t get_bits(tdm_type t, const void *a, size_t i) {
  if (tdm_type_size(t) == 4) {
    uint32_t x;
    memcpy(&x, (const char *)a + i * 4, 4);
    return x;
  }
  uint64_t x;
  memcpy(&x, (const char *)a + i * 8, 8);
  return x;
}

static void set_bits(tdm_type t, void *a, size_t i, uint64_t b) {
  if (tdm_type_size(t) == 4) {
    uint32_t x = (uint32_t)b;
    memcpy((char *)a + i * 4, &x, 4);
  } else {
    memcpy((char *)a + i * 8, &b, 8);
  }
}

static tdm_type g_sort_type; /* for the qsort comparator */
static int cmp_ordered(const void *a, const void *b) {
  uint64_t x = ordered(g_sort_type, get_bits(g_sort_type, a, 0)), y = ordered(g_sort_type, get_bits(g_sort_type, b, 0));
  return x < y ? -1 : x > y;
}

/* n elements of type t from distribution d into out (host). */
static void gen(rng *r, tdm_type t, void *out, size_t n, int d) {
  uint64_t bv[16], few[5];
  size_t nb = boundary_values(t, bv);
  for (int i = 0; i < 5; i++) few[i] = rnext(r);
  uint64_t one = rnext(r);
  for (size_t i = 0; i < n; i++) {
    uint64_t x;
    switch (d) {
    case D_FEW: x = few[rnext(r) % 5]; break;
    case D_EQUAL: x = one; break;
    case D_BOUNDARY: x = bv[rnext(r) % nb]; break;
    case D_MIXED: {
      uint64_t c = rnext(r) % 4;
      x = c == 0 ? bv[rnext(r) % nb] : c == 1 ? few[rnext(r) % 5] : rnext(r);
      break;
    }
    default: x = rnext(r); break;
    }
    set_bits(t, out, i, x);
  }
  if (d == D_SORTED || d == D_REVERSE) {
    g_sort_type = t;
    qsort(out, n, tdm_type_size(t), cmp_ordered);
    if (d == D_REVERSE) {
      size_t es = tdm_type_size(t);
      char tmp[8];
      for (size_t i = 0; i < n / 2; i++) {
        memcpy(tmp, (char *)out + i * es, es);
        memcpy((char *)out + i * es, (char *)out + (n - 1 - i) * es, es);
        memcpy((char *)out + (n - 1 - i) * es, tmp, es);
      }
    }
  }
}

/* Values whose bits differ per index, so a misplaced value shows. */
static void gen_values(rng *r, tdm_type t, void *out, size_t n) {
  uint64_t salt = rnext(r);
  for (size_t i = 0; i < n; i++) set_bits(t, out, i, mix64(salt + i));
}

static size_t sizes(size_t out[16]) {
  static const size_t full[] = {0, 1, 2, 31, 1000, 4099, 65537, 131073};
  static const size_t quick[] = {0, 1, 33, 1000, 5001};
  static const size_t minimal[] = {1, 5001};
  const size_t *s = g_minimal ? minimal : g_quick ? quick : full;
  size_t k = g_minimal ? sizeof minimal / sizeof minimal[0]
             : g_quick ? sizeof quick / sizeof quick[0]
                       : sizeof full / sizeof full[0];
  memcpy(out, s, k * sizeof *s);
  return k;
}

/* ---- comparison helpers ------------------------------------------------------- */

static void same_status(const char *what, size_t n, tdm_status a, tdm_status b) {
  if (a != b)
    fail("n=%zu: %s: cpu %s, %s %s (%s)", n, what, tdm_status_name(a), g_cand_name, tdm_status_name(b),
         tdm_last_error());
}

static void ok_status(const char *what, size_t n, tdm_status s) {
  if (s != TDM_OK) fail("n=%zu: %s: %s: %s", n, what, tdm_status_name(s), tdm_last_error());
}

/* The usual pair: both backends answered alike, and the reference succeeded. */
static void same_ok(const char *what, size_t n, tdm_status a, tdm_status b) {
  same_status(what, n, a, b);
  ok_status(what, n, a);
}

/* Compares n elements of es bytes; reports the first difference. */
static void same_bytes(const char *what, size_t n, const void *a, const void *b, size_t count, size_t es) {
  if (!count || !memcmp(a, b, count * es)) return;
  for (size_t i = 0; i < count; i++) {
    if (memcmp((const char *)a + i * es, (const char *)b + i * es, es)) {
      uint64_t x = 0, y = 0;
      memcpy(&x, (const char *)a + i * es, es < 8 ? es : 8);
      memcpy(&y, (const char *)b + i * es, es < 8 ? es : 8);
      fail("n=%zu: %s differ at [%zu] of %zu: cpu 0x%" PRIx64 ", %s 0x%" PRIx64, n, what, i, count, x,
           g_cand_name, y);
      return;
    }
  }
}

static size_t ts(tdm_type t) { return tdm_type_size(t); }

static uint64_t case_seed(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  return mix64(g_seed ^ mix64(a * 1000003u + b * 10007u + c * 101u + d));
}

/* ---- one check ------------------------------------------------------------------ */

/* What a check varies: key type, value (or index) type, sort flags or
 * duplicate policy, distribution, and the memory space of the candidate's
 * arrays. */
typedef struct check_case {
  tdm_type kt, vt;
  unsigned mode; /* sort flags, or the duplicate policy */
  int d, dev;
} check_case;

/* The work of a check at one size: si is the size's index in the run. */
typedef void (*size_fn)(const check_case *c, size_t si, size_t n, rng *r);

/* Runs one check: body at every size of the run until one fails. Each size
 * draws from its own generator, seeded from the operation, the types, the
 * mode, the distribution and n (so a failing size replays alone), and frees
 * its buffers when done. The check's name is fmt (printf-style), then the
 * distribution, the memory space and the number of sizes. */
static void run_check(const check_case *c, uint64_t op, uint64_t types, size_fn body, const char *fmt, ...) {
  char label[96];
  size_t sz[16], ns = sizes(sz);
  va_list ap;
  if (g_check_index++ % g_shard_n != g_shard_k) return;
  va_start(ap, fmt);
  vsnprintf(label, sizeof label, fmt, ap);
  va_end(ap);
  check_begin("%s %s %s (%zu sizes)", label, dist_names[c->d], c->dev ? "device" : "host", ns);
  for (size_t si = 0; si < ns && !g_check_failed; si++) {
    rng r = {case_seed(op, types, c->mode * 16 + (unsigned)c->d, sz[si])};
    body(c, si, sz[si], &r);
    arena_free();
  }
  check_end();
}

/* ---- sort ---------------------------------------------------------------------- */

/* The reference result must itself be ordered (ties allowed). */
static void check_ordered(const char *what, size_t n, tdm_type kt, const void *k, size_t count, unsigned flags) {
  for (size_t i = 1; i < count; i++) {
    uint64_t a = ordered(kt, get_bits(kt, k, i - 1)), b = ordered(kt, get_bits(kt, k, i));
    if ((flags & TDM_SORT_DESCENDING) ? a < b : a > b) {
      fail("n=%zu: %s: cpu result out of order at [%zu]", n, what, i);
      return;
    }
  }
}

/* tdm_sort, or tdm_sort_pairs when the case has a value type. */
static void sort_one(const check_case *c, size_t si, size_t n, rng *r) {
  tdm_type kt = c->kt, vt = c->vt;
  size_t es = ts(kt), vs = vt ? ts(vt) : 0;
  const char *what = vt ? "tdm_sort_pairs" : "tdm_sort";
  (void)si;
  char *k = hbuf(n * es), *v = hbuf(n * vs), *kr = hbuf(n * es), *vr = hbuf(n * vs);
  char *kg = hbuf(n * es), *vg = hbuf(n * vs);
  gen(r, kt, k, n, c->d);
  if (vt) gen_values(r, vt, v, n);
  memcpy(kr, k, n * es);
  memcpy(vr, v, n * vs);
  void *pk = sp_in(k, n * es, c->dev), *pv = sp_in(v, n * vs, c->dev);
  tdm_status a = vt ? tdm_sort_pairs(g_ref, kt, kr, vt, vr, n, c->mode) : tdm_sort(g_ref, kt, kr, n, c->mode);
  tdm_status b = vt ? tdm_sort_pairs(g_cand, kt, pk, vt, pv, n, c->mode) : tdm_sort(g_cand, kt, pk, n, c->mode);
  same_ok(what, n, a, b);
  sp_get(kg, pk, n * es, c->dev);
  sp_get(vg, pv, n * vs, c->dev);
  same_bytes("keys", n, kr, kg, n, es);
  same_bytes("values", n, vr, vg, n, vs);
  check_ordered("keys", n, kt, kr, n, c->mode);
}

static void argsort_one(const check_case *c, size_t si, size_t n, rng *r) {
  tdm_type kt = c->kt, it = c->vt;
  size_t es = ts(kt), is = ts(it);
  (void)si;
  char *k = hbuf(n * es), *pr = hbuf(n * is), *pg = hbuf(n * is), *k2 = hbuf(n * es);
  unsigned char *seen = hbuf(n);
  gen(r, kt, k, n, c->d);
  void *pk = sp_in(k, n * es, c->dev), *pp = sp_out(n * is, c->dev);
  tdm_status a = tdm_argsort(g_ref, kt, k, it, pr, n, c->mode);
  tdm_status b = tdm_argsort(g_cand, kt, pk, it, pp, n, c->mode);
  same_ok("tdm_argsort", n, a, b);
  sp_get(pg, pp, n * is, c->dev);
  sp_get(k2, pk, n * es, c->dev);
  same_bytes("permutation", n, pr, pg, n, is);
  same_bytes("keys (must be unchanged)", n, k, k2, n, es);
  /* The reference is a permutation that orders the keys stably. */
  memset(seen, 0, n);
  for (size_t i = 0; i < n && !g_check_failed; i++) {
    uint64_t p = get_bits(it, pr, i);
    if (p >= n || seen[p]) {
      fail("n=%zu: cpu permutation invalid at [%zu] (%" PRIu64 ")", n, i, p);
      break;
    }
    seen[p] = 1;
    if (i) {
      uint64_t q = get_bits(it, pr, i - 1);
      uint64_t x = ordered(kt, get_bits(kt, k, q)), y = ordered(kt, get_bits(kt, k, p));
      if (((c->mode & TDM_SORT_DESCENDING) ? x < y : x > y) || (x == y && q > p))
        fail("n=%zu: cpu permutation not a stable order at [%zu]", n, i);
    }
  }
}

static void run_sort(void) {
  static const int quick_d[] = {D_BOUNDARY, D_FEW, D_UNIFORM};
  int nd = g_minimal ? 1 : g_quick ? 3 : D_COUNT;
  for (int ti = 0; ti < 6; ti++) {
    tdm_type kt = all_types[ti];
    for (unsigned flags = 0; flags <= TDM_SORT_DESCENDING; flags++) {
      for (int di = 0; di < nd; di++) {
        int d = g_minimal ? D_MIXED : g_quick ? quick_d[di] : di;
        const char *dir = flags ? "desc" : "asc";
        for (int dev = 0; dev <= !g_cpu_only; dev++) {
          check_case c = {kt, 0, flags, d, dev};
          run_check(&c, 1, kt, sort_one, "sort %s %s", tdm_type_name(kt), dir);
          c.vt = all_types[(ti + di + (int)flags) % 6];
          run_check(&c, 2, kt * 8 + c.vt, sort_one, "sort_pairs %s->%s %s", tdm_type_name(kt),
                    tdm_type_name(c.vt), dir);
          c.vt = (di + (int)flags) % 2 ? TDM_U64 : TDM_U32;
          run_check(&c, 3, kt * 8 + c.vt, argsort_one, "argsort %s idx %s %s", tdm_type_name(kt),
                    tdm_type_name(c.vt), dir);
        }
      }
    }
  }
}

/* ---- hash table ------------------------------------------------------------------ */

static const char *const dup_names[] = {"keep_first", "keep_last", "sum", "min", "max"};

/* Sorts an exported (keys, values) pair of arrays by key, for comparing two
 * exports taken in "no particular order". Keys are unique in an export. */
static void sort_export(tdm_type kt, tdm_type vt, void *k, void *v, size_t n) {
  char *pairs = xmalloc(n * 16);
  for (size_t i = 0; i < n; i++) {
    uint64_t kb = ordered(kt, get_bits(kt, k, i)), vb = get_bits(vt, v, i);
    memcpy(pairs + i * 16, &kb, 8);
    memcpy(pairs + i * 16 + 8, &vb, 8);
  }
  g_sort_type = TDM_U64;
  qsort(pairs, n, 16, cmp_ordered);
  for (size_t i = 0; i < n; i++) {
    uint64_t kb, vb;
    memcpy(&kb, pairs + i * 16, 8);
    memcpy(&vb, pairs + i * 16 + 8, 8);
    set_bits(kt, k, i, unordered(kt, kb));
    set_bits(vt, v, i, vb);
  }
  free(pairs);
}

/* Finds the same queries on both tables and compares values and found flags;
 * also the membership-only form (values_out NULL). */
static void hash_find_both(const char *what, size_t n, tdm_hash *hr, tdm_hash *hc, tdm_type kt, tdm_type vt,
                           const void *q, size_t m, int dev) {
  size_t es = ts(kt), vs = ts(vt);
  char *vr = hbuf(m * vs), *vg = hbuf(m * vs);
  uint8_t *fr = hbuf(m), *fg = hbuf(m);
  memset(vr, 0xA5, m * vs);
  memset(fr, 0xA5, m);
  void *pq = sp_in(q, m * es, dev), *pv = sp_out(m * vs, dev), *pf = sp_out(m, dev);
  tdm_status a = tdm_hash_find(hr, q, vr, fr, m), b = tdm_hash_find(hc, pq, pv, pf, m);
  same_ok(what, n, a, b);
  sp_get(vg, pv, m * vs, dev);
  sp_get(fg, pf, m, dev);
  same_bytes("found", n, fr, fg, m, 1);
  same_bytes("values", n, vr, vg, m, vs);
  /* membership only */
  void *pf2 = sp_out(m, dev);
  b = tdm_hash_find(hc, pq, NULL, pf2, m);
  ok_status("find (values_out NULL)", n, b);
  sp_get(fg, pf2, m, dev);
  same_bytes("found (values_out NULL)", n, fr, fg, m, 1);
}

/* Exports both tables; compares them as sets of (key, value) after sorting by
 * key, checks that exporting the candidate twice gives the same order, and
 * checks the count against tdm_hash_size and the capacity refusal. */
static void hash_export_both(size_t n, tdm_hash *hr, tdm_hash *hc, tdm_type kt, tdm_type vt, int dev) {
  size_t es = ts(kt), vs = ts(vt), size = tdm_hash_size(hr);
  if (tdm_hash_size(hc) != size) {
    fail("n=%zu: size: cpu %zu, %s %zu", n, size, g_cand_name, tdm_hash_size(hc));
    return;
  }
  char *kr = hbuf(size * es), *vr = hbuf(size * vs), *kg = hbuf(size * es), *vg = hbuf(size * vs);
  void *pk = sp_out(size * es, dev), *pv = sp_out(size * vs, dev);
  size_t nr = 0, nc = 0;
  tdm_status a = tdm_hash_export(hr, kr, vr, size, &nr), b = tdm_hash_export(hc, pk, pv, size, &nc);
  same_ok("tdm_hash_export", n, a, b);
  if (nr != size || nc != size) fail("n=%zu: export count: size %zu, cpu %zu, %s %zu", n, size, nr, g_cand_name, nc);
  sp_get(kg, pk, size * es, dev);
  sp_get(vg, pv, size * vs, dev);
  {
    /* Both backends export in slot order, so exporting one table twice gives
     * the same bytes (an order from atomic counters would not). The two
     * backends' orders are not compared: concurrent claims of colliding keys
     * may place them in different slots of the same run. */
    char *k2 = hbuf(size * es), *v2 = hbuf(size * vs);
    nc = 0;
    b = tdm_hash_export(hc, pk, pv, size, &nc);
    ok_status("tdm_hash_export (again)", n, b);
    sp_get(k2, pk, size * es, dev);
    sp_get(v2, pv, size * vs, dev);
    same_bytes("exported keys, second export in slot order", n, kg, k2, size, es);
    same_bytes("exported values, second export in slot order", n, vg, v2, size, vs);
  }
  sort_export(kt, vt, kr, vr, size);
  sort_export(kt, vt, kg, vg, size);
  same_bytes("exported keys", n, kr, kg, size, es);
  same_bytes("exported values", n, vr, vg, size, vs);
  for (size_t i = 1; i < size && !g_check_failed; i++)
    if (ordered(kt, get_bits(kt, kr, i - 1)) == ordered(kt, get_bits(kt, kr, i)))
      fail("n=%zu: cpu export holds a key twice", n);
  if (size > 0) {
    nr = nc = 0;
    a = tdm_hash_export(hr, kr, vr, size - 1, &nr);
    b = tdm_hash_export(hc, pk, pv, size - 1, &nc);
    same_status("tdm_hash_export (cap = size - 1)", n, a, b);
    if (a != TDM_ERR_CAPACITY || nr != size || nc != size)
      fail("n=%zu: export with cap = size - 1: %s, n_out cpu %zu %s %zu (want TDM_ERR_CAPACITY, %zu)", n,
           tdm_status_name(a), nr, g_cand_name, nc, size);
  }
}

/* The inserts of a hash or B+ tree check: a first batch of n pairs from the
 * check's distribution, then a second of n2 that repeats about half of the
 * first batch's keys (duplicates across batches) and brings new keys. */
static void gen_batches(rng *r, const check_case *c, size_t n, char *k1, char *v1, size_t n2, char *k2, char *v2) {
  size_t es = ts(c->kt);
  gen(r, c->kt, k1, n, c->d);
  gen_values(r, c->vt, v1, n);
  gen(r, c->kt, k2, n2, c->d == D_EQUAL ? D_EQUAL : D_MIXED);
  for (size_t i = 0; i < n2 && n; i += 2) memcpy(k2 + i * es, k1 + (rnext(r) % n) * es, es);
  gen_values(r, c->vt, v2, n2);
}

/* Keys for both backends: n of them in host memory (for the reference) and a
 * copy in the check's memory space (for the candidate). */
typedef struct key_batch {
  char *host;
  void *space;
  size_t n;
} key_batch;

/* Keys to erase: every third of the m queries (present and absent keys, with
 * repeats). */
static key_batch erase_keys(const char *q, size_t m, size_t es, int dev) {
  key_batch e = {NULL, NULL, m / 3 + 1};
  e.host = hbuf(e.n * es);
  for (size_t i = 0; i < e.n; i++) memcpy(e.host + i * es, q + ((i * 3) % m) * es, es);
  e.space = sp_in(e.host, e.n * es, dev);
  return e;
}

/* The checks of an erase: same status, the reference succeeded, and the same
 * number of keys erased. */
static void same_erased(const char *what, size_t n, tdm_status a, tdm_status b, size_t er, size_t ec) {
  same_ok(what, n, a, b);
  if (er != ec) fail("n=%zu: erased count: cpu %zu, %s %zu", n, er, g_cand_name, ec);
}

static void hash_one(const check_case *c, size_t si, size_t n, rng *r) {
  tdm_type kt = c->kt, vt = c->vt;
  size_t es = ts(kt), vs = ts(vt);
  size_t n2 = n / 2 + 1, m = n + n2 + 16;
  char *k1 = hbuf(n * es), *v1 = hbuf(n * vs), *k2 = hbuf(n2 * es), *v2 = hbuf(n2 * vs), *q = hbuf(m * es);
  gen_batches(r, c, n, k1, v1, n2, k2, v2);
  /* Queries: both batches, then absent and boundary keys. */
  memcpy(q, k1, n * es);
  memcpy(q + n * es, k2, n2 * es);
  gen(r, kt, q + (n + n2) * es, 16, (n & 1) ? D_BOUNDARY : D_UNIFORM);

  tdm_hash_opts o;
  memset(&o, 0, sizeof o);
  o.key_type = kt;
  o.value_type = vt;
  o.capacity = (si & 1) ? n : 0; /* growth from empty, or room from the start */
  o.on_duplicate = (tdm_dup)c->mode;
  tdm_hash *hr = NULL, *hc = NULL;
  tdm_status a = tdm_hash_create(g_ref, &o, &hr), b = tdm_hash_create(g_cand, &o, &hc);
  same_ok("tdm_hash_create", n, a, b);
  if (a != TDM_OK || b != TDM_OK) goto done;

  void *pk1 = sp_in(k1, n * es, c->dev), *pv1 = sp_in(v1, n * vs, c->dev);
  void *pk2 = sp_in(k2, n2 * es, c->dev), *pv2 = sp_in(v2, n2 * vs, c->dev);
  a = tdm_hash_insert(hr, k1, v1, n);
  b = tdm_hash_insert(hc, pk1, pv1, n);
  same_ok("insert batch 1", n, a, b);
  a = tdm_hash_insert(hr, k2, v2, n2);
  b = tdm_hash_insert(hc, pk2, pv2, n2);
  same_ok("insert batch 2", n, a, b);
  ok_status("validate (cpu) after insert", n, tdm_hash_validate(hr));
  ok_status("validate after insert", n, tdm_hash_validate(hc));
  hash_find_both("find after insert", n, hr, hc, kt, vt, q, m, c->dev);
  hash_export_both(n, hr, hc, kt, vt, c->dev);

  key_batch e = erase_keys(q, m, es, c->dev);
  size_t er = 0, ec = 0;
  a = tdm_hash_erase(hr, e.host, e.n, &er);
  b = tdm_hash_erase(hc, e.space, e.n, &ec);
  same_erased("tdm_hash_erase", n, a, b, er, ec);
  ok_status("validate after erase", n, tdm_hash_validate(hc));
  hash_find_both("find after erase", n, hr, hc, kt, vt, q, m, c->dev);
  hash_export_both(n, hr, hc, kt, vt, c->dev);
  /* Reinsert into the tombstones. */
  a = tdm_hash_insert(hr, k2, v2, n2);
  b = tdm_hash_insert(hc, pk2, pv2, n2);
  same_status("insert after erase", n, a, b);
  hash_find_both("find after reinsert", n, hr, hc, kt, vt, q, m, c->dev);

  a = tdm_hash_clear(hr);
  b = tdm_hash_clear(hc);
  same_ok("tdm_hash_clear", n, a, b);
  if (tdm_hash_size(hc) != 0) fail("n=%zu: size after clear: %zu", n, tdm_hash_size(hc));
  ok_status("validate after clear", n, tdm_hash_validate(hc));
  hash_find_both("find after clear", n, hr, hc, kt, vt, q, m, c->dev);
done:
  tdm_hash_destroy(hr);
  tdm_hash_destroy(hc);
}

/* The hash and B+ tree checks: every key type of key_types, every duplicate
 * policy, the run's distributions, on host and device arrays. */
static void run_map(const tdm_type *key_types, int n_key_types, uint64_t op, const char *name, size_fn body) {
  static const int dists[] = {D_UNIFORM, D_FEW, D_EQUAL, D_BOUNDARY, D_MIXED};
  int nd = g_minimal ? 1 : g_quick ? 2 : 5;
  for (int ti = 0; ti < n_key_types; ti++) {
    for (int pol = 0; pol < 5; pol++) {
      for (int di = 0; di < nd; di++) {
        int d = g_minimal ? D_MIXED : g_quick ? (di ? D_MIXED : D_BOUNDARY) : dists[di];
        /* Value types rotate; SUM takes integer values only. */
        tdm_type vt = pol == TDM_DUP_SUM ? int_types[(ti + di) % 4] : all_types[(ti + pol + di) % 6];
        for (int dev = 0; dev <= !g_cpu_only; dev++) {
          check_case c = {key_types[ti], vt, (unsigned)pol, d, dev};
          run_check(&c, op, key_types[ti] * 8 + vt, body, "%s %s->%s %s", name, tdm_type_name(c.kt),
                    tdm_type_name(vt), dup_names[pol]);
        }
      }
    }
  }
}

static void run_hash(void) { run_map(int_types, 4, 4, "hash", hash_one); }

/* ---- B+ tree --------------------------------------------------------------------- */

static void btree_export_both(const char *what, size_t n, tdm_btree *tr, tdm_btree *tc, tdm_type kt,
                              tdm_type vt, int dev) {
  size_t es = ts(kt), vs = ts(vt), size = tdm_btree_size(tr);
  if (tdm_btree_size(tc) != size) {
    fail("n=%zu: %s: size: cpu %zu, %s %zu", n, what, size, g_cand_name, tdm_btree_size(tc));
    return;
  }
  char *kr = hbuf(size * es), *vr = hbuf(size * vs), *kg = hbuf(size * es), *vg = hbuf(size * vs);
  void *pk = sp_out(size * es, dev), *pv = sp_out(size * vs, dev);
  size_t nr = 0, nc = 0;
  tdm_status a = tdm_btree_export(tr, kr, vr, size, &nr), b = tdm_btree_export(tc, pk, pv, size, &nc);
  same_ok(what, n, a, b);
  if (nr != size || nc != size) fail("n=%zu: %s: count: size %zu, cpu %zu, %s %zu", n, what, size, nr, g_cand_name, nc);
  sp_get(kg, pk, size * es, dev);
  sp_get(vg, pv, size * vs, dev);
  same_bytes("exported keys", n, kr, kg, size, es);
  same_bytes("exported values", n, vr, vg, size, vs);
  for (size_t i = 1; i < size && !g_check_failed; i++)
    if (ordered(kt, get_bits(kt, kr, i - 1)) >= ordered(kt, get_bits(kt, kr, i)))
      fail("n=%zu: %s: cpu export not strictly ascending at [%zu]", n, what, i);
  ok_status("validate (cpu)", n, tdm_btree_validate(tr));
  ok_status("validate", n, tdm_btree_validate(tc));
}

static void btree_queries_both(size_t n, tdm_btree *tr, tdm_btree *tc, tdm_type kt, tdm_type vt, const void *q,
                               const void *hi, size_t m, int dev) {
  size_t es = ts(kt), vs = ts(vt);
  void *pq = sp_in(q, m * es, dev), *phi = sp_in(hi, m * es, dev);
  /* find */
  char *vr = hbuf(m * vs), *vg = hbuf(m * vs);
  uint8_t *fr = hbuf(m), *fg = hbuf(m);
  void *pv = sp_out(m * vs, dev), *pf = sp_out(m, dev);
  tdm_status a = tdm_btree_find(tr, q, vr, fr, m), b = tdm_btree_find(tc, pq, pv, pf, m);
  same_ok("tdm_btree_find", n, a, b);
  sp_get(vg, pv, m * vs, dev);
  sp_get(fg, pf, m, dev);
  same_bytes("find: found", n, fr, fg, m, 1);
  same_bytes("find: values", n, vr, vg, m, vs);
  /* rank */
  uint64_t *rr = hbuf(m * 8), *rg = hbuf(m * 8);
  void *pr = sp_out(m * 8, dev);
  a = tdm_btree_rank(tr, q, rr, m);
  b = tdm_btree_rank(tc, pq, pr, m);
  same_ok("tdm_btree_rank", n, a, b);
  sp_get(rg, pr, m * 8, dev);
  same_bytes("rank", n, rr, rg, m, 8);
  /* range_count */
  a = tdm_btree_range_count(tr, q, hi, rr, m);
  b = tdm_btree_range_count(tc, pq, phi, pr, m);
  same_ok("tdm_btree_range_count", n, a, b);
  sp_get(rg, pr, m * 8, dev);
  same_bytes("range_count", n, rr, rg, m, 8);
  uint64_t total = 0;
  for (size_t i = 0; i < m; i++) total += rr[i];
  /* range: first with no room (TDM_ERR_CAPACITY when there are hits, offsets
   * filled), then with exactly the room needed. */
  uint64_t *or_ = hbuf((m + 1) * 8), *og = hbuf((m + 1) * 8);
  void *po = sp_out((m + 1) * 8, dev);
  a = tdm_btree_range(tr, q, hi, m, or_, NULL, NULL, 0);
  b = tdm_btree_range(tc, pq, phi, m, po, NULL, NULL, 0);
  same_status("tdm_btree_range (cap 0)", n, a, b);
  if (a != (total ? TDM_ERR_CAPACITY : TDM_OK))
    fail("n=%zu: range with cap 0 and %" PRIu64 " hits: %s", n, total, tdm_status_name(a));
  sp_get(og, po, (m + 1) * 8, dev);
  same_bytes("range offsets (cap 0)", n, or_, og, m + 1, 8);
  if (or_[m] != total) fail("n=%zu: range total %" PRIu64 ", range_count sum %" PRIu64, n, or_[m], total);
  char *kr = hbuf(total * es), *kg = hbuf(total * es), *vr2 = hbuf(total * vs), *vg2 = hbuf(total * vs);
  memset(kr, 0xA5, total * es);
  memset(vr2, 0xA5, total * vs);
  void *pk = sp_out(total * es, dev), *pv2 = sp_out(total * vs, dev);
  a = tdm_btree_range(tr, q, hi, m, or_, kr, vr2, total);
  b = tdm_btree_range(tc, pq, phi, m, po, pk, pv2, total);
  same_ok("tdm_btree_range", n, a, b);
  sp_get(og, po, (m + 1) * 8, dev);
  sp_get(kg, pk, total * es, dev);
  sp_get(vg2, pv2, total * vs, dev);
  same_bytes("range offsets", n, or_, og, m + 1, 8);
  same_bytes("range keys", n, kr, kg, total, es);
  same_bytes("range values", n, vr2, vg2, total, vs);
}

static void btree_one(const check_case *c, size_t si, size_t n, rng *r) {
  tdm_type kt = c->kt, vt = c->vt;
  size_t es = ts(kt), vs = ts(vt);
  (void)si;
  size_t n2 = n / 2 + 1, m = n + 32;
  char *k1 = hbuf(n * es), *v1 = hbuf(n * vs), *k2 = hbuf(n2 * es), *v2 = hbuf(n2 * vs);
  char *q = hbuf(m * es), *hi = hbuf(m * es);
  gen_batches(r, c, n, k1, v1, n2, k2, v2);
  /* Queries: stored keys, absent and boundary keys. Ranges are short (a few
   * keys of a uniform set) except two full [min, max] ranges; every fifth
   * has lo > hi. */
  memcpy(q, k1, n * es);
  gen(r, kt, q + n * es, 32, (n & 1) ? D_BOUNDARY : D_MIXED);
  uint64_t span = (es == 4 ? (uint64_t)UINT32_MAX : UINT64_MAX) / (n + 1) * 4;
  for (size_t i = 0; i < m; i++) {
    uint64_t lo = ordered(kt, get_bits(kt, q, i)), top = es == 4 ? UINT32_MAX : UINT64_MAX;
    uint64_t h = (i % 3) ? lo + rnext(r) % 4 : lo + span;
    if (h < lo || h > top) h = top;
    if (i % 5 == 4) h = lo ? lo - 1 : 0; /* lo > hi, or a one-key range at the minimum */
    if (i < 2) {
      lo = 0;
      h = top;
      set_bits(kt, q, i, unordered(kt, lo));
    }
    set_bits(kt, hi, i, unordered(kt, h));
  }

  tdm_btree_opts o = {kt, vt, (tdm_dup)c->mode};
  tdm_btree *tr = NULL, *tc = NULL;
  void *pk1 = sp_in(k1, n * es, c->dev), *pv1 = sp_in(v1, n * vs, c->dev);
  tdm_status a = tdm_btree_build(g_ref, &o, k1, v1, n, &tr), b = tdm_btree_build(g_cand, &o, pk1, pv1, n, &tc);
  same_ok("tdm_btree_build", n, a, b);
  if (a != TDM_OK || b != TDM_OK) goto done;
  btree_export_both("export after build", n, tr, tc, kt, vt, c->dev);
  btree_queries_both(n, tr, tc, kt, vt, q, hi, m, c->dev);

  void *pk2 = sp_in(k2, n2 * es, c->dev), *pv2 = sp_in(v2, n2 * vs, c->dev);
  a = tdm_btree_insert(tr, k2, v2, n2);
  b = tdm_btree_insert(tc, pk2, pv2, n2);
  same_ok("tdm_btree_insert", n, a, b);
  btree_export_both("export after insert", n, tr, tc, kt, vt, c->dev);

  key_batch e = erase_keys(q, m, es, c->dev);
  size_t er = 0, ec = 0;
  a = tdm_btree_erase(tr, e.host, e.n, &er);
  b = tdm_btree_erase(tc, e.space, e.n, &ec);
  same_erased("tdm_btree_erase", n, a, b, er, ec);
  btree_export_both("export after erase", n, tr, tc, kt, vt, c->dev);
  btree_queries_both(n, tr, tc, kt, vt, q, hi, m, c->dev);
done:
  tdm_btree_destroy(tr);
  tdm_btree_destroy(tc);
}

static void run_btree(void) { run_map(all_types, 6, 5, "btree", btree_one); }

/* ---- data operations (tandem/ops.h) ---------------------------------------------- */

static const char *const agg_names[7] = {"count", "sum", "min", "max", "first", "last", "mean"};
static const char *const join_names[4] = {"inner", "left", "semi", "anti"};

/* unique (every output), isin, group_reduce (every reduction) and join
 * (every kind) with the case's flags (c->mode: TDM_EQ_NUMERIC,
 * TDM_ORDER_FIRST_SEEN). The other side of isin and join: n / 2 + 1 keys,
 * half of them drawn from the keys, the rest from the same distribution. */
static void ops_one(const check_case *c, size_t si, size_t n, rng *r) {
  tdm_type kt = c->kt, vt = c->vt;
  size_t es = ts(kt), vs = ts(vt), m = n / 2 + 1;
  unsigned fl = c->mode;
  (void)si;
  char *k = hbuf(n * es), *v = hbuf(n * vs), *o = hbuf(m * es);
  gen(r, kt, k, n, c->d);
  gen_values(r, vt, v, n);
  gen(r, kt, o, m, c->d);
  for (size_t i = 0; i < m && n; i += 2) set_bits(kt, o, i, get_bits(kt, k, rnext(r) % n));
  void *pk = sp_in(k, n * es, c->dev), *pv = sp_in(v, n * vs, c->dev), *po = sp_in(o, m * es, c->dev);

  /* unique, every output */
  char *ur = hbuf(n * es), *ug = hbuf(n * es);
  uint64_t *xr = hbuf(4 * n * 8), *xg = hbuf(4 * n * 8);
  void *pu = sp_out(n * es, c->dev), *px = sp_out(4 * n * 8, c->dev);
  uint64_t *dx = px;
  size_t nr = 0, ng = 0;
  tdm_status a = tdm_unique(g_ref, kt, k, n, fl, ur, xr, xr + n, xr + 2 * n, &nr);
  tdm_status b = tdm_unique(g_cand, kt, pk, n, fl, pu, dx, dx + n, dx + 2 * n, &ng);
  same_ok("tdm_unique", n, a, b);
  if (nr != ng) fail("n=%zu: unique count: cpu %zu, %s %zu", n, nr, g_cand_name, ng);
  sp_get(ug, pu, n * es, c->dev);
  sp_get(xg, px, 3 * n * 8, c->dev);
  same_bytes("unique keys", n, ur, ug, nr, es);
  same_bytes("unique first index", n, xr, xg, nr, 8);
  same_bytes("unique counts", n, xr + n, xg + n, nr, 8);
  same_bytes("unique inverse", n, xr + 2 * n, xg + 2 * n, n, 8);
  uint64_t total = 0; /* the reference on its own: the counts cover every row */
  for (size_t i = 0; i < nr; i++) total += xr[n + i];
  if (total != n) fail("n=%zu: cpu unique counts sum to %" PRIu64, n, total);

  /* isin */
  uint8_t *fr = hbuf(n), *fg = hbuf(n);
  void *pf = sp_out(n, c->dev);
  a = tdm_isin(g_ref, kt, k, n, o, m, fl & TDM_EQ_NUMERIC, fr);
  b = tdm_isin(g_cand, kt, pk, n, po, m, fl & TDM_EQ_NUMERIC, pf);
  same_ok("tdm_isin", n, a, b);
  sp_get(fg, pf, n, c->dev);
  same_bytes("isin", n, fr, fg, n, 1);

  /* group_reduce, every reduction */
  for (int agg = 0; agg < 7 && !g_check_failed; agg++) {
    size_t os = agg == TDM_AGG_COUNT || agg == TDM_AGG_MEAN ? 8 : vs;
    char *gkr = hbuf(n * es), *gkg = hbuf(n * es), *gvr = hbuf(n * os), *gvg = hbuf(n * os);
    void *pgk = sp_out(n * es, c->dev), *pgv = sp_out(n * os, c->dev);
    char what[64];
    snprintf(what, sizeof what, "tdm_group_reduce %s", agg_names[agg]);
    nr = ng = 0;
    a = tdm_group_reduce(g_ref, kt, k, vt, v, n, (tdm_agg)agg, fl, gkr, gvr, &nr);
    b = tdm_group_reduce(g_cand, kt, pk, vt, pv, n, (tdm_agg)agg, fl, pgk, pgv, &ng);
    same_ok(what, n, a, b);
    if (nr != ng) fail("n=%zu: %s: groups: cpu %zu, %s %zu", n, what, nr, g_cand_name, ng);
    sp_get(gkg, pgk, n * es, c->dev);
    sp_get(gvg, pgv, n * os, c->dev);
    same_bytes("group keys", n, gkr, gkg, nr, es);
    same_bytes(what, n, gvr, gvg, nr, os);
  }

  /* join, every kind: the size first (cap 0), then with exactly that room;
   * an output past 8 rows a key (few distinct keys on both sides) is
   * compared by its size only. */
  for (int kind = 0; kind < 4 && !g_check_failed; kind++) {
    char what[48];
    snprintf(what, sizeof what, "tdm_join %s", join_names[kind]);
    nr = ng = 0;
    a = tdm_join(g_ref, (tdm_join_kind)kind, kt, k, n, o, m, fl & TDM_EQ_NUMERIC, NULL, NULL, 0, &nr);
    b = tdm_join(g_cand, (tdm_join_kind)kind, kt, pk, n, po, m, fl & TDM_EQ_NUMERIC, NULL, NULL, 0, &ng);
    same_status(what, n, a, b);
    if (nr != ng) fail("n=%zu: %s: rows: cpu %zu, %s %zu", n, what, nr, g_cand_name, ng);
    if (nr > 8 * (n + m) || g_check_failed) continue;
    uint64_t *jr = hbuf(2 * nr * 8), *jg = hbuf(2 * nr * 8);
    void *pj = sp_out(2 * nr * 8, c->dev);
    uint64_t *dj = pj;
    int pairs = kind == TDM_JOIN_INNER || kind == TDM_JOIN_LEFT;
    size_t cr = 0, cg = 0;
    a = tdm_join(g_ref, (tdm_join_kind)kind, kt, k, n, o, m, fl & TDM_EQ_NUMERIC, jr, pairs ? jr + nr : NULL, nr, &cr);
    b = tdm_join(g_cand, (tdm_join_kind)kind, kt, pk, n, po, m, fl & TDM_EQ_NUMERIC, dj, pairs ? dj + nr : NULL, nr,
                 &cg);
    same_ok(what, n, a, b);
    if (cr != nr || cg != nr) fail("n=%zu: %s: rows %zu, then cpu %zu, %s %zu", n, what, nr, cr, g_cand_name, cg);
    sp_get(jg, pj, 2 * nr * 8, c->dev);
    same_bytes("join left indices", n, jr, jg, nr, 8);
    if (pairs) same_bytes("join right indices", n, jr + nr, jg + nr, nr, 8);
  }
}

/* Every key type with default equality, and floats with numeric equality;
 * key order and first-seen order; value types rotate. */
static void run_ops(void) {
  static const int dists[] = {D_UNIFORM, D_FEW, D_EQUAL, D_BOUNDARY, D_MIXED};
  int nd = g_minimal ? 1 : g_quick ? 2 : 5;
  for (int ti = 0; ti < 6; ti++) {
    tdm_type kt = all_types[ti];
    unsigned eqs = kt == TDM_F32 || kt == TDM_F64 ? 2 : 1;
    for (unsigned eq = 0; eq < eqs; eq++) {
      for (unsigned order = 0; order < 2; order++) {
        for (int di = 0; di < nd; di++) {
          int d = g_minimal ? D_MIXED : g_quick ? (di ? D_MIXED : D_BOUNDARY) : dists[di];
          tdm_type vt = all_types[(ti + di + (int)order) % 6];
          unsigned fl = (eq ? TDM_EQ_NUMERIC : 0) | (order ? TDM_ORDER_FIRST_SEEN : 0);
          for (int dev = 0; dev <= !g_cpu_only; dev++) {
            check_case c = {kt, vt, fl, d, dev};
            run_check(&c, 6, kt * 8 + vt, ops_one, "ops %s values %s%s%s", tdm_type_name(kt), tdm_type_name(vt),
                      eq ? " numeric-eq" : "", order ? " first-seen" : "");
          }
        }
      }
    }
  }
}

/* ---- main ------------------------------------------------------------------------- */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void usage(void) {
  fprintf(stderr, "usage: tandem-selftest [--quick|--minimal] [--seed S] [--only sort|hash|btree|ops] [--shard K/N] "
                  "[--cpu-only]\n");
  exit(2);
}

int main(int argc, char **argv) {
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) g_quick = 1;
    else if (!strcmp(argv[i], "--minimal")) g_minimal = 1;
    else if (!strcmp(argv[i], "--cpu-only")) g_cpu_only = 1;
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
      char *end;
      g_seed = strtoull(argv[++i], &end, 0);
      if (*end) usage();
    } else if (!strcmp(argv[i], "--shard") && i + 1 < argc) {
      unsigned k, n;
      char tail;
      if (sscanf(argv[++i], "%u/%u%c", &k, &n, &tail) != 2 || n == 0 || k == 0 || k > n) usage();
      g_shard_k = k - 1;
      g_shard_n = n;
    } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
      only = argv[++i];
      if (strcmp(only, "sort") && strcmp(only, "hash") && strcmp(only, "btree") && strcmp(only, "ops")) usage();
    } else usage();
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  printf("tandem-selftest: tandem %s, CUDA devices: %d, seed %" PRIu64 "%s%s", tdm_version(),
         tdm_cuda_device_count(), g_seed, g_minimal ? ", minimal" : g_quick ? ", quick" : "",
         g_cpu_only ? ", cpu-only" : "");
  if (g_shard_n > 1) printf(", shard %u of %u", g_shard_k + 1, g_shard_n);
  printf("\n");

  tdm_ctx_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.backend = TDM_BACKEND_CPU;
  tdm_status s = tdm_ctx_create(&ro, &g_ref);
  if (s != TDM_OK) die("CPU context: %s: %s", tdm_status_name(s), tdm_last_error());
  tdm_ctx_opts co;
  memset(&co, 0, sizeof co);
  if (g_cpu_only) {
    co.backend = TDM_BACKEND_CPU;
    co.cpu_threads = 1;
    g_cand_name = "cpu-1thread";
  } else {
#ifndef TANDEM_SELFTEST_HAVE_CUDA
    printf("SKIP: the library was built without the CUDA backend\n");
    tdm_ctx_destroy(g_ref);
    return 77;
#endif
    co.backend = TDM_BACKEND_CUDA;
    g_cand_name = "cuda";
  }
  s = tdm_ctx_create(&co, &g_cand);
  if (s == TDM_ERR_NO_DEVICE) {
    printf("SKIP: no usable CUDA device: %s\n", tdm_last_error());
    tdm_ctx_destroy(g_ref);
    return 77;
  }
  if (s != TDM_OK) die("%s context: %s: %s", g_cand_name, tdm_status_name(s), tdm_last_error());

  struct {
    const char *name;
    void (*fn)(void);
  } parts[] = {{"sort", run_sort}, {"hash", run_hash}, {"btree", run_btree}, {"ops", run_ops}};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
    if (only && strcmp(only, parts[i].name)) continue;
    int p0 = g_passed, f0 = g_failed;
    double t0 = now_s();
    parts[i].fn();
    printf("-- %s: %d passed, %d failed in %.1f s\n", parts[i].name, g_passed - p0, g_failed - f0, now_s() - t0);
  }
  tdm_ctx_destroy(g_cand);
  tdm_ctx_destroy(g_ref);
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed ? 1 : 0;
}
