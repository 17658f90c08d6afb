#!/usr/bin/python3
"""Turns tandem-bench CSV files into Markdown tables for docs/results.md.

usage: results_table.py CSV...

One table per structure; each tandem row shows its ratio to the fastest peer
of the same operation, key/value types and n measured in the same run (a
peer's own rows show its rate only).
"""
import csv
import sys
from collections import defaultdict


def main():
    rows = []
    for path in sys.argv[1:]:
        with open(path, newline="") as f:
            rows.extend(csv.DictReader(f))
    by_struct = defaultdict(list)
    for r in rows:
        by_struct[r["structure"]].append(r)
    for structure, rs in by_struct.items():
        peers = defaultdict(float)
        for r in rs:
            if r["impl"] != "tandem" and not r["impl"].startswith("tandem("):
                key = (r["operation"], r["key_type"], r["value_type"], r["n"], r["backend"])
                peers[key] = max(peers[key], float(r["median_mops"]))
        print(f"\n### {structure}\n")
        print("| operation | impl | backend | key | value | n | threads | median | min | max | vs best peer |")
        print("|---|---|---|---|---|---:|---:|---:|---:|---:|---:|")
        for r in rs:
            key = (r["operation"], r["key_type"], r["value_type"], r["n"], r["backend"])
            ratio = ""
            if r["impl"] == "tandem" and peers.get(key):
                ratio = f'{float(r["median_mops"]) / peers[key]:.2f}x'
            print(
                f'| {r["operation"]} | {r["impl"]} | {r["backend"]} | {r["key_type"]} | {r["value_type"] or "-"} '
                f'| {int(r["n"]):,} | {r["threads"]} | {float(r["median_mops"]):.1f} | {float(r["min_mops"]):.1f} '
                f'| {float(r["max_mops"]):.1f} | {ratio} |'
            )


if __name__ == "__main__":
    main()
