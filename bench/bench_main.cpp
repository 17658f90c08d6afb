/*
 * bench_main.cpp: tandem-bench's command line, timing, table and CSV output,
 * deterministic inputs and the machine ceilings (memcpy, random gather).
 */
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <thread>
#include <unistd.h>

#include <omp.h>

#include "bench.h"

#ifdef TANDEM_BENCH_HAVE_HWY
#include <hwy/targets.h>
#endif

namespace {

std::map<std::string, bench_fn> &registry() {
  static std::map<std::string, bench_fn> r;
  return r;
}

FILE *csv_file;
FILE *table_file; /* --table: a copy of what the table printed on stdout */
bool table_header_done;
int wrong_results;
std::vector<bench_row> emitted; /* for the summary */
double max_load = -1;           /* highest 1-minute load average sampled, -1 before any */

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/* CPU time of the whole process (all its threads), for --clock cpu. */
double cpu_s() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

uint64_t splitmix(uint64_t &x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

[[noreturn]] void usage(const char *msg) {
  if (msg) fprintf(stderr, "tandem-bench: %s\n", msg);
  fprintf(stderr,
          "usage: tandem-bench {headline|sort|hash|btree|ops|all} [--backend cpu|cuda|all] [--type T] [--n N]\n"
          "                    [--queries Q] [--threads K] [--reps R] [--peers] [--csv FILE] [--table FILE]\n"
          "                    [--seed S] [--clock wall|cpu] [--no-map-cache] [--isa avx2|sse4]\n"
          "  headline: the first run to make (`make bench`): sort u32, sort u64, sort_pairs u64+u64, hash\n"
          "  insert and find hits, B-tree build and find hits, unique and isin, on the CPU at n = 1e7\n"
          "  (--n) with 3 reps (--reps), numbered steps, then a summary: tandem against the best peer of\n"
          "  the run (with --peers), the CPU, the thread counts and a warning on a busy machine. About\n"
          "  3 minutes on 2 cores. `all --peers` is the full run (every row, every usable backend) and\n"
          "  ends with the same summary.\n"
          "  Table units: median/min/max are M/s (millions of keys or queries per second); memcpy_gbps\n"
          "  rows are GB/s. A row's note says what tells it apart from another of the same impl.\n"
          "  N and Q accept 1e7-style numbers. Default backend: all usable; default threads: 1 and all cores.\n"
          "  --clock cpu: time by process CPU time (1-thread CPU rows on a busy machine); default wall.\n"
          "  --no-map-cache: contexts keep no freed mappings (TDM_CTX_NO_MAP_CACHE).\n"
          "  --isa avx2|sse4: Highway (vqsort, and tandem's CPU keys-only sorts, which follow its\n"
          "  dispatch and pick their plan when a context is created) uses at most that instruction set\n"
          "  for the whole run: a machine measured as one without the wider vectors (its cores and\n"
          "  memory stay what they are).\n"
          "  --csv FILE: the rows as CSV; --table FILE: a copy of the printed table (and summary).\n"
          "  Every result is checked; a wrong one prints WRONG RESULT and the exit status is 4.\n");
  exit(2);
}

size_t parse_count(const char *s) {
  char *end;
  double v = strtod(s, &end);
  if (*end || !(v >= 0) || v > 1e15) usage("bad number");
  return (size_t)std::llround(v);
}

} // namespace

bench_register::bench_register(const char *name, bench_fn fn) { registry()[name] = fn; }

#ifdef TANDEM_BENCH_HAVE_HWY
/* The Highway targets --isa leaves out for the whole run. */
static int64_t hwy_off_run;
#endif

int64_t bench_hwy_targets() {
#ifdef TANDEM_BENCH_HAVE_HWY
  int64_t t = hwy::SupportedTargets();
  hwy::GetChosenTarget().Update(t);
  return t;
#else
  return 0;
#endif
}

void bench_hwy_disable(int64_t extra) {
#ifdef TANDEM_BENCH_HAVE_HWY
  hwy::DisableTargets(hwy_off_run | extra);
  (void)bench_hwy_targets();
#else
  (void)extra;
#endif
}

void bench_check(tdm_status s, const char *what) {
  if (s != TDM_OK) {
    fprintf(stderr, "tandem-bench: %s failed: %s: %s\n", what, tdm_status_name(s), tdm_last_error());
    exit(1);
  }
}

tdm_hash *bench_u64_table(tdm_ctx *c, size_t capacity, double max_load) {
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

size_t bench_sort_unique_counts(std::vector<uint64_t> &keys, std::vector<uint64_t> &counts) {
  size_t n = keys.size(), m = 0;
  std::sort(keys.begin(), keys.end());
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && keys[j] == keys[i]) j++;
    counts[m] = j - i;
    keys[m++] = keys[i];
    i = j;
  }
  return m;
}

