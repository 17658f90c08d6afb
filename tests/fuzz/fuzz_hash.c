/*
 * fuzz_hash.c: libFuzzer target for the hash table. The first bytes choose
 * the key and value types, the duplicate policy, whether the table has a
 * fixed capacity, and the thread count; the rest is decoded into a sequence of
 * insert / find / erase / clear / export batches whose keys come from a small
 * alphabet (so batches collide) salted with boundary values. After every call
 * the table is compared with a reference map, and validated after every
 * mutation. A refused insert (fixed capacity) must leave the table unchanged.
 */
#include "fuzz_model.h"

static const tdm_type key_types[4] = {TDM_U32, TDM_U64, TDM_I32, TDM_I64};
static const tdm_type val_types[6] = {TDM_U32, TDM_U64, TDM_I32, TDM_I64, TDM_F32, TDM_F64};

/* A key from one byte: a small alphabet, plus the all-zero and all-ones
 * words and values near them (the likeliest internal markers). */
static uint64_t decode_key(uint8_t b, size_t width) {
  uint64_t ones = width == 4 ? 0xffffffffull : ~0ull;
  switch (b >> 5) {
  case 0: return 0;
  case 1: return ones;
  case 2: return ones - (b & 3);
  default: return (uint64_t)(b & 0x3f) * 0x9e3779b97f4a7c15ull & ones;
  }
}

static void check_against_model(tdm_hash *h, const model *m, size_t ks, size_t vs) {
  size_t n = m->n, i, got = 0;
  char *keys = (char *)malloc(n * 8 + 8), *vals = (char *)malloc(n * 8 + 8);
  uint8_t *found = (uint8_t *)malloc(n + 1);
  if (!keys || !vals || !found) abort();
  if (tdm_hash_size(h) != n) FAIL("size %zu, model %zu", tdm_hash_size(h), n);
  for (i = 0; i < n; i++) put_word(keys, i, ks, m->k[i]);
  if (tdm_hash_find(h, keys, vals, found, n) != TDM_OK) FAIL("find: %s", tdm_last_error());
  for (i = 0; i < n; i++) {
    if (!found[i]) FAIL("key %llx missing", (unsigned long long)m->k[i]);
    if (get_word(vals, i, vs) != m->v[i])
      FAIL("key %llx: value %llx, model %llx", (unsigned long long)m->k[i],
           (unsigned long long)get_word(vals, i, vs), (unsigned long long)m->v[i]);
  }
  if (tdm_hash_export(h, keys, vals, n, &got) != TDM_OK || got != n) FAIL("export: %s", tdm_last_error());
  model_check_export(m, keys, vals, n, ks, vs);
  free(keys);
  free(vals);
  free(found);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *p = data, *end = data + size;
  tdm_hash_opts o;
  tdm_hash *h = NULL;
  model m = {0};
  size_t ks, vs;
  tdm_status s;
  int steps = 0;

  if (size < 4) return 0;
  memset(&o, 0, sizeof o);
  o.key_type = key_types[p[0] % 4];
  o.value_type = val_types[(p[0] / 4) % 6];
  o.on_duplicate = (tdm_dup)(p[1] % 5);
  if (o.on_duplicate == TDM_DUP_SUM && (o.value_type == TDM_F32 || o.value_type == TDM_F64))
    o.on_duplicate = TDM_DUP_MAX;
  o.fixed_capacity = p[1] / 5 % 2;
  o.capacity = p[2] % 64;
  o.max_load = (p[2] >> 6) ? 0.25 * (p[2] >> 6) : 0;
  ks = tdm_type_size(o.key_type);
  vs = tdm_type_size(o.value_type);
  s = tdm_hash_create(fuzz_ctx(p[3] & 1), &o, &h);
  if (s != TDM_OK) FAIL("create: %s", tdm_last_error());
  p += 4;

  while (p < end && steps++ < 64) {
    uint8_t op = (uint8_t)take(&p, end, 1);
    size_t n = (size_t)take(&p, end, 1) % 24, i;
    char *keys = (char *)malloc(n * 8 + 8), *vals = (char *)malloc(n * 8 + 8);
    uint8_t *found = (uint8_t *)malloc(n + 1);
    if (!keys || !vals || !found) abort();
    for (i = 0; i < n; i++) {
      put_word(keys, i, ks, decode_key((uint8_t)take(&p, end, 1), ks));
      put_word(vals, i, vs, take(&p, end, 1) * 0x0101010101010101ull);
    }
    switch (op % 5) {
    case 0: case 1: { /* insert */
      model next = {0};
      size_t j;
      for (j = 0; j < m.n; j++) model_put(&next, m.k[j], m.v[j]);
      model_insert_batch(&next, keys, vals, n, ks, vs, o.on_duplicate, o.value_type);
      s = tdm_hash_insert(h, keys, vals, n);
      if (s == TDM_OK) {
        free(m.k);
        free(m.v);
        m = next;
      } else {
        free(next.k);
        free(next.v);
        if (!(s == TDM_ERR_CAPACITY && o.fixed_capacity)) FAIL("insert: %s: %s", tdm_status_name(s), tdm_last_error());
      }
      break;
    }
    case 2: { /* erase */
      size_t erased = 0, want = model_erase_batch(&m, keys, n, ks);
      if (tdm_hash_erase(h, keys, n, &erased) != TDM_OK) FAIL("erase: %s", tdm_last_error());
      if (erased != want) FAIL("erase: %zu erased, model %zu", erased, want);
      break;
    }
    case 3: /* find, misses included */
      if (tdm_hash_find(h, keys, vals, found, n) != TDM_OK) FAIL("find: %s", tdm_last_error());
      for (i = 0; i < n; i++) {
        long at = model_find(&m, get_word(keys, i, ks));
        if ((at >= 0) != (found[i] != 0)) FAIL("find: found flag wrong for query %zu", i);
        if (at >= 0 && get_word(vals, i, vs) != m.v[at]) FAIL("find: wrong value for query %zu", i);
        if (at < 0 && get_word(vals, i, vs) != 0) FAIL("find: a miss must write zero bits");
      }
      break;
    default: /* clear (rarely) or a capacity-too-small export */
      if (op % 2) {
        if (tdm_hash_clear(h) != TDM_OK) FAIL("clear: %s", tdm_last_error());
        m.n = 0;
      } else if (m.n > 0) {
        size_t got = 0;
        s = tdm_hash_export(h, keys, vals, m.n - 1 < n ? m.n - 1 : n, &got);
        if (m.n - 1 < n && (s != TDM_ERR_CAPACITY || got != m.n)) FAIL("export with a short buffer: %s", tdm_status_name(s));
      }
      break;
    }
    free(keys);
    free(vals);
    free(found);
    if (tdm_hash_validate(h) != TDM_OK) FAIL("validate: %s", tdm_last_error());
    check_against_model(h, &m, ks, vs);
  }
  tdm_hash_destroy(h);
  free(m.k);
  free(m.v);
  return 0;
}
