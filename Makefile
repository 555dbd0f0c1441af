# Makefile - the README's two commands, and the steps they are made of.
#
#   make test    install missing Debian packages (as root), build everything, run every test:
#                C library and C tests under ctest plain, under ASan+UBSan and under TSan; header
#                hygiene; exported symbols; version; the installed package used by a CMake and a
#                pkg-config consumer; Swift build (warnings are errors), swift test plain and
#                under TSan; the benchmark smoke run. Runs every step, prints a summary, fails if
#                any step failed.
#   make bench   release builds (SwiftPM -c release, CMake Release) and the benchmark report
#                (Benchmarks/run; BENCH_ARGS="--filter mem" etc. are passed to it).
#
# Steps can be run alone: make deps | c-test | headers | symbols | version-check | consumer |
# asan | tsan | swift-build | swift-test | swift-tsan | bench-smoke. Others: help (lists them).
#
# C builds use CMakePresets.json (build/<preset>/): dev (Debug, -Werror), asan, tsan, static,
# release, ci. They use gcc (CC): a C program linked with the Swift toolchain's clang TSan runtime
# needs libdispatch.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

# --- knobs ----------------------------------------------------------------------------------------
JOBS ?= 2
CMAKE ?= cmake
CTEST ?= ctest
SWIFT ?= swift
# SwiftPM's scratch directory: .build, a folder inside it, or one outside the checkout. Not
# another folder of the checkout: the C target's path is the package root, and SwiftPM 6.3 then
# fails every incremental build with "unknown build description".
SWIFT_SCRATCH ?= .build
# C and C++ compilers for CMake and the check scripts (not exported: SwiftPM reads CC too and
# must keep its own clang).
ifeq ($(origin CC),default)
CC := gcc
endif
ifeq ($(origin CXX),default)
CXX := $(shell command -v g++ >/dev/null 2>&1 && echo g++ || echo clang++)
endif
TOOLS_ENV = CC=$(CC) CXX=$(CXX)

# Where the CMake presets build (binaryDir in CMakePresets.json; not a knob).
BUILD_DIR := build
DEV_DIR := $(BUILD_DIR)/dev
STATIC_DIR := $(BUILD_DIR)/static
RELEASE_DIR := $(BUILD_DIR)/release

SWIFT_COMMON := --scratch-path $(SWIFT_SCRATCH)
# Debug builds (swift-build, swift-test, bench-smoke share them, so nothing is rebuilt): warnings
# are errors in our Swift and C targets.
SWIFT_DEBUG_FLAGS ?= $(SWIFT_COMMON) -Xswiftc -warnings-as-errors -Xcc -Werror
SWIFT_RELEASE_FLAGS ?= $(SWIFT_COMMON) -c release

# --- benchmarks (extend here) ---------------------------------------------------------------------
# The runner, when present, owns the benchmark: it builds the C program (CMake Release, static
# library, in BENCH_C_BUILD_DIR) and the Swift executable (swift build -c release in
# SWIFT_SCRATCH), runs both and prints the report. Without it, `make bench` builds the release
# preset and SwiftPM -c release itself and runs the programs below, each skipped while missing.
BENCH_RUNNER ?= Benchmarks/run
BENCH_C_BUILD_DIR ?= $(BUILD_DIR)/bench-c
# (Not CC: SwiftPM would take it as its C compiler.)
BENCH_ENV = SWIFT=$(SWIFT) SWIFT_SCRATCH=$(SWIFT_SCRATCH) YYCB_BUILD_DIR=$(BENCH_C_BUILD_DIR)
C_BENCH_TARGET ?= yycache-bench-c
C_BENCH ?= $(RELEASE_DIR)/Benchmarks/$(C_BENCH_TARGET)
SWIFT_BENCH_PRODUCT ?= yycache-bench
BENCH_ARGS ?=
BENCH_SMOKE_ARGS ?= --quick
have_swift_bench = $(shell grep -q '"$(SWIFT_BENCH_PRODUCT)"' Package.swift 2>/dev/null && echo yes)

