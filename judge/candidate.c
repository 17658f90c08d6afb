/* candidate.c: loading a candidate library and looking its judge_* symbols up. */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include "jdg.h"

/* One symbol: where to store it, its name, and whether this kind needs it. */
typedef struct sym {
  void **slot;
  const char *name;
  int required;
  const char *skipped; /* what goes unchecked when an optional one is absent */
} sym;

static void append(char *buf, size_t len, const char *line) {
  size_t used = strlen(buf);
  if (used < len) snprintf(buf + used, len - used, "%s\n", line);
}

static void probe_child(void *arg, int fd) {
  char ok = 1;
  if (!dlopen((const char *)arg, RTLD_NOW | RTLD_LOCAL)) _exit(0); /* the parent's dlopen explains */
  jdg_write_all(fd, &ok, 1);
}

/* 0 when loading path in a child returned (whether or not it loaded). */
static int probe_load(const char *path, char *err, size_t err_len) {
  int rfd, st = 0;
  char ok = 0;
  size_t got;
  long r;
  int pid = jdg_spawn(probe_child, (void *)path, &rfd);
  if (pid < 0) return 0; /* no child to spare: load directly */
  r = jdg_read_until(rfd, &ok, 1, jdg_now() + 10.0, &got);
  if (r == -2) kill(pid, SIGKILL);
  close(rfd);
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (r == -2) {
    snprintf(err, err_len, "loading %s did not finish within 10 s (its constructors hang)", path);
    return -1;
  }
  if (WIFSIGNALED(st)) {
    snprintf(err, err_len, "loading %s crashed (signal %d) in its constructors", path, WTERMSIG(st));
    return -1;
  }
  return 0;
}

int jdg_cand_load(jdg_cand *c, const char *path, jdg_kind kind, char *err, size_t err_len, char *notes,
                  size_t notes_len) {
  sym syms[16];
  size_t n = 0, i, missing = 0;
  char line[256];

  memset(c, 0, sizeof *c);
  c->path = path;
  c->kind = kind;
  err[0] = 0;
  notes[0] = 0;
  /* A path without a slash would make dlopen search the library path instead
   * of the file the user named. */
  if (strchr(path, '/') == NULL) {
    snprintf(err, err_len, "'%s': give the library as a path (./%s), not a bare name", path, path);
    return -1;
  }
  /* Loading runs the library's constructors: try it in a child first, so
   * one that crashes or hangs is reported instead of taking the judge down. */
  if (probe_load(path, err, err_len) != 0) return -2;
  c->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!c->dl) {
    const char *why = dlerror();
    snprintf(err, err_len, "cannot load the candidate library: %s", why ? why : path);
    return -1;
  }
#define SYM(field, nm, req, what) \
  syms[n++] = (sym){(void **)(void *)&c->field, nm, req, what}
  if (kind == JDG_SORT) {
    SYM(sort_u32, "judge_sort_u32", 1, NULL);
    SYM(sort_u64, "judge_sort_u64", 1, NULL);
    SYM(sort_pairs_u64, "judge_sort_pairs_u64", 0, "sort_pairs (stability) not checked");
  } else {
    SYM(create, "judge_map_create", 1, NULL);
    SYM(destroy, "judge_map_destroy", 1, NULL);
    SYM(insert, "judge_map_insert", 1, NULL);
    SYM(find, "judge_map_find", 1, NULL);
    SYM(erase, "judge_map_erase", 1, NULL);
    SYM(size, "judge_map_size", 1, NULL);
    SYM(find_bulk, "judge_map_find_bulk", 0, "bulk find not checked");
    if (kind == JDG_ORDERED) {
      SYM(rank, "judge_map_rank", 0, "rank not checked");
      SYM(range_count, "judge_map_range_count", 0, "range_count not checked");
    }
  }
#undef SYM
  for (i = 0; i < n; i++) {
    void *p;
    dlerror();
    p = dlsym(c->dl, syms[i].name);
    /* Reading a function pointer through void* is what dlsym's API
     * requires; POSIX guarantees the representation. */
    memcpy(syms[i].slot, &p, sizeof p);
    if (p) continue;
    if (syms[i].required) {
      size_t used = strlen(err);
      if (missing == 0)
        snprintf(err, err_len, "%s does not export the symbol(s) kind '%s' requires:", path, jdg_kind_name(kind));
      used = strlen(err);
      if (used < err_len) snprintf(err + used, err_len - used, " %s", syms[i].name);
      missing++;
    } else {
      snprintf(line, sizeof line, "note: optional %s not exported: %s", syms[i].name, syms[i].skipped);
      append(notes, notes_len, line);
    }
  }
  if (missing) {
    dlclose(c->dl);
    c->dl = NULL;
    return -1;
  }
  return 0;
}
