/*
 * opts.c: checks of the options the hash table and the B+ tree share, and
 * the tie between the public duplicate policy (tdm_dup) and the encoding the
 * per-element code uses (tandem/detail/dup.h).
 */
#include "backend.h"

_Static_assert((int)TDM_DUP_KEEP_FIRST == (int)TDM__DUP_KEEP_FIRST, "tdm_dup and tdm__dup differ");
_Static_assert((int)TDM_DUP_KEEP_LAST == (int)TDM__DUP_KEEP_LAST, "tdm_dup and tdm__dup differ");
_Static_assert((int)TDM_DUP_SUM == (int)TDM__DUP_SUM, "tdm_dup and tdm__dup differ");
_Static_assert((int)TDM_DUP_MIN == (int)TDM__DUP_MIN, "tdm_dup and tdm__dup differ");
_Static_assert((int)TDM_DUP_MAX == (int)TDM__DUP_MAX, "tdm_dup and tdm__dup differ");
_Static_assert((int)TDM_DUP_MAX == 4, "a new tdm_dup needs a case in tdm__dup_combine*");

tdm_status tdm__check_kv_opts(const char *fn, tdm_type key_type, tdm_type value_type, int dup) {
  if (!tdm__type_valid(key_type))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: key_type %d is not a tdm_type", fn, (int)key_type);
  if (!tdm__type_valid(value_type))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: value_type %d is not a tdm_type", fn, (int)value_type);
  if (dup < (int)TDM_DUP_KEEP_FIRST || dup > (int)TDM_DUP_MAX)
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: on_duplicate %d is not a tdm_dup", fn, dup);
  if (dup == (int)TDM_DUP_SUM && (value_type == TDM_F32 || value_type == TDM_F64))
    return tdm__fail(TDM_ERR_UNSUPPORTED, "%s: TDM_DUP_SUM needs integer values, not %s", fn,
                     tdm_type_name(value_type));
  return TDM_OK;
}
