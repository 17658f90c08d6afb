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
#include "bench_gen.h"

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

/* Prints a structure's memory per entry from two resident-size differences
 * (bytes gained while filling with capacity n, bytes returned when the grown
 * one was freed). Small structures live in pages the process already had, so
 * a difference can be zero or negative: then the line says so instead of
 * printing a wrapped-around number. */
void print_memory(const char *who, size_t n, long long filled, long long freed, const char *how) {
  if (filled <= 0 || freed <= 0) {
    bench_printf("%-10s   memory: %s, %zu keys: too small to see in the resident size\n", "", who, n);
    return;
  }
  bench_printf("%-10s   memory: %s holds %zu keys in %.1f bytes per entry (%s; %.1f when grown)\n", "", who, n,
         (double)filled / (double)n, how, (double)freed / (double)n);
}

bench_row base_row(const std::string &op, const std::string &impl, const std::string &backend, size_t n,
                   size_t queries, int threads) {
  bench_row r = bench_make_row("hash", op, impl, backend, "u64", "u64", n, queries, threads);
  /* Insert rows of one impl differ only in the queries column (the capacity
   * hint): the note says it in words. */
  if (op == "insert")
    r.note = queries == n   ? "created with capacity n"
             : queries == 0 ? "grown from empty"
                            : "batches of " + std::to_string(queries) + " keys";
  return r;
}

/* The inputs: n keys to insert with values, a shuffled all-hit query set and
 * a shuffled half-miss query set (misses drawn from n other keys). A key's
 * value is a function of the key (value_of), so every find result can be
 * checked; miss_found says which miss50 queries are stored keys. */
struct inputs {
  std::vector<uint64_t> keys, vals, hit, miss50;
  std::vector<uint8_t> miss_found;
};

uint64_t value_of(uint64_t key) { return bench_fin(key ^ 0x5eed5eed5eedull); }

inputs make_inputs(size_t n, uint64_t seed) {
  inputs in;
  std::vector<uint64_t> all = bench_unique_u64(2 * n, seed), r = bench_random_u64(2 * n, seed + 1);
  in.keys.assign(all.begin(), all.begin() + (long)n);
  in.vals.resize(n);
  for (size_t i = 0; i < n; i++) in.vals[i] = value_of(in.keys[i]);
  in.hit = in.keys;
  for (size_t i = n; i > 1; i--) std::swap(in.hit[i - 1], in.hit[r[i] % i]);
  in.miss50.resize(n);
  in.miss_found.resize(n);
  for (size_t i = 0; i < n; i++) {
    in.miss_found[i] = r[n + i] & 1;
    in.miss50[i] = in.miss_found[i] ? in.hit[i] : all[n + i];
  }
  return in;
}

/* Checks find results: found[i] as expected (all found when expect is NULL)
 * and out[i] the key's value when found, all-zero bits when not. out may be
 * NULL (peers that only count). */
void verify_find(const char *what, const std::vector<uint64_t> &q, const uint8_t *found, const uint64_t *out,
                 const uint8_t *expect) {
  size_t bad = 0, n = q.size();
#pragma omp parallel for reduction(+ : bad) schedule(static)
  for (long i = 0; i < (long)n; i++) {
    uint8_t want = expect ? expect[i] : 1;
    if (found[i] != want || (out && out[i] != (want ? value_of(q[(size_t)i]) : 0))) bad++;
  }
  bench_verify(bad == 0, "%s: %zu of %zu queries answered wrongly", what, bad, n);
}

struct ratios {
  double absl_find_hit = 0, absl_find_miss = 0, absl_insert = 0, absl_grow = 0;
};

