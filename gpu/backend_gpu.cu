/*
 * backend_gpu.cu: the CUDA backend as the dispatch layer sees it: one
 * backend descriptor per kernel design, the one place that gathers each
 * design's operation tables. The design is a backend variant, chosen once
 * per context (src/backends.c reads TANDEM_GPU_DESIGN against the list
 * below); no operation asks which design it runs in.
 *
 * The designs differ in the hash table only: "legacy" the first kernels,
 * "v2" lane-group hash probing and a hash insert that folds each key's
 * copies before one claim per key (see the table in docs/design.md). The
 * sort (sort_gpu.cu) and the B+ tree (btree_gpu.cu, btree_lanes.cu) are one
 * for both: the cost meter chose the in-place sort and the lane-group tree.
 * The first entry of tdm__cuda_designs is the default, and stays legacy
 * until a GPU run of bench/device-check.sh has compared the two (v2 is
 * compiled and tested on the CPU only).
 * Dropping a design is deleting its files (gpu/hash_<design>.cu) and its
 * entry here.
 */
#include "gpu_common.cuh"

extern "C" const tdm__backend tdm__cuda_legacy_backend = {
    .id = TDM_BACKEND_CUDA,
    .host_arrays_only = 0,
    .ctx_init = tdm__gpu_ctx_init,
    .ctx_fini = tdm__gpu_ctx_fini,
    .ctx_sync = tdm__gpu_ctx_sync,
    .sort = &tdm__sort_cuda_ops,
    .hash = &tdm__hash_cuda_legacy_ops,
    .btree = &tdm__btree_cuda_ops,
    .copy = tdm__gpu_copy,
    .ops = &tdm__ops_cuda_ops,
};

extern "C" const tdm__backend tdm__cuda_v2_backend = {
    .id = TDM_BACKEND_CUDA,
    .host_arrays_only = 0,
    .ctx_init = tdm__gpu_ctx_init,
    .ctx_fini = tdm__gpu_ctx_fini,
    .ctx_sync = tdm__gpu_ctx_sync,
    .sort = &tdm__sort_cuda_ops,
    .hash = &tdm__hash_cuda_v2_ops,
    .btree = &tdm__btree_cuda_ops,
    .copy = tdm__gpu_copy,
    .ops = &tdm__ops_cuda_ops,
};

extern "C" const tdm__cuda_design tdm__cuda_designs[] = {
    {.name = "legacy", .backend = &tdm__cuda_legacy_backend}, /* the default */
    {.name = "v2", .backend = &tdm__cuda_v2_backend},
    {.name = NULL, .backend = NULL},
};
