/** @file
 * tandem/mpi.h: the sort, the hash table and the B-tree across the processes
 * of an MPI communicator (library tandem_mpi: -ltandem_mpi, pkg-config
 * tandem-mpi, CMake target tandem::tandem_mpi).
 *
 * Every call is collective over its communicator: every rank calls it, in the
 * same order, with its own arrays and its own n (n may differ between ranks and
 * may be 0). **The result is that of the single-process call on the
 * concatenation of all ranks' inputs in rank order**, bit for bit; a rank's
 * outputs are the slice that belongs to it (its own queries, in its own order).
 *
 * Agreement: every rank returns the same status from a call. A bad argument on
 * one rank (NULL array with n > 0, a bad type, options that differ between
 * ranks) or a failure on one rank (out of memory, capacity) fails the call on
 * all ranks, and tdm_last_error() on every rank names the first failing rank
 * ("rank 2: ..."). A failed call leaves every rank's structures and inputs as
 * they were. A failed MPI call is TDM_ERR_COMM. The library works on a
 * duplicate of the caller's communicator whose error handler returns errors,
 * so the caller's communicator and its error handler are untouched.
 *
 * Handles: a NULL structure handle, or MPI_COMM_NULL, is
 * TDM_ERR_INVALID_ARGUMENT on that rank at once: without a communicator the
 * other ranks cannot be told, so pass the same kind of handle on every rank.
 *
 * Memory: on a CPU context arrays are host memory. On a CUDA context arrays
 * may be host or device memory; device arrays are staged through host memory
 * for the exchanges (see tdm_mpi_cuda_aware()).
 *
 * Threads: MPI must be initialised (MPI_THREAD_FUNNELED or higher when the
 * context uses several OpenMP threads, which only call MPI from the calling
 * thread). Calls on one communicator must not run concurrently.
 */
#ifndef TANDEM_MPI_H
#define TANDEM_MPI_H

#include <mpi.h>

#include <tandem/btree.h>
#include <tandem/common.h>
#include <tandem/hash.h>
#include <tandem/sort.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- sort ------------------------------------------------------------------ */

/** Distributed stable sort. Each rank passes its n keys and keeps its n: after
 *  the call rank r holds positions [n_0 + ... + n_{r-1}, ... + n_r) of the
 *  stable sort of the concatenation of every rank's keys in rank order
 *  (flags: 0 or TDM_SORT_DESCENDING, the same on every rank).
 *  Method: a sample sort. Splitters are (key, global position) pairs, so equal
 *  keys are split exactly where the single-process sort would put them; one
 *  all-to-all exchange moves every key to the rank whose splitter range holds
 *  it, a local tdm_sort orders it, and a second exchange moves the (few)
 *  elements that overshoot a rank's n to their neighbours. Message sizes are
 *  not limited by MPI's int counts (large exchanges are sent in pieces).
 *  With a single rank this is just the local tdm_sort.
 *  Memory per rank during the call: the keys (and values) about three times
 *  over (a send buffer, what the rank receives, the result) plus 12 bytes of
 *  bookkeeping per element.
 *  Returns TDM_ERR_INVALID_ARGUMENT (NULL ctx or keys with n > 0 on any rank,
 *  bad type or flags, a type or flags that differ between ranks),
 *  TDM_ERR_OUT_OF_MEMORY, TDM_ERR_COMM, or the local sort's status. */
TDM_API tdm_status tdm_mpi_sort(tdm_ctx *ctx, MPI_Comm comm, tdm_type key_type, void *keys, size_t n,
                                unsigned flags);

/** As tdm_mpi_sort, carrying values[i] with keys[i] (value_type any tdm_type,
 *  the same on every rank). */
TDM_API tdm_status tdm_mpi_sort_pairs(tdm_ctx *ctx, MPI_Comm comm, tdm_type key_type, void *keys,
                                      tdm_type value_type, void *values, size_t n, unsigned flags);

/* ---- hash table ------------------------------------------------------------ */

/** A hash table spread over the ranks of a communicator: a key lives on the
 *  rank chosen by a hash of its bits (a different mix from the local table's,
 *  so the local tables stay uniform), in a local tdm_hash there. */
typedef struct tdm_mpi_hash tdm_mpi_hash;

/** Creates the table on every rank (collective). opts must be the same on
 *  every rank (checked); opts->capacity is the expected number of keys over
 *  all ranks, and each rank's local table is sized for its share plus a
 *  margin for the spread of the hash (share + 4·sqrt(share) + 16, at most
 *  the whole capacity). With fixed_capacity an insert fails
 *  with TDM_ERR_CAPACITY on all ranks when one rank's share would not fit.
 *  Returns the statuses of tdm_hash_create and TDM_ERR_COMM; *out is set only
 *  on success. */
TDM_API tdm_status tdm_mpi_hash_create(tdm_ctx *ctx, MPI_Comm comm, const tdm_hash_opts *opts,
                                       tdm_mpi_hash **out);

/** Destroys the table (collective: it frees the table's communicator). NULL is
 *  a no-op (on every rank). */
TDM_API void tdm_mpi_hash_destroy(tdm_mpi_hash *h);

