/*
 * meter.cc: the cost meter of the emulated device (test-only). What bulk GPU
 * work costs is mostly memory traffic, so this counts it as the hardware
 * would see it:
 *  - every global load and store of code compiled with ThreadSanitizer's
 *    instrumentation (-fsanitize=thread at compile time only: the build links
 *    no libtsan, the entry points of meter_hooks.cc stand in for it), grouped into
 *    warp-level accesses: the same block, warp, call site and visit count of
 *    each lane at that site form one access, and the distinct 32-byte sectors
 *    and 128-byte lines it touches are what a coalescing memory system
 *    fetches. Only device memory counts (the allocation table, snapshotted
 *    at each kernel's start): locals and host memory do not;
 *  - the block's __shared__ memory, grouped the same way: per warp-level
 *    access the wavefronts its lanes need, the most distinct 4-byte words
 *    in one of the 32 banks, and the replays among them, the wavefronts
 *    beyond what the access's width needs (its distinct words / 32, rounded
 *    up): lanes reading one word share it, lanes on distinct words of one
 *    bank wait for each other;
 *  - atomics on device memory (the prelude's atomic functions call
 *    atomic_at), and the most that land on one address in one launch;
 *  - per call (runtime.cc): launches, host waits, copies by direction,
 *    allocations, pointer-attribute queries, and the modelled traffic of the CUB stand-ins, copies and
 *    memsets (model()).
 * It is off until tdm_emu_meter_start; the hooks then cost a table lookup per
 * access. Caches, timing, occupancy and vector widths are outside it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "emu_internal.h"
#include "emu_meter.h"

namespace tdm_emu {
namespace meter {

namespace {

std::mutex mu;
bool on;
tdm_emu_meter tot;
/* Live device ranges [base, end), sorted, as the running kernel saw them at
 * its start (workers never read the allocation table itself). */
std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
uintptr_t lo_addr, hi_addr;
/* Atomics of the running launch per address (merged at each block's end). */
std::unordered_map<uintptr_t, uint64_t> launch_atomics;
/* Where the sectors went, per kernel or modelled call (TANDEM_EMU_METER_KERNELS). */
struct part {
  uint64_t launches, load_sectors, store_sectors, atomics;
};
std::map<std::string, part> parts;
std::string running_kernel;

struct key_hash {
  size_t operator()(const std::pair<uint64_t, uint64_t> &k) const {
    uint64_t z = k.first * 0x9E3779B97F4A7C15ull ^ (k.second + 0x632BE59BD9B4E019ull);
    z ^= z >> 29;
    return (size_t)(z * 0xBF58476D1CE4E5B9ull);
  }
};

struct access {
  uintptr_t addr;
  uint32_t bytes;
};

/* One block's accesses (the worker running it): per (thread, site) how often
 * the thread came by, per (warp, site, visit, store) what its lanes touched. */
struct block_log {
  std::unordered_map<std::pair<uint64_t, uint64_t>, uint32_t, key_hash> visits;
  std::unordered_map<std::pair<uint64_t, uint64_t>, std::vector<access>, key_hash> groups, shared_groups;
  std::unordered_map<uintptr_t, uint64_t> atomics;
  uint64_t n_access = 0, n_atomic = 0;
};
thread_local block_log blog;

bool in_device(uintptr_t a) {
  if (a < lo_addr || a >= hi_addr) return false;
  auto it = std::upper_bound(ranges.begin(), ranges.end(), std::make_pair(a, UINTPTR_MAX));
  if (it == ranges.begin()) return false;
  --it;
  return a < it->second;
}

}  // namespace

void record(const void *site, const void *p, size_t bytes, bool store) {
  if (!on || !cur || !bytes) return;
  uintptr_t a = (uintptr_t)p;
  bool shared = false;
  if (!in_device(a) && !(shared = in_block_shared(p))) return;
  const thread_state *t = cur;
  uint64_t linear = ((uint64_t)t->tid.z * t->bdim.y + t->tid.y) * t->bdim.x + t->tid.x;
  uint64_t s = (uint64_t)(uintptr_t)site << 1 | (store ? 1u : 0u);
  uint32_t visit = blog.visits[std::make_pair(linear, s)]++;
  (shared ? blog.shared_groups : blog.groups)[std::make_pair((linear / 32) << 32 | visit, s)].push_back(
      access{a, (uint32_t)bytes});
  blog.n_access += !shared;
}

namespace {

/* Distinct units of 2^shift bytes the accesses touch. */
uint64_t distinct(const std::vector<access> &v, int shift, std::vector<uintptr_t> &scratch) {
  scratch.clear();
  for (const access &x : v)
    for (uintptr_t u = x.addr >> shift; u <= (x.addr + x.bytes - 1) >> shift; u++) scratch.push_back(u);
  std::sort(scratch.begin(), scratch.end());
  return (uint64_t)(std::unique(scratch.begin(), scratch.end()) - scratch.begin());
}

/* Wavefronts of one warp-level shared-memory access: the most distinct
 * 4-byte words in one bank (words differ in a bank by multiples of 128
 * bytes, so the allocation's base does not matter). */
uint64_t wavefronts(const std::vector<access> &v, std::vector<uintptr_t> &scratch, uint64_t *words) {
  uint64_t per_bank[32] = {0};
  *words = distinct(v, 2, scratch); /* leaves the distinct words, sorted, in scratch */
  for (uint64_t i = 0; i < *words; i++) per_bank[scratch[i] & 31]++;
  return *std::max_element(per_bank, per_bank + 32);
}

}  // namespace

void kernel_begin(const std::string &name) {
  if (!on) return;
  std::lock_guard<std::mutex> lk(mu);
  running_kernel = name;
  parts[name].launches++;
  device_ranges(ranges);
  lo_addr = ranges.empty() ? 0 : ranges.front().first;
  hi_addr = ranges.empty() ? 0 : ranges.back().second;
  launch_atomics.clear();
}

