/*
 * emu_cub.h: the CUB entry points tandem uses, for the emulated device.
 * Device-wide algorithms run on the host in stream order (queued like a
 * kernel, run when the stream is forced) and keep CUB's documented contract:
 * the temp-storage size query (temp NULL), too little temp storage refused,
 * radix sorts stable on bits [begin_bit, end_bit) of CUB's order of the key
 * type (signed and float keys included), DoubleBuffer selector
 * saying where the result is. Where CUB leaves a choice they are hostile:
 * the result lands in either buffer (chosen by the seed), the other buffer
 * and the temp storage are scribbled, ReduceByKey folds each run in a random
 * grouping and operand order. Block-wide algorithms run in the block's
 * fibers with CUB's barrier rules (no barrier at the end: reusing
 * TempStorage needs the caller's __syncthreads, and a reuse without one is
 * reported, its data scribbled at the next call's entry).
 */
#ifndef TDM_EMU_CUB_H
#define TDM_EMU_CUB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <numeric>
#include <type_traits>
#include <vector>

#include "emu_device.h"

namespace cub {

template <typename T>
struct DoubleBuffer {
  T *d_buffers[2];
  int selector;
  DoubleBuffer() : d_buffers{nullptr, nullptr}, selector(0) {}
  DoubleBuffer(T *a, T *b) : d_buffers{a, b}, selector(0) {}
  T *Current() { return d_buffers[selector]; }
  T *Alternate() { return d_buffers[selector ^ 1]; }
};

namespace emu {

/* Bytes of temp storage a call on n items asks for: grows with n, as CUB's
 * does, so storage sized for a smaller call is refused. */
static inline size_t temp_need(size_t n, size_t per_item) { return 1024 + n * per_item; }

static inline bool overlap(const void *a, size_t an, const void *b, size_t bn) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return an && bn && x < y + bn && y < x + an;
}

/* The temp-storage part of every device-wide entry point: the size query, or
 * the check that enough was given. */
static inline cudaError_t temp_check(void *temp, size_t &bytes, size_t need, const char *what, bool *query) {
  *query = temp == nullptr;
  if (*query) {
    bytes = need;
    return cudaSuccess;
  }
  if (bytes < need)
    return tdm_emu::fail(cudaErrorInvalidValue, "%s: %zu bytes of temp storage given, %zu needed", what, bytes, need);
  return cudaSuccess;
}

/* The unsigned bits CUB's radix passes see for a key (CUB's documented key
 * order): unsigned keys as they are; signed keys with the sign bit flipped
 * (numeric order); floats with every bit flipped when the sign is set and
 * only the sign flipped otherwise, and -0.0 taken as +0.0 (CUB: "positive
 * and negative zero ... considered equivalent"; stable, so they keep their
 * input order). Bit ranges apply to these bits. */
template <typename K>
static inline uint64_t ordered_bits(K k) {
  typedef typename std::conditional<sizeof(K) == 8, uint64_t,
                                    typename std::conditional<sizeof(K) == 4, uint32_t, uint16_t>::type>::type U;
  const U high = (U)((U)1 << (8 * sizeof(K) - 1));
  U u;
  memcpy(&u, &k, sizeof u);
  if (std::is_floating_point<K>::value) {
    u = (u & high) ? (U)~u : (U)(u ^ high);
    if (u == (U)(high - 1u)) u = high; /* -0.0 ranks as +0.0 */
  } else if (std::is_signed<K>::value) {
    u = (U)(u ^ high);
  }
  return (uint64_t)u;
}

template <typename K>
static inline uint64_t digit(K k, int begin, int end) {
  static_assert(std::is_arithmetic<K>::value, "CUB sorts arithmetic keys (no decomposer here)");
  uint64_t u = ordered_bits(k);
  int w = end - begin;
  return w >= 64 ? u >> begin : (u >> begin) & ((UINT64_C(1) << w) - 1u);
}

/* The positions of k[0, n) in the order a radix sort on bits [begin, end)
 * leaves them: stable, ascending or descending. */
template <typename K>
static std::vector<size_t> stable_order(const K *k, size_t n, int begin, int end, bool desc) {
  std::vector<size_t> idx(n);
  std::iota(idx.begin(), idx.end(), (size_t)0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    uint64_t da = digit(k[a], begin, end), db = digit(k[b], begin, end);
    return desc ? da > db : da < db;
  });
  return idx;
}

