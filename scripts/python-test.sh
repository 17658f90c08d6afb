#!/usr/bin/env bash
# Builds the Python package with pip into a virtual environment and runs its
# tests (python/tests).
# Usage: scripts/python-test.sh BUILD_DIR [CUDA=AUTO|ON|OFF]
#   The venv is BUILD_DIR/venv (made with $PYTHON, default python3; test tools
#   from PyPI), the package's CMake build BUILD_DIR/python (kept, so a second
#   run only rebuilds what changed). Environment: PYTHON, JOBS, ARCHS, WERROR,
#   HYPOTHESIS_PROFILE (default ci: derandomized; tandem: fresh examples),
#   TORCH=ON|OFF (default OFF): also install PyTorch, for its CPU tensors
#   (python/tests/test_torch.py, which then fails instead of skipping when
#   torch does not import).
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
if [ "${TORCH:-OFF}" = ON ]; then
  # PyPI's torch is a CUDA build whose dependencies are about 3 GB of NVIDIA
  # wheels (5 GB installed). Only its CPU tensors are tested, so it comes
  # without them (--no-deps, pinned; the set below is what this version needs
  # for the tests): its CUDA libraries are loaded from the CUDA toolkit (its
  # lib directory on the loader's path), except the four the toolkit lacks or
  # has too old (NCCL), which come from PyPI. About 1 GB to fetch.
  t0=$(date +%s)
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
    torch==2.15.0 nvidia-nccl-cu13==2.30.7 nvidia-cusparselt-cu13==0.8.1 nvidia-nvshmem-cu13==3.7.2 \
    nvidia-cufile==1.17.1.22 typing-extensions sympy mpmath
  echo "PyTorch installed in $(( $(date +%s) - t0 )) s"
  export TANDEM_TEST_TORCH=1
fi
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
