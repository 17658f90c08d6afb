/* map_cache.c: the test programs' reading of a context's cache of freed
 * mappings and of what all caches of the process hold. Test build only. */
#include "../../src/internal.h"
#include "hooks.h"

void tdm_test_map_cache(tdm_ctx *ctx, size_t *bytes, int *blocks, long *hits) {
  size_t b;
  int n;
  long h;
  tdm__map_cache_stats(&ctx->maps, &b, &n, &h);
  if (bytes) *bytes = b;
  if (blocks) *blocks = n;
  if (hits) *hits = h;
}

size_t tdm_test_map_cache_total(void) { return tdm__map_cache_held_total(); }
