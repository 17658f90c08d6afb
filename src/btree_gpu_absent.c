/*
 * btree_gpu_absent.c: the B+ tree's CUDA boundary when tandem is built
 * without CUDA. No CUDA context can exist then, so these are reached only
 * through a broken handle; they answer TDM_ERR_NO_DEVICE with the reason.
 */
#include "btree_gpu_iface.h"

#ifndef TANDEM_HAVE_CUDA

#define NOT_BUILT "tandem was built without CUDA (configure with -DTANDEM_CUDA=ON and nvcc installed)"

static tdm_status absent(const char *fn) { return tdm__fail(TDM_ERR_NO_DEVICE, "%s: " NOT_BUILT, fn); }

tdm_status tdm__bt_gpu_build(tdm_btree *t, const void *keys, const void *values, size_t n) {
  (void)t; (void)keys; (void)values; (void)n;
  return absent("tdm_btree_build");
}
void tdm__bt_gpu_free(tdm_btree *t) { (void)t; }
tdm_status tdm__bt_gpu_find(const tdm_btree *t, const void *keys, void *values_out, uint8_t *found_out,
                            size_t n) {
  (void)t; (void)keys; (void)values_out; (void)found_out; (void)n;
  return absent("tdm_btree_find");
}
tdm_status tdm__bt_gpu_rank(const tdm_btree *t, const void *keys, uint64_t *rank_out, size_t n) {
  (void)t; (void)keys; (void)rank_out; (void)n;
  return absent("tdm_btree_rank");
}
tdm_status tdm__bt_gpu_range_count(const tdm_btree *t, const void *lo, const void *hi, uint64_t *count_out,
                                   size_t n) {
  (void)t; (void)lo; (void)hi; (void)count_out; (void)n;
  return absent("tdm_btree_range_count");
}
tdm_status tdm__bt_gpu_range(const tdm_btree *t, const void *lo, const void *hi, size_t n, uint64_t *offsets_out,
                             void *keys_out, void *values_out, size_t cap) {
  (void)t; (void)lo; (void)hi; (void)n; (void)offsets_out; (void)keys_out; (void)values_out; (void)cap;
  return absent("tdm_btree_range");
}
tdm_status tdm__bt_gpu_insert(tdm_btree *t, const void *keys, const void *values, size_t n) {
  (void)t; (void)keys; (void)values; (void)n;
  return absent("tdm_btree_insert");
}
tdm_status tdm__bt_gpu_erase(tdm_btree *t, const void *keys, size_t n, size_t *erased_out) {
  (void)t; (void)keys; (void)n; (void)erased_out;
  return absent("tdm_btree_erase");
}
tdm_status tdm__bt_gpu_export(const tdm_btree *t, void *keys_out, void *values_out) {
  (void)t; (void)keys_out; (void)values_out;
  return absent("tdm_btree_export");
}
tdm_status tdm__bt_gpu_download(const tdm_btree *t, tdm_bt_node **out) {
  (void)t;
  *out = NULL;
  return absent("tdm_btree_validate");
}

#else
typedef int tdm__btree_gpu_absent_unused; /* ISO C forbids an empty translation unit */
#endif
