/*
 * bench_ops.cpp: the "ops" subcommand: tandem's data operations (tandem/ops.h)
 * on u64 keys from a fixed seed, against the peers that exist in C++.
 *
 * Rows (structure "ops"; n rows of input, default 10^7):
 *  - unique: tdm_unique with counts of n keys drawn from n / 10 distinct
 *    values (10^6 for the default n). Peer (--peers): std::sort +
 *    std::unique with the counts from the run lengths (a copy sorted each run).
 *  - factorize: tdm_unique with the inverse in first-seen order (what
 *    pandas.factorize returns), same keys.
 *  - isin: n queries against a set of n / 10 keys, half of the queries in
 *    it. Peer: absl::flat_hash_set (when Abseil was found), reserve + insert
 *    the set, then one find per query.
 *  - group_sum: tdm_group_reduce SUM of f64 values by the unique keys.
 *  - join: inner tdm_join of two columns of n distinct keys each (the right
 *    a permutation of the left), indices out; join_dim: the keys above
 *    (n rows of n / 10 keys) against the n / 10 pool keys once each (a
 *    fact table against its dimension); join_dup: the n distinct left keys
 *    against n right rows holding the first n / 2 of them twice each, in
 *    random order (every matched key repeats on the right).
 * Every result is checked against the peer or a direct count.
 */
#include <algorithm>
#include <cstring>
#include <numeric>

#include "bench.h"

#ifdef TANDEM_BENCH_HAVE_ABSL
#include <absl/container/flat_hash_set.h>
#endif

