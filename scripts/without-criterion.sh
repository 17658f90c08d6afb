#!/usr/bin/env bash
# scripts/without-criterion.sh CMD...: runs CMD where Criterion is not
# installed, as on a GPU machine without a package registry, while leaving it
# installed for everyone else: in a private mount namespace (root, util-linux
# unshare) its header directory is covered by an empty one and the library
# directory by a copy made of links to every file but libcriterion*.
# Used to prove that the build and bench/device-check.sh need no Criterion:
#   scripts/without-criterion.sh bash bench/device-check.sh /tmp/out
# scripts/without-criterion.sh --check [BUILD] [CMAKE ARGS...] is that proof
# for the build: it configures BUILD (default build-nocriterion) with
# Criterion hidden, builds what a GPU machine runs (tandem-selftest, the
# view.h compile units and, when the CUDA backend is configured,
# tandem-pipeline-check) and fails unless each was built and registered with
# ctest and no Criterion program was.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: scripts/without-criterion.sh CMD... | --check [BUILD] [CMAKE ARGS...]" >&2; exit 2; }
if [ "$1" = --check ]; then
  shift
  build=${1:-build-nocriterion}
  [ $# -gt 0 ] && shift
  cd "$(dirname "$0")/.."
  exec "$0" bash -euo pipefail -c '
    build=$1
    shift
    cmake -S . -B "$build" -DTANDEM_HWY=OFF -DTANDEM_MPI=OFF "$@" | tee "$build.configure.log"
    targets=(tandem-selftest tandem_view_compile)
    cuda=0
    grep -q "CUDA backend ON" "$build.configure.log" && cuda=1 && targets+=(tandem-pipeline-check)
    grep -q "Criterion found" "$build.configure.log" && { echo "without-criterion: Criterion was found" >&2; exit 1; }
    cmake --build "$build" -j "${JOBS:-2}" --target "${targets[@]}"
    tests=$(ctest --test-dir "$build" -N)
    bad=0
    need() { [ -x "$1" ] || { echo "without-criterion: $1 was not built" >&2; bad=1; }; }
    need "$build/tests/selftest/tandem-selftest"
    if [ $cuda = 1 ]; then
      need "$build/tests/tandem-pipeline-check"
      grep -q "pipeline_check\$" <<<"$tests" || { echo "without-criterion: pipeline_check not registered" >&2; bad=1; }
    fi
    grep -q "test_sort\$" <<<"$tests" && { echo "without-criterion: a Criterion program was registered" >&2; bad=1; }
    [ $bad = 0 ] && echo "without-criterion: built and registered without Criterion: ${targets[*]}"
    rm -f "$build.configure.log"
    exit $bad
  ' check "$build" "$@"
fi
exec unshare -m -- bash -euo pipefail -c '
  mount --make-rprivate /
  lib=/usr/lib/$(gcc -print-multiarch)
  inc=/usr/include/criterion
  tmp=$(mktemp -d)
  mkdir "$tmp/orig" "$tmp/lib" "$tmp/empty"
  mount --bind "$lib" "$tmp/orig"
  for f in "$tmp/orig"/* "$tmp/orig"/.[!.]*; do
    [ -e "$f" ] || [ -L "$f" ] || continue
    case ${f##*/} in libcriterion*) continue ;; esac
    ln -s "$f" "$tmp/lib/${f##*/}"
  done
  mount --bind "$tmp/lib" "$lib"
  [ -d "$inc" ] && mount --bind "$tmp/empty" "$inc"
  if ls "$lib"/libcriterion* "$inc"/criterion.h >/dev/null 2>&1; then
    echo "without-criterion: Criterion is still visible" >&2
    exit 1
  fi
  echo "without-criterion: libcriterion and criterion/criterion.h hidden" >&2
  exec "$@"
' without-criterion "$@"
