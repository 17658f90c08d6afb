/* runner.c: runs a sequence on the candidate in a child process.
 *
 * The child calls the candidate and stores each operation's result words in
 * memory shared with the parent, then publishes the count of operations done;
 * the parent compares the words with tandem's as they arrive and stops the
 * child at the first difference. So a crash (the child is gone before the
 * last operation), an abort, an exit or a hang is pinned to the operation it
 * happened in, and the judge itself never runs candidate code. No system
 * call per operation: a sequence of 10^6 operations costs the candidate's
 * time, not the pipe's.
 *
 * Time: every operation has an allowance scaled to its size (a map
 * operation: linear in the map's size, so an O(n) sorted-array insert
 * passes; a sort: n log n). An operation that has not returned after the
 * limit plus its allowance is a hang, or "too slow" when it is a large sort
 * (its allowance alone is a good part of the limit: no way to tell a
 * quadratic sort from an endless loop but its size); a sequence whose
 * operations keep returning but whose total time passes the limit plus the
 * sum of the allowances so far is "too slow" at the size it had reached.
 *
 * Leaks (heap.cc): the candidate's blocks are recorded from before create to
 * after destroy. When some are still live, the same sequence runs again in
 * the same child: only when the second run leaves more blocks live than the
 * first is it a leak (a one-time cache, of the candidate, the C library or
 * libstdc++, stays the same size). Memory a candidate maps with mmap itself
 * is not seen.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jdg.h"

/* The child's exit status when judge_map_create returned NULL. */
#define EXIT_CREATE_NULL 71

double jdg_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int jdg_write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len) {
    ssize_t k = write(fd, p, len);
    if (k < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += k;
    len -= (size_t)k;
  }
  return 0;
}

long jdg_read_until(int fd, void *buf, size_t len, double deadline, size_t *got) {
  char *p = buf;
  *got = 0;
  while (*got < len) {
    struct pollfd pfd = {fd, POLLIN, 0};
    double left = deadline - jdg_now();
    int rc, ms;
    ssize_t k;
    if (left <= 0) return -2;
    ms = (int)(left * 1000.0) + 1;
    rc = poll(&pfd, 1, ms);
    if (rc < 0 && errno != EINTR) return (long)*got;
    if (rc <= 0) continue;
    k = read(fd, p + *got, len - *got);
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return (long)*got;
    }
    if (k == 0) return (long)*got; /* EOF: the child is gone */
    *got += (size_t)k;
  }
  return (long)*got;
}

int jdg_spawn(void (*fn)(void *arg, int fd), void *arg, int *rfd) {
  int p[2];
  pid_t pid, parent = getpid();
  if (pipe(p) != 0) return -1;
  fflush(NULL);
  pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    return -1;
  }
  if (pid == 0) {
    struct rlimit core = {0, 0};
    int devnull = open("/dev/null", O_WRONLY);
    close(p[0]);
    /* An endless loop must not outlive a judge that was killed. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    if (devnull >= 0) {
      dup2(devnull, 1);
      dup2(devnull, 2);
      close(devnull);
    }
    setrlimit(RLIMIT_CORE, &core); /* a crashing candidate leaves no core files */
#if !defined(__SANITIZE_ADDRESS__) && !defined(JDG_NO_AS_LIMIT)
    {
      /* A runaway allocation fails in the child instead of swapping the
       * machine (sanitizers need their huge virtual shadow, so not there). */
      struct rlimit as = {(rlim_t)8 << 30, (rlim_t)8 << 30};
      setrlimit(RLIMIT_AS, &as);
    }
#endif
    fn(arg, p[1]);
    _exit(0);
  }
  close(p[1]);
  *rfd = p[0];
  return (int)pid;
}

/* ---- allowances ----------------------------------------------------------------- */

/* Seconds a decent implementation needs, many times over: a map operation
 * 5 us plus 50 ns per key already stored (an O(n) memmove of 10^5 entries
 * takes well under that), a sort 5 us plus 25 ns per n log2 n. */
