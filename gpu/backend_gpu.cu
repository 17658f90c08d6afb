/* backend_gpu.cu: the CUDA backend as the dispatch layer sees it. */
#include "gpu_common.cuh"

/* Positional: C++17 has no designated initialisers. Order as in backend.h. */
extern "C" const tdm__backend tdm__cuda_backend = {
    TDM_BACKEND_CUDA,       /* id */
    0,                      /* host_arrays_only: host or device arrays */
    tdm__gpu_ctx_init,      /* ctx_init */
    tdm__gpu_ctx_fini,      /* ctx_fini */
    tdm__gpu_ctx_sync,      /* ctx_sync */
    &tdm__sort_cuda_ops,    /* sort */
    &tdm__hash_cuda_ops,    /* hash */
    &tdm__btree_cuda_ops,   /* btree */
    nullptr,                /* ops: the data operations run on the CPU backend only so far */
};
