/*
 * sort_gpu.cuh: what sort_gpu.cu offers the rest of the CUDA backend
 * besides its table (tdm__sort_cuda_ops): the CUB radix sort over a
 * DoubleBuffer pair (the data operations sort through it) and the map
 * between keys and their order-preserving sort bits.
 */
#ifndef TANDEM_SORT_GPU_CUH
#define TANDEM_SORT_GPU_CUH

#include "gpu_common.cuh"
#include "sort_cub.cuh"

/* Scratch of one sort: two key buffers, two value buffers, CUB temp; owned
 * by the call's scope. With in_k set (zeroed otherwise), the sort reads its
 * keys (and values from in_v) there, only reading them, and writes the
 * result to k[0] / v[0]; k[1] / v[1] are not used (CUB keeps its alternate
 * buffers in the temp storage). */
struct tdm__sort_bufs {
  void *k[2], *v[2], *temp;
  const void *in_k, *in_v;
};

/* CUB's temporary storage for a sort of n keys of width ks (values vs, 0
 * for keys only) between the buffers of b, descending when desc. ckind is
 * the order CUB sorts the key words in: TDM_KIND_UNSIGNED (unsigned keys and
 * sort bits) or TDM_KIND_SIGNED (signed integer keys, sorted as they are). */
tdm_status tdm__gpu_cub_temp_bytes(tdm_ctx *ctx, const tdm__sort_bufs *b, size_t n, int ckind, size_t ks, size_t vs,
                                   int desc, size_t *temp_bytes);
/* Sorts the key words in b->k[0] (values in b->v[0]) in CUB's order ckind
 * with b->temp of temp_bytes, descending when desc (tdm__cub_sort); *kcur /
 * *vcur receive the index of the buffers holding the result. */
tdm_status tdm__gpu_cub_sort_with(tdm_ctx *ctx, tdm__sort_bufs *b, size_t temp_bytes, size_t n, int ckind, size_t ks,
                                  size_t vs, int desc, int *kcur, int *vcur);
/* Sorts n key words of width ks in CUB's order ckind, ascending (CUB's
 * stable descending sort when desc), with values of width vs (0: none),
 * from the device arrays in_k / in_v, which are only read, into kout /
 * vout, taking CUB's temporary storage from sc. */
tdm_status tdm__gpu_sort_from(tdm_ctx *ctx, tdm__gpu_scope &sc, const void *in_k, const void *in_v, void *kout,
                              void *vout, size_t n, int ckind, size_t ks, size_t vs, int desc);
/* Queues the map of n key words of width ks from in to out (which may be in):
 * to 1 keys to sort bits, 0 back. The caller checks the launch. */
void tdm__gpu_map_bits(cudaStream_t s, const void *in, void *out, size_t n, size_t ks, int kind, int desc, int to);

#endif /* TANDEM_SORT_GPU_CUH */
