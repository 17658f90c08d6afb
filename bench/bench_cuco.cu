/*
 * bench_cuco.cu: cuCollections' cuco::static_map (u64 -> u64) as a hash peer
 * of tandem-bench, built only when CMake finds cuCollections
 * (TANDEM_CUCO_DIR; scripts/fetch-cuco.sh). The map is cuco's default: open
 * addressing with linear probing by groups of 4 threads over {key, value}
 * slots, all-ones as the empty key (the same restriction as the
 * linear-probing baseline: that key cannot be stored) and all-ones as the
 * value a miss returns. bench_cuco_found turns that sentinel into the found
 * flags and zero values the result check expects, outside the timed region.
 */

#include <cuco/static_map.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "bench.h"
#include "bench_gen.h"

namespace {

const uint64_t CUCO_EMPTY = ~0ull;
using cuco_map = cuco::static_map<uint64_t, uint64_t>;

void check(cudaError_t e, const char *what) { bench_cuda_check((int)e, what); }

/* The (key, value) pair of row i, read from the two arrays as cuco inserts
 * it: no interleaved copy of the input is made. */
struct make_pair {
  const uint64_t *k, *v;
  __host__ __device__ cuco::pair<uint64_t, uint64_t> operator()(size_t i) const { return {k[i], v[i]}; }
};

__global__ void k_found(uint64_t *vals, uint8_t *found, size_t n) {
  BENCH_GRID_STRIDE(i, n) {
    bool hit = vals[i] != CUCO_EMPTY;
    found[i] = hit;
    if (!hit) vals[i] = 0;
  }
}

} // namespace

struct bench_cuco_map {
  cuco_map m;
};

bench_cuco_map *bench_cuco_create(size_t n, double load) {
  auto *p = new bench_cuco_map{cuco_map{n, load, cuco::empty_key<uint64_t>{CUCO_EMPTY},
                                        cuco::empty_value<uint64_t>{CUCO_EMPTY}}};
  check(cudaDeviceSynchronize(), "cuco create");
  return p;
}

size_t bench_cuco_capacity(const bench_cuco_map *p) { return p->m.capacity(); }

void bench_cuco_destroy(bench_cuco_map *p) { delete p; }

void bench_cuco_clear(bench_cuco_map *p) {
  p->m.clear();
  check(cudaDeviceSynchronize(), "cuco clear");
}

void bench_cuco_insert(bench_cuco_map *p, const uint64_t *d_keys, const uint64_t *d_vals, size_t n) {
  auto pairs = thrust::make_transform_iterator(thrust::counting_iterator<size_t>(0), make_pair{d_keys, d_vals});
  p->m.insert_async(pairs, pairs + n);
  check(cudaDeviceSynchronize(), "cuco insert");
}

void bench_cuco_find(const bench_cuco_map *p, const uint64_t *d_q, uint64_t *d_out, size_t nq) {
  p->m.find_async(d_q, d_q + nq, d_out);
  check(cudaDeviceSynchronize(), "cuco find");
}

void bench_cuco_found(uint64_t *d_out, uint8_t *d_found, size_t nq) {
  k_found<<<bench_blocks_for(nq), 256>>>(d_out, d_found, nq);
  check(cudaGetLastError(), "cuco found flags");
  check(cudaDeviceSynchronize(), "cuco found flags");
}
