/* prop.c: the property-testing layer (see prop.h). */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef TANDEM_TEST_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "../include/tandem/detail/keybits.h"
#include "prop.h"

int prop_scale_full(void) {
  static int scale = -1;
  if (scale < 0) {
    const char *env = getenv("TANDEM_TEST_SCALE");
    if (!env || !*env || !strcmp(env, "small")) scale = 0;
    else if (!strcmp(env, "full")) scale = 1;
    else {
      fprintf(stderr, "prop: TANDEM_TEST_SCALE=%s: expected small or full\n", env);
      abort();
    }
    fprintf(stderr, "prop: TANDEM_TEST_SCALE=%s\n", scale ? "full" : "small");
  }
  return scale;
}

size_t prop_scaled(size_t small, size_t full) { return prop_scale_full() ? full : small; }

uint64_t prop_seed(void) {
  static int have;
  static uint64_t seed;
  if (!have) {
    const char *env = getenv("TANDEM_SEED");
    if (env && *env) {
      seed = strtoull(env, NULL, 0);
    } else {
      struct timespec ts;
      uint64_t x;
      clock_gettime(CLOCK_REALTIME, &ts);
      x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
      seed = tdm__splitmix(&x) % 1000000000ull;
    }
    have = 1;
    fprintf(stderr, "prop: TANDEM_SEED=%" PRIu64 " (set it to replay this run)\n", seed);
  }
  return seed;
}

void prop_rng_init(prop_rng *r, uint64_t case_id) { tdm__rng_init(r, prop_seed(), case_id); }

uint64_t prop_next(prop_rng *r) { return tdm__rng_next(r); }

uint64_t prop_below(prop_rng *r, uint64_t bound) { return tdm__rng_below(r, bound); }

const char *prop_dist_name(prop_dist d) {
  static const char *names[] = {"uniform",     "few_distinct", "all_equal", "sorted",
                                "reverse",     "organ_pipe",   "zipf",      "boundary"};
  return (unsigned)d < PROP_DIST_COUNT ? names[d] : "?";
}

/* Boundary values of each type, as raw bits. */
static size_t boundary_values(tdm_type t, uint64_t *out) {
  size_t k = 0;
  switch (t) {
  case TDM_U32:
    out[k++] = 0; out[k++] = 1; out[k++] = 0x7fffffffu; out[k++] = 0x80000000u; out[k++] = 0xffffffffu;
    out[k++] = 0xfffffffeu;
    break;
  case TDM_I32:
    out[k++] = 0; out[k++] = 1; out[k++] = 0xffffffffu /* -1 */; out[k++] = 0x80000000u /* INT_MIN */;
    out[k++] = 0x7fffffffu /* INT_MAX */; out[k++] = 0x80000001u;
    break;
  case TDM_U64:
    out[k++] = 0; out[k++] = 1; out[k++] = ~0ull; out[k++] = ~0ull - 1; out[k++] = 1ull << 63;
    out[k++] = (1ull << 63) - 1; out[k++] = 0xffffffffull;
    break;
  case TDM_I64:
    out[k++] = 0; out[k++] = 1; out[k++] = ~0ull /* -1 */; out[k++] = 1ull << 63 /* INT64_MIN */;
    out[k++] = (1ull << 63) - 1; out[k++] = (1ull << 63) + 1;
    break;
  case TDM_F32:
    out[k++] = 0x00000000u; /* +0.0 */
    out[k++] = 0x80000000u; /* -0.0 */
    out[k++] = 0x7f800000u; /* +inf */
    out[k++] = 0xff800000u; /* -inf */
    out[k++] = 0x7fc00000u; /* +qNaN */
    out[k++] = 0xffc00000u; /* -qNaN */
    out[k++] = 0x7f800001u; /* +sNaN, payload 1 */
    out[k++] = 0xffbfffffu; /* -NaN, big payload */
    out[k++] = 0x00000001u; /* smallest denormal */
    out[k++] = 0x80000001u;
    out[k++] = 0x3f800000u; /* 1.0 */
    out[k++] = 0xbf800000u; /* -1.0 */
    out[k++] = 0x7f7fffffu; /* FLT_MAX */
    break;
  case TDM_F64:
    out[k++] = 0; out[k++] = 1ull << 63;
    out[k++] = 0x7ff0000000000000ull; out[k++] = 0xfff0000000000000ull;
    out[k++] = 0x7ff8000000000000ull; out[k++] = 0xfff8000000000000ull;
    out[k++] = 0x7ff0000000000001ull; out[k++] = 0xfff7ffffffffffffull;
    out[k++] = 1; out[k++] = (1ull << 63) | 1;
    out[k++] = 0x3ff0000000000000ull; out[k++] = 0xbff0000000000000ull;
    out[k++] = 0x7fefffffffffffffull;
    break;
  }
  return k;
}

