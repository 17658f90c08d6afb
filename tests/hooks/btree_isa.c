/*
 * btree_isa.c: test hook that caps the instruction-set level of the CPU
 * B-tree queries, so the property tests run the AVX2 and scalar loops on a
 * machine that has AVX-512. Compiled into the test programs only.
 */
#include "../../cpu/cpu.h"
#include "hooks.h"

int tdm_test_btree_isa_limit(int level) {
  static const int from_limit[] = {TDM__BT_ISA_AVX512, TDM__BT_ISA_AVX2, TDM__BT_ISA_SCALAR};
  tdm_btree_opts o = {TDM_U64, TDM_U64, TDM_DUP_KEEP_LAST};
  tdm_ctx_opts co = {0};
  tdm_ctx *ctx = NULL;
  tdm_btree *t = NULL;
  int got = -1;
  if (level < 0 || level > 2) return -1;
  __atomic_store_n(&tdm__bt_isa_cap, from_limit[level], __ATOMIC_RELAXED);
  /* Report the level a tree built now gets. */
  co.backend = TDM_BACKEND_CPU;
  if (tdm_ctx_create(&co, &ctx) != TDM_OK) return -1;
  if (tdm_btree_build(ctx, &o, NULL, NULL, 0, &t) == TDM_OK) {
    got = (int)tdm__btree_cpu_of(t)->isa;
    tdm_btree_destroy(t);
  }
  tdm_ctx_destroy(ctx);
  return got;
}
