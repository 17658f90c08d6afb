"""What data users hand tandem beyond its six C dtypes, against numpy and
pandas themselves: unaligned arrays, the small dtypes (bool, int8, int16,
uint8, uint16, float16), datetime64 and timedelta64 with NaT, signed with
unsigned integers, ndarray subclasses, numpy 2's unique family, the numpy
and pandas options (sorter, equal_nan, use_na_sentinel, dropna, kind,
assume_unique, right and outer joins) and keys of several columns."""

import numpy as np
import pytest

pytest.importorskip("hypothesis", reason="hypothesis is not installed")
pd = pytest.importorskip("pandas", reason="pandas is not installed")

from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import tandem
from refs import pandas_group, pandas_join

SMALL = ["bool", "int8", "int16", "uint8", "uint16", "float16"]
TIMES = ["datetime64[ns]", "datetime64[D]", "timedelta64[s]", "timedelta64[us]"]
NAT = np.iinfo(np.int64).min


def raw(a):
    """The bytes of an array as unsigned integers of its width (bool as uint8)."""
    a = np.asarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def same_bits(got, expect):
    assert isinstance(got, np.ndarray)
    assert got.dtype == np.asarray(expect).dtype, (got.dtype, np.asarray(expect).dtype)
    np.testing.assert_array_equal(raw(got), raw(expect))


def same_values(got, expect):
    """Same dtype; numerically equal (-0.0 == +0.0, NaN == NaN, NaT == NaT)."""
    assert isinstance(got, np.ndarray)
    expect = np.asarray(expect)
    assert got.dtype == expect.dtype, (got.dtype, expect.dtype)
    if got.dtype.kind in "mM":
        got, expect = got.view(np.int64), expect.view(np.int64)
    np.testing.assert_array_equal(got, expect)


def small_arrays(dtype, max_size=120, n=None):
    """1-D arrays of a small dtype: every bit pattern, the edges, and ties
    (n elements when given)."""
    dt = np.dtype(dtype)
    size = st.integers(0, max_size) if n is None else st.just(n)
    if dt == np.bool_:
        return hnp.arrays(dt, size)
    if dt.kind == "f":
        specials = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 65504.0]
        sb = [int(np.array([v], dt).view(np.uint16)[0]) for v in specials] + [0x7C01, 0xFE05]  # NaN payloads
        el = st.one_of(st.integers(0, 0xFFFF), st.sampled_from(sb), st.integers(0x3C00, 0x3C08))
        return hnp.arrays(np.uint16, size, elements=el).map(lambda b: b.view(np.float16))
    info = np.iinfo(dt)
    el = st.one_of(st.integers(int(info.min), int(info.max)),
                   st.sampled_from(sorted({int(info.min), int(info.max), 0, 1, max(int(info.min), -1)})),
                   st.integers(0, 8))
    return hnp.arrays(dt, size, elements=el)


def time_arrays(dtype, max_size=120, n=None, pandas=False):
    """datetime64 / timedelta64 arrays with NaT, the extreme counts and ties
    (with ``pandas``, counts pandas can hold in any unit)."""
    if pandas:
        el = st.one_of(st.integers(-10**9, 10**9), st.just(NAT), st.integers(-5, 5))
    else:
        el = st.one_of(st.integers(NAT + 1, -NAT - 1), st.sampled_from([NAT, NAT, NAT + 1, -NAT - 1, 0, -1, 1]),
                       st.integers(-5, 5))
    size = st.integers(0, max_size) if n is None else st.just(n)
    return hnp.arrays(np.int64, size, elements=el).map(lambda b: b.view(dtype))


def any_arrays(dtype, max_size=120, n=None, pandas=False):
    if dtype.startswith(("datetime", "timedelta")):
        return time_arrays(dtype, max_size, n, pandas)
    return small_arrays(dtype, max_size, n)


def numpy_order(a):
    """np.sort's result for the same multiset: NaN and NaT last."""
    return np.sort(a, kind="stable")


# ---- 1: unaligned arrays -------------------------------------------------------------------------


def unaligned(values, dtype=np.int64):
    """values as an array of dtype at a 1-byte offset (not aligned)."""
    values = np.asarray(values, dtype=dtype)
    buf = np.zeros(values.nbytes + 1, np.uint8)
    a = buf[1:].view(dtype)
    a[:] = values
    assert not a.flags.aligned
    return a