static void put(tdm_type t, void *out, size_t i, uint64_t v) {
  if (tdm_type_size(t) == 4) ((uint32_t *)out)[i] = (uint32_t)v;
  else ((uint64_t *)out)[i] = v;
}

/* A random value of type t; for floats, a finite number most of the time and
 * occasionally a special. */
static uint64_t random_value(prop_rng *r, tdm_type t) {
  uint64_t x = prop_next(r);
  if (t == TDM_F32) {
    float f = (float)((double)(int64_t)x / 9.2e12);
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
  }
  if (t == TDM_F64) {
    double f = (double)(int64_t)x / 9.2e12;
    uint64_t b;
    memcpy(&b, &f, 8);
    return b;
  }
  return x;
}

static int cmp_u64_bits(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Integer keys in a small range, where the dense method applies: from the
 * type's zero, across the sign (signed: [-s/2, s/2)), up to the type's
 * largest value and from its smallest, with spans of a few keys, about n,
 * and 4n. */
void prop_fill_small_range(prop_rng *r, tdm_type t, void *out, size_t n, int base) {
  int w4 = tdm_type_size(t) == 4, sgn = t == TDM_I32 || t == TDM_I64;
  uint64_t span = prop_below(r, 3) == 0 ? 3 : prop_below(r, 2) ? (uint64_t)n + 1 : 4 * (uint64_t)n + 1, lo, i;
  uint64_t top = w4 ? (sgn ? 0x7fffffffu : 0xffffffffu) : (sgn ? (uint64_t)INT64_MAX : UINT64_MAX);
  uint64_t bottom = sgn ? (w4 ? 0x80000000u : (uint64_t)1 << 63) : 0;
  lo = base == 0 ? 0 : base == 1 ? (uint64_t)0 - span / 2 : base == 2 ? top - (span - 1) : bottom;
  for (i = 0; i < n; i++) {
    uint64_t k = lo + prop_below(r, span);
    if (w4) ((uint32_t *)out)[i] = (uint32_t)k;
    else ((uint64_t *)out)[i] = k;
  }
}

void prop_fill(prop_rng *r, tdm_type t, void *out, size_t n, prop_dist d) {
  size_t i;
  uint64_t pool[16], bnd[16];
  size_t nb = boundary_values(t, bnd), k;
  int kind = (t == TDM_I32 || t == TDM_I64) ? TDM_KIND_SIGNED
             : (t == TDM_F32 || t == TDM_F64) ? TDM_KIND_FLOAT : TDM_KIND_UNSIGNED;
  int w4 = tdm_type_size(t) == 4;
  uint64_t *tmp;

  if (n == 0) return;
  for (k = 0; k < 16; k++) pool[k] = random_value(r, t);
  switch (d) {
  case PROP_UNIFORM:
    for (i = 0; i < n; i++) put(t, out, i, random_value(r, t));
    return;
  case PROP_FEW_DISTINCT:
    for (i = 0; i < n; i++) put(t, out, i, pool[prop_below(r, 5)]);
    return;
  case PROP_ALL_EQUAL:
    for (i = 0; i < n; i++) put(t, out, i, pool[0]);
    return;
  case PROP_ZIPF:
    /* Value k with probability ~ 1/(k+1): draw a uniform u, take k = 1/u - 1. */
    for (i = 0; i < n; i++) {
      double u = ((double)(prop_next(r) >> 11) + 1.0) / 9007199254740993.0;
      uint64_t rank = (uint64_t)(1.0 / u) - 1;
      put(t, out, i, rank < 16 ? pool[rank] : random_value(r, t));
    }
    return;
  case PROP_BOUNDARY:
    for (i = 0; i < n; i++)
      put(t, out, i, prop_below(r, 4) ? bnd[prop_below(r, nb)] : random_value(r, t));
    return;
  case PROP_SORTED:
  case PROP_REVERSE:
  case PROP_ORGAN_PIPE:
  default:
    break;
  }
  /* Ordered shapes: sort random values by key order through their bits. */
  tmp = (uint64_t *)malloc(n * sizeof *tmp);
  cr_assert(tmp != NULL, "prop_fill: out of memory");
  for (i = 0; i < n; i++) {
    uint64_t v = random_value(r, t);
    if (prop_below(r, 8) == 0) v = bnd[prop_below(r, nb)];
    tmp[i] = w4 ? tdm__bits32_from_key((uint32_t)v, kind) : tdm__bits64_from_key(v, kind);
  }
  qsort(tmp, n, sizeof *tmp, cmp_u64_bits);
  for (i = 0; i < n; i++) {
    size_t src = i;
    if (d == PROP_REVERSE) src = n - 1 - i;
    else if (d == PROP_ORGAN_PIPE) src = (i < (n + 1) / 2) ? 2 * i : 2 * (n - 1 - i) + 1;
    if (src >= n) src = n - 1;
    put(t, out, i, w4 ? tdm__key_from_bits32((uint32_t)tmp[src], kind) : tdm__key_from_bits64(tmp[src], kind));
  }
  free(tmp);
}

size_t prop_sizes(prop_rng *r, size_t *out, size_t cap, size_t max) {
  size_t k = 0, p;
  static const size_t fixed[] = {0, 1, 2, 3};
  for (p = 0; p < 4 && k < cap; p++)
    if (fixed[p] <= max) out[k++] = fixed[p];
  for (p = 2; p <= max && k + 3 <= cap; p <<= 1) {
    if (p - 1 > 3) out[k++] = p - 1;
    if (p > 3) out[k++] = p;
    if (p + 1 <= max && p + 1 > 3) out[k++] = p + 1;
  }
  while (k < cap && max > 0) out[k++] = (size_t)prop_below(r, max) + 1;
  return k;
}

int prop_cuda_usable(const char **why) {
  static int probed, usable;
  static char reason[256];
  if (!probed) {
    tdm_ctx_opts o = {TDM_BACKEND_CUDA, 0, 0, NULL, 0, NULL};
    tdm_ctx *c = NULL;
    tdm_status s = tdm_ctx_create(&o, &c);
    usable = (s == TDM_OK);
    if (!usable) snprintf(reason, sizeof reason, "%s: %s", tdm_status_name(s), tdm_last_error());
    tdm_ctx_destroy(c);
    probed = 1;
  }
  if (why) *why = reason;
  return usable;
}

int prop_backends(tdm_backend out[2]) {
  static int warned;
  const char *why;
  int k = 0;
  out[k++] = TDM_BACKEND_CPU;
  if (prop_cuda_usable(&why)) out[k++] = TDM_BACKEND_CUDA;
  else if (!warned) {
    fprintf(stderr, "prop: skipping CUDA runs: %s\n", why);
    warned = 1;
  }
  return k;
}

tdm_ctx *prop_ctx(tdm_backend b, int threads) {
  tdm_ctx_opts o = {b, threads, 0, NULL, 0, NULL};
  tdm_ctx *c = NULL;
  tdm_status s = tdm_ctx_create(&o, &c);
  cr_assert(s == TDM_OK, "tdm_ctx_create(backend %d) failed: %s: %s", (int)b, tdm_status_name(s),
            tdm_last_error());
  return c;
}

int prop_cmp_keys(tdm_type t, const void *a, const void *b) {
  int kind = (t == TDM_I32 || t == TDM_I64) ? TDM_KIND_SIGNED
             : (t == TDM_F32 || t == TDM_F64) ? TDM_KIND_FLOAT : TDM_KIND_UNSIGNED;
  if (tdm_type_size(t) == 4) {
    uint32_t x, y;
    memcpy(&x, a, 4);
    memcpy(&y, b, 4);
    return tdm__cmp_raw32(x, y, kind);
  } else {
    uint64_t x, y;
    memcpy(&x, a, 8);
    memcpy(&y, b, 8);
    return tdm__cmp_raw64(x, y, kind);
  }
}

void prop_format(tdm_type t, const void *a, size_t n, char *buf, size_t len) {
  size_t i, used = 0;
  buf[0] = 0;
  for (i = 0; i < n && i < 12 && used + 40 < len; i++) {
    char one[48];
    switch (t) {
    case TDM_U32: snprintf(one, sizeof one, "%" PRIu32, ((const uint32_t *)a)[i]); break;
    case TDM_I32: snprintf(one, sizeof one, "%" PRId32, ((const int32_t *)a)[i]); break;
    case TDM_U64: snprintf(one, sizeof one, "%" PRIu64, ((const uint64_t *)a)[i]); break;
    case TDM_I64: snprintf(one, sizeof one, "%" PRId64, ((const int64_t *)a)[i]); break;
    case TDM_F32: snprintf(one, sizeof one, "%a(0x%08" PRIx32 ")", (double)((const float *)a)[i],
                           ((const uint32_t *)a)[i]); break;
    case TDM_F64: snprintf(one, sizeof one, "%a(0x%016" PRIx64 ")", ((const double *)a)[i],
                           ((const uint64_t *)a)[i]); break;
    default: snprintf(one, sizeof one, "?"); break;
    }
    used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", one);
  }
  if (n > 12 && used + 8 < len) snprintf(buf + used, len - used, ", ...");
}

/* Removes [at, at + len) from a copy of (in, n). */
static void *without(const void *in, size_t n, size_t elem, size_t at, size_t len) {
  char *out = (char *)malloc((n - len) * elem + 1);
  cr_assert(out != NULL, "prop: out of memory while shrinking");
  memcpy(out, in, at * elem);
  memcpy(out + at * elem, (const char *)in + (at + len) * elem, (n - at - len) * elem);
  return out;
}

int prop_check(const char *name, uint64_t case_id, tdm_type t, size_t elem, const void *input, size_t n,
               prop_fn f, void *env) {
  char why[512], shown[768];
  char *cur;
  size_t cn = n, chunk;
  int steps = 0;

  if (f(env, input, n, why, sizeof why)) return 1;
  /* Shrink: try deleting chunks of decreasing size; keep any deletion after
   * which the property still fails. */
  cur = (char *)malloc(n * elem + 1);
  cr_assert(cur != NULL, "prop: out of memory while shrinking");
  memcpy(cur, input, n * elem);
  for (chunk = cn / 2; chunk >= 1 && steps < 2000; chunk = chunk > 1 ? chunk / 2 : 0) {
    size_t at = 0;
    while (at + chunk <= cn && steps < 2000) {
      char w2[512];
      void *cand = without(cur, cn, elem, at, chunk);
      steps++;
      if (!f(env, cand, cn - chunk, w2, sizeof w2)) {
        free(cur);
        cur = (char *)cand;
        cn -= chunk;
        memcpy(why, w2, sizeof why);
      } else {
        free(cand);
        at += chunk;
      }
    }
    if (chunk == 1) break;
  }
  prop_format(t, cur, cn, shown, sizeof shown);
  cr_log_error("property '%s' failed (TANDEM_SEED=%" PRIu64 ", case %" PRIu64 "): n = %zu, shrunk to n = %zu: "
               "[%s]: %s", name, prop_seed(), case_id, n, cn, shown, why);
  free(cur);
  cr_assert_fail("property '%s' failed: %s (TANDEM_SEED=%" PRIu64 ", case %" PRIu64 ")", name, why,
                 prop_seed(), case_id);
  return 0;
}

#ifdef TANDEM_TEST_HAVE_CUDA
void *prop_dev_alloc(size_t bytes, int managed) {
  void *d = NULL;
  cudaError_t e;
  if (!prop_cuda_usable(NULL)) return NULL;
  e = managed ? cudaMallocManaged(&d, bytes ? bytes : 1, cudaMemAttachGlobal) : cudaMalloc(&d, bytes ? bytes : 1);
  cr_assert(e == cudaSuccess, "cudaMalloc%s(%zu): %s", managed ? "Managed" : "", bytes, cudaGetErrorString(e));
  return d;
}
void prop_dev_free(void *d) {
  if (d) cudaFree(d);
}
void prop_h2d(void *d, const void *h, size_t bytes) {
  cudaError_t e = cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice);
  cr_assert(e == cudaSuccess, "cudaMemcpy H2D: %s", cudaGetErrorString(e));
}
void prop_d2h(void *h, const void *d, size_t bytes) {
  cudaError_t e = cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost);
  cr_assert(e == cudaSuccess, "cudaMemcpy D2H: %s", cudaGetErrorString(e));
}
#else
void *prop_dev_alloc(size_t bytes, int managed) {
  (void)bytes;
  (void)managed;
  return NULL;
}
void prop_dev_free(void *d) { (void)d; }
void prop_h2d(void *d, const void *h, size_t bytes) {
  (void)d; (void)h; (void)bytes;
  cr_assert_fail("prop_h2d: tandem was built without CUDA");
}
void prop_d2h(void *h, const void *d, size_t bytes) {
  (void)d; (void)h; (void)bytes;
  cr_assert_fail("prop_d2h: tandem was built without CUDA");
}
#endif

