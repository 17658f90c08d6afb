"""numpy- and pandas-named data operations over tandem/ops.h: unique (and
numpy 2's unique_values / unique_counts / unique_inverse / unique_all), isin,
searchsorted, factorize, group_reduce and join.

Each maps numpy's or pandas' rules onto the C flags: TDM_EQ_NUMERIC for float
keys (-0.0 equals +0.0, every NaN equals every NaN) and TDM_ORDER_FIRST_SEEN
where pandas keeps first-seen order. What is left for Python is cheap and
said at each place: a dtype conversion where the libraries convert (the
dtypes tandem widens or maps to int64 are in tandem._arrays, "logical
dtypes"), and the NaN / NaT rules where numpy and pandas differ from one
missing group (isin: a NaN or NaT is never found; factorize and group_reduce:
NaN / NaT keys get no group unless asked). Outputs are allocated once at
their largest size and shrunk in place, so results are not copied again.

Keys of several columns (group_reduce, join) are turned into one int64 code
per row with tandem's own factorize: each column's codes in ascending order
of its values, combined column by column into codes that sort as the tuples
do.
"""

import collections

import numpy as np

from . import _arrays, _core
from ._errors import invalid, unsupported
from . import BTree, _ctx_for, argsort  # defined before tandem imports this module

try:  # numpy 2's result types of the unique family
    from numpy.lib._arraysetops_impl import UniqueAllResult, UniqueCountsResult, UniqueInverseResult
except ImportError:  # pragma: no cover - numpy 1
    UniqueAllResult = collections.namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
    UniqueCountsResult = collections.namedtuple("UniqueCountsResult", ["values", "counts"])
    UniqueInverseResult = collections.namedtuple("UniqueInverseResult", ["values", "inverse_indices"])

_AGGS = {"count": 0, "sum": 1, "min": 2, "max": 3, "first": 4, "last": 5, "mean": 6}
_HOWS = {"inner": 0, "left": 1, "semi": 2, "anti": 3}
_ALL_HOWS = ("inner", "left", "right", "outer", "semi", "anti")
# pandas sums the integers narrower than 64 bits in 64 bits (and gives the
# narrower dtype back when every sum fits it; bool sums stay int64).
_SUM_DTYPE = {"int32": "int64", "uint32": "uint64", "int16": "int64", "uint16": "uint64", "int8": "int64",
              "uint8": "uint64", "bool": "int64"}
_I64 = _arrays.logical("int64", "keys")
_I64_MIN = -(1 << 63)


def _input(x, what):
    """(array, kind, Logical) of one 1-D input of a dtype tandem takes."""
    a, kind, _, _ = _arrays.adopt(x)
    lg = _arrays.logical(a.dtype, what)
    if len(a.shape) != 1:
        raise invalid(f"{what} must be a 1-D array, got {len(a.shape)} dimensions")
    return a, kind, lg


def _common(a, ka, la, b, kb, lb, what, exact=False):
    """Both inputs in one dtype, the one numpy's promotion gives (a copy of
    the one converted, as numpy and pandas make too); time dtypes of two
    units in the finer one. Returns (a, b, Logical).

    A signed integer with uint64 (whose common numpy dtype is float64, which
    would round them): with ``exact`` (isin, join: numpy 2 and pandas compare
    them exactly) both are mapped to int64, every value in 0..2**63-1 as
    itself and the others, which equal nothing on the other side, to -1 (a)
    and -2 (b); otherwise refused."""
    if la.name == lb.name:
        return a, b, la
    da, db = np.dtype(la.name), np.dtype(lb.name)
    if la.time or lb.time:
        if da.kind != db.kind:
            raise unsupported(f"{what} have dtypes {la.name} and {lb.name}, which numpy does not compare")
        dt = np.result_type(da, db)
    else:
        dt = np.result_type(da, db)
        if dt.kind == "f" and not la.is_float and not lb.is_float:
            if exact and not ka.on_device and not kb.on_device and ka.name == kb.name == "numpy":
                return _exact_int(a, la, -1), _exact_int(b, lb, -2), _I64
            raise unsupported(f"{what} have dtypes {la.name} and {lb.name}, whose common dtype {dt.name} would "
                              "round integers (as numpy would round both to float64); convert one of them first")
    lg = _arrays.logical(dt, what)
    a = a if la.name == lg.name else ka.astype(a, lg.name)
    b = b if lb.name == lg.name else kb.astype(b, lg.name)
    return a, b, lg


