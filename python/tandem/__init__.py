"""tandem: bulk data structures (stable radix sort, hash table, B+ tree) and
the data operations built on them (unique, isin, searchsorted, factorize,
group_reduce, join: numpy's and pandas' results) on the CPU and on CUDA
GPUs, over numpy, CuPy and PyTorch arrays.

Every call releases the GIL while tandem works. Arrays are used in place when
they are C-contiguous, aligned and of a C dtype (uint32, uint64, int32, int64,
float32, float64); bool, int8, int16, uint8, uint16 and float16 are widened
inside and datetime64 / timedelta64 taken as int64 counts, with results in
the input's dtype; see tandem._arrays for the conversions made otherwise.
Results come back as the input's kind of array.

``ctx=None`` picks a context from where the input lives: a shared CPU context
(all cores) for host arrays, a shared CUDA context on the array's device for
device arrays. A HashTable without ``ctx`` lives on the CPU.
"""

import threading

import numpy as _np

from ._errors import (CapacityError, CorruptError, DeviceError, InvalidArgument, NoDevice, OutOfMemory,
                      TandemError, Unsupported, invalid)
from . import _arrays
from . import _core

__all__ = ["Context", "sort", "sort_pairs", "argsort", "HashTable", "BTree", "unique", "unique_values",
           "unique_counts", "unique_inverse", "unique_all", "isin", "searchsorted",
           "factorize", "group_reduce", "join", "TandemError", "InvalidArgument",
           "Unsupported", "OutOfMemory", "NoDevice", "DeviceError", "CapacityError", "CorruptError",
           "cuda_device_count", "__version__"]

__version__ = _core.version()

_BACKENDS = {"auto": 0, "cpu": 1, "cuda": 2}
_TYPES = {name: i + 1 for i, name in enumerate(_arrays.DTYPES)}  # tdm_type values
_DUPS = {"keep_first": 0, "keep_last": 1, "sum": 2, "min": 3, "max": 4}
_CUDA_STREAM_LEGACY = 1  # cudaStreamLegacy; also DLPack's name for it


def cuda_device_count():
    """Usable CUDA devices (0 when tandem was built without CUDA). Initialises CUDA."""
    return _core.cuda_device_count()


def _stream_handle(stream):
    if stream is None:
        return _CUDA_STREAM_LEGACY
    for attr in ("ptr", "cuda_stream"):  # CuPy, PyTorch
        if hasattr(stream, attr):
            stream = getattr(stream, attr)
            break
    if not isinstance(stream, int) or stream < 0:
        raise invalid(f"stream must be None, a cudaStream_t as an int, or a CuPy/PyTorch stream; got {stream!r}")
    return stream or _CUDA_STREAM_LEGACY  # 0 is the legacy default stream too


class _Handle:
    """A Python object over a C object (``self._c``): closed, close(), the
    context-manager protocol and repr(); ``_name`` is the class's name in
    tandem and ``_fields()`` what repr() shows of an open one."""

    @property
    def closed(self):
        return self._c.closed

    def close(self):
        """Frees it now; any later use raises InvalidArgument. A context
        stays alive until the structures made with it are closed too."""
        self._c.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        if self.closed:
            return f"<closed tandem.{self._name}>"
        return f"tandem.{self._name}({self._fields()})"


class Context(_Handle):
    """Where tandem runs: ``backend`` "auto" (CUDA when a device is usable),
    "cpu" or "cuda"; ``threads`` CPU threads (0: all cores); ``device`` the
    CUDA device; ``stream`` a CUDA stream (int handle, CuPy or PyTorch
    stream). With ``stream=None`` a CUDA context runs on the legacy default
    stream, the one CuPy and PyTorch use unless told otherwise; device arrays
    are exported through DLPack for the context's stream, so tandem's work is
    ordered after the caller's work on its current stream. Calls are
    synchronous: results are ready when a call returns."""

    _name = "Context"

    def __init__(self, backend="auto", threads=0, device=0, stream=None):
        if backend not in _BACKENDS:
            raise invalid(f"backend must be 'auto', 'cpu' or 'cuda', not {backend!r}")
        if not isinstance(threads, int) or threads < 0:
            raise invalid(f"threads must be an int >= 0 (0: all cores), not {threads!r}")
        if not isinstance(device, int) or device < 0:
            raise invalid(f"device must be an int >= 0, not {device!r}")
        self.dlpack_stream = _stream_handle(stream)
        self.threads = threads
        self._c = _core.Ctx(_BACKENDS[backend], threads, device, self.dlpack_stream)

    @property
    def backend(self):
        """The resolved backend: "cpu" or "cuda"."""
        return self._c.backend

    @property
    def device(self):
        return self._c.device

    def _fields(self):
        dev = f", device={self.device}" if self.backend == "cuda" else ""
        return f"backend='{self.backend}', threads={self.threads}{dev}"


