/*
 * bench_peers.h: the GPU peers tandem is measured against, written here or
 * called raw: cub::DeviceRadixSort, a binary search over sorted keys (find,
 * rank, range count) and a linear-probing hash table. tandem-bench times
 * them on a GPU; the emulated device's cost meter (tests/cuda_emu/cost.c)
 * counts what they move, in the same model as tandem's rows. Plain C
 * declarations for that reason; each function waits for its kernels and
 * exits with a message on a CUDA error.
 */
#ifndef TANDEM_BENCH_PEERS_H
#define TANDEM_BENCH_PEERS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exits with "tandem-bench: WHAT: the CUDA error" when err is not 0
 * (cudaSuccess). */
void bench_cuda_check(int err, const char *what);
/* After a launch: the launch's error, then a device-wide wait. */
void bench_cuda_launched(const char *what);

/* Raw cub::DeviceRadixSort on device-resident unsigned keys of key_bytes (4
 * or 8) with optional 8-byte values (d_vals NULL for keys only), sorting from
 * d_keys/d_vals using the alternate buffers; temp storage preallocated by the
 * caller through bench_cub_temp_bytes (values nonzero: room for the pair
 * sort and the keys-only sort). Returns 1 when the sorted result is in the
 * alternate buffers, 0 when in d_keys/d_vals (CUB's DoubleBuffer selector). */
size_t bench_cub_temp_bytes(size_t n, int key_bytes, int values);
int bench_cub_sort(void *d_temp, size_t temp_bytes, void *d_keys, void *d_keys_alt, void *d_vals,
                   void *d_vals_alt, size_t n, int key_bytes);

/* Binary search over n sorted keys d_keys: find (values from d_vals, found
 * 0/1), rank (the number of keys below each query) and range count (keys in
 * [lo, hi], 0 when lo > hi). */
void bench_gpu_binsearch(const uint64_t *d_keys, const uint64_t *d_vals, size_t n, const uint64_t *d_q,
                         uint64_t *d_out, uint8_t *d_found, size_t nq);
void bench_gpu_binsearch_rank(const uint64_t *d_keys, size_t n, const uint64_t *d_q, uint64_t *d_rank, size_t nq);
void bench_gpu_binsearch_range_count(const uint64_t *d_keys, size_t n, const uint64_t *d_lo, const uint64_t *d_hi,
                                     uint64_t *d_count, size_t nq);

/* A linear-probing table of `slots` (a power of two) 16-byte slots {key,
 * value}, the key all-ones reserved as the empty mark (the baseline's
 * restriction, not tandem's); one thread per key, CAS insert. A key it
 * cannot store is dropped (a later find check counts it as wrong). */
void bench_lp_clear(void *d_table, size_t slots);
void bench_lp_insert(void *d_table, size_t slots, const uint64_t *d_keys, const uint64_t *d_vals, size_t n);
void bench_lp_find(const void *d_table, size_t slots, const uint64_t *d_q, uint64_t *d_out, uint8_t *d_found,
                   size_t nq);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_BENCH_PEERS_H */
