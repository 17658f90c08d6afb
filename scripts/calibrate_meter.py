#!/usr/bin/env python3
"""The cost meter beside the hardware: for each row the GPU check profiled
(tandem-cost-profile --profile ROW under Nsight Compute), the DRAM and L2
sectors the GPU's counters read, per key, next to the emulated device's
figure for the same operation, design, key type and n (the meter's CSV from
make cuda-emu-cost), and their ratios.

usage: scripts/calibrate_meter.py METER_CSV DIR [OUT_CSV]
       scripts/calibrate_meter.py --self-test

DIR holds, per profiled row, NAME.out (the program's output, with its line
"profiled: structure,operation,design,key_type,value_type,n") and NAME.ncu
(Nsight Compute's --csv --page raw report of every kernel in the profiled
range). Sectors are summed over those kernels: dram__sectors_read.sum +
dram__sectors_write.sum (what reached DRAM) and lts__t_sectors.sum (every
L2 sector access). The meter counts every sector as DRAM traffic and sees no
cache, so its figure should lie between the two: near the DRAM figure where
the data outgrows L2, near the L2 figure where it fits (2^18 u64 keys, 2 MB,
fit in an H200's 60 MB L2: there the DRAM figure mostly reflects the first
touch). Copies and memsets are not kernels: ncu does not count them, the
meter models them. Standard library only.
"""
import csv
import glob
import io
import os
import sys
import tempfile

METRICS = ("dram__sectors_read.sum", "dram__sectors_write.sum", "lts__t_sectors.sum")
OUT_HEADER = ["structure", "operation", "design", "key_type", "value_type", "n", "kernels", "meter_sectors_per_key",
              "ideal_sectors_per_key", "dram_sectors_per_key", "l2_sectors_per_key", "dram_over_meter",
              "l2_over_meter"]


def number(text):
    """A counter value as ncu prints it (maybe with thousands separators)."""
    try:
        return float(text.replace(",", "").strip())
    except ValueError:
        return None


def read_ncu(path):
    """(kernels, {metric: sum}) of an ncu raw CSV report; its header line is
    the first that starts with "ID"; a units line may follow it."""
    with open(path, errors="replace") as f:
        lines = f.read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        raise ValueError(f"{path}: no CSV report (no line starting with \"ID\")")
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    head = rows[0]
    missing = [m for m in METRICS if m not in head]
    if missing:
        raise ValueError(f"{path}: metric(s) {', '.join(missing)} not in the report")
    sums, kernels = dict.fromkeys(METRICS, 0.0), 0
    for r in rows[1:]:
        if len(r) != len(head) or number(r[head.index("ID")]) is None:
            continue  # the units line, or a line ncu wrote in between
        kernels += 1
        for m in METRICS:
            sums[m] += number(r[head.index(m)]) or 0.0
    return kernels, sums


def read_meter(path):
    with open(path, newline="") as f:
        return {(r["structure"], r["operation"], r["design"], r["key_type"], r["n"]): r for r in csv.DictReader(f)}


