#!/usr/bin/env bash
# Installs the Debian packages tandem needs to build, test and benchmark.
# Required packages (and those named in TANDEM_EXTRA_DEPS by a make target)
# must be there; optional ones (benchmark peers) only add comparisons and are
# never a reason to fail. As root it installs what is missing; otherwise it
# prints the apt line to run and fails only if a required package is missing.
# Usage: scripts/deps.sh [--check]   (--check: only report; exit 1 if a
#                                      required package is missing)
set -euo pipefail

# libhwy-dev: Highway's vqsort finishes keys-only sorts (and is tandem-bench's vqsort peer); the
# library still builds without it (make HWY=OFF), with radix passes only.
required=(cmake make gcc g++ pkg-config libcriterion-dev python3-dev python3-venv libopenmpi-dev openmpi-bin libhwy-dev ${TANDEM_EXTRA_DEPS:-})  # python3-*: the Python package; openmpi: tandem_mpi
optional=(libabsl-dev)   # benchmark peer (Abseil)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

missing=() missing_opt=()
for p in "${required[@]}"; do installed "$p" || missing+=("$p"); done
for p in "${optional[@]}"; do installed "$p" || missing_opt+=("$p"); done

if [ ${#missing[@]} -eq 0 ] && [ ${#missing_opt[@]} -eq 0 ]; then
  exit 0
fi
note_optional() {
  if [ ${#missing_opt[@]} -gt 0 ]; then
    echo "scripts/deps.sh: optional benchmark peers not installed (tandem-bench runs without them):" \
         "${missing_opt[*]}" >&2
  fi
}
if [ "${1:-}" = "--check" ] || [ "$(id -u)" -ne 0 ]; then
  note_optional
  if [ ${#missing[@]} -gt 0 ]; then
    echo "tandem needs these Debian packages; run:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  exit 0
fi
echo "scripts/deps.sh: installing ${missing[*]} ${missing_opt[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Optional packages one by one: one that the archive lacks must not stop the rest.
for p in "${missing_opt[@]}"; do
  apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 ||
    echo "scripts/deps.sh: optional package $p could not be installed; continuing without it" >&2
done
