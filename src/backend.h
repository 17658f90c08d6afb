/*
 * backend.h: the boundary between the public layer (src/sort_api.c, hash_api.c, btree_api.c) and the
 * backends (cpu/, gpu/). The one private header a backend includes.
 *
 * Per structure there is a table of backend operations (tdm__sort_ops,
 * tdm__hash_ops, tdm__btree_ops); a backend descriptor (tdm__backend) bundles
 * the three with the context hooks. src/backends.c is the one place that
 * decides which descriptor a context gets (and reports a CUDA backend that was
 * not built); the context keeps it, a structure copies its table at creation,
 * and every public call goes through `h->ops->op(...)`.
 *
 * A handle is a common part that src/ owns and reads (types, policy, counters,
 * context, ops) followed by the backend's private state at h->be, which only
 * that backend interprets. Both live in one allocation of the public layer
 * (ops->state_bytes says how much the backend needs).
 *
 * Contracts for every operation: arguments arrive checked (non-NULL where
 * required, sizes that do not overflow, memory spaces the backend accepts,
 * no overlap of outputs with other arguments), and n > 0 unless noted. A
 * failing operation returns the status with the message set (tdm__fail) and
 * leaves the structure as it was.
 */
#ifndef TANDEM_BACKEND_H
#define TANDEM_BACKEND_H

#include "tandem/detail/btree_node.h"
#include "tandem/detail/hash_layout.h"
#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- sort ---------------------------------------------------------------- */

typedef struct tdm__sort_ops {
  /* Stable sort of keys (and values, when non-NULL) in place; n >= 2. */
  tdm_status (*sort)(tdm_ctx *ctx, tdm_type key_type, void *keys, tdm_type value_type, void *values, size_t n,
                     int desc);
  /* Stable argsort: perm_out receives the sorting permutation; keys untouched. */
  tdm_status (*argsort)(tdm_ctx *ctx, tdm_type key_type, const void *keys, tdm_type index_type, void *perm_out,
                        size_t n, int desc);
} tdm__sort_ops;

/* ---- hash table ---------------------------------------------------------- */

/* Default maximum load: live table keys + tombstones <= 0.8 * slots. */
#define TDM_HASH_DEFAULT_MAX_LOAD 0.8

typedef struct tdm__hash_ops tdm__hash_ops;

/* The common part of a hash table (hash_layout.h describes the slots). The
 * public layer decides growth from these counters; a backend updates them
 * only when an operation succeeds. */
struct tdm_hash {
  tdm_ctx *ctx;
  const tdm__hash_ops *ops;
  void *be;           /* backend state: ops->state_bytes, zeroed at creation */
  tdm_type key_type, value_type;
  int dup;            /* tdm_dup, as enum tdm__dup */
  int vkind;          /* keybits.h kind of the value type (MIN / MAX order) */
  int fixed;          /* never grow */
  double max_load;    /* in (0, 1) */
  unsigned ks, vs;    /* key and value widths in bytes (4 or 8) */
  unsigned slot_bytes;/* 8 or 16 */
  unsigned log2cap;   /* table slots = 2^log2cap */
  size_t cap;         /* 2^log2cap */
  size_t limit;       /* tdm__hash_limit(log2cap, max_load) */
  size_t size;        /* live keys, side slots included */
  size_t side;        /* live keys in side slots (0..2) */
  size_t tombs;       /* tombstones in the table */
  /* Keys of inserts whose outcome counts still sit on the device (queued
   * inserts into a fixed table on a stream-ordered CUDA context): the table
   * holds at most size + pending keys, and side and tombs may be that much
   * off too (side up, tombs down). Always 0 on a backend without
   * sync_counts. fold_counts (src/hash_api.c), the one place that reads the
   * device counts, folds them into size / side / tombs and sets it back to 0.
   * Written only under fold_lock or by a mutating call (exclusive access). */
  size_t pending;
  /* Keys that found no free slot, read by a fold that could not report them
   * (tdm_hash_size); the next call that returns a status reports them. */
  size_t lost;
  /* Serialises folds: size and export are read-only calls that other
   * threads may make at the same time, and each may have to fold. */
  pthread_mutex_t fold_lock;
};