static double op_allowance(const jdg_op *op, uint64_t size) {
  double n = (double)op->n;
  switch (op->code) {
  case JDG_OP_SORT_U32:
  case JDG_OP_SORT_U64:
  case JDG_OP_SORT_PAIRS: return 5e-6 + 25e-9 * n * log2(n + 2);
  case JDG_OP_FIND_BULK: return n * (5e-6 + 50e-9 * (double)size);
  default: return 5e-6 + 50e-9 * (double)size;
  }
}

/* ---- the child ---------------------------------------------------------------- */

typedef struct shared_hdr {
  _Atomic uint64_t started; /* judge_map_create returned */
  _Atomic uint64_t done;    /* operations whose words are stored */
  _Atomic uint64_t phase;   /* 1: destroyed, 2: repeated (leak check), 3: finished */
  int64_t leak_blocks, leak_bytes;
  int leak_checked;
  jdg_heap heap; /* before destroy */
} shared_hdr;

typedef struct seq_child {
  const jdg_cand *c;
  const jdg_seq *s;
  shared_hdr *sh;
  uint64_t *words; /* shared, jdg_seq_words(s) of them */
} seq_child;

typedef struct seq_work {
  const jdg_cand *c;
  const jdg_seq *s;
  uint64_t *w, *vals; /* w: scratch words for a run whose results are not kept */
  uint32_t *a32;
  uint8_t *found;
} seq_work;

/* One operation; its words go to w. */
static void run_op(const seq_work *k, void *m, const jdg_op *op, uint64_t *w) {
  const jdg_cand *c = k->c;
  uint64_t v;
  size_t j;
  int f;
  switch (op->code) {
  case JDG_OP_INSERT: w[0] = (uint64_t)(int64_t)c->insert(m, op->a, op->b); break;
  case JDG_OP_FIND:
    v = 0;
    f = c->find(m, op->a, &v);
    w[0] = (uint64_t)(int64_t)f;
    w[1] = f ? v : 0;
    break;
  case JDG_OP_ERASE: w[0] = (uint64_t)(int64_t)c->erase(m, op->a); break;
  case JDG_OP_SIZE: w[0] = (uint64_t)c->size(m); break;
  case JDG_OP_RANK: w[0] = c->rank(m, op->a); break;
  case JDG_OP_RANGE_COUNT: w[0] = c->range_count(m, op->a, op->b); break;
  case JDG_OP_FIND_BULK:
    memset(k->vals, 0, op->n * sizeof *k->vals);
    memset(k->found, 2, op->n); /* neither 0 nor 1: an output never written shows */
    c->find_bulk(m, op->arr, k->vals, k->found, op->n);
    for (j = 0; j < op->n; j++) {
      w[2 * j] = k->found[j];
      w[2 * j + 1] = k->found[j] ? k->vals[j] : 0;
    }
    break;
  case JDG_OP_SORT_U32:
    for (j = 0; j < op->n; j++) k->a32[j] = (uint32_t)op->arr[j];
    c->sort_u32(op->n ? k->a32 : NULL, op->n);
    for (j = 0; j < op->n; j++) w[j] = k->a32[j];
    break;
  case JDG_OP_SORT_U64:
    if (op->n) memcpy(w, op->arr, op->n * sizeof *w);
    c->sort_u64(op->n ? w : NULL, op->n);
    break;
  case JDG_OP_SORT_PAIRS:
    if (op->n) memcpy(w, op->arr, op->n * sizeof *w);
    for (j = 0; j < op->n; j++) w[op->n + j] = j;
    c->sort_pairs_u64(op->n ? w : NULL, op->n ? w + op->n : NULL, op->n);
    break;
  }
}

/* The whole sequence from create to destroy, recording the candidate's
 * blocks. out: the shared words (and progress published in sh), or NULL for
 * the silent repeat. */
static void run_all(const seq_work *k, shared_hdr *sh, uint64_t *out) {
  const jdg_seq *s = k->s;
  size_t i, at = 0;
  void *m = NULL;
  jdg_heap_track(1);
  if (k->c->kind != JDG_SORT) {
    m = k->c->create();
    if (!m) _exit(EXIT_CREATE_NULL);
  }
  if (out) atomic_store_explicit(&sh->started, 1, memory_order_release);
  for (i = 0; i < s->n; i++) {
    const jdg_op *op = &s->ops[i];
    run_op(k, m, op, out ? out + at : k->w);
    at += jdg_op_words(op);
    if (out) atomic_store_explicit(&sh->done, i + 1, memory_order_release);
  }
  if (out) jdg_heap_stats(&sh->heap);
  if (m) k->c->destroy(m);
  jdg_heap_track(0);
}

