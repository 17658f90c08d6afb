/*
 * test_map_cache.c: a CPU context's cache of freed mappings (tdm_ctx_trim,
 * TDM_CTX_NO_MAP_CACHE):
 *  - a table given back is handed out again, zeroed: a new table on the
 *    reused memory is empty and works;
 *  - the bound (the larger of 64 MiB and three times the largest block
 *    given back) holds, and what falls out of it is unmapped;
 *  - tdm_ctx_trim and tdm_ctx_destroy unmap everything kept (checked on the
 *    process's address space, which LeakSanitizer does not watch);
 *  - with TDM_CTX_NO_MAP_CACHE nothing is kept;
 *  - an allocation the operating system refuses empties the cache and is
 *    tried once more;
 *  - threads sharing a context share its cache safely.
 * The caller's allocator (nothing kept) is in test_allocator.c, failure
 * injection with a warm cache in test_oom.c.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "hooks/hooks.h"
#include "prop.h"

#define MIB ((size_t)1 << 20)

/* The process's mapped address space in bytes (/proc/self/statm). */
static size_t vm_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  cr_assert_not_null(f);
  cr_assert_eq(fscanf(f, "%lu", &pages), 1);
  fclose(f);
  return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

static size_t cached(tdm_ctx *c) {
  size_t b = 0;
  tdm_test_map_cache(c, &b, NULL, NULL);
  return b;
}

static long hits(tdm_ctx *c) {
  long h = 0;
  tdm_test_map_cache(c, NULL, NULL, &h);
  return h;
}

/* A u64 -> u64 table sized for cap keys, holding keys base .. base + n - 1
 * (mixed) with value key + 1; NULL on any failure. No assertions: worker
 * threads call it too. */
static tdm_hash *make_table(tdm_ctx *c, size_t cap, uint64_t base, size_t n) {
  tdm_hash_opts o;
  tdm_hash *h = NULL;
  uint64_t *k = malloc((n ? n : 1) * 8), *v = malloc((n ? n : 1) * 8);
  size_t i;
  memset(&o, 0, sizeof o);
  o.key_type = TDM_U64;
  o.value_type = TDM_U64;
  o.capacity = cap;
  o.on_duplicate = TDM_DUP_KEEP_LAST;
  for (i = 0; i < n; i++) {
    k[i] = (base + i) * 0x9E3779B97F4A7C15ull;
    v[i] = k[i] + 1;
  }
  if (tdm_hash_create(c, &o, &h) == TDM_OK && tdm_hash_insert(h, k, v, n) != TDM_OK) {
    tdm_hash_destroy(h);
    h = NULL;
  }
  free(k);
  free(v);
  return h;
}

static tdm_hash *table(tdm_ctx *c, size_t cap, uint64_t base, size_t n) {
  tdm_hash *h = make_table(c, cap, base, n);
  cr_assert_not_null(h, "making a table: %s", tdm_last_error());
  return h;
}

/* 1 when exactly the keys base .. base + n - 1 of make_table() are found,
 * each with its value, and the n keys below base are not. */
static int holds(const tdm_hash *h, uint64_t base, size_t n) {
  uint64_t *k = malloc(2 * n * 8), *v = malloc(2 * n * 8);
  uint8_t *f = malloc(2 * n);
  size_t i;
  int ok = 1;
  for (i = 0; i < 2 * n; i++) k[i] = (base - n + i) * 0x9E3779B97F4A7C15ull;
  if (tdm_hash_find(h, k, v, f, 2 * n) != TDM_OK) ok = 0;
  for (i = 0; ok && i < 2 * n; i++) {
    int want = i >= n;
    if (f[i] != want || (want && v[i] != k[i] + 1)) ok = 0;
  }
  free(k);
  free(v);
  free(f);
  return ok && tdm_hash_size(h) == n;
}