bool bench_verify(bool ok, const char *fmt, ...) {
  if (ok) return true;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  wrong_results++;
  bench_progress("");
  bench_printf("WRONG RESULT: %s\n", msg);
  fprintf(stderr, "tandem-bench: WRONG RESULT: %s\n", msg);
  return false;
}

int bench_wrong_results() { return wrong_results; }

static volatile uint64_t sink_word;
void bench_sink(uint64_t x) { sink_word = sink_word + x; }

size_t bench_n(const bench_opts &o, size_t dflt) { return o.n ? o.n : dflt; }

void bench_progress(const char *fmt, ...) {
  static int tty = -1;
  if (tty < 0) tty = isatty(2);
  if (!tty) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "\r\033[K");
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fflush(stderr);
}

std::vector<int> bench_thread_list(const bench_opts &o, const std::string &backend) {
  if (backend == "cuda") return {1};
  if (!o.threads.empty()) return o.threads;
  int cores = (int)std::thread::hardware_concurrency();
  if (cores <= 1) return {1};
  return {1, cores};
}

/* --no-map-cache: CPU contexts keep no freed mappings (every run then pays
 * fresh pages, as the first run in a new context does). */
static unsigned ctx_flags;

tdm_ctx *bench_ctx(const std::string &backend, int threads) {
  tdm_ctx_opts opts;
  memset(&opts, 0, sizeof opts);
  opts.flags = ctx_flags;
  opts.backend = backend == "cuda" ? TDM_BACKEND_CUDA : TDM_BACKEND_CPU;
  opts.cpu_threads = threads;
  tdm_ctx *c = nullptr;
  bench_check(tdm_ctx_create(&opts, &c), "tdm_ctx_create");
  return c;
}

std::vector<uint64_t> bench_random_u64(size_t n, uint64_t seed) {
  std::vector<uint64_t> v(n);
  uint64_t x = seed;
  for (auto &e : v) e = splitmix(x);
  return v;
}

std::vector<uint64_t> bench_unique_u64(size_t n, uint64_t seed) {
  /* splitmix's finaliser is a bijection of 64-bit words, so distinct inputs
   * give distinct keys. */
  std::vector<uint64_t> v(n);
  uint64_t base = seed * 0x632be59bd9b4e019ull;
  for (size_t i = 0; i < n; i++) {
    uint64_t x = base + i * 0x9e3779b97f4a7c15ull - 0x9e3779b97f4a7c15ull;
    v[i] = splitmix(x);
  }
  return v;
}

bench_row bench_make_row(const std::string &structure, const std::string &operation, const std::string &impl,
                         const std::string &backend, const std::string &key_type, const std::string &value_type,
                         size_t n, size_t queries, int threads) {
  bench_row r;
  r.structure = structure;
  r.operation = operation;
  r.impl = impl;
  r.backend = backend;
  r.key_type = key_type;
  r.value_type = value_type;
  r.n = n;
  r.queries = queries;
  r.threads = threads;
  return r;
}

void bench_printf(const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  vprintf(fmt, ap);
  if (table_file) vfprintf(table_file, fmt, ap2);
  va_end(ap2);
  va_end(ap);
  /* Lines appear as they are measured even when stdout is a pipe (make, tee). */
  if (strchr(fmt, '\n')) {
    fflush(stdout);
    if (table_file) fflush(table_file);
  }
}

const std::vector<bench_row> &bench_rows() { return emitted; }

void bench_sample_load() {
  FILE *f = fopen("/proc/loadavg", "r");
  if (!f) return;
  double l1 = -1;
  if (fscanf(f, "%lf", &l1) == 1 && l1 > max_load) max_load = l1;
  fclose(f);
}

