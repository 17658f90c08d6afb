/*
 * dup.h: the duplicate policy as the per-element code sees it, and the one
 * function that applies it. Used by the hash table (insert into an existing
 * key) and the B+ tree (batch reduction, insert), on the host and in kernels.
 *
 * The values equal the public tdm_dup (include/tandem/hash.h), so a handle
 * stores the public value and kernels need no public header; src/opts.c ties
 * the two together with static assertions, so reordering tdm_dup fails the
 * build instead of silently changing a policy.
 */
#ifndef TANDEM_HD_DUP_H
#define TANDEM_HD_DUP_H

#include "hd.h"
#include "keybits.h"

enum tdm__dup {
  TDM__DUP_KEEP_FIRST = 0,
  TDM__DUP_KEEP_LAST = 1,
  TDM__DUP_SUM = 2,
  TDM__DUP_MIN = 3,
  TDM__DUP_MAX = 4
};

/* Combines an earlier value old with a later value in (raw bits of the value
 * type) for the same key under policy dup; vkind is the value type's keybits
 * kind: MIN / MAX compare in the value type's order (floats by totalOrder).
 * SUM wraps at the value width; the public layer refuses it for floats. */
TDM_HD uint32_t tdm__dup_combine32(uint32_t old, uint32_t in, int dup, int vkind) {
  switch (dup) {
  case TDM__DUP_KEEP_FIRST: return old;
  case TDM__DUP_KEEP_LAST: return in;
  case TDM__DUP_SUM: return old + in;
  case TDM__DUP_MIN: return tdm__bits32_from_key(in, vkind) < tdm__bits32_from_key(old, vkind) ? in : old;
  default: return tdm__bits32_from_key(in, vkind) > tdm__bits32_from_key(old, vkind) ? in : old;
  }
}
TDM_HD uint64_t tdm__dup_combine64(uint64_t old, uint64_t in, int dup, int vkind) {
  switch (dup) {
  case TDM__DUP_KEEP_FIRST: return old;
  case TDM__DUP_KEEP_LAST: return in;
  case TDM__DUP_SUM: return old + in;
  case TDM__DUP_MIN: return tdm__bits64_from_key(in, vkind) < tdm__bits64_from_key(old, vkind) ? in : old;
  default: return tdm__bits64_from_key(in, vkind) > tdm__bits64_from_key(old, vkind) ? in : old;
  }
}
/* The same on a value of vs bytes (4 or 8) held in a 64-bit word. */
TDM_HD uint64_t tdm__dup_combine(uint64_t old, uint64_t in, int dup, uint32_t vs, int vkind) {
  return vs == 4 ? (uint64_t)tdm__dup_combine32((uint32_t)old, (uint32_t)in, dup, vkind)
                 : tdm__dup_combine64(old, in, dup, vkind);
}

/* The order-free form of a policy, for a parallel reduce-by-key over a run
 * of copies of one key. SUM, MIN and MAX combine values and are commutative
 * as well as associative (MIN / MAX compare in a total order of the bits, so
 * two different values never tie). KEEP_FIRST and KEEP_LAST are not
 * commutative on values (tdm__dup_combine keeps its left / right operand),
 * and a library reduce-by-key need not apply its operator in input order
 * (CUB documents no such promise for DeviceReduce::ReduceByKey), so they
 * reduce the copies' positions in batch order instead: the smallest / the
 * largest, which is commutative and associative, and the caller then reads
 * the value at the kept position. */
TDM_HD int tdm__dup_by_position(int dup) { return dup == TDM__DUP_KEEP_FIRST || dup == TDM__DUP_KEEP_LAST; }
TDM_HD uint64_t tdm__dup_pick(uint64_t a, uint64_t b, int dup) {
  if (dup == TDM__DUP_KEEP_FIRST) return b < a ? b : a;
  return b > a ? b : a;
}

#endif /* TANDEM_HD_DUP_H */
