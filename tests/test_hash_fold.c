/*
 * test_hash_fold.c: the public layer's handling of insert counts that a
 * backend leaves on the device (src/hash_api.c: plan_insert and
 * fold_counts), on the CPU.
 *
 * The CPU backend counts on the host, so these tests give a CPU table an
 * operation table that behaves like the CUDA one: its insert runs the CPU
 * insert, then moves the outcome counts into a stand-in "device" buffer and
 * adds n to h->pending; its sync_counts folds that buffer back and counts
 * the reads (each one a host wait on CUDA). A "queued" insert (one that the
 * public layer lets return with its counts pending, which needs device
 * arrays) is simulated by calling that insert entry directly. What is
 * checked: how many reads each call makes, the planning of a fixed table
 * from the upper bound size + pending, exact sizes after folding, deferred
 * "no free slot" errors and failed reads (tdm_hash_size's upper bound, the
 * error from the next call). The GPU side is tests/pipeline/pipeline_check.cu.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "prop.h"

/* The stand-in device buffer and what the fake backend was asked. */
static struct {
  const tdm__hash_ops *cpu;     /* the table's real (CPU) operations */
  size_t added, side, reused;   /* counts not yet folded: new keys, side-slot keys, reused tombstones */
  size_t no_slot;               /* "keys that found no free slot" to report at the next read */
  int fail;                     /* the next reads fail like a device fault */
  int reads;                    /* sync_counts calls that read */
  long delay_ns;                /* how long a read takes (a wait for the device) */
} dev;

static tdm__hash_ops fake_ops;

static tdm_status fake_insert(tdm_hash *h, const void *keys, const void *values, size_t n, unsigned grow) {
  size_t size0 = h->size, side0 = h->side, tombs0;
  tdm_status st;
  /* A rehash (only ever with nothing pending) drops tombstones for good;
   * what the insert itself changes afterwards goes to the buffer. */
  cr_assert(grow == 0 || h->pending == 0, "a rehash was planned with %zu keys pending", h->pending);
  if (grow) h->tombs = 0;
  tombs0 = h->tombs;
  st = dev.cpu->insert(h, keys, values, n, grow);
  if (st != TDM_OK) return st;
  dev.added += h->size - size0;
  dev.side += h->side - side0;
  dev.reused += tombs0 - h->tombs;
  h->size = size0;
  h->side = side0;
  h->tombs = tombs0;
  h->pending += n;
  return TDM_OK;
}

static tdm_status fake_sync_counts(tdm_hash *h, const char *fn, size_t *no_slot) {
  dev.reads++;
  if (dev.delay_ns) {
    struct timespec t = {0, dev.delay_ns};
    nanosleep(&t, NULL);
  }
  if (dev.fail) return tdm__fail(TDM_ERR_DEVICE, "%s: stand-in device fault", fn);
  h->size += dev.added;
  h->side += dev.side;
  h->tombs -= dev.reused;
  *no_slot = dev.no_slot;
  dev.added = dev.side = dev.reused = dev.no_slot = 0;
  return TDM_OK;
}

static tdm_hash *make(tdm_ctx *ctx, size_t capacity, double max_load, int fixed) {
  tdm_hash_opts o;
  tdm_hash *h = NULL;
  memset(&o, 0, sizeof o);
  o.key_type = TDM_U64;
  o.value_type = TDM_U64;
  o.capacity = capacity;
  o.max_load = max_load;
  o.fixed_capacity = fixed;
  o.on_duplicate = TDM_DUP_KEEP_LAST;
  cr_assert_eq(tdm_hash_create(ctx, &o, &h), TDM_OK, "%s", tdm_last_error());
  memset(&dev, 0, sizeof dev);
  dev.cpu = h->ops;
  fake_ops = *h->ops;
  fake_ops.insert = fake_insert;
  fake_ops.sync_counts = fake_sync_counts;
  h->ops = &fake_ops;
  return h;
}

