#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan + leak detection) and
# runs each (ctest label fuzz, two at a time) for a bounded time from its seed
# corpus, failing on any crash, leak, sanitizer report or result mismatch.
# The time per target follows TANDEM_TEST_SCALE (tests/fuzz/run.sh).
# Usage: scripts/fuzz.sh [BUILD_DIR]   (default build-fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-fuzz}
CC=clang CXX=clang++ cmake -S . -B "$BUILD" -DTANDEM_CUDA=OFF -DTANDEM_FUZZ=ON -DTANDEM_TESTS=OFF \
  -DTANDEM_BENCH=OFF -DTANDEM_EXAMPLES=OFF -DTANDEM_JUDGE=OFF -DTANDEM_MPI=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" >/dev/null
ctest --test-dir "$BUILD" -L fuzz -j "$(nproc)" --output-on-failure
