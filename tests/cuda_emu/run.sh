#!/usr/bin/env bash
# Runs tandem's CUDA backend on the emulated device (tests/cuda_emu): the
# self-test under both designs, the pipeline check under both designs, every
# Criterion program with CUDA cases, the fused example, over several seeds.
# Usage: tests/cuda_emu/run.sh BUILD_DIR   (built by make test-cuda-emu)
# Environment: CUDA_EMU_SEEDS (default "1 2 3"), CUDA_EMU_CRITERION=0 to skip
# the Criterion programs, CUDA_EMU_ONLY=selftest|pipeline|criterion|example|sweep,
# CUDA_EMU_QUICK=--minimal for the smaller self-test on the first seed too
# (the sanitized builds), CUDA_EMU_V2_PARTS (default "sort hash btree")
# for the v2 structures the first seed runs, CUDA_EMU_PIPELINE_REPS (default
# 5) for the pipeline check's rounds, CUDA_EMU_PIPELINE_KEYS for its key
# count (default the program's, 2^20).
set -uo pipefail
b=${1:?usage: run.sh BUILD_DIR}
seeds=${CUDA_EMU_SEEDS:-1 2 3}
first=${seeds%% *}
quick=${CUDA_EMU_QUICK:---quick}
only=${CUDA_EMU_ONLY:-}
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

want() { [ -z "$only" ] || [ "$only" = "$1" ]; }

if want selftest; then
  # --quick on the first seed, --minimal (other sizes and data) on the rest.
  run "tandem-selftest $quick" "$first" legacy "$b/tandem-selftest" $quick --seed "$first"
  for part in ${CUDA_EMU_V2_PARTS:-sort hash btree}; do
    # the v2 B-tree is the slowest to emulate: --minimal even on the first seed
    q=$quick; [ "$part" = btree ] && q=--minimal
    run "tandem-selftest $q" "$first" v2 "$b/tandem-selftest" $q --only "$part" --seed "$first"
  done
  for s in $seeds; do
    [ "$s" = "$first" ] && continue
    run "tandem-selftest --minimal" "$s" legacy "$b/tandem-selftest" --minimal --seed "$s"
    run "tandem-selftest --minimal" "$s" v2 "$b/tandem-selftest" --minimal --only hash --seed "$s"
  done
fi
if want pipeline; then
  for d in legacy v2; do
    run "tandem-pipeline-check" "$first" "$d" "$b/tandem-pipeline-check" --reps "${CUDA_EMU_PIPELINE_REPS:-5}" \
      ${CUDA_EMU_PIPELINE_KEYS:+--keys "$CUDA_EMU_PIPELINE_KEYS"}
  done
fi
if want example; then
  run "fused_lookup 12 2" "$first" legacy "$b/fused_lookup" 12 2
fi
if want sweep; then
  # Every runtime call of every operation failed in turn (both designs inside).
  run "tandem-fault-sweep" "$first" legacy "$b/tandem-fault-sweep"
fi
if want criterion && [ "${CUDA_EMU_CRITERION:-1}" != 0 ]; then
  for p in $(cat "$b/criterion-programs.txt" | tr ';' ' '); do
    run "$p" "$first" legacy "$b/$p" --jobs 1
  done
fi
echo "cuda-emu: $((runs - fails)) of $runs runs passed in $(( $(date +%s) - start )) s (seeds: $seeds)"
[ $fails -eq 0 ]