static void drop(tdm_hash *h) {
  h->ops = dev.cpu; /* nothing pending after destroy's fold */
  tdm_hash_destroy(h);
}

/* Distinct keys for indices lo, lo + 1, ... (an odd multiplier is a
 * bijection; none is 0 or the tombstone pattern, so none lands in a side
 * slot), used as values too. */
static uint64_t keys[4096];
static const uint64_t *range(size_t lo) {
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) keys[i] = (lo + i + 1) * 0xbf58476d1ce4e5b9ull;
  return keys;
}

/* A queued insert as the public layer would leave it: counts on the device. */
static void queue(tdm_hash *h, const uint64_t *k, size_t n) {
  cr_assert_eq(h->ops->insert(h, k, k, n, 0), TDM_OK, "%s", tdm_last_error());
}

Test(hash_fold, every_insert_that_may_not_queue_reads_its_counts) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 1);
  tdm_hash *h = make(c, 0, 0, 0);
  cr_assert_eq(tdm_hash_insert(h, range(0), keys, 1000), TDM_OK, "%s", tdm_last_error());
  cr_assert_eq(dev.reads, 1);
  cr_assert_eq(h->pending, 0);
  cr_assert_eq(tdm_hash_size(h), 1000);
  cr_assert_eq(tdm_hash_insert(h, range(500), keys, 1000), TDM_OK); /* 500 new, grows */
  cr_assert_eq(dev.reads, 2);
  cr_assert_eq(tdm_hash_size(h), 1500);
  cr_assert_eq(dev.reads, 2, "size with nothing pending read the counts");
  cr_assert_eq(tdm_hash_validate(h), TDM_OK, "%s", tdm_last_error());
  drop(h);
  tdm_ctx_destroy(c);
}

Test(hash_fold, a_fixed_table_plans_from_the_upper_bound) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 1);
  /* capacity 1024 at max_load 0.5: 2048 slots, a limit of exactly 1024 */
  tdm_hash *h = make(c, 1024, 0.5, 1);
  cr_assert_eq(h->limit, 1024);
  queue(h, range(0), 512);
  queue(h, range(0), 512); /* the same keys: still 512 in the table */
  cr_assert_eq(h->pending, 1024);
  cr_assert_eq(dev.reads, 0);

  /* 0 + 1024 + 0 fits the limit: no read to plan, one after the insert */
  dev.reads = 0;
  cr_assert_eq(tdm_hash_insert(h, range(0), keys, 0), TDM_OK);
  cr_assert_eq(dev.reads, 0, "an empty batch read the counts");
  queue(h, range(512), 200); /* pending 1224: bound 1224 + n > limit */
  cr_assert_eq(tdm_hash_insert(h, range(712), keys, 100), TDM_OK, "%s", tdm_last_error());
  cr_assert_eq(dev.reads, 2, "a batch over the bound: one read to plan, one after the insert (%d)", dev.reads);
  cr_assert_eq(tdm_hash_size(h), 812);

  /* Under the bound: 812 + 100 pending + 100 <= 1024, no read to plan. */
  dev.reads = 0;
  queue(h, range(0), 100); /* all present */
  cr_assert_eq(tdm_hash_insert(h, range(812), keys, 100), TDM_OK, "%s", tdm_last_error());
  cr_assert_eq(dev.reads, 1, "a batch under the bound read the counts %d times, not once (after)", dev.reads);
  cr_assert_eq(tdm_hash_size(h), 912);

  /* Over the bound and over the limit exactly: one read, then refused, unchanged. */
  dev.reads = 0;
  queue(h, range(0), 100);
  cr_assert_eq(tdm_hash_insert(h, range(2000), keys, 113), TDM_ERR_CAPACITY);
  cr_assert_eq(dev.reads, 1);
  cr_assert_eq(h->pending, 0);
  cr_assert_eq(tdm_hash_size(h), 912);
  /* Exactly at the limit is allowed. */
  cr_assert_eq(tdm_hash_insert(h, range(2000), keys, 112), TDM_OK, "%s", tdm_last_error());
  cr_assert_eq(tdm_hash_size(h), 1024);
  cr_assert_eq(tdm_hash_validate(h), TDM_OK, "%s", tdm_last_error());
  drop(h);
  tdm_ctx_destroy(c);
}

