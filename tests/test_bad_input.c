/*
 * test_bad_input.c: one table of bad calls to every public function, each
 * with the exact status it must return and a non-empty tdm_last_error(). The
 * classes: NULL handle, NULL array with n > 0, bad enum values, a type the
 * structure does not support, n * size overflow, overlapping inputs and
 * outputs, misaligned arrays, a caller buffer too small, and (when CUDA is
 * built and a device usable) a device pointer on a CPU context. lo > hi is
 * not an error (an empty range) and is tested where ranges are.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "prop.h"

/* Everything a bad call may need: a CPU context, valid arrays, and valid
 * structures to misuse. */
typedef struct fixture {
  tdm_ctx *ctx;
  uint64_t k[64], v[64], out[64];
  uint8_t found[64];
  size_t huge; /* n whose byte size overflows size_t for 8-byte elements */
  void *dev;   /* device memory, or NULL */
} fixture;

typedef tdm_status (*bad_call)(fixture *f);

typedef struct bad_case {
  const char *name;
  tdm_status expect;
  bad_call call;
  int needs_device; /* skip unless f->dev */
} bad_case;

#define CASE(fn_name) static tdm_status fn_name(fixture *f)

/* ---- common ---- */
CASE(ctx_null_out) { (void)f; return tdm_ctx_create(NULL, NULL); }
CASE(ctx_bad_backend) {
  tdm_ctx_opts o = {(tdm_backend)3, 0, 0, NULL};
  tdm_ctx *c;
  (void)f;
  return tdm_ctx_create(&o, &c);
}
CASE(ctx_negative_threads) {
  tdm_ctx_opts o = {TDM_BACKEND_CPU, -2, 0, NULL};
  tdm_ctx *c;
  (void)f;
  return tdm_ctx_create(&o, &c);
}
CASE(ctx_negative_device) {
  tdm_ctx_opts o = {TDM_BACKEND_AUTO, 0, -1, NULL};
  tdm_ctx *c;
  (void)f;
  return tdm_ctx_create(&o, &c);
}

/* ---- sort ---- */
CASE(sort_null_ctx) { return tdm_sort(NULL, TDM_U64, f->k, 4, 0); }
CASE(sort_null_keys) { return tdm_sort(f->ctx, TDM_U64, NULL, 4, 0); }
CASE(sort_bad_type) { return tdm_sort(f->ctx, (tdm_type)0, f->k, 4, 0); }
CASE(sort_bad_type_high) { return tdm_sort(f->ctx, (tdm_type)100, f->k, 4, 0); }
CASE(sort_bad_flags) { return tdm_sort(f->ctx, TDM_U64, f->k, 4, 2u); }
CASE(sort_overflow) { return tdm_sort(f->ctx, TDM_U64, f->k, f->huge, 0); }
CASE(sort_misaligned) { return tdm_sort(f->ctx, TDM_U64, (char *)f->k + 4, 4, 0); }
CASE(sort_device_ptr) { return tdm_sort(f->ctx, TDM_U64, f->dev, 4, 0); }
CASE(pairs_null_ctx) { return tdm_sort_pairs(NULL, TDM_U64, f->k, TDM_U64, f->v, 4, 0); }
CASE(pairs_null_values) { return tdm_sort_pairs(f->ctx, TDM_U64, f->k, TDM_U64, NULL, 4, 0); }
CASE(pairs_bad_value_type) { return tdm_sort_pairs(f->ctx, TDM_U64, f->k, (tdm_type)-1, f->v, 4, 0); }
CASE(pairs_overlap) { return tdm_sort_pairs(f->ctx, TDM_U64, f->k, TDM_U64, f->k + 2, 4, 0); }
CASE(pairs_overflow) { return tdm_sort_pairs(f->ctx, TDM_U32, f->k, TDM_U64, f->v, f->huge, 0); }
CASE(pairs_device_values) { return tdm_sort_pairs(f->ctx, TDM_U64, f->k, TDM_U64, f->dev, 4, 0); }
CASE(argsort_null_ctx) { return tdm_argsort(NULL, TDM_U64, f->k, TDM_U64, f->out, 4, 0); }
CASE(argsort_null_keys) { return tdm_argsort(f->ctx, TDM_U64, NULL, TDM_U64, f->out, 4, 0); }
CASE(argsort_null_perm) { return tdm_argsort(f->ctx, TDM_U64, f->k, TDM_U64, NULL, 4, 0); }
CASE(argsort_float_index) { return tdm_argsort(f->ctx, TDM_U64, f->k, TDM_F64, f->out, 4, 0); }
CASE(argsort_signed_index) { return tdm_argsort(f->ctx, TDM_U64, f->k, TDM_I32, f->out, 4, 0); }
CASE(argsort_bad_index) { return tdm_argsort(f->ctx, TDM_U64, f->k, (tdm_type)9, f->out, 4, 0); }
CASE(argsort_u32_too_many) { return tdm_argsort(f->ctx, TDM_U64, f->k, TDM_U32, f->out, (size_t)1 << 33, 0); }
CASE(argsort_overlap) { return tdm_argsort(f->ctx, TDM_U64, f->k, TDM_U64, f->k + 1, 4, 0); }
CASE(argsort_bad_flags) { return tdm_argsort(f->ctx, TDM_U64, f->k, TDM_U64, f->out, 4, 0x80u); }
CASE(argsort_device_perm) { return tdm_argsort(f->ctx, TDM_U64, f->k, TDM_U64, f->dev, 4, 0); }

