# The front door. CMake does the building; these targets install what they
# need (Debian 12, as root), configure, build and run.
#
#   make demo         two rlock runs taking turns on a throwaway redis-server
#   make test         unit, Redis and CLI tests
#   make asan         the same tests on an ASan+UBSan build with clang (CI's
#                     clang build too), but for the real topologies
#                     (ctest -L topology: make test runs them); it builds
#                     the fuzz targets too (make fuzz FUZZ_DIR=build-asan)
#   make fuzz         libFuzzer targets (clang), FUZZ_SECONDS each (tests/fuzz)
#   make tsan         Redis tests and the CLI suites that run the renewal
#                     thread on a TSan build; fails on any race report
#   make clang        build with clang, warnings as errors
#   make bench        rlock (one server, Sentinel, Cluster) against flock, etcd and
#                     redis-py (bench/RESULTS.md)
#   make soak         randomized fault injection, SOAK_SECONDS (600) long;
#                     SEED=N replays a run (tests/soak/README.md)
#   make soak-topology  the same on Sentinel, Cluster and Redlock: failovers,
#                     kills, freezes, a black-holed member; SOAK_SECONDS per
#                     topology, TOPOLOGIES=sentinel,cluster,redlock (default
#                     all), SEED=N, SOAK_REPLICAS=default|0, SOAK_LOCKER=unsafe
#                     (must fail); tests/soak/README.md, "The topology soak"
#   make deb          build/rlock_VERSION_ARCH.deb (packaging/README.md)
#   make dist         build/rlock-VERSION.tar.gz, the committed tree (git archive)
#   make check-packaging  build, install and remove the .deb (root); parse the
#                     RPM spec and the Homebrew formula
#   make check-format / make format
#   make lint         shellcheck on every shell file; the layering rules
#                     (tests/lint/layers.py, ARCHITECTURE.md), after a test
#                     that each rule catches a planted violation; the Lua
#                     scripts compiled with Lua 5.4 and free of 5.1-only
#                     calls such as a bare unpack (tests/lint/lua.sh), after
#                     its own planted-violation test
#   make install PREFIX=/usr/local DESTDIR=

BUILD_DIR ?= build
ASAN_DIR ?= build-asan
CLANG_DIR ?= build-clang
FUZZ_DIR ?= build-fuzz
TSAN_DIR ?= build-tsan
FUZZ_SECONDS ?= 20
SOAK_SECONDS ?= 600
SEED ?=
JOBS ?= 2
WERROR ?= ON
# The test build's scripts fail on a key not in KEYS (RLOCK_STRICT_KEY_CHECK);
# make install, deb, check-packaging and bench build without the check.
STRICT_KEYS ?= ON
PREFIX ?= /usr/local
CTEST = ctest --output-on-failure -j$(JOBS)

BUILD_PACKAGES = g++ cmake make pkg-config libhiredis-dev libssl-dev libcli11-dev \
  nlohmann-json3-dev catch2 scdoc
TEST_PACKAGES = $(BUILD_PACKAGES) redis-server redis-tools redis-sentinel bats zsh \
  fish iproute2 bash-completion tmux python3-redis nodejs
DEB_PACKAGES = $(BUILD_PACKAGES) dpkg-dev
VERSION := $(shell sed -nE 's/^project.rlock VERSION ([0-9.]+).*/\1/p' CMakeLists.txt)
CI_PACKAGES = clang clang-format shellcheck mandoc lua5.4

SOURCES = $(shell git ls-files '*.cpp' '*.hpp' 2>/dev/null)
SHELL_FILES = $(shell tests/lint/shell-files)

.PHONY: all build test demo asan asan-build tsan-build clang check-format format lint install clean \
  bench deb dist check-packaging fuzz tsan soak soak-topology

all: build

build:
	@packaging/install-deps $(BUILD_PACKAGES)
	cmake -S . -B $(BUILD_DIR) -DRLOCK_WARNINGS_AS_ERRORS=$(WERROR) \
	  -DCMAKE_INSTALL_PREFIX=$(PREFIX) -DRLOCK_STRICT_KEY_CHECK=$(STRICT_KEYS)
	cmake --build $(BUILD_DIR) -j$(JOBS)

# Debian's nodejs comes without npm; NodeSource's bundles it (and conflicts
# with Debian's npm package). npm installs the node clients that
# tests/cli/compat_node.bats runs into the build tree.
test:
	@packaging/install-deps $(TEST_PACKAGES)
	@command -v npm >/dev/null || packaging/install-deps npm
	@$(MAKE) --no-print-directory build
	cd $(BUILD_DIR) && $(CTEST)

demo:
	@packaging/install-deps $(BUILD_PACKAGES) redis-server redis-tools
	@$(MAKE) --no-print-directory build
	tests/demo.sh $(BUILD_DIR)/rlock

# The fuzz targets' instrumentation is on too, so that CI's
# `make fuzz FUZZ_DIR=$(ASAN_DIR)` reuses this build instead of compiling
# everything a second time.
# asan-build and tsan-build compile without testing: .ci/run starts them at
# nice 19 while the soaks and other tests, which mostly wait, run.
asan-build:
	@packaging/install-deps $(TEST_PACKAGES) clang libclang-rt-dev
	CXX=clang++ cmake -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=Debug -DRLOCK_FUZZ=ON \
	  -DRLOCK_SANITIZERS=address,undefined -DRLOCK_WARNINGS_AS_ERRORS=ON
	cmake --build $(ASAN_DIR) -j$(JOBS)