template <typename K, typename V, bool PAIRS>
static cudaError_t radix_sort(void *temp, size_t &temp_bytes, DoubleBuffer<K> &keys, DoubleBuffer<V> *vals, size_t n,
                              int begin, int end, bool desc, cudaStream_t s, const char *what) {
  bool query;
  cudaError_t e = temp_check(temp, temp_bytes, temp_need(n, 4), what, &query);
  if (e != cudaSuccess || query) return e;
  if (begin < 0 || end > (int)(8 * sizeof(K)) || begin >= end)
    return tdm_emu::fail(cudaErrorInvalidValue, "%s: bit range [%d, %d) of a %zu-bit key", what, begin, end,
                         8 * sizeof(K));
  if (n == 0) return cudaSuccess;
  K *k0 = keys.Current(), *k1 = keys.Alternate();
  V *v0 = PAIRS ? vals->Current() : nullptr, *v1 = PAIRS ? vals->Alternate() : nullptr;
  size_t kb = n * sizeof(K), vb = PAIRS ? n * sizeof(V) : 0;
  if (overlap(k0, kb, k1, kb) || overlap(temp, temp_bytes, k0, kb) || overlap(temp, temp_bytes, k1, kb) ||
      (PAIRS && (overlap(v0, vb, v1, vb) || overlap(v0, vb, k0, kb) || overlap(v0, vb, k1, kb) ||
                 overlap(v1, vb, k0, kb) || overlap(v1, vb, k1, kb) || overlap(temp, temp_bytes, v0, vb) ||
                 overlap(temp, temp_bytes, v1, vb))))
    return tdm_emu::fail(cudaErrorInvalidValue, "%s: overlapping buffers", what);
  /* Where the result lands: CUB sets the selector on the host; either is
   * allowed. While the cost meter runs, where CUB's passes put it (each
   * 8-bit pass writes the other buffer), so what a copy back costs repeats. */
  size_t passes = (size_t)(end - begin + 7) / 8;
  int to = tdm_emu::meter_on() ? (int)(passes & 1u) : (int)(tdm_emu::rand64() & 1u);
  K *ko = to ? k1 : k0;
  V *vo = to ? v1 : v0;
  keys.selector ^= to;
  if (PAIRS) vals->selector ^= to;
  size_t tb = temp_bytes;
  return tdm_emu::enqueue(s, what, [=]() {
    if (!tdm_emu::range_ok(k0, kb, 1, what) || !tdm_emu::range_ok(k1, kb, 1, what) ||
        !tdm_emu::range_ok(temp, tb, 1, what) ||
        (PAIRS && (!tdm_emu::range_ok(v0, vb, 1, what) || !tdm_emu::range_ok(v1, vb, 1, what))))
      return;
    const std::vector<size_t> idx = stable_order(k0, n, begin, end, desc);
    std::vector<K> ks(n);
    std::vector<V> vs(PAIRS ? n : 0);
    for (size_t i = 0; i < n; i++) {
      ks[i] = k0[idx[i]];
      if (PAIRS) vs[i] = v0[idx[i]];
    }
    tdm_emu::scribble(to ? k0 : k1, kb);
    if (PAIRS) tdm_emu::scribble(to ? v0 : v1, vb);
    tdm_emu::scribble(temp, tb);
    memcpy(ko, ks.data(), kb);
    /* The meter's model of a onesweep radix sort: 8-bit digit passes over
     * the bit range, each reading and writing every item, and one read of
     * the keys for the histograms. */
    tdm_emu::meter_model(passes * (kb + vb) + kb, passes * (kb + vb));
    if (PAIRS) memcpy(vo, vs.data(), vb);
  });
}

