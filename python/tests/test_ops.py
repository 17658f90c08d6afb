"""unique, isin, searchsorted, factorize, group_reduce and join against
numpy and pandas themselves, over every dtype and the edge values (0, -1,
min/max, -0.0, +0.0, NaNs of several payloads and signs, inf, empty, all
equal, a hot key)."""

import numpy as np
import pytest

pytest.importorskip("hypothesis", reason="hypothesis is not installed")
pd = pytest.importorskip("pandas", reason="pandas is not installed")

from hypothesis import given, strategies as st

import tandem
from refs import (AGGS, DTYPES, FLOATS, arrays, bits, pair_arrays, pandas_group, pandas_join, plain_join,
                  same_bits, same_reduction, same_values, skewed, values_for)


# ---- unique ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data(), ri=st.booleans(), rv=st.booleans(), rc=st.booleans())
def test_unique_matches_numpy(dtype, data, ri, rv, rc):
    a = data.draw(arrays(dtype))
    before = a.copy()
    got = tandem.unique(a, return_index=ri, return_inverse=rv, return_counts=rc)
    # numpy with return_index sorts stably, so each value is its first
    # occurrence's bits (NaN and zero included): compare bits with that.
    ref = np.unique(a, return_index=True, return_inverse=rv, return_counts=rc)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == 1 + ri + rv + rc
    same_bits(got[0], ref[0])
    want = [ref[1]] if ri else []
    want += list(ref[2:])
    for g, w in zip(got[1:], want):
        same_bits(g, w)
    np.testing.assert_array_equal(bits(a), bits(before))


@pytest.mark.parametrize("dtype", DTYPES)
def test_unique_edges(dtype):
    e = np.array([], dtype=dtype)
    u, i, v, c = tandem.unique(e, True, True, True)
    assert u.dtype == e.dtype and i.dtype == v.dtype == c.dtype == np.int64 and len(u) == len(c) == 0
    for a in (np.full(1000, 7, dtype=dtype), skewed(dtype)):
        ref = np.unique(a, return_index=True, return_inverse=True, return_counts=True)
        for g, w in zip(tandem.unique(a, True, True, True), ref):
            same_bits(g, w)


def test_unique_float_rules():
    a = np.array([0.0, -0.0, np.nan, -np.nan, 1.0, -0.0, np.inf])
    u, i, c = tandem.unique(a, return_index=True, return_counts=True)
    assert list(i) == [0, 4, 6, 2] and list(c) == [3, 1, 1, 2]
    assert u[0] == 0 and not np.signbit(u[0]) and np.isnan(u[-1]) and not np.signbit(u[-1])
    u = tandem.unique(np.array([-np.nan, -0.0, 0.0, 2.0]))
    assert np.signbit(u[0]) and u[0] == 0 and np.isnan(u[-1]) and np.signbit(u[-1]) and len(u) == 3


# ---- isin ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data(), invert=st.booleans())
def test_isin_matches_numpy(dtype, data, invert):
    a, b = pair_arrays(data, dtype)
    got = tandem.isin(a, b, invert=invert)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, np.isin(a, b, invert=invert))


def test_isin_float_rules_and_dtypes():
    a = np.array([np.nan, 0.0, -0.0, 1.0, -np.nan])
    np.testing.assert_array_equal(tandem.isin(a, np.array([np.nan, -0.0])), [False, True, True, False, False])
    np.testing.assert_array_equal(tandem.isin(a, np.array([np.nan]), invert=True), [True] * 5)
    i32 = np.array([1, 2, 3], dtype=np.int32)
    np.testing.assert_array_equal(tandem.isin(i32, np.array([3, 2**40], dtype=np.int64)), [False, False, True])
    np.testing.assert_array_equal(tandem.isin([1, 5], [5]), [False, True])
    for dtype in DTYPES:
        e = np.array([], dtype=dtype)
        assert tandem.isin(e, np.arange(3).astype(dtype)).shape == (0,)
        np.testing.assert_array_equal(tandem.isin(np.arange(3).astype(dtype), e), [False] * 3)
        h = skewed(dtype)
        np.testing.assert_array_equal(tandem.isin(h, h[:10]), np.isin(h, h[:10]))