def _exact_int(a, lg, sentinel):
    """int64 values of a signed or uint64 array, exact over 0..2**63-1; the
    values outside (negative ones, uint64 above 2**63-1) become sentinel."""
    if lg.name == "uint64":
        out = a.astype(np.int64)
        out[a > np.uint64((1 << 63) - 1)] = sentinel
    else:
        out = a.astype(np.int64, copy=True)
        out[out < 0] = sentinel
    return out


def _mixed_ints(la, lb):
    """A signed integer dtype with uint64: float64 in numpy's promotion."""
    if la.is_float or lb.is_float or la.time or lb.time or la.name == lb.name:
        return False
    return np.result_type(np.dtype(la.name), np.dtype(lb.name)).kind == "f"


def _split_int(a, lg):
    """A signed or uint64 array as two columns whose tuples sort and compare
    as the values do across both dtypes: (0: negative, 1: 0..2**63-1, 2:
    above) and the value's int64 bits (ordered within each part)."""
    if lg.name == "uint64":
        part = (a > np.uint64((1 << 63) - 1)).astype(np.int8) + np.int8(1)
    else:
        part = (a >= 0).astype(np.int8)
    return part, a.astype(np.int64)


def _eq(lg):
    return _core.EQ_NUMERIC if lg.is_float else 0


def _missing_position(kind, keys, lg, ordered=True):
    """Index of the NaN / NaT group among distinct core keys (at most one),
    or None. Looks at the distinct keys only."""
    if not lg.has_missing or keys.shape[0] == 0:
        return None
    m = lg.missing(kind, keys, ordered)
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


# ---- unique --------------------------------------------------------------------------------------


def _unique_core(kind, c, core, lg, flags, want_index, want_inverse, want_counts):
    """tdm_unique over a core array: [values, index, inverse, counts] (the
    ones not wanted None), in the core dtype."""
    n = core.shape[0]
    u = kind.empty(n, lg.core)
    first = kind.empty(n, "int64") if want_index else None
    counts = kind.empty(n, "int64") if want_counts else None
    inverse = kind.empty(n, "int64") if want_inverse else None
    exp = lambda x: None if x is None else kind.export(x, c)
    k = _core.unique(c._c, kind.export(core, c), flags, kind.export(u, c), exp(first), exp(counts), exp(inverse))
    sh = lambda x: None if x is None else kind.shrink(x, k)
    return [kind.shrink(u, k), sh(first), inverse, sh(counts)]


def _split_missing(kind, core, lg, res):
    """equal_nan=False: the NaN / NaT group (last among the sorted distinct
    values) becomes one value per missing element, in the order they come,
    each with its own bits, its index, count 1 and its own inverse."""
    u, first, inverse, counts = res
    k = u.shape[0]
    if not lg.has_missing or k == 0 or not bool(lg.missing(kind, u[k - 1:]).any()):
        return res
    p = k - 1
    n = core.shape[0]
    pos = kind.arange(n)[lg.missing(kind, core)]
    q = pos.shape[0]
    if q == 1:
        return res

    def grow(a, tail):
        out = kind.empty(p + q, _arrays.dtype_name(a.dtype))
        out[:p] = a[:p]
        out[p:] = tail
        return out

    u = grow(u, core[pos])
    if first is not None:
        first = grow(first, pos)
    if counts is not None:
        counts = grow(counts, 1)
    if inverse is not None:
        inverse[pos] = kind.arange(q) + p
    return [u, first, inverse, counts]


