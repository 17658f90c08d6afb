/*
 * pool.cc: the worker pool the execution engine runs a grid's blocks on.
 * TANDEM_EMU_WORKERS OS threads (the calling host thread is one of them)
 * take block indices from one shared counter, so blocks are dispatched in the
 * order the engine drew and really run at the same time: a race between
 * blocks is a real race, and a block that waits for another one can see it
 * progress. With one worker everything runs on the calling thread, so a seed
 * replays exactly. The pool knows nothing of fibers: exec.cc runs each block
 * (all of its fibers) inside one job.
 */
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "emu_internal.h"

namespace tdm_emu {

namespace {

/* One pool per process; never destroyed (its threads still wait on it when
 * the process exits), and made again in a child after fork (the child has
 * only the forking thread). */
struct pool {
  std::mutex m;
  std::condition_variable go, idle;
  uint64_t generation = 0;
  bool open = false; /* the grid of this generation still takes helpers */
  int helpers = 0, busy = 0;
  pid_t pid = 0;
  size_t n = 0;
  const std::function<bool(size_t)> *job = nullptr;
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
};

pool *the_pool;
std::mutex make_mu;

/* Takes indices until none is left or a job asked to stop. */
void drain(pool *p) {
  while (!p->stop.load(std::memory_order_relaxed)) {
    size_t i = p->next.fetch_add(1, std::memory_order_relaxed);
    if (i >= p->n) return;
    if (!(*p->job)(i)) p->stop.store(true, std::memory_order_relaxed);
  }
}

void helper_main(pool *p) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> l(p->m);
  for (;;) {
    p->go.wait(l, [&] { return p->open && p->generation != seen; });
    seen = p->generation;
    p->busy++;
    l.unlock();
    drain(p);
    l.lock();
    if (--p->busy == 0) p->idle.notify_all();
  }
}

pool *get_pool(int workers) {
  std::lock_guard<std::mutex> lk(make_mu);
  if (the_pool && the_pool->pid == getpid()) return the_pool;
  pool *p = new pool();
  p->pid = getpid();
  p->helpers = workers - 1;
  for (int i = 0; i < p->helpers; i++) std::thread(helper_main, p).detach();
  the_pool = p;
  return p;
}

}  // namespace

int workers(void) {
  static const int w = [] {
#ifdef TDM_EMU_TSAN
    /* TSan's fiber contexts belong to one OS thread, and its happens-before
     * analysis needs no real overlap: the race build runs blocks on the
     * calling thread only. */
    return 1;
#else
    const char *e = getenv("TANDEM_EMU_WORKERS");
    long v = e && *e ? strtol(e, nullptr, 0) : 0;
    if (v <= 0) {
      unsigned hc = std::thread::hardware_concurrency();
      v = hc < 2 ? 2 : hc > 8 ? 8 : (long)hc;
    }
    return (int)(v > 64 ? 64 : v);
#endif
  }();
  return w;
}

void pool_run(size_t n, const std::function<bool(size_t)> &job) {
  if (workers() == 1 || n < 2) {
    for (size_t i = 0; i < n; i++)
      if (!job(i)) return;
    return;
  }
  /* One grid at a time: the host lock of runtime.cc serializes the callers. */
  pool *p = get_pool(workers());
  {
    std::lock_guard<std::mutex> lk(p->m);
    p->n = n;
    p->job = &job;
    p->next.store(0, std::memory_order_relaxed);
    p->stop.store(false, std::memory_order_relaxed);
    p->generation++;
    p->open = true;
  }
  p->go.notify_all();
  drain(p);
  /* Wait only for the helpers that joined: one the OS has not woken yet
   * (the common case for a small grid on a loaded machine) finds the grid
   * closed and waits for the next. */
  std::unique_lock<std::mutex> l(p->m);
  p->open = false;
  p->idle.wait(l, [&] { return p->busy == 0; });
  p->job = nullptr;
}

}  // namespace tdm_emu
