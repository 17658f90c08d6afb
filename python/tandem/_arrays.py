"""How tandem takes arrays in and hands results back.

Each input is matched to a *kind*: the array library it came from. The kind
allocates outputs in that library (numpy in, numpy out; CuPy in, CuPy out;
torch in, torch out) and hands arrays to the extension module: host arrays
directly (nanobind reads them through DLPack or the buffer protocol, without
a copy), device arrays as a DLPack capsule exported for the context's stream,
so the producing library orders its pending work before tandem's.

Conversions, each made at most once per argument: a non-contiguous,
byte-swapped or unaligned numpy array is copied to a contiguous native one; anything that
is not an array (a list, a scalar sequence) goes through numpy.asarray;
other DLPack producers are wrapped by numpy (host) or CuPy / PyTorch (device)
without a copy, and results go back to the producer's library through its
array-API ``from_dlpack`` where it has one; an object that only offers
``__cuda_array_interface__`` is wrapped by CuPy (or PyTorch) and results stay
CuPy (or PyTorch) arrays.
"""

import numpy as np

from . import _core
from ._errors import invalid, unsupported

DTYPES = ("uint32", "uint64", "int32", "int64", "float32", "float64")

_DLPACK_CPU, _DLPACK_CUDA, _DLPACK_CUDA_HOST, _DLPACK_CUDA_MANAGED = 1, 2, 3, 13


def dtype_name(d):
    """numpy name of a dtype given as a string, numpy dtype or torch dtype."""
    s = str(d)
    if s.startswith("torch."):
        s = s[len("torch."):]
    try:
        s = np.dtype(s).name
    except TypeError:
        pass
    if s not in DTYPES:
        raise unsupported(f"dtype {d!r} is not one of tandem's: {', '.join(DTYPES)}")
    return s


class NumpyKind:
    """numpy arrays (and everything converted to them)."""

    name = "numpy"
    on_device = False
    device_id = 0

    def empty(self, n, dtype):
        # malloc'd, as a C caller's outputs are (not huge-page advised as
        # numpy's own large buffers are; see host_empty in python/src/core.cpp).
        return _core.host_empty(int(n), str(dtype))

    def copy(self, a):
        return np.array(a, order="C", copy=True)

    def writable(self, a):
        return a.flags.writeable

    def wrote(self, a):
        """Called after tandem wrote into the caller's array a (in place)."""

    def export(self, a, ctx):
        return a

    def finish(self, a):
        return a

    def astype(self, a, dtype):
        return a.astype(dtype)

    def view(self, a, dtype):
        """The same bytes as another dtype of the same width."""
        return a.view(dtype)

    def shrink(self, a, n):
        """The first n elements of an array tandem allocated for up to
        len(a): shrunk in place (realloc, no copy) when it owns its buffer."""
        if n == a.shape[0]:
            return a
        try:
            a.resize(n, refcheck=False)
            return a
        except ValueError:
            return a[:n]

    def isnan(self, a):
        return np.isnan(a)

    def invert_(self, mask):
        return np.logical_not(mask, out=mask)

    def drop_code(self, codes, p):
        """Code p becomes -1, codes above it move down by one (in place)."""
        _core.drop_code(codes, p)

    def keep(self, a):
        """A result numpy gives back in the input's ndarray subclass."""
        return a

    def assign(self, dst, src):
        """Writes src into the caller's array dst (an in-place sort that had
        to work on a converted copy)."""
        dst[...] = src

    def arange(self, n):
        return np.arange(n, dtype=np.int64)

    def concat(self, parts):
        return np.concatenate(parts)


class NumpySubKind(NumpyKind):
    """An ndarray subclass: worked on as plain numpy; the results numpy keeps
    in the subclass (sorted values, unique values) come back as one."""

    def __init__(self, cls):
        self.cls = cls

    def keep(self, a):
        return a.view(self.cls)


