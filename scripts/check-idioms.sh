#!/usr/bin/env bash
# Checks that the library's sources keep one idiom per kind of choice (run by
# ctest as the "idioms" test):
#  1. every parallel loop goes through TDM__PAR_FOR / _DYN / _REDUCE
#     (cpu/cpu.h): no OpenMP pragma in src/, cpu/, gpu/ or mpi/src/ but the
#     one inside that macro's definition;
#  2. the CPU instruction set of the B-tree queries is probed in one function
#     (bt_isa_pick in cpu/btree_cpu.c) and carried as a table: no
#     __builtin_cpu_supports anywhere else in cpu/ or src/.
# Usage: scripts/check-idioms.sh SOURCE_DIR
set -euo pipefail

src=$1
status=0
dirs=()
for d in src cpu gpu mpi/src; do [ -d "$src/$d" ] && dirs+=("$src/$d"); done
if [ ${#dirs[@]} -eq 0 ]; then
  echo "idioms: no source folders under $src" >&2
  exit 1
fi
files=$(find "${dirs[@]}" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' \) | sort)

# ---- 1. parallel loops -----------------------------------------------------------
# A pragma, _Pragma or the macro's own helper naming omp; the definition of
# TDM__PAR_LOOP is the one allowed line.
allowed='TDM__PAR_PRAGMA(omp parallel for num_threads(tdm__par_nt) CLAUSES)'
raw=$(echo "$files" | xargs grep -nE '(pragma|Pragma|PRAGMA)[[:space:]]*\(?"?[[:space:]]*omp([[:space:]]|$)' /dev/null |
  grep -vF "$src/cpu/cpu.h:" || true)
def=$(grep -nF "$allowed" "$src/cpu/cpu.h" | wc -l)
other_in_cpu_h=$(grep -nE '(pragma|Pragma|PRAGMA)[[:space:]]*\(?"?[[:space:]]*omp([[:space:]]|$)' "$src/cpu/cpu.h" |
  grep -vF "$allowed" || true)
if [ -n "$raw$other_in_cpu_h" ]; then
  echo "idioms: OpenMP pragmas outside TDM__PAR_FOR (cpu/cpu.h); write the loop with TDM__PAR_FOR," >&2
  echo "        TDM__PAR_FOR_DYN or TDM__PAR_FOR_REDUCE:" >&2
  printf '%s\n' "$raw" "$other_in_cpu_h" | sed '/^$/d; s/^/  /' >&2
  status=1
fi
if [ "$def" -ne 1 ]; then
  echo "idioms: cpu/cpu.h should hold the one parallel pragma of TDM__PAR_LOOP; found $def" >&2
  status=1
fi

# ---- 2. instruction-set probes ---------------------------------------------------------
probe=$(echo "$files" | xargs grep -n '__builtin_cpu_supports' /dev/null | grep -vF "$src/cpu/btree_cpu.c:" || true)
in_bt=$(grep -c '__builtin_cpu_supports' "$src/cpu/btree_cpu.c" || true)
in_pick=$(sed -n '/^static tdm__bt_isa bt_isa_pick(void) {$/,/^}$/p' "$src/cpu/btree_cpu.c" | grep -c '__builtin_cpu_supports' || true)
if [ -n "$probe" ] || [ "$in_bt" != "$in_pick" ]; then
  echo "idioms: instruction-set probes outside bt_isa_pick (cpu/btree_cpu.c); pick a table once instead:" >&2
  [ -n "$probe" ] && echo "$probe" | sed 's/^/  /' >&2
  [ "$in_bt" != "$in_pick" ] && echo "  cpu/btree_cpu.c: $in_bt probes, $in_pick of them in bt_isa_pick" >&2
  status=1
fi

[ $status -eq 0 ] && echo "idioms: parallel loops and instruction-set choices in one place each"
exit $status
