#!/usr/bin/env bash
# Installs the Debian packages tandem needs to build, test and benchmark.
# As root it installs what is missing; otherwise it prints the apt line to run.
# Usage: scripts/deps.sh [--check]   (--check: only report, exit 1 if missing)
set -euo pipefail

required=(cmake make gcc g++ pkg-config libcriterion-dev libopenmpi-dev openmpi-bin)
optional=(libhwy-dev libabsl-dev)   # benchmark peers (vqsort, Abseil)
want=("${required[@]}" "${optional[@]}" ${TANDEM_EXTRA_DEPS:-})

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "${1:-}" = "--check" ]; then
  echo "missing packages: ${missing[*]}" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "tandem needs these Debian packages; run:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "scripts/deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
