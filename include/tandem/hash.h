/** @file
 * tandem/hash.h: an open-addressing hash table with bulk operations, on the
 * CPU and on CUDA.
 *
 *  - Every key value is a valid key, 0 and all-ones included: no sentinel is
 *    reserved from the user.
 *  - Keys: TDM_U32, TDM_U64, TDM_I32, TDM_I64 (float keys: TDM_ERR_UNSUPPORTED).
 *    Values: any tdm_type.
 *  - Duplicate handling is deterministic: the same sequence of calls gives the
 *    same table contents on CPU and GPU, whatever the thread schedule.
 *  - A batch is all-or-nothing: growth, capacity refusal and out-of-memory leave
 *    the table exactly as it was.
 *  - Stream-ordered CUDA contexts (TDM_CTX_STREAM_ORDERED): an insert into a
 *    fixed-capacity table with both arrays in device memory is queued and
 *    returns without waiting whenever the batch certainly fits. The table
 *    then keeps the outcome counts of such inserts (new keys, reused
 *    tombstones) in device memory, and its host-side size is known only up
 *    to an upper bound: size when last read + keys inserted since, every one
 *    counted as new. The next insert is judged against that bound; only when
 *    the bound might not fit does it read the exact counts (one host wait)
 *    and decide exactly (TDM_ERR_CAPACITY or not) as any insert does. Calls
 *    that need the exact counts read them first, a host wait whenever queued
 *    inserts are pending: tdm_hash_size, erase, export, clear, validate,
 *    destroy, and an insert into a growing table (it sizes its growth from
 *    them, and waits anyway). A key that found no free slot in a queued
 *    insert (only possible in a corrupt table) is reported by the next of
 *    these calls that returns a status, as TDM_ERR_CORRUPT; a device fault by tdm_ctx_sync or the
 *    next call that waits, as TDM_ERR_DEVICE. Views and finds never read the
 *    counts. Capture finds into a CUDA graph, not inserts: each replay of a
 *    captured insert would change the table without its counts. The GPU
 *    behaviour is compiled and tested on the CPU only until a GPU run of
 *    bench/device-check.sh checks it.
 */
#ifndef TANDEM_HASH_H
#define TANDEM_HASH_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What an insert does with a key that is already present (in the table or
 *  earlier in the same batch). */
typedef enum tdm_dup {
  TDM_DUP_KEEP_FIRST = 0, /**< existing value stays; within one batch the lowest index wins */
  TDM_DUP_KEEP_LAST = 1,  /**< the batch overwrites; within one batch the highest index wins */
  TDM_DUP_SUM = 2,        /**< integer values only: wrapping add */
  TDM_DUP_MIN = 3,        /**< smaller value in the value type's key order */
  TDM_DUP_MAX = 4,        /**< larger value in the value type's key order */
} tdm_dup;

/** Options for tdm_hash_create. */
typedef struct tdm_hash_opts {
  tdm_type key_type;    /**< TDM_U32, TDM_U64, TDM_I32, TDM_I64 */
  tdm_type value_type;  /**< any tdm_type */
  size_t capacity;      /**< expected number of keys; 0 allowed */
  double max_load;      /**< 0 = library default; otherwise in (0, 1) */
  int fixed_capacity;   /**< nonzero: never grow; an insert that might not fit fails with TDM_ERR_CAPACITY */
  tdm_dup on_duplicate; /**< duplicate policy */
} tdm_hash_opts;

/** A hash table: keys of one integer type mapped to values of one type, in
 *  the memory of its context's backend. */
typedef struct tdm_hash tdm_hash;

/** Creates an empty table on ctx's backend (host memory for a CPU context,
 *  device memory for a CUDA one) and stores it in *out (set only on success).
 *  The table starts with room for opts->capacity keys at the maximum load:
 *  2^k slots, the smallest power of two (at least 16) with
 *  floor(max_load * 2^k) >= capacity. The default max_load is 0.8; a slot is
 *  8 bytes for 32-bit keys and values and 16 bytes otherwise, so a full table
 *  at the default load uses 20 bytes per u64 -> u64 entry, and one that just
 *  grew 40 (about 27 for 10^7 entries created with that capacity). A CPU
 *  table keeps one more byte per slot beside the slots (a tag that lets a
 *  find answer most misses without reading the slots): 21.25 to 42.5 bytes.
 *  Returns TDM_ERR_INVALID_ARGUMENT for a NULL ctx, opts or out, a type or
 *  policy outside its enum, max_load outside {0} U (0, 1), or a capacity
 *  needing more than 2^48 slots; TDM_ERR_UNSUPPORTED for float keys or
 *  TDM_DUP_SUM with float values; TDM_ERR_OUT_OF_MEMORY; TDM_ERR_DEVICE.
 *  Stream-ordered context: waits for the device (it needs a device-computed value on the host: the cleared table must exist before the call returns). */
TDM_API tdm_status tdm_hash_create(tdm_ctx *ctx, const tdm_hash_opts *opts, tdm_hash **out);

/** Frees the table. NULL is a no-op. Destroy tables before their context.
 *  Stream-ordered context: waits for the device (queued work on the table
 *  finishes first; a device fault of it stays for tdm_ctx_sync to report). */
TDM_API void tdm_hash_destroy(tdm_hash *h);