Test(map_cache, a_freed_table_is_reused_zeroed) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 2);
  enum { CAP = 1 << 20, N = 300000 };
  tdm_hash *h = table(c, CAP, 1u << 24, N);
  size_t kept;
  long h0;
  cr_assert(holds(h, 1u << 24, N));
  cr_assert_eq(cached(c), 0);
  tdm_hash_destroy(h);
  kept = cached(c);
  cr_assert_geq(kept, 16 * MIB, "a table of 2^21 slots is kept (%zu bytes)", kept);
  h0 = hits(c);
  /* The same size again, other keys: the memory comes back, and the table
   * built on it holds only its own keys (the old ones were zeroed away). */
  h = table(c, CAP, 3u << 24, N);
  cr_assert_gt(hits(c), h0, "the new table reused a kept block");
  cr_assert_lt(cached(c), kept);
  cr_assert(holds(h, 3u << 24, N), "a table on reused memory holds exactly its keys");
  cr_assert_eq(tdm_hash_validate(h), TDM_OK, "%s", tdm_last_error());
  tdm_hash_destroy(h);
  /* A table of half the size is carved from a kept block; one of an
   * eighth leaves the large blocks whole. */
  h0 = hits(c);
  h = table(c, CAP / 2, 5u << 24, N / 2);
  cr_assert_gt(hits(c), h0);
  cr_assert(holds(h, 5u << 24, N / 2));
  tdm_hash_destroy(h);
  h0 = hits(c);
  kept = cached(c);
  h = table(c, CAP / 8, 7u << 24, N / 8);
  cr_assert_eq(hits(c), h0, "no block of twice the request or more is split");
  cr_assert_eq(cached(c), kept);
  cr_assert(holds(h, 7u << 24, N / 8));
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
}

Test(map_cache, b_tree_nodes_are_reused) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 2);
  tdm_btree_opts o = {TDM_U64, TDM_U64, TDM_DUP_KEEP_LAST};
  enum { N = 400000 };
  uint64_t *k = malloc(N * 8), *v = malloc(N * 8), *out = malloc(N * 8);
  uint8_t *f = malloc(N);
  tdm_btree *t = NULL;
  size_t i;
  long h0;
  for (i = 0; i < N; i++) {
    k[i] = i * 0x9E3779B97F4A7C15ull;
    v[i] = i;
  }
  cr_assert_eq(tdm_btree_build(c, &o, k, v, N, &t), TDM_OK);
  tdm_btree_destroy(t);
  cr_assert_gt(cached(c), 0, "the node array and the batch copy are kept");
  h0 = hits(c);
  for (i = 0; i < N; i++) v[i] = i + 7;
  cr_assert_eq(tdm_btree_build(c, &o, k, v, N, &t), TDM_OK);
  cr_assert_gt(hits(c), h0);
  cr_assert_eq(tdm_btree_validate(t), TDM_OK, "%s", tdm_last_error());
  cr_assert_eq(tdm_btree_size(t), N);
  cr_assert_eq(tdm_btree_find(t, k, out, f, N), TDM_OK);
  for (i = 0; i < N; i++) cr_assert(f[i] && out[i] == i + 7, "key %zu", i);
  tdm_btree_destroy(t);
  tdm_ctx_destroy(c);
  free(k); free(v); free(out); free(f);
}

/* Node storage from the cache is not zeroed (the build streams every node
 * it makes, node_new clears every slot it hands out): a tree built where a
 * larger one lived, then grown and shrunk by inserts and erases, holds only
 * its own keys. */
