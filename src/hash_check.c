/*
 * hash_check.c: the hash table's invariants (tandem/detail/hash_layout.h) checked on a
 * host copy of its slots against the common counters. Backend-neutral: the
 * CPU backend passes its table, the CUDA backend a host copy of its device
 * table. Width-generic (slot words read by size): validation is a diagnostic,
 * not a hot path.
 */
#include <string.h>

#include "backend.h"

/* Key and value words of slot i: the key at offset 0, the value at half the
 * slot (C's layout of { key; value; } for every width pair). */
static uint64_t slot_word(const tdm_hash *h, const unsigned char *s, uint64_t i, int value) {
  const unsigned char *p = s + i * h->slot_bytes + (value ? h->slot_bytes / 2u : 0u);
  unsigned w = value ? h->vs : h->ks;
  if (w == 4) {
    uint32_t x;
    memcpy(&x, p, 4);
    return x;
  } else {
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
  }
}

tdm_status tdm__hash_check_slots(const tdm_hash *h, const void *slots) {
  static const char fn[] = "tdm_hash_validate";
  const unsigned char *s = (const unsigned char *)slots;
  unsigned l = h->log2cap, group;
  uint64_t cap, mask, i, tomb;
  size_t live = 0, tombs = 0, side = 0;

  if (h->log2cap < TDM_HASH_MIN_LOG2 || h->log2cap > TDM_HASH_MAX_LOG2 || h->cap != (size_t)1 << h->log2cap)
    return tdm__fail(TDM_ERR_CORRUPT, "%s: slot count %zu is not 2^%u", fn, h->cap, h->log2cap);
  if (h->limit != (size_t)tdm__hash_limit(h->log2cap, h->max_load) || h->limit >= h->cap)
    return tdm__fail(TDM_ERR_CORRUPT, "%s: load limit %zu does not match %zu slots at max_load %g", fn, h->limit,
                     h->cap, h->max_load);
  cap = (uint64_t)1 << l;
  mask = cap - 1u;
  group = 64u / h->slot_bytes;
  tomb = h->ks == 4 ? (uint64_t)TDM_HASH_TOMB32 : (uint64_t)TDM_HASH_TOMB64;
  for (i = 0; i < cap; i++) {
    uint64_t k = slot_word(h, s, i, 0), home, p, steps = 0;
    if (k == TDM_HASH_EMPTY || k == tomb) {
      uint64_t v = slot_word(h, s, i, 1);
      if (v != 0)
        return tdm__fail(TDM_ERR_CORRUPT, "%s: slot %llu is %s but its value bits are 0x%llx, not 0", fn,
                         (unsigned long long)i, k == tomb ? "a tombstone" : "empty", (unsigned long long)v);
      tombs += k == tomb;
      continue;
    }
    live++;
    home = tdm__hash_home(tdm__hash_mix(k), l, group);
    for (p = home; p != i; p = tdm__hash_next(p, mask)) {
      uint64_t kp = slot_word(h, s, p, 0);
      if (kp == TDM_HASH_EMPTY)
        return tdm__fail(TDM_ERR_CORRUPT,
                         "%s: slot %llu: key 0x%llx is unreachable from its home slot %llu, because slot %llu "
                         "on its probe path is empty",
                         fn, (unsigned long long)i, (unsigned long long)k, (unsigned long long)home,
                         (unsigned long long)p);
      if (kp == k)
        return tdm__fail(TDM_ERR_CORRUPT, "%s: slot %llu: key 0x%llx is stored twice, also in slot %llu", fn,
                         (unsigned long long)i, (unsigned long long)k, (unsigned long long)p);
      if (++steps > cap)
        return tdm__fail(TDM_ERR_CORRUPT, "%s: slot %llu: probe path of key 0x%llx does not end", fn,
                         (unsigned long long)i, (unsigned long long)k);
    }
  }
  for (i = cap; i < cap + 2u; i++) {
    uint64_t k = slot_word(h, s, i, 0), v = slot_word(h, s, i, 1);
    if (k > 1u)
      return tdm__fail(TDM_ERR_CORRUPT, "%s: side slot %llu (key 0x%llx) has present flag 0x%llx, not 0 or 1", fn,
                       (unsigned long long)i, (unsigned long long)(i == cap ? (uint64_t)TDM_HASH_EMPTY : tomb),
                       (unsigned long long)k);
    if (!k && v != 0)
      return tdm__fail(TDM_ERR_CORRUPT, "%s: side slot %llu is absent but its value bits are 0x%llx, not 0", fn,
                       (unsigned long long)i, (unsigned long long)v);
    side += (size_t)k;
  }
  if (side != h->side)
    return tdm__fail(TDM_ERR_CORRUPT, "%s: side slots (slots %llu, %llu) hold %zu keys, the table counts %zu", fn,
                     (unsigned long long)cap, (unsigned long long)cap + 1u, side, h->side);
  if (live + side != h->size)
    return tdm__fail(TDM_ERR_CORRUPT, "%s: %zu live keys in slots 0..%llu and the side slots, but size is %zu", fn,
                     live + side, (unsigned long long)cap + 1u, h->size);
  if (tombs != h->tombs)
    return tdm__fail(TDM_ERR_CORRUPT, "%s: %zu tombstones in slots 0..%llu, but the table counts %zu", fn, tombs,
                     (unsigned long long)mask, h->tombs);
  if (live + tombs > h->limit)
    return tdm__fail(TDM_ERR_CORRUPT, "%s: %zu live keys + %zu tombstones in slots 0..%llu exceed the load limit %zu",
                     fn, live, tombs, (unsigned long long)mask, h->limit);
  return TDM_OK;
}
