"""numpy- and pandas-named data operations over tandem/ops.h: unique, isin,
searchsorted, factorize, group_reduce and join.

Each maps numpy's or pandas' rules onto the C flags: TDM_EQ_NUMERIC for float
keys (-0.0 equals +0.0, every NaN equals every NaN) and TDM_ORDER_FIRST_SEEN
where pandas keeps first-seen order. What is left for Python is cheap and
said at each place: a dtype conversion where the libraries convert, and the
NaN rules where numpy and pandas differ from one NaN group (isin: a NaN is
never found; factorize and group_reduce: NaN keys get no group). Outputs are
allocated once at their largest size and shrunk in place, so results are not
copied again.
"""

from . import _arrays, _core
from ._errors import invalid, unsupported
from . import BTree, _ctx_for  # defined before tandem imports this module

_AGGS = {"count": 0, "sum": 1, "min": 2, "max": 3, "first": 4, "last": 5, "mean": 6}
_HOWS = {"inner": 0, "left": 1, "semi": 2, "anti": 3}
_FLOATS = ("float32", "float64")
# pandas sums 32-bit integers in 64 bits.
_SUM_DTYPE = {"int32": "int64", "uint32": "uint64"}


def _input(x, what):
    """(array, kind, dtype name) of one 1-D input of a tandem dtype."""
    a, kind, _, _ = _arrays.adopt(x)
    if len(a.shape) != 1:
        raise invalid(f"{what} must be a 1-D array, got {len(a.shape)} dimensions")
    return a, kind, _arrays.dtype_name(a.dtype)


def _common(a, ka, da, b, kb, db, what):
    """Both inputs in one dtype, the one numpy's promotion gives (a copy of
    the one converted, as numpy and pandas make too). Two integer dtypes
    whose common dtype is a float (int64 with uint64) are refused: keys
    would be rounded."""
    if da == db:
        return a, b, da
    import numpy as np

    dt = np.result_type(np.dtype(da), np.dtype(db)).name
    if dt in _FLOATS and da not in _FLOATS and db not in _FLOATS:
        raise unsupported(f"{what} have dtypes {da} and {db}, whose common dtype {dt} would round integers; "
                          "convert one of them first")
    if dt not in _arrays.DTYPES:
        raise unsupported(f"{what} have dtypes {da} and {db}, whose common dtype {dt} is not one of tandem's")
    return (a if da == dt else ka.astype(a, dt)), (b if db == dt else kb.astype(b, dt)), dt


def _eq(dtype):
    return _core.EQ_NUMERIC if dtype in _FLOATS else 0


def _nan_position(kind, keys, dtype):
    """Index of the NaN group among distinct keys (at most one under
    TDM_EQ_NUMERIC), or None. Looks at the distinct keys only."""
    if dtype not in _FLOATS or keys.shape[0] == 0:
        return None
    m = kind.isnan(keys)
    if not bool(m.any()):
        return None
    return int(m.nonzero()[0][0])


def _drop(kind, a, p):
    """a without element p (a small array of distinct keys or groups)."""
    n = a.shape[0]
    if p == n - 1:
        return kind.shrink(a, p)
    out = kind.empty(n - 1, _arrays.dtype_name(a.dtype))
    out[:p] = a[:p]
    out[p:] = a[p + 1:]
    return out


def unique(ar, return_index=False, return_inverse=False, return_counts=False, *, ctx=None):
    """numpy.unique for 1-D arrays: the distinct values ascending, and with
    the flags the index of each one's first occurrence, the inverse (index
    into the distinct values of each element) and the counts, all int64.
    Floats follow numpy (equal_nan=True): -0.0 and +0.0 are one value, all
    NaNs one value, sorted last; each distinct value is written with the bits
    of its first occurrence."""
    a, kind, dt = _input(ar, "ar")
    c = _ctx_for(ctx, kind)
    n = a.shape[0]
    u = kind.empty(n, dt)
    first = kind.empty(n, "int64") if return_index else None
    counts = kind.empty(n, "int64") if return_counts else None
    inverse = kind.empty(n, "int64") if return_inverse else None
    exp = lambda x: None if x is None else kind.export(x, c)
    k = _core.unique(c._c, kind.export(a, c), _eq(dt), kind.export(u, c), exp(first), exp(counts), exp(inverse))
    out = [kind.finish(kind.shrink(u, k))]
    if return_index:
        out.append(kind.finish(kind.shrink(first, k)))
    if return_inverse:
        out.append(kind.finish(inverse))
    if return_counts:
        out.append(kind.finish(kind.shrink(counts, k)))
    return out[0] if len(out) == 1 else tuple(out)