@pytest.mark.parametrize("dtype", ["int64", "float64", "uint32", "int16", "datetime64[s]"])
def test_unaligned_arrays_work_everywhere(dtype):
    vals = np.array([5, 3, 1, 3, 9, 2, 0, 7, 3, 1]).astype(dtype)
    a = unaligned(vals, dtype)
    b = np.frombuffer(b"\0" + vals.tobytes(), dtype=dtype, offset=1)
    assert not b.flags.aligned
    for x in (a, b):
        same_bits(tandem.sort(x), np.sort(vals, kind="stable"))
        same_bits(tandem.argsort(x).astype(np.int64), np.argsort(vals, kind="stable"))
        k, v = tandem.sort_pairs(x, x)
        same_bits(k, np.sort(vals, kind="stable"))
        for got, want in zip(tandem.unique(x, True, True, True), np.unique(vals, True, True, True)):
            same_bits(got, want)
        same_bits(tandem.isin(x, x[:3]), np.isin(vals, vals[:3]))
        same_bits(tandem.isin(vals, x[:3]), np.isin(vals, vals[:3]))
        s = np.sort(vals)
        same_bits(tandem.searchsorted(unaligned(s, dtype), x), np.searchsorted(s, vals))
        codes, u = tandem.factorize(x)
        rc, ru = pd.factorize(vals)
        same_bits(codes, rc.astype(np.int64))
        same_bits(u, ru)
        gk, red = tandem.group_reduce(x, unaligned(np.arange(10), np.int64), "sum")
        pk, pr = pandas_group(vals, np.arange(10), "sum", True)
        same_bits(gk, pk)
        same_bits(red, pr)
        li, ri = tandem.join(x, a)
        pl, pr = pandas_join(vals, vals, "inner")
        same_bits(li, pl)
        same_bits(ri, pr)
        t = tandem.BTree(x, x)
        same_bits(t.export()[0], np.unique(vals))
        same_bits(t.rank(x).astype(np.int64), np.searchsorted(np.unique(vals), vals))
        same_bits(t.find(x)[0], vals)
        t.insert(x, x)
        assert t.erase(x) == len(np.unique(vals))
    if dtype not in ("float64", "datetime64[s]"):
        h = tandem.HashTable(dtype, dtype)
        h.insert(a, a)
        got, found = h.find(b)
        assert found.all()
        same_bits(got, vals)
        assert h.erase(a) == len(np.unique(vals))
    # in place: sorted through a copy, written back
    c = unaligned(vals, dtype)
    assert tandem.sort(c, inplace=True) is c
    same_bits(np.array(c), np.sort(vals, kind="stable"))
    k, v = unaligned(vals, dtype), unaligned(np.arange(10), np.int64)
    tandem.sort_pairs(k, v, inplace=True)
    same_bits(np.array(k), np.sort(vals, kind="stable"))
    same_bits(np.array(v), np.argsort(vals, kind="stable"))


def test_in_place_sort_of_converted_numpy_arrays_writes_back():
    base = np.array([5, 1, 4, 2, 3, 0, 9, 8], dtype=np.int64)
    strided = base.copy()
    view = strided[::2]
    assert tandem.sort(view, inplace=True) is view
    np.testing.assert_array_equal(strided, [3, 1, 4, 2, 5, 0, 9, 8])
    swapped = base.astype(">i8")
    tandem.sort(swapped, inplace=True)
    np.testing.assert_array_equal(swapped, np.sort(base))
    ro = unaligned(base)
    ro.flags.writeable = False
    with pytest.raises(tandem.InvalidArgument, match="read-only"):
        tandem.sort(ro, inplace=True)


# ---- 3: signed with unsigned integers ------------------------------------------------------------


def mixed_ints(signed):
    info = np.iinfo(signed)
    s = st.one_of(st.integers(int(info.min), int(info.max)), st.integers(-3, 3),
                  st.sampled_from([int(info.min), int(info.max)]))
    u = st.one_of(st.integers(0, 2**64 - 1), st.integers(0, 3), st.sampled_from([2**63 - 1, 2**63, 2**64 - 1,
                                                                                  int(info.max)]))
    return hnp.arrays(signed, st.integers(0, 60), elements=s), hnp.arrays(np.uint64, st.integers(0, 60), elements=u)