/** Inserts each rank's n keys with their values. Duplicates, within a rank and
 *  across ranks, are resolved in the concatenation order of the ranks, as one
 *  table fed the concatenation would (KEEP_FIRST keeps the value of the lowest
 *  (rank, index)). All-or-nothing over all ranks: when one rank's part fails
 *  (TDM_ERR_CAPACITY, TDM_ERR_OUT_OF_MEMORY), the ranks whose part succeeded
 *  restore their previous contents before returning (from the previous values
 *  of the batch's keys, recorded before the change). Memory during the call:
 *  the batch about four times over plus 12 bytes per element. */
TDM_API tdm_status tdm_mpi_hash_insert(tdm_mpi_hash *h, const void *keys, const void *values, size_t n);

/** Looks up each rank's n keys; answers in the caller's order. Either output
 *  may be NULL; a miss writes found 0 and an all-zero value. */
TDM_API tdm_status tdm_mpi_hash_find(const tdm_mpi_hash *h, const void *keys, void *values_out,
                                     uint8_t *found_out, size_t n);

/** Erases each rank's n keys; *erased_out (may be NULL) receives the number of
 *  keys erased over all ranks, the same on every rank. All-or-nothing. */
TDM_API tdm_status tdm_mpi_hash_erase(tdm_mpi_hash *h, const void *keys, size_t n, size_t *erased_out);

/** Number of keys over all ranks, written to *size_out on every rank. */
TDM_API tdm_status tdm_mpi_hash_size(const tdm_mpi_hash *h, size_t *size_out);

/* ---- B-tree ---------------------------------------------------------------- */

/** A B+ tree range-partitioned over the ranks: rank r holds the keys between
 *  splitters r-1 and r (taken from a sample of the keys, so each rank holds
 *  about the same number) in a local tdm_btree. */
typedef struct tdm_mpi_btree tdm_mpi_btree;

/** Builds the tree from every rank's n keys and values (collective; opts the
 *  same on every rank). Duplicates are resolved by opts->on_duplicate in the
 *  concatenation order of the ranks, as tdm_btree_build on the concatenation
 *  would. All copies of a key go to one rank. *out is set only on success. */
TDM_API tdm_status tdm_mpi_btree_build(tdm_ctx *ctx, MPI_Comm comm, const tdm_btree_opts *opts,
                                       const void *keys, const void *values, size_t n, tdm_mpi_btree **out);

/** Destroys the tree (collective). NULL is a no-op (on every rank). */
TDM_API void tdm_mpi_btree_destroy(tdm_mpi_btree *t);

/** Looks up each rank's n keys (routed to the rank whose range holds them);
 *  answers in the caller's order. Either output may be NULL. */
TDM_API tdm_status tdm_mpi_btree_find(const tdm_mpi_btree *t, const void *keys, void *values_out,
                                      uint8_t *found_out, size_t n);

/** Global rank of each query: the number of stored keys, over all ranks,
 *  strictly less than it (the owner's local rank plus the keys of the ranks
 *  before it). */
TDM_API tdm_status tdm_mpi_btree_rank(const tdm_mpi_btree *t, const void *keys, uint64_t *rank_out, size_t n);

/** Number of stored keys k, over all ranks, with lo[i] <= k <= hi[i]; 0 when
 *  lo[i] > hi[i]. A range spanning several ranks is answered from the global
 *  ranks of its two ends. */
TDM_API tdm_status tdm_mpi_btree_range_count(const tdm_mpi_btree *t, const void *lo, const void *hi,
                                             uint64_t *count_out, size_t n);

/** Inserts each rank's n keys and values (duplicates as tdm_mpi_hash_insert:
 *  the tree's policy in the concatenation order of the ranks). All-or-nothing
 *  over all ranks. Rebalance rule: when after the insert one rank holds more
 *  than twice the mean number of keys (and the tree holds at least 64 keys
 *  per rank), the tree is repartitioned from a fresh sample of its keys (so
 *  never with two ranks: neither can hold more than all keys); if that fails
 *  for lack of memory the insert still stands and the old partition is
 *  kept. */
TDM_API tdm_status tdm_mpi_btree_insert(tdm_mpi_btree *t, const void *keys, const void *values, size_t n);

/** Erases each rank's n keys; *erased_out (may be NULL) receives the number
 *  erased over all ranks. All-or-nothing. Erasing never repartitions. */
TDM_API tdm_status tdm_mpi_btree_erase(tdm_mpi_btree *t, const void *keys, size_t n, size_t *erased_out);

/** Number of keys over all ranks, written to *size_out on every rank. */
TDM_API tdm_status tdm_mpi_btree_size(const tdm_mpi_btree *t, size_t *size_out);

/* ---- information ------------------------------------------------------------ */

/** 1 when the MPI library in use reports CUDA support at run time (Open
 *  MPI's MPIX_Query_cuda_support), 0 otherwise or when that cannot be asked
 *  (an MPI without the extension). This version stages device arrays through
 *  host memory either way. */
TDM_API int tdm_mpi_cuda_aware(void);

/** Bytes this process has sent to other ranks in tandem_mpi exchanges since
 *  it started (sends to itself are not counted); for benchmarks and cost
 *  models. */
TDM_API uint64_t tdm_mpi_bytes_sent(void);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_MPI_H */