# Debian packages `make deps` installs when missing (gcc/g++: sanitizers and the C++ header check;
# binutils: nm/readelf; python3: Benchmarks/run).
DEB_PACKAGES ?= libsqlite3-dev libbsd-dev libmd-dev libcmocka-dev cmake pkg-config gcc g++ \
                binutils python3
APT_GET ?= apt-get

# The steps of `make test`, in order (cheap and likely-to-fail first).
TEST_STEPS ?= c-test headers symbols version-check consumer asan tsan swift-build swift-test \
              swift-tsan bench-smoke

.PHONY: help test bench deps swift-build swift-test swift-tsan c-build ci-build c-test asan tsan static \
        headers symbols version-check consumer bench-smoke release format clean \
        need-swift

help:
	@echo "make test    build everything and run every test (what CI runs: .ci/run)"
	@echo "make bench   release build and benchmark report"
	@echo "steps: deps $(TEST_STEPS)"
	@echo "other: c-build ci-build static release format clean"

# --- test ---------------------------------------------------------------------------------------

# Runs every step even after a failure (each step's output also goes to build/steps/<step>.log),
# then prints one line per step and fails if any failed. A step that has nothing to work on yet
# prints a line starting with "SKIPPED:" and is reported as skipped.
test: deps
	@mkdir -p $(BUILD_DIR)/steps; start=$$(date +%s); results=(); failed=0; \
	for step in $(TEST_STEPS); do \
	  echo; echo "=== make $$step"; t0=$$(date +%s); log=$(BUILD_DIR)/steps/$$step.log; \
	  if $(MAKE) $$step 2>&1 | tee $$log; then \
	    if grep -q '^SKIPPED:' $$log; then r=skipped; else r=passed; fi; \
	  else r=FAILED; failed=$$((failed + 1)); fi; \
	  results+=("$$(printf '  %-14s %-7s %4ss' $$step $$r $$(( $$(date +%s) - t0 )))"); \
	done; \
	echo; echo "=== make test summary"; printf '%s\n' "$${results[@]}"; \
	total=$$(echo $(TEST_STEPS) | wc -w); \
	echo "make test: $$((total - failed)) of $$total steps passed or skipped, $$failed failed," \
	     "$$(( $$(date +%s) - start ))s"; \
	[ $$failed -eq 0 ]

# --- dependencies ---------------------------------------------------------------------------------

# Fast no-op when everything is installed. As root, installs what is missing; otherwise says what
# to install and fails. Without dpkg (not Debian), checks with pkg-config and goes on.
deps:
	@if ! command -v dpkg-query >/dev/null 2>&1; then \
	  echo "deps: no dpkg here; checking with pkg-config (sqlite3 libbsd libmd cmocka) and cmake"; \
	  command -v $(CMAKE) >/dev/null && pkg-config --exists sqlite3 libbsd libmd cmocka \
	    || { echo "deps: missing; install the equivalents of: $(DEB_PACKAGES)" >&2; exit 1; }; \
	  exit 0; \
	fi; \
	missing=""; \
	for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${db:Status-Abbrev}' $$p 2>/dev/null | grep -q '^ii' \
	    || missing="$$missing $$p"; \
	done; \
	[ -z "$$missing" ] && exit 0; \
	if [ "$$(id -u)" -ne 0 ]; then \
	  echo "deps: missing Debian packages:$$missing" >&2; \
	  echo "deps: run as root, or: sudo apt-get install -y$$missing" >&2; \
	  exit 1; \
	fi; \
	echo "deps: installing$$missing"; \
	$(APT_GET) update -q; \
	DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y -q --no-install-recommends $$missing

need-swift:
	@command -v $(SWIFT) >/dev/null \
	  || { echo "swift not found: install a Swift 6 toolchain (swift.org/install)" >&2; exit 1; }

# --- Swift --------------------------------------------------------------------------------------

# Builds every target, tests and tools included: -warnings-as-errors for Swift, -Xcc -Werror for
# our C targets (clang; the module importer accepts it). As a second net, any "warning:" the log
# shows in our own sources fails the step (only a fresh compile prints them; the CMake dev build,
# -Werror with gcc, covers the C core on every run).
swift-build: deps need-swift
	@mkdir -p $(BUILD_DIR)
	@echo "$(SWIFT) build $(SWIFT_DEBUG_FLAGS) --build-tests"; \
	$(SWIFT) build $(SWIFT_DEBUG_FLAGS) --build-tests 2>&1 | tee $(BUILD_DIR)/swift-build.log; \
	if grep -E '^$(CURDIR)/(Sources|Tests|include|Benchmarks)/[^:]+:[0-9]+:[0-9]+: warning:' \
	    $(BUILD_DIR)/swift-build.log; then \
	  echo "swift-build: warnings in our sources (above) are errors" >&2; exit 1; fi

