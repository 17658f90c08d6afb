/*
 * exec.cc: the emulated device's execution engine. A kernel's blocks are
 * dispatched in an order drawn from the seed to the worker pool (pool.cc),
 * which runs several blocks at once; each CUDA thread of a block is a fiber
 * with its own stack (switch_x86_64.S), all fibers of a block on one worker,
 * so __syncthreads and warp collectives work: a fiber runs until it reaches a
 * barrier, a collective or (drawn by the seed) an atomic or a volatile load
 * or store, then the block's scheduler picks another ready fiber at random.
 * Each block draws from its own random stream, derived from the seed and the
 * block's index, so its switch points do not depend on which worker runs it
 * or when. Collectives run in lock step with CUDA's mask rules checked; a
 * violation stops the kernel with a sticky device error naming kernel,
 * block, thread and seed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "emu_internal.h"
#include "emu_tsan.h"

/* An ASan build: the emulator itself may be uninstrumented
 * (TDM_EMU_ASAN_FIBERS, CMakeLists.txt) but still annotates its fiber
 * switches for the instrumented code that runs on the fibers' stacks. */
#if defined(__SANITIZE_ADDRESS__) || defined(TDM_EMU_ASAN_FIBERS)
#include <sanitizer/asan_interface.h>
#define TDM_EMU_ASAN 1
#endif

extern "C" void tdm_emu_switch(void **save_sp, void *next_sp);

