/*
 * sort_gpu.cu: what both GPU designs' sorts share, and the staged sort.
 *
 * The staged sort (the legacy design's sort, and argsort in both designs):
 * stage (host arrays are copied in; device arrays are read in place) -> map
 * keys to order-preserving bits into a scratch buffer (detail/keybits.h, the
 * same functions the CPU runs) -> CUB radix sort between two scratch
 * buffers -> map back into the caller's array. The caller's arrays are
 * written only after the sort succeeded, so a failed call leaves them as
 * they were. The v2 design's sort (sort_v2.cu) sorts in place instead,
 * through the CUB wrappers and the bit map below.
 */
#include <string.h>

#include "gpu_common.cuh"
#include "sort_gpu.cuh"

template <typename K>
__global__ void to_bits_kernel(const K *in, K *out, size_t n, int kind, int desc) {
  TDM_GRID_STRIDE(i, n) {
    if (sizeof(K) == 4) out[i] = (K)tdm__sortbits32((uint32_t)in[i], kind, desc);
    else out[i] = (K)tdm__sortbits64((uint64_t)in[i], kind, desc);
  }
}

template <typename K>
__global__ void from_bits_kernel(const K *in, K *out, size_t n, int kind, int desc) {
  TDM_GRID_STRIDE(i, n) {
    if (sizeof(K) == 4) out[i] = (K)tdm__unsortbits32((uint32_t)in[i], kind, desc);
    else out[i] = (K)tdm__unsortbits64((uint64_t)in[i], kind, desc);
  }
}

template <typename I>
__global__ void iota_kernel(I *out, size_t n) {
  TDM_GRID_STRIDE(i, n)
    out[i] = (I)i;
}

/* CUB's temporary storage for a sort of n keys of width ks (values vs). */
template <typename K, typename V>
static tdm_status cub_temp_t(tdm_ctx *ctx, const tdm__sort_bufs *b, size_t n, int desc, size_t *temp_bytes) {
  cub::DoubleBuffer<K> dk((K *)b->k[0], (K *)b->k[1]);
  cub::DoubleBuffer<V> dv((V *)b->v[0], (V *)b->v[1]);
  TDM_CUDA_TRY((tdm__cub_sort<K, V>(NULL, *temp_bytes, dk, dv, n, 0, (int)sizeof(K) * 8, desc, tdm__stream(ctx))),
               (void)0);
  return TDM_OK;
}

/* Sorts bits in b->k[0] (values in b->v[0]) with b->temp of temp_bytes;
 * *kcur / *vcur receive the index of the buffers holding the result. */
template <typename K, typename V>
static tdm_status cub_run_t(tdm_ctx *ctx, tdm__sort_bufs *b, size_t temp_bytes, size_t n, int desc, int *kcur,
                            int *vcur) {
  cub::DoubleBuffer<K> dk((K *)b->k[0], (K *)b->k[1]);
  cub::DoubleBuffer<V> dv((V *)b->v[0], (V *)b->v[1]);
  TDM_CUDA_TRY((tdm__cub_sort<K, V>(b->temp, temp_bytes, dk, dv, n, 0, (int)sizeof(K) * 8, desc, tdm__stream(ctx))),
               (void)0);
  *kcur = dk.selector;
  *vcur = dv.selector;
  return TDM_OK;
}

/* The CUB steps of one key / value width pair, instantiated by name below. */
struct cub_fns {
  tdm_status (*temp)(tdm_ctx *ctx, const tdm__sort_bufs *b, size_t n, int desc, size_t *temp_bytes);
  tdm_status (*run)(tdm_ctx *ctx, tdm__sort_bufs *b, size_t temp_bytes, size_t n, int desc, int *kcur, int *vcur);
};
template <typename K, typename V>
static const cub_fns cub_fns_of = {
    .temp = cub_temp_t<K, V>,
    .run = cub_run_t<K, V>,
};
/* By CUB key order (unsigned bits, or signed integers), key width (4, 8)
 * and value width (0: keys only, 4, 8): a sort's types are arguments of the
 * call, so the triple is looked up per call. */
