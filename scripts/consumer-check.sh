#!/usr/bin/env bash
# Installs tandem from BUILD_DIR into a temporary prefix, then builds and runs
# an example against the installed library four ways: CMake find_package with
# the shared and the static library, and pkg-config, shared and static.
# Usage: scripts/consumer-check.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:?usage: scripts/consumer-check.sh BUILD_DIR}
PREFIX=$(mktemp -d)
WORK=$(mktemp -d)
trap 'rm -rf "$PREFIX" "$WORK"' EXIT

cmake --install "$BUILD" --prefix "$PREFIX" >/dev/null
LIBDIR=$(dirname "$(find "$PREFIX" -name 'tandem.pc' | head -1)")/..
"$BUILD"/examples/sort_floats --make "$WORK/f.bin" 100000 >/dev/null

# tandem/mpi.h is tandem_mpi's: installed with it, and only with it; the
# core's services for layered libraries are installed with the core.
INC=$(find "$PREFIX" -path '*/include/tandem' -type d | head -1)
[ -f "$INC/services.h" ] || { echo "consumer: tandem/services.h not installed"; exit 1; }
if [ -f "$LIBDIR/pkgconfig/tandem-mpi.pc" ] && [ ! -f "$INC/mpi.h" ]; then
  echo "consumer: tandem_mpi installed without tandem/mpi.h"; exit 1
elif [ ! -f "$LIBDIR/pkgconfig/tandem-mpi.pc" ] && [ -e "$INC/mpi.h" ]; then
  echo "consumer: tandem/mpi.h installed without tandem_mpi"; exit 1
fi

run() { # name, binary
  if "$2" "$WORK/f.bin" --cpu >"$WORK/$1.out" 2>&1; then
    echo "  $1: ok ($(head -1 "$WORK/$1.out"))"
  else
    echo "  $1: FAILED"; cat "$WORK/$1.out"; exit 1
  fi
}

echo "consumer: find_package(tandem) -> tandem::tandem (shared)"
cmake -S examples -B "$WORK/cmake-shared" -DCMAKE_PREFIX_PATH="$PREFIX" >/dev/null
cmake --build "$WORK/cmake-shared" >/dev/null
run cmake-shared "$WORK/cmake-shared/sort_floats"
# ldd's output is captured first: with pipefail, grep -q closing the pipe early
# would let SIGPIPE in ldd fail the test at random.
links() { local deps; deps=$(ldd "$1"); grep -q libtandem.so <<<"$deps"; }
if links "$WORK/cmake-shared/sort_floats"; then echo "  (links libtandem.so)"; else
  echo "  expected a link to libtandem.so"; exit 1; fi

echo "consumer: find_package(tandem) with TANDEM_USE_STATIC -> static library"
cmake -S examples -B "$WORK/cmake-static" -DCMAKE_PREFIX_PATH="$PREFIX" -DTANDEM_USE_STATIC=ON >/dev/null
cmake --build "$WORK/cmake-static" >/dev/null
run cmake-static "$WORK/cmake-static/sort_floats"
if links "$WORK/cmake-static/sort_floats"; then echo "  linked the shared library"; exit 1; fi

export PKG_CONFIG_PATH="$LIBDIR/pkgconfig"
echo "consumer: pkg-config tandem (shared)"
cc -std=c11 -D_GNU_SOURCE examples/sort_floats.c -o "$WORK/pc-shared" $(pkg-config --cflags --libs tandem) \
  -Wl,-rpath,"$LIBDIR"
run pc-shared "$WORK/pc-shared"

echo "consumer: pkg-config --static tandem (static)"
cc -std=c11 -D_GNU_SOURCE examples/sort_floats.c -o "$WORK/pc-static" $(pkg-config --cflags tandem) \
  "$LIBDIR/libtandem.a" $(pkg-config --static --libs tandem | sed 's/-ltandem//')
run pc-static "$WORK/pc-static"

# tandem_mpi, when tandem was built with MPI: pkg-config and CMake consumers of
# the distributed-sort example, run on two ranks.
if [ -f "$LIBDIR/pkgconfig/tandem-mpi.pc" ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
  run_mpi() { # name, binary
    "$2" --make "$WORK/ints.txt" 10000 >/dev/null
    if mpirun -n 2 --oversubscribe "$2" "$WORK/ints.txt" "$WORK/$1.sorted" >"$WORK/$1.out" 2>&1 &&
       LC_ALL=C sort -n "$WORK/ints.txt" | cmp -s - "$WORK/$1.sorted"; then
      echo "  $1: ok ($(head -1 "$WORK/$1.out"))"
    else
      echo "  $1: FAILED"; cat "$WORK/$1.out"; exit 1
    fi
  }
  echo "consumer: pkg-config tandem-mpi"
  cc -std=c11 -D_GNU_SOURCE mpi/examples/mpi_sort_file.c -o "$WORK/pc-mpi" $(pkg-config --cflags --libs tandem-mpi) \
    -Wl,-rpath,"$LIBDIR"
  run_mpi pc-mpi "$WORK/pc-mpi"
  echo "consumer: find_package(tandem) -> tandem::tandem_mpi"
  mkdir -p "$WORK/cmake-mpi-src"
  cp mpi/examples/mpi_sort_file.c "$WORK/cmake-mpi-src/"
  printf '%s\n' 'cmake_minimum_required(VERSION 3.25)' 'project(mpi_consumer LANGUAGES C)' \
    'find_package(tandem REQUIRED)' 'add_executable(mpi_sort_file mpi_sort_file.c)' \
    'target_compile_definitions(mpi_sort_file PRIVATE _GNU_SOURCE)' \
    'target_link_libraries(mpi_sort_file PRIVATE tandem::tandem_mpi)' >"$WORK/cmake-mpi-src/CMakeLists.txt"
  cmake -S "$WORK/cmake-mpi-src" -B "$WORK/cmake-mpi" -DCMAKE_PREFIX_PATH="$PREFIX" >/dev/null
  cmake --build "$WORK/cmake-mpi" >/dev/null
  run_mpi cmake-mpi "$WORK/cmake-mpi/mpi_sort_file"
fi
