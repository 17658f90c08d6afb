/*
 * bench_btree.cpp: the "btree" subcommand: tandem's B+ tree against
 * std::lower_bound over the sorted array, an Eytzinger-layout search (written
 * here, below), absl::btree_map, and on a GPU a plain binary-search kernel.
 *
 * Inputs: n distinct uniform random u64 keys (default 1e7) with u64 values;
 * queries (default 1e7): find_hit draws stored keys, find_miss50 (also used
 * for rank and range_count) mixes stored keys and absent keys half and half;
 * range_count's ranges [q, q + 16 * 2^64 / n] hold about 16 keys each.
 * Rows: build, find_hit, find_miss50, rank, range_count; with --peers also
 * build_sort_pairs+pass (our own tdm_sort_pairs of the same input plus one
 * sequential pass, the input copy included: the bound a sort-based build is
 * measured against, timed in alternation with the build, with the median
 * ratio of the rounds on a comment line), range_count timed in alternation
 * with find_miss50 (its ratio on a comment line too), the same for ranges of
 * about 0, 1 and 4 keys (range_count_w0, _w1, _w4), and the batched insert
 * of n/10 new random keys into an n-key tree against absl::btree_map
 * inserting the same keys one by one (both erase the previous run's keys
 * before each run).
 */
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "bench.h"
#include "bench_gen.h"
#include "bench_search.h"

#ifdef TANDEM_BENCH_HAVE_ABSL
#include <absl/container/btree_map.h>
#endif