# Runs Swift Testing, and XCTest only when a test imports it (otherwise it just reports 0 tests).
# The "started" lines of Swift Testing are left out of the terminal (results, failures and the
# summary stay); the full output is in build/swift-test.log.
SWIFT_TEST_FLAGS ?= $(if $(shell grep -rls '^import XCTest' Tests 2>/dev/null),,--disable-xctest)
swift-test: swift-build
	@echo "$(SWIFT) test $(SWIFT_DEBUG_FLAGS) --skip-build $(SWIFT_TEST_FLAGS)"; \
	$(SWIFT) test $(SWIFT_DEBUG_FLAGS) --skip-build $(SWIFT_TEST_FLAGS) 2>&1 \
	  | tee $(BUILD_DIR)/swift-test.log | { grep -v '^◇ .* started\.$$' || true; }

# The Swift tests again under ThreadSanitizer (clang's, from the Swift toolchain; its own scratch
# folder inside SWIFT_SCRATCH, so the debug build is not redone each time).
SWIFT_TSAN_FLAGS ?= --scratch-path $(SWIFT_SCRATCH)/tsan --sanitize=thread
swift-tsan: deps need-swift
	@mkdir -p $(BUILD_DIR)
	@echo "$(SWIFT) build $(SWIFT_TSAN_FLAGS) --build-tests --quiet"; \
	$(SWIFT) build $(SWIFT_TSAN_FLAGS) --build-tests --quiet; \
	echo "$(SWIFT) test $(SWIFT_TSAN_FLAGS) --skip-build $(SWIFT_TEST_FLAGS)"; \
	$(SWIFT) test $(SWIFT_TSAN_FLAGS) --skip-build $(SWIFT_TEST_FLAGS) 2>&1 \
	  | tee $(BUILD_DIR)/swift-tsan.log | { grep -v '^◇ .* started\.$$' || true; }

# --- C (CMake presets) --------------------------------------------------------------------------

# configure-<preset>: (re)applies the preset; cheap when nothing changed.
configure-%: deps
	@$(TOOLS_ENV) $(CMAKE) --preset $* --log-level=WARNING >/dev/null

build-%: configure-%
	@$(CMAKE) --build --preset $* -j $(JOBS)

# lib-<preset>: the library alone, so the packaging checks do not depend on every test compiling.
lib-%: configure-%
	@$(CMAKE) --build --preset $* -j $(JOBS) --target yycache

c-build: build-dev
static: build-static
release: build-release
# Everything at -O2 with -Werror (the ci preset): gcc reports some warnings (format-truncation,
# maybe-uninitialized) only when optimizing. Not yet a `make test` step: Tests/C still has such
# warnings; add ci-build to TEST_STEPS once `make ci-build` passes.
ci-build: build-ci

# ctest's "Start N: name" lines are left out (each test still gets its result line, failures
# their output, and a hang its TIMEOUT line).
CTEST_FILTER = { grep -v '^ *Start  *[0-9]*: ' || true; }

c-test: build-dev
	$(CTEST) --preset dev -j $(JOBS) | $(CTEST_FILTER)

asan: build-asan
	$(CTEST) --preset asan -j $(JOBS) | $(CTEST_FILTER)

tsan: build-tsan
	$(CTEST) --preset tsan -j $(JOBS) | $(CTEST_FILTER)

# --- checks on the built library ----------------------------------------------------------------

headers: lib-dev
	$(TOOLS_ENV) scripts/check-headers.sh $(DEV_DIR)

symbols: lib-dev lib-static
	scripts/check-symbols.sh $(DEV_DIR)/libyycache.so $(STATIC_DIR)/libyycache.a