def _unique(ar, want_index, want_inverse, want_counts, equal_nan, ctx, what="ar"):
    a, kind, lg = _input(ar, what)
    c = _ctx_for(ctx, kind)
    core = lg.to_core(kind, a)
    res = _unique_core(kind, c, core, lg, _eq(lg), want_index, want_inverse, want_counts)
    if not equal_nan:
        res = _split_missing(kind, core, lg, res)
    u, first, inverse, counts = res
    fin = lambda x: None if x is None else kind.finish(x)
    # numpy gives the values and first indices back in the input's ndarray
    # subclass, the inverse and counts as plain arrays.
    return (kind.keep(kind.finish(lg.from_core(kind, u))), None if first is None else kind.keep(kind.finish(first)),
            fin(inverse), fin(counts))


def unique(ar, return_index=False, return_inverse=False, return_counts=False, *, equal_nan=True, ctx=None):
    """numpy.unique for 1-D arrays: the distinct values ascending, and with
    the flags the index of each one's first occurrence, the inverse (index
    into the distinct values of each element) and the counts, all int64.
    Floats follow numpy: -0.0 and +0.0 are one value; all NaNs one value,
    sorted last (equal_nan=True) or each NaN a value of its own
    (equal_nan=False); NaT likewise. Each distinct value is written with the
    bits of its first occurrence."""
    u, first, inverse, counts = _unique(ar, return_index, return_inverse, return_counts, equal_nan, ctx)
    out = [u] + [x for x, w in ((first, return_index), (inverse, return_inverse), (counts, return_counts)) if w]
    return out[0] if len(out) == 1 else tuple(out)


def unique_values(x, *, ctx=None):
    """numpy.unique_values: the distinct values (NaNs and NaTs each one of
    their own, as numpy 2's unique family counts them), ascending (numpy does
    not promise an order)."""
    return _unique(x, False, False, False, False, ctx, "x")[0]


def unique_counts(x, *, ctx=None):
    """numpy.unique_counts: (values, counts) as numpy's named tuple."""
    u, _, _, counts = _unique(x, False, False, True, False, ctx, "x")
    return UniqueCountsResult(u, counts)


def unique_inverse(x, *, ctx=None):
    """numpy.unique_inverse: (values, inverse_indices) as numpy's named tuple."""
    u, _, inverse, _ = _unique(x, False, True, False, False, ctx, "x")
    return UniqueInverseResult(u, inverse)


def unique_all(x, *, ctx=None):
    """numpy.unique_all: (values, indices, inverse_indices, counts) as
    numpy's named tuple."""
    return UniqueAllResult(*_unique(x, True, True, True, False, ctx, "x"))


# ---- isin, searchsorted -------------------------------------------------------------------------


def isin(element, test_elements, *, invert=False, assume_unique=False, kind=None, ctx=None):
    """numpy.isin for 1-D arrays: a bool array, True where element[i] equals
    some test element (False there with invert=True). As in numpy, -0.0
    equals +0.0 and NaN (NaT) equals nothing, not even NaN (NaT): they are
    taken out of test_elements, a pass over the test set only when it holds
    one. Signed integers and uint64 compare exactly, as in numpy 2.
    ``assume_unique`` and ``kind`` (None, "sort" or "table") are accepted as
    numpy's hints; the results are the same whatever they say."""
    if kind not in (None, "sort", "table"):
        raise invalid(f"kind must be None, 'sort' or 'table'; got {kind!r}")
    a, ka, la = _input(element, "element")
    b, kb, lb = _input(test_elements, "test_elements")
    a, b, lg = _common(a, ka, la, b, kb, lb, "element and test_elements", exact=True)
    a, b = lg.to_core(ka, a, False), lg.to_core(kb, b, False)
    c = _ctx_for(ctx, ka)
    if lg.has_missing and b.shape[0]:
        miss = lg.missing(kb, b, False)
        if bool(miss.any()):
            b = b[kb.invert_(miss)]
    found = ka.empty(a.shape[0], "bool")
    _core.isin(c._c, ka.export(a, c), kb.export(b, c), _eq(lg), ka.export(found, c))
    if invert:
        ka.invert_(found)
    return ka.finish(found)


