/* shrink.c: reduces a failing sequence to a short one that fails the same way.
 *
 * Greedy and deterministic (the same failure shrinks to the same program
 * while the time budget lasts):
 *  1. cut everything after the failing operation;
 *  2. long sequences: delete chunks of runs (runs.c) or, when there are too
 *     many runs, chunks of operations, then shorten every run;
 *  3. delete chunks of operations, halving the chunk size down to single
 *     operations, until no single deletion keeps the failure (ddmin-style);
 *  4. the same over the elements of every array (sort inputs, bulk finds);
 *  5. simpler keys: renumbered to 0, 1, 2, ... in their order (what an
 *     ordered structure sees stays the same), blocks of inserts put in
 *     ascending or descending order, loops with one gap joined into one
 *     loop, then every key tried at small values; then simpler values.
 * Steps 4 and 5 make runs of similar calls, which print as one loop each.
 * "The same way" means the same verdict: a wrong result stays a wrong result
 * (at any operation), a crash a crash, a hang a hang, a leak a leak. A hang is
 * shrunk under a shorter time limit (a run that hangs costs the whole
 * limit), and the final sequence is checked again under the full one; when it
 * no longer fails there, the unshrunk sequence is reported.
 *
 * The shrink has a time budget (--shrink-time): when it runs out, the
 * shortest failing sequence found so far is reported, marked as not minimal.
 */
#include <stdlib.h>
#include <string.h>

#include "jdg.h"

/* Bounds on one shrink besides the caller's time budget: a run count (the
 * result of a shrink that stops on it does not depend on the machine's
 * speed), and for hangs, whose every run costs the time limit, at most
 * MAX_SECONDS_HANG. */
#define MAX_TRIALS 20000
#define MAX_SECONDS_HANG 90.0

typedef struct shr {
  const jdg_cand *c;
  double limit;
  jdg_verdict want;
  size_t trials;
  double give_up; /* jdg_now() past which no more trials run */
  int out_of_time; /* a trial was refused for the time budget or run count */
} shr;

/* Runs t; 1 when it fails as wanted (o filled, caller frees), else 0. */
static int fails(shr *sh, const jdg_seq *t, jdg_outcome *o) {
  uint64_t *exp;
  char err[200];
  if (sh->trials >= MAX_TRIALS || jdg_now() > sh->give_up) {
    sh->out_of_time = 1;
    return 0;
  }
  if (jdg_oracle_expect(sh->c->kind, t, &exp, err, sizeof err) != 0) return 0;
  sh->trials++;
  jdg_run(sh->c, t, exp, sh->limit, o);
  free(exp);
  if (o->v == sh->want) return 1;
  jdg_outcome_free(o);
  return 0;
}

/* Phases of the budget: the deletion passes over a long sequence may take
 * at most a share of what is left, so that the passes that make loops of it
 * (block order, renumbered keys) still run; a long sequence of scattered
 * inserts prints short only as loops. phase_begin returns the deadline to
 * give back to phase_end, which clears a stop that only the phase caused. */
static double phase_begin(shr *sh, double share) {
  double end = sh->give_up, now = jdg_now();
  if (end > now) sh->give_up = now + (end - now) * share;
  return end;
}

static void phase_end(shr *sh, double end) {
  sh->give_up = end;
  if (sh->trials < MAX_TRIALS && jdg_now() <= end) sh->out_of_time = 0;
}

/* Keeps t as the new current sequence (s), with its outcome. */
static void accept(jdg_seq *s, jdg_outcome *o, jdg_seq *t, jdg_outcome *to) {
  jdg_seq_free(s);
  *s = *t;
  jdg_outcome_free(o);
  *o = *to;
  /* Everything after the failing operation is not needed. */
  if ((o->v == JDG_MISMATCH || o->v == JDG_CRASH || o->v == JDG_HANG) && o->op != JDG_AT_CREATE &&
      o->op + 1 < s->n) {
    size_t i;
    for (i = o->op + 1; i < s->n; i++) free(s->ops[i].arr);
    s->n = o->op + 1;
  }
}

/* Runs t: keeps it as the current sequence when it still fails the same
 * way, frees it otherwise. Returns whether it was kept. */