class CupyKind:
    on_device = True
    name = "cupy"

    def __init__(self, a):
        import cupy

        self.cupy = cupy
        self.device_id = a.device.id

    def empty(self, n, dtype):
        with self.cupy.cuda.Device(self.device_id):
            return self.cupy.empty(n, dtype=dtype)

    def copy(self, a):
        with self.cupy.cuda.Device(self.device_id):
            return a.copy()

    def writable(self, a):
        return True

    def wrote(self, a):
        pass

    def export(self, a, ctx):
        return a.__dlpack__(stream=ctx.dlpack_stream)

    def finish(self, a):
        return a

    def astype(self, a, dtype):
        with self.cupy.cuda.Device(self.device_id):
            return a.astype(dtype)

    def view(self, a, dtype):
        return a.view(dtype)

    def shrink(self, a, n):
        return a[:n]

    def isnan(self, a):
        return self.cupy.isnan(a)

    def invert_(self, mask):
        return self.cupy.logical_not(mask, out=mask)

    def drop_code(self, codes, p):
        gone = codes == p
        codes -= (codes > p).astype(codes.dtype)
        codes[gone] = -1

    def keep(self, a):
        return a

    def assign(self, dst, src):
        dst[...] = src

    def arange(self, n):
        with self.cupy.cuda.Device(self.device_id):
            return self.cupy.arange(n, dtype="int64")

    def concat(self, parts):
        with self.cupy.cuda.Device(self.device_id):
            return self.cupy.concatenate(parts)


class TorchKind:
    name = "torch"

    def __init__(self, a):
        import torch

        self.torch = torch
        self.dev = a.device
        self.on_device = a.device.type == "cuda"
        if not self.on_device and a.device.type != "cpu":
            raise invalid(f"torch tensors on {a.device} are not supported; use CPU or CUDA tensors")
        if a.is_nested or a.layout != torch.strided:
            what = "nested torch tensors" if a.is_nested else f"torch tensors of layout {a.layout}"
            raise invalid(f"{what} are not supported; use dense (torch.strided) tensors")
        self.device_id = a.device.index if self.on_device else 0

    def empty(self, n, dtype):
        return self.torch.empty(n, dtype=getattr(self.torch, dtype), device=self.dev)

    def copy(self, a):
        return a.detach().clone(memory_format=self.torch.contiguous_format)

    def writable(self, a):
        return not a.requires_grad

    def wrote(self, a):
        # Written through DLPack, which autograd does not see: bumping the
        # version makes a backward pass that saved this tensor fail, as after
        # torch's own in-place operations, instead of using the sorted data.
        self.torch.autograd.graph.increment_version(a)

    def export(self, a, ctx):
        a = a.detach()
        if self.on_device:
            return a.__dlpack__(stream=ctx.dlpack_stream)
        return a

    def finish(self, a):
        return a

    def astype(self, a, dtype):
        return a.to(getattr(self.torch, dtype))

    def view(self, a, dtype):
        return a.view(getattr(self.torch, dtype))

    def shrink(self, a, n):
        return a[:n]

    def isnan(self, a):
        return self.torch.isnan(a)

    def invert_(self, mask):
        return mask.logical_not_()

    def drop_code(self, codes, p):
        gone = codes == p
        codes.sub_((codes > p).to(codes.dtype))
        codes[gone] = -1

    def keep(self, a):
        return a

    def assign(self, dst, src):
        with self.torch.no_grad():
            dst.copy_(src)

    def arange(self, n):
        return self.torch.arange(n, dtype=self.torch.int64, device=self.dev)

    def concat(self, parts):
        return self.torch.cat(parts)


class ForeignKind:
    """Another library's arrays, worked on through a numpy / CuPy / torch view
    and converted back with the library's own from_dlpack."""

    def __init__(self, inner, back):
        self.inner, self.back = inner, back
        self.name, self.on_device, self.device_id = inner.name, inner.on_device, inner.device_id

    def empty(self, n, dtype):
        return self.inner.empty(n, dtype)

    def copy(self, a):
        return self.inner.copy(a)

    def writable(self, a):
        return False  # the caller's array is not the one tandem writes

    def export(self, a, ctx):
        return self.inner.export(a, ctx)

    def finish(self, a):
        return self.back(a) if self.back else a

    def __getattr__(self, name):  # astype, shrink, isnan, ...: the inner kind's
        return getattr(self.inner, name)


