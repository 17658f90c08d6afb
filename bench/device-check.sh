#!/usr/bin/env bash
# bench/device-check.sh OUTDIR: the whole GPU check of tandem in one call, for
# a machine with an NVIDIA GPU (built for sm_90: H100/H200). It needs only what
# such a machine has (CUDA toolkit, CMake, gcc, optionally ninja and Python):
# no Criterion and no package registry.
#
#  0. the machine; the driver's CUDA version against the toolkit's (a driver
#     older than the toolkit's major version runs no kernel: said first, a
#     FAIL, and no GPU step is blamed on tandem);
#  1. configure from scratch for sm_90 with warnings as errors, and build
#     (with the cuco hash peer when third_party/cuco is in the tree:
#     scripts/fetch-cuco.sh; the build line says whether it is);
#     if that machine's compiler fails the -Werror build, that is recorded
#     (FAIL) and the build is redone without -Werror so the rest still runs;
#  1b. the Python package built by pip without build isolation or a
#     registry (scikit-build-core and nanobind as installed), its own PASS,
#     FAIL or SKIP line: started in the background as soon as step 1 ends, so
#     it compiles (on the CPU cores) while the GPU steps 2-3b run, and waited
#     for before the benchmarks, which it must not disturb;
#  2. the Criterion suite when Criterion is installed (SKIP otherwise);
#  3. tandem-selftest: every operation on CUDA compared
#     bit for bit with the CPU, host and device arrays, the data operations
#     (unique, isin, group_reduce, join) included (and, GPU or not, the CPU
#     on one thread against all threads);
#  3b. tandem-pipeline-check (stream-ordered mode: 0
#     host waits, fixed-capacity inserts without a wait, deferred errors,
#     graph capture, a device pool as the allocator, two streams, find
#     overhead) and examples/fused_lookup at 2^26 records, timed against two
#     calls; a program the CUDA build should have made but did not is a
#     FAIL, not a SKIP;
#  4. tandem-bench sort, hash and btree on device-resident data at sizes that
#     fill the chip (2^27 sort keys, just under CUB's onesweep portion;
#     2^27 hash slots / B-tree keys) and in batches of 2^16, with the
#     ceilings (device copy bandwidth, random 8-byte gather) and the peers
#     (raw CUB, binary search, linear probing, cuco::static_map at loads 0.8
#     and 0.5 when built with it), every result checked (WRONG RESULT fails
#     the step): the data that sets the hash table's policy table
#     (gpu/hash_probe.cu) from a measurement, so before the sanitizers;
#  4b. calibration of the cost meter: Nsight Compute (ncu --clock-control
#     none) reads the DRAM and L2 sector counters of one call each of sort
#     keys u32, hash insert and find_hit, B-tree find_hit and unique (u64),
#     run by tandem-cost-profile at the meter's n (2^18) on its inputs;
#     scripts/calibrate_meter.py writes them beside
#     the meter's figure (docs/data/cost-meter/cuda-emu-cost.csv, a
#     snapshot of make cuda-emu-cost) with the ratios: calibration.csv. No
#     ncu, or counters it may not read (ERR_NVGPUCTRPERM): SKIP, saying so;
#  4c. the data operations from Python on device arrays beside CuPy and
#     PyTorch (python -m tandem.bench ops --backend cuda, int64 keys, 2^24
#     rows: unique, isin, searchsorted, sort against cupy.* and torch.*,
#     every result compared with tandem's; factorize, group_reduce, join);
#  5. compute-sanitizer memcheck, initcheck and synccheck over the self-test
#     (its --minimal set: every operation and type, host and device arrays,
#     n = 1 and 5001), one run per tool and structure (--only sort, hash,
#     btree; memcheck also ops) so that one slow run cannot starve the
#     others; findings, a non-zero exit or a timeout are failures;
#  6. the Python tests (-k cuda) of the package built in 1b;
#  7. last: one PASS/FAIL/SKIP line per step, then the compact table of every
#     figure with its ratio to its peer and ceiling.
# Full logs go to OUTDIR. Without a GPU every GPU step reports SKIP with the
# reason. Every step has a time limit taken from one budget (default 470 s),
# so the script ends within 8 minutes; each step keeps a reserve for the
# later steps that matter more (self-test, benchmarks, sanitizers); a step the
# budget cannot hold any more is a FAIL ("not run"), never silently dropped,
# and no limit is ever 0.
#
# What the steps cost (caps; the GPU figures are estimates until a GPU run
# records them): build up to 240 s; 1b the Python build up to 300 s but
# beside steps 2-3b, so what it adds is only what it runs past them (a
# rebuild of the library's sources, several minutes on 2 cores without
# ccache); self-tests 90 s each; pipeline checks 60 s each; benchmarks
# sort 100 s (2^27 keys: half the former 2^28), hash 100 s (the cuco rows
# add two tables' inserts and finds), B-tree 100 s; 4b calibration 60 s
# (five short processes, each a few seconds under ncu at 2^18 keys); 4c
# 60 s (2^24 rows: importing PyTorch takes seconds); sanitizer runs 40 s
# each; Python tests 60 s. The reserves below keep 4b, 4c and the memcheck
# runs ahead of the later sanitizer runs and the Python tests.
#
# Knobs (environment):
#   TANDEM_DEVCHECK_BUDGET   seconds for the whole script (default 470)
#   TANDEM_DEVCHECK_BUILD    build directory (default build-device)
#   TANDEM_DEVCHECK_ARCHS    CUDA architectures (default 90)
#   TANDEM_DEVCHECK_CMAKE_ARGS  extra configure arguments
#   TANDEM_DEVCHECK_BUILD_CAP, TANDEM_DEVCHECK_CTEST_CAP, TANDEM_DEVCHECK_PY_CAP
#                        limits of the build (default 240 s), Criterion suite
#                        (120 s) and Python build (300 s) steps, for running
#                        the script on a slower machine than the GPU's
#   TANDEM_DEVCHECK_PYTHON   the Python that builds and tests the package
#                        (default python3; the rehearsal passes the venv's)
#   TANDEM_DEVCHECK_PIP_ARGS extra arguments of the pip build (the rehearsal
#                        passes ccache as the compiler launcher)
#   TANDEM_DEVCHECK_METER    the meter's figures the calibration compares with
#                        (default docs/data/cost-meter/cuda-emu-cost.csv)
#
# Rehearsal without a GPU: make device-check-rehearsal (docs/gpu-check.md).
set -uo pipefail
OUT=${1:?usage: bench/device-check.sh OUTDIR}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 2
cd "$(dirname "$0")/.." || exit 2
BUILD=${TANDEM_DEVCHECK_BUILD:-build-device}
BUDGET=${TANDEM_DEVCHECK_BUDGET:-470}
ARCHS=${TANDEM_DEVCHECK_ARCHS:-90}
PY=${TANDEM_DEVCHECK_PYTHON:-python3}
METER=${TANDEM_DEVCHECK_METER:-docs/data/cost-meter/cuda-emu-cost.csv}
T0=$(date +%s)
steps=()
failed=0