static const cub_fns *cub_widths(int ckind, size_t ks, size_t vs) {
  static const cub_fns *const t[2][2][3] = {
      {{&cub_fns_of<uint32_t, tdm__no_value>, &cub_fns_of<uint32_t, uint32_t>, &cub_fns_of<uint32_t, uint64_t>},
       {&cub_fns_of<uint64_t, tdm__no_value>, &cub_fns_of<uint64_t, uint32_t>, &cub_fns_of<uint64_t, uint64_t>}},
      {{&cub_fns_of<int32_t, tdm__no_value>, &cub_fns_of<int32_t, uint32_t>, &cub_fns_of<int32_t, uint64_t>},
       {&cub_fns_of<int64_t, tdm__no_value>, &cub_fns_of<int64_t, uint32_t>, &cub_fns_of<int64_t, uint64_t>}},
  };
  return t[ckind == TDM_KIND_SIGNED][ks == 8][vs / 4];
}

tdm_status tdm__gpu_cub_temp_bytes(tdm_ctx *ctx, const tdm__sort_bufs *b, size_t n, int ckind, size_t ks, size_t vs,
                                   int desc, size_t *temp_bytes) {
  return cub_widths(ckind, ks, vs)->temp(ctx, b, n, desc, temp_bytes);
}

tdm_status tdm__gpu_cub_sort_with(tdm_ctx *ctx, tdm__sort_bufs *b, size_t temp_bytes, size_t n, int ckind, size_t ks,
                                  size_t vs, int desc, int *kcur, int *vcur) {
  return cub_widths(ckind, ks, vs)->run(ctx, b, temp_bytes, n, desc, kcur, vcur);
}

/* The staged sort's CUB step: sizes CUB's storage, allocates it in the
 * call's scope and sorts. */
static tdm_status cub_sort(tdm_ctx *ctx, tdm__gpu_scope &sc, tdm__sort_bufs *b, size_t n, size_t ks, size_t vs, int *kcur,
                           int *vcur) {
  size_t temp_bytes = 0;
  tdm_status st;
  if ((st = tdm__gpu_cub_temp_bytes(ctx, b, n, TDM_KIND_UNSIGNED, ks, vs, 0, &temp_bytes)) != TDM_OK ||
      (st = sc.alloc(temp_bytes, &b->temp)) != TDM_OK)
    return st;
  return tdm__gpu_cub_sort_with(ctx, b, temp_bytes, n, TDM_KIND_UNSIGNED, ks, vs, 0, kcur, vcur);
}

/* Allocates the buffers of one sort: keys always, values when vs > 0 (with
 * v0 non-NULL, the device array v0 is the first value buffer). */
static tdm_status alloc_bufs(tdm__gpu_scope &sc, tdm__sort_bufs *b, size_t n, size_t ks, size_t vs, void *v0) {
  tdm_status st;
  memset(b, 0, sizeof *b);
  b->v[0] = v0;
  if ((st = sc.alloc(n * ks, &b->k[0])) != TDM_OK || (st = sc.alloc(n * ks, &b->k[1])) != TDM_OK ||
      (!v0 && (st = sc.alloc(n * vs, &b->v[0])) != TDM_OK) || (st = sc.alloc(n * vs, &b->v[1])) != TDM_OK)
    return st;
  return TDM_OK;
}

/* Loads the caller's keys (host or device) into b->k[0] as sort bits. */
static tdm_status load_bits(tdm_ctx *ctx, tdm__sort_bufs *b, const void *keys, size_t n, size_t ks, int kind,
                            int desc) {
  cudaStream_t s = tdm__stream(ctx);
  const void *src = keys;
  unsigned grid = tdm__grid(n);
  if (!tdm__cuda_is_device_ptr(keys)) {
    TDM_CUDA_TRY(cudaMemcpyAsync(b->k[0], keys, n * ks, cudaMemcpyHostToDevice, s), (void)0);
    src = b->k[0]; /* transform in place */
  }
  if (ks == 4)
    to_bits_kernel<uint32_t><<<grid, TDM_GPU_BLOCK, 0, s>>>((const uint32_t *)src, (uint32_t *)b->k[0], n, kind, desc);
  else
    to_bits_kernel<uint64_t><<<grid, TDM_GPU_BLOCK, 0, s>>>((const uint64_t *)src, (uint64_t *)b->k[0], n, kind, desc);
  return tdm__launch_check("tdm_sort (key bits)");
}

