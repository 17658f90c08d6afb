/*
 * btree_gpu_iface.h: the B+ tree's boundary between the public layer and the
 * CUDA backend (gpu/btree_gpu.cu), and the CPU backend's entry points
 * (cpu/btree_cpu.c). Arguments arrive checked; n > 0 for the batch calls.
 * Without CUDA, src/btree_gpu_absent.c answers TDM_ERR_NO_DEVICE.
 */
#ifndef TANDEM_BTREE_GPU_IFACE_H
#define TANDEM_BTREE_GPU_IFACE_H

#include "btree_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- CPU backend -------------------------------------------------------- */
TDM_INTERNAL tdm_status tdm__bt_cpu_build(tdm_btree *t, const void *keys, const void *values, size_t n);
TDM_INTERNAL void tdm__bt_cpu_free(tdm_btree *t);
TDM_INTERNAL tdm_status tdm__bt_cpu_find(const tdm_btree *t, const void *keys, void *values_out,
                                         uint8_t *found_out, size_t n);
TDM_INTERNAL tdm_status tdm__bt_cpu_rank(const tdm_btree *t, const void *keys, uint64_t *rank_out, size_t n);
TDM_INTERNAL tdm_status tdm__bt_cpu_range_count(const tdm_btree *t, const void *lo, const void *hi,
                                                uint64_t *count_out, size_t n);
TDM_INTERNAL tdm_status tdm__bt_cpu_range(const tdm_btree *t, const void *lo, const void *hi, size_t n,
                                          uint64_t *offsets_out, void *keys_out, void *values_out, size_t cap);
TDM_INTERNAL tdm_status tdm__bt_cpu_insert(tdm_btree *t, const void *keys, const void *values, size_t n);
TDM_INTERNAL tdm_status tdm__bt_cpu_erase(tdm_btree *t, const void *keys, size_t n, size_t *erased_out);
TDM_INTERNAL tdm_status tdm__bt_cpu_export(const tdm_btree *t, void *keys_out, void *values_out);
/* Validates n_nodes host nodes as the tree t describes (root, size, height,
 * leaf ends, live count). Used for CUDA trees on a host copy too. */
TDM_INTERNAL tdm_status tdm__bt_validate_nodes(const tdm_btree *t, const tdm_bt_node *nodes, uint32_t n_nodes,
                                               uint32_t live);

/* ---- CUDA backend ------------------------------------------------------- */
TDM_INTERNAL tdm_status tdm__bt_gpu_build(tdm_btree *t, const void *keys, const void *values, size_t n);
TDM_INTERNAL void tdm__bt_gpu_free(tdm_btree *t);
TDM_INTERNAL tdm_status tdm__bt_gpu_find(const tdm_btree *t, const void *keys, void *values_out,
                                         uint8_t *found_out, size_t n);
TDM_INTERNAL tdm_status tdm__bt_gpu_rank(const tdm_btree *t, const void *keys, uint64_t *rank_out, size_t n);
TDM_INTERNAL tdm_status tdm__bt_gpu_range_count(const tdm_btree *t, const void *lo, const void *hi,
                                                uint64_t *count_out, size_t n);
TDM_INTERNAL tdm_status tdm__bt_gpu_range(const tdm_btree *t, const void *lo, const void *hi, size_t n,
                                          uint64_t *offsets_out, void *keys_out, void *values_out, size_t cap);
TDM_INTERNAL tdm_status tdm__bt_gpu_insert(tdm_btree *t, const void *keys, const void *values, size_t n);
TDM_INTERNAL tdm_status tdm__bt_gpu_erase(tdm_btree *t, const void *keys, size_t n, size_t *erased_out);
TDM_INTERNAL tdm_status tdm__bt_gpu_export(const tdm_btree *t, void *keys_out, void *values_out);
/* Copies the device nodes into a new host array (tdm__malloc; caller frees). */
TDM_INTERNAL tdm_status tdm__bt_gpu_download(const tdm_btree *t, tdm_bt_node **out);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_BTREE_GPU_IFACE_H */