def _canonical(kind, a):
    """Float keys with -0.0 as +0.0 and every NaN as one positive NaN, so that
    tandem's key order (IEEE-754 totalOrder) is numpy's sort order. Keys
    with neither a zero nor a NaN are already in that order and are returned
    as they are: the two read-only passes that tell cost about half of the
    copy (a new array of len(a), its pages faulted in) and the NaN pass."""
    with np.errstate(invalid="ignore"):
        if not bool((a == 0).any()) and not bool(kind.isnan(a).any()):
            return a
    with np.errstate(invalid="ignore"):  # signalling NaNs
        x = a + 0  # -0.0 + 0 is +0.0; a new array
    nan = kind.isnan(x)
    x[nan] = float("nan")
    return x


def searchsorted(a, v, side="left", *, sorter=None, ctx=None):
    """numpy.searchsorted for a 1-D ``a`` sorted ascending in numpy's order
    (NaN and NaT last), or put in that order by ``sorter`` (the indices that
    sort it, as argsort gives): for each v[i] the index where it would be
    inserted to keep ``a`` sorted, the leftmost such place with side="left",
    the rightmost with "right"; int64. As in numpy, ``a`` is not checked to
    be sorted.

    The method: a B+ tree bulk-built from ``a``; the answer is the rank of
    v[i] among a's distinct keys (plus 1 where v[i] is stored, for "right").
    When ``a`` has duplicates the tree holds each distinct key with the index
    of its first occurrence, and the rank picks that index."""
    if side not in ("left", "right"):
        raise invalid(f"side must be 'left' or 'right', not {side!r}")
    s, ks, ls = _input(a, "a")
    q, kq, lq = _input(v, "v")
    if sorter is not None:
        p, kp, lp = _input(sorter, "sorter")
        if lp.is_float or lp.time or lp.name == "bool":
            raise unsupported(f"sorter has dtype {lp.name}; it must hold integer indices")
        if p.shape[0] != s.shape[0]:
            raise invalid(f"sorter has {p.shape[0]} elements but a has {s.shape[0]}")
        n = s.shape[0]
        if n and (int(p.min()) < 0 or int(p.max()) >= n):
            raise invalid(f"sorter holds an index outside 0..{n - 1}")
        s = s[p]
    s, q, lg = _common(s, ks, ls, q, kq, lq, "a and v")
    c = _ctx_for(ctx, kq)
    s, q = lg.to_core(ks, s), lg.to_core(kq, q)
    if lg.is_float:
        s, q = _canonical(ks, s), _canonical(kq, q)
    n, m = s.shape[0], q.shape[0]
    t = BTree(s, s, ctx=c)
    first = None
    if len(t) != n:  # duplicates: distinct keys with their first index
        t.close()
        u, first, _, _ = _unique_core(ks, c, s, lg, _eq(lg), True, False, False)
        t = BTree(u, first, ctx=c)
    out = kq.empty(m, "int64")
    t._c.rank(kq.export(q, c), kq.export(out, c))
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


# ---- factorize -----------------------------------------------------------------------------------


def _factorize(a, kind, lg, c, sort, na_sentinel):
    """(codes, distinct core keys) of a logical array."""
    core = lg.to_core(kind, a)
    n = core.shape[0]
    u, codes = kind.empty(n, lg.core), kind.empty(n, "int64")
    flags = _eq(lg) | (0 if sort else _core.ORDER_FIRST_SEEN)
    k = _core.unique(c._c, kind.export(core, c), flags, kind.export(u, c), None, None, kind.export(codes, c))
    u = kind.shrink(u, k)
    if na_sentinel:
        p = _missing_position(kind, u, lg)
        if p is not None:
            kind.drop_code(codes, p)
            u = _drop(kind, u, p)
    return codes, u


