/*
 * hash_layout.h: the per-element logic of the hash table, shared by the CPU
 * backend, the CUDA kernels and the tests. Everything here is TDM_HD, so the
 * CPU runs exactly what the kernels run.
 *
 * Table: an array of cap = 2^log2cap slots (log2cap >= TDM_HASH_MIN_LOG2),
 * followed by two side slots at indices cap and cap + 1. A slot is a struct
 * { key; value; } in the key and value widths (hash_slot_impl.h). Values are kept
 * as raw bits of the value type.
 *
 * Markers: a table slot whose key word is TDM_HASH_EMPTY (0) is empty, one
 * whose key word is the tombstone pattern (TDM_HASH_TOMB32/64) held a key that
 * was erased. The user's keys equal to those two values never enter the table:
 * they live in the side slots (EMPTY's key at cap, the tombstone's at cap + 1),
 * whose key word is a present flag (0 or 1). So every key value is a valid key,
 * and the empty marker being 0 lets a fresh table come zeroed from the OS.
 *
 * Invariants (checked by tdm_hash_validate):
 *  - a slot that holds no key (empty, tombstone, absent side slot) has value 0;
 *  - a live key sits at the end of a run of non-empty slots starting at its
 *    home slot (linear probing), and appears once;
 *  - live table keys + tombstones <= limit <= cap - 1, so an empty slot exists.
 */
#ifndef TANDEM_HASH_LAYOUT_H
#define TANDEM_HASH_LAYOUT_H

#include "hd.h"
#include "dup.h"
#include "keybits.h"

#define TDM_HASH_EMPTY 0u
#define TDM_HASH_TOMB32 0x9e3779b9u
#define TDM_HASH_TOMB64 0x9e3779b97f4a7c15ull
/* Smallest table: 16 slots. Keeps home() clear of a 64-bit shift. */
#define TDM_HASH_MIN_LOG2 4u
/* Largest table the library will try: 2^48 slots. */
#define TDM_HASH_MAX_LOG2 48u
/* "No slot" answer of the probe functions. */
#define TDM_HASH_NONE (~(uint64_t)0)

/* Claim outcomes. */
enum {
  TDM_HASH_FOUND = 0,      /* key was present: combine values */
  TDM_HASH_NEW_EMPTY = 1,  /* key took an empty table slot */
  TDM_HASH_NEW_TOMB = 2,   /* key took a tombstone (one fewer tombstone) */
  TDM_HASH_NEW_SIDE = 3,   /* key is a marker value and took its side slot */
  TDM_HASH_DEFER = 4,      /* probe would leave the caller's window (tdm__hs_claim's stop) */
  TDM_HASH_RETRY = 5       /* a lane-group claim lost its slot to another key: probe again */
};
/* One bucket of a lane-group claim (tdm__hs_claim_step): the probe goes on to
 * the next bucket, found the key, or chose the free slot to take. */
enum { TDM_HASH_STEP_ON = 0, TDM_HASH_STEP_FOUND = 1, TDM_HASH_STEP_TAKE = 2 };
/* Erase outcomes. */
enum {
  TDM_HASH_ABSENT = 0,    /* key not present */
  TDM_HASH_GONE_TOMB = 1, /* erased, left a tombstone */
  TDM_HASH_GONE_EMPTY = 2,/* erased, slot became empty (the next slot was empty) */
  TDM_HASH_GONE_SIDE = 3  /* erased from a side slot */
};

/* The hash: a 64-bit mixer (xor-shift / multiply, three rounds) with full
 * avalanche, so the top bits used by home() depend on every key bit. Keys of
 * 32 bits are zero-extended first. */
TDM_HD uint64_t tdm__hash_mix(uint64_t x) {
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ull;
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ull;
  x ^= x >> 32;
  return x;
}

/* The inverse of tdm__hash_mix: x ^= x >> 32 is its own inverse and
 * 0xcfee444d8b59a89b is the multiplier's inverse modulo 2^64. So the mixer is
 * a bijection on 64 bits (equal hashes mean equal keys); the tests use the
 * inverse to make keys of a chosen hash (a home in the table's last bucket). */
TDM_HD uint64_t tdm__hash_unmix(uint64_t x) {
  x ^= x >> 32;
  x *= 0xcfee444d8b59a89bull;
  x ^= x >> 32;
  x *= 0xcfee444d8b59a89bull;
  x ^= x >> 32;
  return x;
}

/* Home slot of a hash: its top log2cap bits, rounded down to a multiple of
 * group (the slots in one 64-byte cache line: 4 of 16 bytes, 8 of 8 bytes).
 *  - Top bits (not a mask of the low bits) keep the table ordered by hash, so
 *    doubling the table maps old slot i to new slots near 2i: a rehash streams
 *    through both arrays.
 *  - Starting at the first slot of a cache line turns linear probing into
 *    linear probing over buckets of one line: a probe, hit or miss, almost
 *    always ends in the line it started in (a miss stops at the line's first
 *    empty slot), so one lookup costs one cache miss. Starting mid-line, an
 *    unsuccessful probe at load 0.6 (about 3.6 slots) would usually spill into
 *    a second line. */
TDM_HD uint64_t tdm__hash_home(uint64_t h, unsigned log2cap, unsigned group) {
  return (h >> (64u - log2cap)) & ~(uint64_t)(group - 1u);
}