Test(hash_fold, tombstones_count_in_the_bound) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 1);
  tdm_hash *h = make(c, 1024, 0.5, 1);
  size_t erased = 0, t, s, n;
  cr_assert_eq(tdm_hash_insert(h, range(0), keys, 600), TDM_OK);
  cr_assert_eq(tdm_hash_erase(h, range(0), 300, &erased), TDM_OK);
  cr_assert_eq(erased, 300);
  t = h->tombs;
  cr_assert(t > 0 && t <= 300, "%zu tombstones", t);
  /* Re-inserting erased keys may reuse tombstones; until the counts are
   * read the host keeps the larger tombstone count, part of the bound. */
  queue(h, range(0), 100);
  n = 1024 - 400 - t - 200; /* bound 300 + 100 + n + t = limit - 200: fits */
  dev.reads = 0;
  cr_assert_eq(tdm_hash_insert(h, range(3000), keys, n), TDM_OK, "%s", tdm_last_error());
  cr_assert_eq(dev.reads, 1, "under the bound: %d reads, not one (after the insert)", dev.reads);
  s = tdm_hash_size(h);
  cr_assert_eq(s, 400 + n);
  t = h->tombs; /* exact again */
  queue(h, range(0), 100); /* present: nothing changes but the bound */
  n = 1024 - (s + 100 + t) + 1; /* bound = limit + 1; exactly s + n + t = limit - 99 */
  dev.reads = 0;
  cr_assert_eq(tdm_hash_insert(h, range(5000), keys, n), TDM_OK, "%s", tdm_last_error());
  cr_assert_eq(dev.reads, 2, "one past the bound: %d reads, not two (plan, after)", dev.reads);
  cr_assert_eq(tdm_hash_size(h), s + n);
  cr_assert_eq(tdm_hash_validate(h), TDM_OK, "%s", tdm_last_error());
  drop(h);
  tdm_ctx_destroy(c);
}

Test(hash_fold, no_free_slot_is_reported_by_the_next_read) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 1);
  tdm_hash *h = make(c, 1024, 0.5, 1);
  queue(h, range(0), 10);
  dev.no_slot = 3;
  cr_assert_eq(tdm_hash_validate(h), TDM_ERR_CORRUPT);
  cr_assert(strstr(tdm_last_error(), "tdm_hash_validate") && strstr(tdm_last_error(), "3 keys") &&
                strstr(tdm_last_error(), "no free slot"),
            "message: %s", tdm_last_error());
  /* The counts were read: nothing pending, the error reported once. */
  cr_assert_eq(h->pending, 0);
  cr_assert_eq(tdm_hash_size(h), 10);
  cr_assert_eq(tdm_hash_validate(h), TDM_OK, "%s", tdm_last_error());
  /* tdm_hash_size cannot report it: it waits for the next call that can. */
  queue(h, range(50), 5);
  dev.no_slot = 2;
  cr_assert_eq(tdm_hash_size(h), 15);
  cr_assert_eq(h->pending, 0);
  cr_assert_eq(tdm_hash_size(h), 15);
  cr_assert_eq(tdm_hash_clear(h), TDM_ERR_CORRUPT);
  cr_assert(strstr(tdm_last_error(), "tdm_hash_clear") && strstr(tdm_last_error(), "2 keys"), "message: %s",
            tdm_last_error());
  cr_assert_eq(tdm_hash_size(h), 15, "the clear that reported the error changed the table");
  cr_assert_eq(tdm_hash_validate(h), TDM_OK, "%s", tdm_last_error());
  /* An insert that reads its counts reports it too. */
  queue(h, range(100), 5);
  dev.no_slot = 1;
  cr_assert_eq(tdm_hash_insert(h, range(200), keys, 5), TDM_ERR_CORRUPT);
  cr_assert(strstr(tdm_last_error(), "tdm_hash_insert"), "message: %s", tdm_last_error());
  cr_assert_eq(tdm_hash_size(h), 25);
  drop(h);
  tdm_ctx_destroy(c);
}

