"""Threads sharing one structure: concurrent reads agree with a single-thread
run; a writer beside readers is serialised, never torn; close() waits for
running calls."""

import threading

import numpy as np

import tandem


def run_threads(fns):
    errors = []

    def wrap(f):
        try:
            f()
        except BaseException as e:  # reported below, with the thread's failure
            errors.append(e)

    ts = [threading.Thread(target=wrap, args=(f,)) for f in fns]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors


def test_concurrent_reads_on_one_tree_and_table():
    rng = np.random.default_rng(1)
    keys = rng.permutation(200_000).astype(np.uint64) * 3
    values = keys + 1
    t = tandem.BTree(keys, values)
    h = tandem.HashTable("uint64", "uint64", capacity=len(keys))
    h.insert(keys, values)
    q = rng.integers(0, 600_000, 100_000, dtype=np.uint64)
    want_rank = t.rank(q)
    want_vals, want_found = h.find(q)

    def reader():
        for _ in range(5):
            np.testing.assert_array_equal(t.rank(q), want_rank)
            v, f = h.find(q)
            np.testing.assert_array_equal(v, want_vals)
            np.testing.assert_array_equal(f, want_found)

    run_threads([reader] * 4)


def test_writer_beside_readers_is_serialised():
    h = tandem.HashTable("int64", "int64", on_duplicate="sum")
    keys = np.arange(1000, dtype=np.int64)
    h.insert(keys, np.zeros(1000, dtype=np.int64))
    batches = 50

    def writer():
        for _ in range(batches):
            h.insert(keys, np.ones(1000, dtype=np.int64))

    def reader():
        for _ in range(batches):
            v, f = h.find(keys)
            assert f.all()
            assert (v == v[0]).all()  # a batch is applied whole or not at all

    run_threads([writer, reader, reader])
    v, _ = h.find(keys)
    assert (v == batches).all()
    h.validate()


def test_close_while_others_read():
    t = tandem.BTree(np.arange(100_000, dtype=np.uint32), np.arange(100_000, dtype=np.uint32))
    q = np.arange(100_000, dtype=np.uint32)

    def reader():
        for _ in range(20):
            try:
                assert t.rank(q)[-1] == 99_999
            except tandem.InvalidArgument as e:
                assert "closed" in str(e)
                return

    def closer():
        t.close()

    run_threads([reader, reader, closer])
    assert t.closed


def test_the_gil_is_released_during_a_call():
    # While one thread is inside a long tandem call, another thread keeps
    # running Python code. If the call held the GIL, no tick of the other
    # thread could fall inside the call (margins cover the moments around
    # it, when the caller does hold the GIL).
    import sys
    import time

    keys = np.random.default_rng(2).integers(0, 2**63, 4_000_000, dtype=np.uint64)
    ctx = tandem.Context("cpu", threads=1)
    window = {}

    def worker():
        window["start"] = time.perf_counter()
        tandem.argsort(keys, ctx=ctx)
        window["end"] = time.perf_counter()

    old = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    try:
        ticks = []
        t = threading.Thread(target=worker)
        t.start()
        while t.is_alive():
            ticks.append(time.perf_counter())
            time.sleep(0)
        t.join()
    finally:
        sys.setswitchinterval(old)
    lo, hi = window["start"] + 0.01, window["end"] - 0.01
    assert hi > lo, "the call was too short to tell"
    assert any(lo < x < hi for x in ticks)
