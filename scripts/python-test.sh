#!/usr/bin/env bash
# The Python package as a user installs it: built by pip (scikit-build-core,
# the wheel's layout) into the virtual environment of scripts/python-venv.sh,
# then its tests (python/tests) run against that install from outside the
# source tree. `make test` tests the package built inside the tree instead
# (label python); this is part of `make check`.
# Usage: scripts/python-test.sh BUILD_DIR [CUDA=AUTO|ON|OFF]
#   The package's CMake build is BUILD_DIR/python-pip (kept, so a second run
#   only rebuilds what changed). Environment: PYTHON, JOBS, ARCHS, WERROR,
#   HYPOTHESIS_PROFILE (default ci: derandomized; tandem: fresh examples),
#   TORCH=ON|OFF (default OFF: see scripts/python-venv.sh), TANDEM_TEST_SCALE.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:?usage: scripts/python-test.sh BUILD_DIR [AUTO|ON|OFF]}
CUDA=${2:-AUTO}
PY=$(scripts/python-venv.sh "$BUILD")
BUILD=$(cd "$BUILD" && pwd)
start=$(date +%s)
[ "${TORCH:-OFF}" = ON ] && export TANDEM_TEST_TORCH=1
opts=()
[ -n "${ARCHS:-}" ] && opts=(-C "cmake.define.CMAKE_CUDA_ARCHITECTURES=$ARCHS")
opts+=(-C "cmake.define.TANDEM_WERROR=${WERROR:-OFF}")
echo "python-test: pip builds the package (the library's sources once more$( [ "$CUDA" != OFF ] && echo ", CUDA included: several minutes on 2 cores"))"
CMAKE_BUILD_PARALLEL_LEVEL=${JOBS:-$(nproc)} "$PY" -m pip install -q --disable-pip-version-check \
  --no-build-isolation --no-deps -C build-dir="$BUILD/python-pip" -C cmake.define.TANDEM_CUDA="$CUDA" "${opts[@]}" .
echo "python-test: package built in $(( $(date +%s) - start )) s"
# From outside the source tree, so the installed package is the one tested.
TESTS=$PWD/python/tests
(cd "$BUILD" && HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-ci} "$PY" -m pytest -q -rs -p no:cacheprovider "$TESTS")
