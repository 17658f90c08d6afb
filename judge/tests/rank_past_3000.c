/* rank_past_3000.c: the example B-tree (judge/examples/btree.c) whose rank
 * is one too high once the map holds more than 3,000 keys. Only a structure
 * that large shows it, and the judge meets it first with scattered keys: the
 * test checks that the printed program still calls the candidate on a few
 * lines (keys renumbered, blocks of calls folded into loops).
 */
#define JUDGE_BTREE_T 16
#define judge_map_rank btree_rank_correct
#include "../examples/btree.c"
#undef judge_map_rank

TDM_JUDGE_API uint64_t judge_map_rank(void *m, uint64_t key) {
  uint64_t r = btree_rank_correct(m, key);
  return judge_map_size(m) > 3000 ? r + 1 : r;
}
