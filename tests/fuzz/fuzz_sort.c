/*
 * fuzz_sort.c: libFuzzer target for the sorts. The first byte chooses the key
 * type, the operation (sort, sort_pairs, argsort), the direction and the
 * thread count; the remaining bytes are the keys. Every result is checked
 * against a stable reference (qsort by key order, then input index).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_model.h"

static const tdm_type types[6] = {TDM_U32, TDM_U64, TDM_I32, TDM_I64, TDM_F32, TDM_F64};

typedef struct item {
  uint64_t bits; /* order-preserving bits of the key */
  size_t idx;
} item;

static int cmp_item(const void *pa, const void *pb) {
  const item *a = (const item *)pa, *b = (const item *)pb;
  if (a->bits != b->bits) return a->bits < b->bits ? -1 : 1;
  return (a->idx > b->idx) - (a->idx < b->idx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tdm_type t;
  size_t ks, n, i;
  int op, desc, kind;
  unsigned flags;
  tdm_ctx *ctx;
  char *keys, *orig;
  uint64_t *vals;
  item *ref;
  tdm_status s;

  if (size < 1) return 0;
  t = types[data[0] % 6];
  op = (data[0] / 6) % 3;
  desc = (data[0] / 18) % 2;
  flags = desc ? TDM_SORT_DESCENDING : 0;
  ctx = fuzz_ctx((data[0] / 36) % 2);
  ks = tdm_type_size(t);
  kind = kind_of(t);
  n = (size - 1) / ks;
  keys = (char *)malloc(n * ks + 1);
  orig = (char *)malloc(n * ks + 1); /* an aligned copy of the input keys */
  vals = (uint64_t *)malloc(n * 8 + 8);
  ref = (item *)malloc(n * sizeof *ref + 1);
  if (!keys || !orig || !vals || !ref) abort();
  memcpy(keys, data + 1, n * ks);
  memcpy(orig, data + 1, n * ks);
  for (i = 0; i < n; i++) {
    uint64_t raw = 0;
    memcpy(&raw, keys + i * ks, ks);
    ref[i].bits = ks == 4 ? tdm__sortbits32((uint32_t)raw, kind, desc) : tdm__sortbits64(raw, kind, desc);
    ref[i].idx = i;
    vals[i] = i * 0x9e3779b97f4a7c15ull;
  }
  qsort(ref, n, sizeof *ref, cmp_item);

  if (op == 0) s = tdm_sort(ctx, t, keys, n, flags);
  else if (op == 1) s = tdm_sort_pairs(ctx, t, keys, TDM_U64, vals, n, flags);
  else s = tdm_argsort(ctx, t, orig, TDM_U64, vals, n, flags);
  if (s != TDM_OK) {
    fprintf(stderr, "sort op %d failed: %s\n", op, tdm_last_error());
    abort();
  }
  for (i = 0; i < n; i++) {
    size_t src = ref[i].idx;
    if (op != 2 && memcmp(keys + i * ks, orig + src * ks, ks) != 0) {
      fprintf(stderr, "op %d type %s desc %d: key %zu is not input key %zu\n", op, tdm_type_name(t), desc, i, src);
      abort();
    }
    if (op == 1 && vals[i] != src * 0x9e3779b97f4a7c15ull) {
      fprintf(stderr, "sort_pairs: value %zu is not input %zu's (unstable)\n", i, src);
      abort();
    }
    if (op == 2 && vals[i] != src) {
      fprintf(stderr, "argsort: perm[%zu] = %llu, expected %zu\n", i, (unsigned long long)vals[i], src);
      abort();
    }
  }
  if (op == 2 && memcmp(keys, orig, n * ks) != 0) {
    fprintf(stderr, "argsort changed its keys\n");
    abort();
  }
  free(keys);
  free(orig);
  free(vals);
  free(ref);
  return 0;
}
