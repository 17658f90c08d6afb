/*
 * hash_gpu_iface.h: the CUDA backend of the hash table, as the public layer
 * sees it. Implemented in gpu/hash_gpu.cu when tandem is built with CUDA and
 * by src/hash_gpu_absent.c otherwise (every call answers TDM_ERR_NO_DEVICE).
 *
 * Same contracts as the CPU entry points in hash_internal.h; h->slots is
 * device memory, and caller arrays may be host or device memory (staged
 * through the context as gpu_common.cuh describes).
 */
#ifndef TANDEM_HASH_GPU_IFACE_H
#define TANDEM_HASH_GPU_IFACE_H

#include "hash_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

TDM_INTERNAL tdm_status tdm__gpu_hash_init(tdm_hash *h);
TDM_INTERNAL void tdm__gpu_hash_fini(tdm_hash *h);
TDM_INTERNAL tdm_status tdm__gpu_hash_insert(tdm_hash *h, const void *keys, const void *values, size_t n,
                                             unsigned grow_log2);
TDM_INTERNAL tdm_status tdm__gpu_hash_find(const tdm_hash *h, const void *keys, void *values_out,
                                           uint8_t *found_out, size_t n);
TDM_INTERNAL tdm_status tdm__gpu_hash_erase(tdm_hash *h, const void *keys, size_t n, size_t *erased);
TDM_INTERNAL tdm_status tdm__gpu_hash_export(const tdm_hash *h, void *keys_out, void *values_out);
TDM_INTERNAL tdm_status tdm__gpu_hash_clear(tdm_hash *h);
TDM_INTERNAL tdm_status tdm__gpu_hash_validate(const tdm_hash *h);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_HASH_GPU_IFACE_H */
