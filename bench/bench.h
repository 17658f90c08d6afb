/*
 * bench.h: the framework of tandem-bench shared by its subcommands.
 *
 * Each structure registers a subcommand from its own file:
 *   static bench_register reg_hash("hash", bench_hash);
 * and measures with bench_measure, which runs a warm-up and then `reps` timed
 * runs and reports the median, min and max rate. Rows go to the table on
 * stdout and, with --csv, to the CSV whose columns the contract fixes:
 *   structure,operation,impl,backend,key_type,value_type,n,queries,threads,reps,
 *   median_mops,min_mops,max_mops
 * The table (also written to --table) adds a units line and a note column
 * that the CSV never gets, so scripts that read the CSV are unaffected.
 * `headline` (bench_headline.cpp) is not registered: `all` and --list list
 * the structures only.
 */
#ifndef TANDEM_BENCH_H
#define TANDEM_BENCH_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <tandem/tandem.h>

#include "bench_peers.h"

struct bench_opts {
  std::vector<std::string> backends; /* "cpu", "cuda" (cuda only when usable) */
  std::string type;                  /* --type, "" when not given */
  size_t n = 0;                      /* --n, 0 when not given */
  size_t queries = 0;                /* --queries, 0 when not given */
  std::vector<int> threads;          /* --threads K (one entry), default: 1 and all cores */
  int reps = 5;                      /* --reps */
  bool peers = false;                /* --peers */
  uint64_t seed = 42;                /* --seed: inputs come from a fixed seed */
  /* --clock cpu: time runs by the process's CPU time instead of wall time.
   * On a machine shared with other busy processes, a 1-thread row then
   * leaves out the time slices other processes took (memory bandwidth they
   * share still counts). Meaningless for rows with several threads or on a
   * GPU; only 1-thread CPU comparisons should use it. */
  bool cpu_clock = false;
};

/* One measurement. value_type "" when none; queries 0 when not a query op. */
struct bench_row {
  std::string structure, operation, impl, backend, key_type, value_type;
  size_t n = 0, queries = 0;
  int threads = 1;
  int reps = 0;
  double median = 0, min = 0, max = 0; /* millions of elements or queries per second */
  /* What tells this row apart from another of the same implementation (a
   * paired measurement, a capacity hint, a code path). Printed in the table
   * only: the CSV's columns are fixed. */
  std::string note;
  bool paired = false; /* measured by bench_measure_pair */
};

/* A row with its identifying fields filled; the rates come from bench_measure. */
bench_row bench_make_row(const std::string &structure, const std::string &operation, const std::string &impl,
                         const std::string &backend, const std::string &key_type, const std::string &value_type,
                         size_t n, size_t queries, int threads);

/* Runs setup() then run() once as a warm-up, then reps times timing only
 * run(); elements is the count one run processes. Fills the rate fields of
 * row and emits it. setup may be empty. Returns the row. */
bench_row bench_measure(const bench_opts &o, bench_row row, double elements, const std::function<void()> &setup,
                        const std::function<void()> &run);
/* Two rows measured in alternation, for a ratio that the machine's drift
 * (memory bandwidth here moves by a third within minutes) must not decide:
 * one warm-up of each, then reps rounds that each time a and b once, a
 * first in even rounds and b first in odd ones. Emits both rows, then a
 * comment line with the median over the rounds of rate(a) / rate(b).
 * Returns that median. */
double bench_measure_pair(const bench_opts &o, bench_row a, double a_elements, const std::function<void()> &a_setup,
                          const std::function<void()> &a_run, bench_row b, double b_elements,
                          const std::function<void()> &b_setup, const std::function<void()> &b_run);
/* Prints a row to the table and the CSV (when open), and keeps it for the
 * summary. */
void bench_emit(const bench_row &row);
/* printf to stdout and to the --table file (when open): every line of the
 * table goes through here so that the file holds what the screen showed. */
void bench_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Every row emitted so far, in order. */
const std::vector<bench_row> &bench_rows();
/* Samples the 1-minute load average (/proc/loadavg); the summary warns when
 * the highest sample exceeds the number of cores. */
void bench_sample_load();