static const bad_case common_cases[] = {
    {"tdm_ctx_create: out NULL", TDM_ERR_INVALID_ARGUMENT, ctx_null_out, 0},
    {"tdm_ctx_create: backend not an enum value", TDM_ERR_INVALID_ARGUMENT, ctx_bad_backend, 0},
    {"tdm_ctx_create: negative threads", TDM_ERR_INVALID_ARGUMENT, ctx_negative_threads, 0},
    {"tdm_ctx_create: negative device", TDM_ERR_INVALID_ARGUMENT, ctx_negative_device, 0},
};

static const bad_case sort_cases[] = {
    {"tdm_sort: NULL ctx", TDM_ERR_INVALID_ARGUMENT, sort_null_ctx, 0},
    {"tdm_sort: NULL keys, n > 0", TDM_ERR_INVALID_ARGUMENT, sort_null_keys, 0},
    {"tdm_sort: key_type 0", TDM_ERR_INVALID_ARGUMENT, sort_bad_type, 0},
    {"tdm_sort: key_type 100", TDM_ERR_INVALID_ARGUMENT, sort_bad_type_high, 0},
    {"tdm_sort: unknown flag", TDM_ERR_INVALID_ARGUMENT, sort_bad_flags, 0},
    {"tdm_sort: n * size overflows", TDM_ERR_INVALID_ARGUMENT, sort_overflow, 0},
    {"tdm_sort: misaligned keys", TDM_ERR_INVALID_ARGUMENT, sort_misaligned, 0},
    {"tdm_sort: device keys on a CPU context", TDM_ERR_INVALID_ARGUMENT, sort_device_ptr, 1},
    {"tdm_sort_pairs: NULL ctx", TDM_ERR_INVALID_ARGUMENT, pairs_null_ctx, 0},
    {"tdm_sort_pairs: NULL values, n > 0", TDM_ERR_INVALID_ARGUMENT, pairs_null_values, 0},
    {"tdm_sort_pairs: value_type -1", TDM_ERR_INVALID_ARGUMENT, pairs_bad_value_type, 0},
    {"tdm_sort_pairs: keys and values overlap", TDM_ERR_INVALID_ARGUMENT, pairs_overlap, 0},
    {"tdm_sort_pairs: n * size overflows", TDM_ERR_INVALID_ARGUMENT, pairs_overflow, 0},
    {"tdm_sort_pairs: device values on a CPU context", TDM_ERR_INVALID_ARGUMENT, pairs_device_values, 1},
    {"tdm_argsort: NULL ctx", TDM_ERR_INVALID_ARGUMENT, argsort_null_ctx, 0},
    {"tdm_argsort: NULL keys, n > 0", TDM_ERR_INVALID_ARGUMENT, argsort_null_keys, 0},
    {"tdm_argsort: NULL perm_out, n > 0", TDM_ERR_INVALID_ARGUMENT, argsort_null_perm, 0},
    {"tdm_argsort: float index type", TDM_ERR_UNSUPPORTED, argsort_float_index, 0},
    {"tdm_argsort: signed index type", TDM_ERR_UNSUPPORTED, argsort_signed_index, 0},
    {"tdm_argsort: index_type 9", TDM_ERR_INVALID_ARGUMENT, argsort_bad_index, 0},
    {"tdm_argsort: u32 indices for n > UINT32_MAX", TDM_ERR_INVALID_ARGUMENT, argsort_u32_too_many, 0},
    {"tdm_argsort: keys and perm_out overlap", TDM_ERR_INVALID_ARGUMENT, argsort_overlap, 0},
    {"tdm_argsort: unknown flag", TDM_ERR_INVALID_ARGUMENT, argsort_bad_flags, 0},
    {"tdm_argsort: device perm_out on a CPU context", TDM_ERR_INVALID_ARGUMENT, argsort_device_perm, 1},
};

static void fixture_init(fixture *f) {
  size_t i;
  memset(f, 0, sizeof *f);
  f->ctx = prop_ctx(TDM_BACKEND_CPU, 1);
  for (i = 0; i < 64; i++) {
    f->k[i] = 64 - i;
    f->v[i] = i;
  }
  f->huge = SIZE_MAX / 8 + 1;
  f->dev = prop_dev_alloc(4096, 0);
}

static void fixture_fini(fixture *f) {
  prop_dev_free(f->dev);
  tdm_ctx_destroy(f->ctx);
}

/* Runs a table; returns the number of cases run. Inputs must be untouched by
 * every failed call. */
static size_t run_table(fixture *f, const bad_case *cases, size_t count) {
  size_t i, ran = 0;
  for (i = 0; i < count; i++) {
    uint64_t k0[64], v0[64];
    tdm_status s;
    if (cases[i].needs_device && !f->dev) continue;
    memcpy(k0, f->k, sizeof k0);
    memcpy(v0, f->v, sizeof v0);
    s = cases[i].call(f);
    cr_expect_eq(s, cases[i].expect, "%s: returned %s, expected %s (%s)", cases[i].name, tdm_status_name(s),
                 tdm_status_name(cases[i].expect), tdm_last_error());
    cr_expect(tdm_last_error()[0] != '\0', "%s: no message", cases[i].name);
    cr_expect(memcmp(k0, f->k, sizeof k0) == 0 && memcmp(v0, f->v, sizeof v0) == 0,
              "%s: a failed call changed its inputs", cases[i].name);
    ran++;
  }
  return ran;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

Test(bad_input, common_and_sort) {
  fixture f;
  size_t ran;
  fixture_init(&f);
  ran = run_table(&f, common_cases, COUNT(common_cases));
  ran += run_table(&f, sort_cases, COUNT(sort_cases));
  fprintf(stderr, "bad_input: %zu common and sort cases checked%s\n", ran,
          f.dev ? "" : " (device-pointer cases skipped: no usable CUDA device)");
  fixture_fini(&f);
}
