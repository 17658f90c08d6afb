"""python -m tandem.bench: tandem from Python against what Python users have.

Writes the CSV of tandem-bench (same header; ``impl`` names the peer) and
prints a table. Rows:
  sort, argsort       tandem vs np.sort (in place) and np.argsort(kind="stable");
                      on CUDA vs cupy.sort / torch.sort
  hash insert/find    tandem vs a dict built from the arrays, pandas
                      Index.get_indexer (when installed); group_sum: an insert
                      with on_duplicate="sum" vs np.unique + np.bincount
  btree find/rank     tandem vs np.searchsorted over the sorted keys
  overhead            tandem sort / hash find / B-tree rank at 1 and 1,000
                      elements (per-call time), and the binding against the
                      bare C call (tandem-c) for a sort of --n keys
  ops                 unique(return_counts) vs np.unique, isin vs np.isin
                      (keys spread wide, and of a small integer range:
                      the _range rows), searchsorted vs np.searchsorted,
                      factorize vs pandas.factorize, group_reduce(sum)
                      vs groupby().sum(), join(inner) vs pandas.merge;
                      each also as the bare C
                      call (tandem-c: outputs malloc'd per call, as a C caller
                      would; searchsorted: when the sorted keys are distinct);
                      on CUDA (device arrays) unique, isin,
                      searchsorted and sort vs CuPy and PyTorch (both when
                      installed), every peer's result compared with tandem's
                      (WRONG RESULT: exit status 4). A ratio table follows.
Times are medians of --reps runs after one warm-up; inputs come from a fixed
seed; each timed region holds the one call (inputs are prepared outside).
--clock cpu times with the process's CPU time (all threads) instead of the
wall clock, on both sides of the tandem-c rows; --no-peers leaves out the
numpy / pandas / CuPy / PyTorch rows of ops (the binding against the bare C
call alone, in minutes on a loaded machine).
"""

import argparse
import csv
import statistics
import sys
import time

import numpy as np

import tandem
from tandem import _core

HEADER = ["structure", "operation", "impl", "backend", "key_type", "value_type", "n", "queries", "threads", "reps",
          "median_mops", "min_mops", "max_mops"]
SHORT = {"uint32": "u32", "uint64": "u64", "int32": "i32", "int64": "i64", "float32": "f32", "float64": "f64"}


class Runner:
    def __init__(self, args):
        self.args, self.rows, self.wrong = args, [], []
        self.threads = args.threads
        self.cpu_clock = args.clock == "cpu"
        self.clock = time.process_time if self.cpu_clock else time.perf_counter
        self.cuda = args.backend == "cuda"
        self.ctx = tandem.Context(args.backend, threads=args.threads)
        self.xp, self.sync = np, (lambda: None)
        if self.cuda:
            try:
                import cupy
                self.xp, self.sync = cupy, cupy.cuda.runtime.deviceSynchronize
            except ImportError:
                import torch
                self.xp, self.sync = _TorchNp(torch), torch.cuda.synchronize

    def time(self, fn, setup=lambda: None, reps=None):
        """Seconds of fn(setup()) for each rep, after one warm-up."""
        out = []
        for i in range((reps or self.args.reps) + 1):
            state = setup()
            self.sync()
            t0 = self.clock()
            fn(state)
            self.sync()
            if i:
                out.append(self.clock() - t0)
        return out

    def row(self, structure, op, impl, key, value, n, queries, secs, elems=None):
        elems = elems or queries or n
        mops = sorted(elems / s / 1e6 for s in secs)
        r = dict(structure=structure, operation=op, impl=impl, backend=self.args.backend, key_type=SHORT[key],
                 value_type=SHORT.get(value, ""), n=n, queries=queries or "", threads=self.threads,
                 reps=len(secs), median_mops=f"{statistics.median(mops):.3f}", min_mops=f"{mops[0]:.3f}",
                 max_mops=f"{mops[-1]:.3f}")
        self.rows.append(r)
        us = statistics.median(secs) * 1e6
        print(f"{structure:6} {op:12} {impl:24} {r['key_type']:4} {r['value_type']:4} n={n:<10} "
              f"q={queries or '':<9} {float(r['median_mops']):10.2f} M/s  {us:12.1f} us/call", flush=True)

    def dev(self, a):
        return self.xp.asarray(a) if self.cuda else a


