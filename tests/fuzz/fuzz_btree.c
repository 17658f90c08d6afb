/*
 * fuzz_btree.c: libFuzzer target for the B-tree. The first bytes choose the
 * key type (floats included), value type, duplicate policy and thread count;
 * the rest is decoded into build / insert / erase / find / rank / range_count /
 * range / export batches over a small key alphabet salted with boundary values
 * (0, all-ones, -0.0, NaNs). Every result is compared with a reference map and
 * the tree is validated after every mutation.
 */
#include "fuzz_model.h"

static const tdm_type types[6] = {TDM_U32, TDM_U64, TDM_I32, TDM_I64, TDM_F32, TDM_F64};

static uint64_t decode_key(uint8_t b, tdm_type t) {
  size_t w = tdm_type_size(t);
  uint64_t ones = w == 4 ? 0xffffffffull : ~0ull, sign = w == 4 ? 0x80000000ull : 1ull << 63;
  switch (b >> 5) {
  case 0: return 0;
  case 1: return ones;
  case 2: return sign | (b & 3); /* -0.0 and tiny negatives / INT_MIN */
  case 3: return w == 4 ? 0x7fc00000ull | (b & 7) : 0x7ff8000000000000ull | (b & 7); /* NaNs */
  default: return (uint64_t)(b & 0x7f) * 0x9e3779b97f4a7c15ull & ones;
  }
}

/* Key order of the contract on raw words. */
static int key_cmp(tdm_type t, uint64_t a, uint64_t b) { return value_cmp(t, a, b); }

static size_t model_rank(const model *m, tdm_type t, uint64_t q) {
  size_t i, r = 0;
  for (i = 0; i < m->n; i++) r += key_cmp(t, m->k[i], q) < 0;
  return r;
}

static size_t model_count(const model *m, tdm_type t, uint64_t lo, uint64_t hi) {
  size_t i, c = 0;
  for (i = 0; i < m->n; i++) c += key_cmp(t, lo, m->k[i]) <= 0 && key_cmp(t, m->k[i], hi) <= 0;
  return c;
}

