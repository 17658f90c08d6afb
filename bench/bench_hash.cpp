/*
 * bench_hash.cpp: the "hash" subcommand: tandem's hash table, u64 keys -> u64
 * values, uniform random unique keys from a fixed seed, against
 * absl::flat_hash_map and std::unordered_map (with --peers) on the CPU, and
 * device-resident on a GPU.
 *
 * Rows (operation names fixed by the contract):
 *  - insert: n keys into an empty table. `queries` carries the capacity hint
 *    for this operation: queries = n means the table was created with
 *    capacity n (absl / std: reserve(n)); queries = 0 means no hint, the table
 *    grows from empty (tandem: batches of 65536 keys, so it really doubles
 *    about ten times; the peers: one key at a time).
 *  - find_hit: n queries, all present; find_miss50: n queries, half absent.
 *  - erase: every key of a full table.
 * The random-gather ceiling of the machine is measured first for a table of
 * the same size, and each tandem find row is followed by its ratio to absl
 * and to that ceiling. Memory per entry (resident bytes / keys) is printed
 * for tandem and the peers.
 */
#include <malloc.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "bench.h"

#ifdef TANDEM_BENCH_HAVE_ABSL
#include <absl/container/flat_hash_map.h>
#endif

namespace {

const size_t GROW_BATCH = 65536;

/* Resident set size of the process in bytes. */
size_t rss_bytes() {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long long pages = 0, resident = 0;
  if (!f) return 0;
  if (fscanf(f, "%llu %llu", &pages, &resident) != 2) resident = 0;
  fclose(f);
  return (size_t)resident * 4096u;
}

bench_row base_row(const std::string &op, const std::string &impl, const std::string &backend, size_t n,
                   size_t queries, int threads) {
  return bench_make_row("hash", op, impl, backend, "u64", "u64", n, queries, threads);
}

tdm_hash *make_table(tdm_ctx *c, size_t capacity, double max_load) {
  tdm_hash_opts ho;
  memset(&ho, 0, sizeof ho);
  ho.key_type = TDM_U64;
  ho.value_type = TDM_U64;
  ho.capacity = capacity;
  ho.max_load = max_load;
  ho.on_duplicate = TDM_DUP_KEEP_LAST;
  tdm_hash *h = nullptr;
  bench_check(tdm_hash_create(c, &ho, &h), "tdm_hash_create");
  return h;
}

/* The inputs: n keys to insert with values, a shuffled all-hit query set and
 * a shuffled half-miss query set (misses drawn from n other keys). */
struct inputs {
  std::vector<uint64_t> keys, vals, hit, miss50;
};

inputs make_inputs(size_t n, uint64_t seed) {
  inputs in;
  std::vector<uint64_t> all = bench_unique_u64(2 * n, seed), r = bench_random_u64(2 * n, seed + 1);
  in.keys.assign(all.begin(), all.begin() + (long)n);
  in.vals.resize(n);
  for (size_t i = 0; i < n; i++) in.vals[i] = i;
  in.hit = in.keys;
  for (size_t i = n; i > 1; i--) std::swap(in.hit[i - 1], in.hit[r[i] % i]);
  in.miss50.resize(n);
  for (size_t i = 0; i < n; i++) in.miss50[i] = (r[n + i] & 1) ? in.hit[i] : all[n + i];
  return in;
}

struct ratios {
  double absl_find_hit = 0, absl_find_miss = 0, absl_insert = 0, absl_grow = 0;
};

void print_ratio(const bench_row &r, double absl, double gather) {
  if (absl <= 0 && gather <= 0) return; /* no peer measured, no ceiling: nothing to compare */
  printf("%-10s   -> ", "");
  if (absl > 0) printf("%.2fx absl::flat_hash_map (1 thread)", r.median / absl);
  if (gather > 0) printf("%s%.0f%% of the %.1f M/s gather ceiling at %d thread(s)", absl > 0 ? ", " : "",
                         100.0 * r.median / gather, gather, r.threads);
  printf("\n");
}

template <typename Map>
void bench_peer(const bench_opts &o, const char *name, const inputs &in, size_t n, ratios *rt) {
  std::unique_ptr<Map> m;
  uint64_t sink = 0;
  bench_row r;
  r = bench_measure(o, base_row("insert", name, "cpu", n, n, 1), (double)n,
                    [&] { m.reset(new Map()); m->reserve(n); },
                    [&] { for (size_t i = 0; i < n; i++) (*m)[in.keys[i]] = in.vals[i]; });
  if (rt) rt->absl_insert = r.median;
  r = bench_measure(o, base_row("insert", name, "cpu", n, 0, 1), (double)n, [&] { m.reset(new Map()); },
                    [&] { for (size_t i = 0; i < n; i++) (*m)[in.keys[i]] = in.vals[i]; });
  if (rt) rt->absl_grow = r.median;
  {
    /* m holds the map grown without reserve; free it, and hand freed heap
     * back to the OS so the resident-size difference shows its footprint. */
    malloc_trim(0);
    size_t before = rss_bytes();
    m.reset();
    malloc_trim(0);
    size_t freed = before - rss_bytes();
    m.reset(new Map());
    size_t at = rss_bytes();
    m->reserve(n);
    for (size_t i = 0; i < n; i++) (*m)[in.keys[i]] = in.vals[i];
    printf("%-10s   memory: %s holds %zu keys in %.1f bytes per entry (after reserve(n); %.1f when grown)\n", "",
           name, n, (double)(rss_bytes() - at) / (double)n, (double)freed / (double)n);
  }
  r = bench_measure(o, base_row("find_hit", name, "cpu", n, n, 1), (double)n, nullptr, [&] {
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) {
      auto it = m->find(in.hit[i]);
      if (it != m->end()) s += it->second;
    }
    sink += s;
  });
  if (rt) rt->absl_find_hit = r.median;
  r = bench_measure(o, base_row("find_miss50", name, "cpu", n, n, 1), (double)n, nullptr, [&] {
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) {
      auto it = m->find(in.miss50[i]);
      if (it != m->end()) s += it->second;
    }
    sink += s;
  });
  if (rt) rt->absl_find_miss = r.median;
  bench_measure(o, base_row("erase", name, "cpu", n, 0, 1), (double)n,
                [&] {
                  m.reset(new Map());
                  m->reserve(n);
                  for (size_t i = 0; i < n; i++) (*m)[in.keys[i]] = in.vals[i];
                },
                [&] { for (size_t i = 0; i < n; i++) sink += m->erase(in.hit[i]); });
  bench_sink(sink);
}