def exact_join(a, b, how):
    """The join of two integer arrays compared as Python ints (exactly), in
    pandas.merge's row order."""
    a, b = [int(x) for x in a], [int(y) for y in b]
    if how == "right":
        ri, li = exact_join(b, a, "left")
        return li, ri
    li, ri = [], []
    for i, x in enumerate(a):
        js = [j for j, y in enumerate(b) if x == y]
        if how in ("semi", "anti"):
            if bool(js) == (how == "semi"):
                li.append(i)
            continue
        if not js and how in ("left", "outer"):
            js = [-1]
        li += [i] * len(js)
        ri += js
    if how == "outer":
        rows = list(zip(li, ri)) + [(-1, j) for j, y in enumerate(b) if y not in set(a)]
        rows.sort(key=lambda r: a[r[0]] if r[0] >= 0 else b[r[1]])
        li, ri = [r[0] for r in rows], [r[1] for r in rows]
    return np.array(li, dtype=np.int64), (None if how in ("semi", "anti") else np.array(ri, dtype=np.int64))


@pytest.mark.parametrize("signed", ["int64", "int32", "int8"])
@given(data=st.data(), invert=st.booleans(), swap=st.booleans())
def test_signed_with_uint64_compare_exactly(signed, data, invert, swap):
    sa, ua = mixed_ints(signed)
    a, b = data.draw(sa), data.draw(ua)
    if swap:
        a, b = b, a
    exact = {int(x) for x in b}
    np.testing.assert_array_equal(tandem.isin(a, b), [int(x) in exact for x in a])
    # numpy.isin (its sorting path) and pandas.merge compare them through
    # float64 (2**63 - 1 matches 2**63): against them where that is exact,
    # against Python ints always.
    ints = {int(x) for x in a} | exact
    pandas_exact = len({float(x) for x in ints}) == len(ints)
    if pandas_exact:
        np.testing.assert_array_equal(tandem.isin(a, b, invert=invert), np.isin(a, b, invert=invert))
    for how in ("inner", "left", "right", "outer", "semi", "anti"):
        li, ri = tandem.join(a, b, how=how)
        for pl, pr in [exact_join(a, b, how)] + ([pandas_join(a, b, how)] if pandas_exact else []):
            same_bits(li, pl)
            if pr is not None:
                same_bits(ri, pr)


def test_mixed_integers_where_numpy_rounds():
    a = np.array([1, 2, 3], dtype=np.int64)
    with pytest.raises(tandem.Unsupported, match="numpy would round both to float64"):
        tandem.searchsorted(a, a.astype(np.uint64))
    np.testing.assert_array_equal(tandem.isin(np.array([-1, 2**62 + 1], np.int64),
                                              np.array([2**64 - 1, 2**62 + 1], np.uint64)), [False, True])


# ---- 4: ndarray subclasses -----------------------------------------------------------------------


class Sub(np.ndarray):
    pass


def test_subclasses_come_back_where_numpy_keeps_them():
    base = np.array([3.0, 1.0, np.nan, 1.0, np.nan, 2.0])
    s = base.view(Sub)
    calls = {
        "sort": (lambda m: m.sort(s), lambda: np.sort(s)),
        "argsort": (lambda m: m.argsort(s), lambda: np.argsort(s)),
        "unique": (lambda m: m.unique(s, True, True, True), lambda: np.unique(s, True, True, True)),
        "unique_values": (lambda m: m.unique_values(s), lambda: np.unique_values(s)),
        "unique_counts": (lambda m: m.unique_counts(s), lambda: np.unique_counts(s)),
        "unique_inverse": (lambda m: m.unique_inverse(s), lambda: np.unique_inverse(s)),
        "unique_all": (lambda m: m.unique_all(s), lambda: np.unique_all(s)),
        "isin": (lambda m: m.isin(s, s), lambda: np.isin(s, s)),
        "searchsorted": (lambda m: m.searchsorted(np.sort(s), s), lambda: np.searchsorted(np.sort(s), s)),
    }
    for name, (ours, theirs) in calls.items():
        got, want = ours(tandem), theirs()
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        assert [type(g) for g in got] == [type(w) for w in want], name
    assert type(tandem.factorize(s)[1]) is type(pd.factorize(s)[1])
    assert type(tandem.sort_pairs(s, base)[0]) is Sub
    m = np.ma.masked_array([3, 1, 2])
    assert type(tandem.unique(m)) is np.ndarray