Test(map_cache, b_tree_on_reused_unzeroed_nodes_holds_only_its_keys) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 2);
  tdm_btree_opts o = {TDM_U64, TDM_U64, TDM_DUP_KEEP_LAST};
  enum { N = 400000, M = N / 4 };
  uint64_t *k = malloc(N * 8), *v = malloc(N * 8), *out = malloc(N * 8), *lo = malloc(N * 8), *hi = malloc(N * 8);
  uint8_t *f = malloc(N);
  tdm_btree *t = NULL;
  size_t i, erased = 0;
  long h0;
  for (i = 0; i < N; i++) {
    k[i] = (i + 1) * 0x9E3779B97F4A7C15ull;
    v[i] = ~k[i];
  }
  cr_assert_eq(tdm_btree_build(c, &o, k, v, N, &t), TDM_OK);
  tdm_btree_destroy(t);
  h0 = hits(c);
  /* Odd positions only, other values; then the even ones of the first half. */
  for (i = 0; i < N / 2; i++) {
    lo[i] = k[2 * i + 1];
    out[i] = 2 * i + 1;
  }
  cr_assert_eq(tdm_btree_build(c, &o, lo, out, N / 2, &t), TDM_OK);
  cr_assert_gt(hits(c), h0, "the second tree lies on kept memory");
  cr_assert_eq(tdm_btree_validate(t), TDM_OK, "%s", tdm_last_error());
  for (i = 0; i < M; i++) {
    lo[i] = k[2 * i];
    out[i] = 2 * i;
  }
  cr_assert_eq(tdm_btree_insert(t, lo, out, M), TDM_OK);
  cr_assert_eq(tdm_btree_validate(t), TDM_OK, "%s", tdm_last_error());
  cr_assert_eq(tdm_btree_size(t), N / 2 + M);
  cr_assert_eq(tdm_btree_erase(t, k + N / 2, N / 2, &erased), TDM_OK);
  cr_assert_eq(erased, N / 4, "the odd keys of the second half");
  cr_assert_eq(tdm_btree_validate(t), TDM_OK, "%s", tdm_last_error());
  cr_assert_eq(tdm_btree_find(t, k, out, f, N), TDM_OK);
  for (i = 0; i < N; i++) {
    int want = i < N / 2; /* odd ones built, even ones inserted; the second half erased or never there */
    cr_assert_eq(f[i], want, "key %zu", i);
    if (want) cr_assert_eq(out[i], i, "value of key %zu", i);
  }
  /* Every key of the tree, in order, and nothing else. */
  cr_assert_eq(tdm_btree_export(t, lo, hi, N, NULL), TDM_OK);
  for (i = 1; i < tdm_btree_size(t); i++) cr_assert_lt(lo[i - 1], lo[i]);
  for (i = 0; i < tdm_btree_size(t); i++) cr_assert_eq(k[hi[i]], lo[i]);
  tdm_btree_destroy(t);
  tdm_ctx_destroy(c);
  free(k); free(v); free(out); free(lo); free(hi); free(f);
}

Test(map_cache, the_bound_holds_and_what_falls_out_is_unmapped) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 1);
  enum { T = 40 };
  tdm_hash *h[T];
  size_t vm0, vm1, offered, kept, bound;
  int i, blocks = 0;
  /* 40 tables of 2^17 slots: 2 MiB each of slots (tags stay small). */
  for (i = 0; i < T; i++) h[i] = table(c, 100000, (uint64_t)i << 20, 1000);
  vm0 = vm_bytes();
  for (i = 0; i < T; i++) tdm_hash_destroy(h[i]);
  vm1 = vm_bytes();
  tdm_test_map_cache(c, &kept, &blocks, NULL);
  offered = (size_t)T * 2 * MIB;
  cr_assert_leq(kept, 64 * MIB, "bound: 64 MiB for blocks of 2 MiB, %zu kept", kept);
  cr_assert_geq(kept, 60 * MIB, "the cache fills up to its bound (%zu kept)", kept);
  cr_assert_leq(blocks, 32);
  cr_assert_geq(vm0 - vm1, offered - kept, "what is not kept is unmapped: %zu of %zu bytes gone", vm0 - vm1,
                offered - kept);
  /* One larger table raises the bound to three times its size, at most. */
  h[0] = table(c, (size_t)6 << 20, 1u << 30, 1000); /* 2^23 slots: 128 MiB */
  tdm_hash_destroy(h[0]);
  tdm_test_map_cache(c, &kept, &blocks, NULL);
  bound = 3 * 130 * MIB;
  cr_assert_geq(kept, 128 * MIB, "the large table is kept (%zu)", kept);
  cr_assert_leq(kept, bound);
  tdm_ctx_destroy(c);
}

Test(map_cache, trim_and_destroy_unmap_everything) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 2), *d = prop_ctx(TDM_BACKEND_CPU, 2);
  size_t kept, vm0;
  tdm_hash_destroy(table(c, 1 << 21, 1, 1000));
  tdm_hash_destroy(table(d, 1 << 21, 1, 1000));
  kept = cached(c);
  cr_assert_geq(kept, 32 * MIB);
  cr_assert_eq(tdm_test_map_cache_total(), kept + cached(d));
  vm0 = vm_bytes();
  cr_assert_eq(tdm_ctx_trim(c), TDM_OK);
  cr_assert_eq(cached(c), 0);
  cr_assert_geq(vm0 - vm_bytes(), kept, "trim unmapped the %zu kept bytes", kept);
  cr_assert_eq(tdm_test_map_cache_total(), cached(d));
  /* The context works as before, and keeps again. */
  tdm_hash_destroy(table(c, 1 << 21, 1, 1000));
  cr_assert_geq(cached(c), 32 * MIB);
  kept = cached(c) + cached(d);
  vm0 = vm_bytes();
  tdm_ctx_destroy(c);
  tdm_ctx_destroy(d);
  cr_assert_eq(tdm_test_map_cache_total(), 0, "destroy released every kept block");
  cr_assert_geq(vm0 - vm_bytes(), kept);
  cr_assert_eq(tdm_ctx_trim(NULL), TDM_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(tdm_last_error(), "tdm_ctx_trim") != NULL, "%s", tdm_last_error());
}

