/* alloc_hook.c: the test programs' handle on the allocation failure hook. */
#include "../../src/internal.h"
#include "hooks.h"

void tdm_test_alloc_fail_at(long k) { tdm__alloc_fail_at(k); }

long tdm_test_alloc_count(void) { return tdm__alloc_count(); }