def factorize(values, *, sort=False, use_na_sentinel=True, ctx=None):
    """pandas.factorize for 1-D arrays: (codes, uniques). codes (int64) index
    into uniques; uniques in first-seen order, or ascending with sort=True.
    NaN (NaT) gets code -1 and is not in uniques; with use_na_sentinel=False
    it is one value of its own (last with sort=True). -0.0 and +0.0 are one
    value, written as first seen."""
    a, kind, lg = _input(values, "values")
    c = _ctx_for(ctx, kind)
    codes, u = _factorize(a, kind, lg, c, sort, use_na_sentinel)
    return kind.finish(codes), kind.finish(lg.from_core(kind, u))


def _columns(keys, what):
    """The key columns of group_reduce / join: a tuple (or a list of arrays)
    is several columns, anything else one array. Returns (columns, multi)."""
    if isinstance(keys, tuple) or (isinstance(keys, list) and keys and all(np.ndim(k) >= 1 for k in keys)):
        if not keys:
            raise invalid(f"{what} is an empty tuple of key columns")
        return [_input(k, f"{what}[{i}]") for i, k in enumerate(keys)], True
    return [_input(keys, what)], False


def _combine_codes(kind, c, parts):
    """One int64 code per row for several columns' codes, ordered as the
    tuples of the columns' codes: each step keeps codes dense (a factorize
    with sort=True) when the next product could overflow. parts: a list of
    (codes, number of distinct codes); a code -1 anywhere gives -1."""
    code, card = parts[0]
    for ci, m in parts[1:]:
        if card * max(m, 1) >= 1 << 62:
            code, card = _dense(kind, c, code)
        bad = (code < 0) | (ci < 0)
        code = code * max(m, 1) + ci
        if bool(bad.any()):
            code[bad] = -1
        card *= max(m, 1)
    return code


def _dense(kind, c, code):
    """Codes made dense (0..k-1 in the same order; -1 stays -1)."""
    codes, u = _factorize(code, kind, _I64, c, True, False)
    if u.shape[0] and int(u[0]) < 0:
        codes -= 1
        return codes, u.shape[0] - 1
    return codes, u.shape[0]


# ---- group_reduce -------------------------------------------------------------------------------


