/* hashmap_erase_bug.c: hashmap.c with a classic bug, for tandem-judge to find.
 *
 * The bug: erase marks the slot empty instead of deleted. A lookup stops at
 * the first empty slot, so a key that had probed past the erased one (it
 * collided with it) can no longer be found: the probe chain is broken. The
 * one line is the JUDGE_BUG_ERASE_LEAVES_EMPTY branch in hashmap.c.
 *
 *   tandem-judge map ./libjudge_hashmap_erase_bug.so
 */
#define JUDGE_BUG_ERASE_LEAVES_EMPTY
#include "hashmap.c"