# record STATUS NAME DETAIL: one line per step for the summary.
record() {
  steps+=("$(printf '%-4s %-28s %s' "$1" "$2" "$3")")
  [ "$1" = FAIL ] && failed=$((failed + 1))
  echo "== $1 $2: $3"
}
elapsed() { echo $(( $(date +%s) - T0 )); }
left() { echo $(( BUDGET - $(elapsed) )); }
# limit CAP: seconds a step may take: CAP, or what the budget has left less
# $reserve (kept for the later steps that matter more) and 5 s for the
# summary; prints 0 when less than $need seconds (at least 10) would remain:
# the caller then does not run the step (timeout 0 would mean "no limit").
reserve=0
need=10
limit() {
  local r=$reserve
  [ "${GPU:-0}" = 1 ] || r=0 # without a GPU no later step needs the time
  local l=$(( $(left) - 5 - r )) n=$need
  [ "$n" -ge 10 ] || n=10
  [ "$l" -lt "$1" ] || l=$1
  [ "$l" -ge "$n" ] && echo "$l" || echo 0
}
# timed NAME CAP LOG CMD...: runs CMD under a limit; sets rc (124: timed out,
# 125: not run for lack of budget) and secs.
timed() {
  local name=$1 cap=$2 log=$3 lim
  shift 3
  lim=$(limit "$cap")
  if [ "$lim" = 0 ]; then
    echo "(not run: $(left) s of the $BUDGET s budget left, $reserve s of it kept for later steps)" >"$log"
    rc=125 secs=0
    return
  fi
  local t=$(date +%s)
  timeout --kill-after=5 "$lim" "$@" >"$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - t ))
  [ $rc -eq 137 ] && rc=124
  [ $rc -eq 124 ] && echo "(timed out after $lim s)" >>"$log"
  true
}
why_not_run() { # a failure reason for rc 124/125, else the exit status
  case $1 in
  124) echo "timed out after $secs s" ;;
  125) echo "not run: time budget used up ($(left) s left)" ;;
  *) echo "exit $1" ;;
  esac
}

