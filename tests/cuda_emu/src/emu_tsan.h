/*
 * emu_tsan.h: the emulated device's ThreadSanitizer model (a build with
 * EMU_SANITIZE=thread defines TDM_EMU_TSAN; otherwise every function here is
 * empty). Each CUDA thread runs in a TSan fiber context (exec.cc keeps a pool
 * of them), created without an edge from its creator; every switch between
 * fibers is made without synchronisation, so the real scheduling (one OS
 * thread, a mutex, a worker pool) orders nothing in TSan's eyes. The
 * happens-before edges CUDA promises inside the device are given explicitly,
 * as release and acquire on sync tokens: the launch, the end of the grid,
 * __syncthreads and warp collectives. The emulator's own bookkeeping runs
 * with TSan ignoring its memory accesses (quiet).
 */
#ifndef TDM_EMU_TSAN_H
#define TDM_EMU_TSAN_H

#include <stddef.h>
#include <stdlib.h>

#ifdef TDM_EMU_TSAN
#include <sanitizer/tsan_interface.h>
extern "C" {
void AnnotateIgnoreSyncBegin(const char *file, int line);
void AnnotateIgnoreSyncEnd(const char *file, int line);
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
}
#endif

namespace tdm_emu {
namespace tsan {

#ifdef TDM_EMU_TSAN
const bool on = true;
/* The TSan context running now (a thread or a fiber). */
inline void *current(void) { return __tsan_get_current_fiber(); }
/* A fresh context: it starts with no edge from the one creating it. */
inline void *create(void) {
  AnnotateIgnoreSyncBegin(__FILE__, __LINE__);
  void *f = __tsan_create_fiber(0);
  AnnotateIgnoreSyncEnd(__FILE__, __LINE__);
  return f;
}
/* Tells TSan that ctx runs from now on (no edge: CUDA's are explicit). */
inline void enter(void *ctx) { __tsan_switch_to_fiber(ctx, __tsan_switch_to_fiber_no_sync); }
inline void release(void *sync) { __tsan_release(sync); }
inline void acquire(void *sync) { __tsan_acquire(sync); }
/* A fresh sync object (its heap address; freeing it forgets its clock). */
inline void *token(void) { return malloc(1); }
inline void drop(void *t) { free(t); }
inline void ignore_begin(void) { __tsan_ignore_thread_begin(); }
inline void ignore_end(void) { __tsan_ignore_thread_end(); }
inline void sync_ignore_begin(void) { AnnotateIgnoreSyncBegin(__FILE__, __LINE__); }
inline void sync_ignore_end(void) { AnnotateIgnoreSyncEnd(__FILE__, __LINE__); }
#else
const bool on = false;
inline void *current(void) { return nullptr; }
inline void *create(void) { return nullptr; }
inline void enter(void *) {}
inline void release(void *) {}
inline void acquire(void *) {}
inline void *token(void) { return nullptr; }
inline void drop(void *) {}
inline void ignore_begin(void) {}
inline void ignore_end(void) {}
inline void sync_ignore_begin(void) {}
inline void sync_ignore_end(void) {}
#endif

/* The emulator's bookkeeping for the scope's lifetime: not seen by TSan. */
struct quiet {
  quiet() { ignore_begin(); }
  ~quiet() { ignore_end(); }
  quiet(const quiet &) = delete;
  quiet &operator=(const quiet &) = delete;
};

}  // namespace tsan
}  // namespace tdm_emu

#endif
