// tandem._core: the nanobind layer over tandem's public C API.
//
// Deliberately thin: it checks each array (dtype, 1-D, contiguous, memory
// space, length), releases the GIL and calls the C function. Choosing the
// context, allocating outputs in the caller's array library and turning
// foreign arrays into DLPack capsules happen in the Python package
// (tandem/_arrays.py), where the array libraries themselves do that work.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

// numpy's C API, for one thing only: the allocator of host outputs (below).
#define NPY_NO_DEPRECATED_API NPY_1_22_API_VERSION
#define NPY_TARGET_VERSION NPY_1_22_API_VERSION
#include <numpy/arrayobject.h>

#include <tandem/tandem.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

namespace nb = nanobind;

namespace {

// A failed call: the status and tandem's sentence, turned into the matching
// tandem.TandemError subclass by the translator registered below.
struct tdm_exc {
  tdm_status status;
  std::string msg;
};

[[noreturn]] void fail(tdm_status s, std::string msg) { throw tdm_exc{s, std::move(msg)}; }

// Must run on the thread that made the call: tdm_last_error is thread-local.
void check(tdm_status s) {
  if (s != TDM_OK) fail(s, tdm_last_error());
}

// Makes a C call with the GIL released, then raises its failure (with the GIL
// held again, on the same thread).
template <class F>
void call_nogil(F &&call) {
  tdm_status s;
  {
    nb::gil_scoped_release nogil;
    s = call();
  }
  check(s);
}

nb::object g_errors;  // the tandem._errors module

using in_array = nb::ndarray<nb::ro>;
using out_array = nb::ndarray<>;

// ---- contexts ------------------------------------------------------------------

// Owned by the Python Context and by every structure made with it, so the C
// context outlives its structures whatever order Python frees them in.
struct ctx_handle {
  tdm_ctx *ctx = nullptr;
  int device = 0;
  ~ctx_handle() { tdm_ctx_destroy(ctx); }
};

struct py_ctx {
  std::shared_ptr<ctx_handle> h;
  tdm_backend backend = TDM_BACKEND_CPU;
  int device = 0;

