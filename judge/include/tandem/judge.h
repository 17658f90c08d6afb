/** @file
 * tandem/judge.h: the C ABI a candidate implementation exports so that the
 * program tandem-judge can check it against tandem and race it.
 *
 * These functions are not part of libtandem: a candidate (your sort, hash
 * map or B-tree) defines them in a shared library with C linkage, and
 * `tandem-judge KIND ./libcandidate.so` loads it with dlopen. Keys and values
 * are uint64_t (the 32-bit sort excepted). Nothing here needs tandem: a
 * candidate may include this header or copy the declarations.
 *
 * Kinds and the symbols each one needs:
 *  - `sort`: judge_sort_u32 and judge_sort_u64 (required),
 *    judge_sort_pairs_u64 (optional, checked for stability).
 *  - `map` (a hash map or any other map): judge_map_create, _destroy,
 *    _insert, _find, _erase, _size (required), judge_map_find_bulk (optional).
 *  - `ordered` (a B-tree or another ordered map): everything `map` needs,
 *    plus judge_map_rank and judge_map_range_count (both optional).
 * An optional symbol that is absent is skipped and named in the report.
 *
 * tandem-judge runs every operation sequence in a child process, so a crash,
 * abort or endless loop in the candidate is reported, never fatal to the
 * judge. Short random sequences come first, then large ones: maps grown to
 * 10^5 live keys (growth, churn at size, drain to empty, with every live key
 * looked up at checkpoints) and sorts of up to 10^6 elements in adversarial
 * shapes (`--scale` changes both).
 *
 * Leaks: the judge counts the heap blocks the candidate allocates (malloc,
 * calloc, realloc, the aligned forms and every C++ operator new) and frees.
 * Blocks still live after judge_map_destroy (or after the sorts) are a leak
 * only when running the same sequence again leaves as many more: a one-time
 * cache, of the candidate, the C library or libstdc++, is not reported.
 *
 * Time: each call has an allowance scaled to its size (map calls linear in
 * the map's size, sorts n log n), generous enough for a sorted array with an
 * O(n) insert at 10^5 keys; a quadratic sort of 10^6 elements is too slow.
 *
 * Exit statuses of tandem-judge: 0 no difference from tandem found; 1 a
 * difference (wrong result or leaked memory), printed as the shortest failing
 * operation sequence found, as a C program calling these functions (runs of
 * similar calls as loops); 2 bad usage, a library that does not load or
 * lacks a required symbol; 3 the candidate crashed, hung (a call that made no
 * progress within --time seconds) or was too slow for its size (with the
 * sequence that did it, or while the library was being loaded).
 */
#ifndef TANDEM_JUDGE_H
#define TANDEM_JUDGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Gives the judge_* functions default visibility, so a candidate built with
 *  -fvisibility=hidden that includes this header still exports them. */
#if defined(__GNUC__)
#define TDM_JUDGE_API __attribute__((visibility("default")))
#else
#define TDM_JUDGE_API
#endif

/** Kind `sort`: sorts a[0..n) ascending in place. n may be 0 (a may then be
 *  NULL). Required. */
TDM_JUDGE_API void judge_sort_u32(uint32_t *a, size_t n);

/** Kind `sort`: sorts a[0..n) ascending in place. Required. */
TDM_JUDGE_API void judge_sort_u64(uint64_t *a, size_t n);

/** Kind `sort`, optional: sorts keys[0..n) ascending and permutes values the
 *  same way, stably (pairs with equal keys keep their input order). The judge
 *  passes values[i] = i, so an unstable sort is caught. */
TDM_JUDGE_API void judge_sort_pairs_u64(uint64_t *keys, uint64_t *values, size_t n);

/** Kinds `map` and `ordered`: a new empty map (NULL only when out of
 *  memory, which the judge reports as a difference). */
TDM_JUDGE_API void *judge_map_create(void);

/** Frees the map and everything it allocated. */
TDM_JUDGE_API void judge_map_destroy(void *m);

/** Maps key to value. Returns 1 when the key was new, 0 when it was present
 *  and its value was replaced. Every uint64_t is a valid key, 0 and
 *  UINT64_MAX included. */
TDM_JUDGE_API int judge_map_insert(void *m, uint64_t key, uint64_t value);

/** Returns 1 and stores the key's value in *value when the key is present;
 *  returns 0 otherwise (*value is then not checked). */
TDM_JUDGE_API int judge_map_find(void *m, uint64_t key, uint64_t *value);

/** Removes key. Returns 1 when it was present, 0 otherwise. */
TDM_JUDGE_API int judge_map_erase(void *m, uint64_t key);

/** Number of keys in the map. */
TDM_JUDGE_API size_t judge_map_size(void *m);

/** Kind `ordered`, optional: the number of stored keys strictly less than
 *  key (its lower_bound position). */
TDM_JUDGE_API uint64_t judge_map_rank(void *m, uint64_t key);

/** Kind `ordered`, optional: the number of stored keys k with lo <= k <= hi;
 *  0 when lo > hi. */
TDM_JUDGE_API uint64_t judge_map_range_count(void *m, uint64_t lo, uint64_t hi);

/** Kinds `map` and `ordered`, optional: looks up n keys at once (host
 *  arrays). found_out[i] = 1 and values_out[i] = the value when keys[i] is
 *  present, else found_out[i] = 0 (values_out[i] is then not checked). Must
 *  not change the map. */
TDM_JUDGE_API void judge_map_find_bulk(void *m, const uint64_t *keys, uint64_t *values_out,
                                      uint8_t *found_out, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_JUDGE_H */
