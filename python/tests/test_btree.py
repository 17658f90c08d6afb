"""BTree against a sorted-list model: find, rank, range_count, range, insert,
erase and export, for every key dtype (floats in totalOrder) and policy."""

import bisect

import numpy as np
import pytest

pytest.importorskip("hypothesis", reason="hypothesis is not installed")

from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import tandem
from refs import (DTYPES, INT_DTYPES, POLICIES, apply_batch, bits, bits_dtype, elements_bits, erase_checked,
                  insert_drawn, scalar_key)


def keys_of(dtype, n):
    return hnp.arrays(bits_dtype(dtype), n, elements=elements_bits(dtype, 300))


def check(t, model, kd, vd, qb, lob, hib):
    order = sorted(model, key=lambda k: scalar_key(kd, k))
    okeys = [scalar_key(kd, k) for k in order]
    assert len(t) == len(model)
    keys, vals = t.export()
    assert [int(k) for k in bits(keys)] == order
    assert [int(v) for v in bits(vals)] == [model[k] for k in order]
    q = qb.view(kd)
    values, found = t.find(q)
    for i, k in enumerate(qb):
        assert bool(found[i]) == (int(k) in model)
        assert int(bits(values)[i]) == model.get(int(k), 0)
    rank = t.rank(q)
    assert rank.dtype == np.uint64
    assert [int(r) for r in rank] == [bisect.bisect_left(okeys, scalar_key(kd, int(k))) for k in qb]
    lo, hi = lob.view(kd), hib.view(kd)
    counts = t.range_count(lo, hi)
    offsets, rk, rv = t.range(lo, hi)
    assert offsets.dtype == np.uint64 and len(offsets) == len(lo) + 1 and offsets[0] == 0
    for i, (a, b) in enumerate(zip(lob, hib)):
        ka, kb = scalar_key(kd, int(a)), scalar_key(kd, int(b))
        hits = [k for k, ok in zip(order, okeys) if ka <= ok <= kb]
        assert int(counts[i]) == len(hits)
        s, e = int(offsets[i]), int(offsets[i + 1])
        assert [int(k) for k in bits(rk[s:e])] == hits
        assert [int(v) for v in bits(rv[s:e])] == [model[k] for k in hits]
    t.validate()


@pytest.mark.parametrize("policy", POLICIES)
@given(data=st.data())
def test_btree_matches_sorted_model(policy, data):
    kd = data.draw(st.sampled_from(DTYPES), "key dtype")
    vd = data.draw(st.sampled_from(INT_DTYPES if policy == "sum" else DTYPES), "value dtype")
    n = data.draw(st.integers(0, 150))
    kb = data.draw(keys_of(kd, n))
    vb = data.draw(hnp.arrays(bits_dtype(vd), n, elements=elements_bits(vd, 1000)))
    t = tandem.BTree(kb.view(kd), vb.view(vd), on_duplicate=policy)
    model = {}
    apply_batch(model, policy, vd, kb, vb)
    for _ in range(data.draw(st.integers(1, 5))):
        m = data.draw(st.integers(0, 60))
        qb = data.draw(keys_of(kd, m))
        lob, hib = data.draw(keys_of(kd, m // 4)), data.draw(keys_of(kd, m // 4))
        op = data.draw(st.sampled_from(["insert", "erase", "query"]))
        if op == "insert":
            insert_drawn(data, t, model, policy, kd, vd, qb)
        elif op == "erase":
            erase_checked(t, model, kd, qb)
        check(t, model, kd, vd, qb, lob, hib)
    assert "BTree" in repr(t) and f"size={len(model)}" in repr(t)
    assert t.height >= (1 if model else 0)


def test_signed_zeros_and_nans_are_distinct_keys():
    keys = np.array([0.0, -0.0, np.nan, -np.nan, 1.0], dtype=np.float32)
    t = tandem.BTree(keys, np.arange(5, dtype=np.int32))
    assert len(t) == 5
    k, v = t.export()
    np.testing.assert_array_equal(v, [3, 1, 0, 4, 2])  # -NaN, -0.0, +0.0, 1.0, +NaN
    assert t.rank(np.array([0.0], dtype=np.float32))[0] == 2


def test_range_with_no_hits_and_no_queries():
    t = tandem.BTree(np.array([10, 20], dtype=np.uint32), np.array([1, 2], dtype=np.uint32))
    off, k, v = t.range(np.array([], dtype=np.uint32), np.array([], dtype=np.uint32))
    assert list(off) == [0] and len(k) == 0 and len(v) == 0
    off, k, v = t.range(np.array([30, 15], dtype=np.uint32), np.array([5, 16], dtype=np.uint32))
    assert list(off) == [0, 0, 0] and len(k) == 0
    assert list(t.range_count(np.array([30], dtype=np.uint32), np.array([5], dtype=np.uint32))) == [0]
