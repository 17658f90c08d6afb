/*
 * bench_headline.cpp: `tandem-bench headline`, the run a newcomer makes first
 * (`make bench`), and the summary that closes it and `all` runs.
 *
 * Nine steps, each announced by a line "[k/9] what, n=10^7 ..." before it
 * starts, then its rows: tandem at every CPU thread count (default 1 and all
 * cores) and, with --peers, the peers at one thread. The rows are the
 * subcommands' rows (same structure, operation, impl, n and queries), so the
 * CSV reads like theirs; only the headline ones are measured (no ceilings,
 * no paired rows, no skewed inputs), which is what keeps the run to a few
 * minutes. Every result is checked, as everywhere in tandem-bench.
 */
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <unordered_map>

#include "bench.h"
#include "bench_gen.h"
#include "bench_search.h"

#ifdef TANDEM_BENCH_HAVE_HWY
#include <hwy/contrib/sort/vqsort.h>
#include <hwy/targets.h>
#endif
#ifdef TANDEM_BENCH_HAVE_ABSL
#include <absl/container/btree_map.h>
#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#endif

namespace {

const int STEPS = 9;
int step_no;
double step_t0;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/* "10^7" for powers of ten, the digits otherwise. */
std::string count_str(size_t n) {
  size_t p = 1;
  int k = 0;
  while (p < n && k < 19) {
    p *= 10;
    k++;
  }
  if (p == n && k >= 2) return "10^" + std::to_string(k);
  return std::to_string(n);
}

/* Closes the current step with what it cost (inputs, checks and peers
 * included), the figure to look at when choosing --n and --reps. */
void finish_step() {
  if (step_no > 0) bench_printf("    (step %d/%d took %.0f s)\n", step_no, STEPS, now_s() - step_t0);
}

/* Announces the next step before its inputs are made, so a slow step is
 * never a silent one. */
void step(const char *what, size_t n) {
  finish_step();
  bench_sample_load();
  step_no++;
  step_t0 = now_s();
  bench_printf("[%d/%d] %s, n=%s ...\n", step_no, STEPS, what, count_str(n).c_str());
}

bench_row cpu_row(const char *structure, const char *op, const char *impl, const char *kt, const char *vt, size_t n,
                  size_t queries, int threads) {
  return bench_make_row(structure, op, impl, "cpu", kt, vt, n, queries, threads);
}

/* Order-independent fingerprint of a key multiset. */
template <typename K> uint64_t fingerprint(const std::vector<K> &v) {
  uint64_t s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
  for (long i = 0; i < (long)v.size(); i++) s += bench_fin((uint64_t)v[(size_t)i] + 0x9e3779b97f4a7c15ull);
  return s;
}

template <typename K> void verify_sorted(const char *who, const std::vector<K> &v, uint64_t fp) {
  size_t bad = 0;
#pragma omp parallel for reduction(+ : bad) schedule(static)
  for (long i = 1; i < (long)v.size(); i++) bad += v[(size_t)i - 1] > v[(size_t)i];
  bench_verify(bad == 0, "%s n=%zu: %zu keys out of order", who, v.size(), bad);
  bench_verify(fingerprint(v) == fp, "%s n=%zu: the keys are not the input's keys", who, v.size());
}

/* Sorted pairs whose values are input indices: a permutation, each key the
 * input's key at its value, ascending keys, and (stable) ascending values
 * among equal keys. */
void verify_pairs(const char *who, const std::vector<uint64_t> &input, const uint64_t *k, const uint64_t *v,
                  bool stable) {
  size_t n = input.size(), bad = 0;
  std::vector<uint8_t> seen(n, 0);
  for (size_t i = 0; i < n; i++) {
    if (v[i] >= n || seen[v[i]] || input[v[i]] != k[i]) bad++;
    else seen[v[i]] = 1;
    if (i > 0 && (k[i - 1] > k[i] || (stable && k[i - 1] == k[i] && v[i - 1] > v[i]))) bad++;
  }
  bench_verify(bad == 0, "%s n=%zu: %zu pairs not a sorting permutation", who, n, bad);
}

#ifdef TANDEM_BENCH_HAVE_HWY
/* The target vqsort dispatches to: Highway numbers better x86 targets with
 * lower bits, so the lowest bit set among the supported ones. */
std::string hwy_best_target() {
  int64_t t = bench_hwy_targets();
  return t ? hwy::TargetName(t & -t) : "?";
}

/* The AVX2 row is only a second path where AVX-512 exists; elsewhere it
 * would time the same code twice. */
bool hwy_has_avx512() { return (bench_hwy_targets() & (HWY_AVX3 | HWY_AVX3_DL)) != 0; }
#endif

template <typename K>
void sort_keys(const bench_opts &o, tdm_type t, const char *what, size_t n, const std::vector<int> &threads) {
  step(what, n);
  const char *tn = tdm_type_name(t);
  std::vector<K> input(n), work(n);
  {
    std::vector<uint64_t> w = bench_random_u64(n, o.seed); /* the sort subcommand's keys */
    for (size_t i = 0; i < n; i++) input[i] = (K)w[i];
  }
  uint64_t fp = fingerprint(input);
  auto reset = [&] { memcpy(work.data(), input.data(), n * sizeof(K)); };
  for (int th : threads) {
    tdm_ctx *c = bench_ctx("cpu", th);
    bench_measure(o, cpu_row("sort", "sort", "tandem", tn, "", n, 0, th), (double)n, reset,
                  [&] { bench_check(tdm_sort(c, t, work.data(), n, 0), "tdm_sort"); });
    verify_sorted("tdm_sort", work, fp);
    tdm_ctx_destroy(c);
  }
  if (!o.peers) return;
#ifdef TANDEM_BENCH_HAVE_HWY
  {
    hwy::Sorter sorter;
    bench_row r = cpu_row("sort", "sort", "vqsort", tn, "", n, 0, 1);
    r.note = "Highway's best target here: " + hwy_best_target();
    bench_measure(o, r, (double)n, reset, [&] { sorter(work.data(), n, hwy::SortAscending()); });
    verify_sorted("vqsort", work, fp);
    if (hwy_has_avx512()) {
      bench_hwy_disable(HWY_AVX3 | HWY_AVX3_DL);
      r = cpu_row("sort", "sort", "vqsort-avx2", tn, "", n, 0, 1);
      r.note = "Highway's AVX2 path (AVX-512 disabled)";
      bench_measure(o, r, (double)n, reset, [&] { sorter(work.data(), n, hwy::SortAscending()); });
      verify_sorted("vqsort-avx2", work, fp);
      bench_hwy_disable(0);
    }
  }
#endif
  bench_measure(o, cpu_row("sort", "sort", "std::sort", tn, "", n, 0, 1), (double)n, reset,
                [&] { std::sort(work.begin(), work.end()); });
  verify_sorted("std::sort", work, fp);
}

void sort_pairs(const bench_opts &o, size_t n, const std::vector<int> &threads) {
  step("sort_pairs u64 keys + u64 values", n);
  std::vector<uint64_t> input = bench_random_u64(n, o.seed), iota(n), kw(n), vw(n);
  for (size_t i = 0; i < n; i++) iota[i] = i;
  auto reset = [&] {
    memcpy(kw.data(), input.data(), n * 8);
    memcpy(vw.data(), iota.data(), n * 8);
  };
  for (int th : threads) {
    tdm_ctx *c = bench_ctx("cpu", th);
    bench_measure(o, cpu_row("sort", "sort_pairs", "tandem", "u64", "u64", n, 0, th), (double)n, reset, [&] {
      bench_check(tdm_sort_pairs(c, TDM_U64, kw.data(), TDM_U64, vw.data(), n, 0), "tdm_sort_pairs");
    });
    verify_pairs("tdm_sort_pairs", input, kw.data(), vw.data(), true);
    tdm_ctx_destroy(c);
  }
  if (!o.peers) return;
#ifdef TANDEM_BENCH_HAVE_HWY
  {
    hwy::Sorter sorter;
    std::vector<hwy::K64V64> kv(n);
    auto fill = [&] {
      for (size_t i = 0; i < n; i++) {
        kv[i].key = input[i];
        kv[i].value = i;
      }
    };
    auto check = [&](const char *who) {
      for (size_t i = 0; i < n; i++) {
        kw[i] = kv[i].key;
        vw[i] = kv[i].value;
      }
      verify_pairs(who, input, kw.data(), vw.data(), false); /* vqsort is not stable */
    };
    bench_row r = cpu_row("sort", "sort_pairs", "vqsort", "u64", "u64", n, 0, 1);
    r.note = "Highway's best target here: " + hwy_best_target();
    bench_measure(o, r, (double)n, fill, [&] { sorter(kv.data(), n, hwy::SortAscending()); });
    check("vqsort (pairs)");
    if (hwy_has_avx512()) {
      bench_hwy_disable(HWY_AVX3 | HWY_AVX3_DL);
      r = cpu_row("sort", "sort_pairs", "vqsort-avx2", "u64", "u64", n, 0, 1);
      r.note = "Highway's AVX2 path (AVX-512 disabled)";
      bench_measure(o, r, (double)n, fill, [&] { sorter(kv.data(), n, hwy::SortAscending()); });
      check("vqsort-avx2 (pairs)");
      bench_hwy_disable(0);
    }
  }
#endif
  {
    using kv_pair = std::pair<uint64_t, uint64_t>;
    std::vector<kv_pair> kv(n);
    bench_measure(o, cpu_row("sort", "sort_pairs", "std::stable_sort", "u64", "u64", n, 0, 1), (double)n,
                  [&] {
                    for (size_t i = 0; i < n; i++) kv[i] = {input[i], i};
                  },
                  [&] {
                    std::stable_sort(kv.begin(), kv.end(),
                                     [](const kv_pair &a, const kv_pair &b) { return a.first < b.first; });
                  });
    for (size_t i = 0; i < n; i++) {
      kw[i] = kv[i].first;
      vw[i] = kv[i].second;
    }
    verify_pairs("std::stable_sort", input, kw.data(), vw.data(), true);
  }
}

/* Find results: all found, each the value of its key. */
void verify_hits(const char *who, const std::vector<uint64_t> &want, const uint8_t *found, const uint64_t *out) {
  size_t bad = 0, q = want.size();
#pragma omp parallel for reduction(+ : bad) schedule(static)
  for (long i = 0; i < (long)q; i++) bad += !found[i] || out[i] != want[(size_t)i];
  bench_verify(bad == 0, "%s: %zu of %zu queries answered wrongly", who, bad, q);
}

/* One peer map (absl::flat_hash_map, std::unordered_map): insert with
 * reserve(n), then find every key, both as the hash subcommand does. */
template <typename Map>
std::unique_ptr<Map> hash_peer_insert(const bench_opts &o, const char *name, const std::vector<uint64_t> &keys,
                                      const std::vector<uint64_t> &vals) {
  size_t n = keys.size();
  std::unique_ptr<Map> m;
  bench_row r = cpu_row("hash", "insert", name, "u64", "u64", n, n, 1);
  r.note = "reserve(n) first";
  bench_measure(o, r, (double)n,
                [&] {
                  m.reset(new Map());
                  m->reserve(n);
                },
                [&] {
                  for (size_t i = 0; i < n; i++) (*m)[keys[i]] = vals[i];
                });
  bench_verify(m->size() == n, "%s: size %zu after inserting %zu keys", name, m->size(), n);
  return m;
}

template <typename Map>
void hash_peer_find(const bench_opts &o, const char *name, const Map &m, const std::vector<uint64_t> &hit,
                    const std::vector<uint64_t> &want) {
  size_t n = hit.size();
  std::vector<uint8_t> found(n);
  std::vector<uint64_t> out(n);
  bench_measure(o, cpu_row("hash", "find_hit", name, "u64", "u64", n, n, 1), (double)n, nullptr, [&] {
    for (size_t i = 0; i < n; i++) {
      auto it = m.find(hit[i]);
      found[i] = it != m.end();
      out[i] = found[i] ? it->second : 0;
    }
  });
  verify_hits(name, want, found.data(), out.data());
}

void hash_steps(const bench_opts &o, size_t n, const std::vector<int> &threads) {
  step("hash insert u64->u64 into a table created for n keys", n);
  std::vector<uint64_t> keys = bench_unique_u64(n, o.seed), vals(n), hit(keys), want(n);
  {
    std::vector<uint64_t> r = bench_random_u64(n, o.seed + 1);
    for (size_t i = n; i > 1; i--) std::swap(hit[i - 1], hit[r[i - 1] % i]); /* shuffled: random probes */
  }
  for (size_t i = 0; i < n; i++) vals[i] = bench_fin(keys[i] ^ 0x5eed5eed5eedull);
  for (size_t i = 0; i < n; i++) want[i] = bench_fin(hit[i] ^ 0x5eed5eed5eedull);
  /* The tables of this step are the ones the find step probes. */
  std::vector<tdm_ctx *> ctxs;
  std::vector<tdm_hash *> tables;
  for (int th : threads) {
    tdm_ctx *c = bench_ctx("cpu", th);
    tdm_hash *h = nullptr;
    bench_row r = cpu_row("hash", "insert", "tandem", "u64", "u64", n, n, th);
    r.note = "created with capacity n";
    bench_measure(o, r, (double)n,
                  [&] {
                    tdm_hash_destroy(h);
                    h = bench_u64_table(c, n, 0);
                  },
                  [&] { bench_check(tdm_hash_insert(h, keys.data(), vals.data(), n), "tdm_hash_insert"); });
    bench_verify(tdm_hash_size(h) == n, "tdm_hash_insert: size %zu after inserting %zu keys", tdm_hash_size(h), n);
    ctxs.push_back(c);
    tables.push_back(h);
  }
#ifdef TANDEM_BENCH_HAVE_ABSL
  std::unique_ptr<absl::flat_hash_map<uint64_t, uint64_t>> am;
  if (o.peers) am = hash_peer_insert<absl::flat_hash_map<uint64_t, uint64_t>>(o, "absl::flat_hash_map", keys, vals);
#endif
  std::unique_ptr<std::unordered_map<uint64_t, uint64_t>> um;
  if (o.peers) um = hash_peer_insert<std::unordered_map<uint64_t, uint64_t>>(o, "std::unordered_map", keys, vals);

  step("hash find u64->u64, every query a stored key", n);
  std::vector<uint8_t> found(n);
  std::vector<uint64_t> out(n);
  for (size_t i = 0; i < threads.size(); i++) {
    bench_measure(o, cpu_row("hash", "find_hit", "tandem", "u64", "u64", n, n, threads[i]), (double)n, nullptr,
                  [&] { bench_check(tdm_hash_find(tables[i], hit.data(), out.data(), found.data(), n), "find"); });
    verify_hits("tdm_hash_find", want, found.data(), out.data());
    tdm_hash_destroy(tables[i]);
    tdm_ctx_destroy(ctxs[i]);
  }
#ifdef TANDEM_BENCH_HAVE_ABSL
  if (am) hash_peer_find(o, "absl::flat_hash_map", *am, hit, want);
#endif
  if (um) hash_peer_find(o, "std::unordered_map", *um, hit, want);
}

void btree_steps(const bench_opts &o, size_t n, const std::vector<int> &threads) {
  step("B-tree build from n unsorted u64->u64 pairs", n);
  /* The btree subcommand's keys, values and hit queries. */
  std::vector<uint64_t> keys = bench_unique_u64(n, o.seed), vals = bench_random_u64(n, o.seed + 2), hit(n),
                        want(n);
  {
    std::vector<uint64_t> r = bench_random_u64(n, o.seed + 1);
    for (size_t i = 0; i < n; i++) {
      hit[i] = keys[r[i] % n];
      want[i] = vals[r[i] % n];
    }
  }
  std::vector<tdm_ctx *> ctxs;
  std::vector<tdm_btree *> trees;
  for (int th : threads) {
    tdm_ctx *c = bench_ctx("cpu", th);
    tdm_btree *t = nullptr;
    tdm_btree_opts bo = {TDM_U64, TDM_U64, TDM_DUP_KEEP_LAST};
    bench_measure(o, cpu_row("btree", "build", "tandem", "u64", "u64", n, 0, th), (double)n,
                  [&] {
                    tdm_btree_destroy(t);
                    t = nullptr;
                  },
                  [&] { bench_check(tdm_btree_build(c, &bo, keys.data(), vals.data(), n, &t), "tdm_btree_build"); });
    bench_verify(tdm_btree_size(t) == n && tdm_btree_validate(t) == TDM_OK,
                 "tdm_btree_build: size %zu of %zu keys, validate: %s", tdm_btree_size(t), n, tdm_last_error());
    ctxs.push_back(c);
    trees.push_back(t);
  }
#ifdef TANDEM_BENCH_HAVE_ABSL
  absl::btree_map<uint64_t, uint64_t> am;
  if (o.peers) {
    bench_row r = cpu_row("btree", "build", "absl::btree_map", "u64", "u64", n, 0, 1);
    r.note = "one insert per key";
    bench_measure(o, r, (double)n, [&] { am.clear(); },
                  [&] {
                    for (size_t i = 0; i < n; i++) am.insert({keys[i], vals[i]});
                  });
    bench_verify(am.size() == n, "absl::btree_map: size %zu of %zu keys", am.size(), n);
  }
#endif

  step("B-tree find u64->u64, every query a stored key", n);
  std::vector<uint8_t> found(n);
  std::vector<uint64_t> out(n);
  for (size_t i = 0; i < threads.size(); i++) {
    bench_measure(o, cpu_row("btree", "find_hit", "tandem", "u64", "u64", n, n, threads[i]), (double)n, nullptr,
                  [&] { bench_check(tdm_btree_find(trees[i], hit.data(), out.data(), found.data(), n), "find"); });
    verify_hits("tdm_btree_find", want, found.data(), out.data());
  }
  if (o.peers) {
    /* The sorted array the Eytzinger layout is made from, sorted by tandem
     * (not timed: only the search is the peer), in huge pages as the btree
     * subcommand gives it. std::lower_bound, the slower search, is left to
     * that subcommand: here it would cost a quarter of the run. */
    uint64_t *sk = huge_array(n), *sv = huge_array(n);
    memcpy(sk, keys.data(), n * 8);
    memcpy(sv, vals.data(), n * 8);
    bench_check(tdm_sort_pairs(ctxs.back(), TDM_U64, sk, TDM_U64, sv, n, 0), "tdm_sort_pairs");
    {
      eytzinger e(sk, sv, n);
      bench_measure(o, cpu_row("btree", "find_hit", "eytzinger", "u64", "u64", n, n, 1), (double)n, nullptr, [&] {
        for (size_t i = 0; i < n; i++) {
          size_t k = e.lower(hit[i]);
          found[i] = k != 0 && e.key[k] == hit[i];
          out[i] = found[i] ? e.val[k] : 0;
        }
      });
      verify_hits("eytzinger", want, found.data(), out.data());
    }
    free(sk);
    free(sv);
#ifdef TANDEM_BENCH_HAVE_ABSL
    bench_measure(o, cpu_row("btree", "find_hit", "absl::btree_map", "u64", "u64", n, n, 1), (double)n, nullptr,
                  [&] {
                    for (size_t i = 0; i < n; i++) {
                      auto it = am.find(hit[i]);
                      found[i] = it != am.end();
                      out[i] = found[i] ? it->second : 0;
                    }
                  });
    verify_hits("absl::btree_map", want, found.data(), out.data());
#endif
  }
  for (size_t i = 0; i < threads.size(); i++) {
    tdm_btree_destroy(trees[i]);
    tdm_ctx_destroy(ctxs[i]);
  }
}

void ops_steps(const bench_opts &o, size_t n, const std::vector<int> &threads) {
  step("unique with counts, u64 keys, n/10 distinct", n);
  /* The ops subcommand's inputs: every pool key n / d times, shuffled. */
  const size_t d = std::max<size_t>(n / 10, 1);
  std::vector<uint64_t> pool = bench_unique_u64(d, o.seed), keys(n), r = bench_random_u64(n, o.seed + 1);
  for (size_t i = 0; i < n; i++) keys[i] = pool[i % d];
  for (size_t i = n; i-- > 1;) std::swap(keys[i], keys[r[i] % (i + 1)]);
  std::vector<uint64_t> uq(n), cnt(n);
  size_t nu = 0;
  for (int th : threads) {
    tdm_ctx *c = bench_ctx("cpu", th);
    bench_measure(o, cpu_row("ops", "unique", "tandem", "u64", "", n, 0, th), (double)n, nullptr, [&] {
      bench_check(tdm_unique(c, TDM_U64, keys.data(), n, 0, uq.data(), nullptr, cnt.data(), nullptr, &nu),
                  "tdm_unique");
    });
    bench_verify(nu == d && cnt[0] == n / d, "unique: %zu distinct keys (want %zu), first count %zu", nu, d,
                 (size_t)cnt[0]);
    tdm_ctx_destroy(c);
  }
  if (o.peers) {
    std::vector<uint64_t> tmp(n);
    size_t pn = 0;
    bench_measure(o, cpu_row("ops", "unique", "std::sort+std::unique", "u64", "", n, 0, 1), (double)n,
                  [&] { tmp = keys; },
                  [&] { pn = bench_sort_unique_counts(tmp, cnt); });
    bench_verify(pn == d, "std::sort+std::unique: %zu distinct keys, want %zu", pn, d);
  }

  step("isin, n queries against a set of n/10 keys, half of them in it", n);
  std::vector<uint64_t> queries(n);
  for (size_t i = 0; i < n; i++) queries[i] = (r[i] & 1) ? pool[(r[i] >> 1) % d] : ~pool[(r[i] >> 1) % d];
  std::vector<uint8_t> found(n);
  for (int th : threads) {
    tdm_ctx *c = bench_ctx("cpu", th);
    bench_measure(o, cpu_row("ops", "isin", "tandem", "u64", "", d, n, th), (double)n, nullptr, [&] {
      bench_check(tdm_isin(c, TDM_U64, queries.data(), n, pool.data(), d, 0, found.data()), "tdm_isin");
    });
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += found[i] != (uint8_t)(r[i] & 1);
    bench_verify(bad == 0, "isin: %zu wrong answers", bad);
    tdm_ctx_destroy(c);
  }
#ifdef TANDEM_BENCH_HAVE_ABSL
  if (o.peers) {
    size_t hits = 0;
    bench_row row = cpu_row("ops", "isin", "absl::flat_hash_set", "u64", "", d, n, 1);
    row.note = "set built in each run, as tandem's is";
    bench_measure(o, row, (double)n, nullptr, [&] {
      absl::flat_hash_set<uint64_t> s;
      s.reserve(d);
      s.insert(pool.begin(), pool.end());
      hits = 0;
      for (size_t i = 0; i < n; i++) hits += s.contains(queries[i]);
    });
    size_t want = 0;
    for (size_t i = 0; i < n; i++) want += r[i] & 1;
    bench_verify(hits == want, "absl isin: %zu hits, want %zu", hits, want);
  }
#endif
}

/* ---- the summary ---- */

struct headline_op {
  const char *label, *structure, *operation, *key, *val;
  bool capacity_insert; /* hash insert: only the rows of a table created for n keys */
};

const headline_op HEADLINE_OPS[] = {
    {"sort u32 keys", "sort", "sort", "u32", "", false},
    {"sort u64 keys", "sort", "sort", "u64", "", false},
    {"sort_pairs u64+u64", "sort", "sort_pairs", "u64", "u64", false},
    {"hash insert u64->u64", "hash", "insert", "u64", "u64", true},
    {"hash find hits", "hash", "find_hit", "u64", "u64", false},
    {"B-tree build", "btree", "build", "u64", "u64", false},
    {"B-tree find hits", "btree", "find_hit", "u64", "u64", false},
    {"unique with counts", "ops", "unique", "u64", "", false},
    {"isin", "ops", "isin", "u64", "", false},
};

/* A peer is another implementation of the same operation: not tandem in
 * any form, not tandem's own bound (tdm_sort_pairs+pass), and not
 * vqsort-halves (two half sorts, not a sort of the whole). */
bool is_peer(const std::string &impl) {
  return impl.compare(0, 6, "tandem") != 0 && impl.compare(0, 4, "tdm_") != 0 && impl != "vqsort-halves";
}

std::string cpu_model() {
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return "unknown CPU";
  char line[512];
  std::string model = "unknown CPU";
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    const char *p = strchr(line, ':');
    if (!p) continue;
    model = p + 1;
    while (!model.empty() && (model.front() == ' ' || model.front() == '\t')) model.erase(0, 1);
    while (!model.empty() && (model.back() == '\n' || model.back() == ' ')) model.pop_back();
    break;
  }
  fclose(f);
  return model;
}

