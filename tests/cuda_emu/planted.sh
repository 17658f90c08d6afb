#!/usr/bin/env bash
# Proves the emulated device catches broken kernels: applies each patch of
# planted/ to a temporary copy of the sources, rebuilds the emulated build of
# that copy, runs the test that should catch it and expects it to FAIL.
# Usage: tests/cuda_emu/planted.sh BUILD_DIR [SANITIZE]   (make cuda-emu-planted)
# SANITIZE (default address,undefined) is the build for every bug but those
# only the ThreadSanitizer build sees (san_of below), built apart in BUILD_DIR/build-tsan.
# PLANTED_ONLY="name ..." runs only those patches.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
b=${1:?usage: planted.sh BUILD_DIR [SANITIZE]}
san=${2:-address,undefined}
mkdir -p "$b"
b=$(cd "$b" && pwd)
copy=$b/src
# The program that catches each planted bug (the table in README.md).
declare -A test_of=(
  [grid-stride-off-by-one]="tandem-selftest --minimal --only sort"
  [missing-syncthreads]="tandem-selftest --minimal --only hash"
  [wrong-lane-mask]="fused_lookup 12 1"
  [value-before-claim]="tandem-selftest --minimal --only hash"
  [cub-temp-first-chunk]="tandem-selftest --minimal --only sort"
  [scratch-freed-early]="tandem-selftest --minimal --only sort"
  [claim-without-cas]="tandem-selftest --minimal --only hash"
  [elect-clear-plain-store]="tandem-selftest --minimal --only hash"
  [block-scratch-reuse]="tandem-selftest --minimal --only hash"
  [warp-fold-own-value]="tandem-selftest --minimal --only hash"
)
# Bugs only one mechanism catches: the same program must PASS with it off.
declare -A control_of=(
  [claim-without-cas]="TANDEM_EMU_WORKERS=1 TANDEM_EMU_PREEMPT_MEM=0"
  [block-scratch-reuse]="TANDEM_EMU_SMS=132"
)
# The bugs only a race detector sees (a same-value store is a data race, not
# a wrong result): the ThreadSanitizer build.
declare -A san_of=(
  [elect-clear-plain-store]=thread
)
caught=0 total=0
for p in "$here"/planted/*.patch; do
  name=$(basename "$p" .patch)
  [ -n "${PLANTED_ONLY:-}" ] && [[ " $PLANTED_ONLY " != *" $name "* ]] && continue
  total=$((total + 1))
  # A patch that no longer applies, does not build or has no test plants
  # nothing: counted as missed, and the others still run.
  [ -n "${test_of[$name]:-}" ] || { echo "MISSED $name: no test_of entry"; continue; }
  rm -rf "$copy" && mkdir -p "$copy"
  # mtimes kept, so only what a patch touches (now or last time) rebuilds
  (cd "$src" && cp -rp CMakeLists.txt include src cpu gpu tests examples "$copy"/)
  files=$(sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "$p")
  (cd "$copy" && patch -s -p1 --dry-run < "$p" >/dev/null 2>&1 && patch -s -p1 < "$p") || {
    echo "MISSED $name: patch does not apply"; continue; }
  s=${san_of[$name]:-$san}
  bd=$b/build
  [ "$s" = thread ] && bd=$b/build-tsan
  # The files the last patch built in this folder (this run or an earlier
  # one) touched, build there again: the fresh copy's mtimes are older than
  # their patched objects.
  (cd "$copy" && touch $files $(cat "$bd/planted-last" 2>/dev/null))
  mkdir -p "$bd" && echo "$files" >"$bd/planted-last"
  cmake -S "$copy/tests/cuda_emu" -B "$bd" -DTANDEM_SRC="$copy" -DEMU_SANITIZE="$s" \
    -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
  cmake --build "$bd" -j "${JOBS:-2}" --target tandem-selftest fused_lookup >/dev/null 2>&1 || {
    echo "MISSED $name: does not build"; continue; }
  read -r prog args <<<"${test_of[$name]}"
  {
    if out=$(TANDEM_EMU_SEED=1 ASAN_OPTIONS=detect_leaks=0 TSAN_OPTIONS=halt_on_error=1 \
      timeout 600 "$bd/$prog" $args 2>&1); then
      echo "MISSED $name: $prog $args passed ($s build)"
    else
      caught=$((caught + 1))
      why=$(echo "$out" | grep -m1 -A2 -E "cuda-emu:|ERROR: AddressSanitizer|WARNING: ThreadSanitizer|FAIL|runtime error" |
        tr -s ' \n' ' ' | cut -c1-240)
      echo "caught $name by $prog $args ($s build): $why"
      ctl=${control_of[$name]:-}
      if [ -n "$ctl" ]; then
        if env $ctl TANDEM_EMU_SEED=1 ASAN_OPTIONS=detect_leaks=0 TSAN_OPTIONS=halt_on_error=1 \
          timeout 600 "$bd/$prog" $args >/dev/null 2>&1; then
          echo "  and it passes with $ctl: only that mechanism catches it"
        else
          echo "  but it fails with $ctl too: the control does not isolate the mechanism"
          caught=$((caught - 1))
        fi
      fi
    fi
  }
done
echo "planted: $caught of $total caught"
[ "$caught" -eq "$total" ]