# ---- 5 and 6: small dtypes, datetime64 and timedelta64 --------------------------------------------


ALL = SMALL + TIMES


@pytest.mark.parametrize("dtype", ALL)
@given(data=st.data(), descending=st.booleans())
def test_sort_family(dtype, data, descending):
    a = data.draw(any_arrays(dtype))
    before = a.copy()
    got = tandem.sort(a)
    if dtype == "float16":  # tandem's totalOrder: -NaN first; the rest as numpy
        same_bits(got, tandem.sort(a.astype(np.float32)).astype(np.float16))
        same_values(got[~np.isnan(got)], numpy_order(a[~np.isnan(a)]))
    else:
        same_bits(got, numpy_order(a))
        same_bits(tandem.argsort(a).astype(np.int64), np.argsort(a, kind="stable"))
    perm = tandem.argsort(a, descending=descending).astype(np.int64)
    same_bits(tandem.sort(a, descending=descending), a[perm])
    v = np.arange(len(a), dtype=np.int16)
    k2, v2 = tandem.sort_pairs(a, v, descending=descending)
    same_bits(k2, a[perm])
    same_bits(v2, v[perm])
    w = v[::-1].copy()
    k3, v3 = tandem.sort_pairs(w, a)  # a as values: permuted in a copy
    same_bits(v3, a[np.argsort(w, kind="stable")])
    same_bits(a, before)
    c = a.copy()
    tandem.sort(c, descending=descending, inplace=True)
    same_bits(c, a[perm])
    if dtype in TIMES:  # NaT sorts last, first when descending
        nat = np.isnat(tandem.sort(a, descending=descending))
        assert list(nat) == sorted(nat, reverse=descending)


@pytest.mark.parametrize("dtype", ALL)
@given(data=st.data(), ri=st.booleans(), rv=st.booleans(), rc=st.booleans(), equal_nan=st.booleans())
def test_unique(dtype, data, ri, rv, rc, equal_nan):
    a = data.draw(any_arrays(dtype))
    got = tandem.unique(a, return_index=ri, return_inverse=rv, return_counts=rc, equal_nan=equal_nan)
    got = got if isinstance(got, tuple) else (got,)
    # return_index: numpy's stable path, each value its first occurrence's
    # bits (the path the counts and index follow for NaN and NaT too).
    ref = np.unique(a, return_index=True, return_inverse=rv, return_counts=rc, equal_nan=equal_nan)
    want = [ref[0]] + ([ref[1]] if ri else []) + list(ref[2:])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        same_bits(g, w)


@pytest.mark.parametrize("dtype", ALL)
@given(data=st.data())
def test_unique_family(dtype, data):
    a = data.draw(any_arrays(dtype))
    r = np.unique(a, return_index=True, return_inverse=True, return_counts=True, equal_nan=False)
    ua = tandem.unique_all(a)
    assert type(ua) is type(np.unique_all(a)) and ua._fields == ("values", "indices", "inverse_indices", "counts")
    same_bits(ua.values, r[0])
    same_bits(ua.indices, r[1])
    same_bits(ua.inverse_indices, r[2])
    same_bits(ua.counts, r[3])
    # numpy 2's own functions: the same sets, numpy does not promise an order
    nu = np.unique_counts(a)
    o = np.argsort(nu.values, kind="stable")
    uc = tandem.unique_counts(a)
    assert type(uc) is type(nu)
    same_values(uc.values, nu.values[o])
    same_values(uc.counts, nu.counts[o])
    # numpy.unique_values keeps every NaN but one NaT (its hash path);
    # tandem's unique_values is unique_all's values, NaT as NaN.
    if dtype in TIMES:
        same_values(tandem.unique_values(a), r[0])
    else:
        same_values(tandem.unique_values(a), np.sort(np.unique_values(a)))
    ui = tandem.unique_inverse(a)
    assert type(ui) is type(np.unique_inverse(a))
    same_values(ui.values[ui.inverse_indices], a)


@pytest.mark.parametrize("dtype", ALL)
@given(data=st.data(), invert=st.booleans(), kind=st.sampled_from([None, "sort", "table"]))
def test_isin(dtype, data, invert, kind):
    a, b = data.draw(any_arrays(dtype)), data.draw(any_arrays(dtype, 30))
    got = tandem.isin(a, b, invert=invert, kind=kind, assume_unique=False)
    np.testing.assert_array_equal(got, np.isin(a, b, invert=invert))
    u = np.unique(b)
    np.testing.assert_array_equal(tandem.isin(np.unique(a), u, assume_unique=True), np.isin(np.unique(a), u))