def group_reduce(keys, values, agg, *, sort=True, dropna=True, ctx=None):
    """``pandas.Series(values).groupby(keys, sort=sort, dropna=dropna).agg()``
    as arrays: (group keys, reduced values). ``keys`` is one array or a tuple
    of key columns (pandas' ``groupby([k1, k2])``; the group keys are then a
    tuple of one array per column). ``agg`` is "count", "sum", "min", "max",
    "first", "last" or "mean". Groups come ascending (sort=True; tuples by
    their first column, then the second, ...) or in first-seen order
    (sort=False), as in pandas; float keys group as pandas does (-0.0 with
    +0.0, shown as first seen). NaN and NaT keys are dropped, as pandas'
    default dropna=True does (a row with one in any column); with
    dropna=False they are a group of their own, sorted last.
    Result dtypes are pandas': count int64, sum of the integers narrower
    than 64 bits added in int64/uint64 and given back in their dtype when
    every sum fits (bool sums stay int64; 64-bit sums wrap), mean float64
    (for float32 values pandas 3 gives float32 or float64 depending on the
    data; tandem always float64), the others the values' dtype.
    NaN and NaT values are skipped as pandas skips them (count counts the
    others; an all-NaN group sums to 0 and has NaN min/max/first/last/mean,
    an all-NaT group NaT). The mean of datetime64 / timedelta64 values is
    the float64 mean of their counts truncated toward zero, as in pandas,
    in their dtype; their sum is refused for datetime64, as pandas does.
    Float sums and means add in the order tandem/ops.h documents; pandas
    adds with compensation, so the last bits may differ."""
    if agg not in _AGGS:
        raise invalid(f"agg must be one of {', '.join(_AGGS)}; got {agg!r}")
    cols, multi = _columns(keys, "keys")
    v, kv, lv = _input(values, "values")
    for k, _, _ in cols:
        if k.shape[0] != v.shape[0]:
            raise invalid(f"keys has {k.shape[0]} elements but values has {v.shape[0]}")
    if lv.time and agg == "sum" and lv.name.startswith("datetime"):
        raise unsupported(f"values has dtype {lv.name}, whose sum pandas does not define either")
    kk = cols[0][1]
    c = _ctx_for(ctx, kk)
    if not multi:
        k, _, lk = cols[0]
        ck = lk.to_core(kk, k)
        gk, red = _group_values(kk, kv, c, ck, lk, v, lv, agg, sort)
        if dropna:
            p = _missing_position(kk, gk, lk)
            if p is not None:
                gk, red = _drop(kk, gk, p), _drop(kv, red, p)
        red = _finish_values(kv, red, lv, agg)
        return kk.finish(lk.from_core(kk, gk)), kv.finish(red)
    parts = []
    for k, kind, lg in cols:
        codes, u = _factorize(k, kind, lg, c, True, dropna)
        parts.append((codes, u.shape[0]))
    code = _combine_codes(kk, c, parts)
    rows = None
    if dropna:
        keep = code >= 0
        if not bool(keep.all()):
            rows = kk.arange(code.shape[0])[keep]
            code, v = code[keep], v[keep]
    gk, red = _group_values(kk, kv, c, code, _I64, v, lv, agg, sort)
    red = _finish_values(kv, red, lv, agg)
    # Each group's key tuple: the columns at its first row.
    _, first = _group_values(kk, kk, c, code, _I64, kk.arange(code.shape[0]), _I64, "first", sort)
    if rows is not None:
        first = rows[first]
    return tuple(kind.finish(k[first]) for k, kind, _ in cols), kv.finish(red)


def _group_values(kk, kv, c, ck, lk, v, lv, agg, sort):
    """(group core keys, core reduction) over core keys ck, pandas' skipna
    applied, in the core (or sum) dtype."""
    flags = _eq(lk) | (0 if sort else _core.ORDER_FIRST_SEEN)
    if agg == "sum" and lv.name in _SUM_DTYPE:
        cv, dv = kv.astype(v, _SUM_DTYPE[lv.name]), _SUM_DTYPE[lv.name]
    else:
        cv, dv = lv.to_core(kv, v, False), lv.core
    gk, red = _reduce(kk, kv, c, ck, None if agg == "count" else cv, agg, dv, flags)
    if lv.time:
        nat = cv == _I64_MIN
        if bool(nat.any()):
            fill = float("nan") if agg == "mean" else _I64_MIN
            red = _reduce_skipping(kk, kv, c, gk, ck, cv, kv.invert_(nat), agg, dv, flags, fill, lk)
    # NaN values: C propagates them, pandas skips them. For every reduction
    # but count, a group's result that is not NaN is already pandas' one:
    # a sum or mean with a NaN value is NaN; a first or last that is not NaN
    # is the group's first or last non-NaN value; a min or max (totalOrder)
    # that is not NaN is a value below (above) every NaN of the group, so
    # skipping those changes nothing. So the groups are looked at, not the
    # rows (no pass over the values unless a group is NaN); count, blind to
    # values, looks at the values.
    elif lv.is_float and _may_hold_nan(kv, cv if agg == "count" else red):
        nan = kv.isnan(cv)
        if bool(nan.any()):
            red = _reduce_skipping(kk, kv, c, gk, ck, cv, kv.invert_(nan), agg, dv, flags, float("nan"), lk)
    return gk, red