_default_lock = threading.Lock()
_defaults = {}


def _default_ctx(kind):
    key = ("cuda", kind.device_id) if kind.on_device else ("cpu", 0)
    c = _defaults.get(key)
    if c is not None:
        return c
    with _default_lock:
        c = _defaults.get(key)
        if c is None:
            c = Context("cuda", device=kind.device_id) if kind.on_device else Context("cpu")
            _defaults[key] = c
        return c


def _ctx_for(ctx, kind):
    if ctx is None:
        return _default_ctx(kind)
    if not isinstance(ctx, Context):
        raise invalid(f"ctx must be a tandem.Context or None, not {type(ctx).__name__}")
    if ctx.closed:
        raise invalid("this tandem.Context is closed")
    return ctx


def _flags(descending):
    return _core.SORT_DESCENDING if descending else 0


def _in_place_target(x, a, kind, converted, what):
    """Whether ``a`` can be sorted as it is (True) or is sorted as a copy
    written back into the caller's array ``x`` (False); raises when neither."""
    if not converted:
        if not kind.writable(a):
            raise invalid(f"inplace=True, but {what} is read-only")
        return True
    if isinstance(x, _np.ndarray):  # non-contiguous, byte-swapped or unaligned
        if not x.flags.writeable:
            raise invalid(f"inplace=True, but {what} is read-only")
        return False
    raise invalid(f"inplace=True needs {what} to be an array tandem can write (this one would have to be "
                  "converted first)")


def _keys_in(x, what):
    """(array, kind, converted, owned, Logical) of one argument."""
    a, kind, converted, owned = _arrays.adopt(x)
    return a, kind, converted, owned, _arrays.logical_of(a, what)


def sort(keys, *, descending=False, ctx=None, inplace=False):
    """Stable sort; returns a sorted copy, or sorts ``keys`` itself and returns
    it with ``inplace=True``. Floats sort in IEEE-754 totalOrder
    (-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN); NaT sorts last
    (first with descending=True), as numpy sorts it."""
    a, kind, converted, owned, lg = _keys_in(keys, "keys")
    c = _ctx_for(ctx, kind)
    direct = inplace and _in_place_target(keys, a, kind, converted, "keys")
    if inplace and direct and lg.native:
        _core.sort(c._c, kind.export(a, c), _flags(descending))
        kind.wrote(a)
        return keys
    if lg.native:
        out = a if owned else kind.copy(a)
    else:
        out = lg.to_core(kind, a)
    _core.sort(c._c, kind.export(out, c), _flags(descending))
    out = lg.from_core(kind, out)
    if inplace:
        kind.assign(keys if not direct else a, out)
        if direct:
            kind.wrote(a)
        return keys
    return kind.keep(kind.finish(out))


def sort_pairs(keys, values, *, descending=False, ctx=None, inplace=False):
    """Stable sort of keys, carrying values along; returns (keys, values)."""
    a, ka, ca, oa, la = _keys_in(keys, "keys")
    b, kb, cb, ob, lb = _keys_in(values, "values")
    c = _ctx_for(ctx, ka)
    if inplace:
        da = _in_place_target(keys, a, ka, ca, "keys")
        db = _in_place_target(values, b, kb, cb, "values")
    else:
        da = db = False
    if da and la.native:
        ka_out = a
    else:
        ka_out = (a if oa else ka.copy(a)) if la.native else la.to_core(ka, a)
    if db and lb.native:
        kb_out = b
    else:
        # to_core copies (ordered: time counts shifted, so copied, not viewed)
        kb_out = (b if ob else kb.copy(b)) if lb.native else lb.to_core(kb, b)
    _core.sort_pairs(c._c, ka.export(ka_out, c), kb.export(kb_out, c), _flags(descending))
    ka_out, kb_out = la.from_core(ka, ka_out), lb.from_core(kb, kb_out)
    if inplace:
        for x, arr, kind, direct, out in ((keys, a, ka, da, ka_out), (values, b, kb, db, kb_out)):
            if not direct:
                kind.assign(x, out)
            elif out is not arr:
                kind.assign(arr, out)
            if direct:
                kind.wrote(arr)
        return keys, values
    return ka.keep(ka.finish(ka_out)), kb.keep(kb.finish(kb_out))


