"""Plain reference models for the Python tests: IEEE-754 totalOrder keys,
bit patterns, and dict / sorted-list models of the structures."""

import numpy as np

try:  # the property tests need hypothesis; the GPU and error tests do not
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError:
    st = hnp = None

DTYPES = ["uint32", "uint64", "int32", "int64", "float32", "float64"]
INT_DTYPES = DTYPES[:4]
KEY_DTYPES = INT_DTYPES
POLICIES = ["keep_first", "keep_last", "sum", "min", "max"]

_UINT = {4: np.uint32, 8: np.uint64}


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