std::string ratio_str(double r) {
  char b[48];
  /* Within 2 % either way (as printed) is inside the spread of three runs. */
  double shown = std::round(r * 100) / 100;
  if (shown >= 0.98 && shown <= 1.02) snprintf(b, sizeof b, "%.2fx (about even)", r);
  else if (r > 1.0) snprintf(b, sizeof b, "%.2fx faster", r);
  else snprintf(b, sizeof b, "%.2fx (slower)", r);
  return b;
}

std::string duration_str(double s) {
  char b[32];
  if (s < 60) snprintf(b, sizeof b, "%.0f s", s);
  else snprintf(b, sizeof b, "%dm%02ds", (int)(s / 60), (int)s % 60);
  return b;
}

/* The rows of one headline operation on one backend that the summary
 * compares: tandem's and the peers' at tandem's largest n (and query count),
 * unpaired rows first, since a paired row repeats a configuration that has
 * its own row (paired rows stand in only where nothing else was measured). */
void pick_rows(const headline_op &h, const std::string &backend, std::vector<const bench_row *> &tandem,
               std::vector<const bench_row *> &peers) {
  std::vector<const bench_row *> all;
  for (const bench_row &r : bench_rows()) {
    if (r.backend != backend || r.structure != h.structure || r.operation != h.operation || r.key_type != h.key ||
        r.value_type != h.val)
      continue;
    if (h.capacity_insert && r.queries != r.n) continue;
    if (r.impl == "tandem" || is_peer(r.impl)) all.push_back(&r);
  }
  size_t n = 0, q = 0;
  for (auto *r : all)
    if (r->impl == "tandem" && (r->n > n || (r->n == n && r->queries > q))) {
      n = r->n;
      q = r->queries;
    }
  for (int pass = 0; pass < 2 && tandem.empty(); pass++)
    for (auto *r : all)
      if (r->impl == "tandem" && r->n == n && r->queries == q && r->paired == (pass == 1)) tandem.push_back(r);
  for (int pass = 0; pass < 2 && peers.empty(); pass++)
    for (auto *r : all)
      if (r->impl != "tandem" && r->n == n && r->queries == q && r->paired == (pass == 1)) peers.push_back(r);
}

} // namespace

