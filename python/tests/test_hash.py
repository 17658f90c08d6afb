"""HashTable against a dict, under every duplicate policy, over random
sequences of insert / find / erase / clear batches."""

import numpy as np
import pytest

pytest.importorskip("hypothesis", reason="hypothesis is not installed")

from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import tandem
from refs import (DTYPES, INT_DTYPES, KEY_DTYPES, POLICIES, bits, bits_dtype, elements_bits, erase_checked,
                  insert_drawn)


def batch(dtype, n, pool):
    # Keys from a small pool so batches collide with each other and the table.
    return hnp.arrays(bits_dtype(dtype), n, elements=st.one_of(st.integers(0, pool), elements_bits(dtype)))


def check_against(h, model, kd, vd, queries_bits):
    q = queries_bits.view(kd)
    values, found = h.find(q)
    assert found.dtype == np.bool_ and values.dtype == np.dtype(vd)
    for i, k in enumerate(queries_bits):
        k = int(k)
        assert bool(found[i]) == (k in model)
        assert int(bits(values)[i]) == model.get(k, 0)
    assert len(h) == len(model)
    keys, vals = h.export()
    got = dict(zip(map(int, bits(keys)), map(int, bits(vals))))
    assert got == model
    h.validate()


@pytest.mark.parametrize("policy", POLICIES)
@given(data=st.data())
def test_hash_matches_dict(policy, data):
    kd = data.draw(st.sampled_from(KEY_DTYPES), "key dtype")
    vd = data.draw(st.sampled_from(INT_DTYPES if policy == "sum" else DTYPES), "value dtype")
    h = tandem.HashTable(kd, vd, capacity=data.draw(st.integers(0, 64)), on_duplicate=policy)
    model = {}
    for _ in range(data.draw(st.integers(1, 8))):
        op = data.draw(st.sampled_from(["insert", "insert", "erase", "find", "clear"]))
        n = data.draw(st.integers(0, 80))
        kb = data.draw(batch(kd, n, 40))
        if op == "insert":
            insert_drawn(data, h, model, policy, kd, vd, kb)
        elif op == "erase":
            erase_checked(h, model, kd, kb)
        elif op == "clear":
            h.clear()
            model.clear()
        check_against(h, model, kd, vd, kb)
    assert "HashTable" in repr(h) and "cpu" in repr(h) and f"size={len(model)}" in repr(h)
    h.close()


def test_sum_policy_wraps():
    h = tandem.HashTable("int64", "uint32", on_duplicate="sum")
    h.insert(np.array([7, 7], dtype=np.int64), np.array([0xFFFFFFFF, 2], dtype=np.uint32))
    v, f = h.find(np.array([7], dtype=np.int64))
    assert f[0] and v[0] == 1


def test_every_key_value_is_a_key():
    h = tandem.HashTable("uint64", "uint64")
    keys = np.array([0, 2**64 - 1, 2**64 - 2, 1], dtype=np.uint64)
    h.insert(keys, keys)
    v, f = h.find(keys)
    assert f.all() and (v == keys).all()


def test_fixed_capacity_refuses_and_changes_nothing():
    h = tandem.HashTable("uint32", "uint32", capacity=4, fixed_capacity=True)
    h.insert(np.arange(4, dtype=np.uint32), np.arange(4, dtype=np.uint32))
    with pytest.raises(tandem.CapacityError) as e:
        h.insert(np.arange(100, 1100, dtype=np.uint32), np.zeros(1000, dtype=np.uint32))
    assert e.value.status == "TDM_ERR_CAPACITY" and str(e.value)
    assert len(h) == 4
    k, _ = h.export()
    assert sorted(k) == [0, 1, 2, 3]
