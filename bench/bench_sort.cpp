/*
 * bench_sort.cpp: the "sort" subcommand: tandem's sort, sort_pairs and
 * argsort against std::sort and vqsort (both of its x86 paths) on the CPU,
 * and against raw CUB on device-resident data on a GPU. Inputs are uniform
 * random keys from a fixed seed; the memcpy ceiling is printed first, and each
 * tandem row is followed by its fraction of that ceiling.
 */
#include <algorithm>
#include <cstring>
#include <sstream>

#include <omp.h>

#include "bench.h"
#include "bench_gen.h"

#ifdef TANDEM_BENCH_HAVE_HWY
#include <hwy/contrib/sort/vqsort.h>
#include <hwy/targets.h>
#endif

namespace {

tdm_type parse_type(const std::string &t) {
  if (t == "u32") return TDM_U32;
  if (t == "u64") return TDM_U64;
  if (t == "i32") return TDM_I32;
  if (t == "i64") return TDM_I64;
  if (t == "f32") return TDM_F32;
  if (t == "f64") return TDM_F64;
  fprintf(stderr, "tandem-bench sort: unknown type %s\n", t.c_str());
  exit(2);
}

/* Keys of type t from random words: floats are finite values of random sign. */
std::vector<char> make_keys(tdm_type t, size_t n, uint64_t seed) {
  std::vector<uint64_t> w = bench_random_u64(n, seed);
  size_t ks = tdm_type_size(t);
  std::vector<char> out(n * ks);
  for (size_t i = 0; i < n; i++) {
    if (t == TDM_F32) {
      float f = (float)((double)(int64_t)w[i] / 9.2e15);
      memcpy(&out[i * 4], &f, 4);
    } else if (t == TDM_F64) {
      double f = (double)(int64_t)w[i] / 9.2e15;
      memcpy(&out[i * 8], &f, 8);
    } else if (ks == 4) {
      uint32_t x = (uint32_t)w[i];
      memcpy(&out[i * 4], &x, 4);
    } else {
      memcpy(&out[i * 8], &w[i], 8);
    }
  }
  return out;
}

struct ceiling {
  double gbps = 0; /* memcpy bandwidth at this thread count */
};

/* Bytes one element moves at the least (read once, written once: a copy). */
void print_fraction(const bench_row &r, double elem_bytes, double gbps) {
  if (gbps <= 0) return;
  double bound = gbps * 1e9 / elem_bytes / 1e6; /* M elements/s if sorting cost one copy */
  bench_printf("%-10s   -> %.1f%% of the memcpy bound (%.0f M/s for %.0f-byte elements at %.2f GB/s)\n", "",
         100.0 * r.median / bound, bound, elem_bytes, gbps);
}

bench_row base_row(const std::string &op, const std::string &impl, const std::string &backend, tdm_type kt,
                   const char *vt, size_t n, int threads) {
  return bench_make_row("sort", op, impl, backend, tdm_type_name(kt), vt ? vt : "", n, 0, threads);
}

/* ---- result checks on the host (all threads) ---- */

uint64_t key_bits(tdm_type t, const char *k, size_t i) {
  if (tdm_type_size(t) == 4) {
    uint32_t x;
    memcpy(&x, k + i * 4, 4);
    return x;
  }
  uint64_t x;
  memcpy(&x, k + i * 8, 8);
  return x;
}

uint64_t key_ord(tdm_type t, const char *k, size_t i) {
  return bench_ordered((int)tdm_type_size(t), t == TDM_I32 || t == TDM_I64, t == TDM_F32 || t == TDM_F64,
                       key_bits(t, k, i));
}

/* Order-independent fingerprint of the key multiset. */
uint64_t fingerprint(tdm_type t, const char *k, size_t n) {
  uint64_t s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
  for (long i = 0; i < (long)n; i++) s += bench_fin(key_bits(t, k, (size_t)i) + 0x9e3779b97f4a7c15ull);
  return s;
}

/* Ascending order (in tandem's key order) and the same multiset as the input. */
void verify_sorted(const char *what, tdm_type t, const char *k, size_t n, uint64_t fp_in) {
  size_t bad = 0;
#pragma omp parallel for reduction(+ : bad) schedule(static)
  for (long i = 1; i < (long)n; i++) bad += key_ord(t, k, (size_t)i - 1) > key_ord(t, k, (size_t)i);
  bench_verify(bad == 0, "%s %s n=%zu: %zu keys out of order", what, tdm_type_name(t), n, bad);
  bench_verify(fingerprint(t, k, n) == fp_in, "%s %s n=%zu: the keys are not the input's keys", what,
               tdm_type_name(t), n);
}

/* perm (u64) is a permutation ordering keys0 stably; sorted (optional) holds
 * keys0[perm[i]]. */
void verify_perm(const char *what, tdm_type t, const char *keys0, const uint64_t *perm, const char *sorted, size_t n) {
  std::vector<uint8_t> seen(n, 0);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) { /* marks: one thread, a byte per element */
    if (perm[i] >= n || seen[perm[i]]) bad++;
    else seen[perm[i]] = 1;
  }
  if (bad == 0) {
    size_t es = tdm_type_size(t);
#pragma omp parallel for reduction(+ : bad) schedule(static)
    for (long i = 0; i < (long)n; i++) {
      size_t p = perm[i];
      if (sorted && memcmp(sorted + (size_t)i * es, keys0 + p * es, es)) bad++;
      if (i > 0) {
        size_t q = perm[i - 1];
        uint64_t a = key_ord(t, keys0, q), b = key_ord(t, keys0, p);
        if (a > b || (a == b && q > p)) bad++;
      }
    }
  }
  bench_verify(bad == 0, "%s %s n=%zu: %zu elements not a stable sorting permutation", what, tdm_type_name(t), n,
               bad);
}