namespace tdm_emu {

thread_local thread_state *cur;

namespace {

static inline uint3 mk_uint3(unsigned x, unsigned y, unsigned z) {
  uint3 u;
  u.x = x;
  u.y = y;
  u.z = z;
  return u;
}

enum fstate { READY, AT_BARRIER, AT_COLL, DONE };

#ifdef TDM_EMU_ASAN
const size_t STACK = 512 * 1024;
#else
const size_t STACK = 128 * 1024;
#endif

struct fiber {
  void *sp;
  char *stack;
  fstate st;
  int linear, lane, warp;
  thread_state ts;
  void *fake; /* ASan's fake stack of the fiber while switched out */
  void *tsan; /* its TSan context (emu_tsan.h) */
  int quiet;  /* emulator scopes it is inside, for TSan (fiber_quiet) */
};

struct pending {
  coll_op op;
  unsigned mask, arrived;
  int width;
  size_t bytes;
  const char *what;
  uint64_t in[32][2];
  int operand[32];
  void *out[32];
  void *sync; /* TSan: what the arrived lanes released */
};

struct shared_block {
  const void *site;
  void *p;
  size_t bytes;
};

struct block_run {
  const kernel *k;
  uint3 bid;
  int n, done, at_barrier;
  std::vector<fiber> f;
  std::vector<int> ready;
  /* Each warp's waiting collectives, one per mask (a warp's tiles may each
   * wait at their own), taken from spare and given back when done, so no
   * pending (1.3 KB) is ever copied: copies were most of the sanitized
   * emulator's time (AddressSanitizer's memmove is a byte loop). */
  std::vector<std::vector<std::unique_ptr<pending>>> warps;
  std::vector<std::unique_ptr<pending>> spare;
  std::vector<shared_block> shared;
  bool faulted;
  uint64_t rng; /* the block's random stream: scheduling and switch points */
  void *sched_sp;
  const void *sched_bottom;
  size_t sched_size;
  void *sched_tsan; /* the scheduler's TSan context */
  void *bar_sync;   /* TSan: what the threads at the barrier released */
  uint64_t epoch;   /* barriers the block has passed (barrier_epoch) */
};

thread_local block_run *blk;
thread_local fiber *self;
/* Fiber stacks of this worker, reused by its blocks; freed when it exits. */
struct stack_set {
  std::vector<char *> v;
  ~stack_set() {
    for (char *p : v) free(p);
  }
};
thread_local stack_set stacks;

/* How often (per 256) an atomic / a volatile access switches fibers:
 * TANDEM_EMU_PREEMPT, TANDEM_EMU_PREEMPT_MEM (0 turns them off). */
struct knobs {
  int atomic_per_256, mem_per_256;
};
const knobs &rates(void) {
  static const knobs k = [] {
    const char *a = getenv("TANDEM_EMU_PREEMPT"), *m = getenv("TANDEM_EMU_PREEMPT_MEM");
    return knobs{a && *a ? atoi(a) : 32, m && *m ? atoi(m) : 32};
  }();
  return k;
}

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
uint64_t next_rand(uint64_t *state) { return mix64(*state += 0x9E3779B97F4A7C15ull); }

/* ---- TSan's view (emu_tsan.h; all of it empty in other builds) ----------- */

/* The emulator's bookkeeping inside a CUDA thread: not seen by TSan, and
 * counted, so a thread stopped inside it can be unwound at the block's end
 * (TSan refuses to end a fiber that still ignores). */
struct fiber_quiet {
  fiber *f;
  fiber_quiet() : f(self) {
    tsan::ignore_begin();
    if (f) f->quiet++;
  }
  ~fiber_quiet() {
    if (f) f->quiet--;
    tsan::ignore_end();
  }
};

/* The end of a barrier or a collective: each member acquires what every one
 * released when it arrived (TSan's context switched to the member, no stack
 * switch); the token is dropped, so the next barrier starts fresh. */
template <typename Each>
void leave_together(void *&sync, Each members) {
  if (!tsan::on || !sync) return;
  void *back = tsan::current();
  members([&](fiber &f) {
    tsan::enter(f.tsan);
    tsan::acquire(sync);
  });
  tsan::enter(back);
  tsan::drop(sync);
  sync = nullptr;
}

/* A TSan context costs about a millisecond to create, so CUDA threads take
 * theirs from a pool, each with a stack of its own for good (TSan cannot be
 * told to forget a range's history, so no two contexts share a stack). A
 * reused context remembers its last CUDA thread: what that thread did counts
 * as before the new one. The pick is random (seeded, apart from the
 * scheduler's stream) among spare contexts, so which pairs of threads that
 * hides changes with the seed. */
struct tsan_ctx {
  void *ctx;
  char *stack;
};
std::vector<tsan_ctx> pool;
std::mutex pool_mu;
uint64_t pool_rng;
const size_t POOL_SPARE = 512;

void fibers_begin(block_run &b) {
  b.sched_tsan = tsan::current();
  b.bar_sync = nullptr;
  for (fiber &f : b.f) f.quiet = 0;
  if (!tsan::on) return;
  std::lock_guard<std::mutex> lk(pool_mu);
  if (!pool_rng) pool_rng = seed() * 0x9E3779B97F4A7C15ull | 1u;
  while (pool.size() < b.f.size() + POOL_SPARE) pool.push_back(tsan_ctx{tsan::create(), (char *)malloc(STACK)});
  for (fiber &f : b.f) {
    pool_rng ^= pool_rng << 13;
    pool_rng ^= pool_rng >> 7;
    pool_rng ^= pool_rng << 17;
    size_t i = (size_t)(pool_rng % pool.size());
    f.tsan = pool[i].ctx;
    f.stack = pool[i].stack;
    pool[i] = pool.back();
    pool.pop_back();
  }
}

void fibers_end(block_run &b) {
  if (!tsan::on) return;
  std::lock_guard<std::mutex> lk(pool_mu);
  for (fiber &f : b.f) {
    if (f.quiet) {
      tsan::enter(f.tsan);
      for (; f.quiet > 0; f.quiet--) tsan::ignore_end();
      tsan::enter(b.sched_tsan);
    }
    pool.push_back(tsan_ctx{f.tsan, f.stack});
  }
  tsan::drop(b.bar_sync);
  for (auto &w : b.warps)
    for (auto &p : w) tsan::drop(p->sync);
}

/* Launch and end of a grid, in the context that runs it (the host thread
 * that forces it, runtime.cc): every CUDA thread acquires what that context
 * did before and releases at its end; the context acquires all of that when
 * the grid is done. */
struct grid_edges {
  const kernel &k;
  explicit grid_edges(const kernel &k_) : k(k_) {
    k.tsan_start = tsan::token();
    k.tsan_end = tsan::token();
    tsan::release(k.tsan_start);
  }
  ~grid_edges() {
    tsan::acquire(k.tsan_end);
    tsan::drop(k.tsan_start);
    tsan::drop(k.tsan_end);
  }
};

void to_scheduler(bool final) {
  fiber *me = self;
#ifdef TDM_EMU_ASAN
  __sanitizer_start_switch_fiber(final ? nullptr : &me->fake, blk->sched_bottom, blk->sched_size);
#else
  (void)final;
#endif
  tsan::enter(blk->sched_tsan);
  tdm_emu_switch(&me->sp, blk->sched_sp);
#ifdef TDM_EMU_ASAN
  __sanitizer_finish_switch_fiber(me->fake, nullptr, nullptr);
#endif
}

void fiber_entry(void) {
#ifdef TDM_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &blk->sched_bottom, &blk->sched_size);
#endif
  tsan::acquire(blk->k->tsan_start); /* launch: the work before it */
  blk->k->body();
  tsan::release(blk->k->tsan_end);
  fiber_quiet q;
  fiber *me = self;
  me->st = DONE;
  blk->done++;
  /* A lane that exits while its warp waits for it at a collective. */
  for (auto &p : blk->warps[me->warp])
    if (p->mask >> me->lane & 1u)
      device_fault("thread exited while lanes %#x of its warp wait for it at %s", p->arrived, p->what);
  to_scheduler(true);
  abort(); /* never resumed */
}

void run_fiber(fiber *f) {
  self = f;
  cur = &f->ts;
#ifdef TDM_EMU_ASAN
  void *fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, f->stack, STACK);
#endif
  tsan::enter(f->tsan);
  tdm_emu_switch(&blk->sched_sp, f->sp);
#ifdef TDM_EMU_ASAN
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
  self = nullptr;
  cur = nullptr;
}

void make_ready(int i) {
  blk->f[i].st = READY;
  blk->ready.push_back(i);
}

std::string where_now() {
  char b[256];
  if (!blk) return std::string();
  if (self)
    snprintf(b, sizeof b, "kernel %s (%s), block (%u,%u,%u), thread (%u,%u,%u)", blk->k->name.c_str(),
             blk->k->where.c_str(), blk->bid.x, blk->bid.y, blk->bid.z, self->ts.tid.x, self->ts.tid.y,
             self->ts.tid.z);
  else
    snprintf(b, sizeof b, "kernel %s (%s), block (%u,%u,%u)", blk->k->name.c_str(), blk->k->where.c_str(),
             blk->bid.x, blk->bid.y, blk->bid.z);
  return b;
}

void block_fault(const std::string &msg) {
  blk->faulted = true;
  device_error_on(blk->k->device, cudaErrorLaunchFailure, where_now() + ": " + msg);
}

/* Runs one block to its end on the calling worker, its fibers scheduled from
 * the random stream rng; false after a fault. */
bool run_block(const kernel &k, uint3 bid, uint64_t rng) {
  tsan::quiet q;
  block_run b;
  b.k = &k;
  b.bid = bid;
  b.rng = rng;
  b.n = (int)(k.b.x * k.b.y * k.b.z);
  b.done = b.at_barrier = 0;
  b.epoch = 0;
  b.faulted = false;
  b.f.resize(b.n);
  b.warps.resize((b.n + 31) / 32);
  while (!tsan::on && (int)stacks.v.size() < b.n) stacks.v.push_back((char *)malloc(STACK));
  fibers_begin(b);
  blk = &b;
  for (int i = 0; i < b.n; i++) {
    fiber &f = b.f[i];
    if (!tsan::on) f.stack = stacks.v[i];
    f.linear = i;
    f.lane = i % 32;
    f.warp = i / 32;
    f.fake = nullptr;
    f.ts.tid = mk_uint3(i % k.b.x, i / k.b.x % k.b.y, i / (k.b.x * k.b.y));
    f.ts.bid = bid;
    f.ts.bdim = k.b;
    f.ts.gdim = k.g;
    uintptr_t top = ((uintptr_t)f.stack + STACK) & ~(uintptr_t)15;
    void **sp = (void **)top;
    *--sp = nullptr;              /* fake return address of fiber_entry */
    *--sp = (void *)fiber_entry;  /* where the switch returns to */
    for (int r = 0; r < 6; r++) *--sp = nullptr;
    f.sp = sp;
    b.ready.push_back(i);
  }
  while (!b.faulted) {
    if (b.ready.empty()) {
      if (b.done == b.n) break;
      if (b.at_barrier && b.at_barrier + b.done == b.n) {
        if (b.done) {
          block_fault(std::to_string(b.done) + " thread(s) exited before a __syncthreads the other " +
                      std::to_string(b.at_barrier) + " wait at");
          break;
        }
        b.at_barrier = 0;
        b.epoch++;
        leave_together(b.bar_sync, [&b](auto acq) {
          for (fiber &f : b.f) acq(f);
        });
        for (int i = 0; i < b.n; i++) make_ready(i);
        continue;
      }
      std::string m = "deadlock: " + std::to_string(b.at_barrier) + " thread(s) at __syncthreads, " +
                      std::to_string(b.n - b.done - b.at_barrier) + " at warp collectives, " +
                      std::to_string(b.done) + " exited";
      block_fault(m);
      break;
    }
    size_t pick = (size_t)(next_rand(&b.rng) % b.ready.size());
    int i = b.ready[pick];
    b.ready[pick] = b.ready.back();
    b.ready.pop_back();
    run_fiber(&b.f[i]);
  }
  fibers_end(b);
  meter::block_end();
  for (auto &s : b.shared) free(s.p);
  blk = nullptr;
  return !b.faulted;
}

int pred_of(const pending &p, int j) {
  int v;
  memcpy(&v, p.in[j], sizeof v);
  return v;
}

/* A collective's value (at most 16 bytes) copied by fixed-size copies,
 * which the compiler turns into moves: a call to memcpy is a byte loop
 * under AddressSanitizer's interceptor, which made these copies most of
 * the sanitized emulator's time. */
void copy_value(void *d, const void *s, size_t n) {
  switch (n) {
  case 0: break;
  case 1: memcpy(d, s, 1); break;
  case 2: memcpy(d, s, 2); break;
  case 4: memcpy(d, s, 4); break;
  case 8: memcpy(d, s, 8); break;
  case 16: memcpy(d, s, 16); break;
  default: memcpy(d, s, n);
  }
}

void compute(pending &p, block_run &b, int warp) {
  /* What every lane's answer derives from, gathered once per collective
   * (not once per lane: the last arrival computes for all 32). */
  unsigned bits = 0;
  int any = 0, all = 1;
  if (p.op == C_BALLOT || p.op == C_ANY || p.op == C_ALL)
    for (int j = 0; j < 32; j++)
      if (p.mask >> j & 1u) {
        int v = pred_of(p, j);
        bits |= (unsigned)(v != 0) << j;
        any |= v;
        all &= v;
      }
  for (int i = 0; i < 32; i++) {
    if (!(p.mask >> i & 1u)) continue;
    int base = i / p.width * p.width;
    uint64_t r[2] = {0, 0};
    switch (p.op) {
    case C_BALLOT: {
      unsigned seg = p.width == 32 ? bits : (bits >> base) & ((1u << p.width) - 1u);
      memcpy(r, &seg, sizeof seg);
      break;
    }
    case C_ANY:
    case C_ALL: {
      int v = p.op == C_ANY ? any : all;
      memcpy(r, &v, sizeof v);
      break;
    }
    case C_SYNC: break;
    case C_MATCH_ANY: {
      /* The lanes of the mask whose value has the same bytes as this lane's
       * (each value is zero-padded to its 16 bytes on arrival, so comparing
       * the words compares the value's bytes). */
      unsigned m = 0;
      for (int j = 0; j < 32; j++)
        if ((p.mask >> j & 1u) && p.in[j][0] == p.in[i][0] && p.in[j][1] == p.in[i][1]) m |= 1u << j;
      memcpy(r, &m, sizeof m);
      break;
    }
    default: {
      int src;
      int o = p.operand[i];
      if (p.op == C_SHFL) src = base + (o % p.width + p.width) % p.width;
      else if (p.op == C_SHFL_DOWN) src = i + o - base < p.width ? i + o : i;
      else if (p.op == C_SHFL_UP) src = i - o >= base ? i - o : i;
      else src = ((i ^ o) - base) < p.width && (i ^ o) >= base ? (i ^ o) : i;
      if (!(p.mask >> src & 1u)) {
        self = &b.f[warp * 32 + i];
        block_fault(std::string(p.what) + ": lane " + std::to_string(i) + " reads lane " + std::to_string(src) +
                    ", which is not in the mask");
        return;
      }
      copy_value(r, p.in[src], p.bytes);
    }
    }
    if (p.out[i]) copy_value(p.out[i], r, p.bytes);
  }
}

}  // namespace