void print_ratio(const bench_row &r, double absl, double gather) {
  if (absl <= 0 && gather <= 0) return; /* no peer measured, no ceiling: nothing to compare */
  bench_printf("%-10s   -> ", "");
  if (absl > 0) bench_printf("%.2fx absl::flat_hash_map (1 thread)", r.median / absl);
  if (gather > 0) bench_printf("%s%.0f%% of the %.1f M/s gather ceiling at %d thread(s)", absl > 0 ? ", " : "",
                         100.0 * r.median / gather, gather, r.threads);
  bench_printf("\n");
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
    long long before = (long long)rss_bytes();
    m.reset();
    malloc_trim(0);
    long long freed = before - (long long)rss_bytes();
    m.reset(new Map());
    long long at = (long long)rss_bytes();
    m->reserve(n);
    for (size_t i = 0; i < n; i++) (*m)[in.keys[i]] = in.vals[i];
    print_memory(name, n, (long long)rss_bytes() - at, freed, "after reserve(n)");
  }
  std::vector<uint8_t> found(n);
  std::vector<uint64_t> out(n);
  auto find_all = [&](const std::vector<uint64_t> &q) {
    for (size_t i = 0; i < n; i++) {
      auto it = m->find(q[i]);
      found[i] = it != m->end();
      out[i] = found[i] ? it->second : 0;
    }
  };
  r = bench_measure(o, base_row("find_hit", name, "cpu", n, n, 1), (double)n, nullptr, [&] { find_all(in.hit); });
  verify_find(name, in.hit, found.data(), out.data(), nullptr);
  if (rt) rt->absl_find_hit = r.median;
  r = bench_measure(o, base_row("find_miss50", name, "cpu", n, n, 1), (double)n, nullptr,
                    [&] { find_all(in.miss50); });
  verify_find(name, in.miss50, found.data(), out.data(), in.miss_found.data());
  if (rt) rt->absl_find_miss = r.median;
  bench_measure(o, base_row("erase", name, "cpu", n, 0, 1), (double)n,
                [&] {
                  m.reset(new Map());
                  m->reserve(n);
                  for (size_t i = 0; i < n; i++) (*m)[in.keys[i]] = in.vals[i];
                },
                [&] { for (size_t i = 0; i < n; i++) sink += m->erase(in.hit[i]); });
  bench_verify(m->empty(), "%s: %zu keys left after erasing all", name, m->size());
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
    bench_printf("(absl::flat_hash_map not found at configure time: install libabsl-dev)\n");