# The version lives in CMakeLists.txt's project(VERSION); SwiftPM builds status.c without
# YYC_VERSION_STRING, so its fallback there must say the same.
version-check:
	@v=$$(sed -n '/^project(YYCache/,/)/s/^ *VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt); \
	f=$$(sed -n 's/^#define YYC_VERSION_STRING "\(.*\)"/\1/p' Sources/CYYCache/status.c); \
	if [ -z "$$v" ] || [ "$$v" != "$$f" ]; then \
	  echo "version-check: CMakeLists.txt says '$$v'," \
	       "the fallback in Sources/CYYCache/status.c says '$$f'" >&2; exit 1; fi; \
	echo "version-check: $$v (CMakeLists.txt project(VERSION) = status.c fallback)"

# Installs the shared and the static library to temporary prefixes and builds Tests/CMakeConsumer
# with find_package(YYCache) and with pkg-config against each.
consumer: lib-dev lib-static
	$(TOOLS_ENV) CMAKE=$(CMAKE) scripts/consumer-test.sh $(DEV_DIR) $(STATIC_DIR)

# --- benchmarks ---------------------------------------------------------------------------------

# Smoke run of the benchmark (--quick: tiny sizes, a few seconds, no timing claims): it must
# build, start and finish. The report goes to build/steps/bench-smoke-report.md.
bench-smoke: deps
	@mkdir -p $(BUILD_DIR)/steps; \
	if [ -x $(BENCH_RUNNER) ]; then \
	  echo "$(BENCH_ENV) $(BENCH_RUNNER) $(BENCH_SMOKE_ARGS)"; \
	  $(BENCH_ENV) $(BENCH_RUNNER) $(BENCH_SMOKE_ARGS) > $(BUILD_DIR)/steps/bench-smoke-report.md; \
	  echo "bench-smoke: report in $(BUILD_DIR)/steps/bench-smoke-report.md"; \
	else echo "SKIPPED: no benchmark runner yet ($(BENCH_RUNNER))"; fi

bench: deps
	@if [ -x $(BENCH_RUNNER) ]; then \
	  echo "$(BENCH_ENV) $(BENCH_RUNNER) $(BENCH_ARGS)"; \
	  exec env $(BENCH_ENV) $(BENCH_RUNNER) $(BENCH_ARGS); fi; \
	$(MAKE) build-release; \
	if command -v $(SWIFT) >/dev/null; then $(SWIFT) build $(SWIFT_RELEASE_FLAGS); fi; \
	ran=0; \
	if [ -x $(C_BENCH) ]; then ran=1; \
	  echo "bench: $(C_BENCH) $(BENCH_ARGS)"; $(C_BENCH) $(BENCH_ARGS); fi; \
	if [ -n "$(have_swift_bench)" ]; then ran=1; \
	  echo "bench: swift run -c release $(SWIFT_BENCH_PRODUCT) $(BENCH_ARGS)"; \
	  $(SWIFT) run $(SWIFT_RELEASE_FLAGS) --skip-build $(SWIFT_BENCH_PRODUCT) $(BENCH_ARGS); fi; \
	[ $$ran -eq 1 ] || echo "bench: no benchmark exists yet (expected $(BENCH_RUNNER)," \
	  "$(C_BENCH) or the Swift executable $(SWIFT_BENCH_PRODUCT)); the release builds succeeded"

# --- housekeeping -------------------------------------------------------------------------------

C_FORMAT_FILES = $(wildcard include/yycache/*.h Sources/CYYCache/*.[ch] Tests/C/*.[ch] \
                   Tests/CMakeConsumer/*.c Benchmarks/*.c Benchmarks/*/*.c Sources/*/*.[ch])
format:
	@if command -v swift-format >/dev/null; then \
	  echo "format: swift-format"; \
	  swift-format format --in-place --recursive --parallel Package.swift Sources Tests; \
	else echo "format: swift-format not found, Swift sources left as they are"; fi
	@if command -v clang-format >/dev/null; then \
	  echo "format: clang-format"; clang-format -i $(sort $(C_FORMAT_FILES)); \
	else echo "format: clang-format not found (apt-get install clang-format), C left as it is"; fi

clean:
	rm -rf $(BUILD_DIR) $(SWIFT_SCRATCH)
