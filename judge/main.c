/* main.c: tandem-judge, the command line.
 *
 *   tandem-judge {sort|map|ordered} LIB.so [--seed S] [--ops N] [--scale X] [--time SECONDS] [--shrink-time SECONDS]
 *                [--bench] [--n N]
 *
 * Runs random operation sequences on the candidate library (see
 * tandem/judge.h) and on tandem, short ones first, then the large tiers
 * (tier.c), and stops at the first difference, crash, hang, "too slow" or
 * leak, which it shrinks and prints as a C program. Exit status: 0 no
 * difference, 1 a difference (wrong result or leak), 2 bad usage or a library
 * that cannot be used, 3 the candidate crashed, hung or was too slow.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jdg.h"

#define DEFAULT_MAP_OPS 50000
#define DEFAULT_SORT_OPS 300
#define MAX_SEQ_OPS 300
#define DEFAULT_LIMIT 2.0
#define DEFAULT_SHRINK_TIME 60.0
/* A failing sequence longer than this (a large stage) is first retried as a
 * churn workload at these sizes, smallest first. */
#define RETRY_ABOVE 2000
static const size_t retry_sizes[] = {100, 300, 1000, 3000};
/* Workloads per size and key order (each a few milliseconds at 300 keys). */
#define RETRY_DRAWS 3
#define DEFAULT_BENCH_N 200000
#define DEFAULT_BENCH_SORT_N 1000000
/* After a failure: up to this many failing sequences are shrunk, among the next EXTRA_SEQS. */
#define EXTRA_FAILURES 5
#define EXTRA_SEQS 200

static void usage(FILE *f) {
  fputs("usage: tandem-judge {sort|map|ordered} LIB.so [--seed S] [--ops N] [--scale X] [--time SECONDS]\n"
        "                    [--shrink-time SECONDS] [--bench] [--n N]\n"
        "  Checks a candidate library (the judge_* functions of tandem/judge.h) against tandem\n"
        "  on random operation sequences; prints the smallest failing sequence as a C program.\n"
        "  --seed S        seed of the random sequences (default: drawn and printed)\n"
        "  --ops N         operations to run in all (default 50000; for sort: 300 sort calls)\n"
        "  --scale X       size of the large tiers after the short sequences: maps of X * 10^5\n"
        "                  keys, sorts of X * 10^6 elements (default 1; 0: short sequences only)\n"
        "  --time SECONDS  time one call may take beyond its allowance for its size (default 2):\n"
        "                  a call that takes longer is a hang (a large sort: too slow); a sequence\n"
        "                  may take this plus the allowances of its calls, or it is too slow\n"
        "  --shrink-time SECONDS  time for shrinking a failure (default 60); when it runs out,\n"
        "                  the shortest failing program found so far is printed, marked not minimal\n"
        "  --bench         after a clean check, CSV throughput of the candidate against tandem\n"
        "                  on stdout (the report goes to stderr then)\n"
        "  --n N           bench size (default 200000 keys; sort: 1000000)\n"
        "exit status: 0 no difference from tandem, 1 a difference (wrong result or leaked memory),\n"
        "             2 bad usage or unusable library, 3 the candidate crashed, hung or was too slow\n"
        "             (also while loading)\n",
        f);
}