int bench_headline(const bench_opts &o) {
  const size_t n = bench_n(o, 10000000);
  const std::vector<int> threads = bench_thread_list(o, "cpu");
  step_no = 0;
  sort_keys<uint32_t>(o, TDM_U32, "sort u32 keys", n, threads);
  sort_keys<uint64_t>(o, TDM_U64, "sort u64 keys", n, threads);
  sort_pairs(o, n, threads);
  hash_steps(o, n, threads);
  btree_steps(o, n, threads);
  ops_steps(o, n, threads);
  finish_step();
  return 0;
}

void bench_summary(const bench_summary_info &si) {
  unsigned cores = std::thread::hardware_concurrency();
  bench_printf("\n== summary: tandem against the best peer measured in this run (M/s: millions of keys or queries "
               "per second)\n");
  for (const char *backend : {"cpu", "cuda"}) {
    /* The thread counts tandem ran at on this backend, for the columns. */
    std::vector<int> cols;
    bool any = false;
    for (const headline_op &h : HEADLINE_OPS) {
      std::vector<const bench_row *> t, p;
      pick_rows(h, backend, t, p);
      for (auto *r : t)
        if (std::find(cols.begin(), cols.end(), r->threads) == cols.end()) cols.push_back(r->threads);
      any |= !t.empty();
    }
    if (!any) continue;
    std::sort(cols.begin(), cols.end());
    bool cpu = std::string(backend) == "cpu";
    bench_printf("%s\n%-22s", cpu ? "CPU" : "GPU (cuda, device-resident arrays)", "operation");
    for (int c : cols) {
      std::string head = cpu ? "tandem t=" + std::to_string(c) : std::string("tandem");
      bench_printf(" %12s", head.c_str());
    }
    bench_printf("   %-28s %9s   %s\n", "best peer (threads)", "peer", "tandem / peer, same threads");
    for (const headline_op &h : HEADLINE_OPS) {
      std::vector<const bench_row *> t, p;
      pick_rows(h, backend, t, p);
      if (t.empty()) continue;
      bench_printf("%-22s", h.label);
      for (int c : cols) {
        const bench_row *hit = nullptr;
        for (auto *r : t)
          if (r->threads == c && !hit) hit = r;
        if (hit) bench_printf(" %12.1f", hit->median);
        else bench_printf(" %12s", "-");
      }
      const bench_row *best = nullptr;
      for (auto *r : p)
        if (!best || r->median > best->median) best = r;
      if (!best) {
        bench_printf("   %s\n", si.peers ? "no peer in this build" : "no peer measured (--peers)");
        continue;
      }
      /* Like for like: tandem at the peer's thread count; where tandem has
       * no row at that count, its nearest count below (else its first). */
      const bench_row *mine = nullptr;
      for (auto *r : t)
        if (r->threads <= best->threads && (!mine || r->threads > mine->threads)) mine = r;
      if (!mine) mine = t.front();
      std::string peer = best->impl + (cpu ? " (t=" + std::to_string(best->threads) + ")" : "");
      std::string ratio = ratio_str(mine->median / best->median);
      if (mine->threads != best->threads) ratio += " (tandem t=" + std::to_string(mine->threads) + ")";
      bench_printf("   %-28s %9.1f   %s\n", peer.c_str(), best->median, ratio.c_str());
    }
  }
  std::string tl;
  for (size_t i = 0; i < si.threads.size(); i++)
    tl += (i ? (i + 1 == si.threads.size() ? " and " : ", ") : "") + std::to_string(si.threads[i]);
  bench_printf("machine: %s, %u cores; tandem on the CPU at %s thread(s), peers at the threads shown\n",
               cpu_model().c_str(), cores, tl.c_str());
  if (si.max_load >= 0) {
    if (si.max_load > (double)cores)
      bench_printf("WARNING: the machine is busy: figures are not comparable (1-minute load average up to %.2f on "
                   "%u cores)\n",
                   si.max_load, cores);
    else
      bench_printf("load average (1 minute): at most %.2f on %u cores\n", si.max_load, cores);
  }
  bench_printf("run: tandem-bench %s, %s wall time\n", si.what.c_str(), duration_str(si.wall_s).c_str());
  bench_printf("full table: %s\n", si.table.empty() ? "above (--table FILE writes it to a file)" : si.table.c_str());
  bench_printf("CSV: %s\n", si.csv.empty() ? "not written (--csv FILE)" : si.csv.c_str());
  if (si.what == "headline") bench_printf("every row, every usable backend: tandem-bench all --peers\n");
}