void bench_cpu(const bench_opts &o, size_t n) {
  inputs in = make_inputs(n, o.seed);
  std::vector<int> threads = bench_thread_list(o, "cpu");
  std::vector<uint64_t> out(n);
  std::vector<uint8_t> found(n);
  ratios rt;
  /* A table for n keys at the default max load: the next power of two of
   * slots at or above n / 0.8, 16 bytes each; the gather ceiling uses the same
   * footprint. */
  size_t slots = 16;
  while ((double)slots * 0.8 < (double)n) slots *= 2;
  std::vector<double> gather;
  for (int t : threads) gather.push_back(bench_limit_gather_mops(o, t, slots * 16));

  if (o.peers) {
#ifdef TANDEM_BENCH_HAVE_ABSL
    bench_peer<absl::flat_hash_map<uint64_t, uint64_t>>(o, "absl::flat_hash_map", in, n, &rt);
#else
    printf("(absl::flat_hash_map not found at configure time: install libabsl-dev)\n");
#endif
    bench_peer<std::unordered_map<uint64_t, uint64_t>>(o, "std::unordered_map", in, n, nullptr);
  }

  for (size_t ti = 0; ti < threads.size(); ti++) {
    int t = threads[ti];
    tdm_ctx *c = bench_ctx("cpu", t);
    tdm_hash *h = nullptr;
    bench_row r;
    r = bench_measure(o, base_row("insert", "tandem", "cpu", n, n, t), (double)n,
                      [&] { tdm_hash_destroy(h); h = make_table(c, n, 0); },
                      [&] { bench_check(tdm_hash_insert(h, in.keys.data(), in.vals.data(), n), "insert"); });
    print_ratio(r, rt.absl_insert, 0);
    r = bench_measure(o, base_row("insert", "tandem", "cpu", n, 0, t), (double)n,
                      [&] { tdm_hash_destroy(h); h = make_table(c, 0, 0); },
                      [&] {
                        for (size_t i = 0; i < n; i += GROW_BATCH)
                          bench_check(tdm_hash_insert(h, in.keys.data() + i, in.vals.data() + i,
                                                      std::min(GROW_BATCH, n - i)),
                                      "insert");
                      });
    print_ratio(r, rt.absl_grow, 0);
    if (ti == 0) {
      malloc_trim(0);
      size_t before = rss_bytes();
      tdm_hash_destroy(h);
      malloc_trim(0);
      size_t freed = before - rss_bytes();
      size_t at = rss_bytes();
      h = make_table(c, n, 0);
      bench_check(tdm_hash_insert(h, in.keys.data(), in.vals.data(), n), "insert");
      printf("%-10s   memory: tandem holds %zu keys in %.1f bytes per entry (capacity n, default max load 0.8; "
             "%.1f when grown in batches)\n",
             "", n, (double)(rss_bytes() - at) / (double)n, (double)freed / (double)n);
    } else {
      tdm_hash_destroy(h);
      h = make_table(c, n, 0);
      bench_check(tdm_hash_insert(h, in.keys.data(), in.vals.data(), n), "insert");
    }
    r = bench_measure(o, base_row("find_hit", "tandem", "cpu", n, n, t), (double)n, nullptr, [&] {
      bench_check(tdm_hash_find(h, in.hit.data(), out.data(), found.data(), n), "find");
    });
    print_ratio(r, rt.absl_find_hit, gather[ti]);
    r = bench_measure(o, base_row("find_miss50", "tandem", "cpu", n, n, t), (double)n, nullptr, [&] {
      bench_check(tdm_hash_find(h, in.miss50.data(), out.data(), found.data(), n), "find");
    });
    print_ratio(r, rt.absl_find_miss, gather[ti]);
    bench_measure(o, base_row("erase", "tandem", "cpu", n, 0, t), (double)n,
                  [&] {
                    tdm_hash_destroy(h);
                    h = make_table(c, n, 0);
                    bench_check(tdm_hash_insert(h, in.keys.data(), in.vals.data(), n), "insert");
                  },
                  [&] {
                    size_t e = 0;
                    bench_check(tdm_hash_erase(h, in.hit.data(), n, &e), "erase");
                    bench_sink(e);
                  });
    tdm_hash_destroy(h);
    tdm_ctx_destroy(c);
  }
  bench_sink(out[n / 2] + found[n / 3]);
}