@pytest.mark.parametrize("dtype", ALL)
@given(data=st.data(), side=st.sampled_from(["left", "right"]), use_sorter=st.booleans())
def test_searchsorted(dtype, data, side, use_sorter):
    a, v = data.draw(any_arrays(dtype)), data.draw(any_arrays(dtype, 40))
    s = numpy_order(a)
    want = np.searchsorted(s, v, side=side)
    if use_sorter:
        got = tandem.searchsorted(a, v, side=side, sorter=np.argsort(a, kind="stable"))
    else:
        got = tandem.searchsorted(s, v, side=side)
    same_bits(got, want.astype(np.int64))


@pytest.mark.parametrize("dtype", ALL)
@given(data=st.data(), sort=st.booleans(), sentinel=st.booleans())
def test_factorize(dtype, data, sort, sentinel):
    a = data.draw(any_arrays(dtype, pandas=True))
    codes, u = tandem.factorize(a, sort=sort, use_na_sentinel=sentinel)
    rc, ru = pd.factorize(a, sort=sort, use_na_sentinel=sentinel)
    same_bits(codes, rc.astype(np.int64))
    same_values(u, np.asarray(ru))


def _pandas_keys(k):
    return k.astype(np.float32) if k.dtype == np.float16 else k  # pandas has no float16 index


@pytest.mark.parametrize("dtype", ALL)
@given(data=st.data(), sort=st.booleans(), dropna=st.booleans(), agg=st.sampled_from(["count", "sum", "min", "max",
                                                                                       "first", "last", "mean"]))
def test_group_reduce_keys(dtype, data, sort, dropna, agg):
    k = data.draw(any_arrays(dtype, pandas=True))
    v = data.draw(hnp.arrays(np.int64, len(k), elements=st.integers(-1000, 1000)))
    gk, red = tandem.group_reduce(k, v, agg, sort=sort, dropna=dropna)
    r = getattr(pd.Series(v).groupby(_pandas_keys(k), sort=sort, dropna=dropna), agg)()
    want = r.index.to_numpy()
    if dtype == "float16":
        gk = gk.astype(np.float32)
    elif dtype.endswith("[D]"):  # pandas holds days as seconds
        gk = gk.astype(want.dtype)
    same_values(gk, want)
    same_values(red, r.to_numpy())


VALUE_DTYPES = SMALL + ["timedelta64[s]", "datetime64[ns]"]


@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@given(data=st.data(), sort=st.booleans(), agg=st.sampled_from(["count", "sum", "min", "max", "first", "last",
                                                                 "mean"]))
def test_group_reduce_values(dtype, data, sort, agg):
    n = data.draw(st.integers(0, 100))
    k = data.draw(hnp.arrays(np.int64, n, elements=st.integers(0, 6)))
    if dtype == "float16" and agg in ("sum", "mean"):  # exact in any order of additions
        el = st.one_of(st.integers(-30, 30).map(float), st.sampled_from([np.nan, np.inf, -0.0]))
        v = data.draw(hnp.arrays(np.float16, n, elements=el))
    elif dtype.startswith(("time", "date")):
        el = st.one_of(st.integers(-10**6, 10**6), st.just(NAT))
        v = data.draw(hnp.arrays(np.int64, n, elements=el)).view(dtype)
    else:
        v = data.draw(small_arrays(dtype, n=n))
    ser = pd.Series(v)
    if dtype.startswith("date") and agg == "sum":
        with pytest.raises(tandem.Unsupported, match="values has dtype"):
            tandem.group_reduce(k, v, agg)
        return
    gk, red = tandem.group_reduce(k, v, agg, sort=sort)
    r = getattr(ser.groupby(k, sort=sort), agg)()
    same_values(gk, r.index.to_numpy())
    want = r.to_numpy()
    if agg == "mean" and dtype == "float16":  # pandas: float64 dtype, float32 precision
        assert red.dtype == np.float64
        np.testing.assert_array_equal(red.astype(np.float32), want.astype(np.float32))
    elif agg == "mean" and dtype.startswith(("time", "date")):
        same_values(red, want)
    elif agg == "mean":
        same_values(red, want.astype(np.float64))
    elif agg == "sum" and dtype == "float16":
        same_values(red, want)
    else:
        same_bits(red, want) if dtype != "float16" else same_values(red, want)


