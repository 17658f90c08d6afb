#!/usr/bin/python3
"""Renders throughput-vs-n plots from tandem-bench CSV files.

usage: plot.py OUTDIR CSV...

One PNG per (structure, operation, key type): a line per (impl, backend,
threads), median rate against n on log-log axes, min-max as a band.
"""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = sys.argv[1]
    series = defaultdict(lambda: defaultdict(list))
    for path in sys.argv[2:]:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if row["structure"] == "limits":
                    continue
                fig = (row["structure"], row["operation"], row["key_type"], row["value_type"])
                label = f'{row["impl"]} ({row["backend"]}, {row["threads"]} thr)'
                if row["backend"] == "cuda":
                    label = f'{row["impl"]} (cuda)'
                series[fig][label].append(
                    (int(row["n"]), float(row["median_mops"]), float(row["min_mops"]), float(row["max_mops"]))
                )
    for (structure, op, kt, vt), lines in sorted(series.items()):
        plt.figure(figsize=(7, 4.5))
        for label, pts in sorted(lines.items()):
            pts.sort()
            if len(pts) < 2:
                continue
            ns = [p[0] for p in pts]
            style = "-" if label.startswith("tandem") else "--"
            (line,) = plt.plot(ns, [p[1] for p in pts], style, marker="o", label=label)
            plt.fill_between(ns, [p[2] for p in pts], [p[3] for p in pts], color=line.get_color(), alpha=0.15)
        if not plt.gca().lines:
            plt.close()
            continue
        plt.xscale("log")
        plt.yscale("log")
        plt.xlabel("n (elements)")
        unit = "queries" if op.startswith(("find", "rank", "range")) else "elements"
        plt.ylabel(f"million {unit} / s (median)")
        title = f"{structure} {op}, {kt} keys" + (f", {vt} values" if vt else "")
        plt.title(title)
        plt.grid(True, which="both", alpha=0.3)
        plt.legend(fontsize=8)
        plt.tight_layout()
        name = f"{out}/{structure}-{op}-{kt}{('-' + vt) if vt else ''}.png"
        plt.savefig(name, dpi=110)
        plt.close()
        print(name)


if __name__ == "__main__":
    main()