void bench_emit(const bench_row &r) {
  if (!table_header_done) {
    bench_printf("%-10s %-12s %-22s %-7s %-4s %-4s %12s %9s %3s %4s %10s %10s %10s  %s\n", "structure", "operation",
                 "impl", "backend", "key", "val", "n", "queries", "thr", "reps", "median", "min", "max", "note");
    /* The rates are all "millions per second" except the copy ceilings,
     * which bench_limit_memcpy_gbps scales to read as GB/s. */
    bench_printf("(units: median, min and max are M/s, millions of keys or queries per second, over the timed "
                 "runs; memcpy_gbps rows are GB/s)\n");
    table_header_done = true;
  }
  bench_progress("");
  std::string note = r.note;
  if (note.empty() && r.operation.size() > 5 && r.operation.compare(r.operation.size() - 5, 5, "_gbps") == 0)
    note = "GB/s, not M/s";
  bench_printf("%-10s %-12s %-22s %-7s %-4s %-4s %12zu %9zu %3d %4d %10.2f %10.2f %10.2f%s%s\n",
               r.structure.c_str(), r.operation.c_str(), r.impl.c_str(), r.backend.c_str(), r.key_type.c_str(),
               r.value_type.empty() ? "-" : r.value_type.c_str(), r.n, r.queries, r.threads, r.reps, r.median, r.min,
               r.max, note.empty() ? "" : "  ", note.c_str());
  emitted.push_back(r);
  if (csv_file) {
    fprintf(csv_file, "%s,%s,%s,%s,%s,%s,%zu,%zu,%d,%d,%.4f,%.4f,%.4f\n", r.structure.c_str(),
            r.operation.c_str(), r.impl.c_str(), r.backend.c_str(), r.key_type.c_str(), r.value_type.c_str(), r.n,
            r.queries, r.threads, r.reps, r.median, r.min, r.max);
    fflush(csv_file);
  }
}

/* Fills the rate fields of row from rates (sorted here). */
static void fill_rates(bench_row &row, std::vector<double> rates, int reps) {
  std::sort(rates.begin(), rates.end());
  size_t m = rates.size();
  row.reps = reps;
  row.median = m % 2 ? rates[m / 2] : 0.5 * (rates[m / 2 - 1] + rates[m / 2]);
  row.min = rates.front();
  row.max = rates.back();
}

/* One timed run (run i of reps; -1 is the warm-up) after its setup: the
 * rate in millions of elements per second. */
static double time_run(const bench_opts &o, const bench_row &row, const std::function<void()> &setup,
                       const std::function<void()> &run, double elements, int i, int reps) {
  bench_progress("%s %s %s %s %s t=%d: run %d/%d", row.structure.c_str(), row.operation.c_str(), row.impl.c_str(),
                 row.backend.c_str(), row.key_type.c_str(), row.threads, i + 1, reps);
  if (setup) setup();
  double t0 = o.cpu_clock ? cpu_s() : now_s();
  run();
  double t = (o.cpu_clock ? cpu_s() : now_s()) - t0;
  return elements / (t > 0 ? t : 1e-12) / 1e6;
}

bench_row bench_measure(const bench_opts &o, bench_row row, double elements, const std::function<void()> &setup,
                        const std::function<void()> &run) {
  std::vector<double> rates;
  int reps = o.reps > 0 ? o.reps : 1;
  for (int i = -1; i < reps; i++) { /* i = -1 is the warm-up */
    double r = time_run(o, row, setup, run, elements, i, reps);
    if (i >= 0) rates.push_back(r);
  }
  fill_rates(row, rates, reps);
  bench_emit(row);
  return row;
}

