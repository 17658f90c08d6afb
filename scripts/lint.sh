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
echo "cppcheck $(cppcheck --version | cut -d' ' -f2):"
cppcheck --enable=warning,performance,portability --std=c11 --inline-suppr --error-exitcode=1 -q \
  -I include -I src -I mpi/include -I mpi/src --suppress=missingIncludeSystem -D__GNUC__ include src cpu mpi/src
echo "  no findings"
echo "clang-tidy $(clang-tidy --version | grep -o 'version [0-9.]*' | cut -d' ' -f2):"
tidy_rc=0
tidy_files=(src/*.c cpu/*.c)
# tandem_mpi is checked when MPI was found (it is in the compile database).
if grep -q '/mpi/src/' "$BUILD/compile_commands.json"; then tidy_files+=(mpi/src/*.c); fi
clang-tidy -p "$BUILD" --quiet "${tidy_files[@]}" >"$BUILD/clang-tidy.log" 2>&1 || tidy_rc=$?
grep -vE "warnings? generated" "$BUILD/clang-tidy.log" || true
if [ $tidy_rc -ne 0 ] || grep -qE "(warning|error):" "$BUILD/clang-tidy.log"; then
  echo "clang-tidy: findings above" >&2
  exit 1
fi
echo "  no findings"