# ---- searchsorted ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data(), side=st.sampled_from(["left", "right"]))
def test_searchsorted_matches_numpy(dtype, data, side):
    a, v = pair_arrays(data, dtype)
    a = np.sort(a)  # numpy's order: NaNs last, zeros of either sign together
    got = tandem.searchsorted(a, v, side)
    same_bits(got, np.searchsorted(a, v, side))


@pytest.mark.parametrize("dtype", DTYPES)
def test_searchsorted_edges(dtype):
    e = np.array([], dtype=dtype)
    some = np.arange(4).astype(dtype)
    for side in ("left", "right"):
        same_bits(tandem.searchsorted(e, some, side), np.searchsorted(e, some, side))
        same_bits(tandem.searchsorted(some, e, side), np.searchsorted(some, e, side))
        a = np.sort(skewed(dtype))
        q = skewed(dtype, 300, seed=1)
        same_bits(tandem.searchsorted(a, q, side), np.searchsorted(a, q, side))
        a = np.full(100, 3, dtype=dtype)
        same_bits(tandem.searchsorted(a, some, side), np.searchsorted(a, some, side))
    if dtype in FLOATS:
        a = np.array([-np.inf, -0.0, 0.0, -0.0, 1.0, np.nan, -np.nan], dtype=dtype)
        q = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf], dtype=dtype)
        for side in ("left", "right"):
            same_bits(tandem.searchsorted(a, q, side), np.searchsorted(a, q, side))
        # One side without zeros or NaNs (used as it is) and the other with
        # them (canonicalized): both ways round.
        plain = np.array([-np.inf, -2.5, -1.0, 1.0, 3.0, np.inf], dtype=dtype)
        for side in ("left", "right"):
            same_bits(tandem.searchsorted(plain, q, side), np.searchsorted(plain, q, side))
            same_bits(tandem.searchsorted(np.sort(a), plain, side), np.searchsorted(np.sort(a), plain, side))


# ---- factorize -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data(), sort=st.booleans())
def test_factorize_matches_pandas(dtype, data, sort):
    a = data.draw(arrays(dtype))
    codes, uniques = tandem.factorize(a, sort=sort)
    rc, ru = pd.factorize(a, sort=sort)
    same_bits(codes, rc.astype(np.int64))
    same_bits(uniques, ru)


def test_factorize_edges():
    for dtype in DTYPES:
        for a in (np.array([], dtype=dtype), np.full(50, 1, dtype=dtype), skewed(dtype)):
            for sort in (False, True):
                codes, uniques = tandem.factorize(a, sort=sort)
                rc, ru = pd.factorize(a, sort=sort)
                same_bits(codes, rc.astype(np.int64))
                same_bits(uniques, ru)
    codes, uniques = tandem.factorize(np.array([np.nan, -0.0, np.nan, 0.0, 2.0, -np.nan]))
    assert list(codes) == [-1, 0, -1, 0, 1, -1] and np.signbit(uniques[0]) and len(uniques) == 2
    codes, uniques = tandem.factorize(np.array([np.nan, np.nan]), sort=True)
    assert list(codes) == [-1, -1] and len(uniques) == 0


# ---- group_reduce ----------------------------------------------------------------------------


@pytest.mark.parametrize("kdtype", DTYPES)
@given(data=st.data(), vdtype=st.sampled_from(DTYPES), agg=st.sampled_from(AGGS), sort=st.booleans())
def test_group_reduce_matches_pandas(kdtype, data, vdtype, agg, sort):
    keys = data.draw(arrays(kdtype, 150, 8))
    values = values_for(data, vdtype, agg, len(keys))
    gk, red = tandem.group_reduce(keys, values, agg, sort=sort)
    rk, rr = pandas_group(keys, values, agg, sort)
    same_bits(gk, rk.astype(kdtype))
    same_reduction(red, rr, agg, vdtype)


@pytest.mark.parametrize("agg", AGGS)
def test_group_reduce_edges(agg):
    for kd in DTYPES:
        for vd in ("int32", "uint64", "float32", "float64"):
            e = np.array([], dtype=kd)
            gk, red = tandem.group_reduce(e, np.array([], dtype=vd), agg)
            rk, rr = pandas_group(e, np.array([], dtype=vd), agg, True)
            assert len(gk) == len(red) == 0 and gk.dtype == e.dtype
            assert red.dtype == (np.float64 if agg == "mean" else rr.dtype)
            k = skewed(kd)
            v = (np.arange(len(k)) % 100).astype(vd)
            for sort in (False, True):
                gk, red = tandem.group_reduce(k, v, agg, sort=sort)
                rk, rr = pandas_group(k, v, agg, sort)
                same_bits(gk, rk.astype(kd))
                same_reduction(red, rr, agg, vd)


