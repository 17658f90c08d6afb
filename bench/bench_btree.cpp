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
 * measured against) and the batched insert of n/10 new random keys into an
 * n-key tree against absl::btree_map inserting the same keys one by one (both
 * erase the previous run's keys before each run).
 */
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <sys/mman.h>

#include "bench.h"

#ifdef TANDEM_BENCH_HAVE_ABSL
#include <absl/container/btree_map.h>
#endif

#ifdef TANDEM_BENCH_HAVE_CUDA
/* bench_btree_cuda.cu: lower_bound by binary search, one thread per query, on
 * device arrays; writes 1 to found[i] when keys holds q[i]. */
void bench_binsearch_u64(const uint64_t *d_keys, size_t n, const uint64_t *d_q, uint8_t *d_found, size_t nq);
#endif

namespace {

/* A 2 MiB aligned array advised as huge pages: the peers get the TLB reach
 * tandem's node array gets, so the comparison is about the search alone. */
uint64_t *huge_array(size_t n) {
  size_t bytes = (n * 8 + ((size_t)2 << 20) - 1) & ~(((size_t)2 << 20) - 1);
  uint64_t *p = (uint64_t *)aligned_alloc((size_t)2 << 20, bytes);
  if (!p) {
    fprintf(stderr, "tandem-bench btree: out of memory for a peer array\n");
    exit(1);
  }
  (void)madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

bench_row row_of(const std::string &op, const std::string &impl, const std::string &backend, size_t n,
                 size_t queries, int threads) {
  return bench_make_row("btree", op, impl, backend, "u64", "u64", n, queries, threads);
}

/* Eytzinger (BFS) layout of a sorted array: node k has children 2k and
 * 2k + 1, 1-based, in a 64-byte aligned array so the 16 descendants four
 * levels below k (slots 16k .. 16k + 15) fill exactly two cache lines. The
 * search is branchless and prefetches those two lines every step. */
struct eytzinger {
  uint64_t *key = nullptr, *val = nullptr;
  size_t n = 0;
  void fill(const uint64_t *sk, const uint64_t *sv, size_t &i, size_t k) {
    if (k > n) return;
    fill(sk, sv, i, 2 * k);
    key[k] = sk[i];
    val[k] = sv[i];
    i++;
    fill(sk, sv, i, 2 * k + 1);
  }
  eytzinger(const uint64_t *sk, const uint64_t *sv, size_t n_) : n(n_) {
    key = huge_array(n + 1); /* prefetches past the end are harmless */
    val = huge_array(n + 1);
    key[0] = val[0] = 0;
    size_t i = 0;
    fill(sk, sv, i, 1);
  }
  ~eytzinger() {
    free(key);
    free(val);
  }
  eytzinger(const eytzinger &) = delete;
  eytzinger &operator=(const eytzinger &) = delete;
  /* Slot of the first key >= x, 0 when none. */
  size_t lower(uint64_t x) const {
    size_t k = 1;
    const uint64_t *a = key;
    while (k <= n) {
      __builtin_prefetch(a + 16 * k);
      __builtin_prefetch(a + 16 * k + 8);
      k = 2 * k + (a[k] < x);
    }
    k >>= __builtin_ffsll((long long)~k);
    return k;
  }
};

/* Query sets over the stored keys u[0, n) and the absent keys u[n, 2n). */
struct inputs {
  std::vector<uint64_t> keys, vals, hit, miss50, hi50, sorted_k, sorted_v;
};

inputs make_inputs(size_t n, size_t q, uint64_t seed) {
  inputs in;
  std::vector<uint64_t> u = bench_unique_u64(2 * n, seed), r = bench_random_u64(2 * q, seed + 1);
  in.keys.assign(u.begin(), u.begin() + (long)n);
  in.vals = bench_random_u64(n, seed + 2);
  in.hit.resize(q);
  in.miss50.resize(q);
  in.hi50.resize(q);
  uint64_t span = (UINT64_MAX / n) * 16;
  for (size_t i = 0; i < q; i++) {
    in.hit[i] = u[r[i] % n];
    in.miss50[i] = (r[q + i] & 1) ? u[r[i] % n] : u[n + r[q + i] % n];
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
    bench_measure(o, row_of("build", "tandem", "cpu", n, 0, th), (double)n,
                  [&] { tdm_btree_destroy(t); t = nullptr; },
                  [&] { t = build(c, in.keys.data(), in.vals.data(), n); });
    bench_measure(o, row_of("find_hit", "tandem", "cpu", n, q, th), (double)q, nullptr, [&] {
      bench_check(tdm_btree_find(t, in.hit.data(), out.data(), found.data(), q), "find");
    });
    bench_measure(o, row_of("find_miss50", "tandem", "cpu", n, q, th), (double)q, nullptr, [&] {
      bench_check(tdm_btree_find(t, in.miss50.data(), out.data(), found.data(), q), "find");
    });
    bench_measure(o, row_of("rank", "tandem", "cpu", n, q, th), (double)q, nullptr, [&] {
      bench_check(tdm_btree_rank(t, in.miss50.data(), out.data(), q), "rank");
    });
    bench_measure(o, row_of("range_count", "tandem", "cpu", n, q, th), (double)q, nullptr, [&] {
      bench_check(tdm_btree_range_count(t, in.miss50.data(), in.hi50.data(), out.data(), q), "range_count");
    });
    if (o.peers) {
      /* The bound for a sort-based build: sort the pairs, then one pass. */
      std::vector<uint64_t> k2, v2;
      k2.resize(n);
      v2.resize(n);
      bench_measure(o, row_of("build", "tdm_sort_pairs+pass", "cpu", n, 0, th), (double)n, nullptr, [&] {
                      /* The copy is part of the bound: sort_pairs works in place, and a
                       * build leaves its (const) input untouched. */
                      memcpy(k2.data(), in.keys.data(), n * 8);
                      memcpy(v2.data(), in.vals.data(), n * 8);
                      bench_check(tdm_sort_pairs(c, TDM_U64, k2.data(), TDM_U64, v2.data(), n, 0), "sort_pairs");
                      uint64_t s = 0;
                      for (size_t i = 0; i < n; i++) s += k2[i] ^ v2[i];
                      bench_sink(s);
                    });
      /* Batched insert of n / 10 new keys into the n-key tree. */
      size_t m = n / 10;
      std::vector<uint64_t> extra = bench_unique_u64(2 * n, o.seed);
      std::vector<uint64_t> nk(extra.begin() + (long)n, extra.begin() + (long)(n + m)), nv = bench_random_u64(m, 9);
      /* Same protocol as the absl row: before each run, erase the keys the
       * previous run inserted, so every run inserts into an n-key map. */
      bench_measure(o, row_of("insert", "tandem", "cpu", n, m, th), (double)m,
                    [&] { bench_check(tdm_btree_erase(t, nk.data(), m, nullptr), "erase"); },
                    [&] { bench_check(tdm_btree_insert(t, nk.data(), nv.data(), m), "insert"); });
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
    bench_measure(o, row_of("find_miss50", "std::lower_bound", "cpu", n, q, th), (double)q, nullptr, [&] {
#pragma omp parallel for num_threads(th) schedule(static)
      for (long i = 0; i < (long)q; i++) {
        const uint64_t *p = std::lower_bound(sk, sk + n, in.miss50[i]);
        found[i] = p != sk + n && *p == in.miss50[i];
        out[i] = found[i] ? sv[p - sk] : 0;
      }
    });
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
      bench_measure(o, row_of("find_miss50", "eytzinger", "cpu", n, q, th), (double)q, nullptr,
                    [&] { run(in.miss50); });
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
      bench_measure(o, row_of("find_miss50", "absl::btree_map", "cpu", n, q, th), (double)q, nullptr,
                    [&] { run(in.miss50); });
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
void cuda_rows(const bench_opts &o, const inputs &in, size_t n, size_t q) {
  tdm_ctx *c = bench_ctx("cuda", 1);
  size_t b8 = n * 8, q8 = q * 8;
  uint64_t *dk = (uint64_t *)bench_dev_alloc(b8), *dv = (uint64_t *)bench_dev_alloc(b8);
  uint64_t *dq = (uint64_t *)bench_dev_alloc(q8), *dq2 = (uint64_t *)bench_dev_alloc(q8);
  uint64_t *dout = (uint64_t *)bench_dev_alloc(q8), *ds = (uint64_t *)bench_dev_alloc(b8);
  uint8_t *df = (uint8_t *)bench_dev_alloc(q);
  bench_h2d(dk, in.keys.data(), b8);
  bench_h2d(dv, in.vals.data(), b8);
  bench_h2d(ds, in.sorted_k.data(), b8);
  tdm_btree *t = nullptr;
  bench_measure(o, row_of("build", "tandem", "cuda", n, 0, 1), (double)n, [&] { tdm_btree_destroy(t); t = nullptr; },
                [&] { t = build(c, dk, dv, n); });
  bench_h2d(dq, in.hit.data(), q8);
  bench_measure(o, row_of("find_hit", "tandem", "cuda", n, q, 1), (double)q, nullptr,
                [&] { bench_check(tdm_btree_find(t, dq, dout, df, q), "find"); });
  if (o.peers)
    bench_measure(o, row_of("find_hit", "binary_search", "cuda", n, q, 1), (double)q, nullptr, [&] {
      bench_binsearch_u64(ds, n, dq, df, q);
      bench_dev_sync();
    });
  bench_h2d(dq, in.miss50.data(), q8);
  bench_h2d(dq2, in.hi50.data(), q8);
  bench_measure(o, row_of("find_miss50", "tandem", "cuda", n, q, 1), (double)q, nullptr,
                [&] { bench_check(tdm_btree_find(t, dq, dout, df, q), "find"); });
  if (o.peers)
    bench_measure(o, row_of("find_miss50", "binary_search", "cuda", n, q, 1), (double)q, nullptr, [&] {
      bench_binsearch_u64(ds, n, dq, df, q);
      bench_dev_sync();
    });
  bench_measure(o, row_of("rank", "tandem", "cuda", n, q, 1), (double)q, nullptr,
                [&] { bench_check(tdm_btree_rank(t, dq, dout, q), "rank"); });
  bench_measure(o, row_of("range_count", "tandem", "cuda", n, q, 1), (double)q, nullptr,
                [&] { bench_check(tdm_btree_range_count(t, dq, dq2, dout, q), "range_count"); });
  tdm_btree_destroy(t);
  bench_dev_free(dk); bench_dev_free(dv); bench_dev_free(dq); bench_dev_free(dq2);
  bench_dev_free(dout); bench_dev_free(ds); bench_dev_free(df);
  tdm_ctx_destroy(c);
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
    inputs in = make_inputs(n, q, o.seed);
    if (!cuda) cpu_rows(o, in, n, q);
#ifdef TANDEM_BENCH_HAVE_CUDA
    if (cuda) cuda_rows(o, in, n, q);
#endif
  }
  return 0;
}

bench_register reg("btree", bench_btree);

} // namespace