def isin(element, test_elements, *, invert=False, ctx=None):
    """numpy.isin for 1-D arrays: a bool array, True where element[i] equals
    some test element (False there with invert=True). As in numpy, -0.0
    equals +0.0 and NaN equals nothing, not even NaN (NaNs are taken out of
    test_elements, a pass over the test set only when it holds one)."""
    a, ka, da = _input(element, "element")
    b, kb, db = _input(test_elements, "test_elements")
    a, b, dt = _common(a, ka, da, b, kb, db, "element and test_elements")
    c = _ctx_for(ctx, ka)
    if dt in _FLOATS and b.shape[0]:
        nan = kb.isnan(b)
        if bool(nan.any()):
            b = b[kb.invert_(nan)]
    found = ka.empty(a.shape[0], "bool")
    _core.isin(c._c, ka.export(a, c), kb.export(b, c), _eq(dt), ka.export(found, c))
    if invert:
        ka.invert_(found)
    return ka.finish(found)


def _canonical(kind, a):
    """Float keys with -0.0 as +0.0 and every NaN as one positive NaN, so that
    tandem's key order (IEEE-754 totalOrder) is numpy's sort order."""
    import numpy as np

    with np.errstate(invalid="ignore"):  # signalling NaNs
        x = a + 0  # -0.0 + 0 is +0.0; a new array
    nan = kind.isnan(x)
    x[nan] = float("nan")
    return x


def searchsorted(a, v, side="left", *, ctx=None):
    """numpy.searchsorted for a sorted 1-D ``a`` (ascending in numpy's order,
    NaNs last): for each v[i] the index where it would be inserted to keep
    ``a`` sorted, the leftmost such place with side="left", the rightmost
    with "right"; int64. As in numpy, ``a`` is not checked to be sorted.

    The method: a B+ tree bulk-built from ``a``; the answer is the rank of
    v[i] among a's distinct keys (plus 1 where v[i] is stored, for "right").
    When ``a`` has duplicates the tree holds each distinct key with the index
    of its first occurrence, and the rank picks that index."""
    if side not in ("left", "right"):
        raise invalid(f"side must be 'left' or 'right', not {side!r}")
    s, ks, ds = _input(a, "a")
    q, kq, dq = _input(v, "v")
    s, q, dt = _common(s, ks, ds, q, kq, dq, "a and v")
    c = _ctx_for(ctx, kq)
    if dt in _FLOATS:
        s, q = _canonical(ks, s), _canonical(kq, q)
    n, m = s.shape[0], q.shape[0]
    t = BTree(s, s, ctx=c)
    first = None
    if len(t) != n:  # duplicates: distinct keys with their first index
        t.close()
        u, first = unique(s, return_index=True, ctx=c)
        t = BTree(u, first, ctx=c)
    out = kq.empty(m, "int64")
    qc = kq.export(q, c)
    t._c.rank(qc, kq.export(out, c))
    if side == "right":
        found = kq.empty(m, "bool")
        t._c.find(kq.export(q, c), None, kq.export(found, c))
        out += found
    t.close()
    if first is not None:
        k = first.shape[0]
        ext = ks.empty(k + 1, "int64")
        ext[:k] = first
        ext[k] = n
        out = ext[out]
    return kq.finish(out)


