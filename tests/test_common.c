/*
 * test_common.c: the common layer (status names, errors, contexts, backend
 * resolution) and every error path of the sort API, including out-of-memory
 * through the allocation-failure hook and concurrent use of one context.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hooks/hooks.h"
#include "prop.h"

#define ASSERT_FAILS(call, status)                                                               \
  do {                                                                                           \
    tdm_status s_ = (call);                                                                      \
    cr_assert_eq(s_, (status), "%s returned %s, expected %s (%s)", #call, tdm_status_name(s_),  \
                 tdm_status_name(status), tdm_last_error());                                    \
    cr_assert(tdm_last_error()[0] != '\0', "%s failed without a message", #call);              \
  } while (0)

Test(common, status_names) {
  cr_assert_str_eq(tdm_status_name(TDM_OK), "TDM_OK");
  cr_assert_str_eq(tdm_status_name(TDM_ERR_INVALID_ARGUMENT), "TDM_ERR_INVALID_ARGUMENT");
  cr_assert_str_eq(tdm_status_name(TDM_ERR_UNSUPPORTED), "TDM_ERR_UNSUPPORTED");
  cr_assert_str_eq(tdm_status_name(TDM_ERR_OUT_OF_MEMORY), "TDM_ERR_OUT_OF_MEMORY");
  cr_assert_str_eq(tdm_status_name(TDM_ERR_NO_DEVICE), "TDM_ERR_NO_DEVICE");
  cr_assert_str_eq(tdm_status_name(TDM_ERR_DEVICE), "TDM_ERR_DEVICE");
  cr_assert_str_eq(tdm_status_name(TDM_ERR_CAPACITY), "TDM_ERR_CAPACITY");
  cr_assert_str_eq(tdm_status_name(TDM_ERR_CORRUPT), "TDM_ERR_CORRUPT");
  cr_assert_str_eq(tdm_status_name(TDM_ERR_COMM), "TDM_ERR_COMM");
  cr_assert_str_eq(tdm_status_name((tdm_status)99), "TDM_STATUS_UNKNOWN");
}

Test(common, set_last_error) {
  cr_assert_eq(tdm_set_last_error(TDM_ERR_COMM, "rank %d: %s", 3, "lost"), TDM_ERR_COMM);
  cr_assert_str_eq(tdm_last_error(), "rank 3: lost");
}

Test(common, version_is_semver) {
  unsigned a, b, c;
  char extra;
  cr_assert_eq(sscanf(tdm_version(), "%u.%u.%u%c", &a, &b, &c, &extra), 3, "version '%s'", tdm_version());
}

Test(common, type_helpers) {
  cr_assert_eq(tdm_type_size(TDM_U32), 4);
  cr_assert_eq(tdm_type_size(TDM_F64), 8);
  cr_assert_eq(tdm_type_size((tdm_type)0), 0);
  cr_assert_str_eq(tdm_type_name(TDM_I64), "i64");
  cr_assert_str_eq(tdm_type_name((tdm_type)42), "?");
}

static void *fresh_thread_error(void *arg) {
  (void)arg;
  return (void *)(intptr_t)(tdm_last_error()[0] == '\0');
}

Test(common, last_error_is_thread_local) {
  pthread_t th;
  void *empty;
  ASSERT_FAILS(tdm_ctx_create(NULL, NULL), TDM_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(tdm_last_error(), "out") != NULL, "message: %s", tdm_last_error());
  pthread_create(&th, NULL, fresh_thread_error, NULL);
  pthread_join(th, &empty);
  cr_assert(empty != NULL, "a new thread must see an empty last error");
}

Test(common, ctx_create_rejects_bad_options) {
  tdm_ctx *c = (tdm_ctx *)0x1;
  tdm_ctx_opts o = {(tdm_backend)7, 0, 0, NULL, 0, NULL};
  ASSERT_FAILS(tdm_ctx_create(&o, &c), TDM_ERR_INVALID_ARGUMENT);
  cr_assert_eq(c, (tdm_ctx *)0x1, "out must be untouched on failure");
  o.backend = TDM_BACKEND_CPU;
  o.cpu_threads = -1;
  ASSERT_FAILS(tdm_ctx_create(&o, &c), TDM_ERR_INVALID_ARGUMENT);
  o.cpu_threads = 0;
  o.cuda_device = -3;
  ASSERT_FAILS(tdm_ctx_create(&o, &c), TDM_ERR_INVALID_ARGUMENT);
}

Test(common, ctx_defaults_and_destroy_null) {
  tdm_ctx *c = NULL;
  cr_assert_eq(tdm_ctx_create(NULL, &c), TDM_OK);
  cr_assert(tdm_ctx_backend(c) == TDM_BACKEND_CPU || tdm_ctx_backend(c) == TDM_BACKEND_CUDA);
  if (tdm_cuda_device_count() == 0) cr_assert_eq(tdm_ctx_backend(c), TDM_BACKEND_CPU);
  tdm_ctx_destroy(c);
  tdm_ctx_destroy(NULL);
  cr_assert_eq(tdm_ctx_backend(NULL), TDM_BACKEND_AUTO);
}

Test(common, cuda_without_device_is_no_device) {
  tdm_ctx *c = NULL;
  tdm_ctx_opts o = {TDM_BACKEND_CUDA, 0, 0, NULL, 0, NULL};
  if (tdm_cuda_device_count() > 0) {
    o.cuda_device = tdm_cuda_device_count(); /* one past the last device */
    ASSERT_FAILS(tdm_ctx_create(&o, &c), TDM_ERR_INVALID_ARGUMENT);
    return;
  }
  ASSERT_FAILS(tdm_ctx_create(&o, &c), TDM_ERR_NO_DEVICE);
  cr_assert(strstr(tdm_last_error(), "CUDA") != NULL, "message should say why: %s", tdm_last_error());
  cr_assert_null(c);
}

