/* candidate.c: loading a candidate library and looking its judge_* symbols up. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
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

/* 1 when the library's dynamic string table holds a C++ mangled name
 * (_Z...) with name in it: a judge_* function compiled as C++ without
 * extern "C", which dlsym cannot find under its plain name. */
static int has_mangled(void *dl, const char *name) {
  struct link_map *lm = NULL;
  const ElfW(Dyn) *d;
  const char *str = NULL;
  size_t size = 0, i, len = strlen(name);
  char needle[80];
  if (dlinfo(dl, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_ld) return 0;
  for (d = lm->l_ld; d->d_tag != DT_NULL; d++) {
    /* The loader relocates these in place on most targets; not on all. */
    ElfW(Addr) p = d->d_un.d_ptr;
    if (d->d_tag == DT_STRTAB) str = (const char *)(p < lm->l_addr ? p + lm->l_addr : p);
    if (d->d_tag == DT_STRSZ) size = d->d_un.d_val;
  }
  if (!str || !size) return 0;
  snprintf(needle, sizeof needle, "%zu%s", len, name); /* how the Itanium C++ ABI spells a name */
  for (i = 0; i < size; i += strlen(str + i) + 1)
    if (str[i] == '_' && str[i + 1] == 'Z' && strstr(str + i, needle)) return 1;
  return 0;
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
  int mangled = 0;
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
      mangled |= has_mangled(c->dl, syms[i].name);
    } else {
      snprintf(line, sizeof line, "note: optional %s not exported: %s", syms[i].name, syms[i].skipped);
      append(notes, notes_len, line);
    }
  }
  if (missing && mangled) {
    size_t used = strlen(err);
    if (used < err_len)
      snprintf(err + used, err_len - used,
               "\n  (it exports them as C++ mangled names: declare them extern \"C\", or include "
               "<tandem/judge.h>, whose declarations are)");
  }
  if (missing) {
    dlclose(c->dl);
    c->dl = NULL;
    return -1;
  }
  return 0;
}
