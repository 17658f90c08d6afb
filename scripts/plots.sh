#!/usr/bin/env bash
# make plots: runs tandem-bench over a range of n for every structure this
# build has (all usable backends, with peers) and renders throughput-vs-n PNGs
# into docs/img with matplotlib (Debian python3-matplotlib).
# Usage: scripts/plots.sh BUILD_DIR [N...]   (default n: 1e4 1e5 1e6 1e7;
# PLOT_STRUCTS="sort hash" limits the structures)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:?usage: scripts/plots.sh BUILD_DIR [N...]}
shift
NS=("$@")
[ ${#NS[@]} -gt 0 ] || NS=(1e4 1e5 1e6 1e7)
OUT=docs/img
DATA="$BUILD/plots"
mkdir -p "$OUT" "$DATA"
rm -f "$DATA"/*.csv
for s in ${PLOT_STRUCTS:-$("$BUILD"/bench/tandem-bench --list)}; do
  for n in "${NS[@]}"; do
    echo "== tandem-bench $s --n $n" >&2
    "$BUILD"/bench/tandem-bench "$s" --n "$n" --reps 5 --peers --csv "$DATA/$s-$n.csv" >/dev/null
  done
done
/usr/bin/python3 scripts/plot.py "$OUT" "$DATA"/*.csv
