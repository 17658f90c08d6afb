/*
 * test_concurrency.c: several threads run read-only calls (find, rank,
 * range_count, export, size, validate) on one shared hash table and one shared
 * B-tree, through one shared context, while other threads build, mutate and
 * sort structures of their own on the same context. Every result is checked.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prop.h"

enum { N = 200000, READERS = 4, WRITERS = 2, ROUNDS = 6 };

typedef struct shared {
  tdm_ctx *ctx;
  tdm_hash *h;
  tdm_btree *t;
  uint64_t *keys; /* keys[i] = key of value i; sorted ascending */
} shared;

typedef struct job {
  shared *s;
  int id;
  int failures;
  char why[160];
} job;

static void fail(job *j, const char *what) {
  if (!j->failures++) snprintf(j->why, sizeof j->why, "thread %d: %s (%s)", j->id, what, tdm_last_error());
}

static void *reader(void *arg) {
  job *j = (job *)arg;
  shared *s = j->s;
  enum { Q = 4096 };
  uint64_t *q = malloc(Q * 8), *v = malloc(Q * 8), *r = malloc(Q * 8), *hi = malloc(Q * 8), *c = malloc(Q * 8);
  uint8_t *found = malloc(Q);
  prop_rng rng;
  int round, i;
  prop_rng_init(&rng, 0xC0C0 + (uint64_t)j->id);
  for (round = 0; round < ROUNDS * 4; round++) {
    for (i = 0; i < Q; i++) {
      size_t at = (size_t)prop_below(&rng, N);
      q[i] = (i & 1) ? s->keys[at] + 1 : s->keys[at]; /* keys are even: odd ones miss */
      hi[i] = q[i] + 1000;
    }
    if (tdm_hash_find(s->h, q, v, found, Q) != TDM_OK) fail(j, "hash find");
    for (i = 0; i < Q; i++)
      if (found[i] != !(i & 1) || (found[i] && v[i] != q[i] / 2)) fail(j, "hash find result");
    if (tdm_btree_find(s->t, q, v, found, Q) != TDM_OK) fail(j, "btree find");
    for (i = 0; i < Q; i++)
      if (found[i] != !(i & 1) || (found[i] && v[i] != q[i] / 2)) fail(j, "btree find result");
    if (tdm_btree_rank(s->t, q, r, Q) != TDM_OK) fail(j, "rank");
    if (tdm_btree_range_count(s->t, q, hi, c, Q) != TDM_OK) fail(j, "range_count");
    for (i = 0; i < Q; i++) {
      /* keys are 2 * 0 .. 2 * (N - 1): rank and counts follow directly. */
      uint64_t want_r = (q[i] + 1) / 2, lo_i = (q[i] + 1) / 2, hi_i = (hi[i] / 2 < N - 1 ? hi[i] / 2 : N - 1);
      if (r[i] != want_r) fail(j, "rank result");
      if (c[i] != hi_i - lo_i + 1) fail(j, "range_count result");
    }
    if (tdm_hash_size(s->h) != N || tdm_btree_size(s->t) != N) fail(j, "size");
    if (round % 8 == 0 && (tdm_hash_validate(s->h) != TDM_OK || tdm_btree_validate(s->t) != TDM_OK))
      fail(j, "validate");
  }
  free(q); free(v); free(r); free(hi); free(c); free(found);
  return NULL;
}

static void *writer(void *arg) {
  job *j = (job *)arg;
  shared *s = j->s;
  size_t n = 50000, i;
  uint64_t *k = malloc(n * 8), *v = malloc(n * 8), *out = malloc(2 * n * 8);
  prop_rng rng;
  int round;
  prop_rng_init(&rng, 0x3417 + (uint64_t)j->id);
  for (round = 0; round < ROUNDS; round++) {
    tdm_hash_opts ho;
    tdm_btree_opts bo = {TDM_U64, TDM_U64, TDM_DUP_KEEP_LAST};
    tdm_hash *h = NULL;
    tdm_btree *t = NULL;
    size_t got = 0, erased = 0;
    memset(&ho, 0, sizeof ho);
    ho.key_type = TDM_U64;
    ho.value_type = TDM_U64;
    ho.on_duplicate = TDM_DUP_SUM;
    for (i = 0; i < n; i++) {
      k[i] = prop_next(&rng);
      v[i] = i;
    }
    if (tdm_hash_create(s->ctx, &ho, &h) != TDM_OK || tdm_hash_insert(h, k, v, n) != TDM_OK) fail(j, "own hash");
    if (tdm_hash_erase(h, k, n / 2, &erased) != TDM_OK || erased != n / 2) fail(j, "own hash erase");
    if (tdm_btree_build(s->ctx, &bo, k, v, n, &t) != TDM_OK) fail(j, "own btree");
    if (tdm_btree_insert(t, v, k, n) != TDM_OK || tdm_btree_validate(t) != TDM_OK) fail(j, "own btree insert");
    if (tdm_btree_export(t, out, NULL, 2 * n, &got) != TDM_OK || got != tdm_btree_size(t)) fail(j, "own export");
    if (tdm_sort(s->ctx, TDM_U64, k, n, 0) != TDM_OK) fail(j, "sort");
    for (i = 1; i < n; i++)
      if (k[i - 1] > k[i]) fail(j, "sort result");
    tdm_hash_destroy(h);
    tdm_btree_destroy(t);
  }
  free(k); free(v); free(out);
  return NULL;
}

Test(concurrency, shared_readers_beside_private_writers) {
  shared s;
  pthread_t th[READERS + WRITERS];
  job jobs[READERS + WRITERS];
  uint64_t *vals = malloc(N * 8);
  tdm_hash_opts ho;
  tdm_btree_opts bo = {TDM_U64, TDM_U64, TDM_DUP_KEEP_FIRST};
  size_t i;
  int t;

  s.ctx = prop_ctx(TDM_BACKEND_CPU, 2);
  s.keys = malloc(N * 8);
  for (i = 0; i < N; i++) {
    s.keys[i] = 2 * i;
    vals[i] = i;
  }
  memset(&ho, 0, sizeof ho);
  ho.key_type = TDM_U64;
  ho.value_type = TDM_U64;
  cr_assert_eq(tdm_hash_create(s.ctx, &ho, &s.h), TDM_OK);
  cr_assert_eq(tdm_hash_insert(s.h, s.keys, vals, N), TDM_OK);
  cr_assert_eq(tdm_btree_build(s.ctx, &bo, s.keys, vals, N, &s.t), TDM_OK);
  for (t = 0; t < READERS + WRITERS; t++) {
    jobs[t].s = &s;
    jobs[t].id = t;
    jobs[t].failures = 0;
    jobs[t].why[0] = 0;
    pthread_create(&th[t], NULL, t < READERS ? reader : writer, &jobs[t]);
  }
  for (t = 0; t < READERS + WRITERS; t++) {
    pthread_join(th[t], NULL);
    cr_expect_eq(jobs[t].failures, 0, "%s", jobs[t].why);
  }
  tdm_hash_destroy(s.h);
  tdm_btree_destroy(s.t);
  tdm_ctx_destroy(s.ctx);
  free(s.keys);
  free(vals);
}
