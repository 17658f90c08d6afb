/* print.c: a failing sequence as a self-contained C program, and a short
 * description of the failure.
 *
 * The program declares the candidate functions it calls (it needs neither
 * tandem nor its headers), replays the sequence, and checks every result
 * against tandem's, so it prints the difference and exits 1 as long as the
 * bug is there, and exits 0 once it is fixed. A crash or hang is marked with a
 * comment on the call that did it.
 */
#include <inttypes.h>
#include <signal.h>
#include <string.h>

#include "jdg.h"

/* The verdicts whose program ends at the call that did it. */
static int stops(const jdg_outcome *o) { return o->v == JDG_CRASH || o->v == JDG_HANG || o->v == JDG_SLOW; }

static void lit(FILE *f, uint64_t k) {
  if (k < 1000000) fprintf(f, "%" PRIu64, k);
  else fprintf(f, "0x%" PRIx64 "u", k);
}

static const char *sig_name(int sig) {
  const char *n = sigabbrev_np(sig);
  static char buf[32];
  snprintf(buf, sizeof buf, "SIG%s", n ? n : "?");
  return buf;
}

static size_t offset_of(const jdg_seq *s, size_t k) {
  size_t i, at = 0;
  for (i = 0; i < k && i < s->n; i++) at += jdg_op_words(&s->ops[i]);
  return at;
}

static const char *op_func(jdg_opcode code) {
  switch (code) {
  case JDG_OP_INSERT: return "judge_map_insert";
  case JDG_OP_FIND: return "judge_map_find";
  case JDG_OP_ERASE: return "judge_map_erase";
  case JDG_OP_SIZE: return "judge_map_size";
  case JDG_OP_RANK: return "judge_map_rank";
  case JDG_OP_RANGE_COUNT: return "judge_map_range_count";
  case JDG_OP_FIND_BULK: return "judge_map_find_bulk";
  case JDG_OP_SORT_U32: return "judge_sort_u32";
  case JDG_OP_SORT_U64: return "judge_sort_u64";
  case JDG_OP_SORT_PAIRS: return "judge_sort_pairs_u64";
  }
  return "?";
}

/* The call as C source (map kinds), e.g. judge_map_find(m, 3, &v). */
static void call_text(FILE *f, const jdg_op *op, size_t i) {
  fprintf(f, "%s(m", op_func(op->code));
  switch (op->code) {
  case JDG_OP_INSERT:
  case JDG_OP_RANGE_COUNT:
    fputs(", ", f);
    lit(f, op->a);
    fputs(", ", f);
    lit(f, op->b);
    break;
  case JDG_OP_FIND:
    fputs(", ", f);
    lit(f, op->a);
    fputs(", &v", f);
    break;
  case JDG_OP_ERASE:
  case JDG_OP_RANK:
    fputs(", ", f);
    lit(f, op->a);
    break;
  case JDG_OP_FIND_BULK:
    fprintf(f, ", keys%zu, vals%zu, found%zu, %zu", i, i, i, op->n);
    break;
  default:
    break;
  }
  fputs(")", f);
}

static const char *failure_comment(const jdg_outcome *o, double limit, char *buf, size_t len) {
  if (o->v == JDG_CRASH && o->sig) snprintf(buf, len, "the candidate crashed in this call (%s)", sig_name(o->sig));
  else if (o->v == JDG_CRASH && o->why[0]) snprintf(buf, len, "%s", o->why);
  else if (o->v == JDG_CRASH) snprintf(buf, len, "the candidate exited (status %d) in this call", o->exit_code);
  else if (o->v == JDG_HANG)
    snprintf(buf, len, "this call did not return within %g s (no progress; size %llu)", limit,
             (unsigned long long)o->size_at);
  else if (o->v == JDG_SLOW)
    snprintf(buf, len, "too slow here: %.1f s used, %.1f s allowed for size %llu", o->spent, o->allowed,
             (unsigned long long)o->size_at);
  else buf[0] = 0;
  return buf;
}

/* stop: the index of the operation that crashed or hung (its result is not
 * checked), or s->n. */