/* ---- skewed joins --------------------------------------------------------- */

const char *prop_join_shape_name(prop_join_shape s) {
  static const char *const names[PROP_JOIN_SHAPES] = {"one hot left row", "hot block of one key",
                                                      "unmatched stretches"};
  return s < PROP_JOIN_SHAPES ? names[s] : "?";
}

static void shuffle_u64(prop_rng *r, uint64_t *a, size_t n) {
  size_t i;
  for (i = n; i > 1; i--) {
    size_t j = (size_t)prop_below(r, i);
    uint64_t t = a[i - 1];
    a[i - 1] = a[j];
    a[j] = t;
  }
}

/* Keys: 1 is the hot key, even keys the left side's own (matched or not),
 * odd keys above 1 the right side's keys no left row has. */
void prop_join_skew(prop_rng *r, prop_join_shape s, size_t hot, uint64_t **left, size_t *n_left, uint64_t **right,
                    size_t *n_right) {
  enum { OWN = 3000, STRETCH = 50000, EXTRA = 500 };
  size_t nl = 0, nr = 0, i, c;
  uint64_t *l, *rk;
  size_t lcap = hot + OWN + 4 * STRETCH + 8, rcap = hot + 2 * OWN + EXTRA + 8;
  l = malloc(lcap * 8);
  rk = malloc(rcap * 8);
  cr_assert(l && rk, "prop_join_skew: out of memory");
  for (c = 0; c < hot; c++) rk[nr++] = 1;
  if (s == PROP_JOIN_STRETCHES) {
    for (c = 0; c < 4; c++) {
      for (i = 0; i < STRETCH; i++) l[nl++] = 2 + 2 * (uint64_t)(c * STRETCH + i) + 1000000;
      if (c < 3) l[nl++] = c == 1 ? 2 : 1;
    }
    rk[nr++] = 2;
  } else {
    size_t own = s == PROP_JOIN_HOT_ROW ? 1000 : OWN;
    for (i = 0; i < own; i++) {
      uint64_t k = 2 + 2 * (uint64_t)i;
      l[nl++] = k;
      if (i % 2 == 0)
        for (c = prop_below(r, 2); c < 2; c++) rk[nr++] = k; /* one or two matches */
    }
    if (s == PROP_JOIN_HOT_ROW) l[nl++] = 1;
    else
      for (c = 0; c < hot; c++) l[nl++] = 1;
    shuffle_u64(r, l, nl);
  }
  for (i = 0; i < EXTRA; i++) rk[nr++] = 3 + 2 * (uint64_t)i;
  shuffle_u64(r, rk, nr);
  *left = l;
  *n_left = nl;
  *right = rk;
  *n_right = nr;
}
