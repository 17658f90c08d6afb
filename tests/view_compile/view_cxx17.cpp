// view_cxx17.cpp: tandem/view.h compiles as C++17 and every lookup can be
// called from C++ host code. Built, never run.
#include <tandem/view.h>

uint64_t tdm_view_compile_cxx17(tdm_hash_view h, tdm_btree_view t, uint64_t key);
uint64_t tdm_view_compile_cxx17(tdm_hash_view h, tdm_btree_view t, uint64_t key) {
  uint64_t v = 0, w = 0;
  const int a = tdm_hash_view_find(h, key, &v);
  const int b = tdm_btree_view_find(t, key, &w);
  return static_cast<uint64_t>(a + b) + v + w + tdm_btree_view_rank(t, key);
}