int lane_id(void) { return self ? self->lane : 0; }

void device_fault(const char *fmt, ...) {
  char m[512];
  va_list ap;
  fiber_quiet q;
  va_start(ap, fmt);
  vsnprintf(m, sizeof m, fmt, ap);
  va_end(ap);
  if (!blk || !self) {
    device_error(cudaErrorLaunchFailure, std::string(running_op ? running_op : "device code") + ": " + m);
    abort();
  }
  block_fault(m);
  to_scheduler(true);
  abort();
}

/* Lets another ready fiber of the block run first, with probability
 * per_256 / 256 drawn from the block's stream. */
static void maybe_switch(int per_256) {
  fiber_quiet q; /* no edge: an atomic or a volatile access is relaxed */
  if ((int)(next_rand(&blk->rng) & 255u) >= per_256) return;
  make_ready(self->linear);
  to_scheduler(false);
}

void switch_point(void) {
  if (self) maybe_switch(rates().atomic_per_256);
}

void yield(void) {
  if (!self) return;
  fiber_quiet q;
  make_ready(self->linear);
  to_scheduler(false);
}

uint64_t barrier_epoch(void) { return blk ? blk->epoch : 0; }

void mem_switch_point(void) {
  if (self && rates().mem_per_256) maybe_switch(rates().mem_per_256);
}

