/*
 * hash_internal.h: the hash table object and the backend entry points, shared
 * by the public layer (src/hash_api.c), the CPU backend (cpu/hash_cpu.c) and
 * the CUDA backend (gpu/hash_gpu.cu, through hash_gpu_iface.h).
 *
 * The public layer checks arguments and decides growth; a backend then does
 * the work and updates the counters only when it succeeds, so a failing call
 * leaves the object as it was.
 */
#ifndef TANDEM_HASH_INTERNAL_H
#define TANDEM_HASH_INTERNAL_H

#include "hash_layout.h"
#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Default maximum load: live table keys + tombstones <= 0.8 * slots. */
#define TDM_HASH_DEFAULT_MAX_LOAD 0.8

struct tdm_hash {
  tdm_ctx *ctx;
  tdm_type key_type, value_type;
  tdm_dup dup;
  int vkind;          /* keybits.h kind of the value type (MIN / MAX order) */
  int fixed;          /* never grow */
  double max_load;    /* in (0, 1) */
  unsigned ks, vs;    /* key and value widths in bytes (4 or 8) */
  unsigned slot_bytes;/* 8 or 16 */
  unsigned log2cap;   /* table slots = 2^log2cap */
  size_t cap;         /* 2^log2cap */
  size_t limit;       /* tdm_hash_limit(log2cap, max_load) */
  size_t size;        /* live keys, side slots included */
  size_t side;        /* live keys in side slots (0..2) */
  size_t tombs;       /* tombstones in the table */
  void *slots;        /* cap + 2 slots: host memory (CPU) or device memory (CUDA) */
  size_t slots_bytes; /* bytes allocated for slots */
  int mapped;         /* host table from mmap (huge pages), freed with munmap */
};

/* Bytes of a table of 2^log2cap slots plus the two side slots. */
static inline size_t tdm__hash_table_bytes(const tdm_hash *h, unsigned log2cap) {
  return (((size_t)1 << log2cap) + 2u) * h->slot_bytes;
}

/* Checks a host copy of a table against every invariant (hash_layout.h) and
 * the object's counters: TDM_OK, or TDM_ERR_CORRUPT naming the slot and the
 * broken invariant. Used by both backends' validate. */
TDM_INTERNAL tdm_status tdm__hash_check_slots(const tdm_hash *h, const void *slots);

/* ---- CPU backend (cpu/hash_cpu.c) -------------------------------------------
 * init: allocates a zeroed table for h->log2cap into h->slots.
 * insert: when grow_log2 != 0 first rehashes into a table of 2^grow_log2
 * slots (dropping tombstones), then inserts; the caller guarantees the batch
 * fits the (new) limit. The others do what the public call says. */
TDM_INTERNAL tdm_status tdm__cpu_hash_init(tdm_hash *h);
TDM_INTERNAL void tdm__cpu_hash_fini(tdm_hash *h);
TDM_INTERNAL tdm_status tdm__cpu_hash_insert(tdm_hash *h, const void *keys, const void *values, size_t n,
                                             unsigned grow_log2);
TDM_INTERNAL tdm_status tdm__cpu_hash_find(const tdm_hash *h, const void *keys, void *values_out,
                                           uint8_t *found_out, size_t n);
TDM_INTERNAL tdm_status tdm__cpu_hash_erase(tdm_hash *h, const void *keys, size_t n, size_t *erased);
TDM_INTERNAL tdm_status tdm__cpu_hash_export(const tdm_hash *h, void *keys_out, void *values_out);
TDM_INTERNAL tdm_status tdm__cpu_hash_clear(tdm_hash *h);
TDM_INTERNAL tdm_status tdm__cpu_hash_validate(const tdm_hash *h);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_HASH_INTERNAL_H */
