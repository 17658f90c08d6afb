"""The CUDA path with CuPy and PyTorch arrays. Runs when the library and a
device are there; skips with the reason otherwise."""

import numpy as np
import pytest

import tandem
from refs import DTYPES, bits, stable_perm


def _device_reason():
    n = tandem.cuda_device_count()
    if n == 0:
        return "tandem was built without CUDA or no usable CUDA device/driver is present"
    return None


@pytest.fixture(params=["cupy", "torch"])
def xp(request):
    reason = _device_reason()
    if reason:
        pytest.skip(reason)
    if request.param == "cupy":
        cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
        try:
            if cupy.cuda.runtime.getDeviceCount() == 0:
                pytest.skip("CuPy sees no CUDA device")
        except Exception as e:  # CuPy without a working driver
            pytest.skip(f"CuPy cannot use CUDA: {e}")
        return Lib("cupy", cupy)
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    return Lib("torch", torch)


class Lib:
    """The few calls the tests need, for CuPy or torch."""

    def __init__(self, name, mod):
        self.name, self.mod = name, mod

    def asarray(self, a):
        if self.name == "cupy":
            return self.mod.asarray(a)
        return self.mod.from_numpy(np.ascontiguousarray(a)).cuda()

    def host(self, a):
        return self.mod.asnumpy(a) if self.name == "cupy" else a.cpu().numpy()

    def is_mine(self, a):
        return type(a).__module__.split(".")[0] == self.name

    def stream(self):
        return self.mod.cuda.Stream(non_blocking=True) if self.name == "cupy" else self.mod.cuda.Stream()

    def use(self, s):
        return s if self.name == "cupy" else self.mod.cuda.stream(s)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_family_matches_the_cpu(xp, dtype):
    rng = np.random.default_rng(7)
    raw = rng.integers(0, 2**63, 5000, dtype=np.uint64)
    keys = (raw.astype(np.uint32) if np.dtype(dtype).itemsize == 4 else raw).view(dtype)
    keys[:50] = keys[50:100]  # ties
    d = xp.asarray(keys)
    for desc in (False, True):
        out = tandem.sort(d, descending=desc)
        assert xp.is_mine(out)
        np.testing.assert_array_equal(bits(xp.host(out)), bits(keys[stable_perm(keys, desc)]))
        perm = tandem.argsort(d, descending=desc)
        assert xp.is_mine(perm)
        np.testing.assert_array_equal(xp.host(perm), stable_perm(keys, desc))
        k2, v2 = tandem.sort_pairs(d, xp.asarray(np.arange(5000, dtype=np.int64)), descending=desc)
        np.testing.assert_array_equal(xp.host(v2), stable_perm(keys, desc))


def test_structures_with_device_arrays(xp):
    ctx = tandem.Context("cuda")
    assert ctx.backend == "cuda"
    keys = np.arange(0, 30000, 3, dtype=np.int64)
    vals = keys * 2
    h = tandem.HashTable("int64", "int64", ctx=ctx)
    h.insert(xp.asarray(keys), xp.asarray(vals))
    v, f = h.find(xp.asarray(np.array([3, 4], dtype=np.int64)))
    assert xp.is_mine(v) and xp.is_mine(f)
    assert list(xp.host(f)) == [True, False] and xp.host(v)[0] == 6
    assert "cuda" in repr(h) and len(h) == len(keys)
    ek, ev = h.export()
    assert xp.is_mine(ek)
    t = tandem.BTree(xp.asarray(keys), xp.asarray(vals), ctx=ctx)
    r = t.rank(xp.asarray(np.array([0, 4, 30000], dtype=np.int64)))
    assert xp.is_mine(r) and list(xp.host(r)) == [0, 2, 10000]
    off, rk, rv = t.range(xp.asarray(np.array([0], dtype=np.int64)), xp.asarray(np.array([9], dtype=np.int64)))
    assert list(xp.host(rk)) == [0, 3, 6, 9] and list(xp.host(off)) == [0, 4]
    # Host arrays work on a CUDA context too (staged by the library).
    assert list(t.rank(np.array([4], dtype=np.int64))) == [2]
    t.validate()
    h.validate()


