/* view_c11.c: tandem/view.h compiles as strict C11 (-std=c11 -pedantic)
 * and every lookup can be called from host code. Built, never run. */
#include <tandem/view.h>

uint64_t tdm_view_compile_c11(tdm_hash_view h, tdm_btree_view t, uint64_t key);
uint64_t tdm_view_compile_c11(tdm_hash_view h, tdm_btree_view t, uint64_t key) {
  uint64_t v = 0, w = 0;
  int a = tdm_hash_view_find(h, key, &v);
  int b = tdm_btree_view_find(t, key, &w);
  return (uint64_t)a + (uint64_t)b + v + w + tdm_btree_view_rank(t, key);
}
