/* jdg.h: the pieces of tandem-judge and how they meet.
 *
 *   gen.c        random operation sequences (seeded generators)
 *   tier.c       the large sequences (maps of 10^5 keys, sorts of 10^6)
 *   runs.c       runs of similar operations (key formulas) for shrinking and printing
 *   heap.cc      counting the candidate's live heap blocks in the child
 *   oracle.c     the expected results, computed by tandem
 *   candidate.c  loading the candidate library and its symbols
 *   runner.c     running a sequence on the candidate in a child process
 *   shrink.c     reducing a failing sequence to a short one
 *   print.c      printing a sequence as a C program
 *   bench.c      --bench: throughput of the candidate against tandem
 *   main.c       the command line
 *
 * A sequence's results are a flat array of uint64_t words, a fixed number per
 * operation (jdg_op_words), so the parent can tell which operation a crash or
 * hang interrupted from the count of words the child managed to send.
 */
#ifndef TANDEM_JUDGE_JDG_H
#define TANDEM_JUDGE_JDG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rng.h"

typedef enum jdg_kind { JDG_SORT = 0, JDG_MAP = 1, JDG_ORDERED = 2 } jdg_kind;

typedef enum jdg_opcode {
  JDG_OP_INSERT = 0,  /* a = key, b = value -> 1 new / 0 replaced */
  JDG_OP_FIND,        /* a = key -> found, value (value compared only when found) */
  JDG_OP_ERASE,       /* a = key -> 1 erased / 0 absent */
  JDG_OP_SIZE,        /* -> size */
  JDG_OP_RANK,        /* a = key -> keys < a */
  JDG_OP_RANGE_COUNT, /* a = lo, b = hi -> keys in [lo, hi] */
  JDG_OP_FIND_BULK,   /* arr[0..n) = keys -> n x (found, value) */
  JDG_OP_SORT_U32,    /* arr[0..n) (each < 2^32) -> sorted */
  JDG_OP_SORT_U64,    /* arr[0..n) -> sorted */
  JDG_OP_SORT_PAIRS,  /* arr[0..n) keys, values 0..n-1 -> n sorted keys, then n values */
} jdg_opcode;

/* How a large sort input was made (jdg_shape_fill); JDG_SHAPE_NONE: arr
 * is an explicit list. */
typedef enum jdg_shape {
  JDG_SHAPE_NONE = 0,
  JDG_SHAPE_RANDOM,
  JDG_SHAPE_SORTED_NOISE,
  JDG_SHAPE_REVERSED_NOISE,
  JDG_SHAPE_ORGAN_PIPE,
  JDG_SHAPE_SAWTOOTH,
  JDG_SHAPE_ALL_EQUAL,
  JDG_SHAPE_FEW_DISTINCT,
  JDG_SHAPE_MEDIAN3_KILLER,
  JDG_SHAPE_MANY_RUNS,
  JDG_SHAPE_COUNT
} jdg_shape;

typedef struct jdg_op {
  jdg_opcode code;
  uint64_t a, b;
  size_t n;      /* elements of arr */
  uint64_t *arr; /* owned by the op; NULL when n == 0 */
  jdg_shape shape; /* sorts: arr[i] = jdg_shape_value(shape, p, n, i) */
  uint64_t p;      /* the shape's parameter */
} jdg_op;

typedef struct jdg_seq {
  jdg_op *ops;
  size_t n;
} jdg_seq;

/* Result words of one operation. */
size_t jdg_op_words(const jdg_op *op);
size_t jdg_seq_words(const jdg_seq *s);
/* Deep copy; returns 0, or -1 when out of memory. */
int jdg_seq_copy(jdg_seq *dst, const jdg_seq *src);
void jdg_seq_free(jdg_seq *s);
/* Deep copy of op into *dst (arr duplicated). */
int jdg_op_copy(jdg_op *dst, const jdg_op *src);
const char *jdg_kind_name(jdg_kind k);

/* ---- candidate ------------------------------------------------------------ */
typedef struct jdg_cand {
  const char *path;
  jdg_kind kind;
  void *dl;
  void (*sort_u32)(uint32_t *, size_t);
  void (*sort_u64)(uint64_t *, size_t);
  void (*sort_pairs_u64)(uint64_t *, uint64_t *, size_t);
  void *(*create)(void);
  void (*destroy)(void *);
  int (*insert)(void *, uint64_t, uint64_t);
  int (*find)(void *, uint64_t, uint64_t *);
  int (*erase)(void *, uint64_t);
  size_t (*size)(void *);
  uint64_t (*rank)(void *, uint64_t);
  uint64_t (*range_count)(void *, uint64_t, uint64_t);
  void (*find_bulk)(void *, const uint64_t *, uint64_t *, uint8_t *, size_t);
} jdg_cand;