__attribute__((format(printf, 1, 2))) static int bad_usage(const char *fmt, ...) {
  va_list ap;
  fputs("tandem-judge: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs("\n", stderr);
  usage(stderr);
  return 2;
}

static int parse_u64(const char *s, uint64_t *out) {
  char *end;
  unsigned long long v;
  if (!s || !*s || *s == '-') return -1;
  errno = 0;
  v = strtoull(s, &end, 0);
  if (errno || *end) {
    /* 1e6 style counts */
    double d = strtod(s, &end);
    if (*end || d < 0 || d > 1.8e19 || d != (double)(uint64_t)d) return -1;
    v = (unsigned long long)d;
  }
  *out = v;
  return 0;
}

static uint64_t draw_seed(void) {
  struct timespec ts;
  uint64_t x;
  clock_gettime(CLOCK_REALTIME, &ts);
  x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  return x % 1000000000ull;
}

/* What the run covered, for the PASS line. */
typedef struct coverage {
  size_t calls[JDG_OP_SORT_PAIRS + 1];
  size_t max_size, max_sort;
  uint64_t largest_block, max_grew, max_blocks;
  int leak_checked;
} coverage;

static void cover(coverage *cv, const jdg_seq *s, const jdg_outcome *o) {
  size_t i;
  for (i = 0; i < s->n; i++) {
    cv->calls[s->ops[i].code]++;
    if (s->ops[i].code >= JDG_OP_SORT_U32 && s->ops[i].n > cv->max_sort) cv->max_sort = s->ops[i].n;
  }
  if (o->max_size > cv->max_size) cv->max_size = o->max_size;
  if (o->heap.largest > cv->largest_block) cv->largest_block = o->heap.largest;
  if (o->heap.largest_grew > cv->max_grew) cv->max_grew = o->heap.largest_grew;
  if (o->heap.blocks > cv->max_blocks) cv->max_blocks = o->heap.blocks;
  cv->leak_checked |= o->leak_checked;
}

static void print_coverage(FILE *f, const jdg_cand *c, const coverage *cv) {
  static const char *names[] = {"insert", "find", "erase", "size", "rank", "range_count", "find_bulk",
                                "sort_u32", "sort_u64", "sort_pairs"};
  size_t i, total = 0;
  for (i = 0; i <= JDG_OP_SORT_PAIRS; i++) total += cv->calls[i];
  fputs("checked: ", f);
  if (c->kind == JDG_SORT)
    fprintf(f, "sorts up to %zu elements (random, sorted/reversed with noise, organ pipe, sawtooth, all equal, few "
               "distinct, median-of-three killer, many runs)", cv->max_sort);
  else
    fprintf(f, "maps up to %zu live keys (growth, churn at size, drain to empty; every live key found at each "
               "checkpoint%s)", cv->max_size, c->rank && c->range_count ? ", rank and range_count sweeps" : "");
  fputs("; calls:", f);
  for (i = 0; i <= JDG_OP_SORT_PAIRS; i++)
    if (cv->calls[i]) fprintf(f, " %s %.0f%%", names[i], 100.0 * (double)cv->calls[i] / (double)(total ? total : 1));
  fputs("\n", f);
  if (c->kind != JDG_SORT && cv->largest_block)
    fprintf(f, "heap: the candidate's largest block was %llu bytes; its largest block grew %llu times in one "
               "sequence (resizes seen)\n",
            (unsigned long long)cv->largest_block, (unsigned long long)cv->max_grew);
  fprintf(f, "leaks: %s (%s)\n", cv->leak_checked ? "none" : "not checked", jdg_heap_method());
}

/* Generates, runs and compares sequence number k (0-based stream) of the
 * run. Returns 0, or -1 on a judge failure (message on stderr). */
static int run_one(const jdg_cand *c, uint64_t seed, size_t k, size_t max_ops, double limit, jdg_seq *s,
                   jdg_outcome *o, const char **shape) {
  jdg_rng rng;
  uint64_t *exp;
  char err[256];
  jdg_rng_init(&rng, seed, k);
  if (jdg_gen_seq(&rng, c, max_ops, s, shape) != 0) {
    fprintf(stderr, "tandem-judge: out of memory generating a sequence\n");
    return -1;
  }
  if (jdg_oracle_expect(c->kind, s, &exp, err, sizeof err) != 0) {
    fprintf(stderr, "tandem-judge: %s\n", err);
    jdg_seq_free(s);
    return -1;
  }
  jdg_run(c, s, exp, limit, o);
  free(exp);
  if (o->v == JDG_ERROR) {
    fprintf(stderr, "tandem-judge: %s\n", o->why);
    jdg_outcome_free(o);
    jdg_seq_free(s);
    return -1;
  }
  return 0;
}

/* The first operation from which the sequence leaks: the shortest leaking
 * prefix, by bisection (each prefix run on its own, destroy included). */
static void leak_start(FILE *msg, const jdg_cand *c, const jdg_seq *s, double limit) {
  size_t lo = 0, hi = s->n; /* the prefix of hi ops leaks; of lo, not known to */
  char err[256];
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    jdg_seq t = {s->ops, mid};
    uint64_t *exp;
    jdg_outcome o;
    if (jdg_oracle_expect(c->kind, &t, &exp, err, sizeof err) != 0) return;
    jdg_run(c, &t, exp, limit, &o);
    free(exp);
    if (o.v == JDG_LEAK) hi = mid;
    else lo = mid;
    jdg_outcome_free(&o);
  }
  if (hi >= 1)
    fprintf(msg, "the leak starts at operation %zu of %zu (the shortest prefix that leaks)\n", hi, s->n);
}