static void print_decls(FILE *f, const jdg_cand *c, const jdg_seq *s, size_t stop) {
  int used[JDG_OP_SORT_PAIRS + 1] = {0}, checked_find = 0, checked_other = 0;
  size_t i;
  for (i = 0; i < s->n && i <= stop; i++) {
    int find = s->ops[i].code == JDG_OP_FIND || s->ops[i].code == JDG_OP_FIND_BULK;
    used[s->ops[i].code] = 1;
    if (i == stop) continue;
    checked_find |= find;
    checked_other |= !find;
  }
  fputs("/* The candidate's functions (tandem/judge.h). */\n", f);
  if (c->kind != JDG_SORT) {
    fputs("void *judge_map_create(void);\nvoid judge_map_destroy(void *m);\n", f);
    if (used[JDG_OP_INSERT]) fputs("int judge_map_insert(void *m, uint64_t key, uint64_t value);\n", f);
    if (used[JDG_OP_FIND]) fputs("int judge_map_find(void *m, uint64_t key, uint64_t *value);\n", f);
    if (used[JDG_OP_ERASE]) fputs("int judge_map_erase(void *m, uint64_t key);\n", f);
    if (used[JDG_OP_SIZE]) fputs("size_t judge_map_size(void *m);\n", f);
    if (used[JDG_OP_RANK]) fputs("uint64_t judge_map_rank(void *m, uint64_t key);\n", f);
    if (used[JDG_OP_RANGE_COUNT]) fputs("uint64_t judge_map_range_count(void *m, uint64_t lo, uint64_t hi);\n", f);
    if (used[JDG_OP_FIND_BULK])
      fputs("void judge_map_find_bulk(void *m, const uint64_t *keys, uint64_t *values_out, uint8_t *found_out,\n"
            "                         size_t n);\n", f);
  } else {
    if (used[JDG_OP_SORT_U32]) fputs("void judge_sort_u32(uint32_t *a, size_t n);\n", f);
    if (used[JDG_OP_SORT_U64]) fputs("void judge_sort_u64(uint64_t *a, size_t n);\n", f);
    if (used[JDG_OP_SORT_PAIRS]) fputs("void judge_sort_pairs_u64(uint64_t *keys, uint64_t *values, size_t n);\n", f);
  }
  fputs("\nstatic int failures;\n\n", f);
  if (c->kind != JDG_SORT && checked_other) {
    fputs("/* One result against tandem's (at: the loop index, or -1). */\n"
          "static void expect(const char *call, long long at, uint64_t got, uint64_t want) {\n"
          "  if (got == want) return;\n"
          "  if (failures++ >= 10) return;\n"
          "  if (at >= 0) printf(\"i = %lld: \", at);\n"
          "  printf(\"%s returned %\" PRIu64 \", tandem says %\" PRIu64 \"\\n\", call, got, want);\n"
          "}\n"
          "#define EXPECT(call, want) expect(#call, -1, (uint64_t)(call), want)\n"
          "#define EXPECT_I(call, want) expect(#call, (long long)i, (uint64_t)(call), want)\n\n", f);
  }
  if (c->kind != JDG_SORT && checked_find) {
    fputs("/* A find: the value only counts when the key is found. */\n"
          "static void expect_find(const char *call, long long at, int found, const uint64_t *v, int want_found,\n"
          "                        uint64_t want_v) {\n"
          "  if (found == want_found && (!found || *v == want_v)) return;\n"
          "  if (failures++ >= 10) return;\n"
          "  if (at >= 0) printf(\"i = %lld: \", at);\n"
          "  if (found != want_found)\n"
          "    printf(\"%s returned %d, tandem says %d\\n\", call, found, want_found);\n"
          "  else\n"
          "    printf(\"%s gave value %\" PRIu64 \", tandem says %\" PRIu64 \"\\n\", call, *v, want_v);\n"
          "}\n"
          "#define EXPECT_FIND(call, want_found, want_value) expect_find(#call, -1, (call), &v, want_found, want_value)\n"
          "#define EXPECT_FIND_I(call, want_found, want_value) \\\n"
          "  expect_find(#call, (long long)i, (call), &v, want_found, want_value)\n\n",
          f);
  }
  if (c->kind == JDG_SORT && checked_other) {
    fputs("/* A sorted array against tandem's. */\n"
          "static void expect_array(const char *what, const uint64_t *got, const uint64_t *want, size_t n) {\n"
          "  size_t i;\n"
          "  for (i = 0; i < n; i++)\n"
          "    if (got[i] != want[i]) {\n"
          "      printf(\"%s[%zu] is %\" PRIu64 \", should be %\" PRIu64 \" (tandem says so)\\n\", what, i, got[i],\n"
          "             want[i]);\n"
          "      failures++;\n"
          "      return;\n"
          "    }\n"
          "}\n\n", f);
  }
}