namespace {

int bench_ops(const bench_opts &o) {
  const size_t n = bench_n(o, 10000000), d = std::max<size_t>(n / 10, 1);
  std::vector<uint64_t> pool = bench_unique_u64(d, o.seed), keys(n), r = bench_random_u64(n, o.seed + 1);
  /* Every pool key n / d times, in random order (Fisher-Yates from r). */
  for (size_t i = 0; i < n; i++) keys[i] = pool[i % d];
  for (size_t i = n; i-- > 1;) std::swap(keys[i], keys[r[i] % (i + 1)]);
  std::vector<uint64_t> uq(n), cnt(n), inv(n), set(pool), queries(n);
  std::vector<double> vals(n), sums(n);
  for (size_t i = 0; i < n; i++) {
    vals[i] = (double)(r[i] >> 11) * 1e-9;
    queries[i] = (r[i] & 1) ? pool[(r[i] >> 1) % d] : ~pool[(r[i] >> 1) % d];
  }
  std::vector<uint8_t> found(n);
  std::vector<uint64_t> jl = bench_unique_u64(n, o.seed + 2), jr(jl);
  std::reverse(jr.begin(), jr.end());
  std::vector<uint64_t> jd(n);
  for (size_t i = 0; i < n; i++) jd[i] = jl[i / 2];
  for (size_t i = n; i-- > 1;) std::swap(jd[i], jd[r[i] % (i + 1)]);
  std::vector<uint64_t> lo(n), ro(n);
  size_t nu = 0, ng = 0, nj = 0;

  for (const std::string &be : o.backends) {
    if (be != "cpu") continue; /* the data operations run on the CPU backend only so far */
    for (int t : bench_thread_list(o, be)) {
      tdm_ctx *c = bench_ctx(be, t);
      bench_measure(o, bench_make_row("ops", "unique", "tandem", be, "u64", "", n, 0, t), (double)n, {}, [&] {
        bench_check(tdm_unique(c, TDM_U64, keys.data(), n, 0, uq.data(), nullptr, cnt.data(), nullptr, &nu),
                    "tdm_unique");
      });
      bench_verify(nu == d, "unique: %zu distinct keys, expected %zu", nu, d);
      bench_measure(o, bench_make_row("ops", "factorize", "tandem", be, "u64", "", n, 0, t), (double)n, {}, [&] {
        bench_check(tdm_unique(c, TDM_U64, keys.data(), n, TDM_ORDER_FIRST_SEEN, uq.data(), nullptr, nullptr,
                               inv.data(), &nu),
                    "tdm_unique");
      });
      bench_verify(nu == d && uq[inv[n / 2]] == keys[n / 2], "factorize: codes do not give the keys back");
      bench_measure(o, bench_make_row("ops", "isin", "tandem", be, "u64", "", d, n, t), (double)n, {}, [&] {
        bench_check(tdm_isin(c, TDM_U64, queries.data(), n, set.data(), d, 0, found.data()), "tdm_isin");
      });
      {
        size_t hits = 0;
        for (size_t i = 0; i < n; i++) hits += found[i] != (uint8_t)(r[i] & 1);
        bench_verify(hits == 0, "isin: %zu wrong answers", hits);
      }
      bench_measure(o, bench_make_row("ops", "group_sum", "tandem", be, "u64", "f64", n, 0, t), (double)n, {}, [&] {
        bench_check(tdm_group_reduce(c, TDM_U64, keys.data(), TDM_F64, vals.data(), n, TDM_AGG_SUM, 0, uq.data(),
                                     sums.data(), &ng),
                    "tdm_group_reduce");
      });
      bench_verify(ng == d, "group_sum: %zu groups, expected %zu", ng, d);
      bench_measure(o, bench_make_row("ops", "join", "tandem", be, "u64", "", n, n, t), (double)n, {}, [&] {
        bench_check(tdm_join(c, TDM_JOIN_INNER, TDM_U64, jl.data(), n, jr.data(), n, 0, lo.data(), ro.data(), n,
                             &nj),
                    "tdm_join");
      });
      bench_verify(nj == n && ro[0] == n - 1 && lo[n - 1] == n - 1, "join: wrong rows");
      bench_measure(o, bench_make_row("ops", "join_dim", "tandem", be, "u64", "", n, d, t), (double)n, {}, [&] {
        bench_check(tdm_join(c, TDM_JOIN_INNER, TDM_U64, keys.data(), n, pool.data(), d, 0, lo.data(), ro.data(), n,
                             &nj),
                    "tdm_join");
      });
      bench_verify(nj == n && lo[0] == 0 && pool[ro[0]] == keys[0] && pool[ro[n - 1]] == keys[n - 1],
                   "join_dim: wrong rows");
      bench_measure(o, bench_make_row("ops", "join_dup", "tandem", be, "u64", "", n, n, t), (double)n, {}, [&] {
        bench_check(tdm_join(c, TDM_JOIN_INNER, TDM_U64, jl.data(), n, jd.data(), n, 0, lo.data(), ro.data(), n,
                             &nj),
                    "tdm_join");
      });
      bench_verify(nj == n && lo[0] == 0 && lo[1] == 0 && jd[ro[0]] == jl[0] && ro[0] < ro[1],
                   "join_dup: wrong rows");
      tdm_ctx_destroy(c);
    }
  }
  if (o.peers) {
    std::vector<uint64_t> tmp(n);
    size_t pn = 0;
    bench_measure(o, bench_make_row("ops", "unique", "std::sort+std::unique", "cpu", "u64", "", n, 0, 1), (double)n,
                  [&] { tmp = keys; },
                  [&] { pn = bench_sort_unique_counts(tmp, cnt); });
    bench_verify(pn == d, "std::unique: %zu distinct keys", pn);
#ifdef TANDEM_BENCH_HAVE_ABSL
    size_t hits = 0;
    bench_measure(o, bench_make_row("ops", "isin", "absl::flat_hash_set", "cpu", "u64", "", d, n, 1), (double)n, {},
                  [&] {
                    absl::flat_hash_set<uint64_t> s;
                    s.reserve(d);
                    s.insert(set.begin(), set.end());
                    hits = 0;
                    for (size_t i = 0; i < n; i++) hits += s.contains(queries[i]);
                  });
    bench_verify(hits * 10 > n * 4 && hits * 10 < n * 6, "absl isin: %zu hits", hits);
#endif
  }
  return 0;
}

bench_register reg_ops("ops", bench_ops);

} // namespace
