#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan + leak detection) and
# runs each for SECONDS seconds (default 60) from its seed corpus, failing on
# any crash, leak, sanitizer report or result mismatch.
# Usage: scripts/fuzz.sh [SECONDS] [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-60}
BUILD=${2:-build-fuzz}
CC=clang CXX=clang++ cmake -S . -B "$BUILD" -DTANDEM_CUDA=OFF -DTANDEM_FUZZ=ON -DTANDEM_TESTS=OFF \
  -DTANDEM_BENCH=OFF -DTANDEM_EXAMPLES=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" >/dev/null
for bin in "$BUILD"/tests/fuzz/fuzz_*; do
  name=$(basename "$bin")
  corpus=tests/fuzz/corpus/${name#fuzz_}
  work=$(mktemp -d)
  cp -r "$corpus"/. "$work"/ 2>/dev/null || true
  echo "== $name for ${SECS}s"
  ASAN_OPTIONS=detect_leaks=1 "$bin" -max_total_time="$SECS" -max_len=4096 -print_final_stats=1 \
    "$work" 2>"$BUILD/$name.log" || { tail -40 "$BUILD/$name.log"; exit 1; }
  grep -E "stat::number_of_executed_units|stat::peak_rss" "$BUILD/$name.log" | sed 's/^/   /'
  rm -rf "$work"
done
