/* keys_split.c: the test programs' handle on the keys-only split sort. */
#include "../../cpu/sort_cpu.h"
#include "hooks.h"

void tdm_test_keys_split(int mode) {
  __atomic_store_n(&tdm__split_avx512_cap, mode == 2 ? 0 : 1, __ATOMIC_RELAXED);
  __atomic_store_n(&tdm__keys_force_split, mode != 0, __ATOMIC_RELAXED);
}