static int try_seq(shr *sh, jdg_seq *s, jdg_outcome *o, jdg_seq *t) {
  jdg_outcome to;
  if (fails(sh, t, &to)) {
    accept(s, o, t, &to);
    return 1;
  }
  jdg_seq_free(t);
  return 0;
}

/* s without ops [lo, hi). */
static int without_ops(const jdg_seq *s, size_t lo, size_t hi, jdg_seq *t) {
  size_t i;
  t->n = 0;
  t->ops = calloc(s->n ? s->n : 1, sizeof *t->ops);
  if (!t->ops) return -1;
  for (i = 0; i < s->n; i++) {
    if (i >= lo && i < hi) continue;
    if (jdg_op_copy(&t->ops[t->n], &s->ops[i]) != 0) {
      jdg_seq_free(t);
      return -1;
    }
    t->n++;
  }
  return 0;
}

static void shrink_ops(shr *sh, jdg_seq *s, jdg_outcome *o) {
  size_t chunk = s->n / 2 ? s->n / 2 : 1;
  for (;;) {
    int changed = 0;
    size_t i = 0;
    while (i < s->n && !sh->out_of_time) {
      jdg_seq t;
      size_t hi = i + chunk < s->n ? i + chunk : s->n;
      if (without_ops(s, i, hi, &t) != 0) return;
      if (try_seq(sh, s, o, &t)) changed = 1;
      else i += chunk;
    }
    if (sh->out_of_time) return;
    if (chunk > 1) chunk /= 2;
    else if (!changed) return;
  }
}

/* Deletes every operation on one key (its inserts, finds, erases...) at
 * once: a key's insert and later erase often only go together. */
static void shrink_by_key(shr *sh, jdg_seq *s, jdg_outcome *o) {
  size_t i = 0, j;
  while (i < s->n && !sh->out_of_time) {
    jdg_seq t;
    jdg_outcome to;
    uint64_t key = s->ops[i].a;
    jdg_opcode code = s->ops[i].code;
    if (code == JDG_OP_SIZE || code == JDG_OP_FIND_BULK || code >= JDG_OP_SORT_U32) {
      i++;
      continue;
    }
    t.ops = calloc(s->n, sizeof *t.ops);
    t.n = 0;
    if (!t.ops) return;
    for (j = 0; j < s->n; j++) {
      const jdg_op *op = &s->ops[j];
      if (op->code != JDG_OP_SIZE && op->code != JDG_OP_FIND_BULK && op->code < JDG_OP_SORT_U32 && op->a == key &&
          op->code != JDG_OP_RANGE_COUNT)
        continue;
      if (jdg_op_copy(&t.ops[t.n], op) != 0) {
        jdg_seq_free(&t);
        return;
      }
      t.n++;
    }
    if (t.n < s->n && fails(sh, &t, &to)) {
      accept(s, o, &t, &to);
      i = 0;
    } else {
      jdg_seq_free(&t);
      i++;
    }
  }
}

/* Deletes two operations at once, anywhere (short sequences only): an
 * insert that matters only because of a later operation goes with it. */
static void shrink_pairs(shr *sh, jdg_seq *s, jdg_outcome *o) {
  size_t i, j, k;
  int again = 1;
  while (again && s->n <= 48 && !sh->out_of_time) {
    again = 0;
    for (i = 0; i + 1 < s->n && !again; i++)
      for (j = i + 1; j < s->n && !again; j++) {
        jdg_seq t;
        jdg_outcome to;
        t.ops = calloc(s->n, sizeof *t.ops);
        t.n = 0;
        if (!t.ops) return;
        for (k = 0; k < s->n; k++) {
          if (k == i || k == j) continue;
          if (jdg_op_copy(&t.ops[t.n], &s->ops[k]) != 0) {
            jdg_seq_free(&t);
            return;
          }
          t.n++;
        }
        if (fails(sh, &t, &to)) {
          accept(s, o, &t, &to);
          again = 1;
        } else {
          jdg_seq_free(&t);
        }
      }
  }
}

