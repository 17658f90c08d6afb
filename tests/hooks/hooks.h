/*
 * hooks.h: test-only hooks into the library's internals. They are compiled
 * into the test programs (the sources in tests/hooks/, linked with the static library,
 * whose hidden internals stay linkable), never into the installed library.
 */
#ifndef TANDEM_TEST_HOOKS_H
#define TANDEM_TEST_HOOKS_H

#include "tandem/tandem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Makes the k-th allocation from now fail (host or device; k >= 1, 0
 * disarms), and reads how many allocations were made since the last arm. */
void tdm_test_alloc_fail_at(long k);
long tdm_test_alloc_count(void);

/* A context's counters since its creation: allocations tandem made for it
 * and its structures (host and device, with or without a caller's
 * allocator), and host waits for the device (0 on a CPU context). Either
 * pointer may be NULL. */
void tdm_test_ctx_counters(const tdm_ctx *ctx, long *allocs, long *waits);

/* A context's cache of freed mappings: the bytes and blocks it holds now and
 * the requests it has served. Any pointer may be NULL. All zero when the
 * context keeps no mappings. */
void tdm_test_map_cache(tdm_ctx *ctx, size_t *bytes, int *blocks, long *hits);
/* Bytes the caches of all contexts of the process hold. */
size_t tdm_test_map_cache_total(void);

/* Breaks one invariant of a CPU tree so tests can check that
 * tdm_btree_validate names it. what: 1 key order (swap two leaf keys),
 * 2 separator bounds (raise a separator above its right child's keys),
 * 3 subtree count, 4 leaf chain, 5 fill (underfull leaf), 6 reachable twice,
 * 7 level, 8 padding. Returns TDM_ERR_UNSUPPORTED when the tree has no node of
 * the shape needed (e.g. 2 on a single leaf) or lives on a device. */
tdm_status tdm_test_btree_corrupt(tdm_btree *t, int what);

/* Limits the instruction sets Highway may dispatch to (keys-only sorts use
 * its vqsort): level 0 all the CPU has, 1 at most AVX2, 2 at most SSE4, 3 the
 * baseline only. Returns the name of the best target left, or NULL when the
 * library was built without Highway (every level is then the radix path).
 * Process-wide: call with 0 to undo. */
const char *tdm_test_hwy_limit(int level);

/* Forces the method of the data operations (tandem/ops.h): 0 lets each call
 * choose (the library's rule), 1 hashing, 2 sorting, 3 the dense table (integer keys of
 * a small range; others sort). Process-wide. */
enum { TDM_TEST_OPS_AUTO = 0, TDM_TEST_OPS_HASH = 1, TDM_TEST_OPS_SORT = 2, TDM_TEST_OPS_DENSE = 3 };
void tdm_test_ops_method(int method);
/* The backend's min/max pass of the dense method's rule on ctx: the smallest
 * and largest of n > 0 integer keys in numeric order, as their bits. */
tdm_status tdm_test_ops_minmax(tdm_ctx *ctx, tdm_type key_type, const void *keys, size_t n, uint64_t *min_bits,
                               uint64_t *max_bits);

/* The data operations' building blocks (src/backend.h) on ctx's backend,
 * each in a call of its own (tests/hooks/ops_blocks.c), arrays in host or
 * device memory, as backend.h describes each block: fill; canon_bits;
 * sort_words (sorted_out = the n words of width ks ascending);
 * sort_indexed; search; set (built from keys and vals, which may be NULL,
 * then probed with the queries: values_out, found_out or repeats may be
 * NULL); bits (a bit table of [lo, lo + span], cleared, set from keys,
 * tested with the queries); set_runs (set_build_runs, probed as set);
 * repeats_hint (*hint its answer); run_adds;
 * join_runs (ms_out starts as words; rows_out may be NULL; multi_out, may
 * be NULL, zeroed first);
 * join_bounds; scan_total; join_fill (idx of nr indices, or NULL: the
 * starts are right rows). */
tdm_status tdm_test_block_fill(tdm_ctx *ctx, void *out, int byte, size_t bytes);
tdm_status tdm_test_block_canon_bits(tdm_ctx *ctx, tdm_type t, const void *keys, size_t n, int numeric,
                                     void *bits_out);
