# tandem: the two commands are `make test` and `make bench`.
#   make test              build (CUDA when nvcc is found) and run the fast tier of every
#                          test: the C programs, the CUDA backend on the emulated device,
#                          the Python package built in the tree, MPI, the judge, the docs
#                          (TANDEM_TEST_SCALE=small: edge sizes plus a few random ones, one seed)
#   make check             the release matrix, what CI runs after make test: the full tier
#                          (TANDEM_TEST_SCALE=full: every size and seed) on the same build, the
#                          build without CUDA and Highway, ASan + UBSan, ThreadSanitizer on the
#                          emulated device, the fuzzers, the pip-built package, the install,
#                          the static checks, the API reference, the GPU cost meter's budgets,
#                          the benchmark smoke runs and the GPU check's rehearsal
#   make bench             build and run the headline benchmark with peers
#   make bench-all         build and run every benchmark row with peers (tandem-bench all --peers)
#   make docs              API reference (Doxygen) in $(BUILD)/docs
#   make device-check-rehearsal  the GPU check (bench/device-check.sh) on a machine without a
#                          GPU: every GPU step SKIPs with its reason (docs/gpu-check.md)
#   make plots             throughput-vs-n plots in docs/img
# Variables: BUILD=dir, CUDA=AUTO|ON|OFF, MPI=AUTO|ON|OFF, HWY=AUTO|ON|OFF (Highway's vqsort
#            for keys-only sorts), WERROR=ON|OFF, TYPE=Release|Debug,
#            SANITIZE=address,undefined, ARCHS="80-real;90", CTEST_JOBS (default JOBS),
#            SCALE=small|full (the tier: TANDEM_TEST_SCALE), LABELS=emu (ctest -L: one kind;
#            the kinds are listed in scripts/check-test-labels.py), CUDA_EMU=AUTO|ON|OFF (the
#            emulated device: AUTO with the CUDA backend), BENCH_ARGS=...,
#            PYTHON_TESTS=ON|OFF (off by itself under SANITIZE), PY_TORCH=ON|OFF (default OFF: ON
#            installs PyTorch into the venv, about 1 GB, and its CPU tensors are tested; needs
#            the CUDA toolkit's libraries), PY_ARCHS (the pip-built package's, make check)

BUILD    ?= build
CUDA     ?= AUTO
MPI      ?= AUTO
HWY      ?= AUTO
WERROR   ?= OFF
TYPE     ?= Release
SANITIZE ?=
ARCHS    ?=
SCALE    ?= small
LABELS   ?=
CUDA_EMU ?= AUTO
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
# Test programs run at once (ctest -j): most are one thread for most of
# their time (the judge's runs, the Criterion programs' small cases).
CTEST_JOBS ?= $(JOBS)
# The sanitizer runtimes cannot be loaded into a Python process: sanitized
# builds test the C library only.
PYTHON_TESTS ?= $(if $(SANITIZE),OFF,ON)
PY_TORCH ?= OFF
PY_ARCHS ?= $(ARCHS)
BENCH_ARGS ?= headline --peers --csv $(BUILD)/bench-headline.csv --table $(BUILD)/bench-headline.txt
# ccache (used by the CMake build when installed) keys on paths relative to
# the tree, so a clone in another folder, or another build folder, reuses
# what was compiled once.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

# Whether the build makes the emulated device (for the messages; CMake decides).
EMU_BUILT = $(if $(filter ON,$(CUDA_EMU)),yes,$(if $(filter AUTO,$(CUDA_EMU)),$(if $(filter OFF,$(CUDA)),,yes)))
comma := ,
PY_FLAGS = $(if $(filter ON,$(PYTHON_TESTS)),-DTANDEM_PYTHON=ON -DPython_EXECUTABLE=$(abspath $(BUILD))/venv/bin/python \
             -DTANDEM_PY_TORCH=$(PY_TORCH),-DTANDEM_PYTHON=OFF)
CMAKE_FLAGS = -DCMAKE_BUILD_TYPE=$(TYPE) -DTANDEM_CUDA=$(CUDA) -DTANDEM_MPI=$(MPI) -DTANDEM_HWY=$(HWY) -DTANDEM_WERROR=$(WERROR) \
              -DTANDEM_SANITIZE="$(SANITIZE)" -DTANDEM_CUDA_EMU=$(CUDA_EMU) -DTANDEM_CUDA_INCLUDE=$(CUDA_INCLUDE) $(PY_FLAGS) \
              $(if $(ARCHS),-DCMAKE_CUDA_ARCHITECTURES="$(ARCHS)")

.PHONY: all deps venv configure build test check python-test bench docs plots clean test-cuda-emu test-cuda-emu-tsan \
        cuda-emu-planted cuda-emu-coverage

all: build

deps:
	@scripts/deps.sh

