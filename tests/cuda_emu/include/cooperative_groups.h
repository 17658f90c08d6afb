/*
 * cooperative_groups.h stand-in for the emulated device: the thread block
 * and static tiles of 1..32 lanes, their collectives in lock step through the
 * emulator (mask rules checked there).
 */
#ifndef TDM_EMU_COOPERATIVE_GROUPS_H
#define TDM_EMU_COOPERATIVE_GROUPS_H

#include "emu_device.h"

namespace cooperative_groups {

class thread_block {
 public:
  void sync() const { tdm_emu::syncthreads(); }
  unsigned thread_rank() const {
    const tdm_emu::thread_state *t = tdm_emu::cur;
    return (t->tid.z * t->bdim.y + t->tid.y) * t->bdim.x + t->tid.x;
  }
  unsigned size() const { return num_threads(); }
  unsigned num_threads() const { return tdm_emu::cur->bdim.x * tdm_emu::cur->bdim.y * tdm_emu::cur->bdim.z; }
  dim3 group_index() const { return dim3(tdm_emu::cur->bid.x, tdm_emu::cur->bid.y, tdm_emu::cur->bid.z); }
  dim3 thread_index() const { return dim3(tdm_emu::cur->tid.x, tdm_emu::cur->tid.y, tdm_emu::cur->tid.z); }
};

static inline thread_block this_thread_block() { return thread_block(); }

template <unsigned G>
class thread_block_tile {
  static_assert(G >= 1 && G <= 32 && (G & (G - 1)) == 0, "tile size: a power of two up to 32");

 public:
  unsigned thread_rank() const { return (unsigned)tdm_emu::lane_id() % G; }
  unsigned size() const { return G; }
  unsigned num_threads() const { return G; }
  unsigned meta_group_rank() const { return this_thread_block().thread_rank() / G; }
  unsigned meta_group_size() const { return (this_thread_block().num_threads() + G - 1) / G; }
  void sync() const { tdm_emu::collective(tdm_emu::C_SYNC, mask(), (int)G, nullptr, nullptr, 0, 0, "tile.sync"); }
  unsigned ballot(int pred) const {
    unsigned r;
    int p = pred != 0;
    tdm_emu::collective(tdm_emu::C_BALLOT, mask(), (int)G, &p, &r, sizeof r, 0, "tile.ballot");
    return r;
  }
  bool any(int pred) const {
    int r, p = pred != 0;
    tdm_emu::collective(tdm_emu::C_ANY, mask(), (int)G, &p, &r, sizeof r, 0, "tile.any");
    return r != 0;
  }
  bool all(int pred) const {
    int r, p = pred != 0;
    tdm_emu::collective(tdm_emu::C_ALL, mask(), (int)G, &p, &r, sizeof r, 0, "tile.all");
    return r != 0;
  }
  template <typename T>
  T shfl(T v, int src) const { return op(tdm_emu::C_SHFL, v, src, "tile.shfl"); }
  template <typename T>
  T shfl_down(T v, unsigned d) const { return op(tdm_emu::C_SHFL_DOWN, v, (int)d, "tile.shfl_down"); }
  template <typename T>
  T shfl_up(T v, unsigned d) const { return op(tdm_emu::C_SHFL_UP, v, (int)d, "tile.shfl_up"); }
  template <typename T>
  T shfl_xor(T v, int m) const { return op(tdm_emu::C_SHFL_XOR, v, m, "tile.shfl_xor"); }

 private:
  /* The tile's lanes within its warp. */
  static unsigned mask() {
    unsigned base = (unsigned)tdm_emu::lane_id() / G * G;
    return (G == 32 ? 0xffffffffu : ((1u << G) - 1u)) << base;
  }
  template <typename T>
  static T op(tdm_emu::coll_op o, T v, int operand, const char *what) {
    T r;
    tdm_emu::collective(o, mask(), (int)G, &v, &r, sizeof(T), operand, what);
    return r;
  }
};

template <unsigned G>
static inline thread_block_tile<G> tiled_partition(const thread_block &) {
  return thread_block_tile<G>();
}

}  // namespace cooperative_groups

#endif