struct tdm__hash_ops {
  size_t state_bytes; /* size of the backend state at h->be */
  /* Sets up an empty table of 2^h->log2cap slots (common part filled in). */
  tdm_status (*create)(tdm_hash *h);
  /* Frees what create and later calls allocated; h itself stays. */
  void (*destroy)(tdm_hash *h);
  /* When grow_log2 != 0 first rehashes into 2^grow_log2 slots (dropping
   * tombstones), then inserts; the caller guarantees the batch fits. */
  tdm_status (*insert)(tdm_hash *h, const void *keys, const void *values, size_t n, unsigned grow_log2);
  /* values_out or found_out may be NULL (not both). */
  tdm_status (*find)(const tdm_hash *h, const void *keys, void *values_out, uint8_t *found_out, size_t n);
  tdm_status (*erase)(tdm_hash *h, const void *keys, size_t n, size_t *erased);
  /* Writes the h->size live pairs (h->size > 0) in slot order. */
  tdm_status (*export_all)(const tdm_hash *h, void *keys_out, void *values_out);
  tdm_status (*clear)(tdm_hash *h);
  /* Checks the table with tdm__hash_check_slots on host-visible slots. */
  tdm_status (*validate)(const tdm_hash *h);
  /* Fills a view (tandem/view.h) of the table's own storage; the public
   * layer has set every field but the slot pointer. */
  tdm_status (*view)(const tdm_hash *h, tdm_hash_view *out);
  /* Brings the outcome counts that inserts accumulated on the device to the
   * host (a wait), adds them to size / side / tombs and resets the device
   * counts to zero; *no_slot receives how many keys found no free slot (a
   * corrupt table). On failure (a device error, named after fn) nothing
   * changed. Called only by fold_counts (src/hash_api.c). NULL when every insert
   * updates the counts itself before it returns (CPU). */
  tdm_status (*sync_counts)(tdm_hash *h, const char *fn, size_t *no_slot);
  /* Insert-or-number, the data operations' hash grouping (called only by
   * tdm__hash_number): the n keys in batch order. A key's value is its
   * number in the low 32 bits and its count above (TDM__HASH_NUMBER_ONE per
   * key). A key already in the table adds one to its count; a new key is
   * inserted with count 1 and number h->size just before it (so a table
   * filled only this way numbers its keys 0, 1, ... by first occurrence).
   * A new key beyond max_new new keys stops the call before it: *done = the
   * keys numbered. gid_out[i] (may be NULL) receives key i's number;
   * first_out[number] (may be NULL) = base + i for a new key i. The value
   * type is TDM_U64. grow_log2 as for insert; max_new more keys fit. NULL:
   * the backend has no such call. */
  tdm_status (*number)(tdm_hash *h, const void *keys, size_t n, size_t max_new, uint32_t *gid_out,
                       uint32_t *first_out, uint64_t base, size_t *done, unsigned grow_log2);
};

/* A numbered key's value: its number in the low 32 bits, its count above. */
#define TDM__HASH_NUMBER_ONE ((uint64_t)1 << 32)

/* The n keys numbered by first occurrence into h (src/hash_api.c): a table
 * created with value type TDM_U64 on a backend with a number call, filled
 * only by this call, grown as the batch needs. Numbering stops at the
 * first key that would make the table hold more than max_size keys (*done
 * is then below n; SIZE_MAX: no limit). gid_out (n entries) and first_out
 * (indexed by number) may be NULL, as for the number call. fn names the
 * public call in messages. */
TDM_INTERNAL tdm_status tdm__hash_number(tdm_hash *h, const char *fn, const void *keys, size_t n, size_t max_size,
                                         uint32_t *gid_out, uint32_t *first_out, size_t *done);
/* counts_out[g] = the count of number g, for the h->size numbers of a table
 * filled by tdm__hash_number. */
TDM_INTERNAL tdm_status tdm__hash_number_counts(tdm_hash *h, const char *fn, uint32_t *counts_out);

/* Fills the common part of an empty table of 2^log2cap slots (everything
 * but the counters and fold_lock, which the caller owns): the one place
 * that derives widths, slot size and load limit, for tdm_hash_create and
 * for a backend's scratch tables (the CUDA data operations'). */
TDM_INTERNAL void tdm__hash_init_common(tdm_hash *h, tdm_ctx *ctx, const tdm__hash_ops *ops, void *be,
                                       tdm_type key_type, tdm_type value_type, int dup, int fixed, double max_load,
                                       unsigned log2cap);

/* Bytes of a table of 2^log2cap slots plus the two side slots. */
static inline size_t tdm__hash_table_bytes(const tdm_hash *h, unsigned log2cap) {
  return (((size_t)1 << log2cap) + 2u) * h->slot_bytes;
}

/* Checks a host copy of a table against every invariant (hash_layout.h) and
 * the common counters: TDM_OK, or TDM_ERR_CORRUPT naming the slot and the
 * broken invariant. Backend-neutral (src/hash_check.c), used by both
 * backends' validate. */
TDM_INTERNAL tdm_status tdm__hash_check_slots(const tdm_hash *h, const void *slots);

/* ---- B+ tree ------------------------------------------------------------- */

typedef struct tdm__btree_ops tdm__btree_ops;