Test(common, alloc_hook_counts_and_fails) {
  tdm_ctx *c = NULL;
  tdm_test_alloc_fail_at(1);
  ASSERT_FAILS(tdm_ctx_create(NULL, &c), TDM_ERR_OUT_OF_MEMORY);
  cr_assert_null(c);
  tdm_test_alloc_fail_at(0);
  cr_assert_eq(tdm_ctx_create(NULL, &c), TDM_OK);
  cr_assert_geq(tdm_test_alloc_count(), 1);
  tdm_ctx_destroy(c);
}

/* ---- sort argument checks ------------------------------------------------ */

Test(sort_errors, bad_arguments) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 1);
  uint32_t k[4] = {3, 1, 2, 0}, v[4] = {0, 1, 2, 3};
  uint64_t p[4];
  size_t huge = SIZE_MAX / 4 + 1;

  ASSERT_FAILS(tdm_sort(NULL, TDM_U32, k, 4, 0), TDM_ERR_INVALID_ARGUMENT);
  ASSERT_FAILS(tdm_sort(c, (tdm_type)0, k, 4, 0), TDM_ERR_INVALID_ARGUMENT);
  ASSERT_FAILS(tdm_sort(c, (tdm_type)7, k, 4, 0), TDM_ERR_INVALID_ARGUMENT);
  ASSERT_FAILS(tdm_sort(c, TDM_U32, k, 4, 0x10), TDM_ERR_INVALID_ARGUMENT);
  ASSERT_FAILS(tdm_sort(c, TDM_U32, NULL, 4, 0), TDM_ERR_INVALID_ARGUMENT);
  ASSERT_FAILS(tdm_sort(c, TDM_U32, k, huge, 0), TDM_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(tdm_last_error(), "overflow") != NULL, "%s", tdm_last_error());

  ASSERT_FAILS(tdm_sort_pairs(c, TDM_U32, k, (tdm_type)9, v, 4, 0), TDM_ERR_INVALID_ARGUMENT);
  ASSERT_FAILS(tdm_sort_pairs(c, TDM_U32, k, TDM_U32, NULL, 4, 0), TDM_ERR_INVALID_ARGUMENT);
  ASSERT_FAILS(tdm_sort_pairs(c, TDM_U32, k, TDM_U32, k + 1, 3, 0), TDM_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(tdm_last_error(), "overlap") != NULL, "%s", tdm_last_error());

  ASSERT_FAILS(tdm_argsort(c, TDM_U32, k, TDM_F32, p, 4, 0), TDM_ERR_UNSUPPORTED);
  ASSERT_FAILS(tdm_argsort(c, TDM_U32, k, TDM_I64, p, 4, 0), TDM_ERR_UNSUPPORTED);
  ASSERT_FAILS(tdm_argsort(c, TDM_U32, k, (tdm_type)0, p, 4, 0), TDM_ERR_INVALID_ARGUMENT);
  ASSERT_FAILS(tdm_argsort(c, TDM_U32, k, TDM_U64, NULL, 4, 0), TDM_ERR_INVALID_ARGUMENT);
  ASSERT_FAILS(tdm_argsort(c, TDM_U32, k, TDM_U32, k, 4, 0), TDM_ERR_INVALID_ARGUMENT);
  ASSERT_FAILS(tdm_argsort(c, TDM_U64, k, TDM_U32, p, (size_t)UINT32_MAX + 1, 0), TDM_ERR_INVALID_ARGUMENT);

  /* Misaligned element arrays are refused, not dereferenced. */
  ASSERT_FAILS(tdm_sort(c, TDM_U32, (char *)k + 1, 2, 0), TDM_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(tdm_last_error(), "aligned") != NULL, "%s", tdm_last_error());
  ASSERT_FAILS(tdm_argsort(c, TDM_U32, k, TDM_U64, (char *)p + 4, 3, 0), TDM_ERR_INVALID_ARGUMENT);

  /* Failed calls leave the inputs alone. */
  cr_assert(k[0] == 3 && k[1] == 1 && k[2] == 2 && k[3] == 0);
  cr_assert(v[0] == 0 && v[3] == 3);
  tdm_ctx_destroy(c);
}

