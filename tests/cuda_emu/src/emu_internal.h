/* emu_internal.h: state shared by the emulator's execution engine (exec.cc)
 * and its runtime (runtime.cc). */
#ifndef TDM_EMU_INTERNAL_H
#define TDM_EMU_INTERNAL_H

#include <string>

#include "emu_device.h"

namespace tdm_emu {

/* A queued kernel as the engine runs it. */
struct kernel {
  std::string name, where;
  dim3 g, b;
  int device;
  std::vector<ptr_arg> ptrs;
  std::function<void()> body;
  mutable void *tsan_start = nullptr, *tsan_end = nullptr; /* TSan: launch and end (exec.cc) */
};

/* Runs every block of k; returns 0, or -1 after a device fault (reported). */
int run_kernel(const kernel &k);
/* Whether p.. p+bytes is in one live allocation usable by device (-1: any);
 * 0 with *why set otherwise. */
int check_range(const void *p, size_t bytes, int device, const char **why);
/* Marks the device faulted (sticky error) with a message: the current
 * device of the calling host thread, or device (from any worker). */
void device_error(cudaError_t e, const std::string &msg);
void device_error_on(int device, cudaError_t e, const std::string &msg);
/* The worker pool (pool.cc): TANDEM_EMU_WORKERS threads, the caller one of
 * them; pool_run calls job(i) once for each i < n, taken in increasing order
 * by whichever worker is free, until all ran or a job returned false. */
int workers(void);
void pool_run(size_t n, const std::function<bool(size_t)> &job);
uint64_t seed(void);
extern const char *running_op; /* what the engine runs now, for messages */
/* Runs all queued work of every device now (not a host wait of the program's). */
void drain(void);
/* The live device-accessible allocations [base, end), sorted (the meter). */
void device_ranges(std::vector<std::pair<uintptr_t, uintptr_t>> &out);
/* Whether p lies in the running block's __shared__ storage (exec.cc). */
bool in_block_shared(const void *p);

/* The cost meter (meter.cc): off unless a program started it. */
namespace meter {
enum event { E_KERNEL, E_CUB, E_SYNC, E_H2D, E_D2H, E_ALLOC, E_PTR_QUERY, E_MODEL_READ, E_MODEL_WRITE };
void count(event e, uint64_t amount);
void kernel_begin(const std::string &name); /* the engine: around each grid, after each block */
void kernel_end(void);
void block_end(void);
/* One load or store of size bytes at p by the running CUDA thread, from the
 * instrumented instruction at site (meter_hooks.cc). */
void record(const void *site, const void *p, size_t bytes, bool store);
}  // namespace meter

}  // namespace tdm_emu

#endif