def _finish_values(kv, red, lv, agg):
    """A core reduction in pandas' result dtype."""
    if agg == "mean" and lv.time:
        # pandas: the float64 mean of the counts, truncated toward zero; NaT
        # for a group without any.
        nan = kv.isnan(red)
        red[nan] = 0
        out = kv.astype(red, "int64")
        out[nan] = _I64_MIN
        return out.view(lv.name)
    if agg in ("count", "mean"):
        return red
    if agg == "sum" and lv.name in _SUM_DTYPE:
        return red if lv.name == "bool" else _downcast(kv, red, lv.name)
    return lv.from_core(kv, red, False)


def _downcast(kind, red, dtype):
    """pandas sums narrow integers in 64 bits and gives the narrow dtype back
    when every group's sum fits in it (a pass over the groups only)."""
    info = np.iinfo(dtype)
    if red.shape[0] == 0:
        return kind.astype(red, dtype)
    # uint64 sums are bounded as int64 (the same bits; a sum of 2**63 or more
    # is negative there, so out of the narrow range all the same): PyTorch
    # has no min or max of uint64 tensors on the CPU.
    s = kind.view(red, "int64") if info.min == 0 else red
    if info.min <= int(s.min()) and int(s.max()) <= info.max:
        return kind.astype(red, dtype)
    return red


def _may_hold_nan(kind, v):
    """False when a float array holds no NaN: its sum is not NaN (one pass,
    no temporary array; inf - inf gives a false alarm, settled by isnan)."""
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


def _reduce_skipping(kk, kv, c, gk, k, v, keep, agg, dv, flags, fill, lk):
    """pandas' skipna: for every group gk of ``keys`` (the groups of the
    reduction over all rows), the reduction over the rows whose value is not
    NaN (NaT); a group with none gets 0 (count, sum) or ``fill``."""
    pk, pred = _reduce(kk, kv, c, k[keep], v[keep], agg, dv, flags)
    at = _join_core(kk, kk, c, gk, pk, _eq(lk), "left")[1]  # groups are distinct: one row each
    out = kv.empty(gk.shape[0], _arrays.dtype_name(pred.dtype))
    out[:] = 0 if agg in ("count", "sum") else fill
    hit = at >= 0
    out[hit] = pred[at[hit]]
    return out


# ---- join ----------------------------------------------------------------------------------------


def _join_core(kl, kr, c, lk, rk, eq, how):
    """tdm_join over core keys of one dtype, how one of _HOWS."""
    pairs = how in ("inner", "left")
    cap = lk.shape[0]
    while True:
        li = kl.empty(cap, "int64")
        ri = kl.empty(cap, "int64") if pairs else None
        rows, done = _core.join(c._c, _HOWS[how], kl.export(lk, c), kr.export(rk, c), eq, kl.export(li, c),
                                None if ri is None else kl.export(ri, c))
        if done:
            break
        cap = rows
    return kl.shrink(li, rows), (kl.shrink(ri, rows) if pairs else None)