static void run_seq_child(void *arg, int fd) {
  const seq_child *sc = arg;
  seq_work k;
  size_t maxw = 2, maxn = 1, i;
  jdg_heap first, second;
  (void)fd;
  for (i = 0; i < sc->s->n; i++) {
    size_t n = jdg_op_words(&sc->s->ops[i]);
    if (n > maxw) maxw = n;
    if (sc->s->ops[i].n > maxn) maxn = sc->s->ops[i].n;
  }
  /* Every buffer of the child is allocated before recording starts. */
  k.c = sc->c;
  k.s = sc->s;
  k.w = malloc(maxw * sizeof *k.w);
  k.vals = malloc(maxn * sizeof *k.vals);
  k.a32 = malloc(maxn * sizeof *k.a32);
  k.found = malloc(maxn);
  if (!k.w || !k.vals || !k.a32 || !k.found) _exit(70);
  run_all(&k, sc->sh, sc->words);
  jdg_heap_stats(&first);
  atomic_store_explicit(&sc->sh->phase, 1, memory_order_release);
  sc->sh->leak_checked = jdg_heap_available();
  if (first.blocks) {
    /* Still live: a leak only when it grows with a second run. */
    run_all(&k, sc->sh, NULL);
    jdg_heap_stats(&second);
    if (second.blocks > first.blocks || second.bytes > first.bytes) {
      sc->sh->leak_blocks = (int64_t)(second.blocks - first.blocks);
      sc->sh->leak_bytes = (int64_t)(second.bytes - first.bytes);
    }
  }
  atomic_store_explicit(&sc->sh->phase, 3, memory_order_release);
  _exit(0);
}

/* ---- the parent --------------------------------------------------------------- */

static void finish_child(int pid, int killed, jdg_outcome *out) {
  int st = 0;
  if (killed) kill(pid, SIGKILL);
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (killed || out->v != JDG_CRASH) return;
  if (WIFSIGNALED(st)) out->sig = WTERMSIG(st);
  else if (WIFEXITED(st)) out->exit_code = WEXITSTATUS(st);
}

