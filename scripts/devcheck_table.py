#!/usr/bin/env python3
"""The compact table device-check prints last: every GPU figure of the
tandem-bench CSVs given, with its ratio to its peer (the same operation, key
type, n and batch size done by raw CUB, the binary-search kernel or the
linear-probing table, cuco::static_map at the same load, and from the
Python rows CuPy and PyTorch; where several did it, the fastest) and to the
device ceiling (copy bandwidth for sorts, random 8-byte gather rate for
finds).

usage: scripts/devcheck_table.py FILE.csv ...   (standard library only)
"""
import csv
import sys

PEERS = {"cub", "binary_search", "linear_probing", "cuco"}


def is_peer(impl):
    """A peer's row (cuco at load 0.5 is not: tandem's rows are at 0.8)."""
    return impl in PEERS or impl.startswith(("cupy.", "torch."))


def main(paths):
    rows = []
    for p in paths:
        try:
            with open(p, newline="") as f:
                rows += [r for r in csv.DictReader(f) if r.get("backend") == "cuda"]
        except OSError as e:
            print(f"({p}: {e})")
    if not rows:
        print("(no GPU figures)")
        return 0
    for r in rows:
        r["rate"] = float(r["median_mops"])
    limits = [r for r in rows if r["structure"] == "limits"]
    memcpy = [r for r in limits if r["operation"] == "memcpy_gbps"]
    gathers = {r["n"]: r for r in limits if r["operation"] == "gather"}

    def peer_of(r):
        same = [p for p in rows if is_peer(p["impl"]) and all(
            p[k] == r[k] for k in ("structure", "operation", "key_type", "value_type", "n", "queries"))]
        return max(same, key=lambda p: p["rate"]) if same else None

    def ceiling_of(r):
        """(M/s the ceiling allows, what it is), or None."""
        if r["structure"] == "sort" and memcpy:
            gbps = max(m["rate"] for m in memcpy)
            kb = 4 if r["key_type"] in ("u32", "i32", "f32") else 8
            eb = kb + (8 if r["operation"] in ("sort_pairs", "argsort") else 0)
            # one read and one write of every element: a copy of the data
            return gbps * 1e3 / eb, "copy"
        if r["operation"].startswith("find") and gathers:
            # the gather over the table of this benchmark's size: hash tables
            # (16-byte slots) and B-trees are measured with their own row
            g = list(gathers.values())
            best = min(g, key=lambda x: abs(int(x["n"]) * 8 - int(r["n"]) * 16))
            return best["rate"], "gather"
        return None

    print(f"{'structure':<9} {'operation':<12} {'impl':<22} {'key':<4} {'n':>10} {'batch':>9} "
          f"{'M/s':>10} {'vs peer':>14} {'vs ceiling':>16}")
    for r in rows:
        batch = r["queries"] if r["queries"] != "0" else r["n"]
        unit = "GB/s" if r["operation"] == "memcpy_gbps" else "M/s"
        peer = "" if is_peer(r["impl"]) or r["structure"] == "limits" else "-"
        ceil = ""
        if r["impl"].startswith("tandem") or is_peer(r["impl"]):
            p = peer_of(r) if r["impl"].startswith("tandem") else None
            if p:
                peer = f"{r['rate'] / p['rate']:.2f}x {p['impl'][:8]}" if p["rate"] > 0 else "-"
            c = ceiling_of(r)
            ceil = f"{100 * r['rate'] / c[0]:.0f}% {c[1]}" if c and c[0] > 0 else "-"
        rate = f"{r['rate']:.1f}" + ("G" if unit == "GB/s" else "")
        print(f"{r['structure']:<9} {r['operation']:<12} {r['impl'][:22]:<22} {r['key_type']:<4} {r['n']:>10} "
              f"{batch:>9} {rate:>10} {peer:>14} {ceil:>16}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
