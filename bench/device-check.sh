#!/usr/bin/env bash
# bench/device-check.sh OUTDIR: the whole GPU check of tandem in one call, for
# a machine with an NVIDIA GPU (built for sm_90, an H100/H200):
#   1. configure for sm_90 from scratch and build (warnings as errors);
#   2. run the whole test suite with the GPU cases enabled;
#   2b. the Python package's tests (CuPy / PyTorch GPU cases) when the Python
#      tools are there: the module is built in the same tree when nanobind
#      imports, or a prebuilt wheel is taken from $TANDEM_PY_WHEEL;
#   3. run the GPU tests under compute-sanitizer memcheck and racecheck;
#   4. run the GPU benchmarks at sizes that fill the chip (2^28 sort keys,
#      2^27 hash/B-tree keys), device-resident, with peers;
#   5. print a compact table last.
# Full logs go to OUTDIR. Without a usable GPU it still builds and tests, and
# says which GPU parts it skipped and why. Each step has a time limit so the
# whole script ends in under 8 minutes.
set -uo pipefail
OUT=${1:?usage: bench/device-check.sh OUTDIR}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
BUILD=build-device
T0=$(date +%s)
summary=()
note() { summary+=("$1"); echo "== $1"; }
left() { echo $(( 480 - ($(date +%s) - T0) )); }

nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1 || echo "no nvidia-smi" >"$OUT/nvidia-smi.txt"

# 1. build
rm -rf "$BUILD"
PYOPT=()
if NB=$(python3 -m nanobind --cmake_dir 2>/dev/null); then
  PYOPT=(-DTANDEM_PYTHON=ON -Dnanobind_DIR="$NB" -DPython_EXECUTABLE="$(command -v python3)")
fi
if cmake -S . -B "$BUILD" -DTANDEM_CUDA=AUTO -DCMAKE_CUDA_ARCHITECTURES=90 -DTANDEM_WERROR=ON \
     -DCMAKE_BUILD_TYPE=Release "${PYOPT[@]}" >"$OUT/configure.log" 2>&1 &&
   timeout 240 cmake --build "$BUILD" -j "$(nproc)" >"$OUT/build.log" 2>&1; then
  note "build: ok ($(grep -o 'CUDA backend [A-Z]*' "$OUT/configure.log" | head -1))"
else
  note "build: FAILED (see build.log)"
  tail -30 "$OUT/build.log"
  printf '%s\n' "${summary[@]}"
  exit 1
fi

DEVICES=$("$BUILD"/bench/tandem-bench sort --backend cuda --n 1 --reps 1 >/dev/null 2>"$OUT/probe.txt"; echo $?)
if [ "$DEVICES" = 0 ]; then GPU=1; else GPU=0; fi
[ $GPU = 1 ] || note "GPU parts skipped: $(cat "$OUT/probe.txt" | tr '\n' ' ')"

# 2. tests (GPU cases run when a device is usable, else skip with a reason)
if timeout "$(( $(left) > 150 ? 150 : $(left) ))" ctest --test-dir "$BUILD" --output-on-failure >"$OUT/ctest.log" 2>&1; then
  note "tests: $(grep -E 'tests passed' "$OUT/ctest.log" | tail -1)"
else
  note "tests: FAILED: $(grep -E 'tests passed|Failed|\*\*\*' "$OUT/ctest.log" | tail -3 | tr '\n' ' ')"
fi

# 2b. Python package tests, with the array libraries installed on this machine
PYPKG="$BUILD/pypkg"
mkdir -p "$PYPKG"
if ls "$BUILD"/python/_core*.so >/dev/null 2>&1; then
  cp -r python/tandem "$PYPKG/" && cp "$BUILD"/python/_core*.so "$PYPKG/tandem/"
elif [ -n "${TANDEM_PY_WHEEL:-}" ] && [ -f "$TANDEM_PY_WHEEL" ]; then
  python3 -m pip install -q --no-deps --no-index --target "$PYPKG" "$TANDEM_PY_WHEEL" >"$OUT/pip.log" 2>&1
fi
if [ ! -f "$PYPKG/tandem/__init__.py" ]; then
  note "python tests skipped: nanobind is not installed and no TANDEM_PY_WHEEL was given"
elif ! python3 -c "import numpy, pytest" 2>/dev/null; then
  note "python tests skipped: numpy or pytest is not installed"
else
  (cd "$BUILD" && PYTHONPATH="$PWD/pypkg" timeout "$(( $(left) > 120 ? 120 : $(left) ))" \
     python3 -m pytest -q -rs -p no:cacheprovider "$OLDPWD/tests/python") >"$OUT/pytest.log" 2>&1
  note "python tests: $(tail -1 "$OUT/pytest.log")"
fi

# 3. compute-sanitizer on the GPU tests
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
if [ $GPU = 1 ] && [ -n "$SAN" ]; then
  for tool in memcheck racecheck; do
    findings=0
    # Only the programs with GPU cases (suites named *cuda*), 30 s each, so
    # both tools fit the time budget.
    for src in tests/test_*.c; do
      grep -q 'Test([a-z_]*cuda' "$src" || continue
      name=$(basename "$src" .c)
      t="$BUILD/tests/$name"
      [ -x "$t" ] || continue
      [ "$(left)" -gt 120 ] || { echo "(skipped: time budget)" >"$OUT/sanitizer-$tool-$name.log"; continue; }
      timeout 30 "$SAN" --tool "$tool" --error-exitcode 9 "$t" --filter '*cuda*/*' --jobs 1 \
        >"$OUT/sanitizer-$tool-$name.log" 2>&1
      rc=$?
      if [ $rc -ne 0 ] && [ $rc -ne 124 ]; then findings=$((findings + 1)); fi
      [ $rc -eq 124 ] && echo "(timed out)" >>"$OUT/sanitizer-$tool-$name.log"
    done
    note "compute-sanitizer $tool: $findings test program(s) with findings"
  done
elif [ $GPU = 1 ]; then
  note "compute-sanitizer: not found, skipped"
fi

# 4. benchmarks on the GPU, device-resident, sizes that fill the chip
if [ $GPU = 1 ]; then
  timeout "$(( $(left) > 200 ? 200 : $(left) ))" "$BUILD"/bench/tandem-bench sort --backend cuda --type u32,u64 \
    --n 268435456 --reps 5 --peers --csv "$OUT/bench-sort-cuda.csv" >"$OUT/bench-sort-cuda.txt" 2>&1 ||
    note "sort benchmark: exit $? (see bench-sort-cuda.txt)"
  for s in hash btree; do
    if "$BUILD"/bench/tandem-bench --list | grep -qx "$s"; then
      timeout "$(( $(left) > 100 ? 100 : $(left) ))" "$BUILD"/bench/tandem-bench "$s" --backend cuda \
        --n 134217728 --reps 5 --peers --csv "$OUT/bench-$s-cuda.csv" >"$OUT/bench-$s-cuda.txt" 2>&1 ||
        note "$s benchmark: exit $? (see bench-$s-cuda.txt)"
    fi
  done
fi

# 5. compact table
echo
echo "== tandem device check ($(date -u +%Y-%m-%dT%H:%MZ), $(head -1 "$OUT/nvidia-smi.txt" | cut -c1-60)), $(( $(date +%s) - T0 )) s"
printf '%s\n' "${summary[@]}"
for f in "$OUT"/bench-*-cuda.csv; do
  [ -f "$f" ] || continue
  awk -F, 'NR > 1 { printf "%-6s %-12s %-20s %-4s %-4s n=%-10s %10.1f M/s\n", $1, $2, $3, $5, $6, $7, $11 }' "$f"
done
