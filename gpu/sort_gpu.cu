/*
 * sort_gpu.cu: the CUDA backend's sort, sort_pairs and argsort.
 *
 * Legacy path (TANDEM_GPU_DESIGN=legacy): stage (host arrays are copied in;
 * device arrays are read in place) -> map keys to order-preserving bits into a scratch buffer (hd/keybits.h, the
 * same functions the CPU runs) -> CUB radix sort between two scratch buffers
 * -> map back into the caller's array. The caller's arrays are written only
 * after the sort succeeded, so a failed call leaves them as they were.
 * The v2 sort (gpu_sort_v2) sorts in place instead.
 */
#include <string.h>

#include "gpu_common.cuh"
#include "sort_cub.cuh"

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

/* Scratch of one sort: two key buffers, two value buffers, CUB temp; owned
 * by the call's scope. */
struct sort_bufs {
  void *k[2], *v[2], *temp;
};

/* CUB's temporary storage for a sort of n keys of width ks (values vs). */
template <typename K, typename V>
static tdm_status cub_temp_t(tdm_ctx *ctx, const sort_bufs *b, size_t n, size_t *temp_bytes) {
  cub::DoubleBuffer<K> dk((K *)b->k[0], (K *)b->k[1]);
  cub::DoubleBuffer<V> dv((V *)b->v[0], (V *)b->v[1]);
  TDM_CUDA_TRY((tdm__cub_sort<K, V>(NULL, *temp_bytes, dk, dv, n, 0, (int)sizeof(K) * 8, tdm__stream(ctx))), (void)0);
  return TDM_OK;
}

/* Sorts bits in b->k[0] (values in b->v[0]) with b->temp of temp_bytes;
 * *kcur / *vcur receive the index of the buffers holding the result. */
template <typename K, typename V>
static tdm_status cub_run_t(tdm_ctx *ctx, sort_bufs *b, size_t temp_bytes, size_t n, int *kcur, int *vcur) {
  cub::DoubleBuffer<K> dk((K *)b->k[0], (K *)b->k[1]);
  cub::DoubleBuffer<V> dv((V *)b->v[0], (V *)b->v[1]);
  TDM_CUDA_TRY((tdm__cub_sort<K, V>(b->temp, temp_bytes, dk, dv, n, 0, (int)sizeof(K) * 8, tdm__stream(ctx))),
               (void)0);
  *kcur = dk.selector;
  *vcur = dv.selector;
  return TDM_OK;
}

/* Runs F<K, V> for key width ks and value width vs (0: keys only). */
#define SORT_DISPATCH(ks, vs, F, ...)                                            \
  ((ks) == 4 ? ((vs) == 0   ? F<uint32_t, tdm__no_value>(__VA_ARGS__)            \
                : (vs) == 4 ? F<uint32_t, uint32_t>(__VA_ARGS__)                 \
                            : F<uint32_t, uint64_t>(__VA_ARGS__))                \
             : ((vs) == 0   ? F<uint64_t, tdm__no_value>(__VA_ARGS__)            \
                : (vs) == 4 ? F<uint64_t, uint32_t>(__VA_ARGS__)                 \
                            : F<uint64_t, uint64_t>(__VA_ARGS__)))

static tdm_status cub_temp_bytes(tdm_ctx *ctx, const sort_bufs *b, size_t n, size_t ks, size_t vs, size_t *temp_bytes) {
  return SORT_DISPATCH(ks, vs, cub_temp_t, ctx, b, n, temp_bytes);
}

static tdm_status cub_sort_with(tdm_ctx *ctx, sort_bufs *b, size_t temp_bytes, size_t n, size_t ks, size_t vs,
                                int *kcur, int *vcur) {
  return SORT_DISPATCH(ks, vs, cub_run_t, ctx, b, temp_bytes, n, kcur, vcur);
}

/* The legacy path: sizes CUB's storage, allocates it in the call's scope and
 * sorts. */
static tdm_status cub_sort(tdm_ctx *ctx, tdm__gpu_scope &sc, sort_bufs *b, size_t n, size_t ks, size_t vs, int *kcur,
                           int *vcur) {
  size_t temp_bytes = 0;
  tdm_status st;
  if ((st = cub_temp_bytes(ctx, b, n, ks, vs, &temp_bytes)) != TDM_OK || (st = sc.alloc(temp_bytes, &b->temp)) != TDM_OK)
    return st;
  return cub_sort_with(ctx, b, temp_bytes, n, ks, vs, kcur, vcur);
}

/* Allocates the buffers of one sort: keys always, values when vs > 0. */
static tdm_status alloc_bufs(tdm__gpu_scope &sc, sort_bufs *b, size_t n, size_t ks, size_t vs) {
  tdm_status st;
  memset(b, 0, sizeof *b);
  if ((st = sc.alloc(n * ks, &b->k[0])) != TDM_OK || (st = sc.alloc(n * ks, &b->k[1])) != TDM_OK ||
      (st = sc.alloc(n * vs, &b->v[0])) != TDM_OK || (st = sc.alloc(n * vs, &b->v[1])) != TDM_OK)
    return st;
  return TDM_OK;
}

