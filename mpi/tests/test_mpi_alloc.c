/* test_mpi_alloc.c: every buffer tandem_mpi takes for a call goes through the
 * context's allocator (tdm_ctx_opts.allocator). A counting allocator records
 * each live block with its size; every distributed call is made on a context
 * using it, and
 *  - each call's allocations are as many as the core's allocation hook
 *    counted (every allocation of the process that the core sees came
 *    through the caller's allocator), and at least one per call that must
 *    buffer (so the count is not trivially equal);
 *  - every free names a live block with the size it was taken with, on the
 *    host (device -1, stream NULL);
 *  - after the structures and the context are destroyed no block is live
 *    and the bytes freed equal the bytes allocated.
 * Run under mpirun with any number of ranks. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <tandem/mpi.h>

#include "mpi_check.h"

#include "hooks.h"

enum { MAX_LIVE = 4096 };
typedef struct counting {
  void *p[MAX_LIVE];
  size_t bytes[MAX_LIVE];
  long live, allocs, frees, bad_frees, bad_space;
  uint64_t bytes_in, bytes_out;
} counting;

static void *c_alloc(void *user, size_t bytes, int device, void *stream) {
  counting *c = user;
  void *p = NULL;
  if (device != -1 || stream) c->bad_space++;
  if (posix_memalign(&p, 64, bytes) != 0) return NULL;
  for (int i = 0; i < MAX_LIVE; i++)
    if (!c->p[i]) {
      c->p[i] = p, c->bytes[i] = bytes;
      c->live++, c->allocs++, c->bytes_in += bytes;
      return p;
    }
  free(p); /* the table is full: refuse, the call fails cleanly */
  return NULL;
}

static void c_free(void *user, void *p, size_t bytes, int device, void *stream) {
  counting *c = user;
  if (device != -1 || stream) c->bad_space++;
  for (int i = 0; i < MAX_LIVE; i++)
    if (c->p[i] == p) {
      if (c->bytes[i] != bytes) c->bad_frees++;
      c->p[i] = NULL;
      c->live--, c->frees++, c->bytes_out += bytes;
      free(p);
      return;
    }
  c->bad_frees++; /* not a block of this allocator */
}

static counting g_count;


/* One distributed call: its status, and its allocations against the core's
 * count. must_alloc: the call buffers on every rank count (it does on more
 * than one rank; on one rank some calls are the local call alone). */
