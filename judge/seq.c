/* seq.c: operation sequences: result sizes, copies, names. */
#include <stdlib.h>
#include <string.h>

#include "jdg.h"

size_t jdg_op_words(const jdg_op *op) {
  switch (op->code) {
  case JDG_OP_FIND: return 2;
  case JDG_OP_FIND_BULK: return 2 * op->n;
  case JDG_OP_SORT_U32:
  case JDG_OP_SORT_U64: return op->n;
  case JDG_OP_SORT_PAIRS: return 2 * op->n;
  default: return 1;
  }
}

size_t jdg_seq_words(const jdg_seq *s) {
  size_t i, w = 0;
  for (i = 0; i < s->n; i++) w += jdg_op_words(&s->ops[i]);
  return w;
}

int jdg_op_copy(jdg_op *dst, const jdg_op *src) {
  *dst = *src;
  dst->arr = NULL;
  if (src->n) {
    dst->arr = malloc(src->n * sizeof *dst->arr);
    if (!dst->arr) return -1;
    memcpy(dst->arr, src->arr, src->n * sizeof *dst->arr);
  }
  return 0;
}

int jdg_seq_copy(jdg_seq *dst, const jdg_seq *src) {
  size_t i;
  dst->n = 0;
  dst->ops = calloc(src->n ? src->n : 1, sizeof *dst->ops);
  if (!dst->ops) return -1;
  for (i = 0; i < src->n; i++) {
    if (jdg_op_copy(&dst->ops[i], &src->ops[i]) != 0) {
      jdg_seq_free(dst);
      return -1;
    }
    dst->n++;
  }
  return 0;
}

void jdg_seq_free(jdg_seq *s) {
  size_t i;
  if (!s->ops) return;
  for (i = 0; i < s->n; i++) free(s->ops[i].arr);
  free(s->ops);
  s->ops = NULL;
  s->n = 0;
}

const char *jdg_kind_name(jdg_kind k) {
  switch (k) {
  case JDG_SORT: return "sort";
  case JDG_MAP: return "map";
  case JDG_ORDERED: return "ordered";
  }
  return "?";
}

const char *jdg_verdict_name(jdg_verdict v) {
  switch (v) {
  case JDG_PASS: return "pass";
  case JDG_MISMATCH: return "wrong result";
  case JDG_CRASH: return "crash";
  case JDG_HANG: return "hang";
  case JDG_LEAK: return "leak";
  case JDG_SLOW: return "too slow";
  case JDG_ERROR: return "judge error";
  }
  return "?";
}

void jdg_outcome_free(jdg_outcome *o) {
  free(o->actual);
  o->actual = NULL;
}
