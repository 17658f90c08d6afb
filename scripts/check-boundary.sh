#!/usr/bin/env bash
# Checks the library's boundaries (run by ctest as the "boundary" test):
#  1. the shared library exports exactly the functions declared TDM_API in
#     include/tandem/*.h (the core's services for layered libraries among
#     them: include/tandem/services.h) (nm -D): no test hook, no internal; tandem/mpi.h (mpi/include) is
#     tandem_mpi's and must not be under include/tandem;
#  2. no symbol defined in an object of one backend (cpu/, gpu/) is referenced
#     by an object of the other (nm over the library's object files);
#  3. no source of one backend includes a file of the other, and src/ includes
#     neither (src/backend.h is the boundary).
# Usage: scripts/check-boundary.sh LIBTANDEM_SO OBJECT_DIR SOURCE_DIR
set -euo pipefail

lib=$1 objdir=$2 src=$3
status=0

# ---- 1. exports ----------------------------------------------------------------
# detail/ declares no exports: a TDM_API there is an error (its functions
# would be exported without a public header declaring them).
stray=$(grep -l '^TDM_API' "$src"/include/tandem/detail/*.h || true)
if [ -n "$stray" ] || [ -e "$src"/include/tandem/mpi.h ]; then
  echo "boundary: exports declared outside include/tandem/*.h: $stray" \
       "$( [ -e "$src"/include/tandem/mpi.h ] && echo "include/tandem/mpi.h (belongs in mpi/include)")" >&2
  status=1
fi
want=$(sed -n 's/^TDM_API[^(]*[ *]\(tdm_[a-z0-9_]*\)(.*/\1/p' "$src"/include/tandem/*.h | sort -u)
have=$(nm -D --defined-only "$lib" | awk 'NF >= 3 {print $3}' | sort -u)
if [ -z "$want" ]; then
  echo "boundary: found no TDM_API declarations in $src/include/tandem" >&2
  exit 1
fi
extra=$(comm -13 <(echo "$want") <(echo "$have"))
missing=$(comm -23 <(echo "$want") <(echo "$have"))
if [ -n "$extra" ]; then
  echo "boundary: $lib exports symbols not declared in include/tandem/*.h:" >&2
  echo "$extra" | sed 's/^/  /' >&2
  status=1
fi
if [ -n "$missing" ]; then
  echo "boundary: $lib does not export these public functions:" >&2
  echo "$missing" | sed 's/^/  /' >&2
  status=1
fi

# ---- 2. symbols across the backends -------------------------------------------------
objs() { find "$objdir" -path "*/$1/*" -name '*.o' | sort; }
defined() { [ $# -eq 0 ] || nm --defined-only -g "$@" 2>/dev/null | awk 'NF >= 3 {print $3}' | sort -u; }
undefined() { [ $# -eq 0 ] || nm -u "$@" 2>/dev/null | awk '{print $NF}' | sort -u; }
mapfile -t cpu_objs < <(objs cpu)
mapfile -t gpu_objs < <(objs gpu)
if [ ${#cpu_objs[@]} -eq 0 ]; then
  echo "boundary: no CPU backend objects under $objdir" >&2
  status=1
fi
for dir in cpu:gpu gpu:cpu; do
  from=${dir%%:*} to=${dir##*:}
  if [ "$from" = cpu ]; then d=("${cpu_objs[@]}") u=("${gpu_objs[@]}"); else d=("${gpu_objs[@]}") u=("${cpu_objs[@]}"); fi
  [ ${#d[@]} -gt 0 ] && [ ${#u[@]} -gt 0 ] || continue
  cross=$(comm -12 <(defined "${d[@]}") <(undefined "${u[@]}"))
  if [ -n "$cross" ]; then
    echo "boundary: $to/ objects use symbols defined in $from/:" >&2
    echo "$cross" | sed 's/^/  /' >&2
    status=1
  fi
done

# ---- 3. includes ----------------------------------------------------------------------
bad=$( (grep -HnE '#\s*include\s*"[^"]*\bgpu/' "$src"/cpu/* || true
        grep -HnE '#\s*include\s*"[^"]*\bcpu/' "$src"/gpu/* || true
        grep -HnE '#\s*include\s*"[^"]*\b(cpu|gpu)/' "$src"/src/*.[ch] "$src"/include/tandem/detail/* || true) )
if [ -n "$bad" ]; then
  echo "boundary: includes across the backend boundary:" >&2
  echo "$bad" | sed 's/^/  /' >&2
  status=1
fi

[ $status -eq 0 ] && echo "boundary: exports match include/tandem/*.h ($(echo "$want" | wc -l) functions); cpu/ and gpu/ are independent"
exit $status