/* Highway's run-time targets (vqsort's, and so the CPU keys-only sorts'
 * of tandem, which share the library): leaves out the targets --isa left
 * out for the whole run, and also those of `extra` (a Highway target mask:
 * HWY_AVX3 | HWY_AVX3_DL for the vqsort-avx2 rows; 0 to restore). Nothing
 * in a build without Highway. */
void bench_hwy_disable(int64_t extra);
/* Highway's supported targets now (0 without Highway). Ask here, never
 * hwy::SupportedTargets() directly: Highway 1.0's SupportedTargets, called
 * after DisableTargets, points its dispatch back at every target of the CPU
 * (it expects its dispatcher to narrow it again right after), so a direct
 * call would undo --isa and the vqsort-avx2 rows' limit. */
int64_t bench_hwy_targets();

/* The "headline" mode (bench_headline.cpp): one row set per headline
 * operation at n = 10^7 on the CPU, with a numbered progress line per step.
 * Not a registered subcommand, so `all` and --list do not include it. */
int bench_headline(const bench_opts &o);

/* What the summary at the end of a run says besides the rows. */
struct bench_summary_info {
  std::string what;        /* the subcommand: "headline" or "all" */
  double wall_s = 0;       /* the run's wall time */
  double max_load = -1;    /* highest 1-minute load average sampled, -1 when unknown */
  std::string csv, table;  /* the files written, "" when none */
  std::vector<int> threads; /* the CPU thread counts tandem ran at */
  bool peers = false;
};
/* The closing summary: each headline operation, tandem against the best peer
 * of the run, the CPU, the thread counts, a busy-machine warning and where
 * the table and CSV went. On stdout and the --table file. */
void bench_summary(const bench_summary_info &si);

/* A context for a backend name ("cpu"/"cuda") and thread count; exits with a
 * message on failure. Destroy with tdm_ctx_destroy. */
tdm_ctx *bench_ctx(const std::string &backend, int threads);

/* Deterministic inputs: n uniform random 64-bit words from seed (splitmix64). */
std::vector<uint64_t> bench_random_u64(size_t n, uint64_t seed);
/* n distinct uniform random 64-bit keys (a bijective mix of 0..n-1 offset by
 * the seed), so hit/miss sets can be built exactly. */
std::vector<uint64_t> bench_unique_u64(size_t n, uint64_t seed);

/* Result checks: every benchmark checks what it measured (keys found, values,
 * sortedness, counts). A failed check prints "WRONG RESULT: <what>" on stdout
 * and stderr and makes tandem-bench exit with status 4 at the end; the run
 * goes on so one run reports every wrong result. Returns ok. */
