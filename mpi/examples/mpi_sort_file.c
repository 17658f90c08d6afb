/* mpi_sort_file: sorts a text file of integers that is too large for one
 * process's share of memory by splitting it across MPI ranks.
 *
 *   mpirun -n R mpi_sort_file INPUT OUTPUT
 *   mpi_sort_file --make FILE COUNT      (writes COUNT random integers)
 *
 * INPUT holds one signed 64-bit integer per line. Rank r reads only bytes
 * [r*size/R, (r+1)*size/R) of it, moved to line boundaries, so each rank holds
 * about 1/R of the data; tdm_mpi_sort sorts across the ranks; each rank writes
 * its sorted slice at its own offset of OUTPUT. A malformed line is reported
 * with its line number and nothing is written. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tandem/mpi.h>

static int rank_, size_;

static int make(const char *path, const char *count) {
  char *end;
  unsigned long long n = strtoull(count, &end, 10);
  if (*end || !*count) {
    fprintf(stderr, "mpi_sort_file: COUNT '%s' is not a number\n", count);
    return 1;
  }
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "mpi_sort_file: cannot write %s: %s\n", path, strerror(errno));
    return 1;
  }
  uint64_t x = 88172645463325252ull;
  for (unsigned long long i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    fprintf(f, "%" PRId64 "\n", (int64_t)(x % 2000000001ull) - 1000000000);
  }
  return fclose(f) == 0 ? 0 : 1;
}

/* Reads bytes [lo, hi) of fd, plus the tail of the line that straddles hi;
 * skips the head of a line that started before lo (the previous rank owns
 * it). Returns a NUL-terminated buffer. */