/* Loads the library and looks its symbols up. Returns 0; -1 with a message
 * in err (library does not load, required symbol missing); or -2 when
 * loading it crashed or hung (tried in a child first). Notes on
 * absent optional symbols are written to notes (one per line). */
int jdg_cand_load(jdg_cand *c, const char *path, jdg_kind kind, char *err, size_t err_len, char *notes,
                  size_t notes_len);

/* ---- generators ----------------------------------------------------------- */
/* The generator the property tests use too (rng.h). */
typedef tdm__rng jdg_rng;

static inline void jdg_rng_init(jdg_rng *r, uint64_t seed, uint64_t stream) { tdm__rng_init(r, seed, stream); }
static inline uint64_t jdg_next(jdg_rng *r) { return tdm__rng_next(r); }
/* Uniform in [0, bound); bound 0 gives 0. */
static inline uint64_t jdg_below(jdg_rng *r, uint64_t bound) { return tdm__rng_below(r, bound); }

/* One random sequence of about max_ops operations for the candidate's kind,
 * using only the calls the candidate has. Returns 0 or -1 (out of memory). */
int jdg_gen_seq(jdg_rng *r, const jdg_cand *c, size_t max_ops, jdg_seq *out, const char **shape);

/* The large sequences: number k (0-based) of the tiers for this kind at
 * scale (1 = default: maps of 10^5 keys, sorts of 10^6 elements). Returns 1
 * and fills *out, 0 when there is no sequence k, -1 when out of memory. */
int jdg_tier_seq(const jdg_cand *c, uint64_t seed, size_t k, double scale, jdg_seq *out, char *shape,
                 size_t shape_len);
/* Element i of a shaped sort input of n elements (masked to 32 bits by the
 * caller for u32 sorts), and the same as a C expression in i and n. */
uint64_t jdg_shape_value(jdg_shape shape, uint64_t p, uint64_t n, uint64_t i);
void jdg_shape_expr(FILE *f, jdg_shape shape, uint64_t p);
const char *jdg_shape_name(jdg_shape shape);
/* Fills op->arr (n elements) from its shape. Returns 0 or -1. */
int jdg_shape_fill(jdg_op *op);

/* ---- runs of similar operations ---------------------------------------------- */
/* Keys of a run: key(i) = (a + d * i) * mul (mod 2^64), mul 1 or JDG_GOLD;
 * hi (range_count) the same with a2. Values: value(i) = key(i) ^ vx
 * (vconst 0) or vx (vconst 1). Expected first words: e0 + es * i. */
#define JDG_GOLD 0x9e3779b97f4a7c15ull
typedef struct jdg_formula {
  jdg_opcode code;
  uint64_t a, d, mul, a2, vx;
  int vconst;
  uint64_t e0, es, v0, vs; /* expected word 0 (and for finds the found flag e0, value check below) */
} jdg_formula;
/* Length (>= 1) of the longest run of similar operations starting at op i,
 * with its formula; with expected (the words of s) the run also keeps the
 * expected results affine in i. Only insert, find, erase, rank and
 * range_count form runs of more than one. */
size_t jdg_run_len(const jdg_seq *s, size_t i, const uint64_t *expected, jdg_formula *f);
uint64_t jdg_formula_key(const jdg_formula *f, uint64_t i);

/* ---- heap (heap.cc) ----------------------------------------------------------- */
typedef struct jdg_heap {
  uint64_t blocks, bytes;   /* recorded blocks still live */
  uint64_t allocs;          /* blocks recorded since tracking started */
  uint64_t largest;         /* the largest block recorded */
  uint64_t largest_grew;    /* how often the largest block grew (resizes) */
} jdg_heap;
int jdg_heap_available(void);
const char *jdg_heap_method(void);
/* Starts (1) or stops (0) recording new blocks; starting resets the counts
 * of allocs and largest (not the live blocks). */
void jdg_heap_track(int on);
void jdg_heap_stats(jdg_heap *h);

/* ---- oracle --------------------------------------------------------------- */
/* Creates tandem's CPU context (one thread). Returns 0 or -1 with err. */
int jdg_oracle_init(char *err, size_t err_len);
void jdg_oracle_fini(void);
/* Expected result words of s (jdg_seq_words(s) of them) into a new array.
 * Returns 0, or -1 with err when tandem failed (out of memory). */
int jdg_oracle_expect(jdg_kind kind, const jdg_seq *s, uint64_t **words_out, char *err, size_t err_len);
/* 1 when the words of one operation agree (a find's value only counts when
 * found on both sides). */
int jdg_op_agrees(const jdg_op *op, const uint64_t *expected, const uint64_t *actual);