/* Loads the caller's keys (host or device) into b->k[0] as sort bits. */
static tdm_status load_bits(tdm_ctx *ctx, sort_bufs *b, const void *keys, size_t n, size_t ks, int kind,
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
  TDM_CUDA_TRY(cudaMemcpyAsync(user, d, bytes, kind, tdm__stream(ctx)), (void)0);
  return TDM_OK;
}

/* One device sort in progress: its widths, scratch and result buffers. */
struct sort_job {
  cudaStream_t s;
  unsigned grid;
  size_t n, ks, vs;      /* vs: value (or index) width, 0 for keys only */
  int kind;
  int kcur, vcur;        /* buffers holding the sorted keys / values */
  sort_bufs b;
};

/* The common start of sort and argsort: device, scratch, keys as sort bits. */
static tdm_status sort_begin(sort_job *j, tdm__gpu_scope &sc, tdm_ctx *ctx, tdm_type key_type, const void *keys,
                             size_t vs, size_t n, int desc) {
  tdm_status st;
  j->s = tdm__stream(ctx);
  j->grid = tdm__grid(n);
  j->n = n;
  j->ks = tdm_type_size(key_type);
  j->vs = vs;
  j->kind = tdm__key_kind(key_type);
  j->kcur = j->vcur = 0;
  if ((st = sc.enter()) != TDM_OK) return st;
  if ((st = alloc_bufs(sc, &j->b, n, j->ks, vs)) != TDM_OK) return st;
  return load_bits(ctx, &j->b, keys, n, j->ks, j->kind, desc);
}

/* Maps n key words at d between keys and sort bits, in place (to: 1 keys to
 * bits, 0 back). */
static void bits_in_place(cudaStream_t s, void *d, size_t n, size_t ks, int kind, int desc, int to) {
  unsigned grid = tdm__grid(n);
  if (ks == 4) {
    if (to) to_bits_kernel<uint32_t><<<grid, TDM_GPU_BLOCK, 0, s>>>((const uint32_t *)d, (uint32_t *)d, n, kind, desc);
    else from_bits_kernel<uint32_t><<<grid, TDM_GPU_BLOCK, 0, s>>>((const uint32_t *)d, (uint32_t *)d, n, kind, desc);
  } else {
    if (to) to_bits_kernel<uint64_t><<<grid, TDM_GPU_BLOCK, 0, s>>>((const uint64_t *)d, (uint64_t *)d, n, kind, desc);
    else from_bits_kernel<uint64_t><<<grid, TDM_GPU_BLOCK, 0, s>>>((const uint64_t *)d, (uint64_t *)d, n, kind, desc);
  }
}

/* The v2 sort (TANDEM_GPU_DESIGN=v2): in place in the caller's device arrays
 * (or in the one staging copy of a host array), with CUB's DoubleBuffer
 * between the caller's array and one alternate buffer per array.
 *  - Unsigned ascending keys are already CUB's order: no transform at all.
 *  - Other key types are mapped to sort bits in place before the sort, and
 *    back after it; when CUB's result lies in the alternate buffer the map
 *    back writes straight into the caller's array (the copy is the map).
 * All-or-nothing: every buffer (alternates, CUB's temporary storage, staging)
 * is allocated and CUB's storage size known before the first write to the
 * caller's memory. What can still fail after that is a launch error or a
 * device fault; a launch error before CUB started is undone by mapping the
 * keys back, and a fault inside CUB leaves the device unusable (the context
 * reports TDM_ERR_DEVICE), as any kernel fault does.
 * The B+ tree's build sorts its own scratch through here too. argsort keeps
 * the legacy path in both designs (its keys are read-only, so they need a
 * copy anyway). */