#ifdef TANDEM_BENCH_HAVE_HWY
/* The target vqsort dispatches to (Highway numbers better x86 targets with
 * lower bits), for the note that tells the vqsort row from vqsort-avx2,
 * which on a machine without AVX-512 times the same path. */
std::string hwy_best_target() {
  int64_t t = bench_hwy_targets();
  return t ? hwy::TargetName(t & -t) : "?";
}

bench_row vq_row(const std::string &op, const std::string &impl, tdm_type kt, const char *vt, size_t n) {
  bench_row r = base_row(op, impl, "cpu", kt, vt, n, 1);
  r.note = impl == "vqsort" ? "Highway's best target here: " + hwy_best_target()
                            : "Highway without AVX-512: " + hwy_best_target();
  return r;
}

/* vqsort on unsigned/signed/float keys of type t. */
void vq_keys(const hwy::Sorter &s, tdm_type t, void *k, size_t n) {
  switch (t) {
  case TDM_U32: s((uint32_t *)k, n, hwy::SortAscending()); break;
  case TDM_U64: s((uint64_t *)k, n, hwy::SortAscending()); break;
  case TDM_I32: s((int32_t *)k, n, hwy::SortAscending()); break;
  case TDM_I64: s((int64_t *)k, n, hwy::SortAscending()); break;
  case TDM_F32: s((float *)k, n, hwy::SortAscending()); break;
  case TDM_F64: s((double *)k, n, hwy::SortAscending()); break;
  }
}
#endif

void std_sort_keys(tdm_type t, void *k, size_t n) {
  switch (t) {
  case TDM_U32: std::sort((uint32_t *)k, (uint32_t *)k + n); break;
  case TDM_U64: std::sort((uint64_t *)k, (uint64_t *)k + n); break;
  case TDM_I32: std::sort((int32_t *)k, (int32_t *)k + n); break;
  case TDM_I64: std::sort((int64_t *)k, (int64_t *)k + n); break;
  case TDM_F32: std::sort((float *)k, (float *)k + n); break;
  case TDM_F64: std::sort((double *)k, (double *)k + n); break;
  }
}

