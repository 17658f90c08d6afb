/* unstable_sort.c: a selection sort whose long-distance swaps reorder equal
 * keys: right for judge_sort_u32/_u64, wrong for judge_sort_pairs_u64, which
 * must be stable. tandem-judge must catch it. */
#include <tandem/judge.h>

/* Sorts a (and v alongside when not NULL) by selecting the minimum. */
static void selection_sort(uint64_t *a, uint64_t *v, size_t n) {
  size_t i, j;
  for (i = 0; i + 1 < n; i++) {
    size_t min = i;
    uint64_t t;
    for (j = i + 1; j < n; j++)
      if (a[j] < a[min]) min = j;
    t = a[i];
    a[i] = a[min];
    a[min] = t;
    if (v) {
      t = v[i];
      v[i] = v[min];
      v[min] = t;
    }
  }
}

void judge_sort_u64(uint64_t *a, size_t n) { selection_sort(a, NULL, n); }

void judge_sort_pairs_u64(uint64_t *keys, uint64_t *values, size_t n) { selection_sort(keys, values, n); }

void judge_sort_u32(uint32_t *a, size_t n) {
  size_t i, j;
  for (i = 0; i + 1 < n; i++) {
    size_t min = i;
    uint32_t t;
    for (j = i + 1; j < n; j++)
      if (a[j] < a[min]) min = j;
    t = a[i];
    a[i] = a[min];
    a[min] = t;
  }
}