Test(map_cache, the_flag_turns_it_off) {
  tdm_ctx_opts o;
  tdm_ctx *c = NULL;
  tdm_hash *h;
  size_t vm0;
  memset(&o, 0, sizeof o);
  o.backend = TDM_BACKEND_CPU;
  o.flags = TDM_CTX_NO_MAP_CACHE;
  cr_assert_eq(tdm_ctx_create(&o, &c), TDM_OK);
  h = table(c, 1 << 21, 1, 100000);
  cr_assert(holds(h, 1, 100000));
  vm0 = vm_bytes();
  tdm_hash_destroy(h);
  cr_assert_geq(vm0 - vm_bytes(), 32 * MIB, "the table went back to the system at once");
  h = table(c, 1 << 21, 1, 1000);
  tdm_hash_destroy(h);
  cr_assert_eq(cached(c), 0);
  cr_assert_eq(hits(c), 0);
  cr_assert_eq(tdm_test_map_cache_total(), 0);
  cr_assert_eq(tdm_ctx_trim(c), TDM_OK);
  tdm_ctx_destroy(c);
}

/* Under AddressSanitizer the address-space limit below would break the
 * sanitizer's own reservations. */
#if defined(__SANITIZE_ADDRESS__)
#define ASAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN_BUILD 1
#endif
#endif

Test(map_cache, a_refused_mapping_empties_the_cache_and_is_retried) {
#ifdef ASAN_BUILD
  cr_skip_test("an address-space limit and AddressSanitizer do not mix");
#else
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 1);
  struct rlimit lim;
  tdm_hash *h;
  size_t kept;
  /* Keep a table of 2^22 slots (64 MiB plus 4 MiB of tags). */
  tdm_hash_destroy(table(c, 3 << 20, 1, 1000));
  kept = cached(c);
  cr_assert_geq(kept, 64 * MIB);
  /* Room for 96 MiB more address space: a table of 2^23 slots (128 MiB)
   * fits only once the kept 68 MiB are given back. */
  lim.rlim_cur = lim.rlim_max = vm_bytes() + 96 * MIB;
  cr_assert_eq(setrlimit(RLIMIT_AS, &lim), 0);
  h = table(c, 6 << 20, 1, 1000);
  cr_assert_eq(cached(c), 0, "the cache was emptied to make room");
  cr_assert(holds(h, 1, 1000));
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
#endif
}

/* Threads sharing one context make and drop tables of different sizes. */
typedef struct worker {
  tdm_ctx *c;
  int id, ok;
} worker;

static void *work(void *arg) {
  worker *w = (worker *)arg;
  int r;
  w->ok = 1;
  for (r = 0; r < 12; r++) {
    size_t cap = (size_t)100000 << ((r + w->id) % 4);
    uint64_t base = ((uint64_t)w->id << 32) + (uint64_t)r * 8192;
    tdm_hash *h = make_table(w->c, cap, base, 5000);
    if (!h || !holds(h, base, 5000)) w->ok = 0;
    tdm_hash_destroy(h);
  }
  return NULL;
}

Test(map_cache, threads_share_a_context) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 1);
  enum { W = 4 };
  pthread_t th[W];
  worker w[W];
  int i;
  for (i = 0; i < W; i++) {
    w[i].c = c;
    w[i].id = i + 1;
    cr_assert_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
  }
  for (i = 0; i < W; i++) pthread_join(th[i], NULL);
  for (i = 0; i < W; i++) cr_assert(w[i].ok, "worker %d saw a wrong table", i);
  cr_assert_gt(hits(c), 0);
  cr_assert_leq(cached(c), 64 * MIB, "bound: 64 MiB for blocks of at most 16 MiB");
  tdm_ctx_destroy(c);
  cr_assert_eq(tdm_test_map_cache_total(), 0);
}