bool bench_verify(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The number of failed checks so far. */
int bench_wrong_results();

/* Aborts the benchmark with the status and tdm_last_error() if s != TDM_OK. */
void bench_check(tdm_status s, const char *what);

/* A u64 -> u64 table (keep the last value of a duplicate key) with room for
 * capacity keys; max_load 0: the library's default. Aborts on failure. */
tdm_hash *bench_u64_table(tdm_ctx *c, size_t capacity, double max_load);

/* The plain peer of unique with counts: std::sort of keys (in place), then
 * one pass that writes each distinct key to the front of keys and its count
 * to counts. Returns the number of distinct keys. */
size_t bench_sort_unique_counts(std::vector<uint64_t> &keys, std::vector<uint64_t> &counts);

/* Machine ceilings, measured and emitted as rows of structure "limits":
 * memcpy bandwidth in GB/s on `threads` threads (operation memcpy_gbps, impl
 * memcpy; bytes copied per second), and the rate
 * of independent random 8-byte loads from a table of `bytes` bytes in millions
 * per second (operation gather, impl gather) on `threads` threads. */
double bench_limit_memcpy_gbps(const bench_opts &o, int threads);
double bench_limit_gather_mops(const bench_opts &o, int threads, size_t bytes);

/* Progress on stderr for long runs; silent when stderr is not a terminal. */
void bench_progress(const char *fmt, ...);

/* Thread counts to run for a backend: {1} for cuda, --threads or {1, cores}
 * for cpu. */
std::vector<int> bench_thread_list(const bench_opts &o, const std::string &backend);

/* Stops the optimiser from discarding a result. */
void bench_sink(uint64_t x);

/* The n to use: --n when given, else dflt. */
size_t bench_n(const bench_opts &o, size_t dflt);

#ifdef TANDEM_BENCH_HAVE_CUDA
/* Device memory for device-resident measurements (bench_cuda.cu); each exits
 * with a message on a CUDA error. */
void *bench_dev_alloc(size_t bytes);
void bench_dev_free(void *d);
void bench_h2d(void *d, const void *h, size_t bytes);
void bench_d2h(void *h, const void *d, size_t bytes);
void bench_d2d(void *dst, const void *src, size_t bytes);
void bench_dev_sync();
/* bench_gpu.cu: inputs from bench_gen.h's formulas, one GPU thread per
 * element. */
void bench_gpu_sort_keys(void *d, size_t n, tdm_type t, uint64_t seed);
void bench_gpu_iota(uint64_t *d, size_t n);
void bench_gpu_keys(uint64_t *d, size_t n, uint64_t seed, uint64_t first); /* bench_key(seed, first + i) */
void bench_gpu_values(uint64_t *d, size_t n, uint64_t seed);               /* bench_value(seed, i) */
void bench_gpu_queries(uint64_t *d, size_t nq, uint64_t seed, size_t n, bool miss50);
void bench_gpu_add_span(uint64_t *d_hi, const uint64_t *d_lo, size_t nq, uint64_t span); /* saturating */
/* Checks on the GPU; each returns the number of wrong elements. */
size_t bench_gpu_check_find(uint64_t seed, size_t n, size_t nq, bool miss50, const uint8_t *d_found,
                            const uint64_t *d_vals, int valmode /* 0: value = key index, 1: bench_value */);
size_t bench_gpu_check_order(const void *d_keys, size_t n, tdm_type t, bool desc);
uint64_t bench_gpu_fingerprint(const void *d_keys, size_t n, tdm_type t); /* order-independent */
size_t bench_gpu_check_perm(const void *d_keys0, const uint64_t *d_perm, const void *d_sorted, size_t n, tdm_type t,
                            bool desc);
size_t bench_gpu_check_rank(const uint64_t *d_sorted, size_t n, const uint64_t *d_q, const uint64_t *d_rank, size_t nq);
size_t bench_gpu_check_range_count(const uint64_t *d_sorted, size_t n, const uint64_t *d_lo, const uint64_t *d_hi,
                                   const uint64_t *d_cnt, size_t nq);
/* Device ceilings, emitted as "limits" rows with backend cuda: copy
 * bandwidth in GB/s of bytes copied, random 8-byte loads from a table of
 * table_bytes in M/s. */
double bench_gpu_memcpy_gbps(const bench_opts &o, size_t bytes);
double bench_gpu_gather_mops(const bench_opts &o, size_t table_bytes, size_t nq);
#ifdef TANDEM_BENCH_HAVE_CUCO
/* bench_cuco.cu: cuCollections' cuco::static_map u64 -> u64 (the default
 * linear probing by groups of 4 threads), all-ones as the empty key. create:
 * room for n keys at load `load` (cuco rounds the slot count up to a size of
 * its own: capacity() says what it took). find writes all-ones for a miss;
 * found then turns that into found flags and 0 values, as the result check
 * expects (outside the timed region). Each call waits for the device. */
struct bench_cuco_map;
bench_cuco_map *bench_cuco_create(size_t n, double load);
size_t bench_cuco_capacity(const bench_cuco_map *m);
void bench_cuco_destroy(bench_cuco_map *m);
void bench_cuco_clear(bench_cuco_map *m);
void bench_cuco_insert(bench_cuco_map *m, const uint64_t *d_keys, const uint64_t *d_vals, size_t n);
void bench_cuco_find(const bench_cuco_map *m, const uint64_t *d_q, uint64_t *d_out, size_t nq);
void bench_cuco_found(uint64_t *d_out, uint8_t *d_found, size_t nq);
#endif
#endif

typedef int (*bench_fn)(const bench_opts &o);
struct bench_register {
  bench_register(const char *name, bench_fn fn);
};

#endif /* TANDEM_BENCH_H */
