#!/usr/bin/env bash
# scripts/without-criterion.sh CMD...: runs CMD where Criterion is not
# installed, as on a GPU machine without a package registry, while leaving it
# installed for everyone else: in a private mount namespace (root, util-linux
# unshare) its header directory is covered by an empty one and the library
# directory by a copy made of links to every file but libcriterion*.
# Used to prove that the build and bench/device-check.sh need no Criterion:
#   scripts/without-criterion.sh bash bench/device-check.sh /tmp/out
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: scripts/without-criterion.sh CMD..." >&2; exit 2; }
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
