"""Bad input gets the contract's exception with a clear message and changes
nothing."""

import ctypes
import subprocess
import sys

import numpy as np
import pytest

import tandem


def u64(*v):
    return np.array(v, dtype=np.uint64)


def test_exception_classes():
    assert issubclass(tandem.InvalidArgument, tandem.TandemError) and issubclass(tandem.InvalidArgument, ValueError)
    assert issubclass(tandem.Unsupported, TypeError) and issubclass(tandem.OutOfMemory, MemoryError)
    for c in (tandem.NoDevice, tandem.DeviceError, tandem.CapacityError, tandem.CorruptError):
        assert issubclass(c, tandem.TandemError)
    assert isinstance(tandem.__version__, str) and tandem.__version__.count(".") == 2


def test_wrong_dtype():
    with pytest.raises(tandem.Unsupported, match="complex128"):
        tandem.sort(np.array([3, 1], dtype=np.complex128))
    h = tandem.HashTable("uint64", "uint64")
    with pytest.raises(tandem.Unsupported, match="expected uint64") as e:
        h.insert(np.array([1], dtype=np.int64), u64(1))
    assert e.value.status == "TDM_ERR_UNSUPPORTED"
    assert len(h) == 0
    with pytest.raises(tandem.Unsupported, match="key_dtype has dtype complex64"):
        tandem.HashTable("complex64", "uint64")
    h8 = tandem.HashTable("int8", "uint64")
    with pytest.raises(tandem.Unsupported, match="keys has dtype int16, expected int8"):
        h8.insert(np.array([1], dtype=np.int16), u64(1))
    with pytest.raises(tandem.Unsupported):
        tandem.argsort(u64(2, 1), index_dtype="int64")


def test_float_keys_for_the_hash_table():
    with pytest.raises(tandem.Unsupported) as e:
        tandem.HashTable("float64", "uint64")
    assert e.value.status == "TDM_ERR_UNSUPPORTED" and "float" in str(e.value).lower()
    with pytest.raises(tandem.Unsupported):
        tandem.HashTable("int64", "float32", on_duplicate="sum")
    with pytest.raises(tandem.Unsupported, match="float16: float keys"):
        tandem.HashTable("float16", "uint64")
    with pytest.raises(tandem.Unsupported, match="not float16"):
        tandem.HashTable("int64", "float16", on_duplicate="sum")


def test_two_dimensional_and_mismatched_lengths():
    with pytest.raises(tandem.InvalidArgument, match="1-D"):
        tandem.sort(np.zeros((2, 2), dtype=np.uint32))
    h = tandem.HashTable("uint64", "uint64")
    h.insert(u64(1, 2), u64(10, 20))
    with pytest.raises(tandem.InvalidArgument, match="2 elements but values has 3"):
        h.insert(u64(3, 4), u64(1, 2, 3))
    with pytest.raises(ValueError):
        tandem.sort_pairs(u64(1, 2), u64(1))
    with pytest.raises(tandem.InvalidArgument):
        tandem.BTree(u64(1, 2), u64(1))
    assert len(h) == 2
    assert sorted(h.export()[0]) == [1, 2]


def test_read_only_output_and_in_place_rules():
    a = np.array([3, 1, 2], dtype=np.int32)
    a.flags.writeable = False
    with pytest.raises(tandem.InvalidArgument, match="read-only"):
        tandem.sort(a, inplace=True)
    assert list(a) == [3, 1, 2]
    assert list(tandem.sort(a)) == [1, 2, 3]  # reading a read-only array is fine
    with pytest.raises(tandem.InvalidArgument, match="converted"):
        tandem.sort([3, 1], inplace=True)
    k = np.array([2, 1], dtype=np.uint32)
    v = np.array([5, 6], dtype=np.uint32)
    v.flags.writeable = False
    with pytest.raises(tandem.InvalidArgument):
        tandem.sort_pairs(k, v, inplace=True)
    assert list(k) == [2, 1]


