"""Plain reference models for the Python tests: IEEE-754 totalOrder keys,
bit patterns, dict / sorted-list models of the structures, and the numpy and
pandas references of the data operations."""

import numpy as np

try:  # the property tests need hypothesis; the GPU and error tests do not
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError:
    st = hnp = None
try:  # the data operations' references
    import pandas as pd
except ImportError:
    pd = None

DTYPES = ["uint32", "uint64", "int32", "int64", "float32", "float64"]
INT_DTYPES = DTYPES[:4]
KEY_DTYPES = INT_DTYPES
FLOATS = ("float32", "float64")
AGGS = ["count", "sum", "min", "max", "first", "last", "mean"]
POLICIES = ["keep_first", "keep_last", "sum", "min", "max"]

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def bits_dtype(dtype):
    return _UINT[np.dtype(dtype).itemsize]


def bits(a):
    """The arrays' raw bit patterns as unsigned integers."""
    a = np.asarray(a)
    return a.view(bits_dtype(a.dtype))


def order_key(a):
    """Unsigned keys whose ascending order is tandem's key order: numeric for
    integers, IEEE-754 totalOrder for floats (-NaN < -inf < -0.0 < +0.0 < +NaN)."""
    a = np.asarray(a)
    b = bits(a)
    width = a.dtype.itemsize * 8
    sign = b.dtype.type(1 << (width - 1))
    kind = a.dtype.kind
    if kind == "u":
        return b.copy()
    if kind == "i":
        return b ^ sign
    neg = (b & sign) != 0
    return np.where(neg, ~b, b | sign).astype(b.dtype)


def stable_perm(keys, descending=False):
    k = order_key(keys)
    if descending:
        k = ~k  # stable argsort of the complement: ties keep input order
    return np.argsort(k, kind="stable")


def scalar_key(dtype, b):
    """order_key of one bit pattern (a Python int)."""
    return int(order_key(np.array([b], dtype=bits_dtype(dtype)).view(dtype))[0])


def _special_bits(dtype):
    dt = np.dtype(dtype)
    if dt.kind != "f":
        info = np.iinfo(dt)
        vals = [0, 1, info.max, info.min, info.min + 1, info.max - 1]
        if dt.kind == "i":
            vals += [-1, -2]
        return [int(bits(np.array([v], dtype=dt))[0]) for v in vals]
    vals = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, np.finfo(dt).tiny, -np.finfo(dt).max]
    out = [int(bits(np.array([v], dtype=dt))[0]) for v in vals]
    width = dt.itemsize * 8
    exp_all = ((1 << (width - 1)) - 1) & ~((1 << np.finfo(dt).nmant) - 1)
    out += [exp_all | 1, exp_all | 5, (1 << (width - 1)) | exp_all | 3]  # NaN payloads, a negative NaN
    return out


def elements_bits(dtype, pool=None):
    """Bit patterns: anything, the special values, or a small pool (ties)."""
    width = np.dtype(dtype).itemsize * 8
    choices = [st.integers(0, (1 << width) - 1), st.sampled_from(_special_bits(dtype))]
    if pool:
        choices.append(st.integers(0, pool))
    return st.one_of(*choices)


def arrays(dtype, max_size=200, pool=16):
    """1-D arrays of dtype covering every bit pattern class, with ties."""
    return hnp.arrays(bits_dtype(dtype), st.integers(0, max_size), elements=elements_bits(dtype, pool)).map(
        lambda b: b.view(dtype))


def combine(policy, dtype, old, new):
    """Value bits after a duplicate meets an earlier value (old) under policy."""
    if policy == "keep_first":
        return old
    if policy == "keep_last":
        return new
    if policy == "sum":
        return (old + new) % (1 << (np.dtype(dtype).itemsize * 8))
    ko, kn = scalar_key(dtype, old), scalar_key(dtype, new)
    if policy == "min":
        return new if kn < ko else old
    return new if kn > ko else old


def apply_batch(model, policy, value_dtype, keys_bits, values_bits):
    """Inserts a batch into a dict model one pair at a time, in index order."""
    for k, v in zip(keys_bits, values_bits):
        k, v = int(k), int(v)
        model[k] = combine(policy, value_dtype, model[k], v) if k in model else v


def insert_drawn(data, s, model, policy, key_dtype, value_dtype, keys_bits):
    """Inserts keys_bits with drawn values into structure s and into its dict
    model."""
    values = hnp.arrays(bits_dtype(value_dtype), len(keys_bits), elements=elements_bits(value_dtype, 1000))
    values_bits = data.draw(values)
    s.insert(keys_bits.view(key_dtype), values_bits.view(value_dtype))
    apply_batch(model, policy, value_dtype, keys_bits, values_bits)


