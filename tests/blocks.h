/*
 * blocks.h: the data operations' building blocks (src/backend.h, through
 * the hooks of tests/hooks/ops_blocks.c) against plain loops, shared by the
 * CPU's test_ops and the CUDA backend's test_ops_cuda.
 */
#ifndef TANDEM_TEST_BLOCKS_H
#define TANDEM_TEST_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "tandem/tandem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runs every block on ctx for each key type, some distributions and sizes
 * up to max_n (case_id seeds them), with the arrays in device memory when
 * device is 1. Returns 1 when every result equals the plain loop's, else 0
 * with the block, type, size and first difference in why. */
int blocks_check(tdm_ctx *ctx, int device, uint64_t case_id, size_t max_n, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_TEST_BLOCKS_H */