def test_bad_options():
    with pytest.raises(tandem.InvalidArgument):
        tandem.Context("gpu")
    with pytest.raises(tandem.InvalidArgument):
        tandem.Context("cpu", threads=-1)
    with pytest.raises(tandem.InvalidArgument):
        tandem.HashTable("uint64", "uint64", on_duplicate="first")
    with pytest.raises(tandem.InvalidArgument):
        tandem.HashTable("uint64", "uint64", capacity=-1)
    with pytest.raises(tandem.InvalidArgument):
        tandem.HashTable("uint64", "uint64", max_load=1.5)
    with pytest.raises(tandem.InvalidArgument):
        tandem.sort(u64(1), ctx="cpu")
    with pytest.raises(tandem.InvalidArgument):
        tandem.HashTable("uint32", "uint32").insert([-1], [1])  # does not fit uint32


def test_closed_structures_and_contexts():
    h = tandem.HashTable("uint64", "uint64")
    h.insert(u64(1), u64(1))
    h.close()
    for call in (lambda: h.insert(u64(2), u64(2)), lambda: h.find(u64(1)), lambda: len(h), h.export, h.clear,
                 h.validate, lambda: h.erase(u64(1))):
        with pytest.raises(tandem.InvalidArgument, match="closed"):
            call()
    assert "closed" in repr(h)
    h.close()  # twice is fine
    with tandem.BTree(u64(1, 2), u64(1, 2)) as t:
        assert len(t) == 2
    with pytest.raises(tandem.InvalidArgument, match="closed"):
        t.rank(u64(1))
    ctx = tandem.Context("cpu")
    t2 = tandem.BTree(u64(3, 4), u64(3, 4), ctx=ctx)
    ctx.close()
    with pytest.raises(tandem.InvalidArgument, match="closed"):
        tandem.sort(u64(2, 1), ctx=ctx)
    with pytest.raises(tandem.InvalidArgument, match="closed"):
        tandem.HashTable("uint64", "uint64", ctx=ctx)
    # A structure keeps its context alive until it is closed itself.
    assert list(t2.rank(u64(4))) == [1]
    t2.close()


def test_no_device():
    if tandem.cuda_device_count() > 0:
        pytest.skip("a CUDA device is usable here")
    with pytest.raises(tandem.NoDevice) as e:
        tandem.Context("cuda")
    assert e.value.status == "TDM_ERR_NO_DEVICE" and str(e.value)
    assert tandem.Context("auto").backend == "cpu"


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("dtype_code", ctypes.c_uint8), ("dtype_bits", ctypes.c_uint8),
                ("dtype_lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _Managed(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class FakeCudaArray:
    """A DLPack producer that says its memory is on CUDA device 0 (it is
    really a host buffer, which tandem must not touch on a CPU context)."""

    def __init__(self, n):
        self.buf = np.arange(n, dtype=np.uint64)
        self.shape = (ctypes.c_int64 * 1)(n)
        self.m = _Managed(_DLTensor(self.buf.ctypes.data, 2, 0, 1, 1, 64, 1, self.shape, None, 0), None, None)

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None, **kw):
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.m), b"dltensor", None)


def test_device_array_on_a_cpu_context(monkeypatch):
    # As without CuPy and PyTorch, which would otherwise take the fake array
    # themselves: tandem hands it to the extension module as it is.
    monkeypatch.setattr(tandem._arrays, "_have_device_library", lambda: False)
    h = tandem.HashTable("uint64", "uint64", ctx=tandem.Context("cpu"))
    fake = FakeCudaArray(4)
    with pytest.raises(tandem.InvalidArgument, match="device memory but the context is a CPU context"):
        h.insert(fake, fake)
    assert len(h) == 0
    with pytest.raises(tandem.InvalidArgument, match="CPU context"):
        tandem.BTree(fake, fake, ctx=tandem.Context("cpu"))