/* The entry points that read a const input and write separate outputs
 * (CUB's overloads without DoubleBuffer): CUB keeps the alternate buffers of
 * its passes in the temp storage, so it asks for them too, and the input is
 * only read. The cost model is the DoubleBuffer sort's: the first pass
 * reads the input where the other would read its first buffer. */
template <typename K, typename V, bool PAIRS>
static cudaError_t radix_sort_copy(void *temp, size_t &temp_bytes, const K *kin, K *kout, const V *vin, V *vout,
                                   size_t n, int begin, int end, bool desc, cudaStream_t s, const char *what) {
  bool query;
  size_t kb = n * sizeof(K), vb = PAIRS ? n * sizeof(V) : 0;
  cudaError_t e = temp_check(temp, temp_bytes, temp_need(n, 4) + kb + vb, what, &query);
  if (e != cudaSuccess || query) return e;
  if (begin < 0 || end > (int)(8 * sizeof(K)) || begin >= end)
    return tdm_emu::fail(cudaErrorInvalidValue, "%s: bit range [%d, %d) of a %zu-bit key", what, begin, end,
                         8 * sizeof(K));
  if (n == 0) return cudaSuccess;
  if (overlap(kin, kb, kout, kb) || overlap(temp, temp_bytes, kin, kb) || overlap(temp, temp_bytes, kout, kb) ||
      (PAIRS && (overlap(vin, vb, vout, vb) || overlap(vin, vb, kin, kb) || overlap(vin, vb, kout, kb) ||
                 overlap(vout, vb, kin, kb) || overlap(vout, vb, kout, kb) || overlap(temp, temp_bytes, vin, vb) ||
                 overlap(temp, temp_bytes, vout, vb))))
    return tdm_emu::fail(cudaErrorInvalidValue, "%s: overlapping buffers", what);
  size_t passes = (size_t)(end - begin + 7) / 8, tb = temp_bytes;
  return tdm_emu::enqueue(s, what, [=]() {
    if (!tdm_emu::range_ok(kin, kb, 0, what) || !tdm_emu::range_ok(kout, kb, 1, what) ||
        !tdm_emu::range_ok(temp, tb, 1, what) ||
        (PAIRS && (!tdm_emu::range_ok(vin, vb, 0, what) || !tdm_emu::range_ok(vout, vb, 1, what))))
      return;
    const std::vector<size_t> idx = stable_order(kin, n, begin, end, desc);
    tdm_emu::scribble(temp, tb);
    for (size_t i = 0; i < n; i++) {
      kout[i] = kin[idx[i]];
      if (PAIRS) vout[i] = vin[idx[i]];
    }
    tdm_emu::meter_model(passes * (kb + vb) + kb, passes * (kb + vb));
  });
}

struct no_value {};

/* Folds a run in a random grouping and operand order. */
template <typename T, typename Op>
static T fold(std::vector<T> &xs, Op op) {
  while (xs.size() > 1) {
    std::vector<T> next;
    size_t i = 0;
    while (i < xs.size()) {
      size_t len = 1 + (size_t)(tdm_emu::rand64() % 4u);
      T a = xs[i++];
      for (size_t j = 1; j < len && i < xs.size(); j++, i++) a = (tdm_emu::rand64() & 1u) ? op(a, xs[i]) : op(xs[i], a);
      next.push_back(a);
    }
    xs.swap(next);
  }
  return xs[0];
}

template <typename T>
static inline bool check_in(const T *p, size_t n, const char *what) {
  return tdm_emu::range_ok(p, n * sizeof(T), 0, what);
}
template <typename It>
static inline bool check_in(const It &, size_t, const char *) {
  return true;
}

}  // namespace emu