tdm_status tdm_test_block_sort_words(tdm_ctx *ctx, size_t ks, const void *words, size_t n, void *sorted_out);
tdm_status tdm_test_block_sort_indexed(tdm_ctx *ctx, tdm_type t, int numeric, const void *keys, size_t n,
                                       void *bits_out, void *idx_out, size_t iw);
tdm_status tdm_test_block_search(tdm_ctx *ctx, tdm_type t, int numeric, const void *sorted, size_t m,
                                 const void *queries, size_t n, uint8_t *found_out);
tdm_status tdm_test_block_set(tdm_ctx *ctx, size_t ks, const void *keys, const uint64_t *vals, size_t m,
                              const void *queries, size_t n, uint64_t *values_out, uint8_t *found_out, int *repeats);
tdm_status tdm_test_block_set_runs(tdm_ctx *ctx, size_t ks, const void *keys, size_t m, const void *queries, size_t n,
                                   uint64_t *values_out, uint8_t *found_out, int *repeats);
tdm_status tdm_test_block_bits(tdm_ctx *ctx, size_t ks, const void *keys, size_t m, uint64_t lo, uint64_t span,
                               const void *queries, size_t n, uint8_t *found_out);
tdm_status tdm_test_block_repeats_hint(tdm_ctx *ctx, size_t ks, const void *words, size_t n, int *hint);
tdm_status tdm_test_block_run_adds(tdm_ctx *ctx, size_t ks, const void *sorted, size_t n, uint64_t *add_out);
tdm_status tdm_test_block_join_runs(tdm_ctx *ctx, int kind, const uint64_t *words, size_t nl, uint64_t *ms_out,
                                    uint64_t *mc_out, uint64_t *rows_out, uint64_t *multi_out);
tdm_status tdm_test_block_join_bounds(tdm_ctx *ctx, int kind, tdm_type t, int numeric, const void *left, size_t nl,
                                      const void *rbits, size_t nr, uint64_t *ms_out, uint64_t *mc_out,
                                      uint64_t *rows_out);
tdm_status tdm_test_block_scan_total(tdm_ctx *ctx, const uint64_t *in, size_t n, uint64_t *off_out, uint64_t *total);
tdm_status tdm_test_block_join_fill(tdm_ctx *ctx, int kind, const uint64_t *ms, const uint64_t *mc,
                                    const uint64_t *off, const void *idx, size_t iw, size_t nl, size_t nr,
                                    uint64_t *left_out, uint64_t *right_out, uint64_t total);
/* tdm_unique's blocks: unique_keys (sort_keys, then runs_keys into the
 * n-entry outputs, either may be NULL, kept to their first *G entries:
 * out_trim); runs of the n sorted words with their rows idx, then
 * groups_put (keys, ord of ow bytes or NULL) and groups_scatter (rank or
 * NULL) for the g_want runs the caller expects (another count: an error);
 * number (want: enum tdm__number_want of src/backend.h, FIRST or BITS
 * in it), its groups put in numbering order (words_out: each group's
 * word) and, with CODES, number_codes through rank (n entries, or NULL); invert; dense (dense_build,
 * dense_put; first_out only with want_first, inverse_out with
 * want_inverse). */
tdm_status tdm_test_block_unique_keys(tdm_ctx *ctx, tdm_type t, const void *keys, size_t n, void *keys_out,
                                      uint64_t *counts_out, size_t *G);
tdm_status tdm_test_block_runs(tdm_ctx *ctx, size_t ks, const void *sorted, const void *idx, size_t iw, size_t n,
                               int want_first, const void *keys, const void *ord, size_t ow, const uint64_t *rank, size_t g_want,
                               void *keys_out, uint64_t *first_out, uint64_t *counts_out, uint64_t *inverse_out,
                               size_t *G);
tdm_status tdm_test_block_number(tdm_ctx *ctx, size_t ks, const void *words, size_t n, unsigned want,
                                 size_t max_groups, const uint64_t *rank, int *too_many,
                                 void *words_out, uint64_t *first_out, uint64_t *counts_out, uint64_t *codes_out,
                                 size_t *G);