double bench_measure_pair(const bench_opts &o, bench_row a, double a_elements, const std::function<void()> &a_setup,
                          const std::function<void()> &a_run, bench_row b, double b_elements,
                          const std::function<void()> &b_setup, const std::function<void()> &b_run) {
  std::vector<double> ra, rb, ratio;
  int reps = o.reps > 0 ? o.reps : 1;
  for (int i = -1; i < reps; i++) { /* i = -1 is the warm-up of both */
    double x, y;
    if (i % 2 == 0) {
      x = time_run(o, a, a_setup, a_run, a_elements, i, reps);
      y = time_run(o, b, b_setup, b_run, b_elements, i, reps);
    } else {
      y = time_run(o, b, b_setup, b_run, b_elements, i, reps);
      x = time_run(o, a, a_setup, a_run, a_elements, i, reps);
    }
    if (i < 0) continue;
    ra.push_back(x);
    rb.push_back(y);
    ratio.push_back(x / y);
  }
  fill_rates(a, ra, reps);
  fill_rates(b, rb, reps);
  /* Paired rows repeat an implementation that has its own row elsewhere
   * (thread scaling, a bound): the note says which pair a row belongs to. */
  auto label = [](bench_row &self, const bench_row &other) {
    std::string what;
    if (self.impl == other.impl && self.operation == other.operation) {
      what = "thread-scaling pair with t=" + std::to_string(other.threads);
    } else {
      what = "paired with " + other.impl;
      if (other.operation != self.operation) what += " " + other.operation;
      if (other.threads != self.threads) what += " t=" + std::to_string(other.threads);
    }
    what += " (alternating rounds)";
    self.note = self.note.empty() ? what : self.note + "; " + what;
    self.paired = true;
  };
  label(a, b);
  label(b, a);
  bench_emit(a);
  bench_emit(b);
  std::sort(ratio.begin(), ratio.end());
  size_t m = ratio.size();
  double med = m % 2 ? ratio[m / 2] : 0.5 * (ratio[m / 2 - 1] + ratio[m / 2]);
  if (a.threads == b.threads)
    bench_printf("# %s %s / %s %s, t=%d: %.3fx (median of %zu alternating rounds)\n", a.operation.c_str(),
                 a.impl.c_str(), b.operation.c_str(), b.impl.c_str(), a.threads, med, m);
  else
    bench_printf("# %s %s t=%d / %s %s t=%d: %.3fx (median of %zu alternating rounds)\n", a.operation.c_str(),
                 a.impl.c_str(), a.threads, b.operation.c_str(), b.impl.c_str(), b.threads, med, m);
  return med;
}

double bench_limit_memcpy_gbps(const bench_opts &o, int threads) {
  size_t bytes = (size_t)256 << 20;
  std::vector<char> a(bytes, 1), b(bytes, 2);
  bench_row row;
  row.structure = "limits";
  row.operation = "memcpy_gbps";
  row.impl = "memcpy";
  row.backend = "cpu";
  row.key_type = "u8";
  row.n = bytes;
  row.threads = threads;
  /* The rate is reported in GB/s: elements = bytes / 1e3 makes the
   * "millions per second" of bench_measure read as GB/s. */
  row = bench_measure(o, row, (double)bytes / 1e3, nullptr, [&] {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int t = 0; t < threads; t++) {
      size_t lo = bytes / threads * t, hi = t == threads - 1 ? bytes : bytes / threads * (t + 1);
      memcpy(b.data() + lo, a.data() + lo, hi - lo);
    }
  });
  bench_sink((uint64_t)b[bytes / 2]);
  return row.median;
}

double bench_limit_gather_mops(const bench_opts &o, int threads, size_t bytes) {
  size_t words = bytes / 8, q = 1u << 24;
  std::vector<uint64_t> table = bench_random_u64(words, 7);
  std::vector<uint64_t> idx = bench_random_u64(q, 11);
  for (auto &e : idx) e %= words;
  bench_row row;
  row.structure = "limits";
  row.operation = "gather";
  row.impl = "gather";
  row.backend = "cpu";
  row.key_type = "u64";
  row.n = words;
  row.queries = q;
  row.threads = threads;
  uint64_t total = 0;
  /* Independent loads (addresses do not depend on earlier loads), summed so
   * none can be skipped: the memory system's random-access throughput. */
  row = bench_measure(o, row, (double)q, nullptr, [&] {
    uint64_t s = 0;
#pragma omp parallel for num_threads(threads) reduction(+ : s) schedule(static)
    for (long i = 0; i < (long)q; i++) s += table[idx[i]];
    total += s;
  });
  bench_sink(total);
  return row.median;
}