# ---- 0. the machine -----------------------------------------------------------
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -a)"
  echo "git: $(git rev-parse --short HEAD 2>/dev/null || echo '?') $(git status --porcelain 2>/dev/null | wc -l) changed file(s)"
  nvidia-smi 2>&1 || echo "nvidia-smi: not available"
  (command -v nvcc || ls /usr/local/cuda/bin/nvcc) 2>/dev/null && { nvcc --version 2>/dev/null || /usr/local/cuda/bin/nvcc --version; }
  cmake --version | head -1
  command -v ninja && ninja --version
  command -v "$PY" && "$PY" --version
  command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null
} >"$OUT/machine.txt" 2>&1
GPU_NAME=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)

# The driver's CUDA version (nvidia-smi's header) against the toolkit's
# (nvcc): a driver older than the toolkit's major version loads no kernel
# (cudaErrorInsufficientDriver), so every GPU step would fail for a reason
# that is not tandem's. Within one major version an older driver runs the
# code by CUDA's minor version compatibility (sm_90 code is built, no PTX JIT
# needed).
DRV_CUDA=$(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' | head -1 | sed 's/.*: //')
NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
TK_CUDA=$([ -n "$NVCC" ] && "$NVCC" --version 2>/dev/null | grep -o 'release [0-9.]*' | sed 's/release //')
if [ -z "$GPU_NAME" ]; then
  record SKIP "driver vs toolkit" "no GPU seen by nvidia-smi (toolkit ${TK_CUDA:-not found})"
elif [ -z "$DRV_CUDA" ] || [ -z "$TK_CUDA" ]; then
  record FAIL "driver vs toolkit" "cannot compare: driver CUDA '${DRV_CUDA:-?}', toolkit '${TK_CUDA:-?}' (machine.txt)"
elif [ "${DRV_CUDA%%.*}" -lt "${TK_CUDA%%.*}" ]; then
  record FAIL "driver vs toolkit" "driver supports CUDA $DRV_CUDA, toolkit is $TK_CUDA: no kernel can load; GPU steps below fail for that reason"
elif [ "${DRV_CUDA%%.*}" -eq "${TK_CUDA%%.*}" ] && [ "${DRV_CUDA#*.}" -lt "${TK_CUDA#*.}" ] 2>/dev/null; then
  record PASS "driver vs toolkit" "driver CUDA $DRV_CUDA older than toolkit $TK_CUDA, same major: minor version compatibility"
else
  record PASS "driver vs toolkit" "driver CUDA $DRV_CUDA >= toolkit $TK_CUDA"
fi

# ---- 1. configure and build ------------------------------------------------------
rm -rf "$BUILD"
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
# Where nvidia-smi sees a GPU, the CUDA backend must build (ON fails loudly
# instead of quietly building a CPU-only library).
CUDA_MODE=AUTO
[ -n "$GPU_NAME" ] && CUDA_MODE=ON
timed configure 60 "$OUT/configure.log" cmake -S . -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DTANDEM_CUDA=$CUDA_MODE -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" -DTANDEM_WERROR=ON ${TANDEM_DEVCHECK_CMAKE_ARGS:-}
CUCO="no cuco peer (no third_party/cuco: scripts/fetch-cuco.sh)"
grep -q 'cuco peer (cuCollections) found' "$OUT/configure.log" 2>/dev/null &&
  CUCO="cuco peer at $(cat third_party/cuco/COMMIT 2>/dev/null | cut -c1-10)"
if [ $rc -ne 0 ]; then
  record FAIL configure "$(why_not_run $rc) (configure.log)"
  tail -20 "$OUT/configure.log"
else
  timed build "${TANDEM_DEVCHECK_BUILD_CAP:-240}" "$OUT/build.log" cmake --build "$BUILD" -j "$(nproc)"
  if [ $rc -eq 0 ]; then
    record PASS build "$secs s, $(grep -o 'CUDA backend [A-Z]*' "$OUT/configure.log" | head -1), archs $ARCHS, warnings as errors, $CUCO"
  elif [ $rc -ne 124 ] && [ $rc -ne 125 ]; then
    # That machine's compiler may warn where the one tandem is developed
    # with does not: a finding to fix, but no reason to skip every GPU step.
    record FAIL "build -Werror" "exit $rc on this machine's compiler: $(grep -m1 -E 'error:' "$OUT/build.log" | cut -c1-150) (build.log); rebuilding without -Werror"
    grep -E 'error|Error' "$OUT/build.log" | head -20
    timed configure 60 "$OUT/configure-nowerror.log" cmake -S . -B "$BUILD" -DTANDEM_WERROR=OFF
    [ $rc -eq 0 ] && timed build "${TANDEM_DEVCHECK_BUILD_CAP:-240}" "$OUT/build-nowerror.log" cmake --build "$BUILD" -j "$(nproc)"
    if [ $rc -eq 0 ]; then record PASS "build without -Werror" "$secs s, archs $ARCHS"
    else record FAIL "build without -Werror" "$(why_not_run $rc) (build-nowerror.log)"
    fi
  else
    record FAIL build "$(why_not_run $rc) (build.log)"
  fi
fi
# The CUDA backend was configured: every CUDA program must then exist.
CUDA_BUILT=0
grep -q 'CUDA backend ON' "$OUT/configure.log" 2>/dev/null && CUDA_BUILT=1
BUILT=0
[ -x "$BUILD/tests/selftest/tandem-selftest" ] && [ -x "$BUILD/bench/tandem-bench" ] && BUILT=1
SELFTEST=$BUILD/tests/selftest/tandem-selftest
BENCH=$BUILD/bench/tandem-bench

# Is a GPU usable? The self-test says why not.
GPU=0
GPU_WHY="not built"
if [ $BUILT = 1 ]; then
  timed probe 60 "$OUT/probe.log" "$SELFTEST" --only sort --quick
  GPU_WHY=$(grep -m1 '^SKIP' "$OUT/probe.log" | sed -e 's/^SKIP: //' -e 's/tdm_ctx_create: no usable CUDA device: //')
  if [ -n "$GPU_WHY" ] && [ -n "$GPU_NAME" ]; then
    # A GPU is there but tandem cannot use it: that is a failure, not a skip.
    record FAIL "device probe" "nvidia-smi shows $GPU_NAME, but: $GPU_WHY (probe.log)"
  elif [ -z "$GPU_WHY" ] && [ $rc -ne 124 ] && [ $rc -ne 125 ]; then GPU=1
  elif [ -z "$GPU_WHY" ]; then
    GPU_WHY="the device probe did not finish"
    record FAIL "device probe" "$(why_not_run $rc) (probe.log)"
  fi
fi

# ---- 1b. the Python package, built beside the GPU steps ------------------------------
# pip compiles the library's sources once more (the wheel's own build), on
# the CPU cores while steps 2-3b keep the GPU busy; it is waited for before
# the benchmarks. Its limit leaves the benchmarks and what follows them
# their time even if it runs to the end of it.
PYSITE=$BUILD/pysite
PY_PID="" PY_WHY=""
if [ ! -f pyproject.toml ]; then
  PY_WHY="no pyproject.toml to build the package from"
elif ! command -v "$PY" >/dev/null; then
  PY_WHY="no $PY on this machine"
elif ! "$PY" -c 'import scikit_build_core, nanobind' 2>/dev/null; then
  PY_WHY="scikit-build-core or nanobind is not installed for $PY (and no registry to fetch them from)"
else
  PY_CUDA=AUTO
  [ $CUDA_BUILT = 1 ] && PY_CUDA=ON
  reserve=240 need=30
  py_lim=$(limit "${TANDEM_DEVCHECK_PY_CAP:-300}")
  if [ "$py_lim" = 0 ]; then
    PY_WHY="not run: time budget used up ($(left) s left)"
  else
    py_t0=$(date +%s)
    rm -rf "$PYSITE"
    # shellcheck disable=SC2086 # TANDEM_DEVCHECK_PIP_ARGS is a list of arguments
    (CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) timeout --kill-after=5 "$py_lim" nice -n 10 "$PY" -m pip install \
      --no-build-isolation --no-deps --no-index --disable-pip-version-check --target "$PYSITE" \
      -C build-dir="$BUILD/python-pip" -C cmake.define.TANDEM_CUDA=$PY_CUDA \
      -C cmake.define.CMAKE_CUDA_ARCHITECTURES="$ARCHS" ${TANDEM_DEVCHECK_PIP_ARGS:-} . >"$OUT/python-build.log" 2>&1
    echo $? >"$OUT/python-build.rc") &
    PY_PID=$!
  fi