static tdm_status gpu_sort_v2(tdm_ctx *ctx, tdm_type key_type, void *keys, tdm_type value_type, void *values,
                              size_t n, int desc) {
  tdm__gpu_scope sc(ctx);
  tdm__dev_array dk, dv;
  sort_bufs b;
  cudaStream_t s;
  size_t ks = tdm_type_size(key_type), vs = values ? tdm_type_size(value_type) : 0, temp_bytes = 0;
  int kind = tdm__key_kind(key_type), transform = kind != TDM_KIND_UNSIGNED || desc, kcur = 0, vcur = 0;
  tdm_status st;
  if ((st = sc.enter()) != TDM_OK) return st;
  s = tdm__stream(ctx);
  memset(&b, 0, sizeof b);
  memset(&dv, 0, sizeof dv);
  if ((st = sc.in(keys, n * ks, &dk)) != TDM_OK || (vs && (st = sc.in(values, n * vs, &dv)) != TDM_OK) ||
      (st = sc.alloc(n * ks, &b.k[1])) != TDM_OK || (st = sc.alloc(n * vs, &b.v[1])) != TDM_OK)
    return st;
  b.k[0] = dk.d;
  b.v[0] = dv.d;
  if ((st = cub_temp_bytes(ctx, &b, n, ks, vs, &temp_bytes)) != TDM_OK || (st = sc.alloc(temp_bytes, &b.temp)) != TDM_OK)
    return st;
  /* From here on the caller's array (or its staging copy) changes. */
  if (transform) {
    bits_in_place(s, b.k[0], n, ks, kind, desc, 1);
    /* A failed launch ran nothing: the keys are unchanged. */
    if ((st = tdm__launch_check("tdm_sort (key bits, in place)")) != TDM_OK) return st;
  }
  if ((st = cub_sort_with(ctx, &b, temp_bytes, n, ks, vs, &kcur, &vcur)) != TDM_OK) {
    /* CUB refused before its first kernel ran (the usual case of an error
     * return): the keys are the mapped input, so map them back. */
    if (transform) bits_in_place(s, b.k[0], n, ks, kind, desc, 0);
    (void)cudaGetLastError();
    return st;
  }
  if (kcur == 0) {
    if (transform) bits_in_place(s, b.k[0], n, ks, kind, desc, 0);
  } else if (transform) {
    if (ks == 4)
      from_bits_kernel<uint32_t><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>((const uint32_t *)b.k[1], (uint32_t *)b.k[0], n,
                                                                        kind, desc);
    else
      from_bits_kernel<uint64_t><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>((const uint64_t *)b.k[1], (uint64_t *)b.k[0], n,
                                                                        kind, desc);
  } else {
    TDM_CUDA_TRY(cudaMemcpyAsync(b.k[0], b.k[1], n * ks, cudaMemcpyDeviceToDevice, s), (void)0);
  }
  if ((st = tdm__launch_check("tdm_sort (keys from bits)")) != TDM_OK) return st;
  if (vs && vcur == 1) TDM_CUDA_TRY(cudaMemcpyAsync(b.v[0], b.v[1], n * vs, cudaMemcpyDeviceToDevice, s), (void)0);
  /* Staged host arrays go back to the caller. */
  if (dk.staged) TDM_CUDA_TRY(cudaMemcpyAsync(keys, dk.d, n * ks, cudaMemcpyDeviceToHost, s), (void)0);
  if (vs && dv.staged) TDM_CUDA_TRY(cudaMemcpyAsync(values, dv.d, n * vs, cudaMemcpyDeviceToHost, s), (void)0);
  /* As the legacy path ends: no wait on a stream-ordered context with
   * device arrays (so the call can be captured into a CUDA graph). */
  return sc.finish("tdm_sort (v2)");
}

tdm_status tdm__gpu_sort(tdm_ctx *ctx, tdm_type key_type, void *keys, tdm_type value_type, void *values, size_t n,
                         int desc) {
  if (ctx->gpu->design == TDM__GPU_V2) return gpu_sort_v2(ctx, key_type, keys, value_type, values, n, desc);
  tdm__gpu_scope sc(ctx);
  sort_job j;
  tdm_status st;
  if ((st = sort_begin(&j, sc, ctx, key_type, keys, values ? tdm_type_size(value_type) : 0, n, desc)) != TDM_OK)
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

static tdm_status gpu_argsort(tdm_ctx *ctx, tdm_type key_type, const void *keys, tdm_type index_type, void *perm_out,
                              size_t n, int desc) {
  tdm__gpu_scope sc(ctx);
  sort_job j;
  tdm_status st;
  if ((st = sort_begin(&j, sc, ctx, key_type, keys, tdm_type_size(index_type), n, desc)) != TDM_OK) return st;
  if (j.vs == 4) iota_kernel<uint32_t><<<j.grid, TDM_GPU_BLOCK, 0, j.s>>>((uint32_t *)j.b.v[0], n);
  else iota_kernel<uint64_t><<<j.grid, TDM_GPU_BLOCK, 0, j.s>>>((uint64_t *)j.b.v[0], n);
  if ((st = tdm__launch_check("tdm_argsort (iota)")) != TDM_OK) return st;
  if ((st = cub_sort(ctx, sc, &j.b, n, j.ks, j.vs, &j.kcur, &j.vcur)) != TDM_OK) return st;
  int q = tdm__gpu_queue_only(ctx, keys, perm_out, NULL);
  if (!q && (st = tdm__gpu_sync(ctx, "tdm_argsort (device sort)")) != TDM_OK) return st;
  if ((st = store(ctx, perm_out, j.b.v[j.vcur], n * j.vs)) != TDM_OK) return st;
  return tdm__gpu_finish(ctx, q, "tdm_argsort (copy out)");
}

const tdm__sort_ops tdm__sort_cuda_ops = {tdm__gpu_sort, gpu_argsort};