/* Copies bytes from a device buffer to the caller's array, host or device. */
static tdm_status store(tdm_ctx *ctx, void *user, const void *d, size_t bytes) {
  cudaMemcpyKind kind = tdm__cuda_is_device_ptr(user) ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost;
  /* The first store of a pair sort commits the call: the second must not
   * fail for a transient reason after it. */
  return tdm__gpu_copy_committed(ctx, user, d, bytes, kind, "tdm_sort (copy out)");
}

/* One device sort in progress: its widths, scratch and result buffers. */
struct sort_job {
  cudaStream_t s;
  unsigned grid;
  size_t n, ks, vs;      /* vs: value (or index) width, 0 for keys only */
  int kind;
  int kcur, vcur;        /* buffers holding the sorted keys / values */
  tdm__sort_bufs b;
};

/* The common start of sort and argsort: device, scratch, keys as sort bits. */
static tdm_status sort_begin(sort_job *j, tdm__gpu_scope &sc, tdm_ctx *ctx, tdm_type key_type, const void *keys,
                             size_t vs, size_t n, int desc, void *v0) {
  tdm_status st;
  j->s = tdm__stream(ctx);
  j->grid = tdm__grid(n);
  j->n = n;
  j->ks = tdm_type_size(key_type);
  j->vs = vs;
  j->kind = tdm__key_kind(key_type);
  j->kcur = j->vcur = 0;
  if ((st = sc.enter()) != TDM_OK) return st;
  if ((st = alloc_bufs(sc, &j->b, n, j->ks, vs, v0)) != TDM_OK) return st;
  return load_bits(ctx, &j->b, keys, n, j->ks, j->kind, desc);
}

void tdm__gpu_map_bits(cudaStream_t s, const void *in, void *out, size_t n, size_t ks, int kind, int desc, int to) {
  unsigned grid = tdm__grid(n);
  if (ks == 4) {
    if (to) to_bits_kernel<uint32_t><<<grid, TDM_GPU_BLOCK, 0, s>>>((const uint32_t *)in, (uint32_t *)out, n, kind, desc);
    else from_bits_kernel<uint32_t><<<grid, TDM_GPU_BLOCK, 0, s>>>((const uint32_t *)in, (uint32_t *)out, n, kind, desc);
  } else {
    if (to) to_bits_kernel<uint64_t><<<grid, TDM_GPU_BLOCK, 0, s>>>((const uint64_t *)in, (uint64_t *)out, n, kind, desc);
    else from_bits_kernel<uint64_t><<<grid, TDM_GPU_BLOCK, 0, s>>>((const uint64_t *)in, (uint64_t *)out, n, kind, desc);
  }
}