#define CALL(name, must_alloc, expr)                                                                               \
  do {                                                                                                             \
    long a0 = g_count.allocs;                                                                                      \
    tdm_test_alloc_fail_at(0);                                                                                     \
    tdm_status st_ = (expr);                                                                                       \
    long seen = tdm_test_alloc_count(), mine = g_count.allocs - a0;                                                \
    CHECK(st_ == TDM_OK, "%s: %s (%s)", name, tdm_status_name(st_), tdm_last_error());                             \
    CHECK(mine == seen, "%s: %ld allocations through the caller's allocator, %ld seen by the core", name, mine,    \
          seen);                                                                                                   \
    if (must_alloc) CHECK(mine > 0, "%s: no allocation through the caller's allocator", name);                   \
  } while (0)

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  tdm_allocator al = {c_alloc, c_free, &g_count};
  tdm_ctx_opts co = {TDM_BACKEND_CPU, 1, 0, NULL, 0, &al};
  tdm_ctx *ctx = NULL;
  if (tdm_ctx_create(&co, &ctx) != TDM_OK) {
    fprintf(stderr, "context: %s\n", tdm_last_error());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int many = g_size > 1;
  enum { N = 3000 };
  static uint64_t k[N], v[N], out[N], lo[N], hi[N];
  static uint8_t f[N];
  uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(g_rank + 1);
  for (size_t i = 0; i < N; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    k[i] = x % 100000, v[i] = i;
    lo[i] = k[i] / 2, hi[i] = k[i] + 1000;
  }
  size_t n = N - (size_t)g_rank * 100, sz = 0, erased = 0;

  CALL("sort", many, tdm_mpi_sort(ctx, MPI_COMM_WORLD, TDM_U64, k, n, 0));
  CALL("sort_pairs", many, tdm_mpi_sort_pairs(ctx, MPI_COMM_WORLD, TDM_U64, k, TDM_U64, v, n, TDM_SORT_DESCENDING));

  tdm_hash_opts ho = {TDM_U64, TDM_U64, 0, 0, 0, TDM_DUP_SUM};
  tdm_mpi_hash *h = NULL;
  CALL("hash_create", 1, tdm_mpi_hash_create(ctx, MPI_COMM_WORLD, &ho, &h));
  CALL("hash_insert", 1, tdm_mpi_hash_insert(h, k, v, n));
  CALL("hash_find", 1, tdm_mpi_hash_find(h, k, out, f, n));
  CALL("hash_erase", 1, tdm_mpi_hash_erase(h, k, n / 2, &erased));
  CALL("hash_size", 0, tdm_mpi_hash_size(h, &sz));

  tdm_btree_opts bo = {TDM_U64, TDM_U64, TDM_DUP_KEEP_FIRST};
  tdm_mpi_btree *t = NULL;
  CALL("btree_build", 1, tdm_mpi_btree_build(ctx, MPI_COMM_WORLD, &bo, k, v, n, &t));
  CALL("btree_find", 1, tdm_mpi_btree_find(t, k, out, f, n));
  CALL("btree_rank", 1, tdm_mpi_btree_rank(t, k, out, n));
  CALL("btree_range_count", 1, tdm_mpi_btree_range_count(t, lo, hi, out, n));
  /* Keys above all others land on the last rank: the rebalance runs too. */
  for (size_t i = 0; i < n; i++) k[i] = 1000000 + (uint64_t)g_rank * n + i;
  CALL("btree_insert", 1, tdm_mpi_btree_insert(t, k, v, n));
  CALL("btree_erase", 1, tdm_mpi_btree_erase(t, k, n / 3, &erased));
  CALL("btree_size", 0, tdm_mpi_btree_size(t, &sz));

  /* A failing call (a bad argument on rank 0) frees what it took too. */
  {
    long a0 = g_count.allocs;
    tdm_test_alloc_fail_at(0);
    tdm_status s = tdm_mpi_sort(ctx, MPI_COMM_WORLD, TDM_U64, g_rank == 0 ? NULL : k, n, 0);
    long seen = tdm_test_alloc_count();
    CHECK(s == TDM_ERR_INVALID_ARGUMENT, "bad argument: %s", tdm_status_name(s));
    CHECK(g_count.allocs - a0 == seen, "bad argument: %ld allocations through the caller's allocator, %ld seen",
          g_count.allocs - a0, seen);
  }

  tdm_mpi_hash_destroy(h);
  tdm_mpi_btree_destroy(t);
  tdm_ctx_destroy(ctx);
  CHECK(g_count.live == 0, "%ld blocks still live after destroy", g_count.live);
  CHECK(g_count.bytes_in == g_count.bytes_out, "%" PRIu64 " bytes allocated, %" PRIu64 " freed", g_count.bytes_in,
        g_count.bytes_out);
  CHECK(g_count.bad_frees == 0, "%ld frees of an unknown block or with the wrong size", g_count.bad_frees);
  CHECK(g_count.bad_space == 0, "%ld host blocks asked with a device or stream", g_count.bad_space);
  CHECK(g_count.allocs == g_count.frees, "%ld allocations, %ld frees", g_count.allocs, g_count.frees);

  if (g_rank == 0) printf("test_mpi_alloc: rank 0 made %ld allocations, %" PRIu64 " bytes\n", g_count.allocs, g_count.bytes_in);
  return check_finish("test_mpi_alloc");
}