struct DeviceRadixSort {
  template <typename K, typename N>
  static cudaError_t SortKeys(void *temp, size_t &bytes, DoubleBuffer<K> &keys, N n, int begin_bit = 0,
                              int end_bit = sizeof(K) * 8, cudaStream_t s = 0) {
    return emu::radix_sort<K, emu::no_value, false>(temp, bytes, keys, nullptr, (size_t)n, begin_bit, end_bit, false, s,
                                                    "cub::DeviceRadixSort::SortKeys");
  }
  template <typename K, typename V, typename N>
  static cudaError_t SortPairs(void *temp, size_t &bytes, DoubleBuffer<K> &keys, DoubleBuffer<V> &vals, N n,
                               int begin_bit = 0, int end_bit = sizeof(K) * 8, cudaStream_t s = 0) {
    return emu::radix_sort<K, V, true>(temp, bytes, keys, &vals, (size_t)n, begin_bit, end_bit, false, s,
                                       "cub::DeviceRadixSort::SortPairs");
  }
  template <typename K, typename N>
  static cudaError_t SortKeys(void *temp, size_t &bytes, const K *kin, K *kout, N n, int begin_bit = 0,
                              int end_bit = sizeof(K) * 8, cudaStream_t s = 0) {
    return emu::radix_sort_copy<K, emu::no_value, false>(temp, bytes, kin, kout, nullptr, nullptr, (size_t)n,
                                                         begin_bit, end_bit, false, s,
                                                         "cub::DeviceRadixSort::SortKeys");
  }
  template <typename K, typename V, typename N>
  static cudaError_t SortPairs(void *temp, size_t &bytes, const K *kin, K *kout, const V *vin, V *vout, N n,
                               int begin_bit = 0, int end_bit = sizeof(K) * 8, cudaStream_t s = 0) {
    return emu::radix_sort_copy<K, V, true>(temp, bytes, kin, kout, vin, vout, (size_t)n, begin_bit, end_bit, false, s,
                                            "cub::DeviceRadixSort::SortPairs");
  }
  template <typename K, typename N>
  static cudaError_t SortKeysDescending(void *temp, size_t &bytes, const K *kin, K *kout, N n, int begin_bit = 0,
                                        int end_bit = sizeof(K) * 8, cudaStream_t s = 0) {
    return emu::radix_sort_copy<K, emu::no_value, false>(temp, bytes, kin, kout, nullptr, nullptr, (size_t)n,
                                                         begin_bit, end_bit, true, s,
                                                         "cub::DeviceRadixSort::SortKeysDescending");
  }
  template <typename K, typename V, typename N>
  static cudaError_t SortPairsDescending(void *temp, size_t &bytes, const K *kin, K *kout, const V *vin, V *vout,
                                         N n, int begin_bit = 0, int end_bit = sizeof(K) * 8, cudaStream_t s = 0) {
    return emu::radix_sort_copy<K, V, true>(temp, bytes, kin, kout, vin, vout, (size_t)n, begin_bit, end_bit, true,
                                            s, "cub::DeviceRadixSort::SortPairsDescending");
  }
  template <typename K, typename N>
  static cudaError_t SortKeysDescending(void *temp, size_t &bytes, DoubleBuffer<K> &keys, N n, int begin_bit = 0,
                                        int end_bit = sizeof(K) * 8, cudaStream_t s = 0) {
    return emu::radix_sort<K, emu::no_value, false>(temp, bytes, keys, nullptr, (size_t)n, begin_bit, end_bit, true, s,
                                                    "cub::DeviceRadixSort::SortKeysDescending");
  }
  template <typename K, typename V, typename N>
  static cudaError_t SortPairsDescending(void *temp, size_t &bytes, DoubleBuffer<K> &keys, DoubleBuffer<V> &vals,
                                         N n, int begin_bit = 0, int end_bit = sizeof(K) * 8, cudaStream_t s = 0) {
    return emu::radix_sort<K, V, true>(temp, bytes, keys, &vals, (size_t)n, begin_bit, end_bit, true, s,
                                       "cub::DeviceRadixSort::SortPairsDescending");
  }
};

