/* btree_no_rebalance.c: btree.c with a classic bug, for tandem-judge to find.
 *
 * The bug: erase never borrows or merges. fix_child does nothing, so a node
 * may be left with fewer than T - 1 keys, down to none, and the predecessor
 * taken from an empty leaf is garbage. The bug is the JUDGE_BUG_NO_REBALANCE
 * branch in btree.c.
 *
 *   tandem-judge ordered ./libjudge_btree_no_rebalance.so
 */
#define JUDGE_BUG_NO_REBALANCE
#include "btree.c"