  py_ctx(int backend, int threads, int device_, uintptr_t stream) {
    tdm_ctx_opts o;
    std::memset(&o, 0, sizeof o);
    o.backend = (tdm_backend)backend;
    o.cpu_threads = threads;
    o.cuda_device = device_;
    o.cuda_stream = reinterpret_cast<void *>(stream);
    tdm_ctx *c = nullptr;
    call_nogil([&] { return tdm_ctx_create(&o, &c); });
    h = std::make_shared<ctx_handle>();
    h->ctx = c;
    h->device = device_;
    backend = tdm_ctx_backend(c);
    device = device_;
  }
  const std::shared_ptr<ctx_handle> &get() const {
    if (!h) fail(TDM_ERR_INVALID_ARGUMENT, "this tandem.Context is closed");
    return h;
  }
  void close() { h.reset(); }
};

// ---- array checks ----------------------------------------------------------------

tdm_type type_of(const nb::dlpack::dtype &dt) {
  using code = nb::dlpack::dtype_code;
  if (dt.lanes != 1) return (tdm_type)0;
  if (dt.code == (uint8_t)code::UInt && dt.bits == 32) return TDM_U32;
  if (dt.code == (uint8_t)code::UInt && dt.bits == 64) return TDM_U64;
  if (dt.code == (uint8_t)code::Int && dt.bits == 32) return TDM_I32;
  if (dt.code == (uint8_t)code::Int && dt.bits == 64) return TDM_I64;
  if (dt.code == (uint8_t)code::Float && dt.bits == 32) return TDM_F32;
  if (dt.code == (uint8_t)code::Float && dt.bits == 64) return TDM_F64;
  return (tdm_type)0;
}

// numpy's name of a dtype tandem does not take (torch names its dtypes alike).
std::string dtype_text(const nb::dlpack::dtype &dt) {
  using code = nb::dlpack::dtype_code;
  if (dt.code == (uint8_t)code::Bool) return "bool";
  const char *k = dt.code == (uint8_t)code::UInt      ? "uint"
                  : dt.code == (uint8_t)code::Int     ? "int"
                  : dt.code == (uint8_t)code::Float   ? "float"
                  : dt.code == (uint8_t)code::Bfloat  ? "bfloat"
                  : dt.code == (uint8_t)code::Complex ? "complex"
                                                      : "other";
  return std::string(k) + std::to_string(dt.bits);
}

const char *numpy_name(tdm_type t) {
  switch (t) {
    case TDM_U32: return "uint32";
    case TDM_U64: return "uint64";
    case TDM_I32: return "int32";
    case TDM_I64: return "int64";
    case TDM_F32: return "float32";
    case TDM_F64: return "float64";
  }
  return "?";
}

struct view {
  void *data;
  size_t n;
  tdm_type type;
};

template <class A>
void check_space(const A &a, const char *what, const ctx_handle &c);

// What every array argument must be: 1-D, contiguous, a tandem dtype (the
// expected one when `want` is set), and in a memory space the context can use.
template <class A>
view check_array(const A &a, const char *what, const ctx_handle &c, tdm_type want) {
  if (a.ndim() != 1)
    fail(TDM_ERR_INVALID_ARGUMENT,
         std::string(what) + " must be a 1-D array, got " + std::to_string(a.ndim()) + " dimensions");
  size_t n = a.shape(0);
  if (n > 1 && a.stride(0) != 1)
    fail(TDM_ERR_INVALID_ARGUMENT, std::string(what) +
                                       " must be contiguous; this array has a stride of " +
                                       std::to_string(a.stride(0)) + " elements (copy it first)");
  tdm_type t = type_of(a.dtype());
  if (!t)
    fail(TDM_ERR_UNSUPPORTED, std::string(what) + " has dtype " + dtype_text(a.dtype()) +
                                  "; tandem takes uint32, uint64, int32, int64, float32, float64");
  if (want && t != want)
    fail(TDM_ERR_UNSUPPORTED, std::string(what) + " has dtype " + numpy_name(t) + ", expected " +
                                  numpy_name(want));
  check_space(a, what, c);
  return view{const_cast<void *>(static_cast<const void *>(a.data())), n, t};
}

// The memory space must be one the context can use: host memory on a CPU
// context; host or CUDA memory of the context's device on a CUDA context.
template <class A>
void check_space(const A &a, const char *what, const ctx_handle &c) {
  int dev = a.device_type();
  bool host = dev == nb::device::cpu::value || dev == nb::device::cuda_host::value;
  bool cuda = dev == nb::device::cuda::value || dev == nb::device::cuda_managed::value;
  if (tdm_ctx_backend(c.ctx) == TDM_BACKEND_CPU) {
    if (!host)
      fail(TDM_ERR_INVALID_ARGUMENT,
           std::string(what) + " is in device memory but the context is a CPU context; "
                               "use a tandem.Context(\"cuda\") or copy the array to the host");
  } else if (!host) {
    if (!cuda)
      fail(TDM_ERR_INVALID_ARGUMENT,
           std::string(what) + " lives on a device that is not CUDA (DLPack device type " +
               std::to_string(dev) + ")");
    if (a.device_id() != c.device)
      fail(TDM_ERR_INVALID_ARGUMENT, std::string(what) + " is on CUDA device " +
                                         std::to_string(a.device_id()) + " but the context uses device " +
                                         std::to_string(c.device));
  }
}

// An array that goes with `first` element for element (values with keys, hi
// with lo): checked like any array, then for the same length.
template <class A>
view check_along(const A &a, const char *what, const ctx_handle &c, tdm_type want, const view &first,
                 const char *first_name) {
  view v = check_array(a, what, c, want);
  if (v.n != first.n)
    fail(TDM_ERR_INVALID_ARGUMENT, std::string(first_name) + " has " + std::to_string(first.n) +
                                       " elements but " + what + " has " + std::to_string(v.n));
  return v;
}

// found / bool outputs: numpy bool or uint8, one byte per element.
template <class A>
view check_flags(const A &a, const char *what, const ctx_handle &c, size_t n) {
  if (a.ndim() != 1 || a.shape(0) != n || (n > 1 && a.stride(0) != 1) || a.dtype().bits != 8)
    fail(TDM_ERR_INVALID_ARGUMENT, std::string(what) + " must be a contiguous 1-D bool array of length " +
                                       std::to_string(n));
  check_space(a, what, c);
  return view{a.data(), n, (tdm_type)0};
}

// ---- sort ------------------------------------------------------------------------

void sort(const py_ctx &pc, out_array keys, unsigned flags) {
  auto c = pc.get();
  view k = check_array(keys, "keys", *c, (tdm_type)0);
  call_nogil([&] { return tdm_sort(c->ctx, k.type, k.data, k.n, flags); });
}

void sort_pairs(const py_ctx &pc, out_array keys, out_array values, unsigned flags) {
  auto c = pc.get();
  view k = check_array(keys, "keys", *c, (tdm_type)0);
  view v = check_along(values, "values", *c, (tdm_type)0, k, "keys");
  call_nogil([&] { return tdm_sort_pairs(c->ctx, k.type, k.data, v.type, v.data, k.n, flags); });
}

void argsort(const py_ctx &pc, in_array keys, out_array perm, unsigned flags) {
  auto c = pc.get();
  view k = check_array(keys, "keys", *c, (tdm_type)0);
  view p = check_along(perm, "the index output", *c, (tdm_type)0, k, "keys");
  call_nogil([&] { return tdm_argsort(c->ctx, k.type, k.data, p.type, p.data, k.n, flags); });
}

// The benchmark's clocks, in seconds: wall (steady), or the process's CPU
// time over all its threads (cpu), the one a loaded machine distorts least;
// Python's time.process_time reads the same clock.
double bench_now(bool cpu) {
  if (cpu) {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Times the bare C call, for the benchmark's binding-overhead row: sorts a
// fresh copy of `keys` (host memory) `reps` times and returns the seconds of
// each tdm_sort call alone.
std::vector<double> time_c_sort(const py_ctx &pc, in_array keys, int reps, unsigned flags, bool cpu) {
  auto c = pc.get();
  view k = check_array(keys, "keys", *c, (tdm_type)0);
  size_t bytes = k.n * tdm_type_size(k.type);
  std::vector<unsigned char> work(bytes);
  std::vector<double> out;
  tdm_status s = TDM_OK;
  {
    nb::gil_scoped_release nogil;
    for (int r = 0; r < reps && s == TDM_OK; r++) {
      if (bytes) std::memcpy(work.data(), k.data, bytes);
      double t0 = bench_now(cpu);
      s = tdm_sort(c->ctx, k.type, work.data(), k.n, flags);
      out.push_back(bench_now(cpu) - t0);
    }
  }
  check(s);
  return out;
}

// ---- host outputs -----------------------------------------------------------------

// numpy arrays for host outputs, allocated as a C caller allocates them:
// malloc, nothing more. numpy's own allocator also advises MADV_HUGEPAGE on
// every buffer of 4 MiB and more, and an output filled by the call then
// takes its first-touch faults as transparent huge pages; measured on the
// project's benchmark machine (docs/results-archive.md), that moved factorize (80 MB
// of codes) and join (two 80 MB index arrays) by -8 % to +21 % of CPU time
// against the same call into malloc'd outputs, with the machine's memory
// state, so the binding could not be held to the C call. The arrays own
// their buffers through this handler (numpy's NEP 49 allocator API), so
// numpy frees them and resize() shrinks them with realloc, as with any
// other array.
void *plain_malloc(void *, size_t n) { return std::malloc(n); }
void *plain_calloc(void *, size_t n, size_t size) { return std::calloc(n, size); }
void *plain_realloc(void *, void *p, size_t n) { return std::realloc(p, n); }
void plain_free(void *, void *p, size_t) { std::free(p); }

PyDataMem_Handler plain_handler = {"tandem_malloc", 1, {nullptr, plain_malloc, plain_calloc, plain_realloc, plain_free}};
nb::object g_plain_handler;  // its capsule, as PyDataMem_SetHandler takes it

// An uninitialised 1-D numpy array of n elements of a tandem dtype or bool.
nb::object host_empty(size_t n, const std::string &dtype) {
  static const std::pair<const char *, int> types[] = {{"uint32", NPY_UINT32}, {"uint64", NPY_UINT64},
                                                       {"int32", NPY_INT32},   {"int64", NPY_INT64},
                                                       {"float32", NPY_FLOAT32}, {"float64", NPY_FLOAT64},
                                                       {"bool", NPY_BOOL}};
  int typenum = -1;
  for (const auto &t : types)
    if (dtype == t.first) typenum = t.second;
  if (typenum < 0) fail(TDM_ERR_UNSUPPORTED, "host_empty: dtype " + dtype + " is not one tandem allocates");
  // The handler is a context variable: set for this one allocation, then
  // the caller's own put back.
  PyObject *prev = PyDataMem_SetHandler(g_plain_handler.ptr());
  if (!prev) throw nb::python_error();
  npy_intp dims[1] = {(npy_intp)n};
  PyObject *a = PyArray_SimpleNew(1, dims, typenum);
  PyObject *ours = PyDataMem_SetHandler(prev);
  Py_DECREF(prev);
  if (!ours) {
    Py_XDECREF(a);
    throw nb::python_error();
  }
  Py_DECREF(ours);
  if (!a) throw nb::python_error();
  return nb::steal(a);
}

// ---- data operations --------------------------------------------------------------

// Index outputs (first index, counts, inverse, join rows) are uint64 in C;
// int64 arrays, what numpy and pandas hand out, are taken as they are: every
// value tandem writes fits (TDM_NO_MATCH reads as -1).
template <class A>
uint64_t *check_index(const A &a, const char *what, const ctx_handle &c, size_t n) {
  view v = check_array(a, what, c, (tdm_type)0);
  if (v.type != TDM_I64 && v.type != TDM_U64)
    fail(TDM_ERR_UNSUPPORTED, std::string(what) + " has dtype " + numpy_name(v.type) + ", expected int64 or uint64");
  if (v.n != n)
    fail(TDM_ERR_INVALID_ARGUMENT,
         std::string(what) + " must have " + std::to_string(n) + " elements, not " + std::to_string(v.n));
  return static_cast<uint64_t *>(v.data);
}

template <class A>
uint64_t *opt_index(const std::optional<A> &a, const char *what, const ctx_handle &c, size_t n) {
  return a ? check_index(*a, what, c, n) : nullptr;
}

// unique_out, first_out and counts_out have n elements (the most there can
// be); returns how many distinct keys were written.
size_t unique(const py_ctx &pc, in_array keys, unsigned flags, out_array unique_out,
              std::optional<out_array> first_out, std::optional<out_array> counts_out,
              std::optional<out_array> inverse_out) {
  auto c = pc.get();
  view k = check_array(keys, "ar", *c, (tdm_type)0);
  view u = check_along(unique_out, "unique_out", *c, k.type, k, "ar");
  uint64_t *first = opt_index(first_out, "first_out", *c, k.n);
  uint64_t *counts = opt_index(counts_out, "counts_out", *c, k.n);
  uint64_t *inverse = opt_index(inverse_out, "inverse_out", *c, k.n);
  size_t n_unique = 0;
  call_nogil([&] { return tdm_unique(c->ctx, k.type, k.data, k.n, flags, u.data, first, counts, inverse, &n_unique); });
  return n_unique;
}

void isin(const py_ctx &pc, in_array element, in_array test_elements, unsigned flags, out_array found_out) {
  auto c = pc.get();
  view q = check_array(element, "element", *c, (tdm_type)0);
  view s = check_array(test_elements, "test_elements", *c, q.type);
  view f = check_flags(found_out, "found_out", *c, q.n);
  call_nogil([&] { return tdm_isin(c->ctx, q.type, q.data, q.n, s.data, s.n, flags, (uint8_t *)f.data); });
}

// keys_out and values_out have len(keys) elements; values may be None for
// "count". Returns the number of groups written.
size_t group_reduce(const py_ctx &pc, in_array keys, std::optional<in_array> values, int agg, unsigned flags,
                    out_array keys_out, out_array values_out) {
  auto c = pc.get();
  view k = check_array(keys, "keys", *c, (tdm_type)0);
  view v{nullptr, k.n, TDM_U64};
  if (values) v = check_along(*values, "values", *c, (tdm_type)0, k, "keys");
  else if (agg != TDM_AGG_COUNT) fail(TDM_ERR_INVALID_ARGUMENT, "values are needed for every aggregation but count");
  view ko = check_along(keys_out, "keys_out", *c, k.type, k, "keys");
  void *vo;
  if (agg == TDM_AGG_COUNT) vo = check_index(values_out, "values_out", *c, k.n);
  else vo = check_along(values_out, "values_out", *c, agg == TDM_AGG_MEAN ? TDM_F64 : v.type, k, "keys").data;
  size_t n_groups = 0;
  call_nogil([&] {
    return tdm_group_reduce(c->ctx, k.type, k.data, v.type, v.data, k.n, (tdm_agg)agg, flags, ko.data, vo,
                            &n_groups);
  });
  return n_groups;
}

// Writes the join's rows when they fit in left_out (right_out has the same
// length, or is None for semi and anti joins). Returns (rows, written): when
// the rows do not fit, nothing is written and rows is the size needed.
std::pair<size_t, bool> join(const py_ctx &pc, int kind, in_array left_keys, in_array right_keys, unsigned flags,
                             std::optional<out_array> left_out, std::optional<out_array> right_out) {
  auto c = pc.get();
  view l = check_array(left_keys, "left_keys", *c, (tdm_type)0);
  view r = check_array(right_keys, "right_keys", *c, l.type);
  size_t cap = left_out ? left_out->shape(0) : 0;
  uint64_t *lo = opt_index(left_out, "left_index_out", *c, cap);
  uint64_t *ro = opt_index(right_out, "right_index_out", *c, cap);
  size_t n_out = 0;
  tdm_status s;
  {
    nb::gil_scoped_release nogil;
    s = tdm_join(c->ctx, (tdm_join_kind)kind, l.type, l.data, l.n, r.data, r.n, flags, lo, ro, cap, &n_out);
  }
  if (s == TDM_ERR_CAPACITY) return {n_out, false};
  check(s);
  return {n_out, true};
}

// factorize's NaN fix-up on host codes: code p (the NaN group, which pandas
// does not list) becomes -1 and the codes above it move down by one, in one
// pass with the GIL released.
void drop_code(out_array codes, int64_t p) {
  if (codes.ndim() != 1 || type_of(codes.dtype()) != TDM_I64 || (codes.shape(0) > 1 && codes.stride(0) != 1) ||
      codes.device_type() != nb::device::cpu::value)
    fail(TDM_ERR_INVALID_ARGUMENT, "codes must be a contiguous 1-D int64 host array");
  int64_t *c = static_cast<int64_t *>(codes.data());
  size_t n = codes.shape(0);
  nb::gil_scoped_release nogil;
  for (size_t i = 0; i < n; i++) c[i] = c[i] == p ? -1 : c[i] - (c[i] > p);
}

// The bare C calls behind tandem.unique(return_counts=True), isin,
// factorize, group_reduce(sum), join(inner) and searchsorted, for the
// benchmark's binding-overhead rows: each rep allocates the outputs with
// malloc (as a C caller would) and times the one call. Host arrays only.
// searchsorted is what tandem.searchsorted(a, v) runs for distinct keys in
// a (b are the queries): a B+ tree bulk-built from a with a as its values,
// the ranks of b, the tree destroyed; duplicates in a (tandem.searchsorted
// then adds a tdm_unique and a gather) are refused.
std::vector<double> time_c_op(const py_ctx &pc, const std::string &op, in_array a, in_array b, unsigned flags,
                              int reps, bool cpu) {
  auto c = pc.get();
  view x = check_array(a, "a", *c, (tdm_type)0);
  view y = check_array(b, "b", *c, (tdm_type)0);
  size_t ks = tdm_type_size(x.type), n = x.n;
  static const char *const ops[] = {"unique_counts", "factorize", "isin", "group_sum", "join_inner", "searchsorted"};
  if (std::find(std::begin(ops), std::end(ops), op) == std::end(ops))
    fail(TDM_ERR_INVALID_ARGUMENT, "time_c_op: unknown operation " + op);
  if (op == "group_sum" && y.n != n) fail(TDM_ERR_INVALID_ARGUMENT, "time_c_op: keys and values differ in length");
  if (op == "searchsorted" && y.type != x.type) fail(TDM_ERR_UNSUPPORTED, "time_c_op: a and b differ in dtype");
  bool duplicates = false;
  std::vector<double> out;
  tdm_status s = TDM_OK;
  {
    nb::gil_scoped_release nogil;
    for (int rep = 0; rep < reps && s == TDM_OK; rep++) {
      std::vector<void *> bufs;
      auto buf = [&](size_t bytes) {
        bufs.push_back(std::malloc(bytes ? bytes : 1));
        return bufs.back();
      };
      size_t got = 0;
      double t0 = bench_now(cpu);
      if (op == "unique_counts") {
        s = tdm_unique(c->ctx, x.type, x.data, n, flags, buf(n * ks), nullptr, (uint64_t *)buf(n * 8), nullptr, &got);
      } else if (op == "factorize") {
        s = tdm_unique(c->ctx, x.type, x.data, n, flags, buf(n * ks), nullptr, nullptr, (uint64_t *)buf(n * 8), &got);
      } else if (op == "isin") {
        s = tdm_isin(c->ctx, x.type, x.data, n, y.data, y.n, flags, (uint8_t *)buf(n));
      } else if (op == "group_sum") {
        s = tdm_group_reduce(c->ctx, x.type, x.data, y.type, y.data, n, TDM_AGG_SUM, flags, buf(n * ks),
                             buf(n * tdm_type_size(y.type)), &got);
      } else if (op == "join_inner") {  // sized for distinct right keys as tandem.join sizes it
        s = tdm_join(c->ctx, TDM_JOIN_INNER, x.type, x.data, n, y.data, y.n, flags, (uint64_t *)buf(n * 8),
                     (uint64_t *)buf(n * 8), n, &got);
      } else {  // searchsorted
        tdm_btree_opts o;
        std::memset(&o, 0, sizeof o);
        o.key_type = o.value_type = x.type;
        o.on_duplicate = TDM_DUP_KEEP_FIRST;
        tdm_btree *t = nullptr;
        s = tdm_btree_build(c->ctx, &o, x.data, x.data, n, &t);
        duplicates = s == TDM_OK && tdm_btree_size(t) != n;
        if (duplicates) s = TDM_ERR_INVALID_ARGUMENT;
        else if (s == TDM_OK) s = tdm_btree_rank(t, y.data, (uint64_t *)buf(y.n * 8), y.n);
        tdm_btree_destroy(t);
      }
      double t1 = bench_now(cpu);
      for (void *p : bufs) std::free(p);
      out.push_back(t1 - t0);
    }
  }
  if (duplicates) fail(TDM_ERR_INVALID_ARGUMENT, "time_c_op: searchsorted's a must hold distinct keys");
  check(s);
  return out;
}

// ---- structures -----------------------------------------------------------------

using read_lock = std::shared_lock<std::shared_mutex>;
using write_lock = std::unique_lock<std::shared_mutex>;

// Read-only calls share the lock and mutating calls (and close) take it alone,
// so Python threads may use one structure freely and close() can never free
// it under a running call. The lock is taken after the GIL is released.
//
// One class template serves the hash table and the B+ tree: what differs is
// the C handle H and the C functions over it. Members that call a function
// only one structure has (clear, rank, range, ...) are instantiated only for
// that structure.
template <class H, auto destroy_fn, auto insert_fn, auto find_fn, auto erase_fn, auto size_fn, auto export_fn,
          auto validate_fn>
struct py_structure {
  std::shared_ptr<ctx_handle> ctx;
  mutable std::shared_mutex lock;
  tdm_type key_type{}, value_type{};
  const char *kind;  // the Python class, for messages
  H *p = nullptr;

  // HashTable: an empty table with the given options.
  py_structure(const py_ctx &pc, int key_type_, int value_type_, size_t capacity, double max_load, bool fixed,
               int dup)
      : kind("HashTable") {
    ctx = pc.get();
    tdm_hash_opts o;
    std::memset(&o, 0, sizeof o);
    o.key_type = (tdm_type)key_type_;
    o.value_type = (tdm_type)value_type_;
    o.capacity = capacity;
    o.max_load = max_load;
    o.fixed_capacity = fixed;
    o.on_duplicate = (tdm_dup)dup;
    call_nogil([&] { return tdm_hash_create(ctx->ctx, &o, &p); });
    key_type = o.key_type;
    value_type = o.value_type;
  }

  // BTree: bulk-built from keys and values.
  py_structure(const py_ctx &pc, in_array keys, in_array values, int dup) : kind("BTree") {
    ctx = pc.get();
    view k = check_array(keys, "keys", *ctx, (tdm_type)0);
    view v = check_along(values, "values", *ctx, (tdm_type)0, k, "keys");
    tdm_btree_opts o;
    std::memset(&o, 0, sizeof o);
    o.key_type = k.type;
    o.value_type = v.type;
    o.on_duplicate = (tdm_dup)dup;
    call_nogil([&] { return tdm_btree_build(ctx->ctx, &o, k.data, v.data, k.n, &p); });
    key_type = k.type;
    value_type = v.type;
  }
  ~py_structure() { destroy_fn(p); }

  [[noreturn]] void closed_error() const {
    fail(TDM_ERR_INVALID_ARGUMENT, std::string("this tandem.") + kind + " is closed");
  }
  void live() const {
    if (!p) closed_error();
  }

  // Runs call(p) with the GIL released and the lock held as Lock; a structure
  // closed in the meantime raises instead. Returns the call's status.
  template <class Lock, class F>
  tdm_status locked(F &&call) const {
    tdm_status s;
    {
      nb::gil_scoped_release nogil;
      Lock g(lock);
      s = p ? call(p) : TDM_ERR_INVALID_ARGUMENT;
    }
    if (!p) closed_error();
    return s;
  }
  template <class F>
  void read(F &&call) const {
    check(locked<read_lock>(call));
  }
  template <class F>
  void write(F &&call) {
    check(locked<write_lock>(call));
  }
  // A quick read-only query, made holding the GIL.
  template <class R>
  R query(R (*fn)(const H *)) const {
    live();
    read_lock g(lock);
    return fn(p);
  }

  void insert(in_array keys, in_array values) {
    live();
    view k = check_array(keys, "keys", *ctx, key_type);
    view v = check_along(values, "values", *ctx, value_type, k, "keys");
    write([&](H *h) { return insert_fn(h, k.data, v.data, k.n); });
  }

  // values_out None: found only.
  void find(in_array keys, std::optional<out_array> values_out, out_array found_out) {
    live();
    view k = check_array(keys, "keys", *ctx, key_type);
    void *v = values_out ? check_along(*values_out, "values_out", *ctx, value_type, k, "keys").data : nullptr;
    view f = check_flags(found_out, "found_out", *ctx, k.n);
    read([&](const H *h) { return find_fn(h, k.data, v, (uint8_t *)f.data, k.n); });
  }

  size_t erase(in_array keys) {
    live();
    view k = check_array(keys, "keys", *ctx, key_type);
    size_t erased = 0;
    write([&](H *h) { return erase_fn(h, k.data, k.n, &erased); });
    return erased;
  }

  size_t size() const { return query(size_fn); }

  // Returns the count written, or raises CapacityError when the outputs are
  // too small (the caller sized them from size()).
  size_t export_(out_array keys_out, out_array values_out) {
    live();
    view k = check_array(keys_out, "keys_out", *ctx, key_type);
    view v = check_along(values_out, "values_out", *ctx, value_type, k, "keys_out");
    size_t n = 0;
    read([&](const H *h) { return export_fn(h, k.data, v.data, k.n, &n); });
    return n;
  }

  void validate() const {
    live();
    read(validate_fn);
  }

  void close() {
    nb::gil_scoped_release nogil;
    write_lock g(lock);
    destroy_fn(p);
    p = nullptr;
  }
  bool closed() const { return p == nullptr; }

  // ---- the hash table's own ----

  void clear() {
    live();
    write(tdm_hash_clear);
  }

  // ---- the B+ tree's own ----

  unsigned height() const { return query(tdm_btree_height); }

  // rank_out: uint64, or int64 (tandem.searchsorted's result dtype).
  void rank(in_array keys, out_array rank_out) {
    live();
    view k = check_array(keys, "keys", *ctx, key_type);
    uint64_t *r = check_index(rank_out, "rank_out", *ctx, k.n);
    read([&](const tdm_btree *t) { return tdm_btree_rank(t, k.data, r, k.n); });
  }

  void range_count(in_array lo, in_array hi, out_array count_out) {
    live();
    view l = check_array(lo, "lo", *ctx, key_type);
    view u = check_along(hi, "hi", *ctx, key_type, l, "lo");
    view r = check_along(count_out, "count_out", *ctx, TDM_U64, l, "lo");
    read([&](const tdm_btree *t) { return tdm_btree_range_count(t, l.data, u.data, (uint64_t *)r.data, l.n); });
  }

  // With keys_out / values_out None: fills offsets only (the first pass that
  // sizes the outputs). Returns False when the outputs are too small
  // (offsets are then filled), True when everything was written.
  bool range(in_array lo, in_array hi, out_array offsets_out, std::optional<out_array> keys_out,
             std::optional<out_array> values_out) {
    live();
    view l = check_array(lo, "lo", *ctx, key_type);
    view u = check_along(hi, "hi", *ctx, key_type, l, "lo");
    view o = check_array(offsets_out, "offsets_out", *ctx, TDM_U64);
    if (o.n != l.n + 1) fail(TDM_ERR_INVALID_ARGUMENT, "offsets_out must have len(lo) + 1 elements");
    void *kd = nullptr, *vd = nullptr;
    size_t cap = 0;
    const bool written = keys_out && values_out;
    if (written) {
      view k = check_array(*keys_out, "keys_out", *ctx, key_type);
      view v = check_along(*values_out, "values_out", *ctx, value_type, k, "keys_out");
      kd = k.data;
      vd = v.data;
      cap = k.n;
    }
    tdm_status s = locked<read_lock>([&](const tdm_btree *t) {
      return tdm_btree_range(t, l.data, u.data, l.n, (uint64_t *)o.data, kd, vd, cap);
    });
    if (s == TDM_ERR_CAPACITY) return false;
    check(s);
    // Whether the outputs were passed, not whether their data is non-NULL:
    // an empty torch or CuPy array (no hits at all) has a NULL data pointer.
    return written || l.n == 0;
  }
};

using py_hash = py_structure<tdm_hash, tdm_hash_destroy, tdm_hash_insert, tdm_hash_find, tdm_hash_erase,
                             tdm_hash_size, tdm_hash_export, tdm_hash_validate>;
using py_btree = py_structure<tdm_btree, tdm_btree_destroy, tdm_btree_insert, tdm_btree_find, tdm_btree_erase,
                              tdm_btree_size, tdm_btree_export, tdm_btree_validate>;

// The methods both structures have, bound under the same names.
template <class S>
nb::class_<S> bind_structure(nb::module_ &m, const char *name) {
  return nb::class_<S>(m, name)
      .def("insert", &S::insert)
      .def("find", &S::find, nb::arg("keys"), nb::arg("values_out").none(), nb::arg("found_out"))
      .def("erase", &S::erase)
      .def("size", &S::size)
      .def("export", &S::export_)
      .def("validate", &S::validate)
      .def("close", &S::close)
      .def_prop_ro("closed", &S::closed)
      .def_prop_ro("key_type", [](const S &s) { return numpy_name(s.key_type); })
      .def_prop_ro("value_type", [](const S &s) { return numpy_name(s.value_type); });
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "tandem's C API (internal; use the tandem package)";

  if (_import_array() < 0) throw nb::python_error();
  g_plain_handler = nb::steal(PyCapsule_New(&plain_handler, "mem_handler", nullptr));
  if (!g_plain_handler.is_valid()) throw nb::python_error();
  g_errors = nb::module_::import_("tandem._errors");
  nb::register_exception_translator([](const std::exception_ptr &p, void *) {
    try {
      std::rethrow_exception(p);
    } catch (const tdm_exc &e) {
      nb::object cls = g_errors.attr("class_for")(nb::str(tdm_status_name(e.status)));
      nb::object exc = cls(nb::str(e.msg.c_str()), nb::str(tdm_status_name(e.status)));
      PyErr_SetObject(cls.ptr(), exc.ptr());
    }
  });
  // At interpreter exit: drop our reference to g_errors (the module keeps it
  // alive), and let go of the handler's capsule without a decref (arrays
  // allocated with it may still free through it during finalisation). A
  // global left holding either would be decref'd by its C++ destructor
  // after Python is finalised: a crash at every exit on Python 3.12.
  nb::module_::import_("atexit").attr("register")(nb::cpp_function([]() {
    g_errors.reset();
    (void)g_plain_handler.release();
  }));

  m.def("version", []() { return std::string(tdm_version()); });
  m.def("cuda_device_count", []() {
    nb::gil_scoped_release nogil;
    return tdm_cuda_device_count();
  });
  m.attr("SORT_DESCENDING") = (unsigned)TDM_SORT_DESCENDING;

  nb::class_<py_ctx>(m, "Ctx")
      .def(nb::init<int, int, int, uintptr_t>(), nb::arg("backend"), nb::arg("threads"), nb::arg("device"),
           nb::arg("stream"))
      .def_prop_ro("backend", [](const py_ctx &c) { return c.backend == TDM_BACKEND_CUDA ? "cuda" : "cpu"; })
      .def_prop_ro("device", [](const py_ctx &c) { return c.device; })
      .def_prop_ro("closed", [](const py_ctx &c) { return !c.h; })
      .def("close", &py_ctx::close);

  m.def("sort", &sort);
  m.def("sort_pairs", &sort_pairs);
  m.def("argsort", &argsort);
  m.def("time_c_sort", &time_c_sort, nb::arg("ctx"), nb::arg("keys"), nb::arg("reps"), nb::arg("flags"),
        nb::arg("cpu") = false);

  m.attr("EQ_NUMERIC") = (unsigned)TDM_EQ_NUMERIC;
  m.attr("ORDER_FIRST_SEEN") = (unsigned)TDM_ORDER_FIRST_SEEN;
  m.def("unique", &unique, nb::arg("ctx"), nb::arg("keys"), nb::arg("flags"), nb::arg("unique_out"),
        nb::arg("first_out").none(), nb::arg("counts_out").none(), nb::arg("inverse_out").none());
  m.def("isin", &isin);
  m.def("group_reduce", &group_reduce, nb::arg("ctx"), nb::arg("keys"), nb::arg("values").none(), nb::arg("agg"),
        nb::arg("flags"), nb::arg("keys_out"), nb::arg("values_out"));
  m.def("join", &join, nb::arg("ctx"), nb::arg("kind"), nb::arg("left_keys"), nb::arg("right_keys"),
        nb::arg("flags"), nb::arg("left_out").none(), nb::arg("right_out").none());
  m.def("drop_code", &drop_code);
  m.def("host_empty", &host_empty);
  m.def("time_c_op", &time_c_op, nb::arg("ctx"), nb::arg("op"), nb::arg("a"), nb::arg("b"), nb::arg("flags"),
        nb::arg("reps"), nb::arg("cpu") = false);

  bind_structure<py_hash>(m, "Hash")
      .def(nb::init<const py_ctx &, int, int, size_t, double, bool, int>())
      .def("clear", &py_hash::clear);

  bind_structure<py_btree>(m, "BTree")
      .def(nb::init<const py_ctx &, in_array, in_array, int>())
      .def("rank", &py_btree::rank)
      .def("range_count", &py_btree::range_count)
      .def("range", &py_btree::range, nb::arg("lo"), nb::arg("hi"), nb::arg("offsets_out"),
           nb::arg("keys_out").none(), nb::arg("values_out").none())
      .def("height", &py_btree::height);
}
