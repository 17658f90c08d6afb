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
  tdm_hash *h;   /* u64 -> u64, holding k[0..7] */
  tdm_btree *t;  /* u64 -> u64, holding k[0..7] */
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
  tdm_ctx_opts o = {(tdm_backend)3, 0, 0, NULL, 0, NULL};
  tdm_ctx *c;
  (void)f;
  return tdm_ctx_create(&o, &c);
}
CASE(ctx_negative_threads) {
  tdm_ctx_opts o = {TDM_BACKEND_CPU, -2, 0, NULL, 0, NULL};
  tdm_ctx *c;
  (void)f;
  return tdm_ctx_create(&o, &c);
}
CASE(ctx_negative_device) {
  tdm_ctx_opts o = {TDM_BACKEND_AUTO, 0, -1, NULL, 0, NULL};
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


/* ---- hash table ---- */
static tdm_hash_opts hopts(tdm_type kt, tdm_type vt, tdm_dup d) {
  tdm_hash_opts o;
  memset(&o, 0, sizeof o);
  o.key_type = kt;
  o.value_type = vt;
  o.on_duplicate = d;
  return o;
}
CASE(hash_create_null_ctx) {
  tdm_hash_opts o = hopts(TDM_U64, TDM_U64, TDM_DUP_KEEP_FIRST);
  tdm_hash *h;
  (void)f;
  return tdm_hash_create(NULL, &o, &h);
}
CASE(hash_create_null_opts) { tdm_hash *h; return tdm_hash_create(f->ctx, NULL, &h); }
CASE(hash_create_null_out) {
  tdm_hash_opts o = hopts(TDM_U64, TDM_U64, TDM_DUP_KEEP_FIRST);
  return tdm_hash_create(f->ctx, &o, NULL);
}
CASE(hash_create_bad_key_type) {
  tdm_hash_opts o = hopts((tdm_type)0, TDM_U64, TDM_DUP_KEEP_FIRST);
  tdm_hash *h;
  return tdm_hash_create(f->ctx, &o, &h);
}
CASE(hash_create_bad_value_type) {
  tdm_hash_opts o = hopts(TDM_U64, (tdm_type)77, TDM_DUP_KEEP_FIRST);
  tdm_hash *h;
  return tdm_hash_create(f->ctx, &o, &h);
}
CASE(hash_create_bad_dup) {
  tdm_hash_opts o = hopts(TDM_U64, TDM_U64, (tdm_dup)5);
  tdm_hash *h;
  return tdm_hash_create(f->ctx, &o, &h);
}
CASE(hash_create_float_keys) {
  tdm_hash_opts o = hopts(TDM_F64, TDM_U64, TDM_DUP_KEEP_FIRST);
  tdm_hash *h;
  return tdm_hash_create(f->ctx, &o, &h);
}
CASE(hash_create_sum_float_values) {
  tdm_hash_opts o = hopts(TDM_U32, TDM_F32, TDM_DUP_SUM);
  tdm_hash *h;
  return tdm_hash_create(f->ctx, &o, &h);
}
CASE(hash_create_max_load_one) {
  tdm_hash_opts o = hopts(TDM_U64, TDM_U64, TDM_DUP_KEEP_FIRST);
  tdm_hash *h;
  o.max_load = 1.0;
  return tdm_hash_create(f->ctx, &o, &h);
}
CASE(hash_create_max_load_negative) {
  tdm_hash_opts o = hopts(TDM_U64, TDM_U64, TDM_DUP_KEEP_FIRST);
  tdm_hash *h;
  o.max_load = -0.5;
  return tdm_hash_create(f->ctx, &o, &h);
}
CASE(hash_create_capacity_overflow) {
  tdm_hash_opts o = hopts(TDM_U64, TDM_U64, TDM_DUP_KEEP_FIRST);
  tdm_hash *h;
  o.capacity = SIZE_MAX;
  return tdm_hash_create(f->ctx, &o, &h);
}
CASE(hash_insert_null_table) { return tdm_hash_insert(NULL, f->k, f->v, 4); }
CASE(hash_insert_null_keys) { return tdm_hash_insert(f->h, NULL, f->v, 4); }
CASE(hash_insert_null_values) { return tdm_hash_insert(f->h, f->k, NULL, 4); }
CASE(hash_insert_overflow) { return tdm_hash_insert(f->h, f->k, f->v, f->huge); }
CASE(hash_insert_misaligned) { return tdm_hash_insert(f->h, (char *)f->k + 1, f->v, 2); }
CASE(hash_insert_device_keys) { return tdm_hash_insert(f->h, f->dev, f->v, 4); }
CASE(hash_find_null_table) { return tdm_hash_find(NULL, f->k, f->out, f->found, 4); }
CASE(hash_find_null_keys) { return tdm_hash_find(f->h, NULL, f->out, f->found, 4); }
CASE(hash_find_overlap) { return tdm_hash_find(f->h, f->k, f->k + 1, f->found, 4); }
CASE(hash_find_found_overlap) { return tdm_hash_find(f->h, f->out, f->v, (uint8_t *)f->out, 4); }
CASE(hash_find_device_out) { return tdm_hash_find(f->h, f->k, f->dev, NULL, 4); }
CASE(hash_erase_null_table) { return tdm_hash_erase(NULL, f->k, 4, NULL); }
CASE(hash_erase_null_keys) { return tdm_hash_erase(f->h, NULL, 4, NULL); }
CASE(hash_erase_overflow) { return tdm_hash_erase(f->h, f->k, f->huge, NULL); }
CASE(hash_export_null_table) { size_t n; return tdm_hash_export(NULL, f->out, f->v, 64, &n); }
CASE(hash_export_small_cap) { size_t n; return tdm_hash_export(f->h, f->out, f->out + 32, 3, &n); }
CASE(hash_export_overlap) { size_t n; return tdm_hash_export(f->h, f->out, f->out + 2, 8, &n); }
CASE(hash_clear_null) { (void)f; return tdm_hash_clear(NULL); }
CASE(hash_validate_null) { (void)f; return tdm_hash_validate(NULL); }

/* ---- B-tree ---- */
static tdm_btree_opts bopts(tdm_type kt, tdm_type vt, tdm_dup d) {
  tdm_btree_opts o;
  o.key_type = kt;
  o.value_type = vt;
  o.on_duplicate = d;
  return o;
}
CASE(btree_build_null_ctx) {
  tdm_btree_opts o = bopts(TDM_U64, TDM_U64, TDM_DUP_KEEP_FIRST);
  tdm_btree *t;
  return tdm_btree_build(NULL, &o, f->k, f->v, 4, &t);
}
CASE(btree_build_null_opts) { tdm_btree *t; return tdm_btree_build(f->ctx, NULL, f->k, f->v, 4, &t); }
CASE(btree_build_null_out) {
  tdm_btree_opts o = bopts(TDM_U64, TDM_U64, TDM_DUP_KEEP_FIRST);
  return tdm_btree_build(f->ctx, &o, f->k, f->v, 4, NULL);
}
CASE(btree_build_bad_key_type) {
  tdm_btree_opts o = bopts((tdm_type)7, TDM_U64, TDM_DUP_KEEP_FIRST);
  tdm_btree *t;
  return tdm_btree_build(f->ctx, &o, f->k, f->v, 4, &t);
}
CASE(btree_build_bad_value_type) {
  tdm_btree_opts o = bopts(TDM_U64, (tdm_type)0, TDM_DUP_KEEP_FIRST);
  tdm_btree *t;
  return tdm_btree_build(f->ctx, &o, f->k, f->v, 4, &t);
}
CASE(btree_build_bad_dup) {
  tdm_btree_opts o = bopts(TDM_U64, TDM_U64, (tdm_dup)-1);
  tdm_btree *t;
  return tdm_btree_build(f->ctx, &o, f->k, f->v, 4, &t);
}
CASE(btree_build_sum_float) {
  tdm_btree_opts o = bopts(TDM_U64, TDM_F64, TDM_DUP_SUM);
  tdm_btree *t;
  return tdm_btree_build(f->ctx, &o, f->k, f->v, 4, &t);
}
CASE(btree_build_null_keys) {
  tdm_btree_opts o = bopts(TDM_U64, TDM_U64, TDM_DUP_KEEP_FIRST);
  tdm_btree *t;
  return tdm_btree_build(f->ctx, &o, NULL, f->v, 4, &t);
}
CASE(btree_build_overflow) {
  tdm_btree_opts o = bopts(TDM_U64, TDM_U64, TDM_DUP_KEEP_FIRST);
  tdm_btree *t;
  return tdm_btree_build(f->ctx, &o, f->k, f->v, f->huge, &t);
}
CASE(btree_build_device_keys) {
  tdm_btree_opts o = bopts(TDM_U64, TDM_U64, TDM_DUP_KEEP_FIRST);
  tdm_btree *t;
  return tdm_btree_build(f->ctx, &o, f->dev, f->v, 4, &t);
}
CASE(btree_find_null_tree) { return tdm_btree_find(NULL, f->k, f->out, f->found, 4); }
CASE(btree_find_null_keys) { return tdm_btree_find(f->t, NULL, f->out, f->found, 4); }
CASE(btree_find_overlap) { return tdm_btree_find(f->t, f->k, f->k + 2, NULL, 4); }
CASE(btree_rank_null_tree) { return tdm_btree_rank(NULL, f->k, f->out, 4); }
CASE(btree_rank_null_out) { return tdm_btree_rank(f->t, f->k, NULL, 4); }
CASE(btree_rank_overlap) { return tdm_btree_rank(f->t, f->k, f->k + 1, 4); }
CASE(btree_count_null_hi) { return tdm_btree_range_count(f->t, f->k, NULL, f->out, 4); }
CASE(btree_count_overlap) { return tdm_btree_range_count(f->t, f->k, f->v, f->v + 1, 4); }
CASE(btree_count_overflow) { return tdm_btree_range_count(f->t, f->k, f->v, f->out, f->huge); }
CASE(btree_range_null_offsets) { return tdm_btree_range(f->t, f->k, f->v, 4, NULL, f->out, f->out + 32, 32); }
CASE(btree_range_small_cap) {
  uint64_t lo[1] = {0}, hi[1] = {UINT64_MAX}, offs[2];
  return tdm_btree_range(f->t, lo, hi, 1, offs, f->out, f->out + 32, 3);
}
CASE(btree_range_overlap) {
  uint64_t lo[1] = {0}, hi[1] = {UINT64_MAX}, offs[2];
  return tdm_btree_range(f->t, lo, hi, 1, offs, f->out, f->out + 2, 16);
}
CASE(btree_insert_null_tree) { return tdm_btree_insert(NULL, f->k, f->v, 4); }
CASE(btree_insert_null_values) { return tdm_btree_insert(f->t, f->k, NULL, 4); }
CASE(btree_insert_misaligned) { return tdm_btree_insert(f->t, f->k, (char *)f->v + 2, 2); }
CASE(btree_erase_null_tree) { return tdm_btree_erase(NULL, f->k, 4, NULL); }
CASE(btree_erase_null_keys) { return tdm_btree_erase(f->t, NULL, 4, NULL); }
CASE(btree_export_null_tree) { size_t n; return tdm_btree_export(NULL, f->out, f->out + 32, 32, &n); }
CASE(btree_export_small_cap) { size_t n; return tdm_btree_export(f->t, f->out, f->out + 32, 5, &n); }
CASE(btree_export_overlap) { size_t n; return tdm_btree_export(f->t, f->out, f->out + 4, 16, &n); }
CASE(btree_validate_null) { (void)f; return tdm_btree_validate(NULL); }

static const bad_case hash_cases[] = {
    {"tdm_hash_create: NULL ctx", TDM_ERR_INVALID_ARGUMENT, hash_create_null_ctx, 0},
    {"tdm_hash_create: NULL opts", TDM_ERR_INVALID_ARGUMENT, hash_create_null_opts, 0},
    {"tdm_hash_create: NULL out", TDM_ERR_INVALID_ARGUMENT, hash_create_null_out, 0},
    {"tdm_hash_create: key_type 0", TDM_ERR_INVALID_ARGUMENT, hash_create_bad_key_type, 0},
    {"tdm_hash_create: value_type 77", TDM_ERR_INVALID_ARGUMENT, hash_create_bad_value_type, 0},
    {"tdm_hash_create: on_duplicate 5", TDM_ERR_INVALID_ARGUMENT, hash_create_bad_dup, 0},
    {"tdm_hash_create: float keys", TDM_ERR_UNSUPPORTED, hash_create_float_keys, 0},
    {"tdm_hash_create: SUM of float values", TDM_ERR_UNSUPPORTED, hash_create_sum_float_values, 0},
    {"tdm_hash_create: max_load 1", TDM_ERR_INVALID_ARGUMENT, hash_create_max_load_one, 0},
    {"tdm_hash_create: max_load -0.5", TDM_ERR_INVALID_ARGUMENT, hash_create_max_load_negative, 0},
    {"tdm_hash_create: capacity SIZE_MAX", TDM_ERR_INVALID_ARGUMENT, hash_create_capacity_overflow, 0},
    {"tdm_hash_insert: NULL table", TDM_ERR_INVALID_ARGUMENT, hash_insert_null_table, 0},
    {"tdm_hash_insert: NULL keys, n > 0", TDM_ERR_INVALID_ARGUMENT, hash_insert_null_keys, 0},
    {"tdm_hash_insert: NULL values, n > 0", TDM_ERR_INVALID_ARGUMENT, hash_insert_null_values, 0},
    {"tdm_hash_insert: n * size overflows", TDM_ERR_INVALID_ARGUMENT, hash_insert_overflow, 0},
    {"tdm_hash_insert: misaligned keys", TDM_ERR_INVALID_ARGUMENT, hash_insert_misaligned, 0},
    {"tdm_hash_insert: device keys on a CPU context", TDM_ERR_INVALID_ARGUMENT, hash_insert_device_keys, 1},
    {"tdm_hash_find: NULL table", TDM_ERR_INVALID_ARGUMENT, hash_find_null_table, 0},
    {"tdm_hash_find: NULL keys, n > 0", TDM_ERR_INVALID_ARGUMENT, hash_find_null_keys, 0},
    {"tdm_hash_find: keys and values_out overlap", TDM_ERR_INVALID_ARGUMENT, hash_find_overlap, 0},
    {"tdm_hash_find: found_out overlaps keys", TDM_ERR_INVALID_ARGUMENT, hash_find_found_overlap, 0},
    {"tdm_hash_find: device values_out on a CPU context", TDM_ERR_INVALID_ARGUMENT, hash_find_device_out, 1},
    {"tdm_hash_erase: NULL table", TDM_ERR_INVALID_ARGUMENT, hash_erase_null_table, 0},
    {"tdm_hash_erase: NULL keys, n > 0", TDM_ERR_INVALID_ARGUMENT, hash_erase_null_keys, 0},
    {"tdm_hash_erase: n * size overflows", TDM_ERR_INVALID_ARGUMENT, hash_erase_overflow, 0},
    {"tdm_hash_export: NULL table", TDM_ERR_INVALID_ARGUMENT, hash_export_null_table, 0},
    {"tdm_hash_export: cap < size", TDM_ERR_CAPACITY, hash_export_small_cap, 0},
    {"tdm_hash_export: keys_out and values_out overlap", TDM_ERR_INVALID_ARGUMENT, hash_export_overlap, 0},
    {"tdm_hash_clear: NULL table", TDM_ERR_INVALID_ARGUMENT, hash_clear_null, 0},
    {"tdm_hash_validate: NULL table", TDM_ERR_INVALID_ARGUMENT, hash_validate_null, 0},
};

static const bad_case btree_cases[] = {
    {"tdm_btree_build: NULL ctx", TDM_ERR_INVALID_ARGUMENT, btree_build_null_ctx, 0},
    {"tdm_btree_build: NULL opts", TDM_ERR_INVALID_ARGUMENT, btree_build_null_opts, 0},
    {"tdm_btree_build: NULL out", TDM_ERR_INVALID_ARGUMENT, btree_build_null_out, 0},
    {"tdm_btree_build: key_type 7", TDM_ERR_INVALID_ARGUMENT, btree_build_bad_key_type, 0},
    {"tdm_btree_build: value_type 0", TDM_ERR_INVALID_ARGUMENT, btree_build_bad_value_type, 0},
    {"tdm_btree_build: on_duplicate -1", TDM_ERR_INVALID_ARGUMENT, btree_build_bad_dup, 0},
    {"tdm_btree_build: SUM of float values", TDM_ERR_UNSUPPORTED, btree_build_sum_float, 0},
    {"tdm_btree_build: NULL keys, n > 0", TDM_ERR_INVALID_ARGUMENT, btree_build_null_keys, 0},
    {"tdm_btree_build: n * size overflows", TDM_ERR_INVALID_ARGUMENT, btree_build_overflow, 0},
    {"tdm_btree_build: device keys on a CPU context", TDM_ERR_INVALID_ARGUMENT, btree_build_device_keys, 1},
    {"tdm_btree_find: NULL tree", TDM_ERR_INVALID_ARGUMENT, btree_find_null_tree, 0},
    {"tdm_btree_find: NULL keys, n > 0", TDM_ERR_INVALID_ARGUMENT, btree_find_null_keys, 0},
    {"tdm_btree_find: keys and values_out overlap", TDM_ERR_INVALID_ARGUMENT, btree_find_overlap, 0},
    {"tdm_btree_rank: NULL tree", TDM_ERR_INVALID_ARGUMENT, btree_rank_null_tree, 0},
    {"tdm_btree_rank: NULL rank_out, n > 0", TDM_ERR_INVALID_ARGUMENT, btree_rank_null_out, 0},
    {"tdm_btree_rank: keys and rank_out overlap", TDM_ERR_INVALID_ARGUMENT, btree_rank_overlap, 0},
    {"tdm_btree_range_count: NULL hi, n > 0", TDM_ERR_INVALID_ARGUMENT, btree_count_null_hi, 0},
    {"tdm_btree_range_count: hi and count_out overlap", TDM_ERR_INVALID_ARGUMENT, btree_count_overlap, 0},
    {"tdm_btree_range_count: n * size overflows", TDM_ERR_INVALID_ARGUMENT, btree_count_overflow, 0},
    {"tdm_btree_range: NULL offsets_out", TDM_ERR_INVALID_ARGUMENT, btree_range_null_offsets, 0},
    {"tdm_btree_range: total hits > cap", TDM_ERR_CAPACITY, btree_range_small_cap, 0},
    {"tdm_btree_range: keys_out and values_out overlap", TDM_ERR_INVALID_ARGUMENT, btree_range_overlap, 0},
    {"tdm_btree_insert: NULL tree", TDM_ERR_INVALID_ARGUMENT, btree_insert_null_tree, 0},
    {"tdm_btree_insert: NULL values, n > 0", TDM_ERR_INVALID_ARGUMENT, btree_insert_null_values, 0},
    {"tdm_btree_insert: misaligned values", TDM_ERR_INVALID_ARGUMENT, btree_insert_misaligned, 0},
    {"tdm_btree_erase: NULL tree", TDM_ERR_INVALID_ARGUMENT, btree_erase_null_tree, 0},
    {"tdm_btree_erase: NULL keys, n > 0", TDM_ERR_INVALID_ARGUMENT, btree_erase_null_keys, 0},
    {"tdm_btree_export: NULL tree", TDM_ERR_INVALID_ARGUMENT, btree_export_null_tree, 0},
    {"tdm_btree_export: cap < size", TDM_ERR_CAPACITY, btree_export_small_cap, 0},
    {"tdm_btree_export: keys_out and values_out overlap", TDM_ERR_INVALID_ARGUMENT, btree_export_overlap, 0},
    {"tdm_btree_validate: NULL tree", TDM_ERR_INVALID_ARGUMENT, btree_validate_null, 0},
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
  {
    tdm_hash_opts ho = hopts(TDM_U64, TDM_U64, TDM_DUP_KEEP_FIRST);
    tdm_btree_opts bo = bopts(TDM_U64, TDM_U64, TDM_DUP_KEEP_FIRST);
    cr_assert_eq(tdm_hash_create(f->ctx, &ho, &f->h), TDM_OK);
    cr_assert_eq(tdm_hash_insert(f->h, f->k, f->v, 8), TDM_OK);
    cr_assert_eq(tdm_btree_build(f->ctx, &bo, f->k, f->v, 8, &f->t), TDM_OK);
  }
}

static void fixture_fini(fixture *f) {
  tdm_hash_destroy(f->h);
  tdm_btree_destroy(f->t);
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
    /* ... and the structures. */
    cr_expect(tdm_hash_size(f->h) == 8 && tdm_hash_validate(f->h) == TDM_OK, "%s: hash changed", cases[i].name);
    cr_expect(tdm_btree_size(f->t) == 8 && tdm_btree_validate(f->t) == TDM_OK, "%s: tree changed", cases[i].name);
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

Test(bad_input, hash_and_btree) {
  fixture f;
  size_t ran;
  fixture_init(&f);
  ran = run_table(&f, hash_cases, COUNT(hash_cases));
  ran += run_table(&f, btree_cases, COUNT(btree_cases));
  /* Functions without a status answer NULL with zero. */
  cr_expect_eq(tdm_hash_size(NULL), 0);
  cr_expect_eq(tdm_btree_size(NULL), 0);
  cr_expect_eq(tdm_btree_height(NULL), 0);
  tdm_hash_destroy(NULL);
  tdm_btree_destroy(NULL);
  fprintf(stderr, "bad_input: %zu hash and B-tree cases checked\n", ran);
  fixture_fini(&f);
}

/* lo > hi is an empty range, not an error. */
Test(bad_input, reversed_range_is_empty) {
  fixture f;
  uint64_t lo[2] = {60, 5}, hi[2] = {1, 5}, cnt[2] = {9, 9}, offs[3];
  fixture_init(&f);
  cr_assert_eq(tdm_btree_range_count(f.t, lo, hi, cnt, 2), TDM_OK);
  cr_assert_eq(cnt[0], 0);
  cr_assert_eq(tdm_btree_range(f.t, lo, hi, 1, offs, f.out, f.out + 32, 0), TDM_OK);
  cr_assert(offs[0] == 0 && offs[1] == 0);
  fixture_fini(&f);
}
