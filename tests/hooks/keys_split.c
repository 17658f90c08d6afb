/* keys_split.c: the test programs' handle on the keys-only split sort. */
#include "../../cpu/sort_cpu.h"
#include "hooks.h"

void tdm_test_keys_split(int on) { __atomic_store_n(&tdm__keys_force_split, on != 0, __ATOMIC_RELAXED); }
