#!/usr/bin/env bash
# Makes the virtual environment the Python package is built and tested in:
# BUILD_DIR/venv (made with $PYTHON, default python3) with the build tools
# (so the package builds without build isolation) and the test tools from
# PyPI; with TORCH=ON also PyTorch, for its CPU tensors. A second run with
# everything present returns at once.
# Usage: scripts/python-venv.sh BUILD_DIR   (prints the venv's python)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:?usage: scripts/python-venv.sh BUILD_DIR}
mkdir -p "$BUILD"
VENV=$(cd "$BUILD" && pwd)/venv
PYTHON=${PYTHON:-python3}
stamp=$VENV/.tandem-tools${TORCH:+-torch-$TORCH}
if [ ! -f "$stamp" ]; then
  if [ ! -x "$VENV/bin/python" ]; then
    echo "python-venv: making $VENV and installing numpy, pandas, pytest, hypothesis, nanobind (a minute or two)" >&2
    "$PYTHON" -m venv "$VENV"
  fi
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
    "scikit-build-core>=0.10" "nanobind>=2.0" numpy pytest hypothesis pandas >&2
  if [ "${TORCH:-OFF}" = ON ]; then
    # PyPI's torch is a CUDA build whose dependencies are about 3 GB of NVIDIA
    # wheels (5 GB installed). Only its CPU tensors are tested, so it comes
    # without them (--no-deps, pinned; the set below is what this version
    # needs for the tests): its CUDA libraries are loaded from the CUDA
    # toolkit, except the four the toolkit lacks or has too old (NCCL), which
    # come from PyPI. About 1 GB to fetch.
    t0=$(date +%s)
    echo "python-venv: installing PyTorch (CPU tensors only; about 1 GB, a minute or two)" >&2
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
      torch==2.15.0 nvidia-nccl-cu13==2.30.7 nvidia-cusparselt-cu13==0.8.1 nvidia-nvshmem-cu13==3.7.2 \
      nvidia-cufile==1.17.1.22 typing-extensions sympy mpmath >&2
    echo "python-venv: PyTorch installed in $(( $(date +%s) - t0 )) s" >&2
  fi
  touch "$stamp"
fi
echo "$VENV/bin/python"