void bench_keys_cpu(const bench_opts &o, tdm_type t, size_t n, const std::vector<char> &input,
                    const std::vector<int> &threads, const std::vector<double> &gbps) {
  size_t ks = tdm_type_size(t);
  std::vector<char> work(input.size());
  auto reset = [&] { memcpy(work.data(), input.data(), input.size()); };
  uint64_t fp = fingerprint(t, input.data(), n);
  for (size_t ti = 0; ti < threads.size(); ti++) {
    tdm_ctx *c = bench_ctx("cpu", threads[ti]);
    bench_row r = bench_measure(o, base_row("sort", "tandem", "cpu", t, nullptr, n, threads[ti]), (double)n,
                                reset, [&] { bench_check(tdm_sort(c, t, work.data(), n, 0), "tdm_sort"); });
    verify_sorted("tdm_sort (cpu)", t, work.data(), n, fp);
    print_fraction(r, (double)ks, gbps[ti]);
    tdm_ctx_destroy(c);
  }
  /* Thread scaling as one ratio: the rows above are minutes apart, and the
   * machine's memory bandwidth drifts more than the goal's margin in that
   * time, so the most threads and one thread are timed again in alternation. */
  if (threads.size() > 1 && threads.front() == 1 && threads.back() > 1) {
    tdm_ctx *c1 = bench_ctx("cpu", 1), *ck = bench_ctx("cpu", threads.back());
    bench_measure_pair(
        o, base_row("sort", "tandem", "cpu", t, nullptr, n, threads.back()), (double)n, reset,
        [&] { bench_check(tdm_sort(ck, t, work.data(), n, 0), "tdm_sort"); },
        base_row("sort", "tandem", "cpu", t, nullptr, n, 1), (double)n, reset,
        [&] { bench_check(tdm_sort(c1, t, work.data(), n, 0), "tdm_sort"); });
    verify_sorted("tdm_sort (cpu)", t, work.data(), n, fp);
    tdm_ctx_destroy(c1);
    tdm_ctx_destroy(ck);
  }
  if (!o.peers) return;
  if (n <= 100000000) /* std::sort is ~15x slower; skip it where it would take minutes */
  {
    bench_measure(o, base_row("sort", "std::sort", "cpu", t, nullptr, n, 1), (double)n, reset,
                  [&] { std_sort_keys(t, work.data(), n); });
    /* The inputs hold no NaN and no -0.0, so numeric order is tandem's. */
    verify_sorted("std::sort", t, work.data(), n, fp);
  }
#ifdef TANDEM_BENCH_HAVE_HWY
  {
    hwy::Sorter sorter;
    bench_measure(o, vq_row("sort", "vqsort", t, nullptr, n), (double)n, reset,
                  [&] { vq_keys(sorter, t, work.data(), n); });
    verify_sorted("vqsort", t, work.data(), n, fp);
    /* Highway's AVX-512 path is slow on some chips (AMD Zen 4); time the AVX2
     * path too and compare against the faster of the two. */
    bench_hwy_disable(HWY_AVX3 | HWY_AVX3_DL);
    bench_measure(o, vq_row("sort", "vqsort-avx2", t, nullptr, n), (double)n, reset,
                  [&] { vq_keys(sorter, t, work.data(), n); });
    verify_sorted("vqsort-avx2", t, work.data(), n, fp);
    bench_hwy_disable(0);
    /* The two-thread ceiling of any design that ends in one vqsort per
     * thread: two threads each vqsort their own half at the same time (no
     * partition, so the whole is not sorted), against one vqsort of the
     * whole array, in alternation. Memory bandwidth and the shared cache
     * decide how far this falls short of 2x plus the halves' shorter depth. */
    if (threads.back() >= 2) {
      size_t h = n / 2;
      bench_row halves = base_row("sort", "vqsort-halves", "cpu", t, nullptr, n, 2);
      halves.note = "each thread sorts its own half: a ceiling, not a sort";
      bench_measure_pair(
          o, halves, (double)n, reset,
          [&] {
#pragma omp parallel num_threads(2)
            {
              int me = omp_get_thread_num();
              vq_keys(sorter, t, work.data() + (me ? h * ks : 0), me ? n - h : h);
            }
          },
          base_row("sort", "vqsort", "cpu", t, nullptr, n, 1), (double)n, reset,
          [&] { vq_keys(sorter, t, work.data(), n); });
    }
  }
#endif
}

/* Skewed pairs (u64 keys only): keys below 10^6 (sort_pairs_1e6keys), and
 * the same keys with one of them on 90 % of the rows (sort_pairs_hot90), the
 * hot key a group-by or a join on real data meets. */
void bench_pairs_skew_cpu(const bench_opts &o, size_t n, const std::vector<char> &input,
                          const std::vector<int> &threads) {
  std::vector<uint64_t> narrow(n), hot(n), work(n), vals(n), vwork(n);
  const uint64_t *in = (const uint64_t *)input.data();
  for (size_t i = 0; i < n; i++) {
    narrow[i] = in[i] % 1000000;
    hot[i] = (in[i] >> 40) % 10 ? 777 : narrow[i];
    vals[i] = i;
  }
  for (int th : threads) {
    tdm_ctx *c = bench_ctx("cpu", th);
    for (int h = 0; h < 2; h++) {
      const std::vector<uint64_t> &src = h ? hot : narrow;
      const char *op = h ? "sort_pairs_hot90" : "sort_pairs_1e6keys";
      bench_measure(o, base_row(op, "tandem", "cpu", TDM_U64, "u64", n, th), (double)n,
                    [&] {
                      memcpy(work.data(), src.data(), n * 8);
                      memcpy(vwork.data(), vals.data(), n * 8);
                    },
                    [&] { bench_check(tdm_sort_pairs(c, TDM_U64, work.data(), TDM_U64, vwork.data(), n, 0), op); });
      verify_perm(op, TDM_U64, (const char *)src.data(), vwork.data(), (const char *)work.data(), n);
    }
    tdm_ctx_destroy(c);
  }
}

