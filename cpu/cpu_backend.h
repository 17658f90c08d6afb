/* cpu_backend.h: entry points of the CPU backend, called by the dispatch layer
 * with arguments already checked. */
#ifndef TANDEM_CPU_BACKEND_H
#define TANDEM_CPU_BACKEND_H

#include "../src/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Stable radix sort of keys (and values, when non-NULL), in place. */
TDM_INTERNAL tdm_status tdm__cpu_sort(tdm_ctx *ctx, tdm_type key_type, void *keys,
                                      tdm_type value_type, void *values, size_t n, int desc);
/* Stable argsort: perm_out receives the sorting permutation; keys untouched. */
TDM_INTERNAL tdm_status tdm__cpu_argsort(tdm_ctx *ctx, tdm_type key_type, const void *keys,
                                         tdm_type index_type, void *perm_out, size_t n, int desc);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_CPU_BACKEND_H */