fi
# py_wait: waits for the Python build and records its line (once).
py_wait() {
  [ -n "${PY_RECORDED:-}" ] && return
  PY_RECORDED=1
  if [ -z "$PY_PID" ]; then
    record SKIP "python build (pip)" "$PY_WHY"
    PYSITE=""
    return
  fi
  wait "$PY_PID"
  local prc
  prc=$(cat "$OUT/python-build.rc" 2>/dev/null || echo 1)
  secs=$(( $(date +%s) - py_t0 ))
  [ "$prc" = 137 ] && prc=124
  if [ "$prc" = 0 ]; then
    record PASS "python build (pip)" "$secs s beside the GPU steps, TANDEM_CUDA=$PY_CUDA, $("$PY" --version 2>&1), no build isolation, no index"
  else
    PY_WHY="the package did not build (python-build.log)"
    record FAIL "python build (pip)" "$(why_not_run "$prc"): $(grep -m1 -E 'error|Error' "$OUT/python-build.log" | cut -c1-120) (python-build.log)"
    PYSITE=""
  fi
}

# ---- 2. the Criterion suite -------------------------------------------------------
if [ $BUILT = 0 ]; then
  record SKIP "criterion tests" "nothing built"
elif ! grep -q 'Criterion found' "$OUT/configure.log"; then
  record SKIP "criterion tests" "Criterion not installed: its programs were not built (configure.log)"