struct DeviceReduce {
  template <typename KIn, typename KOut, typename VIn, typename VOut, typename NRuns, typename Op, typename N>
  static cudaError_t ReduceByKey(void *temp, size_t &bytes, KIn keys_in, KOut unique_out, VIn values_in,
                                 VOut aggregates_out, NRuns num_runs_out, Op op, N num_items, cudaStream_t s = 0) {
    const char *what = "cub::DeviceReduce::ReduceByKey";
    size_t n = (size_t)num_items;
    bool query;
    cudaError_t e = emu::temp_check(temp, bytes, emu::temp_need(n, 8), what, &query);
    if (e != cudaSuccess || query) return e;
    size_t tb = bytes;
    return tdm_emu::enqueue(s, what, [=]() {
      typedef typename std::remove_cv<typename std::remove_pointer<KOut>::type>::type K;
      typedef typename std::remove_cv<typename std::remove_pointer<VOut>::type>::type V;
      if (!emu::check_in(keys_in, n, what) || !emu::check_in(values_in, n, what) ||
          !tdm_emu::range_ok(temp, tb, 1, what) || !tdm_emu::range_ok(num_runs_out, sizeof *num_runs_out, 1, what))
        return;
      tdm_emu::scribble(temp, tb);
      size_t runs = 0, i = 0;
      std::vector<V> xs;
      while (i < n) {
        size_t j = i + 1;
        while (j < n && keys_in[j] == keys_in[i]) j++;
        if (!tdm_emu::range_ok(unique_out + runs, sizeof(K), 1, what) ||
            !tdm_emu::range_ok(aggregates_out + runs, sizeof(V), 1, what))
          return;
        xs.clear();
        for (size_t t = i; t < j; t++) xs.push_back((V)values_in[t]);
        unique_out[runs] = keys_in[i];
        aggregates_out[runs] = emu::fold(xs, op);
        runs++;
        i = j;
      }
      *num_runs_out = (typename std::remove_pointer<NRuns>::type)runs;
      /* The meter's model: the keys and values read once (an input that is
       * not a pointer, a counting iterator say, computes its items and reads
       * no memory, as DeviceScan's model says too), the runs written once. */
      tdm_emu::meter_model((std::is_pointer<KIn>::value ? n * sizeof(K) : 0) +
                               (std::is_pointer<VIn>::value ? n * sizeof(V) : 0),
                           runs * (sizeof(K) + sizeof(V)) + sizeof *num_runs_out);
    });
  }
};

struct DeviceScan {
  template <typename In, typename Out, typename N>
  static cudaError_t ExclusiveSum(void *temp, size_t &bytes, In in, Out out, N num_items, cudaStream_t s = 0) {
    const char *what = "cub::DeviceScan::ExclusiveSum";
    size_t n = (size_t)num_items;
    bool query;
    cudaError_t e = emu::temp_check(temp, bytes, emu::temp_need(n, 1), what, &query);
    if (e != cudaSuccess || query) return e;
    size_t tb = bytes;
    return tdm_emu::enqueue(s, what, [=]() {
      typedef typename std::remove_cv<typename std::remove_pointer<Out>::type>::type T;
      if (!emu::check_in(in, n, what) || !tdm_emu::range_ok(out, n * sizeof(T), 1, what) ||
          !tdm_emu::range_ok(temp, tb, 1, what))
        return;
      tdm_emu::scribble(temp, tb);
      T acc = T();
      for (size_t i = 0; i < n; i++) {
        T x = (T)in[i];
        out[i] = acc;
        acc = (T)(acc + x);
      }
      /* The meter's model: one read (of a pointer input) and one write of every item. */
      tdm_emu::meter_model(std::is_pointer<In>::value ? n * sizeof(T) : 0, n * sizeof(T));
    });
  }
};