namespace {

bench_row row_of(const std::string &op, const std::string &impl, const std::string &backend, size_t n,
                 size_t queries, int threads) {
  return bench_make_row("btree", op, impl, backend, "u64", "u64", n, queries, threads);
}

/* Query sets over the stored keys u[0, n) and the absent keys u[n, 2n), with
 * the answers a correct find gives (hit_val; miss_found, miss_val). */
struct inputs {
  std::vector<uint64_t> keys, vals, hit, miss50, hi50, sorted_k, sorted_v, hit_val, miss_val;
  std::vector<uint8_t> miss_found;
};

inputs make_inputs(size_t n, size_t q, uint64_t seed) {
  inputs in;
  std::vector<uint64_t> u = bench_unique_u64(2 * n, seed), r = bench_random_u64(2 * q, seed + 1);
  in.keys.assign(u.begin(), u.begin() + (long)n);
  in.vals = bench_random_u64(n, seed + 2);
  in.hit.resize(q);
  in.miss50.resize(q);
  in.hi50.resize(q);
  in.hit_val.resize(q);
  in.miss_val.resize(q);
  in.miss_found.resize(q);
  uint64_t span = (UINT64_MAX / n) * 16;
  for (size_t i = 0; i < q; i++) {
    in.hit[i] = u[r[i] % n];
    in.hit_val[i] = in.vals[r[i] % n];
    in.miss_found[i] = r[q + i] & 1;
    in.miss50[i] = in.miss_found[i] ? u[r[i] % n] : u[n + r[q + i] % n];
    in.miss_val[i] = in.miss_found[i] ? in.vals[r[i] % n] : 0;
    in.hi50[i] = in.miss50[i] + span < in.miss50[i] ? UINT64_MAX : in.miss50[i] + span;
  }
  std::vector<std::pair<uint64_t, uint64_t>> kv(n);
  for (size_t i = 0; i < n; i++) kv[i] = {in.keys[i], in.vals[i]};
  std::sort(kv.begin(), kv.end());
  in.sorted_k.resize(n);
  in.sorted_v.resize(n);
  for (size_t i = 0; i < n; i++) {
    in.sorted_k[i] = kv[i].first;
    in.sorted_v[i] = kv[i].second;
  }
  return in;
}

/* Checks find results against the expected flags (all found when expect is
 * NULL) and values. */
void verify_find(const char *what, size_t q, const uint8_t *found, const uint64_t *out, const uint8_t *expect,
                 const uint64_t *want) {
  size_t bad = 0;
#pragma omp parallel for reduction(+ : bad) schedule(static)
  for (long i = 0; i < (long)q; i++)
    if (found[i] != (expect ? expect[i] : 1) || out[i] != want[i]) bad++;
  bench_verify(bad == 0, "%s: %zu of %zu queries answered wrongly", what, bad, q);
}

/* rank (lo only: his NULL) or range_count (lo and his[i]) against
 * std::lower_bound / std::upper_bound over the sorted keys. */
void verify_counts(const char *what, const inputs &in, const uint64_t *got, const uint64_t *his) {
  const std::vector<uint64_t> &s = in.sorted_k;
  size_t bad = 0, q = in.miss50.size();
#pragma omp parallel for reduction(+ : bad) schedule(static)
  for (long i = 0; i < (long)q; i++) {
    uint64_t lo = in.miss50[(size_t)i], hi = his ? his[i] : 0;
    uint64_t lb = (uint64_t)(std::lower_bound(s.begin(), s.end(), lo) - s.begin());
    uint64_t want = his ? (lo > hi ? 0 : (uint64_t)(std::upper_bound(s.begin(), s.end(), hi) - s.begin()) - lb) : lb;
    if (got[i] != want) bad++;
  }
  bench_verify(bad == 0, "%s: %zu of %zu answers wrong", what, bad, q);
}

tdm_btree *build(tdm_ctx *c, const uint64_t *k, const uint64_t *v, size_t n) {
  tdm_btree_opts o = {TDM_U64, TDM_U64, TDM_DUP_KEEP_LAST};
  tdm_btree *t = nullptr;
  bench_check(tdm_btree_build(c, &o, k, v, n, &t), "tdm_btree_build");
  return t;
}

void cpu_rows(const bench_opts &o, const inputs &in, size_t n, size_t q) {
  std::vector<uint64_t> out(q), out2(q);
  std::vector<uint8_t> found(q);
  for (int th : bench_thread_list(o, "cpu")) {
    tdm_ctx *c = bench_ctx("cpu", th);
    tdm_btree *t = nullptr;
    auto setup_build = [&] {
      tdm_btree_destroy(t);
      t = nullptr;
    };
    auto run_build = [&] { t = build(c, in.keys.data(), in.vals.data(), n); };
    if (o.peers) {
      /* The bound for a sort-based build: sort the pairs, then one pass;
       * measured in alternation with the build, so that the ratio is not
       * the machine's drift between two rows. */
      std::vector<uint64_t> k2(n), v2(n);
      bench_measure_pair(o, row_of("build", "tandem", "cpu", n, 0, th), (double)n, setup_build, run_build,
                         row_of("build", "tdm_sort_pairs+pass", "cpu", n, 0, th), (double)n, nullptr, [&] {
                           /* The copy is part of the bound: sort_pairs works in place, and a
                            * build leaves its (const) input untouched. */
                           memcpy(k2.data(), in.keys.data(), n * 8);
                           memcpy(v2.data(), in.vals.data(), n * 8);
                           bench_check(tdm_sort_pairs(c, TDM_U64, k2.data(), TDM_U64, v2.data(), n, 0),
                                       "sort_pairs");
                           uint64_t s = 0;
                           for (size_t i = 0; i < n; i++) s += k2[i] ^ v2[i];
                           bench_sink(s);
                         });
    } else {
      bench_measure(o, row_of("build", "tandem", "cpu", n, 0, th), (double)n, setup_build, run_build);
    }
    bench_verify(tdm_btree_size(t) == n && tdm_btree_validate(t) == TDM_OK,
                 "tdm_btree_build (cpu): size %zu of %zu keys, validate: %s", tdm_btree_size(t), n, tdm_last_error());
    bench_measure(o, row_of("find_hit", "tandem", "cpu", n, q, th), (double)q, nullptr, [&] {
      bench_check(tdm_btree_find(t, in.hit.data(), out.data(), found.data(), q), "find");
    });
    verify_find("tdm_btree_find (cpu, hits)", q, found.data(), out.data(), nullptr, in.hit_val.data());
    bench_measure(o, row_of("find_miss50", "tandem", "cpu", n, q, th), (double)q, nullptr, [&] {
      bench_check(tdm_btree_find(t, in.miss50.data(), out.data(), found.data(), q), "find");
    });
    verify_find("tdm_btree_find (cpu, miss50)", q, found.data(), out.data(), in.miss_found.data(),
                in.miss_val.data());
    bench_measure(o, row_of("rank", "tandem", "cpu", n, q, th), (double)q, nullptr, [&] {
      bench_check(tdm_btree_rank(t, in.miss50.data(), out.data(), q), "rank");
    });
    verify_counts("tdm_btree_rank (cpu)", in, out.data(), nullptr);
    auto run_count = [&] {
      bench_check(tdm_btree_range_count(t, in.miss50.data(), in.hi50.data(), out2.data(), q), "range_count");
    };
    if (o.peers) {
      /* range_count against the find of its lower bounds, in alternation:
       * the ratio is the goal, and the two rows are too close for drift. */
      bench_measure_pair(o, row_of("range_count", "tandem", "cpu", n, q, th), (double)q, nullptr, run_count,
                         row_of("find_miss50", "tandem", "cpu", n, q, th), (double)q, nullptr, [&] {
                           bench_check(tdm_btree_find(t, in.miss50.data(), out.data(), found.data(), q), "find");
                         });
      verify_find("tdm_btree_find (cpu, miss50)", q, found.data(), out.data(), in.miss_found.data(),
                  in.miss_val.data());
    } else {
      bench_measure(o, row_of("range_count", "tandem", "cpu", n, q, th), (double)q, nullptr, run_count);
    }
    verify_counts("tdm_btree_range_count (cpu)", in, out2.data(), in.hi50.data());
    if (o.peers) {
      /* Where range_count's time goes: narrower ranges, [lo, lo + w * 2^64
       * / n] (about w keys; w = 0 is [lo, lo], always one leaf), each against
       * find_miss50 in alternation. */
      std::vector<uint64_t> his(q);
      for (int w : {0, 1, 4}) {
        uint64_t span = (UINT64_MAX / n) * (uint64_t)w;
        for (size_t i = 0; i < q; i++)
          his[i] = in.miss50[i] + span < in.miss50[i] ? UINT64_MAX : in.miss50[i] + span;
        char op[32];
        snprintf(op, sizeof op, "range_count_w%d", w);
        bench_measure_pair(
            o, row_of(op, "tandem", "cpu", n, q, th), (double)q, nullptr,
            [&] {
              bench_check(tdm_btree_range_count(t, in.miss50.data(), his.data(), out2.data(), q), "range_count");
            },
            row_of("find_miss50", "tandem", "cpu", n, q, th), (double)q, nullptr, [&] {
              bench_check(tdm_btree_find(t, in.miss50.data(), out.data(), found.data(), q), "find");
            });
        verify_counts(op, in, out2.data(), his.data());
      }
    }
    if (o.peers) {
      /* Batched insert of n / 10 new keys into the n-key tree. */
      size_t m = n / 10;
      std::vector<uint64_t> extra = bench_unique_u64(2 * n, o.seed);
      std::vector<uint64_t> nk(extra.begin() + (long)n, extra.begin() + (long)(n + m)), nv = bench_random_u64(m, 9);
      /* Same protocol as the absl row: before each run, erase the keys the
       * previous run inserted, so every run inserts into an n-key map. */
      bench_measure(o, row_of("insert", "tandem", "cpu", n, m, th), (double)m,
                    [&] { bench_check(tdm_btree_erase(t, nk.data(), m, nullptr), "erase"); },
                    [&] { bench_check(tdm_btree_insert(t, nk.data(), nv.data(), m), "insert"); });
      bench_verify(tdm_btree_size(t) == n + m, "tdm_btree_insert (cpu): size %zu, want %zu", tdm_btree_size(t), n + m);
    }
    tdm_btree_destroy(t);
    tdm_ctx_destroy(c);
  }
  if (!o.peers) return;

  uint64_t *sk = huge_array(n), *sv = huge_array(n);
  memcpy(sk, in.sorted_k.data(), n * 8);
  memcpy(sv, in.sorted_v.data(), n * 8);
  for (int th : bench_thread_list(o, "cpu")) {
    bench_measure(o, row_of("find_hit", "std::lower_bound", "cpu", n, q, th), (double)q, nullptr, [&] {
#pragma omp parallel for num_threads(th) schedule(static)
      for (long i = 0; i < (long)q; i++) {
        const uint64_t *p = std::lower_bound(sk, sk + n, in.hit[i]);
        found[i] = p != sk + n && *p == in.hit[i];
        out[i] = found[i] ? sv[p - sk] : 0;
      }
    });
    verify_find("std::lower_bound (hits)", q, found.data(), out.data(), nullptr, in.hit_val.data());
    bench_measure(o, row_of("find_miss50", "std::lower_bound", "cpu", n, q, th), (double)q, nullptr, [&] {
#pragma omp parallel for num_threads(th) schedule(static)
      for (long i = 0; i < (long)q; i++) {
        const uint64_t *p = std::lower_bound(sk, sk + n, in.miss50[i]);
        found[i] = p != sk + n && *p == in.miss50[i];
        out[i] = found[i] ? sv[p - sk] : 0;
      }
    });
    verify_find("std::lower_bound (miss50)", q, found.data(), out.data(), in.miss_found.data(), in.miss_val.data());
  }
  {
    eytzinger e(sk, sv, n);
    for (int th : bench_thread_list(o, "cpu")) {
      auto run = [&](const std::vector<uint64_t> &qs) {
#pragma omp parallel for num_threads(th) schedule(static)
        for (long i = 0; i < (long)q; i++) {
          size_t k = e.lower(qs[i]);
          found[i] = k != 0 && e.key[k] == qs[i];
          out[i] = found[i] ? e.val[k] : 0;
        }
      };
      bench_measure(o, row_of("find_hit", "eytzinger", "cpu", n, q, th), (double)q, nullptr, [&] { run(in.hit); });
      verify_find("eytzinger (hits)", q, found.data(), out.data(), nullptr, in.hit_val.data());
      bench_measure(o, row_of("find_miss50", "eytzinger", "cpu", n, q, th), (double)q, nullptr,
                    [&] { run(in.miss50); });
      verify_find("eytzinger (miss50)", q, found.data(), out.data(), in.miss_found.data(), in.miss_val.data());
    }
  }
#ifdef TANDEM_BENCH_HAVE_ABSL
  {
    absl::btree_map<uint64_t, uint64_t> m;
    bench_measure(o, row_of("build", "absl::btree_map", "cpu", n, 0, 1), (double)n, [&] { m.clear(); }, [&] {
      for (size_t i = 0; i < n; i++) m.insert({in.keys[i], in.vals[i]});
    });
    for (int th : bench_thread_list(o, "cpu")) {
      auto run = [&](const std::vector<uint64_t> &qs) {
#pragma omp parallel for num_threads(th) schedule(static)
        for (long i = 0; i < (long)q; i++) {
          auto it = m.find(qs[i]);
          found[i] = it != m.end();
          out[i] = found[i] ? it->second : 0;
        }
      };
      bench_measure(o, row_of("find_hit", "absl::btree_map", "cpu", n, q, th), (double)q, nullptr,
                    [&] { run(in.hit); });
      verify_find("absl::btree_map (hits)", q, found.data(), out.data(), nullptr, in.hit_val.data());
      bench_measure(o, row_of("find_miss50", "absl::btree_map", "cpu", n, q, th), (double)q, nullptr,
                    [&] { run(in.miss50); });
      verify_find("absl::btree_map (miss50)", q, found.data(), out.data(), in.miss_found.data(), in.miss_val.data());
    }
    size_t mm = n / 10;
    std::vector<uint64_t> extra = bench_unique_u64(2 * n, o.seed);
    std::vector<uint64_t> nk(extra.begin() + (long)n, extra.begin() + (long)(n + mm)), nv = bench_random_u64(mm, 9);
    bench_measure(o, row_of("insert", "absl::btree_map", "cpu", n, mm, 1), (double)mm,
                  [&] {
                    for (size_t i = 0; i < mm; i++) m.erase(nk[i]);
                  },
                  [&] {
                    for (size_t i = 0; i < mm; i++) m.insert({nk[i], nv[i]});
                  });
  }
#endif
  free(sk);
  free(sv);
}

#ifdef TANDEM_BENCH_HAVE_CUDA
const size_t SMALL = 65536, SMALL_CALLS = 100;

/* Device-resident: n keys made on the GPU (key j holds bench_value(seed, j)),
 * q queries of each kind by the formulas of bench_gen.h, the sorted copy the
 * binary-search peer and the checks use sorted by CUB on the GPU. Every
 * result is checked on the GPU. */
void cuda_rows(const bench_opts &o, size_t n, size_t q) {
  uint64_t seed = o.seed;
  size_t b8 = n * 8, q8 = q * 8;
  uint64_t *dk = (uint64_t *)bench_dev_alloc(b8), *dv = (uint64_t *)bench_dev_alloc(b8);
  uint64_t *ds = (uint64_t *)bench_dev_alloc(b8), *dsv = (uint64_t *)bench_dev_alloc(b8);
  uint64_t *dh = (uint64_t *)bench_dev_alloc(q8), *dm = (uint64_t *)bench_dev_alloc(q8);
  uint64_t *dhi = (uint64_t *)bench_dev_alloc(q8), *dout = (uint64_t *)bench_dev_alloc(q8);
  uint8_t *df = (uint8_t *)bench_dev_alloc(q);
  bench_gpu_keys(dk, n, seed, 0);
  bench_gpu_values(dv, n, seed);
  bench_gpu_queries(dh, q, seed, n, false);
  bench_gpu_queries(dm, q, seed, n, true);
  bench_gpu_add_span(dhi, dm, q, (UINT64_MAX / n) * 16);
  {
    /* The sorted copy: CUB pair sort from copies of the keys and values. */
    uint64_t *ka = (uint64_t *)bench_dev_alloc(b8), *va = (uint64_t *)bench_dev_alloc(b8);
    bench_d2d(ds, dk, b8);
    bench_d2d(dsv, dv, b8);
    size_t tb = bench_cub_temp_bytes(n, 8, true);
    void *temp = bench_dev_alloc(tb);
    if (bench_cub_sort(temp, tb, ds, ka, dsv, va, n, 8)) {
      bench_d2d(ds, ka, b8);
      bench_d2d(dsv, va, b8);
    }
    bench_dev_free(temp);
    bench_dev_free(ka);
    bench_dev_free(va);
  }
  bench_gpu_gather_mops(o, n * 16, q);
  auto check_find = [&](const char *what, size_t nq, bool miss50) {
    size_t bad = bench_gpu_check_find(seed, n, nq, miss50, df, dout, 1);
    bench_verify(bad == 0, "%s: %zu of %zu queries answered wrongly", what, bad, nq);
  };
  const std::string tandem = "tandem";
  size_t sn = std::min(q, SMALL);

  tdm_ctx *c = bench_ctx("cuda", 1);
  tdm_btree *t = nullptr;
  bench_measure(o, row_of("build", tandem, "cuda", n, 0, 1), (double)n, [&] { tdm_btree_destroy(t); t = nullptr; },
                [&] { t = build(c, dk, dv, n); });
  bench_verify(tdm_btree_size(t) == n, "tdm_btree_build (cuda): size %zu of %zu keys", tdm_btree_size(t), n);
  bench_measure(o, row_of("find_hit", tandem, "cuda", n, q, 1), (double)q, nullptr,
                [&] { bench_check(tdm_btree_find(t, dh, dout, df, q), "find"); });
  check_find("tdm_btree_find (cuda, hits)", q, false);
  bench_measure(o, row_of("find_miss50", tandem, "cuda", n, q, 1), (double)q, nullptr,
                [&] { bench_check(tdm_btree_find(t, dm, dout, df, q), "find"); });
  check_find("tdm_btree_find (cuda, miss50)", q, true);
  bench_measure(o, row_of("find_hit", tandem, "cuda", n, sn, 1), (double)(sn * SMALL_CALLS), nullptr, [&] {
    for (size_t i = 0; i < SMALL_CALLS; i++) bench_check(tdm_btree_find(t, dh, dout, df, sn), "find (small)");
  });
  check_find("tdm_btree_find (cuda, small batch)", sn, false);
  bench_measure(o, row_of("rank", tandem, "cuda", n, q, 1), (double)q, nullptr,
                [&] { bench_check(tdm_btree_rank(t, dm, dout, q), "rank"); });
  size_t bad = bench_gpu_check_rank(ds, n, dm, dout, q);
  bench_verify(bad == 0, "tdm_btree_rank (cuda): %zu of %zu answers wrong", bad, q);
  bench_measure(o, row_of("range_count", tandem, "cuda", n, q, 1), (double)q, nullptr,
                [&] { bench_check(tdm_btree_range_count(t, dm, dhi, dout, q), "range_count"); });
  bad = bench_gpu_check_range_count(ds, n, dm, dhi, dout, q);
  bench_verify(bad == 0, "tdm_btree_range_count (cuda): %zu of %zu answers wrong", bad, q);
  tdm_btree_destroy(t);
  tdm_ctx_destroy(c);

  if (o.peers) {
    bench_measure(o, row_of("find_hit", "binary_search", "cuda", n, q, 1), (double)q, nullptr,
                  [&] { bench_gpu_binsearch(ds, dsv, n, dh, dout, df, q); });
    check_find("binary search (hits)", q, false);
    bench_measure(o, row_of("find_miss50", "binary_search", "cuda", n, q, 1), (double)q, nullptr,
                  [&] { bench_gpu_binsearch(ds, dsv, n, dm, dout, df, q); });
    check_find("binary search (miss50)", q, true);
    bench_measure(o, row_of("find_hit", "binary_search", "cuda", n, sn, 1), (double)(sn * SMALL_CALLS), nullptr,
                  [&] {
                    for (size_t i = 0; i < SMALL_CALLS; i++) bench_gpu_binsearch(ds, dsv, n, dh, dout, df, sn);
                  });
    check_find("binary search (small batch)", sn, false);
  }
  for (void *p : {(void *)dk, (void *)dv, (void *)ds, (void *)dsv, (void *)dh, (void *)dm, (void *)dhi, (void *)dout,
                  (void *)df})
    bench_dev_free(p);
}
#endif

int bench_btree(const bench_opts &o) {
  if (!o.type.empty() && o.type != "u64") {
    fprintf(stderr, "tandem-bench btree: measures u64 keys and values only\n");
    return 2;
  }
  for (auto &backend : o.backends) {
    bool cuda = backend == "cuda";
    size_t n = bench_n(o, cuda ? (size_t)1 << 27 : 10000000), q = o.queries ? o.queries : n;
    if (!cuda) {
      inputs in = make_inputs(n, q, o.seed);
      cpu_rows(o, in, n, q);
    }
#ifdef TANDEM_BENCH_HAVE_CUDA
    if (cuda) cuda_rows(o, n, q); /* inputs made on the GPU */
#endif
  }
  return 0;
}

bench_register reg("btree", bench_btree);

} // namespace