def factorize(values, *, sort=False, ctx=None):
    """pandas.factorize for 1-D arrays: (codes, uniques). codes (int64) index
    into uniques; uniques in first-seen order, or ascending with sort=True.
    NaN gets code -1 and is not in uniques; -0.0 and +0.0 are one value,
    written as first seen."""
    a, kind, dt = _input(values, "values")
    c = _ctx_for(ctx, kind)
    n = a.shape[0]
    u, codes = kind.empty(n, dt), kind.empty(n, "int64")
    flags = _eq(dt) | (0 if sort else _core.ORDER_FIRST_SEEN)
    k = _core.unique(c._c, kind.export(a, c), flags, kind.export(u, c), None, None, kind.export(codes, c))
    u = kind.shrink(u, k)
    p = _nan_position(kind, u, dt)
    if p is not None:
        kind.drop_code(codes, p)
        u = _drop(kind, u, p)
    return kind.finish(codes), kind.finish(u)


def group_reduce(keys, values, agg, *, sort=True, ctx=None):
    """``pandas.Series(values).groupby(keys, sort=sort).agg()`` as arrays:
    (group keys, reduced values). ``agg`` is "count", "sum", "min", "max",
    "first", "last" or "mean". Groups come ascending (sort=True) or in
    first-seen order (sort=False), as in pandas; float keys group as pandas
    does (-0.0 with +0.0, shown as first seen) and NaN keys are dropped, as
    pandas' default dropna=True does. Result dtypes are pandas': count
    int64, sum of int32/uint32 added in int64/uint64 and given back as
    int32/uint32 when every sum fits (64-bit sums wrap), mean
    float64 (for float32 values pandas 3 gives float32 or float64 depending
    on the data; tandem always float64), the others the values' dtype.
    NaN values are skipped as pandas skips them (count counts the others;
    an all-NaN group sums to 0 and has NaN min/max/first/last/mean).
    Float sums and means add in the order tandem/ops.h documents; pandas
    adds with compensation, so the last bits may differ."""
    if agg not in _AGGS:
        raise invalid(f"agg must be one of {', '.join(_AGGS)}; got {agg!r}")
    k, kk, dk = _input(keys, "keys")
    v, kv, dv = _input(values, "values")
    if v.shape[0] != k.shape[0]:
        raise invalid(f"keys has {k.shape[0]} elements but values has {v.shape[0]}")
    c = _ctx_for(ctx, kk)
    narrow = None
    if agg == "sum" and dv in _SUM_DTYPE:
        narrow, v, dv = dv, kv.astype(v, _SUM_DTYPE[dv]), _SUM_DTYPE[dv]
    flags = _eq(dk) | (0 if sort else _core.ORDER_FIRST_SEEN)
    gk, red = _reduce(kk, kv, c, k, None if agg == "count" else v, agg, dv, flags)
    # NaN values: C propagates them, pandas skips them. For every reduction
    # but count, a group's result that is not NaN is already pandas' one:
    # a sum or mean with a NaN value is NaN; a first or last that is not NaN
    # is the group's first or last non-NaN value; a min or max (totalOrder)
    # that is not NaN is a value below (above) every NaN of the group, so
    # skipping those changes nothing. So the groups are looked at, not the
    # rows (no pass over the values unless a group is NaN); count, blind to
    # values, looks at the values.
    if dv in _FLOATS and _may_hold_nan(kv, v if agg == "count" else red):
        nan = kv.isnan(v)
        if bool(nan.any()):
            red = _reduce_skipping(kk, kv, c, gk, k, v, kv.invert_(nan), agg, dv, flags)
    gk, red = _drop_nan_key(kk, gk, red, dk)
    if narrow is not None:  # over the groups pandas lists
        red = _downcast(kv, red, narrow)
    return kk.finish(gk), kv.finish(red)