/* Shaped sort inputs are printed as a formula; the program computes the
 * expected order with qsort (stable by input position for pairs). */
static int shaped(const jdg_op *op) { return op->shape != JDG_SHAPE_NONE && op->n > 64; }

static void print_shaped_helpers(FILE *f, const jdg_seq *s) {
  size_t i;
  int any = 0, pairs = 0;
  for (i = 0; i < s->n; i++)
    if (shaped(&s->ops[i])) {
      any = 1;
      pairs |= s->ops[i].code == JDG_OP_SORT_PAIRS;
    }
  if (!any) return;
  fputs("/* The expected order, computed here by qsort. */\n"
        "static int cmp_u64(const void *x, const void *y) {\n"
        "  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;\n"
        "  return (a > b) - (a < b);\n"
        "}\n\n", f);
  if (pairs)
    fputs("/* Pairs: key, then input position (a stable sort keeps it). */\n"
          "static int cmp_pair(const void *x, const void *y) {\n"
          "  const uint64_t *a = x, *b = y;\n"
          "  return a[0] != b[0] ? (a[0] > b[0]) - (a[0] < b[0]) : (a[1] > b[1]) - (a[1] < b[1]);\n"
          "}\n\n", f);
}

static void print_shaped_sort(FILE *f, const jdg_op *op, size_t i, int stop, const char *comment) {
  size_t n = op->n;
  int u32 = op->code == JDG_OP_SORT_U32, pairs = op->code == JDG_OP_SORT_PAIRS;
  fprintf(f, "  { /* %s, %zu elements */\n", jdg_shape_name(op->shape), n);
  fprintf(f, "    uint64_t i, n = %zu, *want = malloc(%sn * sizeof *want), *got = malloc(%sn * sizeof *got);\n", n,
          pairs ? "2 * " : "", pairs ? "2 * " : "");
  if (u32) fputs("    uint32_t *a = malloc(n * sizeof *a);\n", f);
  fputs("    if (!want || !got", f);
  fputs(u32 ? " || !a) return 2;\n" : ") return 2;\n", f);
  fputs("    for (i = 0; i < n; i++) {\n      uint64_t x = ", f);
  jdg_shape_expr(f, op->shape, op->p);
  fputs(";\n", f);
  if (u32) fputs("      a[i] = (uint32_t)x;\n      want[i] = (uint32_t)x;\n", f);
  else if (pairs) fputs("      got[i] = want[2 * i] = x;\n      got[n + i] = want[2 * i + 1] = i;\n", f);
  else fputs("      got[i] = want[i] = x;\n", f);
  fputs("    }\n", f);
  if (comment[0]) fprintf(f, "    /* %s */\n", comment);
  if (u32) fputs("    judge_sort_u32(a, n);\n", f);
  else if (pairs) fputs("    judge_sort_pairs_u64(got, got + n, n);\n", f);
  else fputs("    judge_sort_u64(got, n);\n", f);
  if (!stop) {
    if (pairs) {
      fputs("    qsort(want, n, 2 * sizeof *want, cmp_pair);\n", f);
      fputs("    for (i = 0; i < n; i++) {\n      uint64_t k = want[2 * i], p = want[2 * i + 1];\n", f);
      fputs("      want[i] = k;\n      want[n + i] = p;\n    }\n", f);
      fprintf(f, "    expect_array(\"sort %zu: keys\", got, want, n);\n", i);
      fprintf(f, "    expect_array(\"sort %zu: values (input positions)\", got + n, want + n, n);\n", i);
    } else {
      fputs("    qsort(want, n, sizeof *want, cmp_u64);\n", f);
      if (u32) fputs("    for (i = 0; i < n; i++) got[i] = a[i];\n", f);
      fprintf(f, "    expect_array(\"sort %zu: keys\", got, want, n);\n", i);
    }
  }
  fputs(u32 ? "    free(a);\n" : "", f);
  fputs("    free(want);\n    free(got);\n  }\n", f);
}

