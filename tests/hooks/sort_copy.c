/* sort_copy.c: the test programs' handle on the CPU sort of a copy
 * (tdm__cpu_sort_copy), which the B+ tree's builds and inserts use. */
#include "../../cpu/cpu.h"
#include "hooks.h"

tdm_status tdm_test_sort_copy(tdm_ctx *ctx, tdm_type key_type, const void *in_keys, void *keys, tdm_type value_type,
                              const void *in_values, void *values, size_t n, int desc) {
  return tdm__cpu_sort_copy(ctx, key_type, in_keys, keys, value_type, in_values, values, n, desc);
}