/* The same over the elements of op k's array. */
static void shrink_array(shr *sh, jdg_seq *s, jdg_outcome *o, size_t k) {
  size_t chunk;
  if (k >= s->n || s->ops[k].n == 0) return;
  chunk = s->ops[k].n / 2 ? s->ops[k].n / 2 : 1;
  for (;;) {
    int changed = 0;
    size_t i = 0;
    while (k < s->n && i < s->ops[k].n && !sh->out_of_time) {
      jdg_seq t;
      jdg_op *op;
      size_t n = s->ops[k].n, hi = i + chunk < n ? i + chunk : n;
      /* A bulk find keeps at least one key. */
      if (s->ops[k].code == JDG_OP_FIND_BULK && hi - i >= n) {
        i = hi;
        continue;
      }
      if (jdg_seq_copy(&t, s) != 0) return;
      op = &t.ops[k];
      memmove(op->arr + i, op->arr + hi, (n - hi) * sizeof *op->arr);
      op->n = n - (hi - i);
      if (try_seq(sh, s, o, &t)) changed = 1;
      else i += chunk;
    }
    if (k >= s->n || sh->out_of_time) return;
    if (chunk > 1) chunk /= 2;
    else if (!changed) return;
  }
}

/* ---- simpler numbers ------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Keys of the map operations (a, and b of range_count, bulk keys), sorted and
 * deduplicated into a new array. */
static uint64_t *distinct_keys(const jdg_seq *s, size_t *m) {
  size_t i, j, n = 0, cap = 0;
  uint64_t *k;
  for (i = 0; i < s->n; i++) cap += 2 + s->ops[i].n;
  k = malloc((cap ? cap : 1) * sizeof *k);
  if (!k) return NULL;
  for (i = 0; i < s->n; i++) {
    const jdg_op *op = &s->ops[i];
    if (op->code == JDG_OP_SIZE) continue;
    if (op->code == JDG_OP_FIND_BULK) {
      for (j = 0; j < op->n; j++) k[n++] = op->arr[j];
      continue;
    }
    k[n++] = op->a;
    if (op->code == JDG_OP_RANGE_COUNT) k[n++] = op->b;
  }
  qsort(k, n, sizeof *k, cmp_u64);
  for (i = j = 0; i < n; i++)
    if (j == 0 || k[j - 1] != k[i]) k[j++] = k[i];
  *m = j;
  return k;
}

static void rename_key(jdg_seq *t, uint64_t from, uint64_t to) {
  size_t i, j;
  for (i = 0; i < t->n; i++) {
    jdg_op *op = &t->ops[i];
    if (op->code == JDG_OP_SIZE) continue;
    if (op->code == JDG_OP_FIND_BULK) {
      for (j = 0; j < op->n; j++)
        if (op->arr[j] == from) op->arr[j] = to;
      continue;
    }
    if (op->a == from) op->a = to;
    if (op->code == JDG_OP_RANGE_COUNT && op->b == from) op->b = to;
  }
}

static int in_sorted(const uint64_t *k, size_t m, uint64_t v) {
  return bsearch(&v, k, m, sizeof *k, cmp_u64) != NULL;
}

/* Every key replaced by its position among the distinct keys (0, 1, 2, ...):
 * the order between keys, which is all an ordered map sees, stays. */
static void compact_keys(shr *sh, jdg_seq *s, jdg_outcome *o, int keep_xor) {
  size_t m, i, j;
  uint64_t *keys = distinct_keys(s, &m);
  jdg_seq t;
  jdg_outcome to;
  if (!keys) return;
  for (i = 0; i < m && keys[i] == i; i++) {
  }
  if (i == m || jdg_seq_copy(&t, s) != 0) {
    free(keys);
    return;
  }
  for (i = 0; i < t.n; i++) {
    jdg_op *op = &t.ops[i];
    if (op->code == JDG_OP_SIZE) continue;
    for (j = 0; op->code == JDG_OP_FIND_BULK && j < op->n; j++)
      op->arr[j] = (uint64_t)((uint64_t *)bsearch(&op->arr[j], keys, m, sizeof *keys, cmp_u64) - keys);
    if (op->code == JDG_OP_FIND_BULK) continue;
    {
      uint64_t old = op->a;
      op->a = (uint64_t)((uint64_t *)bsearch(&op->a, keys, m, sizeof *keys, cmp_u64) - keys);
      /* value = key ^ c stays so: a run's values keep their formula */
      if (keep_xor && op->code == JDG_OP_INSERT) op->b ^= old ^ op->a;
    }
    if (op->code == JDG_OP_RANGE_COUNT)
      op->b = (uint64_t)((uint64_t *)bsearch(&op->b, keys, m, sizeof *keys, cmp_u64) - keys);
  }
  free(keys);
  if (fails(sh, &t, &to)) accept(s, o, &t, &to);
  else jdg_seq_free(&t);
}