def test_group_reduce_nan_rules():
    k = np.array([1.0, np.nan, 1.0, 2.0, -0.0, 0.0, 3.0])
    v = np.array([np.nan, 5.0, 2.0, np.nan, 1.0, 1.0, 4.0])
    gk, red = tandem.group_reduce(k, v, "count", sort=False)
    same_bits(gk, np.array([1.0, 2.0, -0.0, 3.0]))
    same_bits(red, np.array([1, 0, 2, 1]))
    gk, red = tandem.group_reduce(k, v, "min")
    rk, rr = pandas_group(k, v, "min", True)
    same_bits(gk, rk)
    same_values(red, rr)
    gk, red = tandem.group_reduce(np.array([1, 1], dtype=np.int64), np.array([2**63 - 1, 1], dtype=np.int64), "sum")
    assert red[0] == -(2**63)  # wraps, as pandas does



@pytest.mark.parametrize("vd", FLOATS)
@pytest.mark.parametrize("agg", AGGS)
def test_group_reduce_nan_values_of_either_sign_anywhere(agg, vd):
    """NaN values of either sign first, inside and last in a group, an
    all-NaN group, inf - inf without a NaN: pandas' skipna results; and where
    a group's result is taken from the reduction over all rows, the same bits
    as the reduction over the group's non-NaN rows alone."""
    pos, neg = np.nan, np.copysign(np.nan, -1.0)
    k = np.array([0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 5], dtype=np.int64)
    layouts = [
        [pos, 2.0, 1.0, 3.0, neg, 5.0, pos, neg, np.inf, -np.inf, 1.0, 7.0, 4.0, -0.0, pos],
        [2.0, pos, 1.0, 3.0, pos, 5.0, 6.0, pos, np.inf, 1.0, 1.0, pos, pos, -0.0, 4.0],  # +NaN never first
        [2.0, neg, 1.0, 3.0, neg, 5.0, 6.0, neg, -np.inf, 1.0, 1.0, neg, neg, 0.0, 4.0],  # -NaN never last
        [2.0, 9.0, 1.0, 3.0, 0.5, 5.0, 6.0, 8.0, np.inf, -np.inf, 1.0, 7.0, 4.0, -0.0, 4.0],  # no NaN
    ]
    for vals in layouts:
        v = np.array(vals, dtype=vd)
        for sort in (False, True):
            gk, red = tandem.group_reduce(k, v, agg, sort=sort)
            with np.errstate(invalid="ignore"):  # pandas' inf - inf
                rk, rr = pandas_group(k, v, agg, sort)
            same_bits(gk, rk)
            same_reduction(red, rr, agg, vd)
            if agg == "count":
                continue
            keep = ~np.isnan(v)
            kk, kr = tandem.group_reduce(k[keep], v[keep], agg, sort=sort)
            at = {int(g): i for i, g in enumerate(gk)}
            for g, r in zip(kk, kr):
                same_bits(red[at[int(g)]:at[int(g)] + 1], np.array([r]))


def test_host_outputs_are_malloced_arrays_that_own_their_buffers():
    """numpy outputs come from tandem's malloc allocator, not numpy's
    huge-page advised one; they own their buffers (shrunk in place, not
    views of a larger one), and the caller's allocator is left as it was."""
    mm = (getattr(np, "_core", None) or np.core).multiarray
    before = mm.get_handler_name()
    keys = np.array([5, 3, 5, 9, 3, 3], dtype=np.uint64)
    u, first, inverse, counts = tandem.unique(keys, return_index=True, return_inverse=True, return_counts=True)
    codes, uniques = tandem.factorize(keys)
    li, ri = tandem.join(keys, np.array([3, 9], dtype=np.uint64))
    found = tandem.isin(keys, np.array([9], dtype=np.uint64))
    for a in (u, first, inverse, counts, codes, uniques, li, ri, found):
        assert mm.get_handler_name(a) == "tandem_malloc"
        assert a.flags.owndata and a.base is None and a.flags.writeable
    same_bits(u, np.array([3, 5, 9], dtype=np.uint64))
    same_bits(counts, np.array([3, 2, 1], dtype=np.int64))
    assert mm.get_handler_name() == before
    u.resize(2, refcheck=False)  # numpy reallocates through the same handler
    same_bits(u, np.array([3, 5], dtype=np.uint64))