Test(hash_fold, a_failed_read_keeps_the_bound_and_reports_later) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 1);
  tdm_hash *h = make(c, 1024, 0.5, 1);
  uint64_t out_k[64], out_v[64];
  size_t n_out = 0, erased = 0;
  cr_assert_eq(tdm_hash_insert(h, range(0), keys, 20), TDM_OK);
  queue(h, range(10), 30); /* 20 new */
  dev.fail = 1;
  cr_assert_eq(tdm_hash_size(h), 50, "size with unreadable counts: the upper bound 20 + 30");
  cr_assert_eq(h->pending, 30);
  cr_assert_eq(tdm_hash_export(h, out_k, out_v, 64, &n_out), TDM_ERR_DEVICE);
  cr_assert(strstr(tdm_last_error(), "tdm_hash_export"), "message: %s", tdm_last_error());
  cr_assert_eq(tdm_hash_erase(h, range(0), 5, &erased), TDM_ERR_DEVICE);
  cr_assert_eq(tdm_hash_clear(h), TDM_ERR_DEVICE);
  cr_assert_eq(tdm_hash_validate(h), TDM_ERR_DEVICE);
  cr_assert_eq(tdm_hash_insert(h, range(0), keys, 1000), TDM_ERR_DEVICE, "planning needs the counts");
  dev.fail = 0;
  cr_assert_eq(tdm_hash_size(h), 40);
  cr_assert_eq(tdm_hash_export(h, out_k, out_v, 64, &n_out), TDM_OK, "%s", tdm_last_error());
  cr_assert_eq(n_out, 40);
  cr_assert_eq(tdm_hash_validate(h), TDM_OK, "%s", tdm_last_error());
  drop(h);
  tdm_ctx_destroy(c);
}

/* Size and export are read-only calls that threads may make at once; the
 * counts they fold must be read once, and every thread sees the exact size. */
static tdm_hash *shared;
static size_t seen[8];
static void *size_thread(void *arg) {
  seen[(size_t)arg] = tdm_hash_size(shared);
  return NULL;
}

Test(hash_fold, concurrent_sizes_read_the_counts_once) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 1);
  pthread_t th[8];
  shared = make(c, 4096, 0.5, 1);
  queue(shared, range(0), 1000);
  queue(shared, range(500), 1000); /* 1500 keys */
  dev.delay_ns = 20 * 1000 * 1000;
  for (size_t i = 0; i < 8; i++) cr_assert_eq(pthread_create(&th[i], NULL, size_thread, (void *)i), 0);
  for (size_t i = 0; i < 8; i++) pthread_join(th[i], NULL);
  cr_assert_eq(dev.reads, 1, "8 concurrent sizes read the counts %d times", dev.reads);
  for (size_t i = 0; i < 8; i++) cr_assert_eq(seen[i], 1500, "thread %zu saw size %zu", i, seen[i]);
  drop(shared);
  tdm_ctx_destroy(c);
}

Test(hash_fold, the_cpu_backend_never_leaves_counts_pending) {
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 1);
  tdm_hash_opts o;
  tdm_hash *h = NULL;
  memset(&o, 0, sizeof o);
  o.key_type = TDM_U64;
  o.value_type = TDM_U64;
  o.capacity = 64;
  o.fixed_capacity = 1;
  cr_assert_eq(tdm_hash_create(c, &o, &h), TDM_OK);
  cr_assert_null(h->ops->sync_counts);
  cr_assert_eq(tdm_hash_insert(h, range(0), keys, 40), TDM_OK);
  cr_assert_eq(h->pending, 0);
  cr_assert_eq(h->size, 40);
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
}