asan: asan-build
	cd $(ASAN_DIR) && $(CTEST) -LE 'topology|compat|acl'

fuzz:
	@packaging/install-deps $(BUILD_PACKAGES) clang libclang-rt-dev
	CXX=clang++ cmake -S . -B $(FUZZ_DIR) -DRLOCK_FUZZ=ON \
	  -DRLOCK_SANITIZERS=address,undefined
	cmake --build $(FUZZ_DIR) -j$(JOBS) --target rlock_fuzzers
	tests/fuzz/run $(FUZZ_DIR) $(FUZZ_SECONDS) $(JOBS)

# The tests that start the renewal thread (the unit tests run it on a fake
# store) and the password refresher's (password_command). Reports go to files and leave exit codes alone, so the tests run as
# usual and any report fails the run after them. TSan's fixed memory layout breaks with more than 28 bits of mmap
# randomness (newer kernels): then the tests run without address
# randomization, which their children inherit.
TSAN_TESTS = ^(unit|redis|cli/(child|faults|lockloss|netfaults|password_command|signals|supervision))$$
TSAN_WRAP = $(shell test "$$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null \
  || echo 28)" -gt 28 && echo setarch $$(uname -m) -R)

tsan-build:
	@packaging/install-deps $(TEST_PACKAGES)
	cmake -S . -B $(TSAN_DIR) -DRLOCK_SANITIZERS=thread
	cmake --build $(TSAN_DIR) -j$(JOBS) --target rlock rlock_redis_tests \
	  rlock_unit_tests

tsan: tsan-build
	rm -rf $(TSAN_DIR)/tsan && mkdir $(TSAN_DIR)/tsan
	cd $(TSAN_DIR) && TSAN_OPTIONS="log_path=$$PWD/tsan/report exitcode=0" \
	  $(TSAN_WRAP) $(CTEST) -R '$(TSAN_TESTS)'; status=$$?; \
	  cat tsan/report.* 2>/dev/null && status=1; exit $$status

clang:
	@packaging/install-deps $(BUILD_PACKAGES) clang
	CXX=clang++ cmake -S . -B $(CLANG_DIR) -DRLOCK_WARNINGS_AS_ERRORS=ON
	cmake --build $(CLANG_DIR) -j$(JOBS)

check-format:
	@packaging/install-deps clang-format
	clang-format --dry-run -Werror $(SOURCES)

format:
	clang-format -i $(SOURCES)

lint:
	@packaging/install-deps shellcheck mandoc scdoc lua5.4
	shellcheck -s bash $(SHELL_FILES)
	tests/lint/lua.sh --self-test
	tests/lint/lua.sh
	tests/lint/test_layers.sh
	python3 tests/lint/layers.py src
	scdoc < man/rlock.1.scd > $(BUILD_DIR)/rlock.1.lint
	mandoc -T lint -W warning $(BUILD_DIR)/rlock.1.lint

install:
	@$(MAKE) --no-print-directory build STRICT_KEYS=OFF
	DESTDIR=$(DESTDIR) cmake --install $(BUILD_DIR) --prefix $(PREFIX)

bench:
	@$(MAKE) --no-print-directory build STRICT_KEYS=OFF
	bench/run $(BUILD_DIR)/rlock

# The self-test (the planted unsafe locker must show overlaps) runs first.
soak:
	@$(MAKE) --no-print-directory build
	SOAK_SECONDS=$(SOAK_SECONDS) SEED=$(SEED) tests/soak/run $(BUILD_DIR)/rlock

# Each topology runs its self-test (the unsafe locker must overlap) first.
soak-topology:
	@$(MAKE) --no-print-directory build
	SOAK_SECONDS=$(SOAK_SECONDS) SEED=$(SEED) tests/soak/topology-run $(BUILD_DIR)/rlock

deb:
	@packaging/install-deps $(DEB_PACKAGES)
	@$(MAKE) --no-print-directory build STRICT_KEYS=OFF
	rm -f $(BUILD_DIR)/rlock_*.deb
	cd $(BUILD_DIR) && cpack -G DEB
	@ls $(BUILD_DIR)/rlock_*.deb

dist:
	@mkdir -p $(BUILD_DIR)
	@test -z "$$(git status --porcelain)" || echo "warning: changes not committed are not in the tarball" >&2
	git archive --format=tar.gz --prefix=rlock-$(VERSION)/ \
	  -o $(BUILD_DIR)/rlock-$(VERSION).tar.gz HEAD
	@echo $(BUILD_DIR)/rlock-$(VERSION).tar.gz

check-packaging:
	@packaging/install-deps $(DEB_PACKAGES) man-db rpm ruby
	@$(MAKE) --no-print-directory build STRICT_KEYS=OFF
	tests/packaging/deb.sh $(BUILD_DIR)
	rpmspec -P packaging/rpm/rlock.spec >/dev/null
	ruby -c packaging/homebrew/rlock.rb

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(CLANG_DIR) $(FUZZ_DIR) $(TSAN_DIR)