/* Simpler numbers than x to try, simplest first: 0 .. small - 1, then the
 * highest power of two <= x, then x / 2 (repeated rounds halve further). */
static size_t simpler_values(uint64_t x, uint64_t small, uint64_t out[20]) {
  size_t n = 0;
  uint64_t v, p = 1;
  for (v = 0; v < small && v < x && n < 16; v++) out[n++] = v;
  if (x > small) {
    while (p <= x / 2) p <<= 1;
    if (p < x && p >= small) out[n++] = p;
    if (x / 2 >= small && x / 2 != p) out[n++] = x / 2;
  }
  return n;
}

static void simplify_keys(shr *sh, jdg_seq *s, jdg_outcome *o) {
  size_t m, i;
  uint64_t *keys, v;
  compact_keys(sh, s, o, 0);
  keys = distinct_keys(s, &m);
  if (!keys) return;
  for (i = 0; i < m && !sh->out_of_time; i++) {
    uint64_t k = keys[i], cand[20];
    size_t c, nc = simpler_values(k, 16, cand);
    for (c = 0; c < nc; c++) {
      jdg_seq t;
      jdg_outcome to;
      uint64_t *now;
      size_t mn;
      now = distinct_keys(s, &mn);
      if (!now) break;
      v = cand[c];
      if (in_sorted(now, mn, v) || !in_sorted(now, mn, k)) {
        free(now);
        continue;
      }
      free(now);
      if (jdg_seq_copy(&t, s) != 0) break;
      rename_key(&t, k, v);
      if (fails(sh, &t, &to)) {
        accept(s, o, &t, &to);
        break;
      }
      jdg_seq_free(&t);
    }
  }
  free(keys);
}

/* Inserted values and sort elements: each tried at 0..9 (and the element
 * before it in a sort input, which makes ties). */
static void simplify_values(shr *sh, jdg_seq *s, jdg_outcome *o) {
  size_t i, j;
  uint64_t v;
  for (i = 0; i < s->n && !sh->out_of_time; i++) {
    if (s->ops[i].code == JDG_OP_INSERT) {
      for (v = 0; v < 10 && i < s->n && v < s->ops[i].b; v++) {
        jdg_seq t;
        jdg_outcome to;
        if (jdg_seq_copy(&t, s) != 0) return;
        t.ops[i].b = v;
        if (fails(sh, &t, &to)) {
          accept(s, o, &t, &to);
          break;
        }
        jdg_seq_free(&t);
      }
    }
    if (i < s->n && s->ops[i].shape != JDG_SHAPE_NONE) continue;
    if (i < s->n && s->ops[i].code >= JDG_OP_SORT_U32 && s->ops[i].n) {
      /* First all elements at once, by rank among the distinct values (ties
       * stay ties, order stays order). */
      jdg_seq t;
      jdg_outcome to;
      uint64_t *d = malloc(s->ops[i].n * sizeof *d);
      size_t m = 0;
      if (d && jdg_seq_copy(&t, s) == 0) {
        memcpy(d, s->ops[i].arr, s->ops[i].n * sizeof *d);
        qsort(d, s->ops[i].n, sizeof *d, cmp_u64);
        for (j = 0; j < s->ops[i].n; j++)
          if (m == 0 || d[m - 1] != d[j]) d[m++] = d[j];
        for (j = 0; j < t.ops[i].n; j++)
          t.ops[i].arr[j] = (uint64_t)((uint64_t *)bsearch(&t.ops[i].arr[j], d, m, sizeof *d, cmp_u64) - d);
        if (memcmp(t.ops[i].arr, s->ops[i].arr, s->ops[i].n * sizeof *d) != 0 && fails(sh, &t, &to))
          accept(s, o, &t, &to);
        else
          jdg_seq_free(&t);
      }
      free(d);
    }
    if (i < s->n && s->ops[i].code >= JDG_OP_SORT_U32) {
      for (j = 0; i < s->n && j < s->ops[i].n; j++) {
        uint64_t cand[20];
        size_t c, nc = simpler_values(s->ops[i].arr[j], 10, cand);
        for (c = 0; c < nc && i < s->n && j < s->ops[i].n; c++) {
          jdg_seq t;
          jdg_outcome to;
          v = cand[c];
          if (jdg_seq_copy(&t, s) != 0) return;
          t.ops[i].arr[j] = v;
          if (fails(sh, &t, &to)) {
            accept(s, o, &t, &to);
            break;
          }
          jdg_seq_free(&t);
        }
      }
    }
  }
}