/* A failure in a large sequence (s, verdict o->v): the same kind of
 * workload, churn at a few hundred keys and then a few thousand, usually
 * fails the same way, and a small failing sequence shrinks in a fraction of
 * the time and to a shorter program. Replaces *s and *o with the smallest
 * one that fails the same way, if any; returns 1 then. */
static int smaller_failure(FILE *msg, const jdg_cand *c, uint64_t seed, double limit, jdg_seq *s,
                           jdg_outcome *o, char *shape, size_t shape_len) {
  size_t i, order;
  char err[256];
  if (c->kind == JDG_SORT || s->n <= RETRY_ABOVE || o->v == JDG_HANG || o->v == JDG_SLOW || o->v == JDG_LEAK)
    return 0;
  for (i = 0; i < sizeof retry_sizes / sizeof retry_sizes[0]; i++)
    for (order = 0; order < 3 * RETRY_DRAWS; order++) {
      jdg_seq t;
      jdg_outcome to;
      uint64_t *exp;
      char tshape[160];
      if (jdg_churn_seq(c, seed, 100 + 3 * RETRY_DRAWS * i + order, retry_sizes[i], (int)(order % 3), &t, tshape,
                        sizeof tshape) != 0)
        return 0;
      if (t.n >= s->n || jdg_oracle_expect(c->kind, &t, &exp, err, sizeof err) != 0) {
        jdg_seq_free(&t);
        continue;
      }
      jdg_run(c, &t, exp, limit, &to);
      free(exp);
      if (to.v == o->v) {
        fprintf(msg, "the same kind of workload at a smaller size fails the same way (%s; %zu operations): "
                     "shrinking that one\n", tshape, t.n);
        jdg_seq_free(s);
        *s = t;
        jdg_outcome_free(o);
        *o = to;
        snprintf(shape, shape_len, "%s", tshape);
        return 1;
      }
      jdg_outcome_free(&to);
      jdg_seq_free(&t);
    }
  return 0;
}

/* Reports a failure of sequence s (outcome o, the seq_no-th sequence) after
 * shrinking it. Greedy shrinking can stop in a local minimum, so the next
 * few sequences that fail the same way are shrunk too and the shortest
 * result is shown (not for hangs, whose every run costs the time limit).
 * All of it within the shrink budget (seconds). Returns the exit status. */
static int report(FILE *msg, const jdg_cand *c, jdg_seq *s, jdg_outcome *o, uint64_t seed, double limit,
                  double budget, size_t seq_no, const char *shape) {
  jdg_shrink_stats st;
  uint64_t *exp = NULL;
  char err[256], small_shape[160];
  size_t k, found = 1, runs;
  double give_up = jdg_now() + budget;
  int out_of_time;
  fprintf(msg, "FAIL: %s in sequence %zu (%s; %zu operations); shrinking...\n", jdg_verdict_name(o->v), seq_no,
          shape, s->n);
  fflush(msg);
  if (o->v == JDG_LEAK) leak_start(msg, c, s, limit);
  smaller_failure(msg, c, seed, limit, s, o, small_shape, sizeof small_shape);
  jdg_shrink(c, s, o, limit, give_up - jdg_now(), &st);
  runs = st.trials;
  out_of_time = st.out_of_time;
  for (k = seq_no; !out_of_time && o->v != JDG_HANG && o->v != JDG_SLOW && s->n <= MAX_SEQ_OPS &&
                   found < EXTRA_FAILURES && k < seq_no + EXTRA_SEQS;
       k++) {
    jdg_seq t;
    jdg_outcome to;
    jdg_shrink_stats tst;
    const char *tshape;
    if (run_one(c, seed, k, MAX_SEQ_OPS, limit, &t, &to, &tshape) != 0) break;
    if (to.v == o->v) {
      found++;
      jdg_shrink(c, &t, &to, limit, give_up - jdg_now(), &tst);
      runs += tst.trials;
      /* A shrink cut short is no better a local minimum; the one before
       * stands as it was. */
      if (tst.out_of_time) {
        jdg_outcome_free(&to);
        jdg_seq_free(&t);
        break;
      }
      if (!tst.fallback && t.n < s->n) {
        jdg_seq_free(s);
        *s = t;
        jdg_outcome_free(o);
        *o = to;
        tst.original_ops = st.original_ops;
        st = tst;
        continue;
      }
    }
    jdg_outcome_free(&to);
    jdg_seq_free(&t);
  }
  if (o->v == JDG_SLOW)
    fprintf(msg, "not shrunk: too slow is judged on the sequence as it is\n");
  else if (st.fallback)
    fprintf(msg, "the shrunk sequence did not fail again under the full time limit: the original follows\n");
  else
    fprintf(msg, "shrunk to %zu operation%s (the shortest of %zu failing sequence%s shrunk, %zu runs)%s\n", s->n,
            s->n == 1 ? "" : "s", found, found == 1 ? "" : "s", runs,
            out_of_time ? "; not minimal: the shrink time ran out (--shrink-time)" : "");
  if (jdg_oracle_expect(c->kind, s, &exp, err, sizeof err) != 0) {
    fprintf(stderr, "tandem-judge: %s\n", err);
    return 2;
  }
  jdg_describe(msg, c, s, exp, o, limit);
  fprintf(msg, "the failing sequence as a C program:\n-----8<-----\n");
  jdg_print_program(msg, c, s, exp, o, seed, limit);
  fprintf(msg, "-----8<-----\n");
  free(exp);
  return (o->v == JDG_CRASH || o->v == JDG_HANG || o->v == JDG_SLOW) ? 3 : 1;
}

