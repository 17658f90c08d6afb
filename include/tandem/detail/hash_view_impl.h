/*
 * hash_view_impl.h: the view's hash lookup (tandem/view.h) for one key /
 * value width: tdm__hview_find_<HS_SFX>, 1 and *val = the value's bits when
 * key_bits (its low 32 bits for 32-bit keys) is found, else 0. Instantiated
 * once per width by hash_inst.h; no include guard on purpose.
 */
#define HV_CAT2(a, b) a##_##b
#define HV_CAT(a, b) HV_CAT2(a, b)

TDM_VIEW_FN int HV_CAT(tdm__hview_find, HS_SFX)(const void *slots, uint32_t log2cap, uint64_t key_bits,
                                                uint64_t *val) {
  const HV_CAT(tdm__hslot, HS_SFX) *s = (const HV_CAT(tdm__hslot, HS_SFX) *)slots;
  HS_K k = (HS_K)key_bits;
  uint64_t pos = HV_CAT(tdm__hs_lookup, HS_SFX)(s, log2cap, k, HV_CAT(tdm__hs_start, HS_SFX)(k, log2cap), 0);
  if (pos == TDM_HASH_NONE) return 0;
  *val = s[pos].v;
  return 1;
}

#undef HV_CAT2
#undef HV_CAT