void bench_pairs_cpu(const bench_opts &o, tdm_type t, size_t n, const std::vector<char> &input,
                     const std::vector<int> &threads, const std::vector<double> &gbps) {
  size_t ks = tdm_type_size(t);
  std::vector<char> work(input.size());
  std::vector<uint64_t> vals(n), vwork(n);
  for (size_t i = 0; i < n; i++) vals[i] = i;
  auto reset = [&] {
    memcpy(work.data(), input.data(), input.size());
    memcpy(vwork.data(), vals.data(), n * 8);
  };
  for (size_t ti = 0; ti < threads.size(); ti++) {
    tdm_ctx *c = bench_ctx("cpu", threads[ti]);
    bench_row r = bench_measure(o, base_row("sort_pairs", "tandem", "cpu", t, "u64", n, threads[ti]), (double)n,
                                reset, [&] {
                                  bench_check(tdm_sort_pairs(c, t, work.data(), TDM_U64, vwork.data(), n, 0),
                                              "tdm_sort_pairs");
                                });
    verify_perm("tdm_sort_pairs (cpu)", t, input.data(), vwork.data(), work.data(), n);
    print_fraction(r, (double)(ks + 8), gbps[ti]);
    std::vector<uint64_t> perm(n);
    r = bench_measure(o, base_row("argsort", "tandem", "cpu", t, "u64", n, threads[ti]), (double)n, nullptr, [&] {
      bench_check(tdm_argsort(c, t, input.data(), TDM_U64, perm.data(), n, 0), "tdm_argsort");
    });
    verify_perm("tdm_argsort (cpu)", t, input.data(), perm.data(), nullptr, n);
    tdm_ctx_destroy(c);
  }
  if (t == TDM_U64) bench_pairs_skew_cpu(o, n, input, threads);
  if (!o.peers) return;
#ifdef TANDEM_BENCH_HAVE_HWY
  if (t == TDM_U64) {
    hwy::Sorter sorter;
    std::vector<hwy::K64V64> kv(n);
    auto fill = [&] {
      const uint64_t *k = (const uint64_t *)input.data();
      for (size_t i = 0; i < n; i++) {
        kv[i].key = k[i];
        kv[i].value = i;
      }
    };
    bench_measure(o, vq_row("sort_pairs", "vqsort", t, "u64", n), (double)n, fill,
                  [&] { sorter(kv.data(), n, hwy::SortAscending()); });
    bench_hwy_disable(HWY_AVX3 | HWY_AVX3_DL);
    bench_measure(o, vq_row("sort_pairs", "vqsort-avx2", t, "u64", n), (double)n, fill,
                  [&] { sorter(kv.data(), n, hwy::SortAscending()); });
    bench_hwy_disable(0);
  }
#endif
  if (n <= 100000000) {
    std::vector<std::pair<uint64_t, uint64_t>> kv(n);
    auto fill = [&] {
      for (size_t i = 0; i < n; i++) {
        uint64_t k = 0;
        memcpy(&k, &input[i * ks], ks);
        kv[i] = {k, i};
      }
    };
    bench_measure(o, base_row("sort_pairs", "std::stable_sort", "cpu", t, "u64", n, 1), (double)n, fill,
                  [&] {
                    std::stable_sort(kv.begin(), kv.end(),
                                     [](const std::pair<uint64_t, uint64_t> &a, const std::pair<uint64_t, uint64_t> &b) {
                                       return a.first < b.first;
                                     });
                  });
    if (t == TDM_U32 || t == TDM_U64) {
      std::vector<uint64_t> p(n);
      for (size_t i = 0; i < n; i++) p[i] = kv[i].second;
      verify_perm("std::stable_sort", t, input.data(), p.data(), nullptr, n);
    }
  }
}

#ifdef TANDEM_BENCH_HAVE_CUDA
/* Calls per timed run of the small-batch rows, and their batch size: the
 * per-call overhead shows as the gap to the large-n rate. */