# The Python tests' virtual environment ($(BUILD)/venv), before the configure
# that builds the module against its Python.
venv: deps
ifeq ($(PYTHON_TESTS),ON)
	@TORCH=$(PY_TORCH) scripts/python-venv.sh $(BUILD) >/dev/null
endif

configure: venv
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: configure
	@echo "make: building the library$(if $(filter OFF,$(CUDA)),, with its CUDA sources), the tests$(if $(EMU_BUILT),$(comma) the emulated device)$(if $(filter ON,$(PYTHON_TESTS)),$(comma) the Python module) (a fresh build takes about 5 minutes on 2 cores; ccache makes a rebuild seconds)"
	cmake --build $(BUILD) -j $(JOBS)

# The tests of one tier (SCALE), every kind or those of LABELS, JOBS at once.
# OpenMP waits passively in the tests (TEST_ENV): ctest -j runs a test on
# each core, and a test that forces two threads past the library's load
# guard (cpu/cpu_load.c; the split sort's checks) spent most of its time in
# libgomp's spin-waits beside another (test_sort beside a busy loop: 92 s,
# 25 s passive, 24 s alone). Results do not depend on the wait policy.
TEST_ENV ?= OMP_WAIT_POLICY=passive
export TEST_ENV
test: build
	@echo "make: running the $(SCALE) tier of the tests$(if $(LABELS), labelled $(LABELS)) ($(if $(filter full,$(SCALE)),about 15,about 5) minutes on 2 cores; ctest prints each as it ends)"
	$(TEST_ENV) TANDEM_TEST_SCALE=$(SCALE) ctest --test-dir $(BUILD) --output-on-failure -j $(CTEST_JOBS) $(if $(LABELS),-L '$(LABELS)')

# The release matrix (CI runs make test, then this): every step below, in
# its own build folder beside $(BUILD), stopping at the first failure.
check: build
	JOBS=$(JOBS) WERROR=$(WERROR) scripts/check.sh $(BUILD)

# The emulated device's tests alone (they are part of make test: label emu).
test-cuda-emu:
	$(MAKE) test LABELS=emu BUILD=$(BUILD) CUDA_EMU=ON PYTHON_TESTS=OFF

# The emulated device under ThreadSanitizer, with CUDA's happens-before edges
# only (tests/cuda_emu/src/emu_tsan.h): the self-test's sort, hash and ops
# (TSAN_PARTS adds selftest-btree), at the tier's seeds; a data race fails it. One OpenMP thread: libgomp is not
# instrumented, so TSan would not see its barriers in the CPU backend's
# parallel regions. The race build runs its blocks on one thread too, so the
# parts run side by side, JOBS at a time (each prints its lines whole).
CUDA_INCLUDE ?= /usr/local/cuda/include
# The parts in halves (the self-test's --shard), the longest first: ops took
# 297 s and hash 195 s whole beside each other (small tier), so the pair
# waited on ops alone; halves keep both cores busy to the end.
TSAN_PARTS ?= selftest:ops:1/2 selftest:ops:2/2 selftest:hash:1/2 selftest:hash:2/2 selftest:sort
test-cuda-emu-tsan:
	@if [ ! -f $(CUDA_INCLUDE)/cuda_runtime_api.h ]; then \
	  echo "test-cuda-emu-tsan: skipped: no CUDA headers in $(CUDA_INCLUDE)"; exit 0; fi; \
	cmake -S tests/cuda_emu -B $(BUILD)/cuda-emu-tsan -DCMAKE_BUILD_TYPE=Release -DCUDA_INCLUDE=$(CUDA_INCLUDE) \
	  -DEMU_SANITIZE=thread >/dev/null && \
	cmake --build $(BUILD)/cuda-emu-tsan -j $(JOBS) --target tandem-selftest && \
	printf '%s\n' $(TSAN_PARTS) | OMP_NUM_THREADS=1 TSAN_OPTIONS=halt_on_error=1 TANDEM_TEST_SCALE=$(SCALE) \
	  xargs -P $(JOBS) -I{} tests/cuda_emu/run.sh $(BUILD)/cuda-emu-tsan {}

# The planted kernel bugs of tests/cuda_emu/planted, each expected to be caught
# (rebuilds a patched copy per bug under ASan: minutes; not part of make test).
cuda-emu-planted:
	JOBS=$(JOBS) tests/cuda_emu/planted.sh $(BUILD)/cuda-emu-planted

# Line coverage of gpu/ from the emulated run (gcov + gcovr), in
# $(BUILD)/cuda-emu-cov/coverage.txt.
# gcovr comes from PyPI into a venv of the build folder.
COV_VENV = $(BUILD)/cov-venv
$(COV_VENV)/bin/gcovr:
	python3 -m venv $(COV_VENV) && $(COV_VENV)/bin/pip install -q gcovr
