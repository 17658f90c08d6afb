/*
 * sort_v2.cu: the v2 design's sort (sort, sort_pairs, and the B+ tree's
 * batch sorts, which go through its table). argsort is the staged one
 * (sort_gpu.cu) in both designs.
 */
#include <string.h>

#include "sort_gpu.cuh"

/* The v2 sort: in place in the caller's device arrays
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
 * The B+ tree's build sorts its own scratch through here too. argsort keeps
 * the legacy path in both designs (its keys are read-only, so they need a
 * copy anyway). */
static tdm_status sort_v2(tdm_ctx *ctx, tdm_type key_type, void *keys, tdm_type value_type, void *values, size_t n,
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
             (st = tdm__gpu_copy_committed(ctx, b.k[0], b.k[1], n * ks, cudaMemcpyDeviceToDevice, "tdm_sort (v2)")) != TDM_OK) {
    return st;
  }
  if (vs && vcur == 1 &&
      (st = tdm__gpu_copy_committed(ctx, b.v[0], b.v[1], n * vs, cudaMemcpyDeviceToDevice, "tdm_sort (v2)")) != TDM_OK)
    return st;
  /* Staged host arrays go back to the caller (the scope waits for them if
   * the call fails after). */
  dk.copied = dk.staged;
  if (dk.staged &&
      (st = tdm__gpu_copy_committed(ctx, keys, dk.d, n * ks, cudaMemcpyDeviceToHost, "tdm_sort (v2)")) != TDM_OK)
    return st;
  if (vs && dv.staged &&
      (st = tdm__gpu_copy_committed(ctx, values, dv.d, n * vs, cudaMemcpyDeviceToHost, "tdm_sort (v2)")) != TDM_OK)
    return st;
  /* As the legacy path ends: no wait on a stream-ordered context with
   * device arrays (so the call can be captured into a CUDA graph). */
  return sc.finish("tdm_sort (v2)");
}

const tdm__sort_ops tdm__sort_cuda_v2_ops = {
    .sort = sort_v2,
    .argsort = tdm__gpu_argsort,
};