void syncthreads(void) {
  if (!self) return;
  fiber_quiet q;
  if (!blk->bar_sync) blk->bar_sync = tsan::token();
  tsan::release(blk->bar_sync);
  self->st = AT_BARRIER;
  blk->at_barrier++;
  to_scheduler(false);
}

void collective(coll_op op, unsigned mask, int width, const void *in, void *out, size_t bytes, int operand,
                const char *what) {
  fiber *me = self;
  if (!me) device_fault("%s outside a kernel", what);
  fiber_quiet q;
  if (!(mask >> me->lane & 1u)) device_fault("%s: calling lane %d is not in the mask %#x", what, me->lane, mask);
  if (width < 1 || width > 32 || (width & (width - 1))) device_fault("%s: width %d", what, width);
  /* The lanes of one mask meet at one collective. Groups of a warp with
   * different masks may each wait at their own (since Volta: a tile's
   * ballot while the rest of the warp waits at a full-warp match); a lane
   * joins the pending collective of its exact mask, and a different
   * collective or width under that mask is the error. A cycle of groups
   * waiting for each other is a deadlock, which the scheduler reports. */
  std::vector<std::unique_ptr<pending>> &w = blk->warps[me->warp];
  pending *p = nullptr;
  for (auto &q : w)
    if (q->mask == mask) p = q.get();
  if (p && (p->op != op || p->width != width))
    device_fault("%s with mask %#x: lanes %#x of the warp wait at %s with mask %#x", what, mask, p->arrived,
                 p->what, p->mask);
  if (!p) {
    /* The mask's lanes are checked once, by the first to arrive: a lane
     * that exits later while this collective waits for it faults at its
     * exit (fiber_entry), so later arrivals would find the same. */
    for (int j = 0; j < 32; j++) {
      if (!(mask >> j & 1u)) continue;
      int t = me->warp * 32 + j;
      if (t >= blk->n) device_fault("%s: mask %#x names lane %d, which the block does not have", what, mask, j);
      if (blk->f[t].st == DONE) device_fault("%s: mask %#x names lane %d, which has exited", what, mask, j);
    }
    if (blk->spare.empty()) blk->spare.push_back(std::make_unique<pending>());
    w.push_back(std::move(blk->spare.back()));
    blk->spare.pop_back();
    p = w.back().get();
    p->op = op;
    p->mask = mask;
    p->arrived = 0;
    p->width = width;
    p->bytes = bytes;
    p->what = what;
    p->sync = tsan::token();
  }
  if (bytes > sizeof p->in[0]) device_fault("%s of a %zu-byte value", what, bytes);
  memset(p->in[me->lane], 0, sizeof p->in[0]);
  if (in) copy_value(p->in[me->lane], in, bytes);
  p->operand[me->lane] = operand;
  p->out[me->lane] = out;
  p->arrived |= 1u << me->lane;
  tsan::release(p->sync);
  if (p->arrived == mask) {
    /* Computed in place, then given back to the spares. */
    compute(*p, *blk, me->warp);
    void *sync = p->sync;
    auto at = std::find_if(w.begin(), w.end(), [p](const std::unique_ptr<pending> &q) { return q.get() == p; });
    blk->spare.push_back(std::move(*at));
    w.erase(at);
    if (blk->faulted) to_scheduler(true);
    leave_together(sync, [me, mask](auto acq) {
      for (int j = 0; j < 32; j++)
        if (mask >> j & 1u) acq(blk->f[me->warp * 32 + j]);
    });
    for (int j = 0; j < 32; j++)
      if ((mask >> j & 1u) && j != me->lane) make_ready(me->warp * 32 + j);
    make_ready(me->linear); /* the last lane also lets the others go first sometimes */
    to_scheduler(false);
    return;
  }
  me->st = AT_COLL;
  to_scheduler(false);
}

