#!/usr/bin/env bash
# Builds the Python package with pip into a virtual environment and runs its
# tests (python/tests).
# Usage: scripts/python-test.sh BUILD_DIR [CUDA=AUTO|ON|OFF]
#   The venv is BUILD_DIR/venv (made with $PYTHON, default python3; test tools
#   from PyPI), the package's CMake build BUILD_DIR/python (kept, so a second
#   run only rebuilds what changed). Environment: PYTHON, JOBS, ARCHS, WERROR,
#   HYPOTHESIS_PROFILE (default ci: derandomized; tandem: fresh examples).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:?usage: scripts/python-test.sh BUILD_DIR [AUTO|ON|OFF]}
mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)
CUDA=${2:-AUTO}
PYTHON=${PYTHON:-python3}
VENV=$BUILD/venv
start=$(date +%s)

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
# Build tools too, so the package builds without build isolation and the CMake
# build directory can be reused between runs.
"$VENV/bin/python" -m pip install -q --disable-pip-version-check \
  "scikit-build-core>=0.10" "nanobind>=2.0" numpy pytest hypothesis pandas
opts=()
[ -n "${ARCHS:-}" ] && opts=(-C "cmake.define.CMAKE_CUDA_ARCHITECTURES=$ARCHS")
opts+=(-C "cmake.define.TANDEM_WERROR=${WERROR:-OFF}")
CMAKE_BUILD_PARALLEL_LEVEL=${JOBS:-$(nproc)} "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
  --no-build-isolation --no-deps -C build-dir="$BUILD/python" -C cmake.define.TANDEM_CUDA="$CUDA" "${opts[@]}" .
echo "python package built in $(( $(date +%s) - start )) s"
# From outside the source tree, so the installed package is the one tested;
# hypothesis derandomized (the same examples every run) unless told otherwise.
TESTS=$PWD/python/tests
(cd "$BUILD" && HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-ci} "$VENV/bin/python" -m pytest -q -rs -p no:cacheprovider "$TESTS")