int main(int argc, char **argv) {
  jdg_kind kind;
  jdg_cand cand;
  uint64_t seed = 0, ops = 0, n_bench = 0, v;
  double limit = DEFAULT_LIMIT, scale = 1.0, shrink_time = DEFAULT_SHRINK_TIME;
  coverage cov;
  int have_seed = 0, bench = 0, i, rc = 0;
  const char *lib, *pos[2];
  int npos = 0;
  char err[1024], notes[1024];
  FILE *msg;
  size_t done_ops = 0, seqs = 0, short_ops, short_seqs, tiers = 0, k;
  memset(&cov, 0, sizeof cov);

  for (i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    }
  /* Options may come anywhere, as --opt VALUE or --opt=VALUE; the two
   * other words are KIND and LIB, in that order. */
  for (i = 1; i < argc; i++) {
    const char *a = argv[i], *val, *eq;
    char name[24];
    if (strncmp(a, "--", 2) != 0) {
      if (npos >= 2) return bad_usage("unexpected argument '%s'", a);
      pos[npos++] = a;
      continue;
    }
    if (!strcmp(a, "--bench")) {
      bench = 1;
      continue;
    }
    eq = strchr(a, '=');
    snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - a) : (int)strlen(a), a);
    if (strcmp(name, "--seed") && strcmp(name, "--ops") && strcmp(name, "--time") && strcmp(name, "--n") &&
        strcmp(name, "--scale") && strcmp(name, "--shrink-time"))
      return bad_usage("unknown option '%s'", a);
    if (eq) {
      val = eq + 1;
    } else {
      if (i + 1 >= argc) return bad_usage("%s needs a value", a);
      val = argv[++i];
    }
    if (!strcmp(name, "--scale")) {
      char *end;
      errno = 0;
      scale = strtod(val, &end);
      if (errno || *end || !(scale >= 0) || scale > 1000)
        return bad_usage("--scale: '%s' is not a number in [0, 1000]", val);
    } else if (!strcmp(name, "--shrink-time")) {
      char *end;
      errno = 0;
      shrink_time = strtod(val, &end);
      if (errno || *end || !(shrink_time > 0) || shrink_time > 86400)
        return bad_usage("--shrink-time: '%s' is not a number of seconds in (0, 86400]", val);
    } else if (!strcmp(name, "--time")) {
      char *end;
      errno = 0;
      limit = strtod(val, &end);
      if (errno || *end || !(limit > 0) || limit > 86400)
        return bad_usage("--time: '%s' is not a number of seconds in (0, 86400]", val);
    } else if (parse_u64(val, &v) != 0) {
      return bad_usage("%s: '%s' is not a non-negative integer", name, val);
    } else if (!strcmp(name, "--seed")) {
      seed = v;
      have_seed = 1;
    } else if (!strcmp(name, "--ops")) {
      if (v == 0) return bad_usage("--ops: %s", "must be at least 1");
      ops = v;
    } else {
      if (v == 0 || v > ((uint64_t)1 << 32)) return bad_usage("--n: '%s' must be in [1, 2^32]", val);
      n_bench = v;
    }
  }
  if (npos < 2) return bad_usage("%s", "needs a KIND and a library");
  if (!strcmp(pos[0], "sort")) kind = JDG_SORT;
  else if (!strcmp(pos[0], "map")) kind = JDG_MAP;
  else if (!strcmp(pos[0], "ordered")) kind = JDG_ORDERED;
  else return bad_usage("unknown KIND '%s' (expected sort, map or ordered)", pos[0]);
  lib = pos[1];
  if (!have_seed) seed = draw_seed();
  if (!ops) ops = kind == JDG_SORT ? DEFAULT_SORT_OPS : DEFAULT_MAP_OPS;
  if (!n_bench) n_bench = kind == JDG_SORT ? DEFAULT_BENCH_SORT_N : DEFAULT_BENCH_N;
  msg = bench ? stderr : stdout;

  rc = jdg_cand_load(&cand, lib, kind, err, sizeof err, notes, sizeof notes);
  if (rc != 0) {
    fprintf(stderr, "tandem-judge: %s\n", err);
    return rc == -2 ? 3 : 2;
  }
  if (jdg_oracle_init(err, sizeof err) != 0) {
    fprintf(stderr, "tandem-judge: %s\n", err);
    return 2;
  }
  fprintf(msg, "tandem-judge %s %s: seed %" PRIu64 " (--seed %" PRIu64 " replays this run)\n", jdg_kind_name(kind), lib,
          seed, seed);
  fputs(notes, msg);
  fflush(msg);

  while (done_ops < ops && rc == 0) {
    jdg_seq s;
    jdg_outcome o;
    const char *shape = "";
    size_t max_ops = ops - done_ops < MAX_SEQ_OPS ? (size_t)(ops - done_ops) : MAX_SEQ_OPS;
    if (run_one(&cand, seed, seqs, max_ops, limit, &s, &o, &shape) != 0) {
      rc = 2;
      break;
    }
    seqs++;
    done_ops += s.n;
    cover(&cov, &s, &o);
    if (o.v != JDG_PASS) rc = report(msg, &cand, &s, &o, seed, limit, shrink_time, seqs, shape);
    jdg_outcome_free(&o);
    jdg_seq_free(&s);
  }
  short_ops = done_ops;
  short_seqs = seqs;
  for (k = 0; rc == 0; k++) {
    jdg_seq s;
    jdg_outcome o;
    uint64_t *exp;
    char tshape[160];
    int got = jdg_tier_seq(&cand, seed, k, scale, &s, tshape, sizeof tshape);
    if (got == 0) break;
    if (got < 0 || jdg_oracle_expect(cand.kind, &s, &exp, err, sizeof err) != 0) {
      fprintf(stderr, "tandem-judge: %s\n", got < 0 ? "out of memory generating a sequence" : err);
      if (got > 0) jdg_seq_free(&s);
      rc = 2;
      break;
    }
    jdg_run(&cand, &s, exp, limit, &o);
    free(exp);
    seqs++;
    tiers++;
    done_ops += s.n;
    cover(&cov, &s, &o);
    if (o.v == JDG_ERROR) {
      fprintf(stderr, "tandem-judge: %s\n", o.why);
      rc = 2;
    } else if (o.v != JDG_PASS) {
      rc = report(msg, &cand, &s, &o, seed, limit, shrink_time, seqs, tshape);
    }
    jdg_outcome_free(&o);
    jdg_seq_free(&s);
  }
  if (rc == 0) {
    fprintf(msg, "PASS: no difference from tandem in %zu short sequences (%zu %s) and %zu large ones (%zu %s)\n",
            short_seqs, short_ops, kind == JDG_SORT ? "sort calls" : "operations", tiers, done_ops - short_ops,
            kind == JDG_SORT ? "sort calls" : "operations");
    print_coverage(msg, &cand, &cov);
    fflush(msg);
    if (bench) rc = jdg_bench(&cand, stdout, (size_t)n_bench, seed, 60 * limit);
  }
  jdg_oracle_fini();
  return rc;
}
