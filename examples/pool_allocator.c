/*
 * pool_allocator: plugs a caller's memory pool into tandem (tdm_allocator).
 *
 *   pool_allocator [N]
 *
 * The pool keeps freed host blocks in free lists by power-of-two size class
 * and hands them out again, so after the first round of calls tandem's
 * allocations never reach malloc. It prints how many blocks tandem asked
 * for, how many the pool had to take from the system, and checks that every
 * block came back with the size it was given out with. Host memory only: the
 * context is a CPU context (a CUDA context would also ask for device memory,
 * device >= 0, which this pool refuses by returning NULL, and tandem would
 * report TDM_ERR_OUT_OF_MEMORY).
 */
#ifndef _GNU_SOURCE
#define _POSIX_C_SOURCE 200112L /* posix_memalign */
#endif
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tandem/tandem.h>

enum { CLASSES = 48 };

typedef struct pool_block {
  struct pool_block *next;
} pool_block;

typedef struct pool {
  pool_block *free_list[CLASSES]; /* class c holds blocks of 2^c bytes */
  long asked, from_system, returned, live;
  size_t live_bytes;
  int wrong_size;
} pool;

static int size_class(size_t bytes) {
  int c = 6; /* 64 bytes at least: the alignment tandem needs */
  while (((size_t)1 << c) < bytes) c++;
  return c;
}

static void *pool_alloc(void *user, size_t bytes, int device, void *stream) {
  pool *p = (pool *)user;
  int c = size_class(bytes);
  void *b = NULL;
  (void)stream;
  if (device != -1 || c >= CLASSES) return NULL; /* host memory only */
  p->asked++;
  if (p->free_list[c]) {
    b = p->free_list[c];
    p->free_list[c] = p->free_list[c]->next;
  } else {
    if (posix_memalign(&b, 64, (size_t)1 << c) != 0) return NULL;
    p->from_system++;
  }
  p->live++;
  p->live_bytes += bytes;
  return b;
}

static void pool_free(void *user, void *ptr, size_t bytes, int device, void *stream) {
  pool *p = (pool *)user;
  int c = size_class(bytes);
  pool_block *b = (pool_block *)ptr;
  (void)device;
  (void)stream;
  if (bytes > p->live_bytes) p->wrong_size = 1;
  p->live--;
  p->live_bytes -= bytes;
  p->returned++;
  b->next = p->free_list[c];
  p->free_list[c] = b;
}

static void pool_release(pool *p) {
  int c;
  for (c = 0; c < CLASSES; c++) {
    while (p->free_list[c]) {
      pool_block *b = p->free_list[c];
      p->free_list[c] = b->next;
      free(b);
    }
  }
}

static void check(const char *what, tdm_status s) {
  if (s != TDM_OK) {
    fprintf(stderr, "%s: %s: %s\n", what, tdm_status_name(s), tdm_last_error());
    exit(1);
  }
}

int main(int argc, char **argv) {
  size_t n = 1000000, i;
  pool p;
  tdm_allocator al;
  tdm_ctx_opts o;
  tdm_ctx *ctx = NULL;
  tdm_hash_opts ho = {TDM_U64, TDM_U64, 0, 0, 0, TDM_DUP_SUM};
  tdm_hash *h = NULL;
  uint64_t *keys, *ones, *counts, x = 88172645463325252ull;
  uint8_t *found;
  long after_warmup;
  int round;

  if (argc > 1) {
    char *end;
    n = strtoull(argv[1], &end, 10);
    if (*end || n == 0) {
      fprintf(stderr, "usage: pool_allocator [N > 0]\n");
      return 2;
    }
  }
  memset(&p, 0, sizeof p);
  al.alloc = pool_alloc;
  al.free = pool_free;
  al.user = &p;
  memset(&o, 0, sizeof o);
  o.backend = TDM_BACKEND_CPU;
  o.allocator = &al;
  check("tdm_ctx_create", tdm_ctx_create(&o, &ctx));

  keys = malloc(n * 8);
  ones = malloc(n * 8);
  counts = malloc(n * 8);
  found = malloc(n);
  if (!keys || !ones || !counts || !found) {
    fprintf(stderr, "out of memory for %zu keys\n", n);
    return 1;
  }
  for (i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    keys[i] = x % (n / 4 + 1); /* about four of each */
    ones[i] = 1;
  }
  check("tdm_hash_create", tdm_hash_create(ctx, &ho, &h));
  check("tdm_hash_insert", tdm_hash_insert(h, keys, ones, n)); /* counts per key */

  /* Rounds of sorting and lookups: after the first, the pool serves all. */
  after_warmup = 0;
  for (round = 0; round < 3; round++) {
    uint64_t *copy = malloc(n * 8);
    memcpy(copy, keys, n * 8);
    check("tdm_sort", tdm_sort(ctx, TDM_U64, copy, n, 0));
    check("tdm_hash_find", tdm_hash_find(h, copy, counts, found, n));
    free(copy);
    if (round == 0) after_warmup = p.from_system;
  }
  printf("%zu keys, %zu distinct; tandem asked the pool for %ld blocks, %ld came from the system "
         "(%ld after the first round)\n",
         n, tdm_hash_size(h), p.asked, p.from_system, p.from_system - after_warmup);
  tdm_hash_destroy(h);
  tdm_ctx_destroy(ctx);
  printf("after destroy: %ld blocks outstanding, %ld returned\n", p.live, p.returned);
  pool_release(&p);
  free(keys);
  free(ones);
  free(counts);
  free(found);
  if (p.live != 0 || p.wrong_size) {
    fprintf(stderr, "pool_allocator: blocks were not all returned with their sizes\n");
    return 1;
  }
  return 0;
}
