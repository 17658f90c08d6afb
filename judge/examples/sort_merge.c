/* sort_merge.c: a stable merge sort as a tandem-judge candidate (kind
 * "sort"), with the optional judge_sort_pairs_u64.
 *
 * Top-down merge sort through one scratch buffer; equal keys are taken from
 * the left run first, which is what makes it stable.
 *
 *   tandem-judge sort ./libjudge_sort_merge.so
 */
#include <stdlib.h>
#include <string.h>

#include <tandem/judge.h>

/* Sorts keys[lo, hi) (and vals alongside when not NULL) using tk/tv as
 * scratch of the same size. */
static void msort(uint64_t *keys, uint64_t *vals, uint64_t *tk, uint64_t *tv, size_t lo, size_t hi) {
  size_t mid, i, j, k;
  if (hi - lo < 2) return;
  mid = lo + (hi - lo) / 2;
  msort(keys, vals, tk, tv, lo, mid);
  msort(keys, vals, tk, tv, mid, hi);
  for (i = lo, j = mid, k = lo; k < hi; k++) {
    int left = j >= hi || (i < mid && keys[i] <= keys[j]); /* <=: ties from the left run */
    size_t from = left ? i++ : j++;
    tk[k] = keys[from];
    if (vals) tv[k] = vals[from];
  }
  memcpy(keys + lo, tk + lo, (hi - lo) * sizeof *keys);
  if (vals) memcpy(vals + lo, tv + lo, (hi - lo) * sizeof *vals);
}

static void sort_pairs(uint64_t *keys, uint64_t *vals, size_t n) {
  uint64_t *tk, *tv = NULL;
  if (n < 2) return;
  tk = malloc(n * sizeof *tk);
  if (vals) tv = malloc(n * sizeof *tv);
  if (!tk || (vals && !tv)) abort();
  msort(keys, vals, tk, tv, 0, n);
  free(tk);
  free(tv);
}

void judge_sort_u64(uint64_t *a, size_t n) { sort_pairs(a, NULL, n); }

void judge_sort_pairs_u64(uint64_t *keys, uint64_t *values, size_t n) { sort_pairs(keys, values, n); }

void judge_sort_u32(uint32_t *a, size_t n) {
  uint64_t *w;
  size_t i;
  if (n < 2) return;
  w = malloc(n * sizeof *w);
  if (!w) abort();
  for (i = 0; i < n; i++) w[i] = a[i];
  sort_pairs(w, NULL, n);
  for (i = 0; i < n; i++) a[i] = (uint32_t)w[i];
  free(w);
}