def test_bad_device_arrays(xp):
    d2 = xp.asarray(np.zeros((4, 4), dtype=np.uint32))
    with pytest.raises(tandem.InvalidArgument, match="1-D"):
        tandem.sort(d2, inplace=True)
    strided = xp.asarray(np.arange(10, dtype=np.uint32))[::2]
    with pytest.raises(tandem.InvalidArgument, match="contiguous"):
        tandem.argsort(strided)
    with pytest.raises(tandem.InvalidArgument, match="CPU context"):
        tandem.sort(xp.asarray(np.arange(4, dtype=np.uint32)), ctx=tandem.Context("cpu"))
    h = tandem.HashTable("uint64", "uint64", ctx=tandem.Context("cuda"))
    with pytest.raises(tandem.InvalidArgument):
        h.insert(xp.asarray(np.arange(4, dtype=np.uint64)), xp.asarray(np.arange(3, dtype=np.uint64)))
    assert len(h) == 0


def test_ordered_after_work_on_the_callers_stream(xp):
    n = 1 << 22
    s = xp.stream()
    with xp.use(s):
        for _ in range(3):
            d = xp.asarray(np.arange(n, 0, -1, dtype=np.uint32))
            d *= 1  # more queued work on the non-default stream
            out = tandem.sort(d)  # no synchronisation by the caller
            first = xp.host(out[:3])
            assert list(first) == [1, 2, 3]


def test_cuda_array_interface_only(xp):
    if xp.name != "cupy":
        pytest.skip("wrapped with CuPy")
    d = xp.asarray(np.array([3, 1, 2], dtype=np.int32))

    class CaiOnly:
        __cuda_array_interface__ = d.__cuda_array_interface__

    out = tandem.sort(CaiOnly())
    assert list(xp.host(out)) == [1, 2, 3]


@pytest.mark.parametrize("dtype", DTYPES)
def test_data_operations_match_the_cpu(xp, dtype):
    rng = np.random.default_rng(8)
    raw = rng.integers(0, 50, 4000).astype(dtype)
    if np.dtype(dtype).kind == "f":
        raw[:7] = [np.nan, -0.0, 0.0, -np.nan, np.inf, -np.inf, np.nan]
    q = rng.integers(0, 80, 3000).astype(dtype)
    d, dq = xp.asarray(raw), xp.asarray(q)
    vals = rng.standard_normal(4000)

    def same(got, expect):
        got = got if isinstance(got, tuple) else (got,)
        expect = expect if isinstance(expect, tuple) else (expect,)
        for g, e in zip(got, expect):
            if e is None:
                assert g is None
                continue
            assert xp.is_mine(g)
            np.testing.assert_array_equal(bits(xp.host(g)) if e.dtype.kind == "f" else xp.host(g),
                                          bits(e) if e.dtype.kind == "f" else e)

    same(tandem.unique(d, True, True, True), tandem.unique(raw, True, True, True))
    same(tandem.isin(dq, d, invert=True), tandem.isin(q, raw, invert=True))
    srt = np.sort(raw)
    for side in ("left", "right"):
        same(tandem.searchsorted(xp.asarray(srt), dq, side), tandem.searchsorted(srt, q, side))
    for sort in (False, True):
        same(tandem.factorize(d, sort=sort), tandem.factorize(raw, sort=sort))
        for agg in ("count", "sum", "min", "max", "first", "last", "mean"):
            same(tandem.group_reduce(d, xp.asarray(vals), agg, sort=sort),
                 tandem.group_reduce(raw, vals, agg, sort=sort))
    for how in ("inner", "left", "semi", "anti"):
        same(tandem.join(dq, d, how=how), tandem.join(q, raw, how=how))
