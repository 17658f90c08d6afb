/*
 * sort_gpu.cu: the CUDA sort (sort, sort_pairs, and the B+ tree's batch
 * sorts, which go through its table), in place (tdm__gpu_sort below), and
 * argsort, staged: host arrays are copied in, device arrays read in place,
 * the keys mapped to order-preserving bits in a scratch buffer
 * (detail/keybits.h, the same functions the CPU runs), (bits, index) pairs
 * sorted by CUB between two scratch buffers, the permutation written out.
 * One sort: the cost meter (tests/cuda_emu, make
 * cuda-emu-cost) put the in-place sort at exactly raw CUB's sectors per key
 * for integer keys and pairs, where the staged sort moved 1.3-1.7x that.
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

/* out[i] = in[i], 32-bit indices widened to 64. */
__global__ void widen_kernel(const uint32_t *in, uint64_t *out, size_t n) {
  TDM_GRID_STRIDE(i, n) out[i] = in[i];
}

/* CUB's temporary storage for a sort of n keys of width ks (values vs). */
template <typename K, typename V>
static tdm_status cub_temp_t(tdm_ctx *ctx, const tdm__sort_bufs *b, size_t n, int desc, size_t *temp_bytes) {
  cub::DoubleBuffer<K> dk((K *)b->k[0], (K *)b->k[1]);
  cub::DoubleBuffer<V> dv((V *)b->v[0], (V *)b->v[1]);
  if (b->in_k)
    TDM_CUDA_TRY((tdm__cub_sort_copy<K, V>(NULL, *temp_bytes, (const K *)b->in_k, (K *)b->k[0], (const V *)b->in_v,
                                           (V *)b->v[0], n, 0, (int)sizeof(K) * 8, desc, tdm__stream(ctx))),
                 (void)0);
  else
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
  if (b->in_k)
    TDM_CUDA_TRY((tdm__cub_sort_copy<K, V>(b->temp, temp_bytes, (const K *)b->in_k, (K *)b->k[0],
                                           (const V *)b->in_v, (V *)b->v[0], n, 0, (int)sizeof(K) * 8, desc,
                                           tdm__stream(ctx))),
                 (void)0);
  else
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

tdm_status tdm__gpu_sort_from(tdm_ctx *ctx, tdm__gpu_scope &sc, const void *in_k, const void *in_v, void *kout,
                              void *vout, size_t n, int ckind, size_t ks, size_t vs, int desc) {
  tdm__sort_bufs b;
  size_t temp_bytes = 0;
  int kcur = 0, vcur = 0;
  tdm_status st;
  memset(&b, 0, sizeof b);
  b.in_k = in_k;
  b.in_v = vs ? in_v : NULL;
  b.k[0] = kout;
  b.v[0] = vs ? vout : NULL;
  if ((st = tdm__gpu_cub_temp_bytes(ctx, &b, n, ckind, ks, vs, desc, &temp_bytes)) != TDM_OK ||
      (st = sc.alloc(temp_bytes, &b.temp)) != TDM_OK)
    return st;
  return tdm__gpu_cub_sort_with(ctx, &b, temp_bytes, n, ckind, ks, vs, desc, &kcur, &vcur);
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
  if (!tdm__is_device_ptr(keys)) {
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
  cudaMemcpyKind kind = tdm__is_device_ptr(user) ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost;
  /* The first store of a pair sort commits the call: the second must not
   * fail for a transient reason after it. */
  return tdm__gpu_copy_committed(ctx, user, d, bytes, kind, "tdm_sort (copy out)");
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

/* argsort: a sort of (key, index) pairs whose sorted indices are the
 * permutation. Integer keys in device memory are read where they are (CUB's
 * sort from a const input; descending by CUB's stable descending sort);
 * other keys are copied in as sort bits. The sort carries 32-bit indices
 * whenever n fits them: CUB's passes move 4 bytes an index less, and one
 * pass widens them into a 64-bit perm_out. A device perm_out as wide as the
 * sort's indices receives them straight from the sort. On the cost meter
 * (2^18 u64 keys, u64 indices, device arrays) 9.00 sectors a key with the
 * copy in and 64-bit indices, 6.75 now. */
static tdm_status tdm__gpu_argsort(tdm_ctx *ctx, tdm_type key_type, const void *keys, tdm_type index_type,
                                   void *perm_out, size_t n, int desc) {
  tdm__gpu_scope sc(ctx);
  cudaStream_t s = tdm__stream(ctx);
  const size_t ks = tdm_type_size(key_type), is = tdm_type_size(index_type), vs = n <= UINT32_MAX ? 4 : is;
  const int kind = tdm__key_kind(key_type), wide = vs < is;
  const int from = kind != TDM_KIND_FLOAT && tdm__is_device_ptr(keys);
  void *direct = !wide && tdm__is_device_ptr(perm_out) ? perm_out : NULL, *idx = NULL, *res = NULL;
  void *kout = NULL;
  uint64_t *wide_out = NULL;
  size_t temp_bytes = 0;
  int kcur = 0, vcur = 0, q;
  tdm__sort_bufs b;
  tdm_status st;
  if ((st = sc.enter()) != TDM_OK) return st;
  /* Everything that can fail for lack of memory before perm_out is written
   * (tdm__gpu_sort_from takes CUB's storage after the iota, which writes
   * only scratch on that path). */
  if (from) {
    res = direct;
    if ((st = sc.alloc(n * ks, &kout)) != TDM_OK || (st = sc.alloc(n * vs, &idx)) != TDM_OK ||
        (!res && (st = sc.alloc(n * vs, &res)) != TDM_OK))
      return st;
  } else {
    if ((st = alloc_bufs(sc, &b, n, ks, vs, direct)) != TDM_OK ||
        (st = tdm__gpu_cub_temp_bytes(ctx, &b, n, TDM_KIND_UNSIGNED, ks, vs, 0, &temp_bytes)) != TDM_OK ||
        (st = sc.alloc(temp_bytes, &b.temp)) != TDM_OK)
      return st;
    idx = b.v[0];
  }
  if (wide) {
    wide_out = tdm__is_device_ptr(perm_out) ? (uint64_t *)perm_out : NULL;
    if (!wide_out && (st = sc.alloc(n * 8, &wide_out)) != TDM_OK) return st;
  }
  if (!from && (st = load_bits(ctx, &b, keys, n, ks, kind, desc)) != TDM_OK) return st;
  if (vs == 4) tdm__iota_kernel<uint32_t><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>((uint32_t *)idx, n);
  else tdm__iota_kernel<uint64_t><<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>((uint64_t *)idx, n);
  if ((st = tdm__launch_check("tdm_argsort (iota)")) != TDM_OK) return st;
  if (from) {
    if ((st = tdm__gpu_sort_from(ctx, sc, keys, idx, kout, res, n, kind, ks, vs, desc)) != TDM_OK) return st;
  } else {
    if ((st = tdm__gpu_cub_sort_with(ctx, &b, temp_bytes, n, TDM_KIND_UNSIGNED, ks, vs, 0, &kcur, &vcur)) != TDM_OK)
      return st;
    res = b.v[vcur];
  }
  q = tdm__gpu_queue_only(ctx, keys, perm_out, NULL);
  if (wide) {
    widen_kernel<<<tdm__grid(n), TDM_GPU_BLOCK, 0, s>>>((const uint32_t *)res, wide_out, n);
    if ((st = tdm__launch_check("tdm_argsort (widen)")) != TDM_OK) return st;
    res = wide_out;
  }
  if (res == perm_out) return tdm__gpu_finish(ctx, q, "tdm_argsort (device sort)");
  if (!q && (st = tdm__gpu_sync(ctx, "tdm_argsort (device sort)")) != TDM_OK) return st;
  if ((st = store(ctx, perm_out, res, n * is)) != TDM_OK) return st;
  return tdm__gpu_finish(ctx, q, "tdm_argsort (copy out)");
}

/* The sort: in place in the caller's device arrays
 * (or in the one staging copy of a host array), with CUB's DoubleBuffer
 * between the caller's array and one alternate buffer per array.
 *  - Unsigned and signed integer keys are already CUB's order (CUB flips
 *    the sign bit of signed keys inside its digit passes), ascending or
 *    (CUB's stable descending sort) descending: no transform at all.
 *  - Floats are mapped to sort bits in place before the sort, and back
 *    after it; when CUB's result lies in the alternate buffer the map back
 *    writes straight into the caller's array (the copy is the map). CUB's
 *    own float order is not tandem's: it ranks -0.0 and +0.0 equal (keeping
 *    their input order), where IEEE totalOrder puts -0.0 first.
 * All-or-nothing: every buffer (alternates, CUB's temporary storage, staging)
 * is allocated and CUB's storage size known before the first write to the
 * caller's memory. What can still fail after that is a launch error or a
 * device fault; a launch error before CUB started is undone by mapping the
 * keys back, and a fault inside CUB leaves the device unusable (the context
 * reports TDM_ERR_DEVICE), as any kernel fault does.
 * The B+ tree's build sorts its own scratch through here too. argsort is
 * staged (its keys are read-only, so they need a copy anyway). */
static tdm_status tdm__gpu_sort(tdm_ctx *ctx, tdm_type key_type, void *keys, tdm_type value_type, void *values, size_t n,
                          int desc) {
  tdm__gpu_scope sc(ctx);
  tdm__dev_array dk, dv;
  tdm__sort_bufs b;
  cudaStream_t s;
  size_t ks = tdm_type_size(key_type), vs = values ? tdm_type_size(value_type) : 0, temp_bytes = 0;
  /* Integer keys are CUB's order (ckind), ascending or descending (cdesc):
   * no map. Floats are mapped to unsigned sort bits (inverted for desc) and
   * sorted ascending. */
  int kind = tdm__key_kind(key_type), transform = kind == TDM_KIND_FLOAT, cdesc = !transform && desc,
      ckind = transform ? (int)TDM_KIND_UNSIGNED : kind, kcur = 0, vcur = 0;
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
  if ((st = tdm__gpu_cub_temp_bytes(ctx, &b, n, ckind, ks, vs, cdesc, &temp_bytes)) != TDM_OK ||
      (st = sc.alloc(temp_bytes, &b.temp)) != TDM_OK)
    return st;
  /* From here on the caller's array (or its staging copy) changes. */
  if (transform) {
    tdm__gpu_map_bits(s, b.k[0], b.k[0], n, ks, kind, desc, 1);
    /* A failed launch ran nothing: the keys are unchanged. */
    if ((st = tdm__launch_check("tdm_sort (key bits, in place)")) != TDM_OK) return st;
  }
  if ((st = tdm__gpu_cub_sort_with(ctx, &b, temp_bytes, n, ckind, ks, vs, cdesc, &kcur, &vcur)) != TDM_OK) {
    /* CUB refused before its first kernel ran (the usual case of an error
     * return): the keys are the mapped input, so map them back. */
    if (transform) tdm__gpu_map_bits(s, b.k[0], b.k[0], n, ks, kind, desc, 0);
    (void)cudaGetLastError();
    return st;
  }
  /* The keys hold sorted bits now: every step below is committed, so a
   * refused launch or copy is retried once (tdm__gpu_copy_committed) rather
   * than leaving them half done. */
  if (transform) {
    for (int tries = 0; tries < 2; tries++) {
      tdm__gpu_map_bits(s, b.k[kcur], b.k[0], n, ks, kind, desc, 0);
      if (cudaPeekAtLastError() == cudaSuccess) break;
      if (tries == 0) (void)cudaGetLastError();
    }
    if ((st = tdm__launch_check("tdm_sort (keys from bits)")) != TDM_OK) return st;
  } else if (kcur == 1 &&
             (st = tdm__gpu_copy_committed(ctx, b.k[0], b.k[1], n * ks, cudaMemcpyDeviceToDevice, "tdm_sort")) != TDM_OK) {
    return st;
  }
  if (vs && vcur == 1 &&
      (st = tdm__gpu_copy_committed(ctx, b.v[0], b.v[1], n * vs, cudaMemcpyDeviceToDevice, "tdm_sort")) != TDM_OK)
    return st;
  /* Staged host arrays go back to the caller (the scope waits for them if
   * the call fails after). */
  dk.copied = dk.staged;
  if (dk.staged &&
      (st = tdm__gpu_copy_committed(ctx, keys, dk.d, n * ks, cudaMemcpyDeviceToHost, "tdm_sort")) != TDM_OK)
    return st;
  if (vs && dv.staged &&
      (st = tdm__gpu_copy_committed(ctx, values, dv.d, n * vs, cudaMemcpyDeviceToHost, "tdm_sort")) != TDM_OK)
    return st;
  /* No wait on a stream-ordered context with device arrays (so the call
   * can be captured into a CUDA graph). */
  return sc.finish("tdm_sort");
}

const tdm__sort_ops tdm__sort_cuda_ops = {
    .sort = tdm__gpu_sort,
    .argsort = tdm__gpu_argsort,
};
