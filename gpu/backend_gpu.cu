/*
 * backend_gpu.cu: the CUDA backend as the dispatch layer sees it: the one
 * descriptor that gathers the operation tables of gpu/ (src/backends.c hands
 * it to every CUDA context). Each structure has one implementation; where
 * kernels take a policy (the hash table's lanes per key and insert strategy,
 * gpu/hash_probe.cu) the structure fixes it per width when it is created,
 * and no operation asks.
 */
#include "gpu_common.cuh"

extern "C" const tdm__backend tdm__cuda_backend = {
    .id = TDM_BACKEND_CUDA,
    .host_arrays_only = 0,
    .ctx_init = tdm__gpu_ctx_init,
    .ctx_fini = tdm__gpu_ctx_fini,
    .ctx_sync = tdm__gpu_ctx_sync,
    .sort = &tdm__sort_cuda_ops,
    .hash = &tdm__hash_cuda_ops,
    .btree = &tdm__btree_cuda_ops,
    .copy = tdm__gpu_copy,
    .ops = &tdm__ops_cuda_ops,
};