/* A number as C: small ones in decimal, others in hex. */
static void term(FILE *f, uint64_t c, const char *var, int first) {
  /* c * var, with a sign when not first ("+ 3 * i", "- i") */
  int neg = c > (1ull << 63);
  uint64_t m = neg ? 0 - c : c;
  if (c == 0) return;
  if (!first) fputs(neg ? " - " : " + ", f);
  else if (neg) fputs("0 - ", f);
  if (m != 1) {
    lit(f, m);
    fputs(" * ", f);
  }
  fputs(var, f);
}

static void affine(FILE *f, uint64_t a, uint64_t d, const char *var) {
  if (a || !d) lit(f, a);
  term(f, d, var, !a);
}

static void key_expr(FILE *f, const jdg_formula *fm, uint64_t a) {
  if (fm->mul != 1) fputs("(", f);
  affine(f, a, fm->d, "i");
  if (fm->mul != 1) fputs(") * 0x9e3779b97f4a7c15u", f);
}

/* A run of n similar map operations as one loop. */
static void print_loop(FILE *f, const jdg_formula *fm, size_t n) {
  fprintf(f, "  for (i = 0; i < %zu; i++) {\n    k = ", n);
  key_expr(f, fm, fm->a);
  fputs(";\n", f);
  if (fm->code == JDG_OP_RANGE_COUNT) {
    fputs("    k2 = ", f);
    key_expr(f, fm, fm->a2);
    fputs(";\n", f);
  }
  switch (fm->code) {
  case JDG_OP_INSERT:
    fputs("    EXPECT_I(judge_map_insert(m, k, ", f);
    if (fm->vconst) lit(f, fm->vx);
    else if (fm->vx) {
      fputs("k ^ ", f);
      lit(f, fm->vx);
    } else fputs("k", f);
    fputs("), ", f);
    break;
  case JDG_OP_FIND:
    fprintf(f, "    EXPECT_FIND_I(judge_map_find(m, k, &v), %d, ", (int)fm->e0);
    if (fm->v0) {
      fputs("k ^ ", f);
      lit(f, fm->v0);
    } else fputs(fm->e0 ? "k" : "0", f);
    fputs(");\n  }\n", f);
    return;
  case JDG_OP_ERASE: fputs("    EXPECT_I(judge_map_erase(m, k), ", f); break;
  case JDG_OP_RANK: fputs("    EXPECT_I(judge_map_rank(m, k), ", f); break;
  default: fputs("    EXPECT_I(judge_map_range_count(m, k, k2), ", f); break;
  }
  affine(f, fm->e0, fm->es, "i");
  fputs(");\n  }\n", f);
}

static void array_lit(FILE *f, const uint64_t *a, size_t n) {
  size_t i;
  fputs("{", f);
  for (i = 0; i < n; i++) {
    if (i) fputs(i % 12 ? ", " : ",\n    ", f);
    lit(f, a[i]);
  }
  fputs("}", f);
}

