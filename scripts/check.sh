#!/usr/bin/env bash
# The release matrix (`make check`; CI runs it after `make test`): every
# step, each in its own build folder beside BUILD_DIR, stopping at the first
# failure. BUILD_DIR is the build `make test` made (make check builds it
# first with the same variables).
#   1. the full tier (TANDEM_TEST_SCALE=full: every size and seed) of every
#      test of BUILD_DIR: the C programs, the emulated device, Python, MPI,
#      the judge, the docs;
#   2. the install, and an example built against it four ways;
#   3. without CUDA and without Highway (keys-only sorts by radix passes
#      only: the same bytes), the full tier again, PyTorch CPU tensors too;
#   4. the Python package built by pip (the wheel's layout), CPU only (the
#      CUDA sources were compiled in step 1), and its tests;
#   5. static checks (cppcheck, clang-tidy) and the API reference (Doxygen:
#      an undocumented public symbol fails);
#   6. ASan + UBSan (leaks on) over the small tier of the C programs, MPI,
#      the judge and the CUDA backend on the emulated device;
#   7. ThreadSanitizer over the emulated device's self-test (CUDA's
#      happens-before edges only);
#   8. the fuzzers (libFuzzer, ASan + UBSan), 40 s each, two at a time;
#   9. the GPU cost meter on the emulated device: every row within its
#      budget (tests/cuda_emu/cost-budgets.txt);
#  10. the benchmarks' smoke runs (small n): every peer and thread count runs;
#  11. the GPU check rehearsed (bench/device-check.sh, no GPU here): every GPU
#      step SKIPs with its reason, the build from scratch, the cuco peer when
#      third_party/cuco is there, the pip build of the package and its -k cuda
#      tests must pass (under 2 minutes with a warm ccache).
# Usage: scripts/check.sh BUILD_DIR
# Environment: JOBS (default: the cores), WERROR (default ON),
# CHECK_FROM=N to start at step N (after fixing a later step).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:?usage: scripts/check.sh BUILD_DIR}
JOBS=${JOBS:-$(nproc)}
WERROR=${WERROR:-ON}
from=${CHECK_FROM:-1}
start=$(date +%s)
step() { # N TEXT: prints the step's heading; returns 1 when it is to be skipped
  [ "$1" -ge "$from" ] || return 1
  echo "== check $1/11: $2 ($(( $(date +%s) - start )) s)"
}

step 1 "the full tier of $B (about 7 minutes on 2 cores)" &&
  env ${TEST_ENV:-OMP_WAIT_POLICY=passive} TANDEM_TEST_SCALE=full ctest --test-dir "$B" --output-on-failure -j "$JOBS"

step 2 "install, then an example against the installed library (CMake and pkg-config, shared and static)" &&
  scripts/consumer-check.sh "$B"

step 3 "without CUDA and without Highway, full tier, PyTorch CPU tensors too (build about 3 minutes)" &&
  make --no-print-directory test BUILD="$B-cpu" CUDA=OFF HWY=OFF WERROR="$WERROR" PY_TORCH=ON SCALE=full JOBS="$JOBS"

step 4 "the Python package built by pip, CPU only, and its tests (under a minute)" &&
  make --no-print-directory python-test BUILD="$B-cpu" CUDA=OFF WERROR="$WERROR" SCALE=small JOBS="$JOBS"

if step 5 "static checks (cppcheck, clang-tidy) and the API reference (Doxygen)"; then
  scripts/lint.sh "$B-lint"
  make --no-print-directory docs BUILD="$B-cpu" >/dev/null
fi

# The emulated device's fibers and stacks are not for LeakSanitizer: its
# tests run with leak detection off (tests/cuda_emu/ctest.cmake).
step 6 "ASan + UBSan: the C programs, MPI, the judge, the emulated device (small tier; about 8 minutes)" &&
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    make --no-print-directory test BUILD="$B-asan" CUDA=OFF CUDA_EMU=ON WERROR="$WERROR" SANITIZE=address,undefined \
    SCALE=small JOBS="$JOBS"

step 7 "ThreadSanitizer on the emulated device: the self-test (sort, hash, ops)" &&
  make --no-print-directory test-cuda-emu-tsan BUILD="$B-tsan" SCALE=small JOBS="$JOBS"

step 8 "the fuzzers, 40 s each, two at a time" &&
  TANDEM_TEST_SCALE=full scripts/fuzz.sh "$B-fuzz"

step 9 "the GPU cost meter on the emulated device, against its budgets" &&
  make --no-print-directory cuda-emu-cost BUILD="$B" JOBS="$JOBS"

if step 10 "the benchmarks' smoke runs (small n)"; then
  "$B-cpu"/bench/tandem-bench sort --n 100000 --reps 1 --peers --backend cpu --threads 2 >/dev/null
  "$B-cpu"/bench/tandem-bench ops --n 100000 --reps 1 --peers --backend cpu --threads 2 >/dev/null
  # With Highway (the vqsort peers) and the default threads (1 and all cores:
  # the alternating thread-scaling and vqsort-halves rows), and the B-tree's
  # alternating rows.
  "$B"/bench/tandem-bench sort --n 100000 --reps 1 --peers --backend cpu >/dev/null
  "$B"/bench/tandem-bench btree --n 100000 --reps 1 --peers --backend cpu >/dev/null
  if [ -x "$B-cpu"/mpi/tandem-mpi-bench ]; then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 \
      OMPI_MCA_btl_vader_single_copy_mechanism=none \
      mpirun -n 2 --oversubscribe "$B-cpu"/mpi/tandem-mpi-bench --n 10000 --reps 1 >/dev/null
  fi
fi
step 11 "the GPU check rehearsed without a GPU (make device-check-rehearsal)" &&
  make --no-print-directory device-check-rehearsal BUILD="$B" JOBS="$JOBS"

echo "check: every step passed in $(( $(date +%s) - start )) s"
