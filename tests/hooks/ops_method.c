/* ops_method.c: the test programs' handle on the data operations' method. */
#include "../../src/backend.h"
#include "hooks.h"

void tdm_test_ops_method(int method) { tdm__ops_force_method = method; }

tdm_status tdm_test_ops_minmax(tdm_ctx *ctx, tdm_type key_type, const void *keys, size_t n, uint64_t *min_bits,
                               uint64_t *max_bits) {
  return ctx->be->ops->minmax(ctx, key_type, keys, n, UINT64_MAX, min_bits, max_bits);
}
