/*
 * emu_device.h: the interface between code compiled for the emulated device
 * (the prelude, the CUB and cooperative-groups stand-ins) and the emulator's
 * runtime (src/). Test-only; never part of libtandem.
 */
#ifndef TDM_EMU_DEVICE_H
#define TDM_EMU_DEVICE_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include <functional>
#include <string.h>
#include <type_traits>
#include <vector>

namespace tdm_emu {

/* Per CUDA thread state, visible to device code. */
struct thread_state {
  uint3 tid, bid;
  dim3 bdim, gdim;
};
extern thread_local thread_state *cur;

/* Launch configuration of k<<<g, b, shmem, stream>>>. */
struct cfg {
  dim3 g, b;
  size_t shmem;
  cudaStream_t s;
  cfg(dim3 g_, dim3 b_, size_t sh = 0, cudaStream_t st = 0) : g(g_), b(b_), shmem(sh), s(st) {}
};

/* A pointer argument of a kernel, checked against the allocation table when
 * the kernel runs. */
struct ptr_arg {
  int index;
  const void *p;
};

/* Queues a kernel; body runs once per CUDA thread. */
void launch(const char *name, const char *file, int line, const cfg &c, std::vector<ptr_arg> ptrs,
            std::function<void()> body);

/* Collectives of the calling lane: op, mask, width (segment), value and the
 * operand (source lane, delta or predicate); returns the lane's result. */
enum coll_op { C_BALLOT, C_ANY, C_ALL, C_SHFL, C_SHFL_DOWN, C_SHFL_UP, C_SHFL_XOR, C_SYNC, C_MATCH_ANY };
void collective(coll_op op, unsigned mask, int width, const void *in, void *out, size_t bytes, int operand,
                const char *what);
void syncthreads(void);
/* A place where another thread of the block may run (atomics). */
void switch_point(void);
/* Lets another ready thread of the block run now (the block-wide stand-ins:
 * a thread that runs ahead into a reuse of scratch). */
void yield(void);
/* The number of __syncthreads the calling thread's block has passed: every
 * running thread of a block sees the same count, so two calls that see the
 * same count have no barrier between them. */
uint64_t barrier_epoch(void);
/* An atomic on p: counted by the cost meter, then a switch point. */
void atomic_at(const void *p);
/* The cost meter's model of work it does not see access by access (the CUB
 * stand-ins): bytes read and written as sequential streams. */
void meter_model(size_t read_bytes, size_t write_bytes);
/* Whether the cost meter runs (tdm_emu_meter_start). */
bool meter_on(void);
/* The same at a volatile load or store (rewrite.py puts it there). */
void mem_switch_point(void);
template <typename T>
inline T *at_volatile(T *p) {
  mem_switch_point();
  return p;
}
/* Reports a violation in device code (sticky device error; never returns to
 * the kernel: the thread is stopped). */
[[noreturn]] void device_fault(const char *fmt, ...);
/* Per-block storage for a static __shared__ declaration at site. */
void *shared_alloc(const void *site, size_t bytes, size_t align);
/* Host-side checks of ranges the stand-ins touch (CUB). */
int range_ok(const void *p, size_t bytes, int write, const char *what);
/* The seeded random stream of the emulator (scheduling, CUB choices). */
uint64_t rand64(void);
/* Queues host work on a stream in stream order (the CUB stand-ins). */
cudaError_t enqueue(cudaStream_t s, const char *what, std::function<void()> fn);
/* Scribbles a device range (scratch CUB may overwrite). */
void scribble(void *p, size_t bytes);
/* Sets the last error as a runtime call failing with e (the stand-ins). */
cudaError_t fail(cudaError_t e, const char *fmt, ...);
/* Counts collectives for the statistics line. */
int lane_id(void);

template <typename T>
T &shared_var(const void *site) {
  return *static_cast<T *>(shared_alloc(site, sizeof(T), alignof(T) < 16 ? 16 : alignof(T)));
}

template <typename T>
void collect_ptr(std::vector<ptr_arg> &v, int i, const T &a) {
  if constexpr (std::is_pointer<T>::value) v.push_back(ptr_arg{i, (const void *)a});
  else {
    (void)v;
    (void)i;
    (void)a;
  }
}

}  // namespace tdm_emu

#endif
