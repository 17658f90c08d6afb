#!/usr/bin/env bash
# What each bulk GPU operation costs on the emulated device's meter
# (make cuda-emu-cost; tests/cuda_emu/README.md, "Cost meter"): runs
# tandem-cost of a metered build (EMU_METER=ON) for the CUDA backend (rows
# of design "cuda") and the benchmark's peers, writes one CSV, prints the table and the rows furthest above their ideal, and
# fails when a row exceeds its limits in cost-budgets.txt.
# Usage: tests/cuda_emu/cost.sh BUILD_DIR CSV
# The device: seed 2 (the H200 shape, 132 SMs), one worker, each part in a
# process of its own, so a run repeats exactly and a part's rows are those
# `tandem-cost --only PART` prints (the emulator's schedule and the
# allocations' addresses depend on what ran before in a process: the same
# rows after other parts moved by up to 1 %).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
b=${1:?usage: cost.sh BUILD_DIR CSV}
csv=${2:?usage: cost.sh BUILD_DIR CSV}
rc=0
# The parts run on two lanes, the B+ tree (half the time) beside the rest,
# each part into its own CSV and output, then put together in the order of
# one run: sort, hash, btree, ops, hot, then the benchmark's GPU peers on the
# same inputs (rows named by the peer).
tmp=$(mktemp -d)
part() { # PART: one part's rows, its CSV and table in $tmp, its status in $tmp/PART.rc
  local a=(--only "$1")
  [ "$1" = peers ] && a=(--peers)
  TANDEM_EMU_SEED=2 TANDEM_EMU_WORKERS=1 "$b/tandem-cost" "${a[@]}" --csv "$tmp/$1.csv" \
    --budgets "$here/cost-budgets.txt" >"$tmp/$1.out" 2>&1
  echo $? >"$tmp/$1.rc"
}
part btree &
for p in sort hash ops hot peers; do part "$p"; done
wait
first=1
for p in sort hash btree ops hot peers; do
  cat "$tmp/$p.out"
  [ "$(cat "$tmp/$p.rc" 2>/dev/null)" = 0 ] || rc=1
  if [ $first = 1 ]; then cat "$tmp/$p.csv" >"$csv"; first=0; else tail -n +2 "$tmp/$p.csv" >>"$csv"; fi
done
rm -rf "$tmp"
# The check itself can fail: the same sort rows against a copy of the
# budgets whose u32 keys row allows 1 % fewer sectors and one launch
# fewer than measured must fail on exactly those two figures.
tight=$(mktemp)
awk '$1 == "sort" && $2 == "keys" && $3 == "cuda" && $4 == "u32" { $6 = sprintf("%.4f", $6 / 1.02 * 0.99); $9 = $9 - 1 } { print }' \
  "$here/cost-budgets.txt" >"$tight"
out=$(TANDEM_EMU_SEED=2 TANDEM_EMU_WORKERS=1 "$b/tandem-cost" --only sort --budgets "$tight")
src=$?
rm -f "$tight"
if [ $src -eq 1 ] && [ "$(grep -c 'OVER BUDGET' <<<"$out")" = 2 ] && grep -q 'OVER BUDGET: sectors_per_key' <<<"$out" &&
  grep -q 'OVER BUDGET: launches' <<<"$out"; then
  echo "cuda-emu-cost: a budget tightened below the measurement fails, as it must"
else
  echo "cuda-emu-cost: FAIL: a budget tightened below the measurement did not fail as expected (exit $src):"
  echo "$out"
  rc=1
fi
echo
echo "furthest above their ideal (sectors per key / ideal):"
tail -n +2 "$csv" | awk -F, '{ printf "  %6.1fx  %s %s (%s, %s)  %s sectors/key, ideal %s\n", $7 / $8, $1, $2, $3, $4, $7, $8 }' |
  sort -rn | head -6
echo "cuda-emu-cost: $csv"
[ $rc -eq 0 ] || echo "cuda-emu-cost: rows over budget (above); a limit is loosened only with a sentence in cost-budgets.txt saying why"
exit $rc