@pytest.mark.parametrize("dtype", ALL)
@given(data=st.data(), how=st.sampled_from(["inner", "left", "right", "outer", "semi", "anti"]))
def test_join(dtype, data, how):
    a, b = data.draw(any_arrays(dtype, 50, pandas=True)), data.draw(any_arrays(dtype, 50, pandas=True))
    li, ri = tandem.join(a, b, how=how)
    if dtype == "float16":  # pandas merges float16 keys as float32: the same equality
        a, b = a.astype(np.float32), b.astype(np.float32)
    pl, pr = pandas_join(a, b, how)
    same_bits(li, pl)
    if pr is not None:
        same_bits(ri, pr)


@pytest.mark.parametrize("key_dtype", ["int8", "bool", "uint16", "datetime64[ms]"])
@pytest.mark.parametrize("value_dtype", ["uint8", "int16", "bool", "float16", "timedelta64[ns]"])
@given(data=st.data())
def test_hash_table_and_btree(key_dtype, value_dtype, data):
    k = data.draw(any_arrays(key_dtype))
    v = data.draw(any_arrays(value_dtype, n=len(k)))
    q = data.draw(any_arrays(key_dtype, 40))
    model = {}
    for x, y in zip(raw(k).tolist(), raw(v).tolist()):
        model.setdefault(x, y)
    h = tandem.HashTable(key_dtype, value_dtype)
    assert (h.key_dtype, h.value_dtype) == (np.dtype(key_dtype).name, np.dtype(value_dtype).name)
    h.insert(k, v)
    assert len(h) == len(model)
    vals, found = h.find(q)
    assert vals.dtype == np.dtype(value_dtype)
    np.testing.assert_array_equal(found, [x in model for x in raw(q).tolist()])
    np.testing.assert_array_equal(raw(vals)[found], [model[x] for x in raw(q)[found].tolist()])
    ek, ev = h.export()
    assert ek.dtype == np.dtype(key_dtype) and ev.dtype == np.dtype(value_dtype)
    assert dict(zip(raw(ek).tolist(), raw(ev).tolist())) == model
    t = tandem.BTree(k, v)
    ek, ev = t.export()
    same_bits(ek, np.unique(k, equal_nan=True) if len(k) else k)
    assert dict(zip(raw(ek).tolist(), raw(ev).tolist())) == model
    same_bits(t.rank(q).astype(np.int64), np.searchsorted(ek, q).astype(np.int64))
    vals, found = t.find(q)
    np.testing.assert_array_equal(found, [x in model for x in raw(q).tolist()])
    lo, hi = np.minimum(q, q[::-1]), np.maximum(q, q[::-1])
    if len(q) and key_dtype.startswith("date"):
        lo, hi = np.where(np.isnat(q) | np.isnat(q[::-1]), q, lo), np.where(np.isnat(q) | np.isnat(q[::-1]), q, hi)
    offsets, rk, _ = t.range(lo, hi)
    assert rk.dtype == np.dtype(key_dtype)
    np.testing.assert_array_equal(np.diff(offsets.astype(np.int64)), t.range_count(lo, hi).astype(np.int64))


def test_time_units_mix_as_numpy_converts():
    s = np.array([1, 2, 3, "NaT"], "M8[s]")
    ms = np.array([1000, 1500, 3000, "NaT"], "M8[ms]")
    np.testing.assert_array_equal(tandem.isin(s, ms), np.isin(s, ms))
    np.testing.assert_array_equal(tandem.isin(ms, s), np.isin(ms, s))
    same_bits(tandem.searchsorted(s, ms), np.searchsorted(s, ms).astype(np.int64))
    li, ri = tandem.join(s, ms)  # NaT matches NaT, as in pandas
    np.testing.assert_array_equal(li, [0, 2, 3])
    np.testing.assert_array_equal(ri, [0, 2, 3])
    with pytest.raises(tandem.Unsupported):
        tandem.isin(s, np.array([1], "m8[s]"))
    with pytest.raises(tandem.Unsupported):
        tandem.join(s, np.array([1], np.int64))


