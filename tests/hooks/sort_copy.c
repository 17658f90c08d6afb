/* sort_copy.c: the test programs' handle on the CPU sort of a copy
 * (tdm__cpu_sort_copy), which the B+ tree's builds and inserts use. */
#include "../../cpu/cpu.h"
#include "hooks.h"

tdm_status tdm_test_sort_copy(tdm_ctx *ctx, tdm_type key_type, const void *in_keys, void *keys, tdm_type value_type,
                              const void *in_values, void *values, size_t n, int desc) {
  return tdm__cpu_sort_copy(ctx, key_type, in_keys, keys, value_type, in_values, values, n, desc, NULL);
}

/* A sink that takes a quarter-to-three-quarters span of each bucket (from its
 * start when the bucket's output index is odd, to its end when bit 1 of that
 * index is set),
 * copying what it takes to the side arrays at the pairs' output indices and
 * marking taken[i] for each taken index the sort need not write (all but the
 * last of each span). */
typedef struct test_sink {
  size_t ks, vs;
  char *side_keys, *side_values;
  unsigned char *taken;
} test_sink;

static size_t test_take(void *arg, size_t at, const void *keys, const void *values, size_t count, size_t *end) {
  test_sink *s = (test_sink *)arg;
  size_t a = at & 1 ? 0 : count / 4, b = at & 2 ? count : count - count / 4;
  *end = b;
  if (a >= b) return a;
  memcpy(s->side_keys + (at + a) * s->ks, (const char *)keys + a * s->ks, (b - a) * s->ks);
  memcpy(s->side_values + (at + a) * s->vs, (const char *)values + a * s->vs, (b - a) * s->vs);
  memset(s->taken + at + a, 1, b - a - 1);
  return a;
}

tdm_status tdm_test_sort_copy_sink(tdm_ctx *ctx, tdm_type key_type, const void *in_keys, void *keys,
                                   tdm_type value_type, const void *in_values, void *values, size_t n, int desc,
                                   void *side_keys, void *side_values, unsigned char *taken) {
  test_sink s = {tdm_type_size(key_type), tdm_type_size(value_type), (char *)side_keys, (char *)side_values, taken};
  tdm__sort_sink sink = {test_take, &s};
  memset(taken, 0, n);
  return tdm__cpu_sort_copy(ctx, key_type, in_keys, keys, value_type, in_values, values, n, desc, &sink);
}