#endif
    bench_peer<std::unordered_map<uint64_t, uint64_t>>(o, "std::unordered_map", in, n, nullptr);
  }

  for (size_t ti = 0; ti < threads.size(); ti++) {
    int t = threads[ti];
    tdm_ctx *c = bench_ctx("cpu", t);
    tdm_hash *h = nullptr;
    bench_row r;
    r = bench_measure(o, base_row("insert", "tandem", "cpu", n, n, t), (double)n,
                      [&] { tdm_hash_destroy(h); h = bench_u64_table(c, n, 0); },
                      [&] { bench_check(tdm_hash_insert(h, in.keys.data(), in.vals.data(), n), "insert"); });
    bench_verify(tdm_hash_size(h) == n, "tdm_hash_insert (cpu): size %zu after inserting %zu keys", tdm_hash_size(h), n);
    print_ratio(r, rt.absl_insert, 0);
    r = bench_measure(o, base_row("insert", "tandem", "cpu", n, 0, t), (double)n,
                      [&] { tdm_hash_destroy(h); h = bench_u64_table(c, 0, 0); },
                      [&] {
                        for (size_t i = 0; i < n; i += GROW_BATCH)
                          bench_check(tdm_hash_insert(h, in.keys.data() + i, in.vals.data() + i,
                                                      std::min(GROW_BATCH, n - i)),
                                      "insert");
                      });
    bench_verify(tdm_hash_size(h) == n, "tdm_hash_insert (cpu, grown): size %zu after inserting %zu keys",
                 tdm_hash_size(h), n);
    print_ratio(r, rt.absl_grow, 0);
    if (ti == 0) {
      malloc_trim(0);
      long long before = (long long)rss_bytes();
      tdm_hash_destroy(h);
      malloc_trim(0);
      bench_check(tdm_ctx_trim(c), "tdm_ctx_trim"); /* the kept mappings go too: measure the table */
      long long freed = before - (long long)rss_bytes();
      long long at = (long long)rss_bytes();
      h = bench_u64_table(c, n, 0);
      bench_check(tdm_hash_insert(h, in.keys.data(), in.vals.data(), n), "insert");
      print_memory("tandem", n, (long long)rss_bytes() - at, freed,
                   "capacity n, default max load 0.8");
    } else {
      tdm_hash_destroy(h);
      h = bench_u64_table(c, n, 0);
      bench_check(tdm_hash_insert(h, in.keys.data(), in.vals.data(), n), "insert");
    }
    r = bench_measure(o, base_row("find_hit", "tandem", "cpu", n, n, t), (double)n, nullptr, [&] {
      bench_check(tdm_hash_find(h, in.hit.data(), out.data(), found.data(), n), "find");
    });
    verify_find("tdm_hash_find (cpu, hits)", in.hit, found.data(), out.data(), nullptr);
    print_ratio(r, rt.absl_find_hit, gather[ti]);
    r = bench_measure(o, base_row("find_miss50", "tandem", "cpu", n, n, t), (double)n, nullptr, [&] {
      bench_check(tdm_hash_find(h, in.miss50.data(), out.data(), found.data(), n), "find");
    });
    verify_find("tdm_hash_find (cpu, miss50)", in.miss50, found.data(), out.data(), in.miss_found.data());
    print_ratio(r, rt.absl_find_miss, gather[ti]);
    bench_measure(o, base_row("erase", "tandem", "cpu", n, 0, t), (double)n,
                  [&] {
                    tdm_hash_destroy(h);
                    h = bench_u64_table(c, n, 0);
                    bench_check(tdm_hash_insert(h, in.keys.data(), in.vals.data(), n), "insert");
                  },
                  [&] {
                    size_t e = 0;
                    bench_check(tdm_hash_erase(h, in.hit.data(), n, &e), "erase");
                    bench_verify(e == n, "tdm_hash_erase (cpu): erased %zu of %zu keys", e, n);
                  });
    bench_verify(tdm_hash_size(h) == 0, "tdm_hash_erase (cpu): size %zu after erasing all", tdm_hash_size(h));
    tdm_hash_destroy(h);
    tdm_ctx_destroy(c);
  }
  bench_sink(out[n / 2] + found[n / 3]);
}

#ifdef TANDEM_BENCH_HAVE_CUDA
const size_t SMALL = 65536, SMALL_CALLS = 100;

/* Device-resident u64 -> u64 at load 0.8. Tables have a power-of-two slot
 * count, so --n N (default 2^27) means a table of 2^floor(log2 N) slots
 * filled to load 0.8: 0.8 * 2^27 = 107374182 keys for N = 2^27. Inputs are
 * made on the GPU (bench_gen.h): key j's value is j; hit queries draw stored
 * keys at random, miss50 queries are stored or absent by a coin flip. Every
 * result is checked on the GPU against those formulas. Rows: insert into a
 * table created for n keys, find_hit, find_miss50, erase of every key; the
 * same with the linear-probing baseline and cuco::static_map at loads 0.8
 * and 0.5 (--peers; cuco when built with cuCollections); small batches of
 * 2^16 (100 calls per timed run) for insert and find. */