def join(left_keys, right_keys, *, how="inner", ctx=None):
    """The row indices of ``pandas.merge(left, right, on=key, how=how)``:
    (left_index, right_index), int64. ``how`` "inner": every pair of equal
    keys (many-to-many), ordered by left row, then right row; "left": the
    same plus each left row without a match, with right index -1, in its
    place; "right": the mirror image (right rows in order, each with its
    left matches, or -1); "outer": the left join's rows and then each right
    row without a match (left index -1), ordered by key ascending (NaN
    last, NaT first) and keeping that order within a key, as pandas sorts
    them;
    "semi" / "anti": (left rows with / without a match ascending, None).
    Float keys match as in pandas: -0.0 with +0.0, NaN with NaN (NaT with
    NaT); signed integers and uint64 compare exactly. Keys of several
    columns are tuples ``(l1, l2, ...)``, ``(r1, r2, ...)`` (pandas'
    ``on=[a, b]``), equal where every column is.

    Output is sized at len(left_keys) first, which fits whenever the right
    keys are distinct; a larger result is counted by that call and written
    by a second one."""
    if how not in _ALL_HOWS:
        raise invalid(f"how must be one of {', '.join(_ALL_HOWS)}; got {how!r}")
    lcols, lmulti = _columns(left_keys, "left_keys")
    rcols, rmulti = _columns(right_keys, "right_keys")
    if len(lcols) != len(rcols) or lmulti != rmulti:
        raise invalid(f"left_keys has {len(lcols)} key columns but right_keys has {len(rcols)}")
    kl, kr = lcols[0][1], rcols[0][1]
    c = _ctx_for(ctx, kl)
    if not lmulti and how in _HOWS:
        (lk, _, ll), (rk, _, lr) = lcols[0], rcols[0]
        lk, rk, lg = _common(lk, kl, ll, rk, kr, lr, "left_keys and right_keys", exact=True)
        li, ri = _join_core(kl, kr, c, lg.to_core(kl, lk, False), lg.to_core(kr, rk, False), _eq(lg), how)
        return kl.finish(li), (None if ri is None else kl.finish(ri))
    lcode, rcode = _join_codes(kl, c, lcols, rcols)
    if how in _HOWS:
        li, ri = _join_core(kl, kl, c, lcode, rcode, 0, how)
    elif how == "right":
        ri, li = _join_core(kl, kl, c, rcode, lcode, 0, "left")
    else:
        li, ri = _outer(kl, c, lcode, rcode)
    return kl.finish(li), (None if ri is None else kl.finish(ri))


def _join_codes(kind, c, lcols, rcols):
    """Codes of the left and right rows (int64, equal where the key tuples
    are equal, ordered as the tuples): each column factorized over the left
    and right column together, NaN a value of its own (pandas matches NaN
    with NaN)."""
    n = lcols[0][0].shape[0]
    for i, (k, _, _) in enumerate(lcols):
        if k.shape[0] != n:
            raise invalid(f"left_keys[0] has {n} elements but left_keys[{i}] has {k.shape[0]}")
    m = rcols[0][0].shape[0]
    for i, (k, _, _) in enumerate(rcols):
        if k.shape[0] != m:
            raise invalid(f"right_keys[0] has {m} elements but right_keys[{i}] has {k.shape[0]}")
    parts = []
    for i, ((lk, kl, ll), (rk, kr, lr)) in enumerate(zip(lcols, rcols)):
        what = f"left_keys[{i}] and right_keys[{i}]"
        if _mixed_ints(ll, lr):  # ordered exactly: (part, int64) pairs
            _common(lk, kl, ll, rk, kr, lr, what, exact=True)  # refuses what cannot be mapped
            cols = zip(_split_int(lk, ll), _split_int(rk, lr))
        else:
            lk, rk, lg = _common(lk, kl, ll, rk, kr, lr, what, exact=True)
            if lg.time:  # pandas sorts NaT first here (as the int64 minimum)
                lk, rk = lk.view(np.int64), rk.view(np.int64)
            cols = [(lk, rk)]
        for lk, rk in cols:
            codes, u = _factorize(kind.concat([lk, rk]), kind, _arrays.logical(lk.dtype, what), c, True, False)
            parts.append((codes, u.shape[0]))
    code = _combine_codes(kind, c, parts)
    return code[:n], code[n:]


def _outer(kind, c, lcode, rcode):
    """pandas' outer merge on codes that sort as the keys: the left join's
    rows, then the right rows without a match, stably sorted by key."""
    li, ri = _join_core(kind, kind, c, lcode, rcode, 0, "left")
    ro, _ = _join_core(kind, kind, c, rcode, lcode, 0, "anti")
    n, m = li.shape[0], ro.shape[0]
    L, R = kind.empty(n + m, "int64"), kind.empty(n + m, "int64")
    L[:n], L[n:] = li, -1
    R[:n], R[n:] = ri, ro
    key = kind.empty(n + m, "int64")
    key[:n] = lcode[li]
    key[n:] = rcode[ro]
    perm = kind.astype(argsort(key, ctx=c), "int64")
    return L[perm], R[perm]