static void print_sort_op(FILE *f, const jdg_op *op, size_t i, const uint64_t *e, int stop, const char *comment) {
  size_t n = op->n;
  const char *ty = op->code == JDG_OP_SORT_U32 ? "uint32_t" : "uint64_t";
  if (shaped(op)) {
    print_shaped_sort(f, op, i, stop, comment);
    return;
  }
  if (n == 0) {
    if (comment[0]) fprintf(f, "  /* %s */\n", comment);
    fprintf(f, "  %s(NULL%s, 0);\n", op_func(op->code), op->code == JDG_OP_SORT_PAIRS ? ", NULL" : "");
    return;
  }
  fprintf(f, "  {\n    %s a[%zu] = ", ty, n);
  array_lit(f, op->arr, n);
  fputs(";\n", f);
  if (op->code == JDG_OP_SORT_PAIRS) fprintf(f, "    uint64_t v[%zu]; /* the input positions */\n", n);
  if (op->code == JDG_OP_SORT_PAIRS || (op->code == JDG_OP_SORT_U32 && !stop)) fputs("    size_t i;\n", f);
  if (op->code == JDG_OP_SORT_U32 && !stop) fprintf(f, "    uint64_t got[%zu];\n", n);
  if (!stop) {
    fprintf(f, "    static const uint64_t want_a[%zu] = ", n);
    array_lit(f, e, n);
    fputs(";\n", f);
    if (op->code == JDG_OP_SORT_PAIRS) {
      fprintf(f, "    static const uint64_t want_v[%zu] = ", n);
      array_lit(f, e + n, n);
      fputs(";\n", f);
    }
  }
  if (op->code == JDG_OP_SORT_PAIRS) fprintf(f, "    for (i = 0; i < %zu; i++) v[i] = i;\n", n);
  if (comment[0]) fprintf(f, "    /* %s */\n", comment);
  if (op->code == JDG_OP_SORT_PAIRS) fprintf(f, "    judge_sort_pairs_u64(a, v, %zu);\n", n);
  else fprintf(f, "    %s(a, %zu);\n", op_func(op->code), n);
  if (!stop) {
    if (op->code == JDG_OP_SORT_U32) {
      fprintf(f, "    for (i = 0; i < %zu; i++) got[i] = a[i];\n", n);
      fprintf(f, "    expect_array(\"sort %zu: keys\", got, want_a, %zu);\n", i, n);
    } else {
      fprintf(f, "    expect_array(\"sort %zu: keys\", a, want_a, %zu);\n", i, n);
      if (op->code == JDG_OP_SORT_PAIRS)
        fprintf(f, "    expect_array(\"sort %zu: values (input positions)\", v, want_v, %zu);\n", i, n);
    }
  }
  fputs("  }\n", f);
}

static void print_map_op(FILE *f, const jdg_op *op, size_t i, const uint64_t *e, int stop, const char *comment) {
  char call[200];
  FILE *mem;
  size_t j;
  if (comment[0]) fprintf(f, "  /* %s */\n", comment);
  mem = fmemopen(call, sizeof call, "w");
  if (mem) {
    call_text(mem, op, i);
    fclose(mem);
  } else {
    snprintf(call, sizeof call, "%s", op_func(op->code));
  }
  if (op->code == JDG_OP_FIND_BULK) {
    fprintf(f, "  {\n    const uint64_t keys%zu[%zu] = ", i, op->n);
    array_lit(f, op->arr, op->n);
    fprintf(f, ";\n    uint64_t vals%zu[%zu];\n    uint8_t found%zu[%zu];\n", i, op->n, i, op->n);
    fprintf(f, "    %s;\n", call);
    if (!stop)
      for (j = 0; j < op->n; j++)
        fprintf(f, "    expect_find(\"%s: keys%zu[%zu]\", -1, found%zu[%zu], &vals%zu[%zu], %d, %" PRIu64 "u);\n",
                op_func(op->code), i, j, i, j, i, j, (int)e[2 * j], e[2 * j + 1]);
    fputs("  }\n", f);
    return;
  }
  if (stop) {
    fprintf(f, "  %s;\n", call);
  } else if (op->code == JDG_OP_FIND) {
    fprintf(f, "  EXPECT_FIND(%s, %d, ", call, (int)e[0]);
    lit(f, e[1]);
    fputs(");\n", f);
  } else {
    fprintf(f, "  EXPECT(%s, ", call);
    lit(f, e[0]);
    fputs(");\n", f);
  }
}