tdm_status tdm__gpu_sort_staged(tdm_ctx *ctx, tdm_type key_type, void *keys, tdm_type value_type, void *values,
                                size_t n, int desc) {
  tdm__gpu_scope sc(ctx);
  sort_job j;
  tdm_status st;
  if ((st = sort_begin(&j, sc, ctx, key_type, keys, values ? tdm_type_size(value_type) : 0, n, desc, NULL)) != TDM_OK)
    return st;
  if (j.vs) {
    cudaMemcpyKind k = tdm__cuda_is_device_ptr(values) ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice;
    TDM_CUDA_TRY(cudaMemcpyAsync(j.b.v[0], values, n * j.vs, k, j.s), (void)0);
  }
  if ((st = cub_sort(ctx, sc, &j.b, n, j.ks, j.vs, &j.kcur, &j.vcur)) != TDM_OK) return st;
  /* Back to keys, in the scratch buffer not holding the result, then out. */
  if (j.ks == 4)
    from_bits_kernel<uint32_t><<<j.grid, TDM_GPU_BLOCK, 0, j.s>>>((const uint32_t *)j.b.k[j.kcur],
                                                                  (uint32_t *)j.b.k[j.kcur ^ 1], n, j.kind, desc);
  else
    from_bits_kernel<uint64_t><<<j.grid, TDM_GPU_BLOCK, 0, j.s>>>((const uint64_t *)j.b.k[j.kcur],
                                                                  (uint64_t *)j.b.k[j.kcur ^ 1], n, j.kind, desc);
  if ((st = tdm__launch_check("tdm_sort (keys from bits)")) != TDM_OK) return st;
  /* Everything that can fail for lack of resources has succeeded: write out.
   * Stream-ordered with device arrays: queued, no wait (device faults are
   * deferred to tdm_ctx_sync, as documented). */
  int q = tdm__gpu_queue_only(ctx, keys, j.vs ? values : NULL, NULL);
  if (!q && (st = tdm__gpu_sync(ctx, "tdm_sort (device sort)")) != TDM_OK) return st;
  if ((st = store(ctx, keys, j.b.k[j.kcur ^ 1], n * j.ks)) != TDM_OK) return st;
  if (j.vs && (st = store(ctx, values, j.b.v[j.vcur], n * j.vs)) != TDM_OK) return st;
  return tdm__gpu_finish(ctx, q, "tdm_sort (copy out)");
}

tdm_status tdm__gpu_argsort(tdm_ctx *ctx, tdm_type key_type, const void *keys, tdm_type index_type, void *perm_out,
                            size_t n, int desc) {
  tdm__gpu_scope sc(ctx);
  sort_job j;
  size_t temp_bytes = 0;
  tdm_status st;
  /* A device perm_out is the sort's first index buffer: the permutation is
   * built straight in it, and copied only when CUB leaves it in the other. */
  void *direct = tdm__cuda_is_device_ptr(perm_out) ? perm_out : NULL;
  if ((st = sort_begin(&j, sc, ctx, key_type, keys, tdm_type_size(index_type), n, desc, direct)) != TDM_OK) return st;
  /* Everything that can fail for lack of memory before perm_out is written. */
  if ((st = tdm__gpu_cub_temp_bytes(ctx, &j.b, n, TDM_KIND_UNSIGNED, j.ks, j.vs, 0, &temp_bytes)) != TDM_OK ||
      (st = sc.alloc(temp_bytes, &j.b.temp)) != TDM_OK)
    return st;
  if (j.vs == 4) iota_kernel<uint32_t><<<j.grid, TDM_GPU_BLOCK, 0, j.s>>>((uint32_t *)j.b.v[0], n);
  else iota_kernel<uint64_t><<<j.grid, TDM_GPU_BLOCK, 0, j.s>>>((uint64_t *)j.b.v[0], n);
  if ((st = tdm__launch_check("tdm_argsort (iota)")) != TDM_OK) return st;
  if ((st = tdm__gpu_cub_sort_with(ctx, &j.b, temp_bytes, n, TDM_KIND_UNSIGNED, j.ks, j.vs, 0, &j.kcur, &j.vcur)) != TDM_OK) return st;
  int q = tdm__gpu_queue_only(ctx, keys, perm_out, NULL);
  if (direct && j.vcur == 0) return tdm__gpu_finish(ctx, q, "tdm_argsort (device sort)");
  if (!q && (st = tdm__gpu_sync(ctx, "tdm_argsort (device sort)")) != TDM_OK) return st;
  if ((st = store(ctx, perm_out, j.b.v[j.vcur], n * j.vs)) != TDM_OK) return st;
  return tdm__gpu_finish(ctx, q, "tdm_argsort (copy out)");
}
