// stl.cc: correct candidates written with libstdc++, one per build:
//   STL_MAP    judge_map_* on std::map (kind ordered, without rank)
//   STL_UMAP   judge_map_* on std::unordered_map (kind map)
//   STL_SORT   judge_sort_* with std::sort, pairs with std::stable_sort on a
//              std::vector of pairs
// tandem-judge must pass each with no leak reported (libstdc++'s one-time
// allocations, such as its exception pool, are not the candidate's leaks).
#include <algorithm>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include <tandem/judge.h>

#if defined(STL_MAP) || defined(STL_UMAP)
#ifdef STL_MAP
using map_t = std::map<uint64_t, uint64_t>;
#else
using map_t = std::unordered_map<uint64_t, uint64_t>;
#endif

extern "C" {
void *judge_map_create(void) { return new map_t; }
void judge_map_destroy(void *m) { delete static_cast<map_t *>(m); }
int judge_map_insert(void *m, uint64_t key, uint64_t value) {
  auto r = static_cast<map_t *>(m)->insert_or_assign(key, value);
  return r.second ? 1 : 0;
}
int judge_map_find(void *m, uint64_t key, uint64_t *value) {
  auto *t = static_cast<map_t *>(m);
  auto it = t->find(key);
  if (it == t->end()) return 0;
  *value = it->second;
  return 1;
}
int judge_map_erase(void *m, uint64_t key) { return static_cast<map_t *>(m)->erase(key) ? 1 : 0; }
size_t judge_map_size(void *m) { return static_cast<map_t *>(m)->size(); }
}
#endif

#ifdef STL_SORT
extern "C" {
void judge_sort_u32(uint32_t *a, size_t n) { std::sort(a, a + n); }
void judge_sort_u64(uint64_t *a, size_t n) { std::sort(a, a + n); }
void judge_sort_pairs_u64(uint64_t *keys, uint64_t *values, size_t n) {
  std::vector<std::pair<uint64_t, uint64_t>> v(n);
  for (size_t i = 0; i < n; i++) v[i] = {keys[i], values[i]};
  std::stable_sort(v.begin(), v.end(), [](const auto &x, const auto &y) { return x.first < y.first; });
  for (size_t i = 0; i < n; i++) {
    keys[i] = v[i].first;
    values[i] = v[i].second;
  }
}
}
#endif