void *shared_alloc(const void *site, size_t bytes, size_t align) {
  if (!blk) device_fault("__shared__ outside a kernel");
  fiber_quiet q;
  for (auto &s : blk->shared)
    if (s.site == site) return s.p;
  void *p = aligned_alloc(align, (bytes + align - 1) / align * align);
  memset(p, 0xA7, bytes); /* fresh shared memory: garbage */
  blk->shared.push_back(shared_block{site, p, bytes});
  return p;
}

bool in_block_shared(const void *p) {
  if (!blk) return false;
  uintptr_t a = (uintptr_t)p;
  for (const shared_block &s : blk->shared)
    if (a >= (uintptr_t)s.p && a < (uintptr_t)s.p + s.bytes) return true;
  return false;
}

int run_kernel(const kernel &k) {
  tsan::quiet q;
  grid_edges edges(k);
  for (const ptr_arg &a : k.ptrs) {
    const char *why = nullptr;
    if (!a.p) continue;
    if (!check_range(a.p, 0, k.device, &why)) {
      char m[512];
      snprintf(m, sizeof m, "kernel %s (%s): pointer argument %d (%p) %s", k.name.c_str(), k.where.c_str(),
               a.index + 1, a.p, why);
      device_error(cudaErrorIllegalAddress, m);
      return -1;
    }
  }
  /* One draw of the process's stream per kernel: the dispatch order and
   * each block's own stream follow from it. */
  uint64_t kseed = rand64(), ord = kseed;
  size_t nb = (size_t)k.g.x * k.g.y * k.g.z;
  std::vector<uint32_t> order(nb);
  for (size_t i = 0; i < nb; i++) order[i] = (uint32_t)i;
  for (size_t i = nb; i > 1; i--) std::swap(order[i - 1], order[next_rand(&ord) % i]);
  (void)rates(); /* read the environment once, before the workers do */
  meter::kernel_begin(k.name);
  std::atomic<bool> faulted{false};
  pool_run(nb, [&](size_t i) {
    uint32_t o = order[i];
    uint3 bid = mk_uint3(o % k.g.x, o / k.g.x % k.g.y, o / (k.g.x * k.g.y));
    if (run_block(k, bid, mix64(kseed ^ ((uint64_t)o + 1) * 0xD1B54A32D192ED03ull))) return true;
    faulted.store(true, std::memory_order_relaxed);
    return false;
  });
  meter::kernel_end();
  return faulted.load() ? -1 : 0;
}

}  // namespace tdm_emu
