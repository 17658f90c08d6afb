#!/usr/bin/env bash
# What each bulk GPU operation costs on the emulated device's meter
# (make cuda-emu-cost; tests/cuda_emu/README.md, "Cost meter"): runs
# tandem-cost of a metered build (EMU_METER=ON) for both designs, writes
# one CSV, prints the table and the rows furthest above their ideal, and
# fails when a row exceeds its limits in cost-budgets.txt.
# Usage: tests/cuda_emu/cost.sh BUILD_DIR CSV
# The device: seed 2 (the H200 shape, 132 SMs), one worker, so a run
# repeats exactly.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
b=${1:?usage: cost.sh BUILD_DIR CSV}
csv=${2:?usage: cost.sh BUILD_DIR CSV}
rc=0 append=
for d in legacy v2; do
  TANDEM_EMU_SEED=2 TANDEM_EMU_WORKERS=1 TANDEM_GPU_DESIGN=$d \
    "$b/tandem-cost" --csv "$csv" $append --budgets "$here/cost-budgets.txt" || rc=1
  append=--append
done
echo
echo "furthest above their ideal (sectors per key / ideal):"
tail -n +2 "$csv" | awk -F, '{ printf "  %6.1fx  %s %s (%s, %s)  %s sectors/key, ideal %s\n", $7 / $8, $1, $2, $3, $4, $7, $8 }' |
  sort -rn | head -6
echo "cuda-emu-cost: $csv"
[ $rc -eq 0 ] || echo "cuda-emu-cost: rows over budget (above); a limit is loosened only with a sentence in cost-budgets.txt saying why"
exit $rc
