// view_cuda.cu: tandem/view.h compiles under nvcc and every lookup can be
// called inside a kernel (and from host code of the same unit). Built with
// warnings as errors wherever nvcc exists, with or without a GPU; run on a
// GPU by bench/device-check.sh through examples/fused_lookup.cu.
#include <tandem/view.h>

__global__ void tdm_view_compile_kernel(tdm_hash_view h, tdm_btree_view t, const uint64_t *keys, uint64_t *out,
                                        size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint64_t v = 0, w = 0;
  int a = tdm_hash_view_find(h, keys[i], &v);
  int b = tdm_btree_view_find(t, keys[i], &w);
  out[i] = (uint64_t)(a + b) + v + w + tdm_btree_view_rank(t, keys[i]);
}

uint64_t tdm_view_compile_cuda_host(tdm_hash_view h, tdm_btree_view t, uint64_t key);
uint64_t tdm_view_compile_cuda_host(tdm_hash_view h, tdm_btree_view t, uint64_t key) {
  uint64_t v = 0;
  return (uint64_t)tdm_hash_view_find(h, key, &v) + tdm_btree_view_rank(t, key) + v;
}