cuda-emu-coverage: $(COV_VENV)/bin/gcovr
	cmake -S tests/cuda_emu -B $(BUILD)/cuda-emu-cov -DCUDA_INCLUDE=$(CUDA_INCLUDE) -DEMU_COVERAGE=ON >/dev/null
	cmake --build $(BUILD)/cuda-emu-cov -j $(JOBS)
	find $(BUILD)/cuda-emu-cov -name '*.gcda' -delete
	-TANDEM_TEST_SCALE=small tests/cuda_emu/run.sh $(BUILD)/cuda-emu-cov
	$(COV_VENV)/bin/gcovr -r . --filter 'gpu/' --object-directory $(BUILD)/cuda-emu-cov --txt $(BUILD)/cuda-emu-cov/coverage.txt $(BUILD)/cuda-emu-cov
	@tail -3 $(BUILD)/cuda-emu-cov/coverage.txt

# The Python package as a user installs it: built by pip into $(BUILD)/venv
# (the library's sources compiled once more), then its tests (make check).
python-test: deps
	JOBS=$(JOBS) ARCHS="$(PY_ARCHS)" WERROR=$(WERROR) TORCH=$(PY_TORCH) TANDEM_TEST_SCALE=$(SCALE) \
	  scripts/python-test.sh $(BUILD) $(CUDA)

# The benchmark builds only the library and tandem-bench; a build folder
# that make test configured is reused as it is, a new one is configured
# without the Python tests (no virtual environment to make).
bench-build: deps
	@[ -f $(BUILD)/CMakeCache.txt ] || cmake -S . -B $(BUILD) $(CMAKE_FLAGS) -DTANDEM_PYTHON=OFF
	@echo "make: building the library and tandem-bench (a fresh build takes about 4 minutes on 2 cores with CUDA, 1 without)"
	cmake --build $(BUILD) -j $(JOBS) --target tandem-bench

bench: bench-build
	$(BUILD)/bench/tandem-bench $(BENCH_ARGS)

.PHONY: bench-all bench-build
bench-all: bench-build
	$(BUILD)/bench/tandem-bench all --peers --csv $(BUILD)/bench-all.csv --table $(BUILD)/bench-all.txt

# API reference from the header comments (Doxygen); undocumented public
# symbols fail the build.
docs:
	@TANDEM_EXTRA_DEPS=doxygen scripts/deps.sh
	mkdir -p $(BUILD)/docs
	(cat docs/Doxyfile; echo "OUTPUT_DIRECTORY = $(BUILD)/docs") | doxygen -
	@echo "API reference: $(BUILD)/docs/html/index.html"

# Throughput-vs-n plots of every structure and its peers into docs/img.
plots: build
	@TANDEM_EXTRA_DEPS=python3-matplotlib scripts/deps.sh
	scripts/plots.sh $(BUILD) $(PLOT_NS)

clean:
	rm -rf $(BUILD)

# What each GPU operation costs on the emulated device's cost meter
# (tests/cuda_emu/README.md, "Cost meter"): a metered emulated build in
# $(BUILD)/cuda-emu-meter, a table, $(BUILD)/cuda-emu-cost.csv, and a failure
# when a row exceeds its limits in tests/cuda_emu/cost-budgets.txt (minutes).
.PHONY: cuda-emu-cost
cuda-emu-cost:
	cmake -S tests/cuda_emu -B $(BUILD)/cuda-emu-meter -DCMAKE_BUILD_TYPE=Release -DCUDA_INCLUDE=$(CUDA_INCLUDE) \
	  -DEMU_METER=ON >/dev/null
	cmake --build $(BUILD)/cuda-emu-meter -j $(JOBS) --target tandem-cost
	tests/cuda_emu/cost.sh $(BUILD)/cuda-emu-meter $(BUILD)/cuda-emu-cost.csv

# The GPU check (bench/device-check.sh) rehearsed on a machine without a GPU
# (docs/gpu-check.md): every GPU step SKIPs with its reason, the build runs
# from scratch in $(BUILD)-devcheck (ccache makes that minutes), the Python
# package is built by pip without build isolation against $(BUILD)/venv's
# Python (the stand-in for the GPU machine's), and the cuco peer is compiled
# when third_party/cuco is there (scripts/fetch-cuco.sh). Criterion is left
# out, as on the GPU machine. Limits are widened for 2 cores.
.PHONY: device-check-rehearsal
DEVCHECK_OUT ?= $(BUILD)/device-check-rehearsal
device-check-rehearsal: venv
	TANDEM_DEVCHECK_PYTHON=$(abspath $(BUILD))/venv/bin/python TANDEM_DEVCHECK_BUILD=$(BUILD)-devcheck \
	  TANDEM_DEVCHECK_BUDGET=2400 TANDEM_DEVCHECK_BUILD_CAP=1500 TANDEM_DEVCHECK_PY_CAP=1500 \
	  TANDEM_DEVCHECK_CMAKE_ARGS="-DTANDEM_CRITERION=OFF" bench/device-check.sh $(DEVCHECK_OUT)