else
  reserve=250 need=20 # the self-test, benchmarks and sanitizers come first
  timed ctest "${TANDEM_DEVCHECK_CTEST_CAP:-120}" "$OUT/ctest.log" ctest --test-dir "$BUILD" --output-on-failure -E '^selftest|^pipeline_check'
  if [ $rc -eq 0 ]; then
    record PASS "criterion tests" "$(grep -E 'tests passed' "$OUT/ctest.log" | tail -1)"
  else
    record FAIL "criterion tests" "$(why_not_run $rc): $(grep -E 'tests passed|Failed' "$OUT/ctest.log" | tail -1) (ctest.log)"
  fi
fi

# ---- 3. the self-test: the CPU on one thread against all threads (checks the
# program itself; runs without a GPU too), then CUDA -------------------------
reserve=0 need=10
if [ $BUILT = 0 ]; then
  record SKIP "selftest cpu threads" "nothing built"
else
  timed selftest-cpu 60 "$OUT/selftest-cpu.log" "$SELFTEST" --quick --cpu-only
  tally=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$OUT/selftest-cpu.log" | tail -1)
  if [ $rc -eq 0 ] && [ -n "$tally" ]; then record PASS "selftest cpu threads" "$tally (quick), $secs s"
  else record FAIL "selftest cpu threads" "$(why_not_run $rc)${tally:+: $tally} (selftest-cpu.log)"
  fi
fi

# Time kept for the benchmarks and the sanitizers, and the least time worth
# starting a run with, for the steps below.
reserve=200 need=20
name="selftest cuda"
if [ $BUILT = 0 ]; then record SKIP "$name" "nothing built"
elif [ $GPU = 0 ]; then record SKIP "$name" "$GPU_WHY"
else
  timed selftest 90 "$OUT/selftest-cuda.log" "$SELFTEST"
  tally=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$OUT/selftest-cuda.log" | tail -1)
  if [ $rc -eq 0 ] && [ -n "$tally" ]; then
    record PASS "$name" "$tally, $secs s"
  else
    record FAIL "$name" "$(why_not_run $rc)${tally:+: $tally}: $(grep -m1 '^FAIL' "$OUT/selftest-cuda.log" | cut -c1-150)"
  fi
fi