void kernel_end(void) {
  if (!on) return;
  std::lock_guard<std::mutex> lk(mu);
  for (auto &kv : launch_atomics) tot.max_same_address_atomics = std::max(tot.max_same_address_atomics, (unsigned long long)kv.second);
  launch_atomics.clear();
}

void block_end(void) {
  if (!on) {
    if (!blog.groups.empty() || !blog.shared_groups.empty() || !blog.visits.empty()) blog = block_log();
    return;
  }
  uint64_t ls = 0, ss = 0, ll = 0, sl = 0, lg = 0, sg = 0;
  std::vector<uintptr_t> scratch;
  for (auto &kv : blog.groups) {
    bool store = kv.first.second & 1u;
    uint64_t sectors = distinct(kv.second, 5, scratch), lines = distinct(kv.second, 7, scratch);
    (store ? ss : ls) += sectors;
    (store ? sl : ll) += lines;
    (store ? sg : lg)++;
  }
  uint64_t sreq = 0, swave = 0, sreplay = 0;
  for (auto &kv : blog.shared_groups) {
    uint64_t words, w = wavefronts(kv.second, scratch, &words);
    sreq++;
    swave += w;
    sreplay += w - (words + 31) / 32;
  }
  std::lock_guard<std::mutex> lk(mu);
  tot.shared_requests += sreq;
  tot.shared_wavefronts += swave;
  tot.bank_conflict_replays += sreplay;
  tot.load_sectors += ls;
  tot.store_sectors += ss;
  tot.load_lines += ll;
  tot.store_lines += sl;
  tot.load_requests += lg;
  tot.store_requests += sg;
  tot.accesses += blog.n_access;
  tot.atomics += blog.n_atomic;
  part &pk = parts[running_kernel];
  pk.load_sectors += ls;
  pk.store_sectors += ss;
  pk.atomics += blog.n_atomic;
  for (auto &kv : blog.atomics) launch_atomics[kv.first] += kv.second;
  blog.visits.clear();
  blog.groups.clear();
  blog.shared_groups.clear();
  blog.atomics.clear();
  blog.n_access = blog.n_atomic = 0;
}

/* Atomics on device memory only: shared-memory atomics stay on the SM. */
void atomic(const void *p) {
  if (!on || !cur || !in_device((uintptr_t)p)) return;
  blog.atomics[(uintptr_t)p]++;
  blog.n_atomic++;
}

void count(event e, uint64_t amount) {
  if (!on) return;
  std::lock_guard<std::mutex> lk(mu);
  switch (e) {
  case E_KERNEL: tot.kernels += amount; break;
  case E_CUB: tot.cub_calls += amount; break;
  case E_SYNC: tot.host_syncs += amount; break;
  case E_H2D: tot.h2d_bytes += amount; break;
  case E_D2H: tot.d2h_bytes += amount; break;
  case E_ALLOC: tot.allocs += amount; break;
  case E_PTR_QUERY: tot.ptr_queries += amount; break;
  case E_MODEL_READ:
    tot.model_read_sectors += (amount + 31) / 32;
    parts[std::string(running_op ? running_op : "copies and memsets") + " (modelled)"].load_sectors += (amount + 31) / 32;
    break;
  case E_MODEL_WRITE:
    tot.model_write_sectors += (amount + 31) / 32;
    parts[std::string(running_op ? running_op : "copies and memsets") + " (modelled)"].store_sectors += (amount + 31) / 32;
    break;
  }
}

}  // namespace meter

void meter_model(size_t read_bytes, size_t write_bytes) {
  meter::count(meter::E_MODEL_READ, read_bytes);
  meter::count(meter::E_MODEL_WRITE, write_bytes);
}

bool meter_on(void) { return meter::on; }

void atomic_at(const void *p) {
  meter::atomic(p);
  switch_point();
}

}  // namespace tdm_emu

using namespace tdm_emu;

#define API extern "C" __attribute__((visibility("default")))

API void tdm_emu_meter_start(void) {
  std::lock_guard<std::mutex> lk(meter::mu);
  memset(&meter::tot, 0, sizeof meter::tot);
  meter::parts.clear();
  meter::on = true;
}

/* TANDEM_EMU_METER_KERNELS=1: where the sectors went since the start, most
 * first, on stderr. */
API void tdm_emu_meter_stop(void) {
  std::lock_guard<std::mutex> lk(meter::mu);
  meter::on = false;
  const char *e = getenv("TANDEM_EMU_METER_KERNELS");
  if (!e || !*e || !strcmp(e, "0")) return;
  std::vector<std::pair<uint64_t, std::string>> order;
  for (auto &kv : meter::parts) order.push_back(std::make_pair(kv.second.load_sectors + kv.second.store_sectors, kv.first));
  std::sort(order.rbegin(), order.rend());
  for (auto &o : order) {
    const meter::part &pk = meter::parts[o.second];
    fprintf(stderr, "  meter: %12llu sectors (%llu read, %llu written) %6llu atomics %4llu kernels  %s\n",
            (unsigned long long)o.first, (unsigned long long)pk.load_sectors, (unsigned long long)pk.store_sectors,
            (unsigned long long)pk.atomics, (unsigned long long)pk.launches, o.second.c_str());
  }
}

API void tdm_emu_meter_read(tdm_emu_meter *m) {
  drain(); /* queued work is what the calls cost too */
  std::lock_guard<std::mutex> lk(meter::mu);
  *m = meter::tot;
  m->launches = m->kernels + m->cub_calls;
  m->sectors = m->load_sectors + m->store_sectors + m->model_read_sectors + m->model_write_sectors;
}