def _downcast(kind, red, dtype):
    """pandas sums 32-bit integers in 64 bits and gives the 32-bit dtype back
    when every group's sum fits in it (a pass over the groups only)."""
    import numpy as np

    info = np.iinfo(dtype)
    if red.shape[0] == 0:
        return kind.astype(red, dtype)
    # uint64 sums are bounded as int64 (the same bits; a sum of 2**63 or more
    # is negative there, so out of uint32's range all the same): PyTorch has
    # no min or max of uint64 tensors on the CPU.
    s = kind.view(red, "int64") if dtype == "uint32" else red
    if info.min <= int(s.min()) and int(s.max()) <= info.max:
        return kind.astype(red, dtype)
    return red


def _may_hold_nan(kind, v):
    """False when a float array holds no NaN: its sum is not NaN (one pass,
    no temporary array; inf - inf gives a false alarm, settled by isnan)."""
    import numpy as np

    if v.shape[0] == 0:
        return False
    with np.errstate(invalid="ignore", over="ignore"):
        return bool(kind.isnan(v.sum()))


def _out_dtype(agg, dv):
    return "int64" if agg == "count" else "float64" if agg == "mean" else dv


def _reduce(kk, kv, c, k, v, agg, dv, flags):
    n = k.shape[0]
    gk = kk.empty(n, _arrays.dtype_name(k.dtype))
    red = kv.empty(n, _out_dtype(agg, dv))
    g = _core.group_reduce(c._c, kk.export(k, c), None if v is None else kv.export(v, c), _AGGS[agg], flags,
                           kk.export(gk, c), kv.export(red, c))
    return kk.shrink(gk, g), kv.shrink(red, g)


def _reduce_skipping(kk, kv, c, gk, k, v, keep, agg, dv, flags):
    """pandas' skipna: for every group gk of ``keys`` (the groups of the
    reduction over all rows), the reduction over the rows whose value is not
    NaN; a group with none gets 0 (count, sum) or NaN."""
    pk, pred = _reduce(kk, kv, c, k[keep], v[keep], agg, dv, flags)
    _, at = join(gk, pk, how="left", ctx=c)  # groups are distinct: one row each
    out = kv.empty(gk.shape[0], _arrays.dtype_name(pred.dtype))
    out[:] = 0 if agg in ("count", "sum") else float("nan")
    hit = at >= 0
    out[hit] = pred[at[hit]]
    return out


def _drop_nan_key(kk, gk, red, dk):
    p = _nan_position(kk, gk, dk)
    if p is not None:
        gk, red = _drop(kk, gk, p), _drop(kk, red, p)
    return gk, red


def join(left_keys, right_keys, *, how="inner", ctx=None):
    """The row indices of ``pandas.merge(left, right, on=key, how=how)``:
    (left_index, right_index), int64. ``how`` "inner": every pair of equal
    keys (many-to-many), ordered by left row, then right row; "left": the
    same plus each left row without a match, with right index -1, in its
    place; "semi" / "anti": (left rows with / without a match ascending,
    None). Float keys match as in pandas: -0.0 with +0.0, NaN with NaN.

    Output is sized at len(left_keys) first, which fits whenever the right
    keys are distinct; a larger result is counted by that call and written
    by a second one."""
    if how not in _HOWS:
        raise invalid(f"how must be one of {', '.join(_HOWS)}; got {how!r}")
    lk, kl, dl = _input(left_keys, "left_keys")
    rk, kr, dr = _input(right_keys, "right_keys")
    lk, rk, dt = _common(lk, kl, dl, rk, kr, dr, "left_keys and right_keys")
    c = _ctx_for(ctx, kl)
    pairs = how in ("inner", "left")
    cap = lk.shape[0]
    while True:
        li = kl.empty(cap, "int64")
        ri = kl.empty(cap, "int64") if pairs else None
        rows, done = _core.join(c._c, _HOWS[how], kl.export(lk, c), kr.export(rk, c), _eq(dt), kl.export(li, c),
                                None if ri is None else kl.export(ri, c))
        if done:
            break
        cap = rows
    li = kl.finish(kl.shrink(li, rows))
    return li, (kl.finish(kl.shrink(ri, rows)) if pairs else None)
