/* btree_split_bug.c: btree.c with a classic bug, for tandem-judge to find.
 *
 * The bug: split_child takes the right half's first key as the separator (a
 * B+ tree habit) instead of moving the middle key up, so every split loses
 * the middle key (and stores the right half's first key twice). The two
 * lines are the JUDGE_BUG_SPLIT_LOSES_MIDDLE branch in btree.c.
 *
 *   tandem-judge ordered ./libjudge_btree_split_bug.so
 */
#define JUDGE_BUG_SPLIT_LOSES_MIDDLE
#include "btree.c"
