#!/usr/bin/python3
"""Turns tandem-bench CSV files into the Markdown tables of the docs.

usage: results_table.py CSV...            print the tables of these CSV files
       results_table.py --write [ROOT]    regenerate every generated block
       results_table.py --check [ROOT]    exit 1 naming each stale block

One table per structure; each tandem row shows its ratio to the fastest peer
of the same operation, key/value types, n and queries measured in the same
run (a peer's own rows show its rate only; bounds such as
tdm_sort_pairs+pass and the machine's ceilings, structure "limits", are shown
but are not peers).

Generated blocks. README.md and docs/*.md may hold blocks between
  <!-- generated: results_table.py KIND MACHINE -->
  <!-- end generated -->
whose text comes from docs/data/<machine>/: every *.csv file there (in name
order, as tandem-bench --csv writes them) and meta.json (the machine, its
cores, the date and the commands that produced the CSV files). KIND is
"tables" (the machine's full tables, for docs/results.md), "headline" (the
README's short table: sort, sort_pairs, hash insert and find, B-tree find and
build at n = 10^7, tandem at 1 and 2 threads and the best peer) or "cost"
(the GPU cost meter's table of docs/gpu-cost.md, from the snapshot of `make
cuda-emu-cost` in docs/data/cost-meter/; no meta.json). --write
rewrites the blocks from the data; --check compares them and fails, naming
the file, the line and the block, when one differs. ROOT defaults to the
folder above this script. scripts/check-docs.py runs the check.
"""
import csv
import glob
import json
import os
import re
import sys
from collections import defaultdict

# Rows shown but never taken as the peer: bounds and ceilings, not rivals.
NOT_PEERS = {"tdm_sort_pairs+pass", "vqsort-halves"}
BEGIN = re.compile(r"^<!-- generated: results_table\.py (\w+) ([\w.-]+) -->$")
END = "<!-- end generated -->"
# The README's headline rows: label, structure, operation, key, value, queries (None: any).
HEADLINE = [
    ("sort u32 keys", "sort", "sort", "u32", "", None),
    ("sort u64 keys", "sort", "sort", "u64", "", None),
    ("sort_pairs u64 + u64", "sort", "sort_pairs", "u64", "u64", None),
    ("hash insert (capacity n)", "hash", "insert", "u64", "u64", "n"),
    ("hash find, all hits", "hash", "find_hit", "u64", "u64", None),
    ("B-tree find, 10^7 queries", "btree", "find_hit", "u64", "u64", None),
    ("B-tree build from unsorted keys", "btree", "build", "u64", "u64", None),
]
HEADLINE_N = "10000000"


def is_tandem(impl):
    return impl == "tandem" or impl.startswith("tandem(")


def is_peer(r):
    return not is_tandem(r["impl"]) and r["impl"] not in NOT_PEERS and r["structure"] != "limits"


def peer_key(r):
    return (r["operation"], r["key_type"], r["value_type"], r["n"], r.get("queries", ""), r["backend"])


def read_csvs(paths):
    rows = []
    for path in paths:
        with open(path, newline="") as f:
            rows.extend(csv.DictReader(f))
    return rows


def tables(rows):
    """The Markdown tables of rows, one per structure, as a list of lines."""
    by_struct = defaultdict(list)
    for r in rows:
        by_struct[r["structure"]].append(r)
    out = []
    for structure, rs in by_struct.items():
        peers = defaultdict(float)
        for r in rs:
            if is_peer(r):
                peers[peer_key(r)] = max(peers[peer_key(r)], float(r["median_mops"]))
        out += ["", f"### {structure}", ""]
        out.append("| operation | impl | backend | key | value | n | threads | median | min | max | vs best peer |")
        out.append("|---|---|---|---|---|---:|---:|---:|---:|---:|---:|")
        for r in rs:
            ratio = ""
            if is_tandem(r["impl"]) and peers.get(peer_key(r)):
                ratio = f'{float(r["median_mops"]) / peers[peer_key(r)]:.2f}x'
            out.append(
                f'| {r["operation"]} | {r["impl"]} | {r["backend"]} | {r["key_type"]} | {r["value_type"] or "-"} '
                f'| {int(r["n"]):,} | {r["threads"]} | {float(r["median_mops"]):.1f} | {float(r["min_mops"]):.1f} '
                f'| {float(r["max_mops"]):.1f} | {ratio} |'
            )
    return out


def machine_data(root, machine):
    folder = os.path.join(root, "docs", "data", machine)
    meta = {}
    if os.path.isfile(os.path.join(folder, "meta.json")):
        with open(os.path.join(folder, "meta.json")) as f:
            meta = json.load(f)
    return meta, read_csvs(sorted(glob.glob(os.path.join(folder, "*.csv"))))


