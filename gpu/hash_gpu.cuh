/*
 * hash_gpu.cuh: what the GPU designs' hash tables share (hash_gpu.cu): the
 * per-width access to the slot functions, the table's private state, the
 * outcome counters, and the two per-width launch tables a table picks once,
 * at create, for its key and value widths: the designs' common one (erase,
 * rehash, export) and its design's (insert, find).
 */
#ifndef TANDEM_HASH_GPU_CUH
#define TANDEM_HASH_GPU_CUH

#include "gpu_common.cuh"

/* Per-width access to the shared functions, so the kernels can be templates. */
template <typename K, typename V> struct hs;
#define HS_TEMPLATE "../gpu/hash_traits.cuh" /* found through the include/ search path */
#include "tandem/detail/hash_inst.h"

static __device__ __forceinline__ void atomic_add_v(uint32_t *p, uint32_t v) { atomicAdd((unsigned int *)p, v); }
static __device__ __forceinline__ void atomic_add_v(uint64_t *p, uint64_t v) {
  atomicAdd((unsigned long long *)p, (unsigned long long)v);
}
static __device__ __forceinline__ uint32_t cas_v(uint32_t *p, uint32_t e, uint32_t d) { return tdm__hash_cas32(p, e, d); }
static __device__ __forceinline__ uint64_t cas_v(uint64_t *p, uint64_t e, uint64_t d) { return tdm__hash_cas64(p, e, d); }
static __device__ __forceinline__ uint32_t load_v(const uint32_t *p) { return tdm__hash_load32(p); }
static __device__ __forceinline__ uint64_t load_v(const uint64_t *p) { return tdm__hash_load64(p); }

/* Counters: [0..3] claim outcomes, [4..7] erase outcomes, as on the CPU. */
enum { NCOUNT = 8 };

/* Block-local counters, flushed with one global atomic each. */
struct block_counts {
  unsigned long long *c;
  __device__ void init(unsigned long long *sh) {
    c = sh;
    if (threadIdx.x < NCOUNT) c[threadIdx.x] = 0;
    __syncthreads();
  }
  __device__ void add(int i) { atomicAdd(&c[i], 1ull); }
  __device__ void flush(unsigned long long *global) {
    __syncthreads();
    if (threadIdx.x < NCOUNT && c[threadIdx.x]) atomicAdd(&global[threadIdx.x], c[threadIdx.x]);
  }
};

/* The device scratch of one insert, taken by the design's scratch function
 * before the table changes and reused by every chunk of the batch: the
 * chunk length and the design's own record of its buffers (constructed in
 * `design` by its scratch function, read by its insert). */
struct tdm__hg_scratch {
  size_t chunk; /* keys per insert call */
  alignas(16) unsigned char design[64];
};

/* One design's launch functions for one key / value width. */
struct tdm__hg_design_fns {
  /* Takes the scratch of an insert of n keys into a table that will have
   * final_cap slots. */
  tdm_status (*scratch)(tdm_hash *h, tdm__gpu_scope &sc, size_t n, size_t final_cap, tdm__hg_scratch *x);
  /* Queues the insert of one chunk of n device keys / values (the caller
   * checks the launches); fails only when a CUB call does. */
  tdm_status (*insert)(tdm_hash *h, const void *keys, const void *vals, size_t n, tdm__hg_scratch *x,
                       unsigned long long *cnt);
  /* Queues the find of n device keys (the caller checks the launch). */
  void (*find)(const tdm_hash *h, const void *keys, void *vo, uint8_t *fo, size_t n);
};

/* The launch functions both designs share, for one width (hash_gpu.cu). */
struct tdm__hg_common_fns {
  void (*rehash)(tdm_ctx *ctx, const void *src, size_t cap, void *dst, unsigned dl);
  void (*erase)(tdm_hash *h, const void *keys, size_t n, unsigned long long *cnt);
  void (*export_count)(const tdm_hash *h, unsigned long long *tile_cnt, size_t tiles);
  void (*export_write)(const tdm_hash *h, const unsigned long long *tile_off, size_t tiles, void *ko, void *vo);
};

/* A CUDA table's private state (at h->be). */
struct tdm__hash_gpu {
  void *slots;                 /* cap + 2 slots in device memory */
  unsigned long long *counts;  /* NCOUNT insert outcome counts not yet folded, device memory */
  const tdm__hg_common_fns *common; /* chosen at create for the table's widths */
  const tdm__hg_design_fns *design; /* likewise, from its design's table */
};

static inline tdm__hash_gpu *tdm__hg(const tdm_hash *h) { return (tdm__hash_gpu *)h->be; }

/* The operations both designs share (hash_gpu.cu). create takes the
 * design's per-width tables in the order of tdm__hash_inst. */
tdm_status tdm__hg_create(tdm_hash *h, const tdm__hg_design_fns *const widths[4]);
void tdm__hg_destroy(tdm_hash *h);
tdm_status tdm__hg_insert(tdm_hash *h, const void *keys, const void *values, size_t n, unsigned grow_log2);
tdm_status tdm__hg_find(const tdm_hash *h, const void *keys, void *values_out, uint8_t *found_out, size_t n);
tdm_status tdm__hg_erase(tdm_hash *h, const void *keys, size_t n, size_t *erased);
tdm_status tdm__hg_export(const tdm_hash *h, void *keys_out, void *values_out);
tdm_status tdm__hg_clear(tdm_hash *h);
tdm_status tdm__hg_validate(const tdm_hash *h);
tdm_status tdm__hg_view(const tdm_hash *h, tdm_hash_view *out);
tdm_status tdm__hg_sync_counts(tdm_hash *h, const char *fn, size_t *no_slot);

/* A design's operation table: its create, the shared rest. */
#define TDM__HG_OPS(create_fn)                                                                             \
  {                                                                                                        \
    .state_bytes = sizeof(tdm__hash_gpu), .create = create_fn, .destroy = tdm__hg_destroy,                 \
    .insert = tdm__hg_insert, .find = tdm__hg_find, .erase = tdm__hg_erase, .export_all = tdm__hg_export,  \
    .clear = tdm__hg_clear, .validate = tdm__hg_validate, .view = tdm__hg_view,                            \
    .sync_counts = tdm__hg_sync_counts,                                                                    \
  }

#endif /* TANDEM_HASH_GPU_CUH */
