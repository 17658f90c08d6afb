/*
 * gpu_absent.c: the CUDA boundary when tandem is built without CUDA. The
 * backend is still offered by the API; asking for it answers
 * TDM_ERR_NO_DEVICE with the reason.
 */
#include "gpu_iface.h"

#ifndef TANDEM_HAVE_CUDA

#define NOT_BUILT "tandem was built without CUDA (configure with -DTANDEM_CUDA=ON and nvcc installed)"

int tdm__gpu_device_count(void) { return 0; }
int tdm__gpu_is_device_ptr(const void *p) { (void)p; return 0; }

tdm_status tdm__gpu_ctx_init(tdm_ctx *ctx) {
  (void)ctx;
  return tdm__fail(TDM_ERR_NO_DEVICE, "tdm_ctx_create: CUDA backend requested, but " NOT_BUILT);
}
void tdm__gpu_ctx_fini(tdm_ctx *ctx) { (void)ctx; }

tdm_status tdm__gpu_sort(tdm_ctx *ctx, tdm_type key_type, void *keys, tdm_type value_type,
                         void *values, size_t n, int desc) {
  (void)ctx; (void)key_type; (void)keys; (void)value_type; (void)values; (void)n; (void)desc;
  return tdm__fail(TDM_ERR_NO_DEVICE, NOT_BUILT);
}
tdm_status tdm__gpu_argsort(tdm_ctx *ctx, tdm_type key_type, const void *keys, tdm_type index_type,
                            void *perm_out, size_t n, int desc) {
  (void)ctx; (void)key_type; (void)keys; (void)index_type; (void)perm_out; (void)n; (void)desc;
  return tdm__fail(TDM_ERR_NO_DEVICE, NOT_BUILT);
}

#else
typedef int tdm__gpu_absent_unused; /* ISO C forbids an empty translation unit */
#endif