/* The common part of a B+ tree: what describes it whatever its storage. */
struct tdm_btree {
  tdm_ctx *ctx;
  const tdm__btree_ops *ops;
  void *be;         /* backend state: ops->state_bytes, zeroed at creation */
  tdm_type key_type, value_type;
  int dup;          /* tdm_dup, as enum tdm__dup */
  int kind, vkind;  /* keybits kinds of key and value types */
  uint32_t ks, vs;  /* key and value widths in bytes */

  uint64_t size;    /* keys stored */
  unsigned height;  /* 0 empty, 1 a single leaf */
  uint32_t root;    /* TDM_BT_NIL when empty */
  uint32_t first_leaf, last_leaf;
};

struct tdm__btree_ops {
  size_t state_bytes; /* size of the backend state at t->be */
  /* Bulk-loads n >= 0 pairs (duplicates combined under t->dup). */
  tdm_status (*build)(tdm_btree *t, const void *keys, const void *values, size_t n);
  void (*destroy)(tdm_btree *t);
  /* values_out or found_out may be NULL (not both). */
  tdm_status (*find)(const tdm_btree *t, const void *keys, void *values_out, uint8_t *found_out, size_t n);
  tdm_status (*rank)(const tdm_btree *t, const void *keys, uint64_t *rank_out, size_t n);
  tdm_status (*range_count)(const tdm_btree *t, const void *lo, const void *hi, uint64_t *count_out, size_t n);
  /* n may be 0: then only offsets_out[0] = 0 is written. keys_out and
   * values_out may be NULL. */
  tdm_status (*range)(const tdm_btree *t, const void *lo, const void *hi, size_t n, uint64_t *offsets_out,
                      void *keys_out, void *values_out, size_t cap);
  tdm_status (*insert)(tdm_btree *t, const void *keys, const void *values, size_t n);
  tdm_status (*erase)(tdm_btree *t, const void *keys, size_t n, size_t *erased_out);
  /* Writes all t->size pairs (t->size > 0) in key order; one output may be NULL. */
  tdm_status (*export_all)(const tdm_btree *t, void *keys_out, void *values_out);
  /* Checks the tree with tdm__bt_check_nodes on host-visible nodes. */
  tdm_status (*validate)(const tdm_btree *t);
  /* Fills a view (tandem/view.h) of the tree's own storage; the public
   * layer has set every field but the node pointer. */
  tdm_status (*view)(const tdm_btree *t, tdm_btree_view *out);
};

/* Checks n_nodes host nodes, live of them in use, as the common part of t
 * describes the tree (root, size, height, leaf ends): TDM_OK or
 * TDM_ERR_CORRUPT naming the node and the broken invariant (btree_node.h).
 * Backend-neutral (src/btree_check.c). */
TDM_INTERNAL tdm_status tdm__bt_check_nodes(const tdm_btree *t, const tdm__bt_node *nodes, uint32_t n_nodes,
                                            uint32_t live);

/* ---- data operations (tandem/ops.h) -------------------------------------- */

/* How a data operation finds equal keys: hashing (the hash table of
 * tandem/hash.h), sorting (the radix sort), or, for integer keys whose
 * range is small, a dense table indexed by key - min (the args' dense_min
 * and dense_span say the range). src/ops_api.c picks one per call (AUTO
 * never reaches a backend; DENSE only with the range set); the results are
 * the same bytes. */
enum tdm__ops_method { TDM__OPS_AUTO = 0, TDM__OPS_HASH = 1, TDM__OPS_SORT = 2, TDM__OPS_DENSE = 3 };

/* What a backend's hash method of tdm_group_reduce and tdm_unique (and so
 * of group_reduce's COUNT, unique's keys and counts) covers, and when the
 * rule (src/ops_api.c) takes it (tdm__ops_ops.hash_groups). */
enum tdm__hash_groups {
  /* Rows numbered in input order (the hash table's insert-or-number), so
   * every aggregation and order (a fold in input order), every output of
   * unique; group_reduce on one thread: the CPU. */
  TDM__HASH_GROUPS_IN_ORDER = 0,
  /* Rows folded into a table in any order: group_reduce's SUM, MIN, MAX of
   * integer values (the order-free folds), and unique with an inverse and
   * no first indices, in ascending order of keys compared by their bits;
   * unique in first-seen order (a table of each key's first row): always.
   * The CUDA backend. */
  TDM__HASH_GROUPS_UNORDERED = 1
};

/* Set only by the test build (tests/hooks/ops_method.c): a method other than
 * AUTO forces every data operation onto it. */
TDM_INTERNAL extern int tdm__ops_force_method;

