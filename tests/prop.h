/*
 * prop.h: the property-testing layer shared by every test program.
 *
 *  - One seed per test program: TANDEM_SEED=<number> replays a run; otherwise
 *    a random seed is drawn. Every failure message carries the seed.
 *  - Generators for every tdm_type in the distributions sorting and hashing
 *    tests need (uniform, few distinct, all equal, sorted, reverse, organ pipe,
 *    zipf-like, boundary values: 0, all-ones, INT_MIN/INT_MAX, +-0.0, +-inf,
 *    NaNs of both signs with payloads).
 *  - Interesting sizes: 0, 1, 2, powers of two and +-1, random up to a bound.
 *  - Backends: prop_backends lists the backends to run each property on; CUDA
 *    is skipped with a printed reason when no device is usable.
 *  - Shrinking: prop_shrink reduces a failing input to a small one that still
 *    fails, by deleting chunks and then single elements.
 *  - Suites named <something>_cpu never create a CUDA context: the runs on
 *    the emulated device leave them out (tests/cuda_emu/run.sh), as the
 *    native build's run already checked them on the same C sources.
 */
#ifndef TANDEM_PROP_H
#define TANDEM_PROP_H

#include <stddef.h>
#include <stdint.h>

#include <tandem/tandem.h>

#include "../judge/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The generator tandem-judge uses too: xoshiro256** (judge/rng.h). */
typedef tdm__rng prop_rng;

/* The suite's tier, read once from TANDEM_TEST_SCALE: small (the default, what
 * `make test` runs: edge sizes plus a few random ones, one seed) or full
 * (`make check`: the full sizes and repetitions). An unknown value aborts the
 * program with a message. The tiers change sizes and repetitions, never what
 * is checked: every branch a full run reaches, a small run reaches too. */
int prop_scale_full(void);
/* full under TANDEM_TEST_SCALE=full, small otherwise. */
size_t prop_scaled(size_t small, size_t full);

/* The program's seed (TANDEM_SEED or random), printed once on first use. */
uint64_t prop_seed(void);
/* A generator for one case, derived from the program seed and a case id so a
 * failing case can be replayed alone. */
void prop_rng_init(prop_rng *r, uint64_t case_id);
uint64_t prop_next(prop_rng *r);
/* Uniform in [0, bound); bound 0 gives 0. */
uint64_t prop_below(prop_rng *r, uint64_t bound);

typedef enum prop_dist {
  PROP_UNIFORM = 0,
  PROP_FEW_DISTINCT,
  PROP_ALL_EQUAL,
  PROP_SORTED,
  PROP_REVERSE,
  PROP_ORGAN_PIPE,
  PROP_ZIPF,
  PROP_BOUNDARY,
  PROP_DIST_COUNT
} prop_dist;

/* Integer keys (t: TDM_U32 .. TDM_I64) in a small range, where the data
 * operations' dense method applies, at one of PROP_SMALL_RANGE_BASES
 * places: from zero, across zero (signed: [-s/2, s/2); unsigned wraps to
 * the top, a wide range), up to the type's largest value, from its
 * smallest; spans of 3 keys, about n, or about 4n. */
#define PROP_SMALL_RANGE_BASES 4
void prop_fill_small_range(prop_rng *r, tdm_type t, void *out, size_t n, int base);

const char *prop_dist_name(prop_dist d);

/* Fills out with n elements of type t drawn from distribution d. */
void prop_fill(prop_rng *r, tdm_type t, void *out, size_t n, prop_dist d);

/* Writes up to cap interesting sizes <= max into out (0, 1, 2, 2^k - 1, 2^k,
 * 2^k + 1, then random sizes); returns how many. */
size_t prop_sizes(prop_rng *r, size_t *out, size_t cap, size_t max);

/* Skewed join inputs, uint64 keys (bit equality), each side shuffled:
 *  - PROP_JOIN_HOT_ROW: 1000 left rows of distinct keys, half of them with
 *    one or two right matches, and one more whose key has hot right rows.
 *  - PROP_JOIN_HOT_BLOCK: hot left and hot right rows of one key among 3000
 *    left rows of other keys, half of them unmatched (so LEFT's
 *    TDM_NO_MATCH rows fall between the hot rows).
 *  - PROP_JOIN_STRETCHES: left rows in this order: 50000 unmatched, a hot
 *    one, 50000 unmatched, one with a single match, 50000 unmatched, a hot
 *    one, 50000 unmatched; hot right rows (long runs of left rows without
 *    output rows between the ones with many: INNER, SEMI).
 * The right side also holds 500 keys no left row has. hot is the number of
 * hot right rows (and of hot left rows in PROP_JOIN_HOT_BLOCK). *left and
 * *right are malloc'ed (the caller frees them). */
typedef enum prop_join_shape {
  PROP_JOIN_HOT_ROW = 0,
  PROP_JOIN_HOT_BLOCK,
  PROP_JOIN_STRETCHES,
  PROP_JOIN_SHAPES
} prop_join_shape;
const char *prop_join_shape_name(prop_join_shape s);
void prop_join_skew(prop_rng *r, prop_join_shape s, size_t hot, uint64_t **left, size_t *n_left, uint64_t **right,
                    size_t *n_right);

/* Backends available for property runs: CPU always, CUDA when usable (else a
 * one-time "skipping CUDA: <reason>" line on stderr). Returns the count. */
int prop_backends(tdm_backend out[2]);
/* Creates a context for a backend (threads 0: all cores); aborts the test on
 * failure. */
tdm_ctx *prop_ctx(tdm_backend b, int threads);
/* 1 if a CUDA device is usable; when not, why (for skip messages). */
int prop_cuda_usable(const char **why);

/* Total order of the contract on raw keys of type t, as a qsort-style
 * comparator over elements of size tdm_type_size(t). */
int prop_cmp_keys(tdm_type t, const void *a, const void *b);

/* A property over one input array: returns 1 when it holds, 0 with a reason
 * written to why when it fails. */
typedef int (*prop_fn)(void *env, const void *input, size_t n, char *why, size_t why_len);

/* Checks f on input; on failure shrinks the input (chunk and element
 * deletion) to a small failing case and fails the running Criterion test with
 * the property name, the seed, the case id, the original and shrunk sizes, and
 * the shrunk input's first elements. elem is the element size in bytes; t is
 * used to print elements. Returns 1 when the property held. */
int prop_check(const char *name, uint64_t case_id, tdm_type t, size_t elem, const void *input, size_t n,
               prop_fn f, void *env);

/* Device memory for tests of device-resident arrays. Available only when
 * tandem was built with CUDA and a device is usable; otherwise prop_dev_alloc
 * returns NULL. managed != 0 gives cudaMallocManaged memory. The copies abort
 * the test on a CUDA error. */
void *prop_dev_alloc(size_t bytes, int managed);
void prop_dev_free(void *d);
void prop_h2d(void *d, const void *h, size_t bytes);
void prop_d2h(void *h, const void *d, size_t bytes);

/* Formats the first few elements of an array of type t into buf. */
void prop_format(tdm_type t, const void *a, size_t n, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_PROP_H */