void jdg_run(const jdg_cand *c, const jdg_seq *s, const uint64_t *expected, double limit, jdg_outcome *out) {
  seq_child sc;
  size_t nw = jdg_seq_words(s), i, checked = 0, at = 0, map_bytes;
  double *allow_sum = NULL, t0, t_prog, *allow = NULL;
  uint64_t *size_before = NULL, size = 0;
  void *mem;
  int rfd, pid, killed = 0, gone = 0;

  memset(out, 0, sizeof *out);
  out->op = JDG_AT_CREATE;
  allow = malloc((s->n + 1) * sizeof *allow);
  allow_sum = malloc((s->n + 2) * sizeof *allow_sum);
  size_before = malloc((s->n + 1) * sizeof *size_before);
  map_bytes = sizeof(shared_hdr) + (nw ? nw : 1) * sizeof(uint64_t);
  mem = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (!allow || !allow_sum || !size_before || mem == MAP_FAILED) {
    out->v = JDG_ERROR;
    snprintf(out->why, sizeof out->why, "out of memory");
    goto done;
  }
  /* Sizes and allowances from tandem's results. */
  allow_sum[0] = 0;
  for (i = 0; i < s->n; i++) {
    const jdg_op *op = &s->ops[i];
    size_before[i] = c->kind == JDG_SORT ? op->n : size;
    allow[i] = op_allowance(op, size);
    allow_sum[i + 1] = allow_sum[i] + allow[i];
    if (size > out->max_size) out->max_size = size;
    if (op->code == JDG_OP_INSERT && expected[at] == 1) size++;
    if (op->code == JDG_OP_ERASE && expected[at] == 1) size--;
    at += jdg_op_words(op);
  }
  if (size > out->max_size) out->max_size = size;
  size_before[s->n] = size;
  allow[s->n] = op_allowance(&(jdg_op){.code = JDG_OP_SIZE}, size); /* destroy */
  sc.c = c;
  sc.s = s;
  sc.sh = mem;
  sc.words = (uint64_t *)((char *)mem + sizeof(shared_hdr));
  pid = jdg_spawn(run_seq_child, &sc, &rfd);
  if (pid < 0) {
    out->v = JDG_ERROR;
    snprintf(out->why, sizeof out->why, "cannot start a child process: %s", strerror(errno));
    goto done;
  }
  t0 = t_prog = jdg_now();
  at = 0;
  for (;;) {
    uint64_t started = atomic_load_explicit(&sc.sh->started, memory_order_acquire);
    uint64_t done = atomic_load_explicit(&sc.sh->done, memory_order_acquire);
    uint64_t phase = atomic_load_explicit(&sc.sh->phase, memory_order_acquire);
    double now = jdg_now(), stall;
    size_t cur;
    struct pollfd pfd = {rfd, POLLIN, 0};
    if (done > checked) t_prog = now;
    for (; checked < done; checked++) {
      const jdg_op *op = &s->ops[checked];
      size_t k = jdg_op_words(op);
      if (!jdg_op_agrees(op, expected + at, sc.words + at)) {
        out->v = JDG_MISMATCH;
        out->op = checked;
        out->actual = malloc(k * sizeof *out->actual);
        if (out->actual) memcpy(out->actual, sc.words + at, k * sizeof *out->actual);
        killed = 1;
        break;
      }
      at += k;
    }
    if (out->v == JDG_MISMATCH) break;
    /* Judged when operations complete: a stall is judged below. */
    if (done && t_prog == now && now - t0 > limit + allow_sum[done]) {
      out->v = JDG_SLOW;
      out->op = done - 1;
      out->size_at = size_before[done - 1];
      out->spent = now - t0;
      out->allowed = limit + allow_sum[done];
      killed = 1;
      break;
    }
    if (phase == 3) {
      out->leak_checked = sc.sh->leak_checked;
      out->leaked = sc.sh->leak_bytes;
      out->leaked_blocks = sc.sh->leak_blocks;
      out->heap = sc.sh->heap;
      if (out->leaked > 0 || out->leaked_blocks > 0) {
        out->v = JDG_LEAK;
        out->op = s->n;
      }
      break;
    }
    /* The call in progress: op done, or destroy (and the repeat) at n. */
    cur = started ? (size_t)done : JDG_AT_CREATE;
    if (gone) {
      out->v = JDG_CRASH;
      out->op = cur;
      break;
    }
    stall = now - t_prog;
    if (stall > limit * (phase ? 2 + s->n / 1000 : 1) + allow[cur == JDG_AT_CREATE ? 0 : cur]) {
      /* A large sort that does not return: too slow (an n log n sort of it
       * takes a small part of the limit); a cheap call: a hang. */
      int big = cur < s->n && (allow[cur] >= limit / 8 ||
                               (s->ops[cur].code >= JDG_OP_SORT_U32 && s->ops[cur].n >= 16384));
      out->v = big ? JDG_SLOW : JDG_HANG;
      out->op = cur;
      out->size_at = cur < s->n ? size_before[cur] : size;
      out->spent = stall;
      out->allowed = limit + allow[cur == JDG_AT_CREATE ? 0 : cur];
      killed = 1;
      break;
    }
    /* The child closing its end of the pipe (exit or death) ends the wait. */
    if (poll(&pfd, 1, 1) > 0) {
      char b;
      if (read(rfd, &b, 1) <= 0) gone = 1;
    }
  }
  close(rfd);
  finish_child(pid, killed, out);
  if (out->v == JDG_CRASH && out->sig == 0 && out->exit_code == EXIT_CREATE_NULL)
    snprintf(out->why, sizeof out->why, "judge_map_create returned NULL");
done:
  if (mem != MAP_FAILED) munmap(mem, map_bytes);
  free(allow);
  free(allow_sum);
  free(size_before);
}