class RawDeviceKind:
    """A CUDA DLPack producer with neither CuPy nor PyTorch installed: tandem
    can read it, but has no library to allocate results in."""

    name, on_device, device_id = "dlpack", True, 0

    def __init__(self, x):
        self.device_id = int(x.__dlpack_device__()[1])

    def _no_alloc(self, *args):
        raise invalid("this CUDA array comes from a library tandem cannot allocate results in; "
                      "install CuPy or PyTorch, or pass a CuPy or PyTorch array")

    empty = copy = astype = view = shrink = isnan = invert_ = drop_code = assign = arange = concat = _no_alloc

    def keep(self, a):
        return a

    def writable(self, a):
        return False

    def export(self, a, ctx):
        return a.__dlpack__(stream=ctx.dlpack_stream)

    def finish(self, a):
        return a


def _device_wrap(x):
    """A zero-copy CuPy or torch view of a CUDA array from another library."""
    try:
        import cupy

        return cupy.asarray(x) if hasattr(x, "__cuda_array_interface__") else cupy.from_dlpack(x)
    except ImportError:
        pass
    try:
        import torch

        if hasattr(x, "__dlpack__"):
            return torch.from_dlpack(x)
        return torch.as_tensor(x, device="cuda")
    except ImportError:
        raise invalid(
            f"{type(x).__name__} is a CUDA array; tandem needs CuPy or PyTorch installed to take "
            "CUDA arrays from other libraries") from None


def _have_device_library():
    import importlib.util

    return any(importlib.util.find_spec(m) is not None for m in ("cupy", "torch"))


NUMPY = NumpyKind()


def _kind_of(a):
    if isinstance(a, np.ndarray):
        if type(a) is np.ndarray or isinstance(a, np.ma.MaskedArray):
            return NUMPY
        return NumpySubKind(type(a))
    mod = type(a).__module__.split(".")[0]
    if mod == "cupy":
        return CupyKind(a)
    if mod == "torch":
        return TorchKind(a)
    return None


def _host_numpy(a):
    """Copies once when needed: non-contiguous, byte-swapped, unaligned."""
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    if a.ndim == 1 and not (a.flags.c_contiguous and a.flags.aligned):
        a = np.array(a, order="C", copy=True)
    return a


def adopt(x, want=None):
    """Returns (array, kind, converted, owned): the array tandem works on, its
    kind, whether it is another object than x (so x itself cannot be sorted
    in place), and whether it is a fresh buffer nobody else sees (so a sort
    may reuse it instead of copying)."""
    if type(x) is np.ndarray and x.flags.c_contiguous and x.flags.aligned and x.dtype.isnative:
        return x, NUMPY, False, False  # the common case, kept short: it is per-call overhead
    kind = _kind_of(x)
    if kind is not None:
        if isinstance(kind, NumpyKind):
            a = _host_numpy(x)
            return a, kind, a is not x, a is not x
        if isinstance(kind, TorchKind) and x.is_neg():
            # A lazily negated view (the .imag of a conjugated complex
            # tensor): DLPack hands out the stored values, not the negated
            # ones, so they are negated into a copy first.
            a = x.resolve_neg()
            return a, kind, True, True
        return x, kind, False, False
    back = None
    ns = getattr(x, "__array_namespace__", None)
    if ns is not None:
        back = getattr(ns(), "from_dlpack", None)
    if hasattr(x, "__dlpack_device__"):
        dev_type = int(x.__dlpack_device__()[0])
        if dev_type in (_DLPACK_CPU, _DLPACK_CUDA_HOST):
            view = np.from_dlpack(x)
            a = _host_numpy(view)
            return a, ForeignKind(NUMPY, back), True, a is not view
        if dev_type in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED):
            if not _have_device_library():
                return x, RawDeviceKind(x), False, False
            a = _device_wrap(x)
            return a, ForeignKind(_kind_of(a), back), True, False
        raise invalid(f"{type(x).__name__} lives on DLPack device type {dev_type}; tandem takes host and CUDA arrays")
    if hasattr(x, "__cuda_array_interface__"):
        a = _device_wrap(x)
        return a, _kind_of(a), True, False
    try:
        a = np.asarray(x, dtype=want)
    except (OverflowError, ValueError, TypeError) as e:
        raise invalid(f"cannot make a {want or 'numeric'} array from {type(x).__name__}: {e}") from None
    # np.asarray may return a view of x's data (a pandas Series, an object with
    # __array__): not owned unless a copy was made here.
    b = _host_numpy(a)
    return b, NUMPY, True, b is not a


