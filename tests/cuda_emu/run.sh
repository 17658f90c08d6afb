#!/usr/bin/env bash
# Runs tandem's CUDA backend on the emulated device (tests/cuda_emu): the
# self-test and the pipeline check, the Criterion programs with CUDA cases,
# the fused example and the fault sweep.
# Usage: tests/cuda_emu/run.sh BUILD_DIR [PART]
#   BUILD_DIR: the emulated build (the main build's cuda-emu folder)
#   PART: one of the parts below (what ctest runs, one test each), or nothing
#   for all of them in turn:
#     selftest (or one operation's: selftest:sort, selftest:hash,
#     selftest:ops, or a shard of one: selftest:ops:1/2), selftest-btree,
#     pipeline, example, sweep, meter, criterion:PROGRAM
# Sizes and seeds follow the suite's one knob, TANDEM_TEST_SCALE
# (scripts/test-scale.sh):
#   small (make test): seed 1; the self-test's --minimal set (every operation
#     and type, host and device arrays, n = 1 and 5001); one pipeline round
#     over 2^16 keys;
#   full (make check): seeds 1, 2 and 3; the self-test's --quick set on seed 1
#     and --minimal on the others; five pipeline rounds over 2^20 keys.
# The B-tree runs apart (selftest-btree), on the first seed, --minimal at
# either scale (the slowest to emulate).
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

# run NAME SEED CMD...: one program on the emulated device.
run() {
  local name=$1 seed=$2
  shift 2
  local t0=$(date +%s) out rc
  out=$(TANDEM_EMU_SEED=$seed "$@" 2>&1)
  rc=$?
  runs=$((runs + 1))
  if [ $rc -ne 0 ]; then
    fails=$((fails + 1))
    echo "FAIL $name (TANDEM_EMU_SEED=$seed, exit $rc, $(( $(date +%s) - t0 )) s)"
    echo "$out" | grep -v '^ok ' | tail -40 | sed 's/^/    /'
  else
    echo "ok   $name (TANDEM_EMU_SEED=$seed, $(( $(date +%s) - t0 )) s)"
  fi
}

want() { [ -z "$part" ] || [ "$part" = "$1" ]; }

# selftest ONLY [K/N]: the first seed at the tier's set, the others --minimal
# (not the B+ tree: the first seed only); K/N: the self-test's --shard.
selftest() {
  local only=$1 q=$quick s sh=()
  [ -n "${2:-}" ] && sh=(--shard "$2")
  [ "$only" = btree ] && q=--minimal
  run "tandem-selftest $q --only $only${2:+ --shard $2}" "$first" "$b/tandem-selftest" $q --only "$only" "${sh[@]}" --seed "$first"
  [ "$only" = btree ] && return
  for s in $seeds; do
    [ "$s" = "$first" ] && continue
    run "tandem-selftest --minimal --only $only${2:+ --shard $2}" "$s" "$b/tandem-selftest" --minimal --only "$only" "${sh[@]}" --seed "$s"
  done
}

if want selftest; then
  for p in sort hash ops; do selftest "$p"; done
fi
# One operation's self-test alone (selftest:sort, selftest:hash,
# selftest:ops), or a shard of it (selftest:hash:1/2), for runs side by side
# (make test-cuda-emu-tsan).
case "$part" in
  selftest:sort | selftest:hash | selftest:ops) selftest "${part#selftest:}" ;;
  selftest:sort:*/* | selftest:hash:*/* | selftest:ops:*/*)
    p=${part#selftest:}
    selftest "${p%%:*}" "${p#*:}" ;;
esac
want selftest-btree && selftest btree
want pipeline && run "tandem-pipeline-check" "$first" "$b/tandem-pipeline-check" --reps "$reps" ${keys:+--keys "$keys"}
want example && run "fused_lookup 12 2" "$first" "$b/fused_lookup" 12 2
# Every runtime call of every operation failed in turn.
want sweep && run "tandem-fault-sweep" "$first" "$b/tandem-fault-sweep"
# The cost meter's proof: planted inefficiencies move its figures as predicted
# (the race build has no meter: its libtsan owns the hooks).
if want meter; then
  if [ -x "$b/tandem-meter-check" ]; then
    run "tandem-meter-check" "$first" "$b/tandem-meter-check"
  elif [ "$part" = meter ]; then
    echo "skip tandem-meter-check: not in this build (the ThreadSanitizer build has no meter)"
    runs=$((runs + 1))
  fi
fi
case "$part" in
  # Suites named *_cpu never create a CUDA context (tests/prop.h): the
  # native build's run checks them.
  criterion:*) run "${part#criterion:}" "$first" "$b/${part#criterion:}" --jobs 1 --filter '!(*_cpu/*)' ;;
  "")
    for p in $(tr ';' ' ' <"$b/criterion-programs.txt"); do
      run "$p" "$first" "$b/$p" --jobs 1 --filter '!(*_cpu/*)'
    done ;;
esac
if [ $runs -eq 0 ]; then
  echo "run.sh: no part named '$part' (see the usage at the top of this script)" >&2
  exit 2
fi
echo "cuda-emu: $((runs - fails)) of $runs runs passed in $(( $(date +%s) - start )) s (seeds: $seeds, scale: $TDM_SCALE)"
[ $fails -eq 0 ]