#ifdef TANDEM_BENCH_HAVE_CUDA
/* Device-resident u64 -> u64 at load 0.8. Tables have a power-of-two slot
 * count, so --n N (default 2^27) means a table of 2^floor(log2 N) slots
 * filled to load 0.8: 0.8 * 2^27 = 107374182 keys for N = 2^27. */
void bench_cuda_hash(const bench_opts &o) {
  size_t want = bench_n(o, (size_t)1 << 27), slots = 16;
  while (slots * 2 <= want) slots *= 2;
  size_t n = (size_t)((double)slots * 0.8);
  printf("hash cuda: %zu keys in a table of %zu slots (load 0.8), device-resident arrays\n", n, slots);
  inputs in = make_inputs(n, o.seed);
  size_t bytes = n * 8;
  void *dk = bench_dev_alloc(bytes), *dv = bench_dev_alloc(bytes), *dh = bench_dev_alloc(bytes);
  void *dm = bench_dev_alloc(bytes), *dout = bench_dev_alloc(bytes), *dfound = bench_dev_alloc(n);
  bench_h2d(dk, in.keys.data(), bytes);
  bench_h2d(dv, in.vals.data(), bytes);
  bench_h2d(dh, in.hit.data(), bytes);
  bench_h2d(dm, in.miss50.data(), bytes);
  tdm_ctx *c = bench_ctx("cuda", 1);
  tdm_hash *h = nullptr;
  bench_measure(o, base_row("insert", "tandem", "cuda", n, n, 1), (double)n,
                [&] { tdm_hash_destroy(h); h = make_table(c, n, 0.8); },
                [&] { bench_check(tdm_hash_insert(h, dk, dv, n), "insert"); });
  bench_measure(o, base_row("find_hit", "tandem", "cuda", n, n, 1), (double)n, nullptr,
                [&] { bench_check(tdm_hash_find(h, dh, dout, (uint8_t *)dfound, n), "find"); });
  bench_measure(o, base_row("find_miss50", "tandem", "cuda", n, n, 1), (double)n, nullptr,
                [&] { bench_check(tdm_hash_find(h, dm, dout, (uint8_t *)dfound, n), "find"); });
  bench_measure(o, base_row("erase", "tandem", "cuda", n, 0, 1), (double)n,
                [&] {
                  tdm_hash_destroy(h);
                  h = make_table(c, n, 0.8);
                  bench_check(tdm_hash_insert(h, dk, dv, n), "insert");
                },
                [&] {
                  size_t e = 0;
                  bench_check(tdm_hash_erase(h, dh, n, &e), "erase");
                  bench_sink(e);
                });
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);
  for (void *p : {dk, dv, dh, dm, dout, dfound}) bench_dev_free(p);
}
#endif

int bench_hash(const bench_opts &o) {
  if (!o.type.empty() && o.type != "u64")
    fprintf(stderr, "tandem-bench hash: measures u64 keys -> u64 values; --type %s ignored\n", o.type.c_str());
  printf("hash: insert rows: queries = n means created with capacity n (peers: reserve(n)); queries = 0 means "
         "grown from empty (tandem: batches of %zu keys)\n",
         GROW_BATCH);
  for (auto &backend : o.backends) {
    if (backend == "cpu") bench_cpu(o, bench_n(o, 10000000));
#ifdef TANDEM_BENCH_HAVE_CUDA
    if (backend == "cuda") bench_cuda_hash(o);
#endif
  }
  return 0;
}

bench_register reg_hash("hash", bench_hash);

} // namespace
