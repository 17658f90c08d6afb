"""PyTorch CPU tensors through every call: the sorts, the hash table, the B+
tree and the data operations give CPU torch tensors whose dtype is the torch
name of numpy's (or pandas') result dtype, with the values of numpy and
pandas (test_ops.py's references, float rules included) or of tandem's own
numpy path (the structures; test_hash.py and test_btree.py check that one
against models). Also: offset and strided slices, empty tensors, negated
views, tensors that require grad, and tandem's errors for the dtypes,
layouts and devices it does not take.

Skips when PyTorch is not installed, unless TANDEM_TEST_TORCH=1 (set by the
build's tests with PY_TORCH=ON and by scripts/python-test.sh when it installed
PyTorch): then a failed import is a failure, not a skip."""

import os

import numpy as np
import pytest

if os.environ.get("TANDEM_TEST_TORCH") == "1":
    import torch
else:
    torch = pytest.importorskip("torch", exc_type=ImportError)
pytest.importorskip("hypothesis", reason="hypothesis is not installed")
pd = pytest.importorskip("pandas", reason="pandas is not installed")

from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import tandem
from refs import (AGGS, DTYPES, FLOATS, INT_DTYPES, POLICIES, apply_batch, arrays, bits, bits_dtype,
                  elements_bits, pair_arrays, pandas_group, plain_join, same_reduction, skewed, stable_perm,
                  values_for)

# torch has uint32 and uint64 tensors from 2.3 on.
TDTYPES = [d for d in DTYPES if isinstance(getattr(torch, d, None), torch.dtype)]
HOWS = ["inner", "left", "semi", "anti"]