static char *read_part(int fd, off_t size, off_t lo, off_t hi, size_t *len) {
  /* Line owned by the rank where it starts: start after the first newline at
   * or after lo - 1 (unless lo == 0); end after the first newline at or after
   * hi - 1. */
  off_t start = lo, end = hi;
  char c;
  if (lo > 0) {
    for (start = lo - 1; start < size; start++) {
      if (pread(fd, &c, 1, start) != 1) return NULL;
      if (c == '\n') break;
    }
    start++;
  }
  if (hi < size && hi > 0) {
    for (end = hi - 1; end < size; end++) {
      if (pread(fd, &c, 1, end) != 1) return NULL;
      if (c == '\n') break;
    }
    end = end < size ? end + 1 : size;
  }
  if (end < start) end = start;
  size_t n = (size_t)(end - start);
  char *buf = malloc(n + 1);
  if (!buf) return NULL;
  size_t got = 0;
  while (got < n) {
    ssize_t r = pread(fd, buf + got, n - got, start + (off_t)got);
    if (r <= 0) {
      free(buf);
      return NULL;
    }
    got += (size_t)r;
  }
  buf[n] = 0;
  *len = n;
  return buf;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--make")) return make(argv[2], argv[3]);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  if (argc != 3) {
    if (rank_ == 0) fprintf(stderr, "usage: mpirun -n R mpi_sort_file INPUT OUTPUT\n       mpi_sort_file --make FILE COUNT\n");
    MPI_Finalize();
    return 2;
  }
  int err = 0; /* any rank's failure stops every rank at the same point */
  int fd = open(argv[1], O_RDONLY);
  struct stat stt;
  char *buf = NULL;
  size_t len = 0;
  if (fd < 0 || fstat(fd, &stt) != 0) {
    fprintf(stderr, "mpi_sort_file: cannot read %s: %s\n", argv[1], strerror(errno));
    err = 1;
  } else {
    off_t lo = stt.st_size * rank_ / size_, hi = stt.st_size * (rank_ + 1) / size_;
    buf = read_part(fd, stt.st_size, lo, hi, &len);
    if (!buf) {
      fprintf(stderr, "mpi_sort_file: rank %d: reading %s failed\n", rank_, argv[1]);
      err = 1;
    }
  }
  if (fd >= 0) close(fd);
  MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (err) goto out;

  /* Line numbers: count this part's lines, offset by the parts before. */
  uint64_t lines = 0, first_line = 0;
  for (size_t i = 0; i < len; i++) lines += buf[i] == '\n';
  if (len && buf[len - 1] != '\n') lines++;
  MPI_Exscan(&lines, &first_line, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (rank_ == 0) first_line = 0;

  int64_t *keys = malloc((lines ? lines : 1) * sizeof(int64_t));
  size_t n = 0;
  uint64_t bad = UINT64_MAX; /* first malformed line (1-based), over all ranks */
  if (!keys) {
    fprintf(stderr, "mpi_sort_file: rank %d: out of memory for %" PRIu64 " keys\n", rank_, lines);
    err = 1;
  }
  for (char *p = buf, *eol; !err && p < buf + len; p = eol + 1) {
    eol = memchr(p, '\n', (size_t)(buf + len - p));
    if (!eol) eol = buf + len;
    *eol = 0;
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\r') end++;
    if (end == p || *end || errno == ERANGE) {
      bad = first_line + n + 1;
      break;
    }
    keys[n++] = v;
  }
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (bad != UINT64_MAX) {
    if (rank_ == 0)
      fprintf(stderr, "mpi_sort_file: %s:%" PRIu64 ": not a signed 64-bit integer\n", argv[1], bad);
    err = 1;
  }
  if (err) {
    free(keys);
    goto out;
  }
  free(buf);
  buf = NULL;

  tdm_ctx *ctx = NULL;
  tdm_status s = tdm_ctx_create(NULL, &ctx);
  if (s == TDM_OK) s = tdm_mpi_sort(ctx, MPI_COMM_WORLD, TDM_I64, keys, n, 0);
  tdm_ctx_destroy(ctx);
  if (s != TDM_OK) { /* every rank has the same status */
    if (rank_ == 0) fprintf(stderr, "mpi_sort_file: sort failed: %s\n", tdm_last_error());
    free(keys);
    err = 1;
    goto out;
  }

  /* Format this rank's slice and write it at its offset. */
  size_t cap = n * 21 + 1, used = 0;
  char *txt = malloc(cap);
  if (!txt) err = 1;
  for (size_t i = 0; txt && i < n; i++) used += (size_t)snprintf(txt + used, cap - used, "%" PRId64 "\n", keys[i]);
  free(keys);
  uint64_t mine = used, at = 0;
  MPI_Exscan(&mine, &at, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (rank_ == 0) at = 0;
  int out_fd = -1;
  if (rank_ == 0) {
    out_fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out_fd < 0) fprintf(stderr, "mpi_sort_file: cannot write %s: %s\n", argv[2], strerror(errno)), err = 1;
  }
  MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!err && rank_ != 0) {
    out_fd = open(argv[2], O_WRONLY);
    if (out_fd < 0) fprintf(stderr, "mpi_sort_file: rank %d cannot open %s\n", rank_, argv[2]), err = 1;
  }
  for (size_t done = 0; !err && done < used;) {
    ssize_t w = pwrite(out_fd, txt + done, used - done, (off_t)(at + done));
    if (w <= 0) {
      fprintf(stderr, "mpi_sort_file: rank %d: writing %s: %s\n", rank_, argv[2], strerror(errno));
      err = 1;
    } else {
      done += (size_t)w;
    }
  }
  if (out_fd >= 0 && close(out_fd) != 0) err = 1;
  free(txt);
  MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!err && rank_ == 0) {
    uint64_t total = 0, nn = n;
    MPI_Reduce(&nn, &total, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    printf("sorted %" PRIu64 " integers on %d ranks into %s\n", total, size_, argv[2]);
  } else if (!err) {
    uint64_t nn = n;
    MPI_Reduce(&nn, NULL, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  }
out:
  free(buf);
  MPI_Finalize();
  return err;
}
