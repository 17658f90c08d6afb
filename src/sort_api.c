/*
 * sort_api.c: the public sort calls. Arguments are checked once here, then the
 * call goes to the context's backend.
 */
#include "backend.h"

static tdm_status check_common(tdm_ctx *ctx, const char *fn, tdm_type key_type, unsigned flags) {
  tdm_status st = tdm__check_ctx(ctx, fn);
  if (st != TDM_OK) return st;
  if (!tdm__type_valid(key_type))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: key_type %d is not a tdm_type", fn, (int)key_type);
  if (flags & ~(unsigned)TDM_SORT_DESCENDING)
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: unknown flag bits 0x%x", fn,
                     flags & ~(unsigned)TDM_SORT_DESCENDING);
  return TDM_OK;
}

tdm_status tdm_sort(tdm_ctx *ctx, tdm_type key_type, void *keys, size_t n, unsigned flags) {
  static const char fn[] = "tdm_sort";
  tdm_status st = check_common(ctx, fn, key_type, flags);
  if (st != TDM_OK) return st;
  st = tdm__check_array(ctx, fn, "keys", keys, n, tdm_type_size(key_type), NULL);
  if (st != TDM_OK) return st;
  if (n < 2) return TDM_OK;
  return ctx->be->sort->sort(ctx, key_type, keys, key_type, NULL, n, flags & TDM_SORT_DESCENDING);
}

tdm_status tdm_sort_pairs(tdm_ctx *ctx, tdm_type key_type, void *keys, tdm_type value_type,
                          void *values, size_t n, unsigned flags) {
  static const char fn[] = "tdm_sort_pairs";
  size_t kb, vb;
  tdm_status st = check_common(ctx, fn, key_type, flags);
  if (st != TDM_OK) return st;
  if (!tdm__type_valid(value_type))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: value_type %d is not a tdm_type", fn, (int)value_type);
  st = tdm__check_array(ctx, fn, "keys", keys, n, tdm_type_size(key_type), &kb);
  if (st != TDM_OK) return st;
  st = tdm__check_array(ctx, fn, "values", values, n, tdm_type_size(value_type), &vb);
  if (st != TDM_OK) return st;
  if (tdm__overlap(keys, kb, values, vb))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: keys and values overlap", fn);
  if (n < 2) return TDM_OK;
  return ctx->be->sort->sort(ctx, key_type, keys, value_type, values, n, flags & TDM_SORT_DESCENDING);
}

tdm_status tdm_argsort(tdm_ctx *ctx, tdm_type key_type, const void *keys, tdm_type index_type,
                       void *perm_out, size_t n, unsigned flags) {
  static const char fn[] = "tdm_argsort";
  size_t kb, pb;
  tdm_status st = check_common(ctx, fn, key_type, flags);
  if (st != TDM_OK) return st;
  if (!tdm__type_valid(index_type))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: index_type %d is not a tdm_type", fn, (int)index_type);
  if (index_type != TDM_U32 && index_type != TDM_U64)
    return tdm__fail(TDM_ERR_UNSUPPORTED, "%s: index_type must be TDM_U32 or TDM_U64, not %s", fn,
                     tdm_type_name(index_type));
  if (index_type == TDM_U32 && n > UINT32_MAX)
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: n = %zu does not fit TDM_U32 indices; use TDM_U64", fn, n);
  st = tdm__check_array(ctx, fn, "keys", keys, n, tdm_type_size(key_type), &kb);
  if (st != TDM_OK) return st;
  st = tdm__check_array(ctx, fn, "perm_out", perm_out, n, tdm_type_size(index_type), &pb);
  if (st != TDM_OK) return st;
  if (tdm__overlap(keys, kb, perm_out, pb))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: keys and perm_out overlap", fn);
  if (n == 0) return TDM_OK;
  return ctx->be->sort->argsort(ctx, key_type, keys, index_type, perm_out, n, flags & TDM_SORT_DESCENDING);
}