/* The probe sequence: linear, wrapping at cap (a power of two).
 *
 * Termination: the sequence home, home+1, ... (mod cap) visits every slot of
 * the table within cap steps. Every mutation keeps live keys + tombstones <=
 * limit <= cap - 1 (inserts are refused or the table is rehashed before they
 * could pass limit), so at least one slot is empty, and a probe that runs
 * until it meets the key or an empty slot stops within cap steps. The probe
 * functions read the sequence a bucket (cache line) at a time, which visits
 * the same slots in the same order, and give up after cap / group buckets,
 * so even a corrupted table cannot hang a call. */
TDM_HD uint64_t tdm__hash_next(uint64_t pos, uint64_t mask) { return (pos + 1u) & mask; }

/* Index of the lowest set bit of a nonzero word. */
TDM_HD unsigned tdm__hash_ctz(unsigned x) {
#if defined(__CUDA_ARCH__)
  return (unsigned)(__ffs((int)x) - 1);
#else
  return (unsigned)__builtin_ctz(x);
#endif
}

/* Which side slot a key needs: 0 for an ordinary key, 1 for the empty
 * marker's value (slot cap), 2 for the tombstone's value (slot cap + 1). */
TDM_HD unsigned tdm__hash_side32(uint32_t key) {
  return key == TDM_HASH_EMPTY ? 1u : key == TDM_HASH_TOMB32 ? 2u : 0u;
}
TDM_HD unsigned tdm__hash_side64(uint64_t key) {
  return key == TDM_HASH_EMPTY ? 1u : key == TDM_HASH_TOMB64 ? 2u : 0u;
}

/* Largest number of live table keys + tombstones a table of 2^log2cap slots
 * may hold at max_load: floor(max_load * cap), at most cap - 1. */
TDM_HD uint64_t tdm__hash_limit(unsigned log2cap, double max_load) {
  uint64_t cap = (uint64_t)1 << log2cap;
  double l = max_load * (double)cap;
  uint64_t lim = l >= (double)cap ? cap : (uint64_t)l;
  return lim >= cap ? cap - 1u : lim;
}

/* Index 0..3 of a table's key and value widths in bytes: k32v32, k32v64,
 * k64v32, k64v64. The one place that fixes the order of the per-width tables
 * of both backends. */
TDM_HD int tdm__hash_inst(unsigned ks, unsigned vs) { return (ks == 8) * 2 + (vs == 8); }

/* Owner of a bucket-aligned home slot when t threads split the table into t
 * runs of whole buckets (CPU insert): thread floor(bucket * t / buckets).
 * Thread t's run starts at slot tdm__hash_run_start(t, ...). */
TDM_HD unsigned tdm__hash_owner(uint64_t home, unsigned log2cap, unsigned group, unsigned threads) {
  uint64_t buckets = ((uint64_t)1 << log2cap) / group;
  return (unsigned)(home / group * threads / buckets);
}
TDM_HD uint64_t tdm__hash_run_start(unsigned t, unsigned log2cap, unsigned group, unsigned threads) {
  uint64_t buckets = ((uint64_t)1 << log2cap) / group;
  return (t * buckets + threads - 1u) / threads * group; /* first bucket b with b * threads / buckets >= t */
}

/* ---- word access: plain, or atomic where threads race ---------------------
 * The key word of a slot is the only word several threads write at once (a
 * claim or an erase); these wrappers give the CAS, and loads / stores that
 * the compiler neither tears nor caches. On the host they are relaxed
 * atomics: the end of the parallel region orders everything else. */
TDM_HD uint32_t tdm__hash_load32(const uint32_t *p) {
#if defined(__CUDA_ARCH__)
  return *(const volatile uint32_t *)p;
#else
  return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}
TDM_HD uint64_t tdm__hash_load64(const uint64_t *p) {
#if defined(__CUDA_ARCH__)
  return *(const volatile uint64_t *)p;
#else
  return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}
TDM_HD void tdm__hash_store32(uint32_t *p, uint32_t v) {
#if defined(__CUDA_ARCH__)
  *(volatile uint32_t *)p = v;
#else
  __atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}
TDM_HD void tdm__hash_store64(uint64_t *p, uint64_t v) {
#if defined(__CUDA_ARCH__)
  *(volatile uint64_t *)p = v;
#else
  __atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}
/* Compare-and-swap; returns the word's previous value (== expect on success). */
TDM_HD uint32_t tdm__hash_cas32(uint32_t *p, uint32_t expect, uint32_t desired) {
#if defined(__CUDA_ARCH__)
  return atomicCAS((unsigned int *)p, expect, desired);
#else
  __atomic_compare_exchange_n(p, &expect, desired, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expect;
#endif
}
TDM_HD uint64_t tdm__hash_cas64(uint64_t *p, uint64_t expect, uint64_t desired) {
#if defined(__CUDA_ARCH__)
  return (uint64_t)atomicCAS((unsigned long long *)p, (unsigned long long)expect, (unsigned long long)desired);
#else
  __atomic_compare_exchange_n(p, &expect, desired, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expect;
#endif
}

/* The slot types and probe functions for each key/value width. */
#define HS_TEMPLATE "hash_slot_impl.h"
#include "hash_inst.h"

#endif /* TANDEM_HASH_LAYOUT_H */