/* Arguments of the data operations, checked by src/ops_api.c (outputs that
 * may be NULL are NULL when not wanted; numeric: TDM_EQ_NUMERIC on a float
 * key type; first_seen: TDM_ORDER_FIRST_SEEN). n > 0. */
typedef struct tdm__unique_args {
  tdm_type key_type;
  const void *keys;
  size_t n;
  int numeric, first_seen;
  void *unique_out;
  uint64_t *first_index_out, *counts_out, *inverse_out;
  size_t *n_unique_out;
  /* The hash method gives way to the sort past this many distinct keys
   * (SIZE_MAX when the method was forced; src/ops_api.c's rule). */
  size_t hash_max_groups;
  /* The dense method's range: every key k has (k - dense_min), in the key's
   * width as unsigned arithmetic, at most dense_span. */
  uint64_t dense_min, dense_span;
} tdm__unique_args;

typedef struct tdm__group_args {
  tdm_type key_type, value_type;
  const void *keys, *values;
  size_t n;
  int agg; /* tdm_agg, not COUNT (tdm_unique's keys and counts) */
  int numeric, first_seen;
  void *keys_out, *values_out;
  size_t *n_groups_out;
  size_t hash_max_groups; /* as in tdm__unique_args */
} tdm__group_args;

/* n > 0 and m > 0. */
typedef struct tdm__isin_args {
  tdm_type key_type;
  const void *queries, *set;
  size_t n, m;
  int numeric;
  uint8_t *found_out;
  /* The dense method's range, of the set (queries outside it are not
   * members): as in tdm__unique_args. */
  uint64_t dense_min, dense_span;
} tdm__isin_args;

/* n_left > 0 (n_right may be 0). The backend sets *n_out, and writes the
 * rows only when they fit cap (else TDM_ERR_CAPACITY, nothing written). */
typedef struct tdm__join_args {
  int kind; /* tdm_join_kind */
  tdm_type key_type;
  const void *left, *right;
  size_t n_left, n_right;
  int numeric;
  uint64_t *left_out, *right_out;
  size_t cap;
  size_t *n_out;
} tdm__join_args;

/* One data operation's memory, for the operations written once in the core
 * (src/ops_*.c) over the backend's building blocks below: the caller's
 * arrays as the backend reads and writes them (in place, or staged copies
 * in its memory) and scratch of the same kind, all released by the end
 * call whichever way the operation went. The core sets ctx, fn and ops and
 * reads nothing else; be is the backend's (a C++ object on the CUDA
 * backend, constructed by begin). */
typedef struct tdm__call {
  tdm_ctx *ctx;
  const char *fn; /* the public call, for messages */
  const struct tdm__ops_ops *ops;
  uint64_t be[288];
} tdm__call;

/* Groups of equal words, as the grouping blocks (runs, number) describe
 * them for the operations written once: G groups, and per group (each
 * array of G entries in the call's memory, NULL when not made) its first
 * row, its number of rows, its word (the width of the words grouped) and,
 * from runs, its run of sorted positions, off[r] .. off[r + 1) (G + 1
 * entries), whose rows are idx[off[r]] .. (iw bytes an index): a run's
 * first row and count are read from them where first or count is NULL. */
typedef struct tdm__groups {
  size_t G, iw;
  uint64_t *first, *count, *off;
  const void *bits, *idx;
  /* number with a fold only: each group's result (vw bytes: the
   * aggregation's output width), in the numbering's order. */
  const void *vals;
  size_t vw;
  /* number only: more than max_groups distinct words; nothing else is set. */
  int too_many;
} tdm__groups;

/* tdm_group_reduce's fold of a group's values (not COUNT): agg (tdm_agg)
 * of the values (value_type, at the call's address values), a left fold in
 * input order (tdm__ops_fold, ops_keys.h) whose result is of the value
 * type, float64 for MEAN. */
typedef struct tdm__fold {
  int agg;
  tdm_type value_type;
  const void *values;
} tdm__fold;

/* The bytes of a fold's result per group. */
static inline size_t tdm__fold_width(const tdm__fold *f) {
  return f->agg == TDM_AGG_MEAN ? 8 : tdm_type_size(f->value_type);
}

/* What the number block is asked for (a mask). */
enum tdm__number_want {
  TDM__NUMBER_FIRST_SEEN = 1, /* groups numbered by first row */
  TDM__NUMBER_FIRST = 2,      /* each group's first row */
  TDM__NUMBER_COUNT = 4,      /* its rows */
  TDM__NUMBER_BITS = 8,       /* its word */
  TDM__NUMBER_CODES = 16      /* each row's group, for number_codes */
};