def erase_checked(s, model, key_dtype, keys_bits):
    """Erases keys_bits from structure s and from its dict model; s must
    report the count the model loses."""
    expect = len({int(k) for k in keys_bits} & model.keys())
    assert s.erase(keys_bits.view(key_dtype)) == expect
    for k in keys_bits:
        model.pop(int(k), None)


# ---- the data operations' references ------------------------------------------------------


def same_bits(got, expect):
    """Same dtype, same length, same bit patterns."""
    assert isinstance(got, np.ndarray)
    assert got.dtype == expect.dtype, (got.dtype, expect.dtype)
    np.testing.assert_array_equal(bits(got), bits(np.asarray(expect)))


def same_values(got, expect, dtype=None):
    """Same dtype (``dtype`` when given) and length; numerically equal
    (-0.0 == +0.0, NaN == NaN)."""
    assert isinstance(got, np.ndarray)
    assert got.dtype == (dtype or expect.dtype), (got.dtype, expect.dtype)
    np.testing.assert_array_equal(got, np.asarray(expect))


def same_reduction(red, rr, agg, vdtype):
    """group_reduce against pandas: float sums, means, minima and maxima
    numerically (the sign of a zero result is not pinned down), the rest bit
    for bit. A mean is float64: for float32 values pandas 3 picks float32 or
    float64 depending on the data, so only the values are compared then."""
    if agg == "mean":
        assert red.dtype == np.float64
        np.testing.assert_array_equal(red.astype(rr.dtype) if vdtype == "float32" else red, rr)
    elif vdtype in FLOATS and agg in ("sum", "min", "max"):
        same_values(red, rr)
    else:
        same_bits(red, rr)


def pair_arrays(data, dtype, pool=16, max_size=200):
    """Two arrays of one dtype, drawn from a shared small pool often enough
    that they share keys."""
    return data.draw(arrays(dtype, max_size, pool)), data.draw(arrays(dtype, max_size, pool))


def skewed(dtype, n=5000, seed=0):
    """A hot key (90 % of the rows) among random ones."""
    rng = np.random.default_rng(seed)
    b = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(bits_dtype(dtype))
    a = b.view(dtype).copy()
    a[rng.random(n) < 0.9] = a[0]
    return a


def values_for(data, dtype, agg, n):
    """Values drawn so that pandas' compensated float sums and tandem's sums
    are exact (small integers, inf, NaN, -0.0) where the order of additions
    could show; every bit pattern elsewhere."""
    dt = np.dtype(dtype)
    if agg in ("sum", "mean") and dt.kind == "f":
        el = st.one_of(st.integers(-1000, 1000).map(float), st.sampled_from([np.nan, -np.nan, np.inf, -np.inf, -0.0]))
        return data.draw(hnp.arrays(dt, n, elements=el))
    if agg == "mean":  # integers: exact in float64
        lo = 0 if dt.kind == "u" else -1000
        return data.draw(hnp.arrays(dt, n, elements=st.integers(lo, 1000)))
    return data.draw(hnp.arrays(bits_dtype(dtype), n, elements=elements_bits(dtype, 1000))).view(dtype)


def pandas_group(keys, values, agg, sort):
    r = getattr(pd.Series(values).groupby(keys, sort=sort), agg)()
    return r.index.to_numpy(), r.to_numpy()


def pandas_join(lk, rk, how):
    left = pd.DataFrame({"k": lk, "i": np.arange(len(lk), dtype=np.int64)})
    right = pd.DataFrame({"k": rk, "j": np.arange(len(rk), dtype=np.int64)})
    m = pd.merge(left, right, on="k", how="inner" if how in ("semi", "anti") else how)
    li = m["i"].fillna(-1).to_numpy(np.int64)  # -1: no left row (right and outer joins)
    if how == "semi":
        return np.unique(li), None
    if how == "anti":
        return np.setdiff1d(np.arange(len(lk), dtype=np.int64), li), None
    return li, m["j"].fillna(-1).to_numpy(np.int64)


def plain_join(lk, rk, how):
    """(i, j) for every equal pair, by i then j; numpy's == is pandas' key
    equality except for NaN, which pandas matches to NaN."""
    li, ri = [], []
    for i, x in enumerate(lk):
        js = [j for j, y in enumerate(rk) if x == y or (x != x and y != y)]
        if how == "left" and not js:
            js = [-1]
        if how in ("semi", "anti"):
            if bool(js) == (how == "semi"):
                li.append(i)
            continue
        li += [i] * len(js)
        ri += js
    return np.array(li, dtype=np.int64), (None if how in ("semi", "anti") else np.array(ri, dtype=np.int64))
