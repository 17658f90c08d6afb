/*
 * sort_legacy.cu: the legacy design's sort table: the staged sort and
 * argsort of sort_gpu.cu.
 */
#include "sort_gpu.cuh"

const tdm__sort_ops tdm__sort_cuda_legacy_ops = {
    .sort = tdm__gpu_sort_staged,
    .argsort = tdm__gpu_argsort,
};