/* ---- long sequences: runs as units ------------------------------------------- */

#define SHORT_SEQ 300
/* Longer sequences are not shrunk one operation at a time: a trial each,
 * twice over, to learn what the runs as units mostly tell already. */
#define MAX_SINGLE_OPS 1000

/* Starts of the runs of s (runs.c, without results), into a new array. */
static size_t *run_starts(const jdg_seq *s, size_t *nu) {
  size_t *u = malloc((s->n + 1) * sizeof *u), i = 0, n = 0;
  jdg_formula f;
  if (!u) return NULL;
  while (i < s->n) {
    u[n++] = i;
    i += jdg_run_len(s, i, NULL, &f);
  }
  u[n] = s->n;
  *nu = n;
  return u;
}

/* Deletes chunks of operations, halving the chunk down to min_chunk, one
 * pass per size: for long sequences without runs to speak of (random
 * churn), where single operations would spend the budget. */
static void shrink_chunks(shr *sh, jdg_seq *s, jdg_outcome *o, size_t min_chunk) {
  size_t chunk, i;
  if (min_chunk < 1) min_chunk = 1;
  for (chunk = s->n / 2 ? s->n / 2 : 1;; chunk /= 2) {
    if (chunk < min_chunk) chunk = min_chunk;
    for (i = 0; i < s->n && !sh->out_of_time;) {
      jdg_seq t;
      size_t hi = i + chunk < s->n ? i + chunk : s->n;
      if (without_ops(s, i, hi, &t) != 0) return;
      if (!try_seq(sh, s, o, &t)) i += chunk;
    }
    if (chunk <= min_chunk || sh->out_of_time) return;
  }
}

#define MAX_RUN_UNITS 2000

/* Deletes chunks of whole runs, halving the chunk down to one run. */
static void shrink_runs(shr *sh, jdg_seq *s, jdg_outcome *o) {
  size_t nu, *u = run_starts(s, &nu), chunk, k;
  if (!u) return;
  if (nu > MAX_RUN_UNITS) {
    /* No runs to speak of (random churn): chunks of operations instead,
     * down to 1/256 of the sequence (about 500 trials), then runs again;
     * the rounds' sorted blocks and renumbered keys make runs of what is
     * left, and the next round takes them as units. */
    free(u);
    shrink_chunks(sh, s, o, s->n / 256);
    u = run_starts(s, &nu);
    if (!u) return;
    if (nu > MAX_RUN_UNITS) {
      free(u);
      return;
    }
  }
  for (chunk = nu / 2 ? nu / 2 : 1;; chunk /= 2) {
    for (k = 0; k < nu && !sh->out_of_time;) {
      jdg_seq t;
      size_t hi = k + chunk < nu ? k + chunk : nu;
      if (without_ops(s, u[k], u[hi], &t) != 0) break;
      if (try_seq(sh, s, o, &t)) {
        free(u);
        u = run_starts(s, &nu);
        if (!u) return;
      } else {
        k += chunk;
      }
    }
    if (chunk <= 1 || sh->out_of_time) break;
  }
  free(u);
}

