/* runner.c: runs a sequence on the candidate in a child process.
 *
 * The child calls the candidate and streams each operation's result words
 * through a pipe as soon as the call returns; the parent compares them with
 * tandem's as they arrive and stops the child at the first difference. So a
 * crash (the pipe closes early), an abort, an exit or a hang (no word before
 * the deadline, then SIGKILL) is pinned to the operation it happened in, and
 * the judge itself never runs candidate code.
 *
 * Leaks: before judge_map_create the child measures the heap bytes in use
 * (glibc's mallinfo2, or the sanitizer allocator's count in sanitized
 * builds), after judge_map_destroy (or after the sorts) it measures again and
 * sends the difference. A warm-up create/destroy pair comes first so that
 * one-time lazy initialisation inside the candidate is not counted, and the
 * candidate runs on a thread of its own whose exit hands glibc's per-thread
 * cache of freed blocks back (the statistics count those as in use). Memory a
 * candidate maps itself with mmap is not seen.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define JDG_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define JDG_ASAN 1
#endif
#ifdef JDG_ASAN
/* From the sanitizer runtime (sanitizer/allocator_interface.h, which not
 * every compiler installation ships). */
size_t __sanitizer_get_current_allocated_bytes(void);
#elif defined(__GLIBC__)
#include <malloc.h>
#endif

#include "jdg.h"

#define DONE_MAGIC 0x454e4f44474a444aull /* "JDJGDONE" */
#define START_MAGIC 0x54525453474a444aull
#define LEAK_UNKNOWN INT64_MIN
/* The child's exit status when judge_map_create returned NULL. */
#define EXIT_CREATE_NULL 71