class _TorchNp:
    """The few numpy-like calls the benchmark makes, for torch on CUDA."""

    def __init__(self, torch):
        self.t = torch

    def asarray(self, a):
        return self.t.from_numpy(np.ascontiguousarray(a)).cuda()


def keys_for(dtype, n, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(n).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def bench_sort(r, dtype, n):
    a = r.dev(keys_for(dtype, n, 1))
    copy = (lambda: a.copy()) if hasattr(a, "copy") else (lambda: a.clone())
    r.row("sort", "sort", "tandem", dtype, "", n, 0,
          r.time(lambda x: tandem.sort(x, inplace=True, ctx=r.ctx), copy))
    if not r.cuda:
        r.row("sort", "sort", "tandem-c", dtype, "", n, 0, _core.time_c_sort(r.ctx._c, a, r.args.reps, 0, r.cpu_clock))
        r.row("sort", "sort", "np.sort", dtype, "", n, 0, r.time(lambda x: x.sort(), copy))
        r.row("sort", "argsort", "np.argsort(stable)", dtype, "", n, 0,
              r.time(lambda _: np.argsort(a, kind="stable")))
    else:
        name = "cupy.sort" if r.xp is not np and hasattr(r.xp, "sort") else "torch.sort"
        peer = r.xp.sort if name == "cupy.sort" else (lambda x: r.xp.t.sort(x, stable=True))
        r.row("sort", "sort", name, dtype, "", n, 0, r.time(lambda _: peer(a)))
    r.row("sort", "argsort", "tandem", dtype, "", n, 0, r.time(lambda _: tandem.argsort(a, ctx=r.ctx)))


def bench_hash(r, dtype, n, q):
    keys = keys_for(dtype, n, 2)
    vals = np.arange(n, dtype=np.uint64)
    hits = keys[np.random.default_rng(3).integers(0, n, q)]
    dk, dv, dq = r.dev(keys), r.dev(vals), r.dev(hits)

    def fresh():
        return tandem.HashTable(dtype, "uint64", capacity=n, ctx=r.ctx)

    r.row("hash", "insert", "tandem", dtype, "uint64", n, 0, r.time(lambda h: h.insert(dk, dv), fresh))
    h = fresh()
    h.insert(dk, dv)
    r.row("hash", "find_hit", "tandem", dtype, "uint64", n, q, r.time(lambda _: h.find(dq)))
    groups = keys_for(dtype, n, 4) % max(n // 10, 1) if np.dtype(dtype).kind != "f" else keys
    dg = r.dev(groups)
    r.row("hash", "group_sum", "tandem", dtype, "uint64", n, 0,
          r.time(lambda t: t.insert(dg, dv),
                 lambda: tandem.HashTable(dtype, "uint64", capacity=n // 10, on_duplicate="sum", ctx=r.ctx)))
    if r.cuda:
        return
    r.row("hash", "insert", "dict", dtype, "uint64", n, 0, r.time(lambda _: dict(zip(keys.tolist(), vals.tolist()))))
    d = dict(zip(keys.tolist(), vals.tolist()))
    r.row("hash", "find_hit", "dict", dtype, "uint64", n, q, r.time(lambda _: [d.get(k) for k in hits.tolist()]))
    r.row("hash", "group_sum", "np.unique+bincount", dtype, "uint64", n, 0,
          r.time(lambda _: np.bincount(np.unique(groups, return_inverse=True)[1], weights=vals)))
    try:
        import pandas as pd
    except ImportError:
        print("(pandas not installed: no pandas rows)", file=sys.stderr)
        return
    r.row("hash", "insert", "pandas.Index", dtype, "uint64", n, 0,
          r.time(lambda _: pd.Index(keys).get_indexer(hits[:1])))
    idx = pd.Index(keys)
    idx.get_indexer(hits[:1])
    r.row("hash", "find_hit", "pandas.get_indexer", dtype, "uint64", n, q, r.time(lambda _: idx.get_indexer(hits)))


def bench_btree(r, dtype, n, q):
    keys = keys_for(dtype, n, 5)
    vals = np.arange(n, dtype=np.uint64)
    rng = np.random.default_rng(6)
    hits = keys[rng.integers(0, n, q)]
    anyq = keys_for(dtype, q, 7)
    t = tandem.BTree(r.dev(keys), r.dev(vals), ctx=r.ctx)
    dh, da = r.dev(hits), r.dev(anyq)
    r.row("btree", "build", "tandem", dtype, "uint64", n, 0,
          r.time(lambda _: tandem.BTree(r.dev(keys), r.dev(vals), ctx=r.ctx).close()))
    r.row("btree", "find_hit", "tandem", dtype, "uint64", n, q, r.time(lambda _: t.find(dh)))
    r.row("btree", "rank", "tandem", dtype, "uint64", n, q, r.time(lambda _: t.rank(da)))
    if not r.cuda:
        s = np.sort(keys)
        r.row("btree", "rank", "np.searchsorted", dtype, "uint64", n, q, r.time(lambda _: np.searchsorted(s, anyq)))


def bench_overhead(r, dtype):
    reps = max(r.args.reps, 200)  # tiny calls: many reps for a stable median
    for m in (1, 1000):
        a = r.dev(keys_for(dtype, m, 8))
        copy = (lambda: a.copy()) if hasattr(a, "copy") else (lambda: a.clone())
        r.row("sort", "sort", "tandem", dtype, "", m, 0, r.time(lambda x: tandem.sort(x, inplace=True, ctx=r.ctx), copy, reps))
        h = tandem.HashTable(dtype, "uint64", ctx=r.ctx)
        h.insert(a, r.dev(np.arange(m, dtype=np.uint64)))
        r.row("hash", "find_hit", "tandem", dtype, "uint64", m, m, r.time(lambda _: h.find(a), reps=reps))
        t = tandem.BTree(a, r.dev(np.arange(m, dtype=np.uint64)), ctx=r.ctx)
        r.row("btree", "rank", "tandem", dtype, "uint64", m, m, r.time(lambda _: t.rank(a), reps=reps))


def _distinct(dtype, n, d, seed):
    """n keys drawn from d distinct random ones."""
    pool = keys_for(dtype, d, seed)
    return pool[np.random.default_rng(seed + 1).integers(0, d, n)]


def bench_ops(r, dtype, n):
    """The data operations of tandem/ops.h against numpy and pandas (CuPy /
    PyTorch on CUDA), n rows, 10 % as many distinct keys."""
    d = max(n // 10, 1)
    keys = _distinct(dtype, n, d, 11)
    setk = keys_for(dtype, d, 12)
    rng = np.random.default_rng(13)  # half the queries hit
    queries = np.concatenate([setk[rng.integers(0, d, n // 2)], keys_for(dtype, n - n // 2, 13)])
    rng.shuffle(queries)
    vals = np.random.default_rng(14).standard_normal(n)
    perm = np.random.default_rng(15).permutation(n).astype(dtype) if np.dtype(dtype).kind != "f" else None
    left = keys_for(dtype, n, 16) if perm is None else perm
    right = left[np.random.default_rng(17).permutation(n)]
    srt = np.sort(keys_for(dtype, n, 18))
    dk, dq, ds, dv, dl, dr, dsrt = (r.dev(x) for x in (keys, queries, setk, vals, left, right, srt))
    c, reps = r.ctx, r.args.reps

    def trio(op, tandem_fn, c_op, c_args, peers):
        if c_op and not r.cuda:
            # Alternating, one rep each, so a shared machine's load hits both alike.
            # The result is freed after the clock stops, as time_c_op frees
            # its outputs after its own clock.
            py, bare = [], []
            for i in range(reps + 1):  # the first round warms up
                t0 = r.clock()
                result = tandem_fn()
                t = r.clock() - t0
                del result
                b = _core.time_c_op(c._c, c_op, *c_args, 1, r.cpu_clock)
                if i:
                    py, bare = py + [t], bare + b
            r.row("ops", op, "tandem", dtype, "", n, 0, py)
            r.row("ops", op, "tandem-c", dtype, "", n, 0, bare)
        else:
            r.row("ops", op, "tandem", dtype, "", n, 0, r.time(lambda _: tandem_fn()))
        for name, fn in peers if r.args.peers else ():
            r.row("ops", op, name, dtype, "", n, 0, r.time(lambda _: fn()))

    eq = _core.EQ_NUMERIC if np.dtype(dtype).kind == "f" else 0
    pd = None
    if not r.cuda:
        try:
            import pandas as pd
        except ImportError:
            print("(pandas not installed: no pandas rows)", file=sys.stderr)
    if r.cuda:
        bench_ops_cuda(r, dtype, n, dict(keys=keys, queries=queries, setk=setk, srt=srt, sortk=keys_for(dtype, n, 19)),
                       dict(keys=dk, values=dv, left=dl, right=dr, queries=dq, setk=ds, srt=dsrt))
        return
    trio("unique_counts", lambda: tandem.unique(dk, return_counts=True, ctx=c), "unique_counts", (keys, keys, eq),
         [("np.unique", lambda: np.unique(keys, return_counts=True))])
    trio("isin", lambda: tandem.isin(dq, ds, ctx=c), "isin", (queries, setk, eq),
         [("np.isin", lambda: np.isin(queries, setk))])
    # Integer keys of a small range, where both sides count or look up in a
    # table indexed by the key (tandem's dense method, numpy's table kind of
    # isin): n keys in [0, d), a set of d keys in [0, 2d).
    if np.dtype(dtype).kind in "iu" and np.iinfo(dtype).max >= 2 * d:
        nk = np.random.default_rng(20).integers(0, d, n).astype(dtype)
        ns = np.random.default_rng(21).integers(0, 2 * d, d).astype(dtype)
        trio("unique_counts_range", lambda: tandem.unique(nk, return_counts=True, ctx=c), "unique_counts",
             (nk, nk, eq), [("np.unique", lambda: np.unique(nk, return_counts=True))])
        trio("isin_range", lambda: tandem.isin(nk, ns, ctx=c), "isin", (nk, ns, eq),
             [("np.isin", lambda: np.isin(nk, ns))])
    # The bare C searchsorted is the duplicate-free path (a B+ tree over a's
    # keys, then ranks); 32-bit keys at 10^7 draw some duplicates, for which
    # the binding runs more (tdm_unique and a gather) than that call.
    distinct = srt.shape[0] < 2 or bool((srt[1:] != srt[:-1]).all())
    trio("searchsorted", lambda: tandem.searchsorted(dsrt, dq, ctx=c), "searchsorted" if distinct else None,
         (srt, queries, 0), [("np.searchsorted", lambda: np.searchsorted(srt, queries))])
    fl = eq | _core.ORDER_FIRST_SEEN
    trio("factorize", lambda: tandem.factorize(keys, ctx=c), "factorize", (keys, keys, fl),
         [("pandas.factorize", lambda: pd.factorize(keys))] if pd else [])
    frame = pd.DataFrame({"k": keys, "v": vals}) if pd else None
    trio("group_sum", lambda: tandem.group_reduce(keys, vals, "sum", ctx=c), "group_sum", (keys, vals, eq),
         [("pandas.groupby.sum", lambda: frame.groupby("k")["v"].sum())] if pd else [])
    lf = pd.DataFrame({"k": left, "a": np.arange(n)}) if pd else None
    rf = pd.DataFrame({"k": right, "b": np.arange(n)}) if pd else None
    trio("join_inner", lambda: tandem.join(left, right, ctx=c), "join_inner", (left, right, eq),
         [("pandas.merge", lambda: pd.merge(lf, rf, on="k"))] if pd else [])


def _cuda_libs():
    """{name: (asarray, module)} of CuPy and PyTorch where each sees a CUDA
    device; what is missing is said once."""
    libs = {}
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            libs["cupy"] = (cupy.asarray, cupy)
    except Exception as e:  # not installed, or no device it can use
        print(f"(no CuPy rows: {type(e).__name__}: {e})", file=sys.stderr)
    try:
        import torch
        if torch.cuda.is_available():
            libs["torch"] = (lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda(), torch)
        else:
            print("(no PyTorch rows: torch.cuda.is_available() is False)", file=sys.stderr)
    except Exception as e:
        print(f"(no PyTorch rows: {type(e).__name__}: {e})", file=sys.stderr)
    return libs


def _host(x):
    """A result (or a tuple of them) as numpy arrays, from any device array."""
    if isinstance(x, (tuple, list)):
        return [_host(y) for y in x]
    if hasattr(x, "get"):  # CuPy
        return x.get()
    if hasattr(x, "cpu"):  # PyTorch
        return x.cpu().numpy()
    return np.asarray(x)


def _same(a, b):
    """Equal results: the same values in the same order (integer outputs of
    different widths compared as int64)."""
    a, b = _host(a), _host(b)
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "iub" and b.dtype.kind in "iub" and a.dtype != b.dtype:
        return np.array_equal(a.astype(np.int64), b.astype(np.int64))
    return np.array_equal(a, b)


def bench_ops_cuda(r, dtype, n, host, dev):
    """The data operations on device arrays beside what a data user would
    otherwise call on a GPU: CuPy (unique, isin, searchsorted, sort) and
    PyTorch (torch.unique, torch.isin, torch.searchsorted, torch.sort), each
    on its own device copy of the same inputs. Every peer's result is
    compared with tandem's before it is timed: a difference prints WRONG
    RESULT and makes the run fail. A call a library cannot make for this
    dtype (PyTorch has few uint64 kernels) is said and left out."""
    c = r.ctx
    dk, dv, dl, dr, dq, ds, dsrt = (dev[k] for k in ("keys", "values", "left", "right", "queries", "setk", "srt"))
    dsort = r.dev(host["sortk"])
    sort_copy = (lambda: dsort.copy()) if hasattr(dsort, "copy") else (lambda: dsort.clone())
    libs = _cuda_libs() if r.args.peers else {}
    ops = [
        ("unique_counts", lambda: tandem.unique(dk, return_counts=True, ctx=c), ("keys",),
         {"cupy": lambda m, k: m.unique(k, return_counts=True),
          "torch": lambda m, k: m.unique(k, sorted=True, return_counts=True)}),
        ("isin", lambda: tandem.isin(dq, ds, ctx=c), ("queries", "setk"),
         {"cupy": lambda m, q, s: m.isin(q, s), "torch": lambda m, q, s: m.isin(q, s)}),
        ("searchsorted", lambda: tandem.searchsorted(dsrt, dq, ctx=c), ("srt", "queries"),
         {"cupy": lambda m, a, v: m.searchsorted(a, v), "torch": lambda m, a, v: m.searchsorted(a, v)}),
        ("sort", lambda: tandem.sort(dsort, ctx=c), ("sortk",),
         {"cupy": lambda m, k: m.sort(k), "torch": lambda m, k: m.sort(k, stable=True).values}),
    ]
    for op, fn, inputs, peers in ops:
        want = fn()
        if op == "sort":  # in place, as a user sorting a column would; the copy is outside the clock
            r.row("ops", op, "tandem", dtype, "", n, 0,
                  r.time(lambda x: tandem.sort(x, inplace=True, ctx=c), sort_copy))
        else:
            r.row("ops", op, "tandem", dtype, "", n, 0, r.time(lambda _: fn()))
        for lib, (asarray, mod) in libs.items():
            args = [asarray(host[k]) for k in inputs]
            call = peers[lib]
            try:
                got = call(mod, *args)
            except Exception as e:  # e.g. a dtype the library has no kernel for
                print(f"({lib}.{op} not measured for {dtype}: {type(e).__name__}: {str(e)[:120]})", file=sys.stderr)
                continue
            if not _same(want, got):
                r.wrong.append(f"{lib} {op} ({dtype}, n={n}) differs from tandem's result")
                print(f"WRONG RESULT: {r.wrong[-1]}", flush=True)
            r.row("ops", op, f"{lib}.{op.split('_')[0]}", dtype, "", n, 0, r.time(lambda _: call(mod, *args)))
            del args, got
    r.row("ops", "factorize", "tandem", dtype, "", n, 0, r.time(lambda _: tandem.factorize(dk, ctx=c)))
    r.row("ops", "group_sum", "tandem", dtype, "", n, 0, r.time(lambda _: tandem.group_reduce(dk, dv, "sum", ctx=c)))
    r.row("ops", "join_inner", "tandem", dtype, "", n, 0, r.time(lambda _: tandem.join(dl, dr, ctx=c)))


def ratios(rows):
    """Per (operation, n): tandem's speed over each other row's (peer speedup,
    or tandem-c's, the binding's cost)."""
    by = {}
    for row in rows:
        if row["structure"] == "ops":
            by.setdefault((row["operation"], row["key_type"], row["n"]), {})[row["impl"]] = float(row["median_mops"])
    lines = []
    for (op, key, n), impls in by.items():
        t = impls.get("tandem")
        for impl, mops in impls.items():
            if impl != "tandem" and t and mops:
                what = "binding / bare C (speed)" if impl == "tandem-c" else f"tandem / {impl} (speed)"
                lines.append(f"{op:14} {key:4} n={n:<10} {what:34} {t / mops:7.2f}x")
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tandem.bench", description=__doc__.split("\n")[0])
    p.add_argument("what", nargs="?", default="all", choices=["all", "sort", "hash", "btree", "overhead", "ops"])
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--type", default="uint64", help="key dtype: uint32, uint64, int32, int64 (float for sort/btree)")
    p.add_argument("--n", type=float, default=1e7, help="keys (default 1e7)")
    p.add_argument("--queries", type=float, default=None, help="queries (default: n)")
    p.add_argument("--threads", type=int, default=0, help="CPU threads for tandem (0: all cores)")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--clock", default="wall", choices=["wall", "cpu"],
                   help="wall clock, or the process's CPU time over all threads (for a loaded machine)")
    p.add_argument("--no-peers", dest="peers", action="store_false", help="ops: leave out the numpy/pandas rows")
    p.add_argument("--csv", help="write the rows to this CSV file")
    args = p.parse_args(argv)
    n, q = int(args.n), int(args.queries or args.n)
    dtype = np.dtype(args.type).name
    try:
        r = Runner(args)
    except tandem.NoDevice as e:
        print(f"skipped: --backend {args.backend} needs a CUDA device ({e})")
        return 0
    print(f"tandem {tandem.__version__}, backend {r.ctx.backend}, numpy {np.__version__}, clock {args.clock}",
          flush=True)
    if args.what in ("all", "sort"):
        bench_sort(r, dtype, n)
    if args.what in ("all", "hash") and np.dtype(dtype).kind in "iu":
        bench_hash(r, dtype, n, q)
    if args.what in ("all", "btree"):
        bench_btree(r, dtype, n, q)
    if args.what in ("all", "overhead"):
        bench_overhead(r, dtype)
    if args.what in ("all", "ops"):
        bench_ops(r, dtype, n)
        lines = ratios(r.rows)
        if lines:
            print("speed ratios (above 1: tandem faster; binding / bare C: 1.00 is no overhead, below 1 the binding is slower)")
            print("\n".join(lines))
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, HEADER)
            w.writeheader()
            w.writerows(r.rows)
    if r.wrong:
        print(f"{len(r.wrong)} WRONG RESULT(s)", file=sys.stderr)
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main())