const size_t SMALL = 65536, SMALL_CALLS = 100;

/* Checks a device-resident result of a keys-only sort. */
void verify_gpu_sorted(const char *what, tdm_type t, const void *d, size_t n, uint64_t fp) {
  size_t bad = bench_gpu_check_order(d, n, t, false);
  bench_verify(bad == 0, "%s %s n=%zu: %zu keys out of order", what, tdm_type_name(t), n, bad);
  bench_verify(bench_gpu_fingerprint(d, n, t) == fp, "%s %s n=%zu: the keys are not the input's keys", what,
               tdm_type_name(t), n);
}

void verify_gpu_perm(const char *what, tdm_type t, const void *d_keys0, const uint64_t *d_perm, const void *d_sorted,
                     size_t n) {
  size_t bad = bench_gpu_check_perm(d_keys0, d_perm, d_sorted, n, t, false);
  bench_verify(bad == 0, "%s %s n=%zu: %zu elements not a stable sorting permutation", what, tdm_type_name(t), n,
               bad);
}

/* Device-resident keys made on the GPU; values are the indices 0..n-1, so a
 * sorted pair array is checked as a stable sorting permutation. */
void bench_cuda(const bench_opts &o, tdm_type t, size_t n) {
  size_t ks = tdm_type_size(t);
  void *dk = bench_dev_alloc(n * ks), *dk0 = bench_dev_alloc(n * ks);
  uint64_t *dv = (uint64_t *)bench_dev_alloc(n * 8), *dv0 = (uint64_t *)bench_dev_alloc(n * 8);
  bench_gpu_sort_keys(dk0, n, t, o.seed);
  bench_gpu_iota(dv0, n);
  uint64_t fp = bench_gpu_fingerprint(dk0, n, t);
  bench_gpu_memcpy_gbps(o, n * ks);
  tdm_ctx *c = bench_ctx("cuda", 0);
  auto reset = [&] {
    bench_d2d(dk, dk0, n * ks);
    bench_d2d(dv, dv0, n * 8);
    bench_dev_sync();
  };
  const std::string tandem = "tandem";
  bench_measure(o, base_row("sort", tandem, "cuda", t, nullptr, n, 1), (double)n, reset,
                [&] { bench_check(tdm_sort(c, t, dk, n, 0), "tdm_sort (cuda)"); });
  verify_gpu_sorted("tdm_sort (cuda)", t, dk, n, fp);
  bench_measure(o, base_row("sort_pairs", tandem, "cuda", t, "u64", n, 1), (double)n, reset,
                [&] { bench_check(tdm_sort_pairs(c, t, dk, TDM_U64, dv, n, 0), "tdm_sort_pairs (cuda)"); });
  verify_gpu_perm("tdm_sort_pairs (cuda)", t, dk0, dv, dk, n);
  bench_measure(o, base_row("argsort", tandem, "cuda", t, "u64", n, 1), (double)n, reset,
                [&] { bench_check(tdm_argsort(c, t, dk0, TDM_U64, dv, n, 0), "tdm_argsort (cuda)"); });
  verify_gpu_perm("tdm_argsort (cuda)", t, dk0, dv, nullptr, n);
  /* Small batches: SMALL_CALLS sorts of SMALL keys each, distinct slices. */
  size_t sn = std::min(n, SMALL), calls = std::min(SMALL_CALLS, n / sn);
  bench_measure(o, base_row("sort", tandem, "cuda", t, nullptr, sn, 1), (double)(sn * calls), reset, [&] {
    for (size_t i = 0; i < calls; i++)
      bench_check(tdm_sort(c, t, (char *)dk + i * sn * ks, sn, 0), "tdm_sort (cuda, small)");
  });
  verify_gpu_sorted("tdm_sort (cuda, small batch)", t, dk, sn, bench_gpu_fingerprint(dk0, sn, t));
  bench_measure(o, base_row("sort_pairs", tandem, "cuda", t, "u64", sn, 1), (double)(sn * calls), reset, [&] {
    for (size_t i = 0; i < calls; i++)
      bench_check(tdm_sort_pairs(c, t, (char *)dk + i * sn * ks, TDM_U64, dv + i * sn, sn, 0),
                  "tdm_sort_pairs (cuda, small)");
  });
  verify_gpu_perm("tdm_sort_pairs (cuda, small batch)", t, dk0, dv, dk, sn);
  /* Host arrays: staging included, for users who pass host memory. */
  {
    std::vector<char> input(n * ks), work(n * ks);
    bench_d2h(input.data(), dk0, n * ks);
    bench_measure(o, base_row("sort", tandem + "(host-arrays)", "cuda", t, nullptr, n, 1), (double)n,
                  [&] { memcpy(work.data(), input.data(), input.size()); },
                  [&] { bench_check(tdm_sort(c, t, work.data(), n, 0), "tdm_sort (cuda, host)"); });
    verify_sorted("tdm_sort (cuda, host arrays)", t, work.data(), n, fp);
  }
  tdm_ctx_destroy(c);
  if (o.peers && (t == TDM_U32 || t == TDM_U64)) {
    void *alt = bench_dev_alloc(n * ks);
    uint64_t *valt = (uint64_t *)bench_dev_alloc(n * 8);
    size_t tb = bench_cub_temp_bytes(n, (int)ks, true);
    void *temp = bench_dev_alloc(tb);
    int sel = 0;
    bench_measure(o, base_row("sort", "cub", "cuda", t, nullptr, n, 1), (double)n, reset,
                  [&] { sel = bench_cub_sort(temp, tb, dk, alt, nullptr, nullptr, n, (int)ks); });
    verify_gpu_sorted("cub SortKeys", t, sel ? alt : dk, n, fp);
    bench_measure(o, base_row("sort_pairs", "cub", "cuda", t, "u64", n, 1), (double)n, reset,
                  [&] { sel = bench_cub_sort(temp, tb, dk, alt, dv, valt, n, (int)ks); });
    verify_gpu_perm("cub SortPairs", t, dk0, sel ? valt : dv, sel ? alt : dk, n);
    bench_measure(o, base_row("sort", "cub", "cuda", t, nullptr, sn, 1), (double)(sn * calls), reset, [&] {
      for (size_t i = 0; i < calls; i++)
        sel = bench_cub_sort(temp, tb, (char *)dk + i * sn * ks, (char *)alt + i * sn * ks, nullptr, nullptr, sn,
                             (int)ks);
    });
    verify_gpu_sorted("cub SortKeys (small batch)", t, (char *)(sel ? alt : dk) + (calls - 1) * sn * ks, sn,
                      bench_gpu_fingerprint((char *)dk0 + (calls - 1) * sn * ks, sn, t));
    bench_measure(o, base_row("sort_pairs", "cub", "cuda", t, "u64", sn, 1), (double)(sn * calls), reset, [&] {
      for (size_t i = 0; i < calls; i++)
        sel = bench_cub_sort(temp, tb, (char *)dk + i * sn * ks, (char *)alt + i * sn * ks, dv + i * sn,
                             valt + i * sn, sn, (int)ks);
    });
    verify_gpu_perm("cub SortPairs (small batch)", t, dk0, sel ? valt : dv, sel ? alt : dk, sn);
    bench_dev_free(alt);
    bench_dev_free(valt);
    bench_dev_free(temp);
  }
  bench_dev_free(dk);
  bench_dev_free(dk0);
  bench_dev_free(dv);
  bench_dev_free(dv0);
}
#endif