# The C paths behind these calls are property-tested with numpy arrays in
# test_ops.py and the others; here the tensors' way in and out is, so fewer
# examples do.
fewer = settings(max_examples=max(1, settings.default.max_examples // 2))


def tt(a):
    """A CPU torch tensor holding a copy of numpy array a."""
    return torch.from_numpy(np.array(a, copy=True))


def host(t):
    """t as a numpy array, once it is checked to be a plain CPU torch tensor."""
    assert type(t) is torch.Tensor, type(t)
    assert t.device.type == "cpu" and not t.requires_grad and not t.is_neg()
    return t.numpy()


def same(got, expect):
    """got is a CPU torch tensor of expect's dtype with expect's bits (a
    tuple of them: element by element, None where expect has None)."""
    if isinstance(expect, tuple):
        assert isinstance(got, tuple) and len(got) == len(expect)
        for g, e in zip(got, expect):
            same(g, e)
        return
    if expect is None:
        assert got is None
        return
    expect = np.asarray(expect)
    g = host(got)
    assert g.dtype == expect.dtype, (got.dtype, expect.dtype)
    if expect.dtype.kind == "f":
        np.testing.assert_array_equal(bits(g), bits(expect))
    else:
        np.testing.assert_array_equal(g, expect)


# ---- sort, sort_pairs, argsort ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", TDTYPES)
@fewer
@given(data=st.data(), descending=st.booleans())
def test_sorts(dtype, data, descending):
    keys = data.draw(arrays(dtype))
    perm = stable_perm(keys, descending)
    t = tt(keys)
    same(tandem.sort(t, descending=descending), keys[perm])
    same(tandem.argsort(t, descending=descending), perm.astype(np.uint64))
    same(tandem.argsort(t, descending=descending, index_dtype=torch.uint32), perm.astype(np.uint32))
    vdtype = data.draw(st.sampled_from(TDTYPES))
    values = data.draw(hnp.arrays(bits_dtype(vdtype), len(keys), elements=elements_bits(vdtype))).view(vdtype)
    same(tandem.sort_pairs(t, tt(values), descending=descending), (keys[perm], values[perm]))
    same(t, keys)  # the input is untouched
    v = tt(values)
    k2, v2 = tandem.sort_pairs(t, v, descending=descending, inplace=True)
    assert k2 is t and v2 is v
    same((t, v), (keys[perm], values[perm]))
    t = tt(keys)
    assert tandem.sort(t, descending=descending, inplace=True) is t
    same(t, keys[perm])


# ---- the data operations ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", TDTYPES)
@fewer
@given(data=st.data(), ri=st.booleans(), rv=st.booleans(), rc=st.booleans())
def test_unique_matches_numpy(dtype, data, ri, rv, rc):
    a = data.draw(arrays(dtype))
    got = tandem.unique(tt(a), return_index=ri, return_inverse=rv, return_counts=rc)
    # With return_index numpy sorts stably: each value has its first occurrence's bits.
    ref = np.unique(a, return_index=True, return_inverse=rv, return_counts=rc)
    ref = (ref[0],) + ((ref[1],) if ri else ()) + tuple(ref[2:])
    same(got if isinstance(got, tuple) else (got,), ref)


@pytest.mark.parametrize("dtype", TDTYPES)
@fewer
@given(data=st.data(), invert=st.booleans())
def test_isin_matches_numpy(dtype, data, invert):
    a, b = pair_arrays(data, dtype)
    same(tandem.isin(tt(a), tt(b), invert=invert), np.isin(a, b, invert=invert))


@pytest.mark.parametrize("dtype", TDTYPES)
@fewer
@given(data=st.data(), side=st.sampled_from(["left", "right"]))
def test_searchsorted_matches_numpy(dtype, data, side):
    a, v = pair_arrays(data, dtype)
    a = np.sort(a)  # numpy's order: NaNs last, zeros of either sign together
    same(tandem.searchsorted(tt(a), tt(v), side), np.searchsorted(a, v, side))


@pytest.mark.parametrize("dtype", TDTYPES)
@fewer
@given(data=st.data(), sort=st.booleans())
def test_factorize_matches_pandas(dtype, data, sort):
    a = data.draw(arrays(dtype))
    codes, uniques = pd.factorize(a, sort=sort)
    same(tandem.factorize(tt(a), sort=sort), (codes.astype(np.int64), uniques))


@pytest.mark.parametrize("kdtype", TDTYPES)
@fewer
@given(data=st.data(), vdtype=st.sampled_from(TDTYPES), agg=st.sampled_from(AGGS), sort=st.booleans())
def test_group_reduce_matches_pandas(kdtype, data, vdtype, agg, sort):
    keys = data.draw(arrays(kdtype, 150, 8))
    values = values_for(data, vdtype, agg, len(keys))
    gk, red = tandem.group_reduce(tt(keys), tt(values), agg, sort=sort)
    rk, rr = pandas_group(keys, values, agg, sort)
    same(gk, rk.astype(kdtype))
    same_reduction(host(red), rr, agg, vdtype)


@pytest.mark.parametrize("dtype", TDTYPES)
@fewer
@given(data=st.data(), how=st.sampled_from(HOWS))
def test_join_matches_pandas(dtype, data, how):
    lk, rk = pair_arrays(data, dtype, pool=8, max_size=60)
    same(tandem.join(tt(lk), tt(rk), how=how), plain_join(lk, rk, how))


def test_float_rules():
    """-0.0 equals +0.0 and NaNs (of either sign and any payload) are one
    value where numpy and pandas say so; isin finds no NaN."""
    for dtype in ("float32", "float64"):
        a = np.array([0.0, -0.0, np.nan, -np.nan, 1.0, -0.0, np.inf, np.nan], dtype=dtype)
        t = tt(a)
        ref = np.unique(a, return_index=True, return_inverse=True, return_counts=True)
        same(tandem.unique(t, True, True, True), ref)
        u, i, c = tandem.unique(t, return_index=True, return_counts=True)
        assert i.tolist() == [0, 4, 6, 2] and c.tolist() == [3, 1, 1, 3]
        assert not torch.signbit(u[0]) and torch.isnan(u[-1])
        q = np.array([np.nan, -0.0, 0.0, 2.0], dtype=dtype)
        same(tandem.isin(tt(q), t), np.isin(q, a))
        same(tandem.isin(tt(q), t, invert=True), np.isin(q, a, invert=True))
        s = np.sort(a)
        for side in ("left", "right"):
            same(tandem.searchsorted(tt(s), tt(q), side), np.searchsorted(s, q, side))
        codes, uniques = pd.factorize(a)
        same(tandem.factorize(t), (codes.astype(np.int64), uniques))
        codes, uniques = tandem.factorize(tt(np.array([np.nan, -0.0, np.nan, 0.0, 2.0, -np.nan], dtype=dtype)))
        assert codes.tolist() == [-1, 0, -1, 0, 1, -1] and torch.signbit(uniques[0]) and len(uniques) == 2
        v = np.array([np.nan, 5.0, 2.0, np.nan, 1.0, 1.0, 4.0, 3.0], dtype=dtype)
        for agg in AGGS:
            for sort in (False, True):
                gk, red = tandem.group_reduce(t, tt(v), agg, sort=sort)
                rk, rr = pandas_group(a, v, agg, sort)
                same(gk, rk.astype(dtype))
                same_reduction(host(red), rr, agg, dtype)
        for how in HOWS:
            same(tandem.join(t, tt(q), how=how), plain_join(a, q, how))


def test_integer_sums_as_pandas():
    """pandas sums 32-bit integers in 64 bits and gives the 32-bit dtype back
    when every sum fits (torch has no min or max of uint64 tensors: tandem
    must not need them); 64-bit sums wrap."""
    k = np.array([1, 1, 2], dtype=np.int64)
    for dtype, vals in (("uint32", [2**31, 5, 3]), ("uint32", [2**32 - 1, 5, 3]),
                        ("int32", [2**31 - 1, 5, 3]), ("int32", [-(2**31), -5, 3]), ("int32", [7, -9, 3])):
        v = np.array(vals, dtype=dtype)
        gk, red = tandem.group_reduce(tt(k), tt(v), "sum")
        rk, rr = pandas_group(k, v, "sum", True)
        same((gk, red), (rk, rr))
    gk, red = tandem.group_reduce(tt(k[:2]), tt(np.array([2**63 - 1, 1], dtype=np.int64)), "sum")
    assert red.tolist() == [-(2**63)]


@pytest.mark.parametrize("dtype", TDTYPES)
def test_empty_tensors(dtype):
    e, some = np.array([], dtype=dtype), np.arange(3).astype(dtype)
    te, ts = tt(e), tt(some)
    same(tandem.sort(te), e)
    same(tandem.argsort(te), np.array([], dtype=np.uint64))
    same(tandem.sort_pairs(te, tt(np.array([], dtype=np.int32))), (e, np.array([], dtype=np.int32)))
    same(tandem.unique(te, True, True, True), np.unique(e, True, True, True))
    for a, b in ((e, some), (some, e), (e, e)):
        same(tandem.isin(tt(a), tt(b)), np.isin(a, b))
        for side in ("left", "right"):
            same(tandem.searchsorted(tt(a), tt(b), side), np.searchsorted(a, b, side))
        for how in HOWS:
            same(tandem.join(tt(a), tt(b), how=how), plain_join(a, b, how))
    same(tandem.factorize(te), (np.array([], dtype=np.int64), e))
    for agg in AGGS:
        for vd in ("int32", "uint64", "float32"):
            gk, red = tandem.group_reduce(te, tt(np.array([], dtype=vd)), agg)
            same(gk, e)
            _, rr = pandas_group(e, np.array([], dtype=vd), agg, True)
            assert host(red).dtype == (np.float64 if agg == "mean" else rr.dtype) and len(red) == 0
    if dtype in INT_DTYPES:
        h = tandem.HashTable(dtype, "int64")
        h.insert(te, tt(np.array([], dtype=np.int64)))
        same(h.find(te), (np.array([], dtype=np.int64), np.array([], dtype=bool)))
        assert h.erase(te) == 0 and len(h) == 0
    t = tandem.BTree(te, te)
    assert len(t) == 0 and t.height == 0
    same(t.export(), (e, e))
    same(t.rank(ts), np.zeros(3, dtype=np.uint64))
    same(t.range(ts, ts), (np.zeros(4, dtype=np.uint64), e, e))


def test_a_hot_key_and_many_rows():
    """Outputs larger than one small tensor: a hot key among 5000 rows, a
    join whose result outgrows its first allocation."""
    for dtype in TDTYPES:
        h = skewed(dtype)
        t = tt(h)
        same(tandem.unique(t, True, True, True), np.unique(h, True, True, True))
        same(tandem.isin(t, t[:10]), np.isin(h, h[:10]))
        codes, uniques = pd.factorize(h)
        same(tandem.factorize(t), (codes.astype(np.int64), uniques))
        same(tandem.join(t[:300], t[:5], how="left"), plain_join(h[:300], h[:5], "left"))
    lk, rk = np.array([5] * 100 + [1], dtype=np.int64), np.array([5] * 300 + [2], dtype=np.int64)
    li, ri = tandem.join(tt(lk), tt(rk))
    assert len(li) == 30000 and li[-1] == 99 and ri[-1] == 299 and ri[:3].tolist() == [0, 1, 2]


# ---- the hash table and the B+ tree ----------------------------------------------------------


def _bits_of(dtype, data, n, pool):
    return data.draw(hnp.arrays(bits_dtype(dtype), n, elements=elements_bits(dtype, pool)))


def _policies(vd):
    return [p for p in POLICIES if p != "sum" or vd in INT_DTYPES]  # sums of integer values only


@pytest.mark.parametrize("kd", [d for d in INT_DTYPES if d in TDTYPES])
@fewer
@given(data=st.data())
def test_hash_table(kd, data):
    vd = data.draw(st.sampled_from(TDTYPES), "value dtype")
    policy = data.draw(st.sampled_from(_policies(vd)), "policy")
    kb = _bits_of(kd, data, data.draw(st.integers(0, 150)), 300)
    vb = _bits_of(vd, data, len(kb), 1000)
    h = tandem.HashTable(getattr(torch, kd), getattr(torch, vd), on_duplicate=policy)
    h.insert(tt(kb.view(kd)), tt(vb.view(vd)))
    model = {}
    apply_batch(model, policy, vd, kb, vb)
    qb = _bits_of(kd, data, data.draw(st.integers(0, 100)), 300)
    values, found = h.find(tt(qb.view(kd)))
    want = np.array([model.get(int(k), 0) for k in qb], dtype=bits_dtype(vd)).view(vd)
    same((values, found), (want, np.array([int(k) in model for k in qb], dtype=bool)))
    ek, ev = h.export()
    host(ek), host(ev)
    assert ek.dtype == getattr(torch, kd) and ev.dtype == getattr(torch, vd)
    assert dict(zip(bits(host(ek)).tolist(), bits(host(ev)).tolist())) == model
    gone = len({int(k) for k in qb} & model.keys())
    assert h.erase(tt(qb.view(kd))) == gone and len(h) == len(model) - gone
    h.validate()


@pytest.mark.parametrize("kd", TDTYPES)
@fewer
@given(data=st.data())
def test_btree_as_with_numpy_arrays(kd, data):
    vd = data.draw(st.sampled_from(TDTYPES), "value dtype")
    policy = data.draw(st.sampled_from(_policies(vd)), "policy")
    keys = _bits_of(kd, data, data.draw(st.integers(0, 150)), 300).view(kd)
    vals = _bits_of(vd, data, len(keys), 1000).view(vd)
    t = tandem.BTree(tt(keys), tt(vals), on_duplicate=policy)
    ref = tandem.BTree(keys, vals, on_duplicate=policy)
    for step in range(2):
        assert len(t) == len(ref) and t.height == ref.height
        same(t.export(), ref.export())
        q = _bits_of(kd, data, data.draw(st.integers(0, 60)), 300).view(kd)
        lo, hi = np.sort(q), np.sort(_bits_of(kd, data, len(q), 300).view(kd))[::-1].copy()
        same(t.find(tt(q)), ref.find(q))
        same(t.rank(tt(q)), ref.rank(q))
        same(t.range_count(tt(lo), tt(hi)), ref.range_count(lo, hi))
        same(t.range(tt(lo), tt(hi)), ref.range(lo, hi))
        t.validate()
        if step == 0:
            ik = _bits_of(kd, data, data.draw(st.integers(0, 60)), 300).view(kd)
            iv = _bits_of(vd, data, len(ik), 1000).view(vd)
            t.insert(tt(ik), tt(iv))
            ref.insert(ik, iv)
            assert t.erase(tt(q)) == ref.erase(q)


# ---- slices, views and autograd --------------------------------------------------------------


def test_offset_and_strided_slices():
    """A contiguous slice at an offset is read where it starts. A strided
    one is sorted (sort and sort_pairs copy the input anyway) and refused,
    as device arrays are, by the calls that read it in place: tandem does
    not copy torch tensors behind the caller's back; nothing is changed."""
    a = skewed("int64", 40, seed=3)
    t = tt(a)
    for s, ref in ((t[7:], a[7:]), (t[7:30], a[7:30]), (t[3::10][:1], a[3:4])):
        assert s.is_contiguous()
        same(tandem.sort(s), np.sort(ref, kind="stable"))
        same(tandem.argsort(s), stable_perm(ref).astype(np.uint64))
        same(tandem.unique(s, True, True, True), np.unique(ref, True, True, True))
        same(tandem.isin(s, t[:5]), np.isin(ref, a[:5]))
        same(tandem.join(s, t[:9]), plain_join(ref, a[:9], "inner"))
        same(tandem.BTree(s, s).export(), tandem.BTree(ref, ref).export())
    strided, ref = t[::3], a[::3]
    same(tandem.sort(strided), np.sort(ref, kind="stable"))
    same(tandem.sort_pairs(strided, tt(ref)), (np.sort(ref, kind="stable"), ref[stable_perm(ref)]))
    same(tandem.sort_pairs(tt(ref), strided), (np.sort(ref, kind="stable"), ref[stable_perm(ref)]))
    calls = {
        "argsort": lambda x: tandem.argsort(x),
        "sort inplace": lambda x: tandem.sort(x, inplace=True),
        "unique": lambda x: tandem.unique(x),
        "isin": lambda x: tandem.isin(t[:len(x)], x),
        "searchsorted": lambda x: tandem.searchsorted(x, t[:3]),
        "factorize": lambda x: tandem.factorize(x),
        "group_reduce": lambda x: tandem.group_reduce(t[:len(x)], x, "sum"),
        "join": lambda x: tandem.join(x, t),
        "BTree": lambda x: tandem.BTree(x, x),
        "BTree.rank": lambda x: tandem.BTree(t, t).rank(x),
    }
    for name, call in calls.items():
        for x in (strided, torch.tensor([5], dtype=torch.int64).expand(4)):  # stride 3, stride 0
            with pytest.raises(tandem.InvalidArgument, match="contiguous"):
                call(x)
    same(t, a)
    h = tandem.HashTable("int64", "int64")
    with pytest.raises(tandem.InvalidArgument, match="contiguous"):
        h.insert(strided, tt(ref))
    assert len(h) == 0


def test_negated_views():
    """The .imag of a conjugated complex tensor is a lazily negated view:
    tandem works on the negated values, as torch shows them."""
    z = torch.tensor([1 + 2j, 3 - 1j, 0 + 5j, 2 - 2j, 4 + 2j])
    for im in (z.conj().imag, z[:1].conj().imag):  # strided; one element (contiguous)
        assert im.is_neg()
        a = im.resolve_neg().numpy().copy()
        assert a[0] == -2.0
        same(tandem.sort(im), np.sort(a, kind="stable"))
        same(tandem.argsort(im), stable_perm(a).astype(np.uint64))
        same(tandem.unique(im, True, True, True), np.unique(a, True, True, True))
        same(tandem.isin(im, tt(a[:2])), np.isin(a, a[:2]))
        same(tandem.searchsorted(tt(np.sort(a)), im), np.searchsorted(np.sort(a), a))
        same(tandem.join(im, tt(a)), plain_join(a, a, "inner"))
        same(tandem.BTree(im, im).export(), tandem.BTree(a, a).export())
        with pytest.raises(tandem.InvalidArgument, match="converted"):
            tandem.sort(im, inplace=True)
        same(im.resolve_neg(), a)


def test_tensors_that_require_grad():
    """Read, never written: results are plain tensors (no autograd history);
    an in-place sort is refused and leaves the tensor as it was."""
    a = np.array([3.0, 1.0, np.nan, 1.0, -0.0], dtype=np.float32)
    g = tt(a).requires_grad_()
    same(tandem.sort(g), a[stable_perm(a)])
    same(tandem.argsort(g), stable_perm(a).astype(np.uint64))
    same(tandem.unique(g, True, True, True), np.unique(a, True, True, True))
    same(tandem.isin(g, g), np.isin(a, a))
    same(tandem.searchsorted(tt(np.sort(a)).requires_grad_(), g), np.searchsorted(np.sort(a), a))
    codes, uniques = pd.factorize(a)
    same(tandem.factorize(g), (codes.astype(np.int64), uniques))
    k = np.array([1, 1, 2, 2, 3])
    gk, red = tandem.group_reduce(tt(k), g, "sum")
    rk, rr = pandas_group(k, a, "sum", True)
    same(gk, rk)
    same_reduction(host(red), rr, "sum", "float32")
    same(tandem.join(g, g, how="left"), plain_join(a, a, "left"))
    same(tandem.BTree(g, g).export(), tandem.BTree(a, a).export())
    for call in (lambda: tandem.sort(g, inplace=True), lambda: tandem.sort_pairs(tt(a), g, inplace=True)):
        with pytest.raises(tandem.InvalidArgument, match="read-only"):
            call()
    assert g.requires_grad and g.grad is None
    same(g.detach(), a)


def test_an_in_place_sort_is_seen_by_autograd():
    """A tensor saved for a backward pass and then sorted in place makes that
    backward pass fail, as torch's own in-place operations do, instead of
    computing gradients from the sorted values."""
    for sort in (lambda w: tandem.sort(w, inplace=True), lambda w: tandem.sort_pairs(w.clone(), w, inplace=True)):
        w = torch.tensor([3.0, 1.0, 2.0])
        x = torch.ones(3, requires_grad=True)
        loss = (x * w).sum()  # saves w
        version = w._version
        sort(w)
        assert w._version > version
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()


# ---- the small dtypes -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["bool", "int8", "int16", "uint8", "uint16", "float16"])
def test_small_dtypes(dtype):
    """Widened inside, results in the tensor's dtype, as with numpy arrays."""
    a = np.array([3, 1, 0, 1, 2, 0, 3, 3], dtype=np.int64).astype(dtype)
    if dtype == "float16":
        a[2], a[5] = np.nan, -0.0
    t = tt(a)
    same(tandem.sort(t), tandem.sort(a))
    same(tandem.argsort(t), tandem.argsort(a))
    same(tandem.unique(t, True, True, True), tandem.unique(a, True, True, True))
    same(tandem.unique(t, True, True, True, equal_nan=False), tandem.unique(a, True, True, True, equal_nan=False))
    same(tandem.isin(t, t[:3]), np.isin(a, a[:3]))
    same(tandem.factorize(t), tandem.factorize(a))
    same(tandem.join(t, t, how="left"), tandem.join(a, a, how="left"))
    same(tandem.group_reduce(t, tt(np.arange(8)), "sum"), tandem.group_reduce(a, np.arange(8), "sum"))
    same(tandem.group_reduce(tt(np.arange(8) % 3), t, "max"), tandem.group_reduce(np.arange(8) % 3, a, "max"))
    w = t.clone()
    assert tandem.sort(w, inplace=True) is w
    same(w, tandem.sort(a))
    if dtype != "float16":
        h = tandem.HashTable(getattr(torch, dtype), getattr(torch, dtype))
        h.insert(t, t)
        same(h.find(t), (a, np.ones(len(a), dtype=bool)))


# ---- bad input -------------------------------------------------------------------------------

CALLS = {
    "sort": lambda a: tandem.sort(a),
    "argsort": lambda a: tandem.argsort(a),
    "sort_pairs": lambda a: tandem.sort_pairs(a, a),
    "unique": lambda a: tandem.unique(a),
    "isin": lambda a: tandem.isin(a, a),
    "searchsorted": lambda a: tandem.searchsorted(a, a),
    "factorize": lambda a: tandem.factorize(a),
    "group_reduce": lambda a: tandem.group_reduce(a, tt(np.arange(a.numel(), dtype=np.int64)), "sum"),
    "join": lambda a: tandem.join(a, a),
    "BTree": lambda a: tandem.BTree(a, a),
}


@pytest.mark.parametrize("call", CALLS)
def test_bad_tensors(call):
    other = [getattr(torch, d) for d in ("bfloat16", "complex64") if isinstance(getattr(torch, d, None), torch.dtype)]
    for dt in other:
        with pytest.raises(tandem.Unsupported) as e:
            CALLS[call](torch.zeros(4, dtype=dt))
        assert e.value.status == "TDM_ERR_UNSUPPORTED"
        assert str(dt).replace("torch.", "") in str(e.value), str(e.value)  # named as torch names it
    for shape in ((2, 2), ()):
        with pytest.raises(tandem.InvalidArgument, match="1-D"):
            CALLS[call](torch.zeros(shape, dtype=torch.int64))
    with pytest.raises(tandem.InvalidArgument, match="meta"):
        CALLS[call](torch.zeros(4, dtype=torch.int64, device="meta"))
    with pytest.raises(tandem.InvalidArgument, match="sparse"):
        CALLS[call](torch.arange(4, dtype=torch.int64).to_sparse())


def test_bad_tensors_for_the_structures():
    with pytest.raises(tandem.Unsupported):
        tandem.HashTable(torch.bfloat16, torch.int64)
    with pytest.raises(tandem.Unsupported):
        tandem.HashTable(torch.float32, torch.int64)
    with pytest.raises(tandem.Unsupported):
        tandem.argsort(tt(np.arange(3)), index_dtype=torch.int64)
    h = tandem.HashTable(torch.uint64, torch.uint64)
    k = tt(np.arange(4, dtype=np.uint64))
    with pytest.raises(tandem.Unsupported, match="expected uint64") as e:
        h.insert(tt(np.arange(4, dtype=np.int64)), k)
    assert e.value.status == "TDM_ERR_UNSUPPORTED"
    with pytest.raises(tandem.InvalidArgument, match="4 elements but values has 3"):
        h.insert(k, k[:3])
    with pytest.raises(tandem.InvalidArgument, match="meta"):
        h.insert(torch.zeros(4, dtype=torch.uint64, device="meta"), k)
    assert len(h) == 0
    t = tandem.BTree(k, k)
    for bad in (tt(np.arange(4, dtype=np.int64)), torch.zeros(4, dtype=torch.uint64, device="meta"),
                tt(np.arange(4, dtype=np.int64)).to_sparse()):
        with pytest.raises((tandem.Unsupported, tandem.InvalidArgument)):
            t.find(bad)
        with pytest.raises((tandem.Unsupported, tandem.InvalidArgument)):
            t.insert(bad, k)
    with pytest.raises(tandem.InvalidArgument, match="nested"):
        tandem.unique(torch.nested.nested_tensor([torch.arange(3), torch.arange(2)], layout=torch.jagged))
    with pytest.raises(tandem.InvalidArgument):
        tandem.group_reduce(k, k[:3], "sum")
    same(t.export(), (np.arange(4, dtype=np.uint64),) * 2)