typedef struct tdm__ops_ops {
  /* ---- a call's memory (tdm__call) ----
   * begin starts the call (on the CUDA backend: the context's device made
   * current, refused over a pending error or while the stream is captured,
   * since every data operation may wait); end is called once after a
   * successful begin, with the operation's status so far: on TDM_OK it
   * copies staged outputs back and ends the call (a wait, except in
   * stream-ordered mode with nothing staged), and whatever st was it frees
   * the call's memory and returns st or the end's own failure. in / out
   * give the address of a caller array of bytes bytes (host or device
   * memory, as checked) that the building blocks read or write; scratch
   * gives bytes of the backend's memory (for 0 bytes NULL, or an address
   * not to be read). */
  tdm_status (*begin)(tdm__call *c);
  tdm_status (*end)(tdm__call *c, tdm_status st);
  tdm_status (*in)(tdm__call *c, const void *user, size_t bytes, const void **d);
  tdm_status (*out)(tdm__call *c, void *user, size_t bytes, void **d);
  tdm_status (*scratch)(tdm__call *c, size_t bytes, void **d);
  /* Only the first bytes of the output d (from out) were written: a staged
   * copy goes back that long, and the rest of the caller's array is left
   * as it was. */
  tdm_status (*out_trim)(tdm__call *c, void *d, size_t bytes);

  /* ---- building blocks, on a call's addresses; key widths 4 or 8 ---- */
  /* bytes bytes at d set to byte. */
  tdm_status (*fill)(tdm__call *c, void *d, int byte, size_t bytes);
  /* dst[i] = the canonical sort bits of src[i] (ops_keys.h: equal keys,
   * numerically equal under numeric, get equal bits, in the key order),
   * for i < n. */
  tdm_status (*canon_bits)(tdm__call *c, tdm_type key_type, const void *src, void *dst, size_t n, int numeric);
  /* The n words of width ks at d sorted ascending as unsigned integers, in
   * place; n may be 0 or 1. */
  tdm_status (*sort_words)(tdm__call *c, size_t ks, void *d, size_t n);
  /* bits = the canonical sort bits of the n > 0 keys at src, ascending,
   * and idx their rows (iw bytes an index: 4 when n <= UINT32_MAX, or 8),
   * a stable sort: equal bits keep their rows ascending. */
  tdm_status (*sort_indexed)(tdm__call *c, tdm_type key_type, int numeric, const void *src, size_t n, void *bits,
                             void *idx, size_t iw);
  /* found[i] = 1 if query i's canonical sort bits are among the m > 0
   * ascending words of sorted, else 0, for i < n. */
  tdm_status (*search)(tdm__call *c, tdm_type key_type, int numeric, const void *sorted, size_t m,
                       const void *queries, size_t n, uint8_t *found);
  /* The call's set of the m > 0 words of width ks at keys, compared as
   * bits: made by set_build (a second set_build replaces the first),
   * probed by set_probe, freed by end. With vals, each word's value is the
   * sum (wrapping) of the vals of its rows; set_probe gives values[i] =
   * query i's value (0 for a word not in the set) and found[i] = 1 if it is
   * in the set, either may be NULL. repeats (may be NULL): 1 when a word
   * occurs more than once among the m, 0 when none does, -1 when the
   * backend cannot tell without waiting for the device (CUDA). */
  tdm_status (*set_build)(tdm__call *c, size_t ks, const void *keys, const uint64_t *vals, size_t m, int *repeats);
  tdm_status (*set_probe)(tdm__call *c, const void *queries, size_t n, uint64_t *values, uint8_t *found);
  /* The call's set of m > 0 distinct words, each valued at its row j;
   * it replaces an earlier set as a second set_build does. */
  tdm_status (*set_build_rows)(tdm__call *c, size_t ks, const void *keys, size_t m);
  /* The call's set of the m > 0 words, each row j a run of its own: as
   * set_build with vals[j] = tdm__ops_join_run_add(1, j) (ops_keys.h),
   * which the CPU writes into add (m words of the caller's scratch) and
   * CUDA's claim makes from j itself (add unused); repeats as set_build's. */
  tdm_status (*set_build_runs)(tdm__call *c, size_t ks, const void *keys, size_t m, uint64_t *add, int *repeats);
  /* Whether the n > 0 words of width ks at words seem to repeat, from a
   * sample (64 runs of 1024 consecutive words spread over them, all of
   * them when fewer): 1 when two sampled words are equal, 0 when none are,
   * -1 when the backend cannot look without waiting for the device (CUDA)
   * or could not take the sample's memory. A guess that picks a method,
   * never a result. */
  int (*repeats_hint)(tdm__call *c, size_t ks, const void *words, size_t n);
  /* add[k] = tdm__ops_join_run_add(k starts a run, k) for the n > 0
   * ascending words of width ks at sorted (ops_keys.h): summed per word by
   * a set, each run's start and length in one word. */
  tdm_status (*run_adds)(tdm__call *c, size_t ks, const void *sorted, size_t n, uint64_t *add);
  /* A join's left rows' runs of matches from the set's words, in place:
   * ms[i] holds left row i's word on entry, its run's start on return;
   * mc[i] = the run's length and, unless rows is NULL, rows[i] =
   * tdm__ops_join_rows(kind, mc[i]), for i < nl (rows[nl] is the
   * caller's). multi (may be NULL): TDM__OPS_JOIN_MULTI is or-ed into
   * *multi when some mc[i] > 1. */
  tdm_status (*join_runs)(tdm__call *c, int kind, uint64_t *ms, uint64_t *mc, uint64_t *rows, size_t nl,
                          uint64_t *multi);
  /* The same by two binary searches of the nr >= 0 ascending canonical
   * bits rbits for each left key's canonical bits. */
  tdm_status (*join_bounds)(tdm__call *c, int kind, tdm_type key_type, int numeric, const void *left, size_t nl,
                            const void *rbits, size_t nr, uint64_t *ms, uint64_t *mc, uint64_t *rows);
  /* off = the exclusive sum of the n > 0 words at in, the last of them 0
   * (in may be off: in place), and *total = off[n - 1] (the sum of all), on
   * the host. */
  tdm_status (*scan_total)(tdm__call *c, const uint64_t *in, uint64_t *off, size_t n, uint64_t *total);
  /* Output rows [0, total) of a join by output position
   * (tdm__ops_join_fill, ops_keys.h): left rows into left_out and, when
   * tdm__ops_join_pairs, right indices (idx of iw bytes) into right_out. */
  tdm_status (*join_fill)(tdm__call *c, int kind, const uint64_t *ms, const uint64_t *mc, const uint64_t *off,
                          const void *idx, size_t iw, size_t nl, uint64_t *left_out, uint64_t *right_out,
                          uint64_t total);
  /* A table of a bit per value of [lo, lo + span]: bits_words(span) words
   * of 8 bytes, cleared by the caller (fill); bits_set sets the bit of each
   * of the m keys, all in the range (key - lo in the key's width as
   * unsigned arithmetic), and bits_test gives found[i] = 1 where query i is
   * in the range and its bit is set. */
  tdm_status (*bits_set)(tdm__call *c, size_t ks, const void *keys, size_t m, uint64_t lo, uint64_t *bits);
  tdm_status (*bits_test)(tdm__call *c, size_t ks, const void *queries, size_t n, uint64_t lo, uint64_t span,
                          const uint64_t *bits, uint8_t *found);

  /* tdm_unique's blocks. */
  /* *sorted = the n > 0 keys at src sorted ascending in the type's order,
   * in the call's memory, as the backend's sort words: read only by
   * runs_keys. src may be consumed (sorted in place, when it is the call's
   * own staged copy): the caller reads it no more. */
  tdm_status (*sort_keys)(tdm__call *c, tdm_type key_type, const void *src, size_t n, void **sorted);
  /* The runs of equal words of sort_keys' n sorted words: *G of them (on
   * the host), run r's key into keys_out[r] and its length into
   * counts_out[r] (either output may be NULL; each holds n). */
  tdm_status (*runs_keys)(tdm__call *c, tdm_type key_type, const void *sorted, size_t n, void *keys_out,
                          uint64_t *counts_out, size_t *G);
  /* g = the runs of equal words in the n > 0 ascending words of width ks
   * at sorted, and idx (iw bytes an index) their rows: G (on the host),
   * off, idx and, with want_first, first[r] = idx[off[r]]. */
  tdm_status (*runs)(tdm__call *c, size_t ks, const void *sorted, const void *idx, size_t iw, size_t n,
                     int want_first, tdm__groups *g);
  /* The hash table's insert-or-number of the n > 0 words of width ks at
   * words (compared as bits): G groups, numbered by first row with
   * TDM__NUMBER_FIRST_SEEN, else in an order of the backend's, and what
   * want asks of each (enum tdm__number_want; a backend may give more).
   * Past max_groups distinct words it may stop with g->too_many (then
   * nothing is kept). The call's numbering (one a call) stays for
   * number_codes (with TDM__NUMBER_CODES): code[i] = rank[the group of row
   * i] (rank NULL: the group itself), for i < n. With fold, each group's
   * fold of its rows' values into g->vals: in input order where hash_groups
   * is TDM__HASH_GROUPS_IN_ORDER, else (the rule's) only an order-free
   * aggregation (tdm__ops_order_free), folded in any order. */
  tdm_status (*number)(tdm__call *c, size_t ks, const void *words, size_t n, unsigned want, size_t max_groups,
                       const tdm__fold *fold, tdm__groups *g);
  tdm_status (*number_codes)(tdm__call *c, const uint64_t *rank, uint64_t *code);
  /* inv[perm[p]] = p for p < n (perm: pw bytes an entry, a permutation). */
  tdm_status (*invert)(tdm__call *c, const void *perm, size_t pw, size_t n, uint64_t *inv);
  /* For output positions p < G, the group q = ord[p] (ow bytes an entry;
   * ord NULL: q = p): keys_out[p] = the key at its first row (keys, ks
   * bytes each; runs without idx: the key at the run's first position) or,
   * without first rows, its word; first_out[p] its first row; counts_out[p]
   * its count; values_out[p] its fold (g->vals). Any output may be NULL. */
  tdm_status (*groups_put)(tdm__call *c, size_t ks, const void *keys, const tdm__groups *g, const void *ord,
                           size_t ow, void *keys_out, uint64_t *first_out, uint64_t *counts_out, void *values_out);
  /* tdm_group_reduce's blocks. */
  /* The n > 0 keys sorted ascending in the type's order as the backend's
   * sort words (as sort_keys: equal keys have equal words), into words,
   * and their values along into vals (vs bytes each), a stable sort: each
   * run of equal words keeps its values in input order. */
  tdm_status (*sort_pairs)(tdm__call *c, tdm_type key_type, const void *keys, const void *values, size_t vs,
                           size_t n, void *words, void *vals);
  /* The n sort words at d (sort_pairs') back to their keys, in place. */
  tdm_status (*words_keys)(tdm__call *c, tdm_type key_type, void *d, size_t n);
  /* values_out[p] = the fold of the values of run q = ord[p] of g (from
   * runs; ord of ow bytes, NULL: q = p), whose rows idx[off[q]] ..
   * idx[off[q + 1]) are ascending, so folded in input order (g->idx NULL:
   * the run's positions, the values sorted along its words). */
  tdm_status (*fold_runs)(tdm__call *c, const tdm__groups *g, const void *ord, size_t ow, const tdm__fold *f,
                          void *values_out);
  /* inverse_out[idx[k]] = rank[r] (rank NULL: r) for every sorted
   * position k < n of run r of g (from runs; idx of iw bytes). */
  tdm_status (*groups_scatter)(tdm__call *c, const tdm__groups *g, const void *idx, size_t iw, const uint64_t *rank,
                               size_t n, uint64_t *inverse_out);
  /* The dense table of the n > 0 integer keys (key - lo, in the key's
   * width, at most span): the call's (one a call), made by dense_build,
   * which finds the G (on the host) values in use and numbers them in key
   * order or, with first_seen, by first row; dense_put writes, for each
   * value in use, at its number: the key, its first row, its count, and
   * each row's number into inverse_out (any output may be NULL, first_out
   * only with want_first, inverse_out only with want_inverse). */
  tdm_status (*dense_build)(tdm__call *c, tdm_type key_type, const void *keys, size_t n, uint64_t lo, uint64_t span,
                            int first_seen, int want_first, int want_inverse, size_t *G);
  tdm_status (*dense_put)(tdm__call *c, void *keys_out, uint64_t *first_out, uint64_t *counts_out,
                          uint64_t *inverse_out);

  /* The smallest and largest of n > 0 integer keys (TDM_U32 .. TDM_I64) in
   * the type's numeric order, as their bits (zero-extended from 32): the
   * one pass the core reads to decide the dense method. Keys may be host
   * or device memory as for the operations. The pass may stop as soon as
   * max - min >= stop_span (the range is then too wide to matter, and the
   * two results only say so): keys spread wide cost a few blocks, not a
   * pass. */
  tdm_status (*minmax)(tdm_ctx *ctx, tdm_type key_type, const void *keys, size_t n, uint64_t stop_span,
                       uint64_t *min_bits, uint64_t *max_bits);
  /* 1: the library's rule may pick the dense method (and runs the min/max
   * pass on every integer call to decide); 0: only a forced DENSE (the test
   * hook) takes it, where the pass costs more than the rule could gain. */
  int dense_by_rule;
  /* The method tdm_join takes when none is forced (TDM__OPS_SORT or
   * TDM__OPS_HASH): each backend's measured choice (src/ops_api.c). */
  int join_method;
  /* enum tdm__hash_groups. */
  int hash_groups;
} tdm__ops_ops;

