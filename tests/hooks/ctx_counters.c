/* ctx_counters.c: the test programs' reading of a context's internal
 * counters (allocations made, host waits). Test build only. */
#include "../../src/internal.h"
#include "hooks.h"

void tdm_test_ctx_counters(const tdm_ctx *ctx, long *allocs, long *waits) {
  if (allocs) *allocs = __atomic_load_n(&ctx->n_allocs, __ATOMIC_SEQ_CST);
  if (waits) *waits = __atomic_load_n(&ctx->n_waits, __ATOMIC_SEQ_CST);
}