Test(sort_errors, empty_and_single_are_noops) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 1);
  uint64_t one = 42, p = 7;
  cr_assert_eq(tdm_sort(c, TDM_U64, NULL, 0, 0), TDM_OK);
  cr_assert_eq(tdm_sort_pairs(c, TDM_F64, NULL, TDM_U32, NULL, 0, TDM_SORT_DESCENDING), TDM_OK);
  cr_assert_eq(tdm_argsort(c, TDM_I32, NULL, TDM_U32, NULL, 0, 0), TDM_OK);
  cr_assert_eq(tdm_sort(c, TDM_U64, &one, 1, 0), TDM_OK);
  cr_assert_eq(one, 42);
  cr_assert_eq(tdm_argsort(c, TDM_U64, &one, TDM_U64, &p, 1, 0), TDM_OK);
  cr_assert_eq(p, 0);
  tdm_ctx_destroy(c);
}

/* Every allocation a sort makes is made to fail in turn: each failing call
 * reports out-of-memory and leaves keys and values as they were. A keys-only
 * sort may take a path that allocates nothing (one vqsort of the whole array
 * when Highway is built in): it must then succeed at once, sorted, with no
 * allocation made. */
Test(sort_errors, out_of_memory_leaves_input_unchanged) {
  size_t n = 100000, i;
  int op;
  for (op = 0; op < 3; op++) {
    tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 2);
    int32_t *k = (int32_t *)malloc(n * 4), *k0 = (int32_t *)malloc(n * 4);
    uint64_t *v = (uint64_t *)malloc(n * 8), *v0 = (uint64_t *)malloc(n * 8);
    prop_rng r;
    long kfail, made = 0;
    tdm_status s = TDM_ERR_OUT_OF_MEMORY;
    prop_rng_init(&r, 0x00AA + (uint64_t)op);
    prop_fill(&r, TDM_I32, k0, n, PROP_UNIFORM);
    for (i = 0; i < n; i++) v0[i] = i;
    for (kfail = 1; s == TDM_ERR_OUT_OF_MEMORY && kfail < 100; kfail++) {
      memcpy(k, k0, n * 4);
      memcpy(v, v0, n * 8);
      tdm_test_alloc_fail_at(kfail);
      s = op == 0 ? tdm_sort(c, TDM_I32, k, n, TDM_SORT_DESCENDING)
          : op == 1 ? tdm_sort_pairs(c, TDM_I32, k, TDM_U64, v, n, 0)
                    : tdm_argsort(c, TDM_I32, k, TDM_U64, v, n, 0);
      made = tdm_test_alloc_count();
      tdm_test_alloc_fail_at(0);
      if (s == TDM_ERR_OUT_OF_MEMORY) {
        cr_assert(memcmp(k, k0, n * 4) == 0, "op %d: keys changed by a failed call (fail at %ld)", op, kfail);
        if (op == 1) cr_assert(memcmp(v, v0, n * 8) == 0, "values changed by a failed call");
        cr_assert(strstr(tdm_last_error(), "memory") != NULL, "%s", tdm_last_error());
      }
    }
    cr_assert_eq(s, TDM_OK, "op %d never succeeded: %s", op, tdm_last_error());
    if (op == 0 && kfail == 2) {
      /* Succeeded at the first try: only a path without allocations may. */
      cr_assert_eq(made, 0, "keys-only sort succeeded although its allocation %ld should have failed", kfail - 1);
      for (i = 1; i < n; i++) cr_assert_geq(k[i - 1], k[i], "keys-only sort without allocation: not sorted");
    } else {
      cr_assert_gt(kfail, 2, "the hook must have failed at least one allocation");
    }
    free(k); free(k0); free(v); free(v0);
    tdm_ctx_destroy(c);
  }
}

/* One context shared by threads: the scratch cache must not be handed to two
 * calls at once. */
typedef struct worker {
  tdm_ctx *ctx;
  uint64_t seed;
  int ok;
} worker;

static void *sort_worker(void *arg) {
  worker *w = (worker *)arg;
  size_t n = 50000 + (size_t)(w->seed % 1000), i;
  uint64_t *k = (uint64_t *)malloc(n * 8), x = w->seed;
  int rep;
  w->ok = 1;
  for (rep = 0; rep < 20 && w->ok; rep++) {
    for (i = 0; i < n; i++) {
      x ^= x << 13; x ^= x >> 7; x ^= x << 17;
      k[i] = x;
    }
    if (tdm_sort(w->ctx, TDM_U64, k, n, 0) != TDM_OK) w->ok = 0;
    for (i = 1; i < n && w->ok; i++)
      if (k[i - 1] > k[i]) w->ok = 0;
  }
  free(k);
  return NULL;
}

Test(sort_concurrency, shared_context) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 1);
  pthread_t th[4];
  worker w[4];
  int i;
  for (i = 0; i < 4; i++) {
    w[i].ctx = c;
    w[i].seed = 0x1234567ull * (uint64_t)(i + 1);
    pthread_create(&th[i], NULL, sort_worker, &w[i]);
  }
  for (i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    cr_assert(w[i].ok, "thread %d saw a wrong sort", i);
  }
  tdm_ctx_destroy(c);
}
