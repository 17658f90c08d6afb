/*
 * keybits.h: order-preserving maps from every key type to unsigned bits.
 *
 * Each key type maps to a u32 or u64 "bits" value such that unsigned order on
 * the bits equals the key order of the contract:
 *   unsigned  identity
 *   signed    flip the sign bit            (INT_MIN -> 0, -1 -> 0x7f..f, 0 -> 0x80..0)
 *   float     sign set:   flip every bit   (-NaN -> smallest, -0.0 -> 0x7f..f)
 *             sign clear: flip the sign bit (+0.0 -> 0x80..0, +NaN -> largest)
 * The float map is IEEE-754 totalOrder: -NaN < -inf < ... < -0.0 < +0.0 < ...
 * < +inf < +NaN, NaNs ordered by payload. It is a bijection, so the inverse
 * restores the exact input bits (payloads and signs of zero survive a sort).
 *
 * Descending order is the complement of the bits: sorting complemented bits
 * ascending with a stable sort gives a stable descending sort, which is what
 * the contract asks for (ties keep input order in both directions).
 *
 * The radix sorts on both backends, the B-tree's key comparisons and the tests
 * all use these functions.
 */
#ifndef TANDEM_KEYBITS_H
#define TANDEM_KEYBITS_H

#include "../common.h"
#include "hd.h"

/* Kind of transform, derived from a tdm_type (see tdm__key_kind). */
enum tdm__key_kind { TDM_KIND_UNSIGNED = 0, TDM_KIND_SIGNED = 1, TDM_KIND_FLOAT = 2 };

/* Transform kind of a key type. */
TDM_HD int tdm__key_kind(tdm_type t) {
  switch (t) {
  case TDM_I32: case TDM_I64: return TDM_KIND_SIGNED;
  case TDM_F32: case TDM_F64: return TDM_KIND_FLOAT;
  default: return TDM_KIND_UNSIGNED;
  }
}

TDM_HD uint32_t tdm__bits32_from_key(uint32_t raw, int kind) {
  if (kind == TDM_KIND_SIGNED) return raw ^ 0x80000000u;
  if (kind == TDM_KIND_FLOAT) {
    uint32_t mask = (uint32_t)(-(int32_t)(raw >> 31)) | 0x80000000u;
    return raw ^ mask;
  }
  return raw;
}

TDM_HD uint32_t tdm__key_from_bits32(uint32_t bits, int kind) {
  if (kind == TDM_KIND_SIGNED) return bits ^ 0x80000000u;
  if (kind == TDM_KIND_FLOAT) {
    /* bits top set: came from a non-negative float, only the sign was flipped. */
    uint32_t mask = (uint32_t)(-(int32_t)((bits >> 31) ^ 1u)) | 0x80000000u;
    return bits ^ mask;
  }
  return bits;
}

TDM_HD uint64_t tdm__bits64_from_key(uint64_t raw, int kind) {
  if (kind == TDM_KIND_SIGNED) return raw ^ 0x8000000000000000ull;
  if (kind == TDM_KIND_FLOAT) {
    uint64_t mask = (uint64_t)(-(int64_t)(raw >> 63)) | 0x8000000000000000ull;
    return raw ^ mask;
  }
  return raw;
}

TDM_HD uint64_t tdm__key_from_bits64(uint64_t bits, int kind) {
  if (kind == TDM_KIND_SIGNED) return bits ^ 0x8000000000000000ull;
  if (kind == TDM_KIND_FLOAT) {
    uint64_t mask = (uint64_t)(-(int64_t)((bits >> 63) ^ 1u)) | 0x8000000000000000ull;
    return bits ^ mask;
  }
  return bits;
}

/* Forward map with the direction folded in: desc != 0 complements the bits. */
TDM_HD uint32_t tdm__sortbits32(uint32_t raw, int kind, int desc) {
  uint32_t b = tdm__bits32_from_key(raw, kind);
  return desc ? ~b : b;
}
TDM_HD uint32_t tdm__unsortbits32(uint32_t b, int kind, int desc) {
  return tdm__key_from_bits32(desc ? ~b : b, kind);
}
TDM_HD uint64_t tdm__sortbits64(uint64_t raw, int kind, int desc) {
  uint64_t b = tdm__bits64_from_key(raw, kind);
  return desc ? ~b : b;
}
TDM_HD uint64_t tdm__unsortbits64(uint64_t b, int kind, int desc) {
  return tdm__key_from_bits64(desc ? ~b : b, kind);
}

/* Three-way comparison of two raw keys of width 4 or 8 bytes in key order;
 * used by the B-tree and the tests. Returns -1, 0 or 1. */
TDM_HD int tdm__cmp_raw32(uint32_t a, uint32_t b, int kind) {
  uint32_t x = tdm__bits32_from_key(a, kind), y = tdm__bits32_from_key(b, kind);
  return (x > y) - (x < y);
}
TDM_HD int tdm__cmp_raw64(uint64_t a, uint64_t b, int kind) {
  uint64_t x = tdm__bits64_from_key(a, kind), y = tdm__bits64_from_key(b, kind);
  return (x > y) - (x < y);
}

#endif /* TANDEM_KEYBITS_H */