def block_tables(meta, rows, machine):
    out = [f'## {meta["machine"]}, {meta["cores"]} cores ({meta["date"]})', ""]
    out.append(f'CPU: {meta["cpu_model"]}; {meta["system"]}; {meta["conditions"]}.')
    if meta.get("ceilings"):
        out.append(f'Ceilings: {meta["ceilings"]}.')
    out += [f"Data: `docs/data/{machine}/`. {meta['source']}", "", "```"] + meta["commands"] + ["```"]
    notes = meta.get("recovery", []) + meta.get("notes", [])
    if notes:
        out.append("")
        out += [f"- {note}" for note in notes]
    return out + tables(rows)


def fmt_rate(x):
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}"


def block_headline(meta, rows, machine):
    out = [f'Measured {meta["date"]} (the library as it was that day) on {meta["machine"]} '
           f'({meta["cores"]} cores), medians of {rows[0]["reps"] if rows else "?"} runs against peers '
           f"measured in the same run; the full tables, the commands and later runs are in "
           f"[docs/results.md](docs/results.md) (data: `docs/data/{machine}/`).", ""]
    out.append("| operation (n = 10^7, u64 unless noted) | tandem 1 thread | tandem 2 threads | best peer (1 thread) |")
    out.append("|---|---:|---:|---|")
    for label, structure, op, key, value, queries in HEADLINE:
        sel = [r for r in rows if r["structure"] == structure and r["operation"] == op and r["key_type"] == key
               and r["value_type"] == value and r["n"] == HEADLINE_N and r["backend"] == "cpu"
               and (queries is None or r.get("queries") == HEADLINE_N)]
        if not sel:
            continue
        cells = []
        for t in ("1", "2"):
            m = [float(r["median_mops"]) for r in sel if is_tandem(r["impl"]) and r["threads"] == t]
            cells.append(f"{fmt_rate(max(m))} M/s" if m else "-")
        peers = [r for r in sel if is_peer(r) and r["threads"] == "1"]
        best = max(peers, key=lambda r: float(r["median_mops"])) if peers else None
        cells.append(f'{best["impl"]} {fmt_rate(float(best["median_mops"]))} M/s' if best else "-")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return out


def block_cost(meta, rows, machine):
    del meta, machine
    out = ["| structure | operation | design | key | sectors / key | ideal | x ideal | atomics / key "
           "| max on one address | launches | host syncs | pointer queries |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        spk, ideal = float(r["sectors_per_key"]), float(r["ideal_sectors_per_key"])
        out.append(f'| {r["structure"]} | {r["operation"]} | {r["design"]} | {r["key_type"]} | {spk:.3f} '
                   f'| {ideal:.3f} | {spk / ideal:.1f} | {float(r["atomics_per_key"]):.3f} '
                   f'| {r["max_same_address_atomics"]} | {r["launches"]} | {r["host_syncs"]} '
                   f'| {r.get("ptr_queries", "-")} |')
    return out


KINDS = {"tables": block_tables, "headline": block_headline, "cost": block_cost}


def docs_with_blocks(root):
    paths = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    return [p for p in paths if os.path.isfile(p)]


def regenerate(root, path):
    """(new text, [(line, block name, stale?)]) for one file."""
    with open(path) as f:
        lines = f.read().split("\n")
    out, blocks, i = [], [], 0
    while i < len(lines):
        m = BEGIN.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        kind, machine = m.group(1), m.group(2)
        j = i + 1
        while j < len(lines) and lines[j] != END:
            j += 1
        name = f"{kind} {machine}"
        if kind not in KINDS or j == len(lines):
            raise SystemExit(f"{path}:{i + 1}: block '{name}': unknown kind or no '{END}'")
        meta, rows = machine_data(root, machine)
        body = KINDS[kind](meta, rows, machine)
        blocks.append((i + 1, name, lines[i + 1:j] != body))
        out += [lines[i]] + body + [END]
        i = j + 1
    return "\n".join(out), blocks


def stale_blocks(root):
    """[(relative path, line, block name)] of every generated block that
    differs from what its data gives."""
    found = []
    for path in docs_with_blocks(root):
        _, blocks = regenerate(root, path)
        found += [(os.path.relpath(path, root), line, name) for line, name, stale in blocks if stale]
    return found


def write(root):
    """Rewrites every stale generated block; returns the files written."""
    written = []
    for path in docs_with_blocks(root):
        text, blocks = regenerate(root, path)
        if any(stale for _, _, stale in blocks):
            with open(path, "w") as f:
                f.write(text)
            written.append(os.path.relpath(path, root))
    return written


def main(argv):
    args = argv[1:]
    if args and args[0] in ("--write", "--check"):
        root = args[1] if len(args) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
        root = os.path.abspath(root)
        if args[0] == "--check":
            stale = stale_blocks(root)
            for rel, line, name in stale:
                print(f"{rel}:{line}: generated block '{name}' differs from docs/data "
                      f"(scripts/results_table.py --write regenerates it)")
            return 1 if stale else 0
        for rel in write(root):
            print(f"wrote {rel}")
        return 0
    if not args or args[0].startswith("-"):
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    print("\n".join(tables(read_csvs(args))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