/* Shortens every run to the fewest leading operations that still fail
 * (bisection on the run's length: the structure size, for a growth). */
static void truncate_runs(shr *sh, jdg_seq *s, jdg_outcome *o) {
  size_t nu, *u = run_starts(s, &nu), k;
  if (!u) return;
  for (k = nu; k-- > 0 && !sh->out_of_time;) {
    size_t start, len, lo, hi;
    if (k >= nu) continue;
    start = u[k];
    len = u[k + 1] - start;
    if (len < 2) continue;
    lo = 0; /* keeping lo ops: not known to fail; hi: fails */
    hi = len;
    while (hi - lo > 1) {
      size_t mid = lo + (hi - lo) / 2;
      jdg_seq t;
      if (without_ops(s, start + mid, start + hi, &t) != 0) break;
      if (try_seq(sh, s, o, &t)) hi = mid;
      else lo = mid;
    }
    free(u);
    u = run_starts(s, &nu);
    if (!u) return;
  }
  free(u);
}

/* Keys of a scattered run (key = x * JDG_GOLD) as plain x, all at once. */
static void unscatter_keys(shr *sh, jdg_seq *s, jdg_outcome *o) {
  uint64_t inv = 0xf1de83e19937733dull; /* JDG_GOLD^-1 mod 2^64 */
  size_t i, j;
  jdg_seq t;
  if (jdg_seq_copy(&t, s) != 0) return;
  for (i = 0; i < t.n; i++) {
    jdg_op *op = &t.ops[i];
    if (op->code >= JDG_OP_SORT_U32 || op->code == JDG_OP_SIZE) continue;
    if (op->code == JDG_OP_INSERT) op->b = op->b ^ op->a ^ (op->a * inv); /* value = key ^ c stays so */
    op->a *= inv;
    if (op->code == JDG_OP_RANGE_COUNT) op->b *= inv;
    for (j = 0; op->code == JDG_OP_FIND_BULK && j < op->n; j++) op->arr[j] *= inv;
  }
  try_seq(sh, s, o, &t);
}

/* Shaped sort inputs: the fewest elements of the same shape that fail;
 * at 64 or fewer the input becomes a plain list for the element shrinkers. */
static void shrink_shapes(shr *sh, jdg_seq *s, jdg_outcome *o) {
  size_t k;
  for (k = 0; k < s->n; k++) {
    size_t lo = 0, hi;
    if (s->ops[k].shape == JDG_SHAPE_NONE) continue;
    hi = s->ops[k].n;
    while (hi - lo > 1) {
      size_t mid = lo + (hi - lo) / 2;
      jdg_seq t;
      if (jdg_seq_copy(&t, s) != 0) return;
      t.ops[k].n = mid;
      if (jdg_shape_fill(&t.ops[k]) != 0) {
        jdg_seq_free(&t);
        return;
      }
      if (try_seq(sh, s, o, &t)) hi = mid;
      else lo = mid;
      if (k >= s->n) return;
    }
    if (s->ops[k].n <= 64) s->ops[k].shape = JDG_SHAPE_NONE;
  }
}

/* ---- loops from blocks --------------------------------------------------------- */

/* Inserts, erases and finds in a block of the same call can often go in
 * key order without losing the failure; in order, and with keys renumbered,
 * they print as one loop. */
static int cmp_op_key_up(const void *a, const void *b) {
  const jdg_op *x = a, *y = b;
  return (x->a > y->a) - (x->a < y->a);
}
static int cmp_op_key_down(const void *a, const void *b) { return cmp_op_key_up(b, a); }

static int blockable(jdg_opcode c) { return c == JDG_OP_INSERT || c == JDG_OP_ERASE || c == JDG_OP_FIND; }

/* End of the block of the same call from op i. */
static size_t block_end(const jdg_seq *s, size_t i) {
  size_t j = i + 1;
  while (j < s->n && s->ops[j].code == s->ops[i].code) j++;
  return j;
}

