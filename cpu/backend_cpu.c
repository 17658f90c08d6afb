/* backend_cpu.c: the CPU backend as the dispatch layer sees it. */
#include "cpu.h"

const tdm__backend tdm__cpu_backend = {
    .id = TDM_BACKEND_CPU,
    .host_arrays_only = 1,
    .ctx_init = tdm__cpu_ctx_init,
    .ctx_fini = NULL,
    .ctx_sync = NULL,
    .sort = &tdm__sort_cpu_ops,
    .hash = &tdm__hash_cpu_ops,
    .btree = &tdm__btree_cpu_ops,
    .ops = &tdm__ops_cpu_ops,
};