def test_import_and_cpu_work_do_not_initialise_cuda():
    code = ("import numpy as np, tandem; tandem.sort(np.arange(5, dtype=np.uint32)); "
            "h = tandem.HashTable('uint64', 'uint64'); h.insert([1], [2]); "
            "maps = open('/proc/self/maps').read(); print('libcuda' in maps)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_out_of_memory_is_an_exception():
    with open("/proc/sys/vm/overcommit_memory") as f:
        if f.read().strip() == "1":
            pytest.skip("vm.overcommit_memory=1: a huge allocation would not fail")
    with pytest.raises(tandem.OutOfMemory) as e:
        tandem.HashTable("uint64", "uint64", capacity=2**44)  # about 350 TB of slots
    assert e.value.status == "TDM_ERR_OUT_OF_MEMORY" and isinstance(e.value, MemoryError)


_REFUSED = [np.array(["b", "a"]), np.array([b"b", b"a"]), np.array([2, "x", None], dtype=object),
            np.array([1 + 2j, 3j]), np.zeros(2, dtype=[("a", "i4"), ("b", "f4")])]


@pytest.mark.parametrize("bad", _REFUSED, ids=lambda a: a.dtype.name)
def test_refused_dtypes_name_argument_dtype_and_the_supported_list(bad):
    """Every call refuses a dtype tandem does not take with Unsupported naming
    the argument, its dtype and the dtypes tandem takes."""
    ok = np.array([1, 2], dtype=np.int64)
    calls = {
        "keys": [lambda: tandem.sort(bad), lambda: tandem.argsort(bad), lambda: tandem.sort_pairs(bad, ok),
                 lambda: tandem.BTree(bad, ok), lambda: tandem.group_reduce(bad, ok, "sum"),
                 lambda: tandem.sort(bad, inplace=True)],
        "values": [lambda: tandem.sort_pairs(ok, bad), lambda: tandem.BTree(ok, bad),
                   lambda: tandem.group_reduce(ok, bad, "sum"), lambda: tandem.factorize(bad)],
        "ar": [lambda: tandem.unique(bad)],
        "x": [lambda: tandem.unique_values(bad), lambda: tandem.unique_all(bad)],
        "element": [lambda: tandem.isin(bad, ok)],
        "test_elements": [lambda: tandem.isin(ok, bad)],
        "a": [lambda: tandem.searchsorted(bad, ok)],
        "v": [lambda: tandem.searchsorted(ok, bad)],
        "left_keys": [lambda: tandem.join(bad, ok)],
        "right_keys": [lambda: tandem.join(ok, bad)],
    }
    for what, fns in calls.items():
        for fn in fns:
            with pytest.raises(tandem.Unsupported) as e:
                fn()
            msg = str(e.value)
            assert e.value.status == "TDM_ERR_UNSUPPORTED"
            assert msg.startswith(f"{what} has dtype {bad.dtype.name}"), msg
            assert "uint32, uint64, int32, int64, float32, float64" in msg and "datetime64" in msg, msg
    h = tandem.HashTable("int64", "int64")
    for fn, what in ((lambda: h.insert(bad, ok), "keys"), (lambda: h.insert(ok, bad), "values"),
                     (lambda: h.find(bad), "keys")):
        with pytest.raises(tandem.Unsupported, match=f"^{what} has dtype {bad.dtype.name}"):
            fn()
    with pytest.raises(tandem.Unsupported, match=f"^key_dtype has dtype {bad.dtype.name}"):
        tandem.HashTable(bad.dtype, "int64")
    with pytest.raises(tandem.Unsupported, match="^value_dtype has dtype"):
        tandem.HashTable("int64", bad.dtype)


def test_lists_of_strings_are_refused_too():
    with pytest.raises(tandem.Unsupported, match="^ar has dtype str"):
        tandem.unique(["a", "b"])
    with pytest.raises(tandem.Unsupported, match="^keys has dtype"):
        tandem.sort(["a", "b"])
