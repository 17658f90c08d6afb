/*
 * hash_traits.cuh: hs<K, V>, the CUDA kernels' access to the shared slot
 * functions of one key / value width (include/tandem/detail/hash_slot_impl.h),
 * so the kernels can be templates over the widths. Instantiated once per
 * width by include/tandem/detail/hash_inst.h, as hash_layout.h instantiates
 * the slot functions themselves; no include guard on purpose.
 */
#define HS_TFN2(name, sfx) name##_##sfx
#define HS_TFN1(name, sfx) HS_TFN2(name, sfx)
#define HS_TFN(name) HS_TFN1(name, HS_SFX)
template <> struct hs<HS_K, HS_V> {
  typedef HS_TFN(tdm__hslot) S;
  static __device__ __forceinline__ uint64_t start(HS_K k, unsigned l) { return HS_TFN(tdm__hs_start)(k, l); }
  static __device__ __forceinline__ uint64_t home(HS_K k, unsigned l) { return HS_TFN(tdm__hs_home)(k, l); }
  static __device__ __forceinline__ uint64_t lookup(const S *s, unsigned l, HS_K k, uint64_t st, int at) {
    return HS_TFN(tdm__hs_lookup)(s, l, k, st, at);
  }
  static __device__ __forceinline__ uint64_t claim(S *s, unsigned l, HS_K k, uint64_t st, int *o) {
    return HS_TFN(tdm__hs_claim)(s, l, k, st, 1, TDM_HASH_NONE, o);
  }
  static __device__ __forceinline__ int erase_at(S *s, unsigned l, HS_K k, uint64_t at) {
    return HS_TFN(tdm__hs_erase_at)(s, l, k, at, 1);
  }
  static __device__ __forceinline__ void lane_bits(const S *s, uint64_t p, HS_K k, unsigned lane, unsigned *eq,
                                                   unsigned *em) {
    unsigned tm;
    HS_TFN(tdm__hs_lane_bits)(s, p, k, lane, 0, eq, em, &tm);
  }
  static __device__ __forceinline__ void word_bits(HS_K c, HS_K k, unsigned lane, unsigned *eq, unsigned *em) {
    unsigned tm;
    HS_TFN(tdm__hs_word_bits)(c, k, lane, eq, em, &tm);
  }
  static __device__ __forceinline__ int lookup_step(uint64_t p, unsigned eq, unsigned em, uint64_t *at) {
    return HS_TFN(tdm__hs_lookup_step)(p, eq, em, at);
  }
  static __device__ __forceinline__ void claim_bits(const S *s, uint64_t p, HS_K k, unsigned lane, unsigned *eq,
                                                    unsigned *em, unsigned *tm) {
    HS_TFN(tdm__hs_lane_bits)(s, p, k, lane, 1, eq, em, tm);
  }
  static __device__ __forceinline__ int claim_step(uint64_t p, unsigned eq, unsigned em, unsigned tm,
                                                   uint64_t *tomb, uint64_t *at, HS_K *expect) {
    return HS_TFN(tdm__hs_claim_step)(p, eq, em, tm, tomb, at, expect);
  }
  static __device__ __forceinline__ int claim_last(uint64_t tomb, uint64_t *at, HS_K *expect) {
    return HS_TFN(tdm__hs_claim_last)(tomb, at, expect);
  }
  static __device__ __forceinline__ int cas_outcome(HS_K prev, HS_K expect, HS_K k) {
    return HS_TFN(tdm__hs_claim_cas_outcome)(prev, expect, k);
  }
  static __device__ __forceinline__ HS_V combine(HS_V a, HS_V b, int dup, int vk) {
    return HS_TFN(tdm__hs_combine)(a, b, dup, vk);
  }
};

#undef HS_TFN2
#undef HS_TFN1
#undef HS_TFN
