/* btree255_borrow_bug.c: the example B-tree (judge/examples/btree.c) with nodes of
 * 255 keys, a common production size, and an off-by-one in borrow-from-left:
 * the shift that makes room in the under-full child starts one key short.
 * The bug needs a split (256 keys) before any borrow can happen, so only
 * sequences far longer than the short ones reach it; the test checks that
 * the judge still prints a short program, quickly.
 */
#define JUDGE_BTREE_T 128
#define JUDGE_BUG_BORROW_LEFT
#include "../examples/btree.c"