def argsort(keys, *, descending=False, index_dtype="uint64", ctx=None):
    """The stable permutation that sorts keys (keys are not changed)."""
    a, kind, _, _, lg = _keys_in(keys, "keys")
    c = _ctx_for(ctx, kind)
    perm = kind.empty(_len(a), _arrays.dtype_name(index_dtype))
    _core.argsort(c._c, kind.export(lg.to_core(kind, a), c), kind.export(perm, c), _flags(descending))
    return kind.keep(kind.finish(perm))


def _len(a):
    shape = a.shape
    if len(shape) != 1:
        raise invalid(f"expected a 1-D array, got {len(shape)} dimensions")
    return int(shape[0])


def _policy(on_duplicate):
    if on_duplicate not in _DUPS:
        raise invalid(f"on_duplicate must be one of {', '.join(_DUPS)}; got {on_duplicate!r}")
    return _DUPS[on_duplicate]


class _Structure(_Handle):
    """What the hash table and the B+ tree share: dtypes, len(), find, erase,
    validate, and the array plumbing of insert and export."""

    def __len__(self):
        return self._c.size()

    # Time keys are shifted (NaT last) only where order matters: the B+ tree.
    _ordered = False

    @property
    def key_dtype(self):
        t = self._c.key_type  # raises on a closed structure
        return t if self._kl is _arrays.OPAQUE else self._kl.name

    @property
    def value_dtype(self):
        t = self._c.value_type
        return t if self._vl is _arrays.OPAQUE else self._vl.name

    def find(self, keys):
        """Returns (values, found): found is a bool array; a miss has value 0."""
        k, a, kind = self._in(keys, self._kl, "keys")
        n = _len(a)
        values, found = kind.empty(n, self._vl.core), kind.empty(n, "bool")
        self._c.find(k, kind.export(values, self._ctx), kind.export(found, self._ctx))
        self._kind = kind
        return kind.finish(self._vl.from_core(kind, values, False)), kind.finish(found)

    def erase(self, keys):
        """Erases the keys present; returns how many were removed."""
        k, _, _ = self._in(keys, self._kl, "keys")
        return self._c.erase(k)

    def validate(self):
        """Checks every invariant; raises CorruptError naming a broken one."""
        self._c.validate()

    def _fields(self):
        return (f"backend='{self._ctx.backend}', key_dtype={self.key_dtype}, value_dtype={self.value_dtype}, "
                f"size={len(self)}")

    def _in(self, x, lg, what, ordered=None):
        """(the array handed to C, the array, its kind) of keys or values of
        dtype lg."""
        a, kind, _, _ = _arrays.adopt(x, lg.name)
        got = _arrays.logical_of(a, what, lg)
        if got is not lg and got.name != lg.name and lg is not _arrays.OPAQUE:
            raise Unsupported(f"{what} has dtype {got.name}, expected {lg.name}", "TDM_ERR_UNSUPPORTED")
        ordered = self._ordered if ordered is None else ordered
        return kind.export(lg.to_core(kind, a, ordered), self._ctx), a, kind

    def _export(self):
        """export() in the kind of array last inserted or queried with."""
        kind = self._kind
        n = len(self)
        keys, values = kind.empty(n, self._kl.core), kind.empty(n, self._vl.core)
        self._c.export(kind.export(keys, self._ctx), kind.export(values, self._ctx))
        return (kind.finish(self._kl.from_core(kind, keys, self._ordered)),
                kind.finish(self._vl.from_core(kind, values, False)))

    def _insert(self, keys, values):
        k, _, kind = self._in(keys, self._kl, "keys")
        v, _, _ = self._in(values, self._vl, "values", False)
        self._c.insert(k, v)
        self._kind = kind


