/*
 * ops_keys.h: per-element logic of the data operations (tandem/ops.h) that
 * both backends and the tests share: the canonical form of a key under the
 * call's equality, and the folds of tdm_group_reduce.
 *
 * Under bit equality a key is its own canonical form. Under TDM_EQ_NUMERIC a
 * float key maps -0.0 to +0.0 and every NaN to the positive quiet NaN with no
 * payload, so that equal keys become equal bits: hashing and sorting the
 * canonical bits then find the same groups, and the canonical NaN sorts after
 * +inf (where numpy puts NaN).
 */
#ifndef TANDEM_OPS_KEYS_H
#define TANDEM_OPS_KEYS_H

#include "hd.h"
#include "keybits.h"

TDM_HD uint32_t tdm__ops_canon32(uint32_t raw, int numeric_float) {
  uint32_t mag = raw & 0x7fffffffu;
  if (!numeric_float) return raw;
  if (mag == 0) return 0;
  if (mag > 0x7f800000u) return 0x7fc00000u;
  return raw;
}

TDM_HD uint64_t tdm__ops_canon64(uint64_t raw, int numeric_float) {
  uint64_t mag = raw & 0x7fffffffffffffffull;
  if (!numeric_float) return raw;
  if (mag == 0) return 0;
  if (mag > 0x7ff0000000000000ull) return 0x7ff8000000000000ull;
  return raw;
}

/* The value kinds of the folds: how SUM adds and MIN / MAX compare. */
enum { TDM__OPS_V_UINT = 0, TDM__OPS_V_SINT = 1, TDM__OPS_V_F32 = 2, TDM__OPS_V_F64 = 3 };

/* SUM of two values of a 4-byte type given as bits: wrapping for integers,
 * an IEEE add for float32 whose NaN results are the canonical quiet NaN:
 * which operand's NaN payload an add keeps depends on the instruction and on
 * operand order the compiler may swap, and GPUs return a canonical NaN, so
 * only a canonical NaN is the same bits everywhere. */
TDM_HD uint32_t tdm__ops_add32(uint32_t a, uint32_t b, int vkind) {
  if (vkind == TDM__OPS_V_F32) {
    union { uint32_t u; float f; } x, y;
    x.u = a;
    y.u = b;
    x.f = x.f + y.f;
    return x.f != x.f ? 0x7fc00000u : x.u;
  }
  return a + b;
}
TDM_HD uint64_t tdm__ops_add64(uint64_t a, uint64_t b, int vkind) {
  if (vkind == TDM__OPS_V_F64) {
    union { uint64_t u; double f; } x, y;
    x.u = a;
    y.u = b;
    x.f = x.f + y.f;
    return x.f != x.f ? 0x7ff8000000000000ull : x.u;
  }
  return a + b;
}

/* A float sum as written: a NaN (a one-value group's own NaN too) becomes
 * the canonical quiet NaN; integers and other floats are kept. */
TDM_HD uint32_t tdm__ops_sum_out32(uint32_t a, int vkind) {
  return vkind == TDM__OPS_V_F32 && (a & 0x7fffffffu) > 0x7f800000u ? 0x7fc00000u : a;
}
TDM_HD uint64_t tdm__ops_sum_out64(uint64_t a, int vkind) {
  return vkind == TDM__OPS_V_F64 && (a & 0x7fffffffffffffffull) > 0x7ff0000000000000ull ? 0x7ff8000000000000ull : a;
}

/* The canonical quiet NaN for a NaN float64 (MEAN's result), else d. */
TDM_HD double tdm__ops_canon_f64(double d) {
  union { uint64_t u; double f; } x;
  x.f = d;
  if (d != d) x.u = 0x7ff8000000000000ull;
  return x.f;
}

/* A value as float64 (MEAN). */
TDM_HD double tdm__ops_to_f64_32(uint32_t v, int vkind) {
  union { uint32_t u; float f; } x;
  x.u = v;
  if (vkind == TDM__OPS_V_F32) return (double)x.f;
  if (vkind == TDM__OPS_V_SINT) return (double)(int32_t)v;
  return (double)v;
}
TDM_HD double tdm__ops_to_f64_64(uint64_t v, int vkind) {
  union { uint64_t u; double f; } x;
  x.u = v;
  if (vkind == TDM__OPS_V_F64) return x.f;
  if (vkind == TDM__OPS_V_SINT) return (double)(int64_t)v;
  return (double)v;
}

/* MIN / MAX in the contract's key order (keybits.h kinds). */
TDM_HD uint32_t tdm__ops_min32(uint32_t a, uint32_t b, int kind) { return tdm__cmp_raw32(b, a, kind) < 0 ? b : a; }
TDM_HD uint32_t tdm__ops_max32(uint32_t a, uint32_t b, int kind) { return tdm__cmp_raw32(b, a, kind) > 0 ? b : a; }
TDM_HD uint64_t tdm__ops_min64(uint64_t a, uint64_t b, int kind) { return tdm__cmp_raw64(b, a, kind) < 0 ? b : a; }
TDM_HD uint64_t tdm__ops_max64(uint64_t a, uint64_t b, int kind) { return tdm__cmp_raw64(b, a, kind) > 0 ? b : a; }

#endif /* TANDEM_OPS_KEYS_H */
