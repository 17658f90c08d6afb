#!/bin/sh
# Measures tandem-bench while one other CPU-bound process runs (a busy loop),
# so 1-thread and 2-thread (all cores) rows of the same run can be compared:
# the library must not get slower with more threads on a busy machine.
#   scripts/bench-loaded.sh BUILD [tandem-bench arguments...]
# Default arguments: sort --backend cpu --type u32 --n 1e7 --reps 5.
# Prints the rows without load first, then with load.
set -eu
build=${1:-build}
[ $# -gt 0 ] && shift
bench="$build/bench/tandem-bench"
[ -x "$bench" ] || { echo "bench-loaded.sh: $bench not found; run make build BUILD=$build" >&2; exit 2; }
[ $# -gt 0 ] || set -- sort --backend cpu --type u32 --n 1e7 --reps 5

echo "== idle (no extra load)"
"$bench" "$@"
sh -c 'while :; do :; done' &
busy=$!
trap 'kill $busy 2>/dev/null' EXIT INT TERM
sleep 1 # let the load estimate see the busy loop
echo "== loaded (one busy-loop process running)"
"$bench" "$@"
