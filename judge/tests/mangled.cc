// mangled.cc: a C++ candidate that forgot extern "C" (and the header, whose
// declarations would have given it): its judge_* functions are exported
// under mangled names, which tandem-judge must point out.
#include <cstddef>
#include <cstdint>
#include <map>

void *judge_map_create(void) { return new std::map<uint64_t, uint64_t>; }
void judge_map_destroy(void *m) { delete static_cast<std::map<uint64_t, uint64_t> *>(m); }
int judge_map_insert(void *m, uint64_t key, uint64_t value) {
  return static_cast<std::map<uint64_t, uint64_t> *>(m)->insert_or_assign(key, value).second ? 1 : 0;
}
int judge_map_find(void *m, uint64_t key, uint64_t *value) {
  auto *t = static_cast<std::map<uint64_t, uint64_t> *>(m);
  auto it = t->find(key);
  if (it == t->end()) return 0;
  *value = it->second;
  return 1;
}
int judge_map_erase(void *m, uint64_t key) { return static_cast<std::map<uint64_t, uint64_t> *>(m)->erase(key) ? 1 : 0; }
size_t judge_map_size(void *m) { return static_cast<std::map<uint64_t, uint64_t> *>(m)->size(); }