int main(int argc, char **argv) {
  if (argc < 2) usage(nullptr);
  std::string what = argv[1];
  if (what == "-h" || what == "--help") usage(nullptr);
  if (what == "--list") { /* the subcommands this build has */
    for (auto &kv : registry()) printf("%s\n", kv.first.c_str());
    return 0;
  }
  double t_start = now_s();
  bench_sample_load(); /* before the run adds its own threads to the load */
  bench_opts o;
  std::string backend = "all", csv, table;
  bool reps_given = false;
  for (int i = 2; i < argc; i++) {
    std::string a = argv[i];
    auto val = [&](void) -> const char * {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--backend") backend = val();
    else if (a == "--type") o.type = val();
    else if (a == "--n") o.n = parse_count(val());
    else if (a == "--queries") o.queries = parse_count(val());
    else if (a == "--threads") o.threads = {(int)parse_count(val())};
    else if (a == "--reps") {
      o.reps = (int)parse_count(val());
      reps_given = true;
    }
    else if (a == "--seed") o.seed = parse_count(val());
    else if (a == "--peers") o.peers = true;
    else if (a == "--no-map-cache") ctx_flags |= TDM_CTX_NO_MAP_CACHE;
    else if (a == "--isa") {
      std::string v = val();
      if (v != "avx2" && v != "sse4") usage("--isa must be avx2 or sse4");
#ifdef TANDEM_BENCH_HAVE_HWY
      hwy_off_run = HWY_AVX3 | HWY_AVX3_DL | (v == "sse4" ? HWY_AVX2 : 0);
#else
      usage("--isa needs a build with Highway");
#endif
      bench_hwy_disable(0);
    }
    else if (a == "--clock") {
      std::string c = val();
      if (c != "wall" && c != "cpu") usage("--clock must be wall or cpu");
      o.cpu_clock = (c == "cpu");
    }
    else if (a == "--csv") csv = val();
    else if (a == "--table") table = val();
    else usage(("unknown option " + a).c_str());
  }
  if (!o.threads.empty() && o.threads[0] < 1) usage("--threads must be >= 1");
  bool headline = what == "headline";
  if (headline) {
    /* A newcomer's first run: the CPU only, three timed runs unless asked. */
    if (backend == "all") backend = "cpu";
    if (backend != "cpu") usage("headline runs on the CPU only (GPU rows: all --backend cuda)");
    if (!reps_given) o.reps = 3;
  }
  if (backend == "cpu" || backend == "all") o.backends.push_back("cpu");
  if (backend == "cuda" || backend == "all") {
    tdm_ctx_opts co;
    memset(&co, 0, sizeof co);
    co.backend = TDM_BACKEND_CUDA;
    tdm_ctx *c = nullptr;
    tdm_status s = tdm_ctx_create(&co, &c);
    if (s == TDM_OK) {
      o.backends.push_back("cuda");
      tdm_ctx_destroy(c);
    } else {
      fprintf(stderr, "tandem-bench: skipping cuda: %s\n", tdm_last_error());
      if (backend == "cuda") return 3;
    }
  }
  if (o.backends.empty()) usage("--backend must be cpu, cuda or all");

  std::vector<std::string> selected;
  if (what == "all") {
    for (auto &kv : registry()) selected.push_back(kv.first);
  } else if (headline) {
    /* bench_headline runs below, not from the registry */
  } else if (registry().count(what)) {
    selected.push_back(what);
  } else {
    usage(("unknown benchmark " + what).c_str());
  }
  if (!csv.empty()) {
    csv_file = fopen(csv.c_str(), "w");
    if (!csv_file) {
      perror(csv.c_str());
      return 1;
    }
    fprintf(csv_file, "structure,operation,impl,backend,key_type,value_type,n,queries,threads,reps,median_mops,"
                      "min_mops,max_mops\n");
  }
  if (!table.empty()) {
    table_file = fopen(table.c_str(), "w");
    if (!table_file) {
      perror(table.c_str());
      return 1;
    }
  }
  bench_printf("tandem-bench %s: tandem %s, CUDA devices: %d, cores: %u, reps: %d%s\n", what.c_str(), tdm_version(),
               tdm_cuda_device_count(), std::thread::hardware_concurrency(), o.reps,
               o.cpu_clock ? ", clock: process CPU time" : "");
  int rc = 0;
  if (headline) {
    rc |= bench_headline(o);
  } else {
    for (auto &name : selected) {
      bench_sample_load();
      rc |= registry()[name](o);
    }
  }
  /* The summary closes the runs a newcomer makes; a single structure's run
   * is for someone who reads the table. */
  if (headline || what == "all") {
    bench_sample_load();
    bench_summary_info si;
    si.what = what;
    si.wall_s = now_s() - t_start;
    si.max_load = max_load;
    si.csv = csv;
    si.table = table;
    si.threads = bench_thread_list(o, "cpu");
    si.peers = o.peers;
    bench_summary(si);
  }
  if (csv_file) fclose(csv_file);
  if (table_file) fclose(table_file);
  if (wrong_results) {
    fprintf(stderr, "tandem-bench: %d WRONG RESULT(s)\n", wrong_results);
    return 4;
  }
  return rc;
}