double jdg_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Heap bytes in use in this process; -1 when unknown. */
static int64_t heap_in_use(void) {
#ifdef JDG_ASAN
  return (int64_t)__sanitizer_get_current_allocated_bytes();
#elif defined(__GLIBC__)
  struct mallinfo2 mi = mallinfo2();
  return (int64_t)(mi.uordblks + mi.hblkhd);
#else
  return -1;
#endif
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
#ifndef JDG_ASAN
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

/* ---- the child ---------------------------------------------------------------- */

typedef struct seq_child {
  const jdg_cand *c;
  const jdg_seq *s;
} seq_child;

typedef struct seq_work {
  const jdg_cand *c;
  const jdg_seq *s;
  int fd;
  uint64_t *w, *vals;
  uint32_t *a32;
  uint8_t *found;
} seq_work;

/* A create/destroy pair (or a tiny sort), on a thread like the real run, so
 * one-time set-up in the candidate or in the thread library is not counted
 * as a leak. */
static void *warm_up(void *arg) {
  const jdg_cand *c = arg;
  if (c->kind == JDG_SORT) {
    uint64_t a[2] = {2, 1};
    c->sort_u64(a, 2);
  } else {
    void *m = c->create();
    if (m) c->destroy(m);
  }
  return NULL;
}

/* The whole sequence, on its own thread: glibc keeps recently freed blocks
 * in a per-thread cache that its statistics count as in use, and returns
 * them when the thread exits. */
static void *run_ops(void *arg) {
  seq_work *k = arg;
  const jdg_cand *c = k->c;
  const jdg_seq *s = k->s;
  uint64_t *w = k->w, start = START_MAGIC;
  size_t i, j;
  void *m = NULL;
  if (c->kind != JDG_SORT) {
    m = c->create();
    if (!m) _exit(EXIT_CREATE_NULL);
  }
  if (jdg_write_all(k->fd, &start, sizeof start) != 0) _exit(0);
  for (i = 0; i < s->n; i++) {
    const jdg_op *op = &s->ops[i];
    uint64_t v;
    int f;
    switch (op->code) {
    case JDG_OP_INSERT:
      w[0] = (uint64_t)(int64_t)c->insert(m, op->a, op->b);
      break;
    case JDG_OP_FIND:
      v = 0;
      f = c->find(m, op->a, &v);
      w[0] = (uint64_t)(int64_t)f;
      w[1] = f ? v : 0;
      break;
    case JDG_OP_ERASE:
      w[0] = (uint64_t)(int64_t)c->erase(m, op->a);
      break;
    case JDG_OP_SIZE:
      w[0] = (uint64_t)c->size(m);
      break;
    case JDG_OP_RANK:
      w[0] = c->rank(m, op->a);
      break;
    case JDG_OP_RANGE_COUNT:
      w[0] = c->range_count(m, op->a, op->b);
      break;
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
    if (jdg_write_all(k->fd, w, jdg_op_words(op) * sizeof *w) != 0) _exit(0);
  }
  if (m) c->destroy(m);
  return NULL;
}

static void run_seq_child(void *arg, int fd) {
  const seq_child *sc = arg;
  seq_work k;
  size_t maxw = 2, maxn = 1, i;
  uint64_t done[2];
  int64_t before, after;
  pthread_t th;

  for (i = 0; i < sc->s->n; i++) {
    size_t n = jdg_op_words(&sc->s->ops[i]);
    if (n > maxw) maxw = n;
    if (sc->s->ops[i].n > maxn) maxn = sc->s->ops[i].n;
  }
  /* Every buffer of the child is allocated before the heap is measured. */
  k.c = sc->c;
  k.s = sc->s;
  k.fd = fd;
  k.w = malloc(maxw * sizeof *k.w);
  k.vals = malloc(maxn * sizeof *k.vals);
  k.a32 = malloc(maxn * sizeof *k.a32);
  k.found = malloc(maxn);
  if (!k.w || !k.vals || !k.a32 || !k.found) _exit(70);
  if (pthread_create(&th, NULL, warm_up, (void *)sc->c) != 0) _exit(70);
  pthread_join(th, NULL);
  before = heap_in_use();
  if (pthread_create(&th, NULL, run_ops, &k) != 0) _exit(70);
  pthread_join(th, NULL);
  after = heap_in_use();
  done[0] = DONE_MAGIC;
  done[1] = (uint64_t)(before < 0 || after < 0 ? LEAK_UNKNOWN : after - before);
  jdg_write_all(fd, done, sizeof done);
  _exit(0);
}

/* ---- the parent --------------------------------------------------------------- */

static void finish_child(int pid, int killed, jdg_outcome *out) {
  int st = 0;
  if (killed) kill(pid, SIGKILL);
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (killed || out->v == JDG_MISMATCH || out->v == JDG_HANG) return;
  if (WIFSIGNALED(st)) {
    out->v = JDG_CRASH;
    out->sig = WTERMSIG(st);
  } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
    out->v = JDG_CRASH;
    out->exit_code = WEXITSTATUS(st);
  }
}

void jdg_run(const jdg_cand *c, const jdg_seq *s, const uint64_t *expected, double limit, jdg_outcome *out) {
  seq_child sc = {c, s};
  size_t maxw = 2, i, at = 0, got;
  uint64_t *buf, start;
  int rfd, pid, killed = 0;
  double deadline;
  long r;

  memset(out, 0, sizeof *out);
  for (i = 0; i < s->n; i++) {
    size_t k = jdg_op_words(&s->ops[i]);
    if (k > maxw) maxw = k;
  }
  buf = malloc(maxw * sizeof *buf);
  if (!buf) {
    out->v = JDG_ERROR;
    snprintf(out->why, sizeof out->why, "out of memory");
    return;
  }
  pid = jdg_spawn(run_seq_child, &sc, &rfd);
  if (pid < 0) {
    out->v = JDG_ERROR;
    snprintf(out->why, sizeof out->why, "cannot start a child process: %s", strerror(errno));
    free(buf);
    return;
  }
  deadline = jdg_now() + limit;
  out->op = JDG_AT_CREATE;
  r = jdg_read_until(rfd, &start, sizeof start, deadline, &got);
  if (r == -2) {
    out->v = JDG_HANG;
    killed = 1;
  } else if (r != (long)sizeof start || start != START_MAGIC) {
    out->v = JDG_CRASH; /* finish_child reads how */
  } else {
    for (i = 0; i <= s->n; i++) {
      size_t nw = i < s->n ? jdg_op_words(&s->ops[i]) : 2;
      out->op = i;
      r = jdg_read_until(rfd, buf, nw * sizeof *buf, deadline, &got);
      if (r == -2) {
        out->v = JDG_HANG;
        killed = 1;
        break;
      }
      if (r != (long)(nw * sizeof *buf)) {
        out->v = JDG_CRASH;
        break;
      }
      if (i == s->n) {
        if (buf[0] != DONE_MAGIC) {
          out->v = JDG_CRASH;
        } else if ((int64_t)buf[1] != LEAK_UNKNOWN) {
          out->leak_checked = 1;
          out->leaked = (int64_t)buf[1];
          if (out->leaked > 0) out->v = JDG_LEAK;
        }
        break;
      }
      if (!jdg_op_agrees(&s->ops[i], expected + at, buf)) {
        out->v = JDG_MISMATCH;
        out->actual = malloc(nw * sizeof *buf);
        if (out->actual) memcpy(out->actual, buf, nw * sizeof *buf);
        killed = 1;
        break;
      }
      at += nw;
    }
  }
  close(rfd);
  finish_child(pid, killed, out);
  if (out->v == JDG_CRASH && out->sig == 0 && out->exit_code == EXIT_CREATE_NULL)
    snprintf(out->why, sizeof out->why, "judge_map_create returned NULL");
  free(buf);
}