/* Words of 8 bytes in a bit table of values lo .. lo + span. */
static inline size_t tdm__bits_words(uint64_t span) { return (size_t)(span >> 6) + 1; }

/* The data operations written once over the building blocks (src/ops_*.c),
 * called by src/ops_api.c with checked arguments and the method picked. */
TDM_INTERNAL tdm_status tdm__unique_run(tdm_ctx *ctx, const tdm__unique_args *a, int method);
TDM_INTERNAL tdm_status tdm__group_run(tdm_ctx *ctx, const tdm__group_args *a, int method);

/* The groups of equal keys of tdm_unique and tdm_group_reduce
 * (src/ops_grouping.c), in the call's scratch.
 * By the sort: the n > 0 keys' canonical sort bits (numeric:
 * TDM_EQ_NUMERIC) sorted with their rows (idx, iw bytes an index), their
 * runs (g, with first rows in first-seen order) and in first-seen order
 * (two runs or more) ord (ow bytes an entry), the run at each output
 * position (NULL and 0 otherwise). */
typedef struct tdm__sorted {
  tdm__groups g;
  void *idx, *ord;
  size_t iw, ow;
} tdm__sorted;
TDM_INTERNAL tdm_status tdm__sorted_groups(tdm__call *c, tdm_type key_type, int numeric, int first_seen,
                                           const void *keys, size_t n, tdm__sorted *s);