# ---- 3b. stream-ordered mode, the allocator, views (GPU-only properties) -----------------
# tandem-pipeline-check: 0 host waits and 0 warm allocations of stream-ordered
# sort / find / rank / range_count, CUDA graph capture of sort + find, a
# stream-ordered device pool as the allocator, two contexts on two streams
# with a view in a kernel, per-call time of a 2^16-key find, fixed-capacity
# inserts (0 waits when they fit, 1 when they might not, the size after), a
# deferred no-free-slot and a deferred device fault (forked child); then
# examples/fused_lookup at 2^26 records (fused kernel vs the two-call version).
reserve=150 need=20
PIPE=$BUILD/tests/tandem-pipeline-check
FUSED=$BUILD/examples/fused_lookup
# missing NAME PROG: records the step of a program that is not there: FAIL
# when the CUDA backend was built (the program should have been), else SKIP.
missing() {
  if [ $CUDA_BUILT = 1 ]; then record FAIL "$1" "the CUDA backend was built, but $2 is missing (build.log)"
  else record SKIP "$1" "nothing built"
  fi
}
name="pipeline check"
if [ $BUILT = 0 ] || [ ! -x "$PIPE" ]; then missing "$name" "$PIPE"
elif [ $GPU = 0 ]; then record SKIP "$name" "$GPU_WHY"
else
  timed pipeline 60 "$OUT/pipeline.log" "$PIPE"
  if [ $rc -eq 0 ]; then
    record PASS "$name" "$(grep -m1 'host waits' "$OUT/pipeline.log" | cut -c1-60)...; $(grep 'stream-ordered:' "$OUT/pipeline.log" | sed 's/.*: //'), $secs s"
  else
    record FAIL "$name" "$(why_not_run $rc): $(grep -m1 '^FAIL' "$OUT/pipeline.log" | cut -c1-150) (pipeline.log)"
  fi
fi
if [ $BUILT = 0 ] || [ ! -x "$FUSED" ]; then missing "fused lookup 2^26" "$FUSED"
elif [ $GPU = 0 ]; then record SKIP "fused lookup 2^26" "$GPU_WHY"
else
  timed fused 60 "$OUT/fused.log" "$FUSED" 26 10
  if [ $rc -eq 0 ]; then record PASS "fused lookup 2^26" "$(grep -m1 'fused is' "$OUT/fused.log" | sed 's/^fused_lookup: //')"
  else record FAIL "fused lookup 2^26" "$(why_not_run $rc): $(tail -1 "$OUT/fused.log" | cut -c1-150) (fused.log)"
  fi
fi

# ---- 4. benchmarks (before the sanitizers: their figures are the GPU's word on the policies) ----
bench() { # bench NAME CAP ARGS...
  local s=$1 cap=$2
  shift 2
  local name="bench $s"
  if [ $BUILT = 0 ]; then record SKIP "$name" "nothing built"; return; fi
  if [ $GPU = 0 ]; then record SKIP "$name" "$GPU_WHY"; return; fi
  timed "$s" "$cap" "$OUT/bench-$s.txt" "$BENCH" "$s" --backend cuda --peers \
    --csv "$OUT/bench-$s.csv" "$@"
  local wrong
  wrong=$(grep -c '^WRONG RESULT' "$OUT/bench-$s.txt")
  if [ $rc -eq 0 ]; then
    record PASS "$name" "results checked, $(($(wc -l <"$OUT/bench-$s.csv") - 1)) rows, $secs s"
  else
    record FAIL "$name" "$(why_not_run $rc), $wrong WRONG RESULT line(s): $(grep -m1 -E 'WRONG RESULT|tandem-bench:' "$OUT/bench-$s.txt" | cut -c1-150)"
  fi
}
py_wait # the benchmarks run with the CPU cores idle
# Each keeps time for the calibration, the Python operations and the
# memcheck runs at least.
reserve=170 need=40
bench sort 100 --type u32,u64,i32,f32 --n 134217728 --reps 3
reserve=150
bench hash 100 --n 134217728 --reps 3
reserve=130
bench btree 100 --n 134217728 --reps 3

