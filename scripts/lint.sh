#!/usr/bin/env bash
# Static checks: cppcheck over the C and C++ sources of src/, cpu/ and
# mpi/src/ (and the headers of include/ they include), clang-tidy (with the
# checks and justified exclusions of .clang-tidy) over the C files of src/,
# cpu/ and, when MPI was found, mpi/src/. Neither reads gpu/ (CUDA: nvcc
# -Werror is its check), judge/, python/, bench/ or tests/. Exits non-zero
# on any finding.
# Usage: scripts/lint.sh [BUILD_DIR]  (a build dir with compile_commands.json
# is configured there when missing)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-lint}
if [ ! -f "$BUILD/compile_commands.json" ]; then
  cmake -S . -B "$BUILD" -DTANDEM_CUDA=OFF -DTANDEM_TESTS=OFF -DTANDEM_BENCH=OFF \
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
fi
# cppcheck and clang-tidy (over every other file in two processes) run side
# by side, their findings printed in turn.
cppcheck --enable=warning,performance,portability --std=c11 --inline-suppr --error-exitcode=1 -q \
  -I include -I src -I mpi/include -I mpi/src --suppress=missingIncludeSystem -D__GNUC__ include src cpu mpi/src \
  >"$BUILD/cppcheck.log" 2>&1 &
cppcheck_pid=$!
tidy_files=(src/*.c cpu/*.c)
# tandem_mpi is checked when MPI was found (it is in the compile database).
if grep -q '/mpi/src/' "$BUILD/compile_commands.json"; then tidy_files+=(mpi/src/*.c); fi
tidy_a=() tidy_b=()
for i in "${!tidy_files[@]}"; do
  if [ $((i % 2)) = 0 ]; then tidy_a+=("${tidy_files[$i]}"); else tidy_b+=("${tidy_files[$i]}"); fi
done
clang-tidy -p "$BUILD" --quiet "${tidy_b[@]}" >"$BUILD/clang-tidy-2.log" 2>&1 &
tidy2_pid=$!
tidy_rc=0
clang-tidy -p "$BUILD" --quiet "${tidy_a[@]}" >"$BUILD/clang-tidy.log" 2>&1 || tidy_rc=$?
wait $tidy2_pid || tidy_rc=$?
cat "$BUILD/clang-tidy-2.log" >>"$BUILD/clang-tidy.log"
cppcheck_rc=0
wait $cppcheck_pid || cppcheck_rc=$?
echo "cppcheck $(cppcheck --version | cut -d' ' -f2):"
cat "$BUILD/cppcheck.log"
if [ $cppcheck_rc -ne 0 ]; then
  echo "cppcheck: findings above" >&2
  exit 1
fi
echo "  no findings"
echo "clang-tidy $(clang-tidy --version | grep -o 'version [0-9.]*' | cut -d' ' -f2):"
grep -vE "warnings? generated" "$BUILD/clang-tidy.log" || true
if [ $tidy_rc -ne 0 ] || grep -qE "(warning|error):" "$BUILD/clang-tidy.log"; then
  echo "clang-tidy: findings above" >&2
  exit 1
fi
echo "  no findings"
