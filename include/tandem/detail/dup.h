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

#endif /* TANDEM_HD_DUP_H */