# ---- logical dtypes -------------------------------------------------------------------
#
# The C library takes the six DTYPES. The others tandem takes are mapped onto
# them and back: bool, int8, int16, uint8, uint16 and float16 are widened (to
# uint32, int32, uint32, uint32 and float32: order, equality, -0.0/+0.0 and NaN
# are kept) and results narrowed back; datetime64 and timedelta64 of any unit
# are their int64 counts. Where key order matters (sorting, unique, searchsorted,
# the B+ tree, group order) a count c is taken as c - 1, wrapping: NaT (the
# int64 minimum) becomes the largest key, so it sorts last as in numpy, and
# every other count keeps its order.

_WIDE = {"bool": "uint32", "int8": "int32", "int16": "int32", "uint8": "uint32", "uint16": "uint32",
         "float16": "float32"}
SUPPORTED = ", ".join(DTYPES + tuple(_WIDE) + ("datetime64", "timedelta64"))
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


class Logical:
    """A dtype tandem takes (``name``, numpy's name) and how it maps onto the
    C library's dtype ``core``."""

    __slots__ = ("name", "core", "time", "widen", "is_float", "has_missing")

    def __init__(self, name, core, time=False):
        self.name, self.core, self.time = name, core, time
        self.widen = name != core and not time
        self.is_float = core in ("float32", "float64")
        self.has_missing = self.is_float or time

    @property
    def native(self):
        return self.name == self.core

    def to_core(self, kind, a, ordered=True):
        """a (of this dtype) in the core dtype: ``a`` itself, a widened copy,
        or the int64 counts (shifted by -1 when ``ordered``, a new array)."""
        if self.time:
            c = a.view(np.int64)
            return c - 1 if ordered else c
        if self.widen:
            return kind.astype(a, self.core)
        return a

    def from_core(self, kind, r, ordered=True):
        """A result in the core dtype (an array tandem allocated, changed in
        place where it can be) back in this dtype."""
        if self.time:
            if ordered:
                r += 1
            return r.view(self.name)
        if self.widen:
            return kind.astype(r, self.name)
        return r

    def missing(self, kind, c, ordered=True):
        """NaN / NaT mask of a core array, or None for dtypes without one."""
        if self.is_float:
            return kind.isnan(c)
        if self.time:
            return c == (_I64_MAX if ordered else _I64_MIN)
        return None


_CACHE = {}


def logical_of(a, what, expect=None):
    """logical() of an array's dtype. An array that only DLPack describes (a
    CUDA producer with no library here to wrap it) is passed on as it is;
    the extension module checks its dtype."""
    dt = getattr(a, "dtype", None)
    if dt is None:
        return expect or OPAQUE
    return logical(dt, what)


def logical(dtype, what):
    """The Logical of an array's dtype (numpy or torch) or a dtype name;
    Unsupported naming ``what`` for any other dtype."""
    key = dtype
    try:
        return _CACHE[key]
    except (KeyError, TypeError):
        pass
    s = str(dtype)
    if s.startswith("torch."):
        s = s[len("torch."):]
    try:
        dt = np.dtype(dtype) if isinstance(dtype, np.dtype) else np.dtype(s)
    except TypeError:
        dt = None
    if dt is None or not dt.isnative and dt.byteorder != "|":
        name = s if dt is None else dt.name
        lg = None
    elif dt.kind in "mM":
        lg = Logical(dt.name, "int64", time=True)
    elif dt.name in DTYPES:
        lg = Logical(dt.name, dt.name)
    elif dt.name in _WIDE:
        lg = Logical(dt.name, _WIDE[dt.name])
    else:
        name, lg = dt.name, None
    if lg is None:
        raise unsupported(f"{what} has dtype {name}; tandem takes {SUPPORTED}")
    try:
        _CACHE[key] = lg
    except TypeError:
        pass
    return lg


# The Logical of an array only DLPack describes: handed on as it is.
OPAQUE = Logical("opaque", "opaque")