/* Declares i, k (and k2) when the program has a loop. */
static void loop_vars(FILE *f, const jdg_seq *s, const uint64_t *expected, size_t last) {
  size_t i, len;
  int loops = 0, range = 0;
  for (i = 0; i < s->n && i < last; i += len) {
    jdg_formula fm;
    len = jdg_run_len(s, i, expected, &fm);
    if (i + len > last) len = last - i;
    if (len >= 3) {
      loops = 1;
      range |= fm.code == JDG_OP_RANGE_COUNT;
    } else {
      len = 1;
    }
  }
  if (loops) fprintf(f, "  uint64_t i, k%s;\n", range ? ", k2" : "");
}

void jdg_print_program(FILE *f, const jdg_cand *c, const jdg_seq *s, const uint64_t *expected,
                       const jdg_outcome *o, uint64_t seed, double limit) {
  size_t i, last = s->n;
  int has_find = 0;
  char comment[200];
  const char *base = strrchr(c->path, '/');
  base = base ? base + 1 : c->path;
  /* A crash or hang ends the program at the call that did it. */
  if (stops(o)) last = o->op == JDG_AT_CREATE ? 0 : o->op;
  for (i = 0; i < s->n; i++) has_find |= s->ops[i].code == JDG_OP_FIND;

  fprintf(f, "/* tandem-judge %s %s --seed %" PRIu64 ": %s, %zu operation%s.\n", jdg_kind_name(c->kind), c->path,
          seed, jdg_verdict_name(o->v), s->n, s->n == 1 ? "" : "s");
  fprintf(f, " * Build and run: cc -std=c11 repro.c -o repro %s -Wl,-rpath,'$ORIGIN' && ./repro\n", base);
  fputs(" * (with the library beside repro.c). It prints each difference from tandem and exits 1. */\n", f);
  fputs("#include <inttypes.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n\n", f);
  print_decls(f, c, s, stops(o) ? (o->op == JDG_AT_CREATE ? 0 : o->op) : s->n);
  print_shaped_helpers(f, s);
  fputs("int main(void) {\n", f);
  if (c->kind != JDG_SORT) {
    if (o->v == JDG_CRASH && o->op == JDG_AT_CREATE)
      fprintf(f, "  /* %s */\n", failure_comment(o, limit, comment, sizeof comment));
    fputs("  void *m = judge_map_create();\n", f);
    if (has_find) fputs("  uint64_t v = 0;\n", f);
    loop_vars(f, s, expected, last);
  }
  for (i = 0; i < s->n && (o->op == JDG_AT_CREATE ? 0 : 1); i++) {
    const jdg_op *op = &s->ops[i];
    int stop = stops(o) && i == last;
    const uint64_t *e = expected + offset_of(s, i);
    if (i > last) break;
    comment[0] = 0;
    if (stop) failure_comment(o, limit, comment, sizeof comment);
    if (c->kind == JDG_SORT) {
      print_sort_op(f, op, i, e, stop, comment);
    } else if (!stop) {
      jdg_formula fm;
      size_t len = jdg_run_len(s, i, expected, &fm);
      if (i + len > last) len = last - i;
      if (len >= 3) {
        print_loop(f, &fm, len);
        i += len - 1;
        continue;
      }
      print_map_op(f, op, i, e, stop, comment);
    } else {
      print_map_op(f, op, i, e, stop, comment);
    }
    if (stop) break;
  }
  if (c->kind != JDG_SORT && !(stops(o) && o->op < s->n)) {
    if (stops(o) && o->op == s->n)
      fprintf(f, "  /* %s */\n", failure_comment(o, limit, comment, sizeof comment));
    fputs("  judge_map_destroy(m);\n", f);
  }
  if (o->v == JDG_LEAK)
    fprintf(f, "  /* %" PRId64 " block%s (%" PRId64 " bytes) the candidate allocated %s still live here. */\n",
            o->leaked_blocks, o->leaked_blocks == 1 ? "" : "s", o->leaked, o->leaked_blocks == 1 ? "is" : "are");
  fputs("  if (failures) printf(\"%d difference(s) from tandem\\n\", failures);\n", f);
  fputs("  return failures != 0;\n}\n", f);
}