# ---- 4b. calibration: the hardware's sector counters beside the meter's figure ---------------
# One call per row, bracketed by tandem-cost-profile with cudaProfilerStart
# and Stop, so ncu (--profile-from-start off) profiles exactly the kernels
# the meter counted; --clock-control none leaves the clocks as they run.
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || true)
CALPROG=$BUILD/tests/tandem-cost-profile
CAL_ROWS="sort/keys/u32 hash/insert/u64 hash/find_hit/u64 btree/find_hit/u64 ops/unique/u64"
CAL_METRICS=dram__sectors_read.sum,dram__sectors_write.sum,lts__t_sectors.sum
name="calibration (ncu)"
reserve=110 need=20
if [ $BUILT = 0 ] || [ ! -x "$CALPROG" ]; then missing "$name" "$CALPROG"
elif [ $GPU = 0 ]; then record SKIP "$name" "$GPU_WHY"
elif [ -z "$NCU" ]; then record SKIP "$name" "Nsight Compute (ncu) is not installed"
elif [ ! -f "$METER" ]; then record FAIL "$name" "no meter figures at $METER"
else
  cal=$OUT/calibration
  mkdir -p "$cal"
  cal_why="" cal_skip=0 cal_t=$(date +%s)
  for row in $CAL_ROWS; do
    f=$cal/${row//\//-}
    timed calibrate 30 "$f.log" "$NCU" --clock-control none \
      --profile-from-start off --metrics "$CAL_METRICS" --export "$f" -f "$CALPROG" --only "${row%%/*}" --profile "$row"
    grep '^profiled: ' "$f.log" >"$f.out"
    if grep -q -E 'ERR_NVGPUCTRPERM|permission to access NVIDIA GPU Performance Counters' "$f.log"; then
      cal_why="ncu may not read the performance counters here (ERR_NVGPUCTRPERM: the driver restricts them to admin users)"
      cal_skip=1
      break
    elif grep -q -i -E '==ERROR==.*not supported' "$f.log"; then
      # Some runtimes (virtualized or partitioned GPUs) expose no counters.
      cal_why="ncu cannot profile here: $(grep -m1 -i -E '==ERROR==.*not supported' "$f.log" | cut -c1-120)"
      cal_skip=1
      break
    elif [ $rc -ne 0 ] || [ ! -s "$f.out" ]; then
      cal_why="$(why_not_run $rc) on $row: $(grep -m1 -E '==ERROR==|tandem-cost' "$f.log" | cut -c1-120) (calibration/${f##*/}.log)"
      break
    fi
    "$NCU" --import "$f.ncu-rep" --csv --page raw --print-units base >"$f.ncu" 2>>"$f.log"
  done
  if [ -z "$cal_why" ]; then
    "$PY" scripts/calibrate_meter.py "$METER" "$cal" "$OUT/calibration.csv" >"$OUT/calibration.txt" 2>&1
    crc=$?
    if [ $crc -eq 0 ]; then
      record PASS "$name" "$(( $(tail -n +2 "$OUT/calibration.csv" | wc -l) )) rows, $(( $(date +%s) - cal_t )) s (calibration.txt, calibration.csv)"
    else
      record FAIL "$name" "calibrate_meter.py: $(grep -m1 'calibrate_meter:' "$OUT/calibration.txt" | cut -c1-150) (calibration.txt)"
    fi
  elif [ $cal_skip = 1 ]; then record SKIP "$name" "$cal_why"
  else record FAIL "$name" "$cal_why"
  fi
fi

# ---- 4c. the data operations from Python, beside CuPy and PyTorch --------------------------------
name="python ops vs cupy/torch"
reserve=90 need=20
py_wait
if [ -z "$PYSITE" ]; then record SKIP "$name" "$PY_WHY"
else
  timed pyops 60 "$OUT/bench-python-ops.txt" env PYTHONPATH="$PWD/$PYSITE${PYTHONPATH:+:$PYTHONPATH}" \
    "$PY" -m tandem.bench ops --backend cuda --type int64 --n 16777216 --reps 5 --csv "$OUT/bench-python-ops.csv"
  if grep -q '^skipped:' "$OUT/bench-python-ops.txt"; then
    record SKIP "$name" "$(grep -m1 '^skipped:' "$OUT/bench-python-ops.txt" | sed 's/^skipped: //' | cut -c1-150)"
  elif [ $rc -eq 0 ]; then
    peers=$(cut -d, -f3 "$OUT/bench-python-ops.csv" | grep -o -E '^(cupy|torch)' | sort -u | paste -sd' ' -)
    record PASS "$name" "$(($(wc -l <"$OUT/bench-python-ops.csv") - 1)) rows, peers: ${peers:-none (neither CuPy nor PyTorch sees the GPU: bench-python-ops.txt)}, every peer's result equal to tandem's, $secs s"
  else
    record FAIL "$name" "$(why_not_run $rc), $(grep -c '^WRONG RESULT' "$OUT/bench-python-ops.txt") WRONG RESULT line(s): $(grep -m1 -E 'WRONG RESULT|Error' "$OUT/bench-python-ops.txt" | cut -c1-150)"
  fi
fi

# ---- 5. compute-sanitizer over the self-test, one run per tool and structure ----------------
# memcheck of all three structures first, then initcheck, then synccheck: a
# run the budget cannot hold any more is a FAIL ("not run"), and a slow one
# starves none of the others of its own limit.
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
reserve=20 need=15 # the Python tests after them
for tool in memcheck initcheck synccheck; do
  parts="sort hash btree"
  [ $tool = memcheck ] && parts="$parts ops" # the data operations: one run, the first tool
  for part in $parts; do
    name="compute-sanitizer $tool $part"
    if [ $BUILT = 0 ]; then record SKIP "$name" "nothing built"; continue; fi
    if [ $GPU = 0 ]; then record SKIP "$name" "$GPU_WHY"; continue; fi
    if [ -z "$SAN" ]; then record FAIL "$name" "compute-sanitizer not found"; continue; fi
    log=$OUT/sanitizer-$tool-$part.log
    timed "$tool" 40 "$log" "$SAN" --tool "$tool" --error-exitcode 9 \
      --print-limit 50 "$SELFTEST" --minimal --only "$part"
    summary=$(grep -m1 -o 'ERROR SUMMARY: [0-9]* error[s]*' "$log")
    if [ $rc -eq 0 ]; then
      record PASS "$name" "${summary:-no errors}, selftest $(grep -E '^[0-9]+ passed' "$log" | tail -1), $secs s"
    elif grep -q 'Device not supported' "$log"; then
      record SKIP "$name" "compute-sanitizer does not support this device/runtime ($(grep -m1 'Device not supported' "$log" | cut -c1-80))"
    else
      record FAIL "$name" "$(why_not_run $rc)${summary:+: $summary} (sanitizer-$tool-$part.log)"
    fi
  done
done

# ---- 6. Python tests ---------------------------------------------------------------------------
name="python tests (-k cuda)"
reserve=0 need=10
# Run without a GPU too: the tests' own skips then say why, and the package
# built in 1b is imported and used.
py_wait
if [ ! -d python/tests ]; then
  record SKIP "$name" "no python/tests in this tree"
elif [ -z "$PYSITE" ]; then
  record SKIP "$name" "$PY_WHY"
elif ! "$PY" -c 'import pytest' 2>/dev/null; then
  record SKIP "$name" "pytest is not installed for $PY"
else
  timed pytest 60 "$OUT/python-tests.log" env PYTHONPATH="$PWD/$PYSITE${PYTHONPATH:+:$PYTHONPATH}" \
    "$PY" -m pytest python/tests -k cuda -q -p no:cacheprovider
  tally=$(grep -E '[0-9]+ (passed|failed|skipped|deselected|error)' "$OUT/python-tests.log" | tail -1)
  if [ $rc -eq 0 ]; then record PASS "$name" "$tally, $secs s"
  elif [ $rc -eq 5 ]; then record SKIP "$name" "no test selected by -k cuda"
  else record FAIL "$name" "$(why_not_run $rc): $tally (python-tests.log)"
  fi
fi

# ---- 7. summary, then the table -------------------------------------------------------------------
{
  echo
  echo "== tandem device check: $(date -u +%Y-%m-%dT%H:%MZ), ${GPU_NAME:-no GPU}, $(elapsed) s of $BUDGET"
  printf '%s\n' "${steps[@]}"
  echo "== $failed step(s) failed; logs in $OUT"
  [ -f "$OUT/calibration.txt" ] && { echo; echo "cost meter against the hardware's counters:"; cat "$OUT/calibration.txt"; }
  echo
  if ls "$OUT"/bench-*.csv >/dev/null 2>&1; then
    "$PY" scripts/devcheck_table.py "$OUT"/bench-*.csv 2>&1 ||
      cat "$OUT"/bench-*.csv # no Python: the raw figures
  else
    echo "(no benchmark figures: the benchmarks did not run)"
  fi
} | tee "$OUT/summary.txt"
[ $failed -eq 0 ]
