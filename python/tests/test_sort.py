"""sort, sort_pairs and argsort against numpy's stable argsort over
totalOrder keys, for every dtype and both directions."""

import numpy as np
import pytest

pytest.importorskip("hypothesis", reason="hypothesis is not installed")

from hypothesis import given, strategies as st

import tandem
from hypothesis.extra import numpy as hnp
from refs import DTYPES, arrays, bits, bits_dtype, elements_bits, stable_perm


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data(), descending=st.booleans())
def test_sort_matches_reference(dtype, data, descending):
    keys = data.draw(arrays(dtype))
    before = keys.copy()
    out = tandem.sort(keys, descending=descending)
    assert type(out) is np.ndarray and out.dtype == keys.dtype and out.shape == keys.shape
    np.testing.assert_array_equal(bits(out), bits(keys[stable_perm(keys, descending)]))
    np.testing.assert_array_equal(bits(keys), bits(before))  # the input is untouched


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data(), descending=st.booleans())
def test_sort_pairs_matches_reference(dtype, data, descending):
    keys = data.draw(arrays(dtype))
    vdtype = data.draw(st.sampled_from(DTYPES))
    values = data.draw(hnp.arrays(bits_dtype(vdtype), len(keys), elements=elements_bits(vdtype))).view(vdtype)
    k2, v2 = tandem.sort_pairs(keys, values, descending=descending)
    perm = stable_perm(keys, descending)
    np.testing.assert_array_equal(bits(k2), bits(keys[perm]))
    np.testing.assert_array_equal(bits(v2), bits(values[perm]))
    assert v2.dtype == values.dtype


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data(), descending=st.booleans(), index_dtype=st.sampled_from(["uint32", "uint64"]))
def test_argsort_matches_reference(dtype, data, descending, index_dtype):
    keys = data.draw(arrays(dtype))
    perm = tandem.argsort(keys, descending=descending, index_dtype=index_dtype)
    assert perm.dtype == np.dtype(index_dtype)
    np.testing.assert_array_equal(perm, stable_perm(keys, descending))


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data(), descending=st.booleans())
def test_sort_in_place(dtype, data, descending):
    keys = data.draw(arrays(dtype))
    expect = keys[stable_perm(keys, descending)]
    out = tandem.sort(keys, descending=descending, inplace=True)
    assert out is keys
    np.testing.assert_array_equal(bits(keys), bits(expect))


def test_float_total_order_example():
    a = np.array([1.0, np.nan, -0.0, -np.inf, 0.0, -np.nan, np.inf], dtype=np.float64)
    out = tandem.sort(a)
    assert np.signbit(out[0]) and np.isnan(out[0])  # -NaN first
    assert out[1] == -np.inf
    assert out[2] == 0 and np.signbit(out[2]) and out[3] == 0 and not np.signbit(out[3])
    assert np.isnan(out[-1]) and not np.signbit(out[-1])


def test_stable_descending_is_not_reversed_ascending():
    keys = np.array([2, 1, 2, 1], dtype=np.int32)
    _, v = tandem.sort_pairs(keys, np.arange(4, dtype=np.uint32), descending=True)
    np.testing.assert_array_equal(v, [0, 2, 1, 3])


def test_array_likes_that_share_memory_are_not_changed():
    class ArrayLike:  # np.asarray(ArrayLike) is a view of its data, as for a pandas Series
        def __init__(self, a):
            self.a = a

        def __array__(self, dtype=None, copy=None):
            return self.a

    keys = np.array([3, 1, 2], dtype=np.uint32)
    np.testing.assert_array_equal(tandem.sort(ArrayLike(keys)), [1, 2, 3])
    np.testing.assert_array_equal(keys, [3, 1, 2])
    with pytest.raises(tandem.InvalidArgument):
        tandem.sort(ArrayLike(keys), inplace=True)


def test_non_contiguous_and_non_array_inputs_are_converted():
    a = np.arange(20, 0, -1, dtype=np.int64)[::2]
    np.testing.assert_array_equal(tandem.sort(a), np.sort(a))
    np.testing.assert_array_equal(tandem.sort([3, 1, 2]), [1, 2, 3])
    big_endian = np.array([3, 1, 2], dtype=">u4")
    np.testing.assert_array_equal(tandem.sort(big_endian), [1, 2, 3])


def test_empty_and_explicit_context():
    with tandem.Context("cpu", threads=1) as ctx:
        assert ctx.backend == "cpu"
        assert "cpu" in repr(ctx)
        out = tandem.sort(np.array([], dtype=np.float32), ctx=ctx)
        assert out.shape == (0,) and out.dtype == np.float32
        np.testing.assert_array_equal(tandem.argsort(np.array([5, 4], dtype=np.uint32), ctx=ctx), [1, 0])


class HostProducer:
    """Another library's host array: only the DLPack protocol and an array-API
    namespace whose from_dlpack makes the library's own arrays."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()

    def __array_namespace__(self):
        class ns:
            @staticmethod
            def from_dlpack(x):
                return HostProducer(np.from_dlpack(x))
        return ns


def test_other_dlpack_producers_get_their_own_kind_back():
    keys = np.array([3, 1, 2], dtype=np.int32)
    out = tandem.sort(HostProducer(keys))
    assert isinstance(out, HostProducer)
    np.testing.assert_array_equal(out.a, [1, 2, 3])
    np.testing.assert_array_equal(keys, [3, 1, 2])  # a view of the caller's data is not sorted in place
    perm = tandem.argsort(HostProducer(keys))
    assert isinstance(perm, HostProducer) and list(perm.a) == [1, 2, 0]
