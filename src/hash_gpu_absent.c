/*
 * hash_gpu_absent.c: the hash table's CUDA boundary when tandem is built
 * without CUDA. A CUDA context cannot be created then, so these are reached
 * only through a corrupted object; each still answers TDM_ERR_NO_DEVICE.
 */
#include "hash_gpu_iface.h"

#ifndef TANDEM_HAVE_CUDA

#define NOT_BUILT "tandem was built without CUDA (configure with -DTANDEM_CUDA=ON and nvcc installed)"

tdm_status tdm__gpu_hash_init(tdm_hash *h) {
  (void)h;
  return tdm__fail(TDM_ERR_NO_DEVICE, "tdm_hash_create: " NOT_BUILT);
}
void tdm__gpu_hash_fini(tdm_hash *h) { (void)h; }
tdm_status tdm__gpu_hash_insert(tdm_hash *h, const void *keys, const void *values, size_t n, unsigned grow_log2) {
  (void)h; (void)keys; (void)values; (void)n; (void)grow_log2;
  return tdm__fail(TDM_ERR_NO_DEVICE, "tdm_hash_insert: " NOT_BUILT);
}
tdm_status tdm__gpu_hash_find(const tdm_hash *h, const void *keys, void *values_out, uint8_t *found_out,
                              size_t n) {
  (void)h; (void)keys; (void)values_out; (void)found_out; (void)n;
  return tdm__fail(TDM_ERR_NO_DEVICE, "tdm_hash_find: " NOT_BUILT);
}
tdm_status tdm__gpu_hash_erase(tdm_hash *h, const void *keys, size_t n, size_t *erased) {
  (void)h; (void)keys; (void)n; (void)erased;
  return tdm__fail(TDM_ERR_NO_DEVICE, "tdm_hash_erase: " NOT_BUILT);
}
tdm_status tdm__gpu_hash_export(const tdm_hash *h, void *keys_out, void *values_out) {
  (void)h; (void)keys_out; (void)values_out;
  return tdm__fail(TDM_ERR_NO_DEVICE, "tdm_hash_export: " NOT_BUILT);
}
tdm_status tdm__gpu_hash_clear(tdm_hash *h) {
  (void)h;
  return tdm__fail(TDM_ERR_NO_DEVICE, "tdm_hash_clear: " NOT_BUILT);
}
tdm_status tdm__gpu_hash_validate(const tdm_hash *h) {
  (void)h;
  return tdm__fail(TDM_ERR_NO_DEVICE, "tdm_hash_validate: " NOT_BUILT);
}

#else
typedef int tdm__hash_gpu_absent_unused; /* ISO C forbids an empty translation unit */
#endif
