/* ops_method.c: the test programs' handle on the data operations' method. */
#include "../../src/backend.h"
#include "hooks.h"

void tdm_test_ops_method(int method) { tdm__ops_force_method = method; }