namespace emu {

/* What a block-wide stand-in's TempStorage carries besides its data, to make
 * a reuse without a barrier show (CUB: "a subsequent __syncthreads()
 * threadblock barrier should be invoked after calling this method if the
 * collective's temporary storage is to be reused"): the barrier count at
 * which the last call finished (a call that starts at the same count had no
 * barrier since: reported), and the barrier count at which the current call
 * began (its first thread scribbles the data, as CUB's own passes overwrite
 * it, so a thread still reading the previous call's data reads garbage).
 * Atomics, so the bookkeeping is no data race for ThreadSanitizer. */
struct reuse_guard {
  uint64_t done_epoch, enter_epoch;
};

template <typename Data>
static inline void block_enter(Data &d, reuse_guard &g, const char *what) {
  uint64_t e = tdm_emu::barrier_epoch();
  if (__atomic_load_n(&g.done_epoch, __ATOMIC_RELAXED) == e)
    tdm_emu::device_fault("%s: TempStorage reused with no __syncthreads after the previous call on it", what);
  if (__atomic_exchange_n(&g.enter_epoch, e, __ATOMIC_ACQ_REL) != e) tdm_emu::scribble(&d, sizeof d);
  tdm_emu::yield(); /* others may run ahead into the call */
}

static inline void block_leave(reuse_guard &g) {
  __atomic_store_n(&g.done_epoch, tdm_emu::barrier_epoch(), __ATOMIC_RELAXED);
}

static inline unsigned block_rank(int block, const char *what) {
  const tdm_emu::thread_state *c = tdm_emu::cur;
  if (c->bdim.x * c->bdim.y * c->bdim.z != (unsigned)block)
    tdm_emu::device_fault("%s<%d> in a block of %u threads", what, block, c->bdim.x * c->bdim.y * c->bdim.z);
  return (c->tid.z * c->bdim.y + c->tid.y) * c->bdim.x + c->tid.x;
}

}  // namespace emu

/* Block-wide stand-ins: every thread of the block calls, the result is
 * defined where CUB defines it only, and reusing the TempStorage needs the
 * caller's __syncthreads (emu::reuse_guard). Each call switches threads at
 * entry and before the results are read. */
template <typename T, int BLOCK>
class BlockReduce {
 public:
  struct TempStorage {
    T v[BLOCK];
    emu::reuse_guard guard;
  };
  explicit BlockReduce(TempStorage &t) : t_(t) {}
  template <typename Op>
  T Reduce(T x, Op op) {
    const char *what = "cub::BlockReduce";
    unsigned me = emu::block_rank(BLOCK, what);
    emu::block_enter(t_.v, t_.guard, what);
    t_.v[me] = x;
    tdm_emu::syncthreads();
    tdm_emu::yield();
    T a = T(); /* the result is defined in thread 0 only */
    if (me == 0) {
      a = t_.v[0];
      for (int i = 1; i < BLOCK; i++) a = op(a, t_.v[i]);
    }
    emu::block_leave(t_.guard);
    return a;
  }
  T Sum(T x) {
    return Reduce(x, [](T a, T b) { return (T)(a + b); });
  }

 private:
  TempStorage &t_;
};

template <typename T, int BLOCK>
class BlockScan {
 public:
  struct TempStorage {
    struct {
      T v[BLOCK];
      T total;
    } d;
    emu::reuse_guard guard;
  };
  explicit BlockScan(TempStorage &t) : t_(t) {}
  void ExclusiveSum(T x, T &out) {
    T agg;
    ExclusiveSum(x, out, agg);
  }
  void ExclusiveSum(T x, T &out, T &aggregate) {
    const char *what = "cub::BlockScan";
    unsigned me = tdm_emu::cur->tid.x;
    if (tdm_emu::cur->bdim.x != (unsigned)BLOCK || tdm_emu::cur->bdim.y * tdm_emu::cur->bdim.z != 1)
      tdm_emu::device_fault("cub::BlockScan<%d> in a block of %u threads", BLOCK, tdm_emu::cur->bdim.x);
    emu::block_enter(t_.d, t_.guard, what);
    t_.d.v[me] = x;
    tdm_emu::syncthreads();
    if (me == 0) {
      T acc = T();
      for (int i = 0; i < BLOCK; i++) {
        T y = t_.d.v[i];
        t_.d.v[i] = acc;
        acc = (T)(acc + y);
      }
      t_.d.total = acc;
    }
    tdm_emu::syncthreads();
    tdm_emu::yield();
    out = t_.d.v[me];
    aggregate = t_.d.total;
    emu::block_leave(t_.guard);
  }

 private:
  TempStorage &t_;
};

}  // namespace cub

#endif