/* ---- runner --------------------------------------------------------------- */
typedef enum jdg_verdict {
  JDG_PASS = 0,
  JDG_MISMATCH, /* a result differs at op */
  JDG_CRASH,    /* the child died by a signal (sig) or exited (exit_code) during op */
  JDG_HANG,     /* op did not return within the time limit */
  JDG_LEAK,     /* all results agree, blocks still live after destroy, and again when repeated */
  JDG_SLOW,     /* correct so far but far slower than its size allows */
  JDG_ERROR,    /* the judge itself failed (fork, pipe, memory); message in why */
} jdg_verdict;

typedef struct jdg_outcome {
  jdg_verdict v;
  size_t op;        /* failing operation (MISMATCH, CRASH, HANG) */
  int sig;          /* CRASH: signal, or 0 */
  int exit_code;    /* CRASH without signal: the child's exit status */
  int64_t leaked;   /* LEAK: bytes per run of the sequence */
  int64_t leaked_blocks;
  int leak_checked; /* 0 when the heap could not be measured */
  uint64_t size_at; /* HANG, SLOW: the map's size (or the sort's n) at op */
  double spent, allowed; /* SLOW: seconds used and allowed */
  jdg_heap heap;    /* PASS: the heap after the last operation before destroy */
  size_t max_size;  /* PASS: the largest map size reached */
  uint64_t *actual; /* MISMATCH: the candidate's words of op (jdg_op_words of them) */
  char why[160];
} jdg_outcome;

/* jdg_outcome.op when the failure came before the first operation. */
#define JDG_AT_CREATE ((size_t)-1)

void jdg_outcome_free(jdg_outcome *o);
/* Runs s on the candidate in a child process, comparing with expected as
 * results arrive. limit (seconds): the time any one operation may take on
 * top of its allowance; the whole sequence may take limit plus the sum of
 * the allowances of its operations, which scale with the structure size. */
void jdg_run(const jdg_cand *c, const jdg_seq *s, const uint64_t *expected, double limit, jdg_outcome *out);
const char *jdg_verdict_name(jdg_verdict v);

/* Forks a child that runs fn(arg, fd) with its stdout/stderr on /dev/null and
 * dies with the parent; returns the pid or -1. fd is the write end of a pipe
 * whose read end is stored in *rfd. */
int jdg_spawn(void (*fn)(void *arg, int fd), void *arg, int *rfd);
/* write(2) all of buf; returns 0 or -1. */
int jdg_write_all(int fd, const void *buf, size_t len);
/* Reads exactly len bytes before the deadline (CLOCK_MONOTONIC seconds).
 * Returns len, fewer on EOF, or -2 on timeout (*got has the count read). */
long jdg_read_until(int fd, void *buf, size_t len, double deadline, size_t *got);
double jdg_now(void);

/* ---- shrinker ------------------------------------------------------------- */
typedef struct jdg_shrink_stats {
  size_t trials;
  size_t original_ops;
  int fallback; /* 1 when the shrunk sequence did not reproduce with the full limit */
  int out_of_time; /* 1 when the budget ran out: the result may not be minimal */
} jdg_shrink_stats;

/* Shrinks the failing sequence *s (outcome *o) in place to a short sequence
 * that fails the same way, updating *o. limit is the run time limit, budget
 * the seconds the shrink may take (the best sequence so far when they run
 * out). */
void jdg_shrink(const jdg_cand *c, jdg_seq *s, jdg_outcome *o, double limit, double budget, jdg_shrink_stats *st);

/* ---- smaller workloads ------------------------------------------------------ */
/* A churn workload of about n live keys (growth, then rounds that erase and
 * insert a quarter of the keys each, checkpoints that find every live key,
 * then a drain), keys growing in order: 0 ascending, 1 descending, 2 random.
 * Used after a failure in a large sequence, to find a small failing one to
 * shrink, and as the mid-size stage. Returns 0 or -1 (out of memory). */
int jdg_churn_seq(const jdg_cand *c, uint64_t seed, uint64_t stream, size_t n, int order, jdg_seq *out,
                  char *shape, size_t shape_len);

/* ---- printer -------------------------------------------------------------- */
/* Prints s as a self-contained C program against the candidate ABI that
 * reproduces outcome o (expected from tandem, actual from the candidate). */
void jdg_print_program(FILE *f, const jdg_cand *c, const jdg_seq *s, const uint64_t *expected,
                       const jdg_outcome *o, uint64_t seed, double limit);

/* Describes the failure in a few lines: the verdict, the operation and the
 * expected against the actual result. */
void jdg_describe(FILE *f, const jdg_cand *c, const jdg_seq *s, const uint64_t *expected, const jdg_outcome *o,
                  double limit);

/* ---- bench ---------------------------------------------------------------- */
/* Writes CSV rows (contract header) comparing the candidate with tandem's CPU
 * (and CUDA when usable) to f. Returns 0, 3 when the candidate crashed or
 * hung, or 2 on a judge failure; message on stderr. */
int jdg_bench(const jdg_cand *c, FILE *f, size_t n, uint64_t seed, double limit);

#endif /* TANDEM_JUDGE_JDG_H */