def test_small_dtypes_mix_as_numpy_promotes():
    i8 = np.array([-1, 2, 100], np.int8)
    u8 = np.array([255, 2, 100], np.uint8)
    np.testing.assert_array_equal(tandem.isin(i8, u8), np.isin(i8, u8))
    np.testing.assert_array_equal(tandem.isin(u8, np.array([True]), invert=True), [True, True, True])
    same_bits(tandem.searchsorted(np.sort(u8), i8), np.searchsorted(np.sort(u8), i8).astype(np.int64))


# ---- 8: options ----------------------------------------------------------------------------------


def test_options_are_checked():
    a = np.array([3, 1, 2], dtype=np.int64)
    with pytest.raises(tandem.InvalidArgument, match="sorter"):
        tandem.searchsorted(a, a, sorter=np.array([0, 1]))
    with pytest.raises(tandem.InvalidArgument, match="sorter"):
        tandem.searchsorted(a, a, sorter=np.array([0, 1, 3]))
    with pytest.raises(tandem.Unsupported, match="sorter"):
        tandem.searchsorted(a, a, sorter=np.array([0.0, 1.0, 2.0]))
    with pytest.raises(tandem.InvalidArgument, match="kind"):
        tandem.isin(a, a, kind="hash")
    with pytest.raises(tandem.InvalidArgument, match="how"):
        tandem.join(a, a, how="cross")


def test_float_options_against_numpy_and_pandas():
    a = np.array([2.0, np.nan, -0.0, 0.0, np.nan, 1.0, -np.nan])
    for got, want in zip(tandem.unique(a, True, True, True, equal_nan=False),
                         np.unique(a, True, True, True, equal_nan=False)):
        same_bits(got, want)
    codes, u = tandem.factorize(a, use_na_sentinel=False)
    rc, ru = pd.factorize(a, use_na_sentinel=False)
    same_bits(codes, rc.astype(np.int64))
    same_values(u, ru)
    for sort in (True, False):
        gk, red = tandem.group_reduce(a, np.arange(7), "sum", sort=sort, dropna=False)
        r = pd.Series(np.arange(7)).groupby(a, sort=sort, dropna=False).sum()
        same_values(gk, r.index.to_numpy())
        same_values(red, r.to_numpy())


# ---- 9: keys of several columns ------------------------------------------------------------------


def column(dtype, n):
    if dtype == "float64":
        return hnp.arrays(np.float64, n, elements=st.one_of(st.integers(0, 3).map(float),
                                                            st.sampled_from([np.nan, -0.0])))
    if dtype.startswith("date"):
        return hnp.arrays(np.int64, n, elements=st.one_of(st.integers(0, 3), st.just(NAT))).map(
            lambda b: b.view(dtype))
    return hnp.arrays(dtype, n, elements=st.integers(0, 3) if dtype != "bool" else st.booleans())


COLUMN_SETS = [("int64", "float64"), ("int8", "datetime64[s]", "uint64"), ("float64", "float64", "bool")]


@pytest.mark.parametrize("dtypes", COLUMN_SETS, ids="-".join)
@given(data=st.data(), sort=st.booleans(), dropna=st.booleans(), agg=st.sampled_from(["count", "sum", "first"]))
def test_group_reduce_several_columns(dtypes, data, sort, dropna, agg):
    n = data.draw(st.integers(0, 80))
    cols = tuple(data.draw(column(d, n)) for d in dtypes)
    v = data.draw(hnp.arrays(np.int64, n, elements=st.integers(-100, 100)))
    gk, red = tandem.group_reduce(cols, v, agg, sort=sort, dropna=dropna)
    r = getattr(pd.Series(v).groupby(list(cols), sort=sort, dropna=dropna), agg)()
    assert isinstance(gk, tuple) and len(gk) == len(cols)
    for i, g in enumerate(gk):
        want = r.index.get_level_values(i).to_numpy()
        if len(want) == 0:
            want = want.astype(cols[i].dtype)
        same_values(g, want if g.dtype.kind not in "b" or want.dtype == bool else want.astype(bool))
    same_values(red, r.to_numpy())


