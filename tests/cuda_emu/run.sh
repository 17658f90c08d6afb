#!/usr/bin/env bash
# Runs tandem's CUDA backend on the emulated device (tests/cuda_emu): the
# self-test and the pipeline check under both designs, the Criterion programs
# with CUDA cases, the fused example and the fault sweep.
# Usage: tests/cuda_emu/run.sh BUILD_DIR [PART]
#   BUILD_DIR: the emulated build (the main build's cuda-emu folder)
#   PART: one of the parts below (what ctest runs, one test each), or nothing
#   for all of them in turn:
#     selftest-legacy, selftest-v2-sort, selftest-v2-hash, selftest-v2-btree,
#     pipeline-legacy, pipeline-v2, example, sweep, meter, criterion:PROGRAM
# Sizes and seeds follow the suite's one knob, TANDEM_TEST_SCALE
# (scripts/test-scale.sh):
#   small (make test): seed 1; the self-test's --minimal set (every operation
#     and type, host and device arrays, n = 1 and 5001); one pipeline round
#     over 2^16 keys;
#   full (make check): seeds 1, 2 and 3; the self-test's --quick set on seed 1
#     and --minimal on the others; five pipeline rounds over 2^20 keys.
# The B-tree (one for both designs) runs under v2 only, --minimal at either
# scale (the slowest to emulate).
# A failure prints the seed to replay alone: TANDEM_EMU_SEED=S PROGRAM ...
set -uo pipefail
b=${1:?usage: run.sh BUILD_DIR [PART]}
part=${2:-}
. "$(dirname "$0")/../../scripts/test-scale.sh"
if [ "$TDM_SCALE" = full ]; then
  seeds="1 2 3" quick=--quick reps=5 keys=
else
  seeds="1" quick=--minimal reps=1 keys=65536
fi
first=${seeds%% *}
fails=0 runs=0
start=$(date +%s)

# run NAME SEED DESIGN CMD...: one program on the emulated device.
run() {
  local name=$1 seed=$2 design=$3
  shift 3
  local t0=$(date +%s) out rc
  out=$(TANDEM_EMU_SEED=$seed TANDEM_GPU_DESIGN=$design "$@" 2>&1)
  rc=$?
  runs=$((runs + 1))
  if [ $rc -ne 0 ]; then
    fails=$((fails + 1))
    echo "FAIL $name (design $design, TANDEM_EMU_SEED=$seed, exit $rc, $(( $(date +%s) - t0 )) s)"
    echo "$out" | grep -v '^ok ' | tail -40 | sed 's/^/    /'
  else
    echo "ok   $name (design $design, TANDEM_EMU_SEED=$seed, $(( $(date +%s) - t0 )) s)"
  fi
}

want() { [ -z "$part" ] || [ "$part" = "$1" ]; }

# selftest DESIGN ONLY: the first seed at the tier's set, the others --minimal.
selftest() {
  local design=$1 only=$2 q=$quick s
  [ "$only" = btree ] && q=--minimal
  run "tandem-selftest $q${only:+ --only $only}" "$first" "$design" "$b/tandem-selftest" $q ${only:+--only "$only"} \
    --seed "$first"
  for s in $seeds; do
    [ "$s" = "$first" ] && continue
    # Later seeds: the legacy design whole and the v2 hash table (its claims
    # and folds are where the interleavings differ most).
    [ "$design" = v2 ] && [ "$only" != hash ] && continue
    run "tandem-selftest --minimal${only:+ --only $only}" "$s" "$design" "$b/tandem-selftest" --minimal \
      ${only:+--only "$only"} --seed "$s"
  done
}

# The sort and the B+ tree are one for both designs: the legacy runs take
# the parts other than the B+ tree, which runs once, as selftest-v2-btree
# (the slowest part to emulate).
if want selftest-legacy; then
  for p in sort hash ops; do selftest legacy "$p"; done
fi
for p in sort hash btree; do
  want "selftest-v2-$p" && selftest v2 "$p"
done
for d in legacy v2; do
  want "pipeline-$d" && run "tandem-pipeline-check" "$first" "$d" "$b/tandem-pipeline-check" --reps "$reps" \
    ${keys:+--keys "$keys"}
done
want example && run "fused_lookup 12 2" "$first" legacy "$b/fused_lookup" 12 2
# Every runtime call of every operation failed in turn (both designs inside).
want sweep && run "tandem-fault-sweep" "$first" legacy "$b/tandem-fault-sweep"
# The cost meter's proof: planted inefficiencies move its figures as predicted
# (the race build has no meter: its libtsan owns the hooks).
if want meter; then
  if [ -x "$b/tandem-meter-check" ]; then
    run "tandem-meter-check" "$first" legacy "$b/tandem-meter-check"
  elif [ "$part" = meter ]; then
    echo "skip tandem-meter-check: not in this build (the ThreadSanitizer build has no meter)"
    runs=$((runs + 1))
  fi
fi
case "$part" in
  # Suites named *_cpu never create a CUDA context (tests/prop.h): the
  # native build's run checks them.
  criterion:*) run "${part#criterion:}" "$first" legacy "$b/${part#criterion:}" --jobs 1 --filter '!(*_cpu/*)' ;;
  "")
    for p in $(tr ';' ' ' <"$b/criterion-programs.txt"); do
      run "$p" "$first" legacy "$b/$p" --jobs 1 --filter '!(*_cpu/*)'
    done ;;
esac
if [ $runs -eq 0 ]; then
  echo "run.sh: no part named '$part' (see the usage at the top of this script)" >&2
  exit 2
fi
echo "cuda-emu: $((runs - fails)) of $runs runs passed in $(( $(date +%s) - start )) s (seeds: $seeds, scale: $TDM_SCALE)"
[ $fails -eq 0 ]