/* By the hash: the n > 0 keys (under
 * numeric their canonical bits, into the call's scratch) numbered by the
 * number block with want and fold (g; g.too_many past max_groups), and in
 * ascending order (not first_seen, two groups or more) the groups' words
 * sorted, as the key type orders them: sorted, and ord (ow bytes an entry)
 * the group at each ascending position. NULL and 0 otherwise. */
typedef struct tdm__hashed {
  tdm__groups g;
  const void *words; /* the words numbered: the keys, or their canonical bits */
  void *sorted, *ord;
  size_t ow;
} tdm__hashed;
TDM_INTERNAL tdm_status tdm__hashed_groups(tdm__call *c, tdm_type key_type, int numeric, int first_seen,
                                           const void *keys, size_t n, unsigned want, size_t max_groups,
                                           const tdm__fold *fold, tdm__hashed *h);
TDM_INTERNAL tdm_status tdm__isin_run(tdm_ctx *ctx, const tdm__isin_args *a, int method);
TDM_INTERNAL tdm_status tdm__join_run(tdm_ctx *ctx, const tdm__join_args *a, int method);

/* ---- backends ------------------------------------------------------------ */

typedef struct tdm__backend {
  tdm_backend id;
  /* 1: caller arrays must be host memory (tdm__check_array refuses device
   * pointers); 0: host or device memory, the backend stages as needed. */
  int host_arrays_only;
  /* Sets up the backend's per-context state (ctx->gpu); NULL: none. */
  tdm_status (*ctx_init)(tdm_ctx *ctx);
  void (*ctx_fini)(tdm_ctx *ctx);
  /* tdm_ctx_sync: waits for the context's queued work and reports a deferred
   * device fault; NULL: nothing is ever queued (TDM_OK). */
  tdm_status (*ctx_sync)(tdm_ctx *ctx);
  const tdm__sort_ops *sort;
  const tdm__hash_ops *hash;
  const tdm__btree_ops *btree;
  /* Copies bytes between host and device memory (either way) on the
   * context's stream and waits: the host staging that layered libraries use
   * (src/services.c). NULL: the backend takes host arrays only. */
  tdm_status (*copy)(tdm_ctx *ctx, void *dst, const void *src, size_t bytes);
  const tdm__ops_ops *ops; /* NULL: the data operations are not built for this backend */
} tdm__backend;