@pytest.mark.parametrize("dtypes", COLUMN_SETS, ids="-".join)
@given(data=st.data(), how=st.sampled_from(["inner", "left", "right", "outer", "semi", "anti"]))
def test_join_several_columns(dtypes, data, how):
    n, m = data.draw(st.integers(0, 40)), data.draw(st.integers(0, 40))
    lcols = tuple(data.draw(column(d, n)) for d in dtypes)
    rcols = tuple(data.draw(column(d, m)) for d in dtypes)
    li, ri = tandem.join(lcols, rcols, how=how)
    names = [f"k{i}" for i in range(len(dtypes))]
    left = pd.DataFrame(dict(zip(names, lcols), i=np.arange(n, dtype=np.int64)))
    right = pd.DataFrame(dict(zip(names, rcols), j=np.arange(m, dtype=np.int64)))
    mg = pd.merge(left, right, on=names, how="inner" if how in ("semi", "anti") else how)
    pl = mg["i"].fillna(-1).to_numpy(np.int64)
    if how == "semi":
        same_bits(li, np.unique(pl))
    elif how == "anti":
        same_bits(li, np.setdiff1d(np.arange(n, dtype=np.int64), pl))
    else:
        same_bits(li, pl)
        same_bits(ri, mg["j"].fillna(-1).to_numpy(np.int64))


def test_several_columns_are_checked():
    a = np.arange(3)
    with pytest.raises(tandem.InvalidArgument, match="key columns"):
        tandem.join((a, a), (a,))
    with pytest.raises(tandem.InvalidArgument, match="elements"):
        tandem.join((a, a[:2]), (a, a))
    with pytest.raises(tandem.InvalidArgument, match="elements"):
        tandem.group_reduce((a, a[:2]), a, "sum")
    with pytest.raises(tandem.Unsupported, match=r"keys\[1\] has dtype"):
        tandem.group_reduce((a, a.astype(complex)), a, "sum")


@pytest.mark.parametrize("dtype", ["uint32", "uint64", "int32", "int64", "float32", "float64"])
@given(data=st.data(), how=st.sampled_from(["right", "outer"]), multi=st.booleans())
def test_right_and_outer_joins(dtype, data, how, multi):
    from refs import pair_arrays

    a, b = pair_arrays(data, dtype, max_size=60)
    lk, rk = ((a,), (b,)) if multi else (a, b)
    li, ri = tandem.join(lk, rk, how=how)
    pl, pr = pandas_join(a, b, how)
    same_bits(li, pl)
    same_bits(ri, pr)


def test_one_column_tuples():
    k = np.array([2, 1, 2, 3], dtype=np.int64)
    gk, red = tandem.group_reduce((k,), np.arange(4), "sum")
    assert isinstance(gk, tuple) and len(gk) == 1
    same_bits(gk[0], np.array([1, 2, 3]))
    same_bits(red, np.array([1, 2, 3]))
    for how in ("inner", "left", "semi", "anti"):
        got, want = tandem.join((k,), (k[:2],), how=how), tandem.join(k, k[:2], how=how)
        same_bits(got[0], want[0])
        if want[1] is not None:
            same_bits(got[1], want[1])


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@given(data=st.data(), rv=st.booleans(), rc=st.booleans())
def test_unique_equal_nan_false_over_the_c_dtypes(dtype, data, rv, rc):
    from refs import arrays

    a = data.draw(arrays(dtype))
    got = tandem.unique(a, return_index=True, return_inverse=rv, return_counts=rc, equal_nan=False)
    want = np.unique(a, return_index=True, return_inverse=rv, return_counts=rc, equal_nan=False)
    for g, w in zip(got, want):
        same_bits(g, w)
    ua, un = tandem.unique_all(a), np.unique_all(a)
    same_bits(ua.values, np.unique(a, return_index=True, equal_nan=False)[0])
    same_values(ua.counts[np.argsort(ua.values, kind="stable")], un.counts[np.argsort(un.values, kind="stable")])


def test_time_means_truncate_as_pandas():
    v = np.array([1, 2, -1, -2, 2, 3, 3, 5, "NaT", "NaT", "NaT"], "m8[s]")
    k = np.array([0, 0, 1, 1, 2, 2, 2, 3, 3, 4, 4])
    for dtype in ("m8[s]", "M8[s]"):
        x = v.view(np.int64).view(dtype)
        gk, red = tandem.group_reduce(k, x, "mean")
        r = pd.Series(x).groupby(k).mean()
        same_values(red, r.to_numpy())
        assert list(red.view(np.int64)[:4]) == [1, -1, 2, 5] and np.isnat(red[4])