class HashTable(_Structure):
    """A hash table from integer keys to values with bulk insert / find / erase.
    ``on_duplicate`` is "keep_first", "keep_last", "sum" (integer values,
    wrapping), "min" or "max"."""

    _name = "HashTable"

    def __init__(self, key_dtype, value_dtype, *, capacity=0, max_load=0.0, fixed_capacity=False,
                 on_duplicate="keep_first", ctx=None):
        self._ctx = _ctx_for(ctx, _arrays.NUMPY)
        self._kl = _arrays.logical(key_dtype, "key_dtype")
        self._vl = _arrays.logical(value_dtype, "value_dtype")
        if self._kl.is_float and not self._kl.native:  # named as given, not as widened
            raise Unsupported(f"key_dtype is {self._kl.name}: float keys are not supported; use an integer "
                              "key type", "TDM_ERR_UNSUPPORTED")
        if on_duplicate == "sum" and self._vl.is_float and not self._vl.native:
            raise Unsupported(f"on_duplicate='sum' needs integer values, not {self._vl.name}", "TDM_ERR_UNSUPPORTED")
        if not isinstance(capacity, int) or capacity < 0:
            raise invalid(f"capacity must be an int >= 0, not {capacity!r}")
        self._dup = on_duplicate
        self._kind = _arrays.NUMPY
        self._c = _core.Hash(self._ctx._c, _TYPES[self._kl.core], _TYPES[self._vl.core], capacity,
                             float(max_load), bool(fixed_capacity), _policy(on_duplicate))

    def insert(self, keys, values):
        """Inserts the pairs; duplicates resolve by the table's policy as if
        inserted one at a time in index order."""
        self._insert(keys, values)

    def export(self):
        """All (keys, values), in no particular order."""
        return self._export()

    def clear(self):
        self._c.clear()

    def _fields(self):
        return f"{super()._fields()}, on_duplicate='{self._dup}'"


class BTree(_Structure):
    """An ordered map (unique keys) bulk-built from keys in any order, with
    batched find, rank, range_count, range, insert and erase."""

    _name = "BTree"
    _ordered = True

    def __init__(self, keys, values, *, on_duplicate="keep_first", ctx=None):
        a, ka, _, _, self._kl = _keys_in(keys, "keys")
        b, kb, _, _, self._vl = _keys_in(values, "values")
        self._ctx = _ctx_for(ctx, ka)
        self._kind = ka
        self._dup = on_duplicate
        self._c = _core.BTree(self._ctx._c, ka.export(self._kl.to_core(ka, a), self._ctx),
                              kb.export(self._vl.to_core(kb, b, False), self._ctx), _policy(on_duplicate))

    @property
    def height(self):
        """Levels: 0 for an empty tree, 1 for a single leaf."""
        return self._c.height()

    def rank(self, keys):
        """Number of stored keys strictly less than each query (uint64)."""
        k, a, kind = self._in(keys, self._kl, "keys")
        out = kind.empty(_len(a), "uint64")
        self._c.rank(k, kind.export(out, self._ctx))
        return kind.finish(out)

    def range_count(self, lo, hi):
        """Number of stored keys k with lo[i] <= k <= hi[i] (uint64; 0 if lo > hi)."""
        l, a, kind = self._in(lo, self._kl, "lo")
        h, _, _ = self._in(hi, self._kl, "hi")
        out = kind.empty(_len(a), "uint64")
        self._c.range_count(l, h, kind.export(out, self._ctx))
        return kind.finish(out)

    def range(self, lo, hi):
        """Every stored entry with lo[i] <= key <= hi[i], as (offsets, keys,
        values): query i's hits, ascending, are keys[offsets[i]:offsets[i+1]]."""
        _, a, kind = self._in(lo, self._kl, "lo")
        n = _len(a)
        offsets = kind.empty(n + 1, "uint64")
        # Exported afresh for each pass: a DLPack capsule is used once.
        args = lambda: (self._in(lo, self._kl, "lo")[0], self._in(hi, self._kl, "hi")[0],
                        kind.export(offsets, self._ctx))
        done = self._c.range(*args(), None, None)
        total = int(offsets[n]) if n else 0
        keys, values = kind.empty(total, self._kl.core), kind.empty(total, self._vl.core)
        if not done:
            if not self._c.range(*args(), kind.export(keys, self._ctx), kind.export(values, self._ctx)):
                raise CapacityError("the tree changed between the two passes of range()", "TDM_ERR_CAPACITY")
        return (kind.finish(offsets), kind.finish(self._kl.from_core(kind, keys)),
                kind.finish(self._vl.from_core(kind, values, False)))

    def insert(self, keys, values):
        """Inserts the pairs; a stored key counts as earlier than the batch."""
        self._insert(keys, values)

    def export(self):
        """All (keys, values) in ascending key order."""
        return self._export()

    def _fields(self):
        return f"{super()._fields()}, height={self.height}, on_duplicate='{self._dup}'"


# Last: the data operations use Context, _ctx_for and BTree from above.
from ._ops import (factorize, group_reduce, isin, join, searchsorted, unique, unique_all,  # noqa: E402
                   unique_counts, unique_inverse, unique_values)