static void sort_blocks(shr *sh, jdg_seq *s, jdg_outcome *o) {
  size_t i = 0;
  while (i < s->n && !sh->out_of_time) {
    size_t j = block_end(s, i), d;
    jdg_formula f;
    if (!blockable(s->ops[i].code) || j - i < 3 || jdg_run_len(s, i, NULL, &f) >= j - i) {
      i = j;
      continue;
    }
    for (d = 0; d < 2; d++) {
      jdg_seq t;
      if (jdg_seq_copy(&t, s) != 0) return;
      qsort(t.ops + i, j - i, sizeof *t.ops, d ? cmp_op_key_down : cmp_op_key_up);
      if (try_seq(sh, s, o, &t)) break;
    }
    /* The sequence may have been cut; the block ends where it ends now. */
    i = i < s->n ? block_end(s, i) : s->n;
  }
}

/* A block of inserts on keys lo..hi with some missing: tried as one loop
 * over the whole range lo..hi (step 1, ascending or descending as it was),
 * values as in its first operation's formula. */
static void fill_blocks(shr *sh, jdg_seq *s, jdg_outcome *o) {
  size_t i = 0;
  while (i < s->n && !sh->out_of_time) {
    size_t j = block_end(s, i), k, m;
    uint64_t lo = ~0ull, hi = 0, vx;
    int up, vconst;
    jdg_seq t;
    if (s->ops[i].code != JDG_OP_INSERT || j - i < 2) {
      i = j;
      continue;
    }
    for (k = i; k < j; k++) {
      if (s->ops[k].a < lo) lo = s->ops[k].a;
      if (s->ops[k].a > hi) hi = s->ops[k].a;
    }
    m = (size_t)(hi - lo + 1);
    if (hi - lo >= 1u << 20 || m == j - i) {
      i = j;
      continue;
    }
    up = s->ops[i].a <= s->ops[j - 1].a;
    vconst = s->ops[i].b == s->ops[i + 1].b;
    vx = vconst ? s->ops[i].b : s->ops[i].b ^ s->ops[i].a;
    t.n = s->n - (j - i) + m;
    t.ops = calloc(t.n, sizeof *t.ops);
    if (!t.ops) return;
    for (k = 0; k < t.n; k++) {
      const jdg_op *src = k < i ? &s->ops[k] : k >= i + m ? &s->ops[k - m + (j - i)] : NULL;
      if (src) {
        if (jdg_op_copy(&t.ops[k], src) != 0) {
          t.n = k;
          jdg_seq_free(&t);
          return;
        }
      } else {
        uint64_t key = up ? lo + (k - i) : hi - (k - i);
        t.ops[k].code = JDG_OP_INSERT;
        t.ops[k].a = key;
        t.ops[k].b = vconst ? vx : key ^ vx;
      }
    }
    try_seq(sh, s, o, &t);
    i = i < s->n ? block_end(s, i) : s->n;
  }
}

/* All inserted values at once: 0, which needs no formula. */
static void zero_values(shr *sh, jdg_seq *s, jdg_outcome *o) {
  size_t i;
  int any = 0;
  jdg_seq t;
  for (i = 0; i < s->n; i++) any |= s->ops[i].code == JDG_OP_INSERT && s->ops[i].b != 0;
  if (!any || jdg_seq_copy(&t, s) != 0) return;
  for (i = 0; i < t.n; i++)
    if (t.ops[i].code == JDG_OP_INSERT) t.ops[i].b = 0;
  try_seq(sh, s, o, &t);
}

/* Changes when the sequence does (for the fixed point of the rounds). */
static uint64_t fingerprint(const jdg_seq *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  size_t i, j;
#define MIX(x) (h = (h ^ (uint64_t)(x)) * 0x100000001b3ull)
  MIX(s->n);
  for (i = 0; i < s->n; i++) {
    const jdg_op *op = &s->ops[i];
    MIX(op->code);
    MIX(op->a);
    MIX(op->b);
    MIX(op->n);
    for (j = 0; j < op->n; j++) MIX(op->arr[j]);
  }
#undef MIX
  return h;
}