int bench_sort(const bench_opts &o) {
  std::vector<std::string> types;
  if (o.type.empty()) types = {"u32", "u64"};
  else if (o.type == "all") types = {"u32", "u64", "i32", "i64", "f32", "f64"};
  else {
    std::stringstream ss(o.type);
    std::string item;
    while (std::getline(ss, item, ',')) types.push_back(item);
  }
  size_t n = bench_n(o, 10000000);
  for (auto &backend : o.backends) {
    if (backend == "cpu") {
      std::vector<int> threads = bench_thread_list(o, "cpu");
      std::vector<double> gbps;
      for (int t : threads) gbps.push_back(bench_limit_memcpy_gbps(o, t));
      for (auto &ts : types) {
        tdm_type t = parse_type(ts);
        std::vector<char> input = make_keys(t, n, o.seed);
        bench_keys_cpu(o, t, n, input, threads, gbps);
        /* Pairs carry u64 values (the vqsort K64V64 comparison for u64 keys). */
        if (t == TDM_U64 || o.type == "all" || !o.type.empty()) bench_pairs_cpu(o, t, n, input, threads, gbps);
      }
    }
#ifdef TANDEM_BENCH_HAVE_CUDA
    if (backend == "cuda") {
      for (auto &ts : types) {
        tdm_type t = parse_type(ts);
        bench_cuda(o, t, n);
      }
    }
#endif
  }
  return 0;
}

bench_register reg_sort("sort", bench_sort);

} // namespace