void bench_cuda_hash(const bench_opts &o) {
  size_t want = bench_n(o, (size_t)1 << 27), slots = 16;
  while (slots * 2 <= want) slots *= 2;
  size_t n = (size_t)((double)slots * 0.8);
  uint64_t seed = o.seed;
  bench_printf("hash cuda: %zu keys in a table of %zu slots (load 0.8), device-resident arrays made on the GPU\n", n,
         slots);
  size_t bytes = n * 8;
  uint64_t *dk = (uint64_t *)bench_dev_alloc(bytes), *dv = (uint64_t *)bench_dev_alloc(bytes);
  uint64_t *dh = (uint64_t *)bench_dev_alloc(bytes), *dm = (uint64_t *)bench_dev_alloc(bytes);
  uint64_t *dout = (uint64_t *)bench_dev_alloc(bytes);
  uint8_t *dfound = (uint8_t *)bench_dev_alloc(n);
  bench_gpu_keys(dk, n, seed, 0);
  bench_gpu_iota(dv, n);
  bench_gpu_queries(dh, n, seed, n, false);
  bench_gpu_queries(dm, n, seed, n, true);
  bench_gpu_memcpy_gbps(o, slots * 16);
  bench_gpu_gather_mops(o, slots * 16, n);
  auto check_find = [&](const char *what, size_t nq, bool miss50) {
    size_t bad = bench_gpu_check_find(seed, n, nq, miss50, dfound, dout, 0);
    bench_verify(bad == 0, "%s: %zu of %zu queries answered wrongly", what, bad, nq);
  };
  const std::string tandem = "tandem";
  size_t sn = std::min(n, SMALL), calls = std::min(SMALL_CALLS, n / sn);

  tdm_ctx *c = bench_ctx("cuda", 1);
  tdm_hash *h = nullptr;
  bench_measure(o, base_row("insert", tandem, "cuda", n, n, 1), (double)n,
                [&] { tdm_hash_destroy(h); h = bench_u64_table(c, n, 0.8); },
                [&] { bench_check(tdm_hash_insert(h, dk, dv, n), "insert"); });
  bench_verify(tdm_hash_size(h) == n, "tdm_hash_insert (cuda): size %zu after inserting %zu keys", tdm_hash_size(h), n);
  bench_measure(o, base_row("find_hit", tandem, "cuda", n, n, 1), (double)n, nullptr,
                [&] { bench_check(tdm_hash_find(h, dh, dout, dfound, n), "find"); });
  check_find("tdm_hash_find (cuda, hits)", n, false);
  bench_measure(o, base_row("find_miss50", tandem, "cuda", n, n, 1), (double)n, nullptr,
                [&] { bench_check(tdm_hash_find(h, dm, dout, dfound, n), "find"); });
  check_find("tdm_hash_find (cuda, miss50)", n, true);
  /* Small batches against the full table: per-call overhead. */
  bench_measure(o, base_row("find_hit", tandem, "cuda", n, sn, 1), (double)(sn * calls), nullptr, [&] {
    for (size_t i = 0; i < calls; i++) bench_check(tdm_hash_find(h, dh, dout, dfound, sn), "find (small)");
  });
  check_find("tdm_hash_find (cuda, small batch)", sn, false);
  bench_measure(o, base_row("erase", tandem, "cuda", n, 0, 1), (double)n,
                [&] {
                  tdm_hash_destroy(h);
                  h = bench_u64_table(c, n, 0.8);
                  bench_check(tdm_hash_insert(h, dk, dv, n), "insert");
                },
                [&] {
                  size_t e = 0;
                  bench_check(tdm_hash_erase(h, dk, n, &e), "erase");
                  bench_verify(e == n, "tdm_hash_erase (cuda): erased %zu of %zu keys", e, n);
                });
  bench_verify(tdm_hash_size(h) == 0, "tdm_hash_erase (cuda): size %zu after erasing all", tdm_hash_size(h));
  /* Small inserts: calls batches of sn new keys into a table created for all
   * of them (no growth). */
  bench_measure(o, base_row("insert", tandem, "cuda", sn * calls, sn, 1), (double)(sn * calls),
                [&] { tdm_hash_destroy(h); h = bench_u64_table(c, sn * calls, 0.8); },
                [&] {
                  for (size_t i = 0; i < calls; i++)
                    bench_check(tdm_hash_insert(h, dk + i * sn, dv + i * sn, sn), "insert (small)");
                });
  bench_verify(tdm_hash_size(h) == sn * calls, "tdm_hash_insert (cuda, small batches): size %zu, want %zu",
               tdm_hash_size(h), sn * calls);
  tdm_hash_destroy(h);
  tdm_ctx_destroy(c);

  if (o.peers) {
    void *t = bench_dev_alloc(slots * 16);
    bench_measure(o, base_row("insert", "linear_probing", "cuda", n, n, 1), (double)n,
                  [&] { bench_lp_clear(t, slots); }, [&] { bench_lp_insert(t, slots, dk, dv, n); });
    bench_measure(o, base_row("find_hit", "linear_probing", "cuda", n, n, 1), (double)n, nullptr,
                  [&] { bench_lp_find(t, slots, dh, dout, dfound, n); });
    check_find("linear probing find (hits)", n, false);
    bench_measure(o, base_row("find_miss50", "linear_probing", "cuda", n, n, 1), (double)n, nullptr,
                  [&] { bench_lp_find(t, slots, dm, dout, dfound, n); });
    check_find("linear probing find (miss50)", n, true);
    bench_measure(o, base_row("find_hit", "linear_probing", "cuda", n, sn, 1), (double)(sn * calls), nullptr, [&] {
      for (size_t i = 0; i < calls; i++) bench_lp_find(t, slots, dh, dout, dfound, sn);
    });
    check_find("linear probing find (small batch)", sn, false);
    bench_dev_free(t);
#ifdef TANDEM_BENCH_HAVE_CUCO
    /* cuco::static_map over the same keys and queries: at load 0.8 (impl
     * "cuco", the figure beside tandem's rows) and at load 0.5 (a table of
     * 2n slots: what cuco gains from room). */
    for (double load : {0.8, 0.5}) {
      const std::string impl = load == 0.8 ? "cuco" : "cuco(load0.5)";
      bench_cuco_map *m = bench_cuco_create(n, load);
      bench_printf("hash cuda: cuco::static_map of %zu slots for %zu keys (load %.2f)\n", bench_cuco_capacity(m), n,
                   (double)n / (double)bench_cuco_capacity(m));
      bench_measure(o, base_row("insert", impl, "cuda", n, n, 1), (double)n, [&] { bench_cuco_clear(m); },
                    [&] { bench_cuco_insert(m, dk, dv, n); });
      bench_measure(o, base_row("find_hit", impl, "cuda", n, n, 1), (double)n, nullptr,
                    [&] { bench_cuco_find(m, dh, dout, n); });
      bench_cuco_found(dout, dfound, n);
      check_find((impl + " find (hits)").c_str(), n, false);
      bench_measure(o, base_row("find_miss50", impl, "cuda", n, n, 1), (double)n, nullptr,
                    [&] { bench_cuco_find(m, dm, dout, n); });
      bench_cuco_found(dout, dfound, n);
      check_find((impl + " find (miss50)").c_str(), n, true);
      if (load == 0.8) {
        bench_measure(o, base_row("find_hit", impl, "cuda", n, sn, 1), (double)(sn * calls), nullptr, [&] {
          for (size_t i = 0; i < calls; i++) bench_cuco_find(m, dh, dout, sn);
        });
        bench_cuco_found(dout, dfound, sn);
        check_find((impl + " find (small batch)").c_str(), sn, false);
      }
      bench_cuco_destroy(m);
    }
#else
    bench_printf("hash cuda: no cuco peer: cuCollections was not found at configure time (scripts/fetch-cuco.sh)\n");
#endif
  }
  for (void *p : {(void *)dk, (void *)dv, (void *)dh, (void *)dm, (void *)dout, (void *)dfound}) bench_dev_free(p);
}
#endif

int bench_hash(const bench_opts &o) {
  if (!o.type.empty() && o.type != "u64")
    fprintf(stderr, "tandem-bench hash: measures u64 keys -> u64 values; --type %s ignored\n", o.type.c_str());
  bench_printf("hash: insert rows: queries = n means created with capacity n (peers: reserve(n)); queries = 0 means "
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