static void check_all(tdm_btree *b, const model *m, tdm_type kt, tdm_type vt) {
  size_t ks = tdm_type_size(kt), vs = tdm_type_size(vt), n = m->n, got = 0, i;
  char *keys = (char *)malloc(n * 8 + 8), *vals = (char *)malloc(n * 8 + 8);
  if (!keys || !vals) abort();
  if (tdm_btree_size(b) != n) FAIL("size %zu, model %zu", tdm_btree_size(b), n);
  if ((n == 0) != (tdm_btree_height(b) == 0)) FAIL("height %u with %zu keys", tdm_btree_height(b), n);
  if (tdm_btree_export(b, keys, vals, n, &got) != TDM_OK || got != n) FAIL("export: %s", tdm_last_error());
  model_check_export(m, keys, vals, n, ks, vs);
  for (i = 1; i < n; i++)
    if (key_cmp(kt, get_word(keys, i - 1, ks), get_word(keys, i, ks)) >= 0) FAIL("export not ascending at %zu", i);
  free(keys);
  free(vals);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *p = data, *end = data + size;
  tdm_btree_opts o;
  tdm_btree *b = NULL;
  model m = {0};
  size_t ks, vs;
  tdm_status s;
  tdm_ctx *ctx;
  int steps = 0;

  if (size < 3) return 0;
  memset(&o, 0, sizeof o);
  o.key_type = types[p[0] % 6];
  o.value_type = types[(p[0] / 6) % 6];
  o.on_duplicate = (tdm_dup)(p[1] % 5);
  if (o.on_duplicate == TDM_DUP_SUM && (o.value_type == TDM_F32 || o.value_type == TDM_F64))
    o.on_duplicate = TDM_DUP_MIN;
  ctx = fuzz_ctx(p[2] & 1);
  ks = tdm_type_size(o.key_type);
  vs = tdm_type_size(o.value_type);
  p += 3;

  while (p < end && steps++ < 48) {
    uint8_t op = (uint8_t)take(&p, end, 1);
    size_t n = (size_t)take(&p, end, 1) % 40, i;
    char *keys = (char *)malloc(n * 8 + 8), *vals = (char *)malloc(n * 8 + 8), *hi = (char *)malloc(n * 8 + 8);
    uint8_t *found = (uint8_t *)malloc(n + 1);
    uint64_t *out = (uint64_t *)malloc((n + 1) * 8);
    int mutated = 0;
    if (!keys || !vals || !hi || !found || !out) abort();
    for (i = 0; i < n; i++) {
      put_word(keys, i, ks, decode_key((uint8_t)take(&p, end, 1), o.key_type));
      put_word(hi, i, ks, decode_key((uint8_t)take(&p, end, 1), o.key_type));
      put_word(vals, i, vs, take(&p, end, 1) * 0x0101010101010101ull);
    }
    if (!b || op % 8 == 0) { /* (re)build from this batch */
      model next = {0};
      tdm_btree *nb = NULL;
      model_insert_batch(&next, keys, vals, n, ks, vs, o.on_duplicate, o.value_type);
      s = tdm_btree_build(ctx, &o, keys, vals, n, &nb);
      if (s != TDM_OK) FAIL("build: %s", tdm_last_error());
      tdm_btree_destroy(b);
      b = nb;
      free(m.k);
      free(m.v);
      m = next;
      mutated = 1;
    } else {
      switch (op % 8) {
      case 1: case 2: /* insert */
        model_insert_batch(&m, keys, vals, n, ks, vs, o.on_duplicate, o.value_type);
        if (tdm_btree_insert(b, keys, vals, n) != TDM_OK) FAIL("insert: %s", tdm_last_error());
        mutated = 1;
        break;
      case 3: { /* erase */
        size_t erased = 0, want = model_erase_batch(&m, keys, n, ks);
        if (tdm_btree_erase(b, keys, n, &erased) != TDM_OK) FAIL("erase: %s", tdm_last_error());
        if (erased != want) FAIL("erase: %zu erased, model %zu", erased, want);
        mutated = 1;
        break;
      }
      case 4: /* find */
        if (tdm_btree_find(b, keys, vals, found, n) != TDM_OK) FAIL("find: %s", tdm_last_error());
        for (i = 0; i < n; i++) {
          long at = model_find(&m, get_word(keys, i, ks));
          if ((at >= 0) != (found[i] != 0)) FAIL("find: flag wrong for query %zu", i);
          if (at >= 0 && get_word(vals, i, vs) != m.v[at]) FAIL("find: wrong value for query %zu", i);
        }
        break;
      case 5: /* rank */
        if (tdm_btree_rank(b, keys, out, n) != TDM_OK) FAIL("rank: %s", tdm_last_error());
        for (i = 0; i < n; i++)
          if (out[i] != model_rank(&m, o.key_type, get_word(keys, i, ks))) FAIL("rank wrong for query %zu", i);
        break;
      case 6: /* range_count, lo > hi included */
        if (tdm_btree_range_count(b, keys, hi, out, n) != TDM_OK) FAIL("range_count: %s", tdm_last_error());
        for (i = 0; i < n; i++)
          if (out[i] != model_count(&m, o.key_type, get_word(keys, i, ks), get_word(hi, i, ks)))
            FAIL("range_count wrong for query %zu", i);
        break;
      default: { /* range into a buffer that may be too small */
        size_t total = 0, cap;
        uint64_t *offs = (uint64_t *)malloc((n + 1) * 8);
        char *rk, *rv;
        for (i = 0; i < n; i++) total += model_count(&m, o.key_type, get_word(keys, i, ks), get_word(hi, i, ks));
        cap = (op & 0x80) && total ? total - 1 : total;
        rk = (char *)malloc(cap * 8 + 8);
        rv = (char *)malloc(cap * 8 + 8);
        if (!offs || !rk || !rv) abort();
        s = tdm_btree_range(b, keys, hi, n, offs, rk, rv, cap);
        if (cap < total) {
          if (s != TDM_ERR_CAPACITY) FAIL("range: short buffer gave %s", tdm_status_name(s));
        } else if (s != TDM_OK) {
          FAIL("range: %s", tdm_last_error());
        }
        if (offs[0] != 0) FAIL("range: offsets[0] = %llu", (unsigned long long)offs[0]);
        for (i = 0; i < n; i++) {
          size_t want = model_count(&m, o.key_type, get_word(keys, i, ks), get_word(hi, i, ks)), j;
          if (offs[i + 1] - offs[i] != want) FAIL("range: query %zu has %llu hits, model %zu", i,
                                                  (unsigned long long)(offs[i + 1] - offs[i]), want);
          for (j = offs[i]; s == TDM_OK && j < offs[i + 1]; j++) {
            long at = model_find(&m, get_word(rk, j, ks));
            if (at < 0 || m.v[at] != get_word(rv, j, vs)) FAIL("range: hit %zu not in the model", j);
            if (j > offs[i] && key_cmp(o.key_type, get_word(rk, j - 1, ks), get_word(rk, j, ks)) >= 0)
              FAIL("range: hits of query %zu not ascending", i);
          }
        }
        free(offs);
        free(rk);
        free(rv);
        break;
      }
      }
    }
    free(keys);
    free(vals);
    free(hi);
    free(found);
    free(out);
    if (mutated && tdm_btree_validate(b) != TDM_OK) FAIL("validate: %s", tdm_last_error());
    check_all(b, &m, o.key_type, o.value_type);
  }
  tdm_btree_destroy(b);
  free(m.k);
  free(m.v);
  return 0;
}