/** Inserts n keys with their values (arrays of the table's key and value
 *  types). A key already present, in the table or earlier in the batch, is
 *  resolved by the table's tdm_dup policy exactly as if the batch were
 *  inserted one key at a time in index order, whatever the thread count or
 *  backend.
 *  Growth: when size + n could pass max_load, the table is first rehashed to
 *  the smallest power-of-two size that holds them (every key of the batch is
 *  counted as new), dropping tombstones of erased keys; a fixed-capacity table
 *  may only be rehashed at its own size and otherwise answers
 *  TDM_ERR_CAPACITY. The new table is allocated before the old one is
 *  released, so TDM_ERR_OUT_OF_MEMORY leaves the table exactly as it was.
 *  keys and values may overlap each other (both are read only). n == 0 is a
 *  no-op. Expected O(n) work (amortised over growth), parallel on the CPU.
 *  Returns TDM_ERR_INVALID_ARGUMENT (NULL table or arrays with n > 0, size
 *  overflow, device pointer on a CPU context), TDM_ERR_CAPACITY,
 *  TDM_ERR_OUT_OF_MEMORY, TDM_ERR_DEVICE, TDM_ERR_CORRUPT (keys of this or an
 *  earlier queued insert found no free slot: the table was corrupt, and
 *  this batch may have been applied).
 *  Stream-ordered context (TDM_CTX_STREAM_ORDERED): a fixed-capacity table
 *  with keys and values in device memory: queued on the context's stream,
 *  returns without waiting when size + the keys of queued inserts + n (+
 *  tombstones) fits the table's limit; otherwise waits once for the exact
 *  counts, then decides as above (see the header comment). A growing table,
 *  or a host array: waits for the device (the number of new keys is needed
 *  on the host, for the size and growth). */
TDM_API tdm_status tdm_hash_insert(tdm_hash *h, const void *keys, const void *values, size_t n);

/** Looks up n keys. For each key i: found_out[i] = 1 and values_out[i] = its
 *  value when present; found_out[i] = 0 and values_out[i] = all-zero bits when
 *  not. Either output may be NULL (values_out NULL: a membership test). keys,
 *  values_out and found_out must not overlap. Read only: safe to call from
 *  several threads on one table at once. Expected O(1) per key; the CPU
 *  backend hashes keys ahead and prefetches their slots to keep many memory
 *  accesses in flight.
 *  Returns TDM_ERR_INVALID_ARGUMENT (NULL table or keys with n > 0, overlap,
 *  device pointer on a CPU context), TDM_ERR_OUT_OF_MEMORY (staging on CUDA),
 *  TDM_ERR_DEVICE.
 *  Stream-ordered context (TDM_CTX_STREAM_ORDERED), all arrays in device memory: queued on the context's stream, returns without waiting; with a host array: waits. */
TDM_API tdm_status tdm_hash_find(const tdm_hash *h, const void *keys, void *values_out,
                                 uint8_t *found_out, size_t n);

/** Erases n keys; keys not present are ignored, and a key repeated in the
 *  batch is erased once. *erased_out (may be NULL; host memory) receives the
 *  number of keys removed. Erased slots become tombstones, reclaimed by the
 *  next rehash. Expected O(1) per key.
 *  Returns TDM_ERR_INVALID_ARGUMENT, TDM_ERR_OUT_OF_MEMORY (staging on
 *  CUDA), TDM_ERR_DEVICE.
 *  Stream-ordered context: waits for the device (it needs a device-computed value on the host: the erase count and the size; it also reads the counts of queued inserts first). */
TDM_API tdm_status tdm_hash_erase(tdm_hash *h, const void *keys, size_t n, size_t *erased_out);

/** Number of keys in the table; 0 for NULL. O(1), read only.
 *  Stream-ordered context: waits for the device when inserts were queued
 *  since the counts were last read (it reads them). It cannot fail: when the
 *  read fails (a device fault), it returns the upper bound (size when last
 *  read + keys inserted since) and the next call that reads the counts
 *  reports the error. */
TDM_API size_t tdm_hash_size(const tdm_hash *h);

/** Writes every key and its value to keys_out / values_out (arrays of cap
 *  elements), in no particular order, and the count to *n_out (may be NULL;
 *  host memory). If cap < size: TDM_ERR_CAPACITY, *n_out = size, nothing
 *  else written. The two arrays must not overlap; they may be NULL when the
 *  table is empty. Read only. O(slots).
 *  Returns TDM_ERR_INVALID_ARGUMENT, TDM_ERR_CAPACITY, TDM_ERR_OUT_OF_MEMORY
 *  (staging on CUDA), TDM_ERR_DEVICE.
 *  Stream-ordered context: waits for the device (it needs a device-computed value on the host: the pairs and their count, after the counts of queued inserts). */
TDM_API tdm_status tdm_hash_export(const tdm_hash *h, void *keys_out, void *values_out,
                                   size_t cap, size_t *n_out);

/** Removes every key; the table keeps its size (slot count). O(slots) at
 *  most (the CPU backend returns a large table's pages to the OS instead).
 *  Returns TDM_ERR_INVALID_ARGUMENT for NULL, TDM_ERR_DEVICE.
 *  Stream-ordered context: waits for the device (it needs a device-computed value on the host: the table is reset before the call returns, and the counts of queued inserts are read first, for their deferred errors). */
TDM_API tdm_status tdm_hash_clear(tdm_hash *h);

/** Checks every invariant: each live key reachable from its home slot along
 *  its probe sequence and stored once, free slots holding no value, the side
 *  slots of the two internal marker values consistent, the size and
 *  tombstone counts matching the slots, and the load within max_load.
 *  Returns TDM_OK, or TDM_ERR_CORRUPT with tdm_last_error() naming the slot
 *  and the broken invariant; TDM_ERR_INVALID_ARGUMENT for NULL;
 *  TDM_ERR_OUT_OF_MEMORY / TDM_ERR_DEVICE (CUDA copies the table to the host
 *  to check it). Read only. O(slots).
 *  Stream-ordered context: waits for the device (it reads the counts of
 *  queued inserts and the table). */
TDM_API tdm_status tdm_hash_validate(const tdm_hash *h);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_HASH_H */
