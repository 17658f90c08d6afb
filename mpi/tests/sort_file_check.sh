#!/usr/bin/env bash
# The mpi_sort_file example end to end: sorts a generated file on R ranks and
# compares with sort(1); a malformed line must fail with its line number.
# Usage: sort_file_check.sh MPIEXEC EXAMPLE RANKS
set -euo pipefail
mpiexec=$1 prog=$2 ranks=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$prog" --make "$work/in.txt" 100000
"$mpiexec" -n "$ranks" --oversubscribe "$prog" "$work/in.txt" "$work/out.txt"
LC_ALL=C sort -n "$work/in.txt" | cmp - "$work/out.txt"
printf '5\n-3\n7x\n1\n' >"$work/bad.txt"
if "$mpiexec" -n "$ranks" --oversubscribe "$prog" "$work/bad.txt" "$work/o.txt" 2>"$work/err.txt"; then
  echo "malformed input was accepted"; exit 1
fi
grep -q 'bad.txt:3: not a signed 64-bit integer' "$work/err.txt" || { cat "$work/err.txt"; exit 1; }
[ ! -e "$work/o.txt" ] || { echo "output written despite the error"; exit 1; }
echo "mpi_sort_file: sorted on $ranks ranks, malformed line reported"