def calibrate(meter_csv, run_dir, out_csv=None):
    meter = read_meter(meter_csv)
    rows, problems = [], []
    for out in sorted(glob.glob(os.path.join(run_dir, "*.out"))):
        with open(out, errors="replace") as f:
            line = next((l for l in f if l.startswith("profiled: ")), None)
        if not line:
            problems.append(f"{os.path.basename(out)}: the program did not profile its row")
            continue
        st, op, design, kt, vt, n = line[len("profiled: "):].strip().split(",")
        try:
            kernels, sums = read_ncu(out[:-4] + ".ncu")
        except (OSError, ValueError) as e:
            problems.append(str(e))
            continue
        m = meter.get((st, op, design, kt, n))
        keys = float(n)
        dram = (sums[METRICS[0]] + sums[METRICS[1]]) / keys
        l2 = sums[METRICS[2]] / keys
        ms = float(m["sectors_per_key"]) if m else None
        rows.append(dict(structure=st, operation=op, design=design, key_type=kt, value_type=vt, n=n, kernels=kernels,
                         meter_sectors_per_key=f"{ms:.4f}" if m else "",
                         ideal_sectors_per_key=m["ideal_sectors_per_key"] if m else "",
                         dram_sectors_per_key=f"{dram:.4f}", l2_sectors_per_key=f"{l2:.4f}",
                         dram_over_meter=f"{dram / ms:.3f}" if ms else "",
                         l2_over_meter=f"{l2 / ms:.3f}" if ms else ""))
        if not m:
            problems.append(f"{st} {op} {design} {kt} n={n}: no such row in {meter_csv}")
    if out_csv:
        with open(out_csv, "w", newline="") as f:
            w = csv.DictWriter(f, OUT_HEADER)
            w.writeheader()
            w.writerows(rows)
    print(f"{'structure':<6} {'operation':<12} {'design':<6} {'key':<4} {'n':>8} {'kern':>4} {'meter':>8} "
          f"{'ideal':>7} {'dram':>8} {'l2':>8} {'dram/meter':>10} {'l2/meter':>9}  (sectors per key)")
    for r in rows:
        print(f"{r['structure']:<6} {r['operation']:<12} {r['design']:<6} {r['key_type']:<4} {r['n']:>8} "
              f"{r['kernels']:>4} {r['meter_sectors_per_key'] or '-':>8} {r['ideal_sectors_per_key'] or '-':>7} "
              f"{r['dram_sectors_per_key']:>8} {r['l2_sectors_per_key']:>8} {r['dram_over_meter'] or '-':>10} "
              f"{r['l2_over_meter'] or '-':>9}")
    for p in problems:
        print(f"calibrate_meter: {p}")
    return rows, problems


def self_test():
    """A made-up report of two kernels (thousands separators, a units line)
    against a made-up meter row: the sums and ratios must come out exactly."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "meter.csv"), "w") as f:
            f.write("structure,operation,design,key_type,value_type,n,sectors_per_key,ideal_sectors_per_key,"
                    "atomics_per_key,max_same_address_atomics,launches,host_syncs,h2d_bytes,d2h_bytes,"
                    "ptr_queries\n"
                    "sort,keys,cuda,u32,none,1024,2.0000,0.2500,0,0,4,0,0,0,1\n")
        with open(os.path.join(d, "sort-keys-u32.out"), "w") as f:
            f.write("something else\nprofiled: sort,keys,cuda,u32,none,1024\n")
        with open(os.path.join(d, "sort-keys-u32.ncu"), "w") as f:
            f.write('==PROF== Connected to process 1\n'
                    '"ID","Process ID","Kernel Name","dram__sectors_read.sum","dram__sectors_write.sum",'
                    '"lts__t_sectors.sum"\n'
                    '"","","","sector","sector","sector"\n'
                    '"0","1","k_a","1,024","512","2,048"\n'
                    '"1","1","k_b","0","0","2,048"\n')
        rows, problems = calibrate(os.path.join(d, "meter.csv"), d, os.path.join(d, "out.csv"))
        want = dict(kernels=2, dram_sectors_per_key="1.5000", l2_sectors_per_key="4.0000", dram_over_meter="0.750",
                    l2_over_meter="2.000", meter_sectors_per_key="2.0000")
        ok = not problems and len(rows) == 1 and all(rows[0][k] == v for k, v in want.items())
        with open(os.path.join(d, "out.csv")) as f:
            ok = ok and f.readline().strip() == ",".join(OUT_HEADER)
    print("calibrate_meter self-test:", "PASS" if ok else f"FAIL ({rows}, {problems})")
    return 0 if ok else 1


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    if len(argv) not in (2, 3):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    rows, problems = calibrate(*argv)
    return 0 if rows and not problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