/* A set of m distinct words valued at their rows (set_build_rows), probed;
 * replace: a set of the queries is built first, which it replaces. */
tdm_status tdm_test_block_set_rows(tdm_ctx *ctx, size_t ks, const void *keys, size_t m, const void *queries, size_t n,
                                   uint64_t *values_out, uint8_t *found_out, int replace);
tdm_status tdm_test_block_invert(tdm_ctx *ctx, const void *perm, size_t pw, size_t n, uint64_t *inv_out);
tdm_status tdm_test_block_dense(tdm_ctx *ctx, tdm_type t, const void *keys, size_t n, uint64_t lo, uint64_t span,
                                int first_seen, int want_first, int want_inverse, void *keys_out, uint64_t *first_out,
                                uint64_t *counts_out, uint64_t *inverse_out, size_t *G);
/* tdm_group_reduce's blocks: the backend's hash_groups (backend.h); the
 * (key, value) pairs sorted, their runs' keys and folds; the folds of runs
 * of sorted bits with their rows (g_want runs expected), in the order ord
 * (NULL: the runs'); the numbering's fold with each group's word. */
int tdm_test_block_hash_groups(tdm_ctx *ctx);
tdm_status tdm_test_block_fold_pairs(tdm_ctx *ctx, tdm_type t, const void *keys, tdm_type vt, const void *values,
                                     size_t n, int agg, void *keys_out, void *values_out, size_t *G);
tdm_status tdm_test_block_fold_runs(tdm_ctx *ctx, size_t ks, const void *sorted, const void *idx, size_t iw, size_t n,
                                    const void *ord, size_t ow, size_t g_want, tdm_type vt, const void *values,
                                    int agg, void *values_out);
tdm_status tdm_test_block_number_fold(tdm_ctx *ctx, size_t ks, const void *words, size_t n, int first_seen,
                                      tdm_type vt, const void *values, int agg, void *words_out, void *values_out,
                                      size_t *G);

/* Caps the instruction-set level of the queries of CPU trees built from now
 * on: 0 all the CPU has, 1 at most AVX2, 2 the scalar loops. Returns the
 * level such a tree gets (0 scalar, 1 AVX2, 2 AVX-512), -1 on a bad level.
 * Process-wide: call with 0 to undo; trees built before keep their level. */
int tdm_test_btree_isa_limit(int level);

/* The CPU sort of a copy (cpu/cpu.h tdm__cpu_sort_copy): sorts what in_keys
 * / in_values hold into keys / values (values NULL: keys only), leaving the
 * input as it was. ctx must be a CPU context. */
tdm_status tdm_test_sort_copy(tdm_ctx *ctx, tdm_type key_type, const void *in_keys, void *keys, tdm_type value_type,
                              const void *in_values, void *values, size_t n, int desc);
/* The same with pairs and a sink (cpu/cpu.h tdm__sort_sink) that takes part
 * of each bucket the sort offers it: the taken pairs go to side_keys /
 * side_values at their output index, and taken[i] (n bytes) marks each index
 * where keys / values then hold junk (the last pair of each taken span is
 * left unmarked: the sort still writes it). */
tdm_status tdm_test_sort_copy_sink(tdm_ctx *ctx, tdm_type key_type, const void *in_keys, void *keys,
                                   tdm_type value_type, const void *in_values, void *values, size_t n, int desc,
                                   void *side_keys, void *side_values, unsigned char *taken);

/* Keys-only sorts on contexts of two or more threads: 0 follows the
 * library's rule, 1 sends every one to the two-thread split sort
 * (cpu/sort_split_cpu.c) whatever its size and the load of the machine. Its
 * partition loop is the one of the context's plan, chosen when the context
 * was created from the targets Highway had then: a context made after
 * tdm_test_hwy_limit(1) partitions with AVX2, after (2) and above with the
 * scalar loop. Process-wide. Built without Highway there is no split sort,
 * and the hook changes nothing. */
void tdm_test_keys_split(int on);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_TEST_HOOKS_H */
