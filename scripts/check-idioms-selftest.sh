#!/usr/bin/env bash
# Proves scripts/check-idioms.sh (run by ctest as "idioms_selftest"): it
# passes on a copy of the sources, and fails on copies with a planted raw
# OpenMP pragma (three spellings) or a second instruction-set probe.
# Usage: scripts/check-idioms-selftest.sh SOURCE_DIR
set -euo pipefail

src=$1
check="$src/scripts/check-idioms.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fresh() {
  rm -rf "$tmp/t"
  mkdir -p "$tmp/t"
  for d in src cpu gpu mpi; do [ -d "$src/$d" ] && cp -r "$src/$d" "$tmp/t/"; done
}
fails=0
expect() { # expect 0|1 WHAT
  if "$check" "$tmp/t" >/dev/null 2>&1; then got=0; else got=1; fi
  if [ "$got" != "$1" ]; then
    echo "idioms_selftest: $2: check-idioms.sh exited $got, expected $1" >&2
    fails=1
  fi
}
fresh
expect 0 "unchanged sources"
fresh
printf '%s\n' 'static void planted(int *a, int n) {' '  int i;' '#pragma omp parallel for' \
  '  for (i = 0; i < n; i++) a[i] = i;' '}' >>"$tmp/t/cpu/hash_cpu.c"
expect 1 "#pragma omp parallel for in cpu/hash_cpu.c"
fresh
echo '#  pragma   omp parallel' >>"$tmp/t/cpu/radix_impl.h"
expect 1 "spaced pragma in cpu/radix_impl.h"
fresh
echo '#define PLANTED _Pragma("omp parallel for")' >>"$tmp/t/cpu/cpu.h"
expect 1 "_Pragma beside the macro in cpu/cpu.h"
fresh
echo 'static int planted(void) { return __builtin_cpu_supports("avx2"); }' >>"$tmp/t/cpu/sort_cpu.c"
expect 1 "instruction-set probe in cpu/sort_cpu.c"
fresh
echo 'static int planted(void) { return __builtin_cpu_supports("avx2"); }' >>"$tmp/t/cpu/btree_cpu.c"
expect 1 "second probe in cpu/btree_cpu.c outside bt_isa_pick"
[ $fails -eq 0 ] && echo "idioms_selftest: check-idioms.sh passes the sources and catches 5 planted violations"
exit $fails
