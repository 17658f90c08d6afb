/*
 * gpu_iface.h: the boundary between the backend-neutral layer and the CUDA
 * backend. The functions are implemented in gpu/ (C linkage) when tandem is
 * built with CUDA, and by src/gpu_absent.c otherwise, where each answers
 * TDM_ERR_NO_DEVICE (or 0) with a message that says CUDA was not built in.
 *
 * Arguments arrive already checked by the public layer; memory-space handling
 * (staging host arrays) is the GPU side's job.
 */
#ifndef TANDEM_GPU_IFACE_H
#define TANDEM_GPU_IFACE_H

#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Usable devices: 0 without a driver or with one too old for the runtime. */
TDM_INTERNAL int tdm__gpu_device_count(void);
/* 1 if p is device or managed memory. Never fails. */
TDM_INTERNAL int tdm__gpu_is_device_ptr(const void *p);
/* Sets up ctx->gpu for ctx->device / ctx->stream; tears it down. */
TDM_INTERNAL tdm_status tdm__gpu_ctx_init(tdm_ctx *ctx);
TDM_INTERNAL void tdm__gpu_ctx_fini(tdm_ctx *ctx);

/* Sorting on the device. values may be NULL (keys only). kind as keybits.h. */
TDM_INTERNAL tdm_status tdm__gpu_sort(tdm_ctx *ctx, tdm_type key_type, void *keys,
                                      tdm_type value_type, void *values, size_t n, int desc);
TDM_INTERNAL tdm_status tdm__gpu_argsort(tdm_ctx *ctx, tdm_type key_type, const void *keys,
                                         tdm_type index_type, void *perm_out, size_t n, int desc);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_GPU_IFACE_H */