# ---- join ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data(), how=st.sampled_from(["inner", "left", "semi", "anti"]))
def test_join_matches_pandas(dtype, data, how):
    lk, rk = pair_arrays(data, dtype, pool=8, max_size=60)
    li, ri = tandem.join(lk, rk, how=how)
    pl, pr = plain_join(lk, rk, how)
    same_bits(li, pl)
    if pr is None:
        assert ri is None
    else:
        same_bits(ri, pr)
    # pandas agrees with the plain oracle (its order is left row, then right row).
    ql, qr = pandas_join(lk, rk, how)
    same_bits(li, ql)
    if qr is not None:
        same_bits(ri, qr)


def test_join_many_to_many_and_edges():
    lk = np.array([5] * 100 + [1], dtype=np.int64)
    rk = np.array([5] * 300 + [2], dtype=np.int64)
    li, ri = tandem.join(lk, rk)  # 30,000 rows: more than len(left), a second call writes them
    assert len(li) == 30000 and li[0] == 0 and list(ri[:3]) == [0, 1, 2] and li[-1] == 99 and ri[-1] == 299
    li, ri = tandem.join(lk, rk, how="left")
    assert len(li) == 30001 and li[-1] == 100 and ri[-1] == -1
    for dtype in DTYPES:
        e = np.array([], dtype=dtype)
        some = np.arange(3).astype(dtype)
        for how in ("inner", "left", "semi", "anti"):
            for a, b in ((e, some), (some, e), (e, e)):
                li, ri = tandem.join(a, b, how=how)
                pl, pr = plain_join(a, b, how)
                same_bits(li, pl)
                if pr is not None:
                    same_bits(ri, pr)
        h = skewed(dtype, 300)
        li, ri = tandem.join(h, h[:5], how="left")
        pl, pr = plain_join(h, h[:5], "left")
        same_bits(li, pl)
        same_bits(ri, pr)


# ---- bad input -------------------------------------------------------------------------------

OPS = {
    "unique": lambda a, b: tandem.unique(a),
    "isin": lambda a, b: tandem.isin(a, b),
    "searchsorted": lambda a, b: tandem.searchsorted(a, b),
    "factorize": lambda a, b: tandem.factorize(a),
    "group_reduce": lambda a, b: tandem.group_reduce(a, b, "sum"),
    "join": lambda a, b: tandem.join(a, b),
}


@pytest.mark.parametrize("op", OPS)
def test_bad_dtypes_and_shapes(op):
    ok = np.arange(4, dtype=np.int64)
    for bad in (np.ones(4, dtype=np.complex64), np.array(["a", "b", "c", "d"]),
                np.array([1, "a", None, 2.0], dtype=object)):
        with pytest.raises(tandem.Unsupported) as e:
            OPS[op](bad, ok if op == "group_reduce" else bad)
        assert e.value.status == "TDM_ERR_UNSUPPORTED"
    with pytest.raises(tandem.InvalidArgument, match="1-D"):
        OPS[op](np.zeros((2, 2), dtype=np.int64), ok)
    with pytest.raises(tandem.InvalidArgument):
        OPS[op](np.int64(3), ok)


def test_bad_options_and_lengths():
    a = np.arange(4, dtype=np.int64)
    with pytest.raises(tandem.InvalidArgument, match="agg"):
        tandem.group_reduce(a, a, "median")
    with pytest.raises(tandem.InvalidArgument, match="how"):
        tandem.join(a, a, how="cross")
    with pytest.raises(tandem.InvalidArgument, match="side"):
        tandem.searchsorted(a, a, side="middle")
    with pytest.raises(tandem.InvalidArgument, match="elements"):
        tandem.group_reduce(a, a[:3], "sum")
    with pytest.raises(tandem.InvalidArgument):
        tandem.unique(a, ctx="cpu")
    with pytest.raises(tandem.Unsupported, match="round integers"):
        tandem.searchsorted(a, a.astype(np.uint64))  # int64 with uint64 is float64 in numpy: refused, not rounded
    with pytest.raises(tandem.InvalidArgument, match="kind"):
        tandem.isin(a, a, kind="hash")