/* Defined by cpu/ (always) and gpu/ (when built with CUDA). */
TDM_INTERNAL extern const tdm__backend tdm__cpu_backend;
#ifdef TANDEM_HAVE_CUDA
/* The CUDA backend's descriptor (gpu/backend_gpu.cu). */
TDM_INTERNAL extern const tdm__backend tdm__cuda_backend;
/* Usable CUDA devices (0 without a driver); never fails. */
TDM_INTERNAL int tdm__cuda_device_count(void);
#endif

/* src/backends.c, the one place a backend is chosen: the descriptor for a
 * resolved backend (CPU or CUDA), or TDM_ERR_NO_DEVICE with the reason when
 * CUDA was not built in. fn names the public function in the message. */
TDM_INTERNAL tdm_status tdm__backend_get(tdm_backend which, const char *fn, const tdm__backend **out);
/* Usable CUDA devices; 0 when CUDA was not built in. */
TDM_INTERNAL int tdm__device_count(void);

/* Starts a call of the data operations on ctx's backend (its begin): on
 * TDM_OK the caller ends it with c->ops->end. */
static inline tdm_status tdm__call_open(tdm__call *c, tdm_ctx *ctx, const char *fn) {
  c->ctx = ctx;
  c->fn = fn;
  c->ops = ctx->be->ops;
  return c->ops->begin(c);
}

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_BACKEND_H */
