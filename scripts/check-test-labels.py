#!/usr/bin/env python3
"""Checks that every ctest test of a build has a known label and a timeout of
its own (run by ctest as test_labels).

usage: check-test-labels.py CTEST BUILD_DIR

The labels, so that `ctest -L KIND` runs one kind:
  unit      named cases of one component (Criterion programs, examples)
  property  random inputs over many sizes against a reference
  emu       the CUDA backend on the emulated device (tests/cuda_emu)
  gpu       needs a real GPU (skipped without one)
  mpi       tandem_mpi under mpirun, 1 to 4 ranks
  judge     tandem-judge's own checks
  python    the Python package's tests
  fuzz      the libFuzzer targets (TANDEM_FUZZ builds)
  docs      the tree's text and symbols: names in the docs, generated tables,
            idioms, the backend boundary, these labels
A test may carry several (emu;property). A test without a TIMEOUT of its own
would get ctest's default of 1500 s: each is sized from its measured time.
"""
import json
import subprocess
import sys

LABELS = {"unit", "property", "emu", "gpu", "mpi", "judge", "python", "fuzz", "docs"}


def problems(tests):
    out = []
    for t in tests:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        labels = props.get("LABELS", [])
        if not labels:
            out.append(f"{t['name']}: no label (give it one of: {', '.join(sorted(LABELS))})")
        for label in labels:
            if label not in LABELS:
                out.append(f"{t['name']}: label '{label}' is not one of: {', '.join(sorted(LABELS))}")
        if props.get("TIMEOUT") is None:
            out.append(f"{t['name']}: no TIMEOUT: size one from the test's measured time")
    return out


def self_test():
    planted = [
        {"name": "a", "properties": [{"name": "LABELS", "value": ["unit"]}, {"name": "TIMEOUT", "value": 60}]},
        {"name": "b", "properties": [{"name": "TIMEOUT", "value": 60}]},
        {"name": "c", "properties": [{"name": "LABELS", "value": ["nightly"]}, {"name": "TIMEOUT", "value": 60}]},
        {"name": "d", "properties": [{"name": "LABELS", "value": ["emu", "property"]}]},
        {"name": "e", "properties": [{"name": "LABELS", "value": ["judge", "fuzz"]}, {"name": "TIMEOUT", "value": 900}]},
    ]
    found = [p.split(":")[0] for p in problems(planted)]
    if found != ["b", "c", "d"]:
        sys.exit(f"check-test-labels: self-test: planted problems b, c, d (and not a or e); found {found}")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    self_test()
    ctest, build = sys.argv[1], sys.argv[2]
    res = subprocess.run([ctest, "--test-dir", build, "--show-only=json-v1"], capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"check-test-labels: {ctest} --show-only failed: {res.stderr.strip()}")
    tests = json.loads(res.stdout).get("tests", [])
    bad = problems(tests)
    for b in bad:
        print(f"check-test-labels: {b}")
    if bad:
        sys.exit(1)
    print(f"check-test-labels: {len(tests)} tests, each labelled and with a sized timeout")


if __name__ == "__main__":
    main()
