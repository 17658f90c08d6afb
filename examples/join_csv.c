/*
 * join_csv: joins two CSV files on an integer column with tdm_join and prints
 * the joined rows (the left line, a comma, the right line), in left row order,
 * then right row order, as pandas.merge does.
 *
 *   join_csv LEFT.csv RIGHT.csv [--left-col N] [--right-col N]
 *            [--how inner|left|semi|anti] [--header] [--cpu|--cuda]
 *
 * Columns are numbered from 1 (default 1 on both sides). Fields are split at
 * commas (no quoting). The join column must hold a signed 64-bit integer on
 * every line; a line without it, or with anything else there, is an error
 * naming the file and the line. --header skips the first line of each file
 * (and prints the two headers joined). With --how left a left row without a
 * match is printed with an empty right side.
 *
 * tdm_join is called twice: once with cap = 0 to learn the exact number of
 * rows, then with buffers of that size.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tandem/tandem.h>

typedef struct table {
  char **lines;  /* each line without its newline */
  int64_t *keys; /* the join column */
  size_t n;
  char *header;  /* with --header */
} table;

static void die(const char *what, tdm_status s) {
  fprintf(stderr, "join_csv: %s: %s: %s\n", what, tdm_status_name(s), tdm_last_error());
  exit(1);
}

static void *xrealloc(void *p, size_t bytes) {
  void *q = realloc(p, bytes);
  if (!q) {
    fprintf(stderr, "join_csv: out of memory\n");
    exit(1);
  }
  return q;
}

/* Parses field col (1-based) of line as an int64; returns 0 and a reason on
 * failure. */
static int parse_key(const char *line, int col, int64_t *out, const char **why) {
  const char *p = line, *end;
  char buf[64];
  char *e;
  size_t len;
  int c;
  for (c = 1; c < col; c++) {
    p = strchr(p, ',');
    if (!p) {
      *why = "has fewer columns than the join column";
      return 0;
    }
    p++;
  }
  end = strchr(p, ',');
  len = end ? (size_t)(end - p) : strlen(p);
  while (len && (p[0] == ' ' || p[0] == '\t')) p++, len--;
  while (len && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\r')) len--;
  if (len == 0 || len >= sizeof buf) {
    *why = len ? "has a join field too long to be an integer" : "has an empty join field";
    return 0;
  }
  memcpy(buf, p, len);
  buf[len] = 0;
  errno = 0;
  *out = strtoll(buf, &e, 10);
  if (*e || errno == ERANGE) {
    *why = errno == ERANGE ? "has a join field out of the int64 range" : "has a join field that is not an integer";
    return 0;
  }
  return 1;
}

static table read_table(const char *path, int col, int header) {
  FILE *f = fopen(path, "r");
  table t;
  char *line = NULL;
  size_t cap_line = 0, cap = 0, lineno = 0;
  ssize_t len;
  memset(&t, 0, sizeof t);
  if (!f) {
    perror(path);
    exit(1);
  }
  while ((len = getline(&line, &cap_line, f)) >= 0) {
    const char *why;
    lineno++;
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
    if (header && lineno == 1) {
      t.header = strdup(line);
      continue;
    }
    if (t.n == cap) {
      cap = cap ? 2 * cap : 1024;
      t.lines = xrealloc(t.lines, cap * sizeof *t.lines);
      t.keys = xrealloc(t.keys, cap * sizeof *t.keys);
    }
    if (!parse_key(line, col, &t.keys[t.n], &why)) {
      fprintf(stderr, "%s:%zu: line %s (column %d): \"%s\"\n", path, lineno, why, col, line);
      exit(1);
    }
    t.lines[t.n++] = strdup(line);
  }
  if (ferror(f)) {
    perror(path);
    exit(1);
  }
  free(line);
  fclose(f);
  return t;
}

int main(int argc, char **argv) {
  tdm_ctx_opts copts = {TDM_BACKEND_AUTO, 0, 0, NULL, 0, NULL};
  const char *lp = NULL, *rp = NULL;
  int lcol = 1, rcol = 1, header = 0, a;
  tdm_join_kind how = TDM_JOIN_INNER;
  table l, r;
  tdm_ctx *ctx;
  uint64_t *li, *ri;
  size_t rows = 0, i;
  tdm_status s;

  for (a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "--left-col") && a + 1 < argc) lcol = atoi(argv[++a]);
    else if (!strcmp(argv[a], "--right-col") && a + 1 < argc) rcol = atoi(argv[++a]);
    else if (!strcmp(argv[a], "--header")) header = 1;
    else if (!strcmp(argv[a], "--cpu")) copts.backend = TDM_BACKEND_CPU;
    else if (!strcmp(argv[a], "--cuda")) copts.backend = TDM_BACKEND_CUDA;
    else if (!strcmp(argv[a], "--how") && a + 1 < argc) {
      const char *h = argv[++a];
      if (!strcmp(h, "inner")) how = TDM_JOIN_INNER;
      else if (!strcmp(h, "left")) how = TDM_JOIN_LEFT;
      else if (!strcmp(h, "semi")) how = TDM_JOIN_SEMI;
      else if (!strcmp(h, "anti")) how = TDM_JOIN_ANTI;
      else lcol = 0;
    } else if (!lp) lp = argv[a];
    else if (!rp) rp = argv[a];
    else lcol = 0;
  }
  if (!lp || !rp || lcol < 1 || rcol < 1) {
    fprintf(stderr, "usage: %s LEFT.csv RIGHT.csv [--left-col N] [--right-col N] [--how inner|left|semi|anti]\n"
                    "       [--header] [--cpu|--cuda]\n", argv[0]);
    return 2;
  }
  l = read_table(lp, lcol, header);
  r = read_table(rp, rcol, header);
  if ((s = tdm_ctx_create(&copts, &ctx)) != TDM_OK) die("context", s);
  /* The exact size first (cap = 0, no buffers), then the rows. */
  s = tdm_join(ctx, how, TDM_I64, l.keys, l.n, r.keys, r.n, 0, NULL, NULL, 0, &rows);
  if (s != TDM_OK && s != TDM_ERR_CAPACITY) die("tdm_join", s);
  li = malloc((rows + 1) * sizeof *li);
  ri = malloc((rows + 1) * sizeof *ri);
  if (!li || !ri) {
    fprintf(stderr, "join_csv: out of memory for %zu rows\n", rows);
    return 1;
  }
  if ((s = tdm_join(ctx, how, TDM_I64, l.keys, l.n, r.keys, r.n, 0, li, ri, rows, &rows)) != TDM_OK)
    die("tdm_join", s);
  if (header) printf("%s,%s\n", l.header ? l.header : "", r.header ? r.header : "");
  for (i = 0; i < rows; i++) {
    if (how == TDM_JOIN_SEMI || how == TDM_JOIN_ANTI) printf("%s\n", l.lines[li[i]]);
    else printf("%s,%s\n", l.lines[li[i]], ri[i] == TDM_NO_MATCH ? "" : r.lines[ri[i]]);
  }
  for (i = 0; i < l.n; i++) free(l.lines[i]);
  for (i = 0; i < r.n; i++) free(r.lines[i]);
  free(l.lines);
  free(l.keys);
  free(r.lines);
  free(r.keys);
  free(l.header);
  free(r.header);
  free(li);
  free(ri);
  tdm_ctx_destroy(ctx);
  return 0;
}
