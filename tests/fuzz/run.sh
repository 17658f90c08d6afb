#!/usr/bin/env bash
# Runs one libFuzzer target from its seed corpus (a copy: the corpus in the
# tree stays as it is) for a bounded time, failing on any crash, leak,
# sanitizer report or result mismatch (run by ctest as fuzz_<target>, label
# fuzz, in TANDEM_FUZZ builds: scripts/fuzz.sh).
# Usage: tests/fuzz/run.sh TARGET_BINARY CORPUS_DIR
# Time per target from the suite's knob (scripts/test-scale.sh): 10 s at
# TANDEM_TEST_SCALE=small, 40 s at full.
set -euo pipefail
bin=${1:?usage: run.sh TARGET_BINARY CORPUS_DIR}
corpus=${2:?usage: run.sh TARGET_BINARY CORPUS_DIR}
. "$(dirname "$0")/../../scripts/test-scale.sh"
secs=10
[ "$TDM_SCALE" = full ] && secs=40
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$corpus"/. "$work"/ 2>/dev/null || true
echo "== $(basename "$bin") for ${secs}s"
log=$bin.log
if ! ASAN_OPTIONS=detect_leaks=1 "$bin" -max_total_time="$secs" -max_len=4096 -print_final_stats=1 "$work" 2>"$log"; then
  tail -40 "$log"
  exit 1
fi
grep -E "stat::number_of_executed_units|stat::peak_rss" "$log" | sed 's/^/   /'
