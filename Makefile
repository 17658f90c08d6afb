# tandem: the two commands are `make test` and `make bench`.
#   make test              build (CUDA when nvcc is found) and run every test
#   make bench             build and run the headline benchmark with peers
#   make docs              API reference (Doxygen) in $(BUILD)/docs
#   make plots             throughput-vs-n plots in docs/img
# Variables: BUILD=dir, CUDA=AUTO|ON|OFF, MPI=AUTO|ON|OFF, WERROR=ON|OFF, TYPE=Release|Debug,
#            SANITIZE=address,undefined, ARCHS="80-real;90", BENCH_ARGS=...

BUILD    ?= build
CUDA     ?= AUTO
MPI      ?= AUTO
WERROR   ?= OFF
TYPE     ?= Release
SANITIZE ?=
ARCHS    ?=
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
BENCH_ARGS ?= sort --peers --reps 5 --csv $(BUILD)/bench-sort.csv

CMAKE_FLAGS = -DCMAKE_BUILD_TYPE=$(TYPE) -DTANDEM_CUDA=$(CUDA) -DTANDEM_MPI=$(MPI) -DTANDEM_WERROR=$(WERROR) \
              -DTANDEM_SANITIZE="$(SANITIZE)" $(if $(ARCHS),-DCMAKE_CUDA_ARCHITECTURES="$(ARCHS)")

.PHONY: all deps configure build test bench docs plots clean

all: build

deps:
	@scripts/deps.sh

configure: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure

bench: build
	$(BUILD)/bench/tandem-bench $(BENCH_ARGS)

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
