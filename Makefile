# tandem: the two commands are `make test` and `make bench`.
#   make test              build (CUDA when nvcc is found) and run every test,
#                          the Python package's too (built with pip in $(BUILD)/venv)
#   make bench             build and run the headline benchmark with peers
#   make bench-all         build and run every benchmark row with peers (tandem-bench all --peers)
#   make docs              API reference (Doxygen) in $(BUILD)/docs
#   make plots             throughput-vs-n plots in docs/img
# Variables: BUILD=dir, CUDA=AUTO|ON|OFF, MPI=AUTO|ON|OFF, HWY=AUTO|ON|OFF (Highway's vqsort
#            for keys-only sorts), WERROR=ON|OFF, TYPE=Release|Debug,
#            SANITIZE=address,undefined, ARCHS="80-real;90" (PY_ARCHS: the Python
#            package's, default ARCHS), CTEST_JOBS (default JOBS), BENCH_ARGS=...,
#            PYTHON_TESTS=ON|OFF (off by itself under SANITIZE), PY_CUDA=AUTO|ON|OFF,
#            PY_TORCH=ON|OFF (default OFF: ON installs PyTorch into the venv, about 1 GB,
#            and its CPU tensors are tested; needs the CUDA toolkit's libraries)

BUILD    ?= build
CUDA     ?= AUTO
MPI      ?= AUTO
HWY      ?= AUTO
WERROR   ?= OFF
TYPE     ?= Release
SANITIZE ?=
ARCHS    ?=
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
# Test programs run at once (ctest -j): most are one thread for most of
# their time (the judge's runs, the Criterion programs' small cases).
CTEST_JOBS ?= $(JOBS)
# The sanitizer runtimes cannot be loaded into a Python process: sanitized
# builds test the C library only.
PYTHON_TESTS ?= $(if $(SANITIZE),OFF,ON)
PY_CUDA  ?= $(CUDA)
PY_TORCH ?= OFF
PY_ARCHS ?= $(ARCHS)
BENCH_ARGS ?= headline --peers --csv $(BUILD)/bench-headline.csv --table $(BUILD)/bench-headline.txt

CMAKE_FLAGS = -DCMAKE_BUILD_TYPE=$(TYPE) -DTANDEM_CUDA=$(CUDA) -DTANDEM_MPI=$(MPI) -DTANDEM_HWY=$(HWY) -DTANDEM_WERROR=$(WERROR) \
              -DTANDEM_SANITIZE="$(SANITIZE)" $(if $(ARCHS),-DCMAKE_CUDA_ARCHITECTURES="$(ARCHS)")

.PHONY: all deps configure build test python-test bench docs plots clean test-cuda-emu test-cuda-emu-tsan cuda-emu-planted cuda-emu-coverage

all: build

deps:
	@scripts/deps.sh

configure: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(CTEST_JOBS)
ifneq ($(CUDA),OFF)
	$(MAKE) test-cuda-emu BUILD=$(BUILD) SANITIZE=$(SANITIZE)
endif
ifeq ($(PYTHON_TESTS),ON)
	JOBS=$(JOBS) ARCHS="$(PY_ARCHS)" WERROR=$(WERROR) TORCH=$(PY_TORCH) scripts/python-test.sh $(BUILD) $(PY_CUDA)
endif

# The CUDA backend on the emulated device (tests/cuda_emu; test-only, never
# installed): its own CMake project in $(BUILD)/cuda-emu. CUDA_EMU_SEEDS="1 2 3"
# picks the seeds; a failure prints the seed to replay (TANDEM_EMU_SEED).
# Needs the CUDA toolkit's headers (CUDA_INCLUDE, default /usr/local/cuda/include);
# skipped with a message without them.
CUDA_INCLUDE ?= /usr/local/cuda/include
test-cuda-emu:
	@if [ ! -f $(CUDA_INCLUDE)/cuda_runtime_api.h ]; then \
	  echo "test-cuda-emu: skipped: no CUDA headers in $(CUDA_INCLUDE)"; exit 0; fi; \
	cmake -S tests/cuda_emu -B $(BUILD)/cuda-emu -DCMAKE_BUILD_TYPE=Release -DCUDA_INCLUDE=$(CUDA_INCLUDE) \
	  -DEMU_SANITIZE="$(SANITIZE)" >/dev/null && \
	cmake --build $(BUILD)/cuda-emu -j $(JOBS) && \
	tests/cuda_emu/run.sh $(BUILD)/cuda-emu

# The emulated device under ThreadSanitizer, with CUDA's happens-before edges
# only (tests/cuda_emu/src/emu_tsan.h): the self-test under both designs
# (--minimal, seed CUDA_EMU_SEEDS, default 1); a data race fails it. One
# OpenMP thread: libgomp is not instrumented, so TSan would not see its
# barriers in the CPU backend's parallel regions.
test-cuda-emu-tsan:
	@if [ ! -f $(CUDA_INCLUDE)/cuda_runtime_api.h ]; then \
	  echo "test-cuda-emu-tsan: skipped: no CUDA headers in $(CUDA_INCLUDE)"; exit 0; fi; \
	cmake -S tests/cuda_emu -B $(BUILD)/cuda-emu-tsan -DCMAKE_BUILD_TYPE=Release -DCUDA_INCLUDE=$(CUDA_INCLUDE) \
	  -DEMU_SANITIZE=thread >/dev/null && \
	cmake --build $(BUILD)/cuda-emu-tsan -j $(JOBS) --target tandem-selftest && \
	OMP_NUM_THREADS=1 TSAN_OPTIONS=halt_on_error=1 CUDA_EMU_ONLY=selftest CUDA_EMU_QUICK=--minimal CUDA_EMU_SEEDS="$${CUDA_EMU_SEEDS:-1}" \
	  tests/cuda_emu/run.sh $(BUILD)/cuda-emu-tsan

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
	-CUDA_EMU_SEEDS="1" tests/cuda_emu/run.sh $(BUILD)/cuda-emu-cov
	$(COV_VENV)/bin/gcovr -r . --filter 'gpu/' --object-directory $(BUILD)/cuda-emu-cov --txt $(BUILD)/cuda-emu-cov/coverage.txt $(BUILD)/cuda-emu-cov
	@tail -3 $(BUILD)/cuda-emu-cov/coverage.txt

# The Python package alone: pip-installed into $(BUILD)/venv, then its tests.
python-test: deps
	JOBS=$(JOBS) ARCHS="$(ARCHS)" WERROR=$(WERROR) TORCH=$(PY_TORCH) scripts/python-test.sh $(BUILD) $(PY_CUDA)

bench: configure
	cmake --build $(BUILD) -j $(JOBS) --target tandem-bench
	$(BUILD)/bench/tandem-bench $(BENCH_ARGS)

.PHONY: bench-all
bench-all: configure
	cmake --build $(BUILD) -j $(JOBS) --target tandem-bench
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