static void words_text(char *buf, size_t len, const jdg_op *op, const uint64_t *w) {
  switch (op->code) {
  case JDG_OP_FIND:
    if (w[0] == 1) snprintf(buf, len, "found, value %" PRIu64, w[1]);
    else if (w[0] == 0) snprintf(buf, len, "not found");
    else snprintf(buf, len, "returned %" PRId64, (int64_t)w[0]);
    break;
  case JDG_OP_INSERT:
    snprintf(buf, len, "%" PRId64 " (%s)", (int64_t)w[0],
             w[0] == 1 ? "new key" : w[0] == 0 ? "value replaced" : "not 0 or 1");
    break;
  case JDG_OP_ERASE:
    snprintf(buf, len, "%" PRId64 " (%s)", (int64_t)w[0], w[0] == 1 ? "erased" : w[0] == 0 ? "absent" : "not 0 or 1");
    break;
  default:
    snprintf(buf, len, "%" PRIu64, w[0]);
    break;
  }
}

void jdg_describe(FILE *f, const jdg_cand *c, const jdg_seq *s, const uint64_t *expected, const jdg_outcome *o,
                  double limit) {
  char buf[200], e[120], a[120];
  FILE *mem;
  const jdg_op *op = o->op < s->n ? &s->ops[o->op] : NULL;
  if (o->v == JDG_LEAK) {
    fprintf(f,
            "leak: %" PRId64 " blocks, %" PRId64 " bytes allocated by the candidate still live after %s, and as many "
            "more each time the sequence runs again (not a one-time cache)\n",
            o->leaked_blocks, o->leaked, c->kind == JDG_SORT ? "the sorts returned" : "judge_map_destroy");
    return;
  }
  if (o->v == JDG_SLOW && op) {
    fprintf(f, "too slow at %s %llu (operation %zu of %zu, %s): %.1f s used where %.1f s are allowed\n",
            c->kind == JDG_SORT ? "n =" : "size", (unsigned long long)o->size_at, o->op + 1, s->n, op_func(op->code),
            o->spent, o->allowed);
    return;
  }
  if (stops(o)) {
    const char *where = o->op == JDG_AT_CREATE ? "judge_map_create" : op ? op_func(op->code) : "judge_map_destroy";
    fprintf(f, "%s in %s (operation %zu of %zu): %s\n", jdg_verdict_name(o->v), where,
            o->op == JDG_AT_CREATE ? (size_t)0 : o->op + 1, s->n, failure_comment(o, limit, buf, sizeof buf));
    return;
  }
  if (o->v != JDG_MISMATCH || !op) return;
  buf[0] = 0;
  if (c->kind != JDG_SORT && (mem = fmemopen(buf, sizeof buf, "w")) != NULL) {
    call_text(mem, op, o->op);
    fclose(mem);
  } else {
    snprintf(buf, sizeof buf, "%s (%zu elements)", op_func(op->code), op->n);
  }
  fprintf(f, "wrong result at operation %zu of %zu: %s\n", o->op + 1, s->n, buf);
  if (op->code == JDG_OP_FIND_BULK || op->code >= JDG_OP_SORT_U32) {
    size_t j, nw = jdg_op_words(op);
    const uint64_t *ex = expected + offset_of(s, o->op);
    for (j = 0; j < nw && o->actual; j++)
      if (ex[j] != o->actual[j]) {
        char what[64];
        if (op->code == JDG_OP_FIND_BULK)
          snprintf(what, sizeof what, "%s for keys[%zu]", j % 2 ? "value" : "found", j / 2);
        else if (j < op->n)
          snprintf(what, sizeof what, "keys[%zu]", j);
        else
          snprintf(what, sizeof what, "values[%zu] (input position)", j - op->n);
        fprintf(f, "  expected (tandem):  %s = %" PRIu64 "\n  actual (candidate): %s = %" PRIu64 "\n", what, ex[j],
                what, o->actual[j]);
        break;
      }
    return;
  }
  words_text(e, sizeof e, op, expected + offset_of(s, o->op));
  if (o->actual) words_text(a, sizeof a, op, o->actual);
  else snprintf(a, sizeof a, "?");
  fprintf(f, "  expected (tandem):  %s\n  actual (candidate): %s\n", e, a);
}