void jdg_shrink(const jdg_cand *c, jdg_seq *s, jdg_outcome *o, double limit, double budget, jdg_shrink_stats *st) {
  shr sh;
  jdg_seq orig, t;
  jdg_outcome orig_o, to;
  size_t k;
  int round;

  memset(st, 0, sizeof *st);
  st->original_ops = s->n;
  if (o->v == JDG_PASS || o->v == JDG_ERROR || o->v == JDG_SLOW) return;
  if (jdg_seq_copy(&orig, s) != 0) return;
  orig_o = *o;
  if (o->actual) {
    size_t nw = (o->op < s->n) ? jdg_op_words(&s->ops[o->op]) : 0;
    orig_o.actual = malloc((nw ? nw : 1) * sizeof *o->actual);
    if (orig_o.actual) memcpy(orig_o.actual, o->actual, nw * sizeof *o->actual);
  }
  sh.c = c;
  sh.want = o->v;
  sh.trials = 0;
  sh.out_of_time = 0;
  sh.limit = o->v == JDG_HANG ? (limit / 4 > 0.25 ? limit / 4 : (limit < 0.25 ? limit : 0.25)) : limit;
  if (o->v == JDG_HANG && budget > MAX_SECONDS_HANG) budget = MAX_SECONDS_HANG;
  sh.give_up = jdg_now() + budget;

  /* 1: cut after the failing operation (through accept on a plain copy). */
  if (jdg_seq_copy(&t, s) == 0) {
    to = *o;
    o->actual = NULL;
    accept(s, o, &t, &to);
  }
  /* Rounds until nothing changes: simpler keys often let more operations go. */
  for (round = 0; round < 8 && !sh.out_of_time; round++) {
    uint64_t before = fingerprint(s);
    if (s->n > SHORT_SEQ || (c->kind == JDG_SORT && round == 0)) {
      double end = phase_begin(&sh, 0.5);
      shrink_shapes(&sh, s, o);
      shrink_runs(&sh, s, o);
      truncate_runs(&sh, s, o);
      shrink_runs(&sh, s, o);
      phase_end(&sh, end);
      if (c->kind != JDG_SORT && round == 0) {
        unscatter_keys(&sh, s, o);
        compact_keys(&sh, s, o, 1);
      }
      if (c->kind != JDG_SORT) {
        /* Loops early: runs shrink as units and print as one line. */
        sort_blocks(&sh, s, o);
        compact_keys(&sh, s, o, 1);
      }
      /* Still long: more rounds while they help, then single operations
       * (a run's middle, which runs as units cannot lose), when each trial
       * is cheap enough. */
      if (s->n > SHORT_SEQ && fingerprint(s) != before) continue;
      if (s->n > MAX_SINGLE_OPS) break;
    }
    shrink_ops(&sh, s, o);
    if (c->kind != JDG_SORT && s->n <= SHORT_SEQ) shrink_by_key(&sh, s, o);
    shrink_pairs(&sh, s, o);
    for (k = 0; k < s->n && !sh.out_of_time; k++)
      if (s->ops[k].n && s->ops[k].shape == JDG_SHAPE_NONE) shrink_array(&sh, s, o, k);
    if (c->kind != JDG_SORT) {
      if (s->n <= SHORT_SEQ) simplify_keys(&sh, s, o);
      zero_values(&sh, s, o);
    }
    if (s->n <= SHORT_SEQ) simplify_values(&sh, s, o);
    if (c->kind != JDG_SORT) {
      /* Loops: blocks in key order, keys renumbered, gaps filled. */
      sort_blocks(&sh, s, o);
      compact_keys(&sh, s, o, 0);
      fill_blocks(&sh, s, o);
      compact_keys(&sh, s, o, 0);
    }
    if (fingerprint(s) == before) break;
  }

  /* The final sequence under the full limit. */
  st->trials = sh.trials;
  st->out_of_time = sh.out_of_time;
  sh.limit = limit;
  sh.give_up = jdg_now() + 10 * limit + 10;
  sh.trials = 0;
  if (fails(&sh, s, &to)) {
    jdg_outcome_free(o);
    *o = to;
    jdg_seq_free(&orig);
    jdg_outcome_free(&orig_o);
  } else {
    jdg_seq_free(s);
    *s = orig;
    jdg_outcome_free(o);
    *o = orig_o;
    st->fallback = 1;
  }
  st->trials += sh.trials;
}
