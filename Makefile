# SPDX-License-Identifier: GPL-2.0
# ptwalk: build, test, qualify.
#
#   make            build userspace (build/ptwalk) and the selftests
#   make test       every suite: C++ unit tests, selftests, pytest (host, then
#                   VM), fuzz, lint; ends with the time each stage took
#   make qualify    the main job: the standard scenario on this host
#   make bench      benchmarks (figures, not assertions)
#   make fuzz       the parsers' libFuzzer targets, ~1 min (also in make test)
#   make lint       checkpatch --strict (module/, lib/, selftests/), clang-format
#                   (userspace/), mypy and flake8 (scripts/) (also in make test)
#   make format     rewrite userspace/ as .clang-format says
#   make module     ptwalk.ko against KDIR (default: running kernel, else the
#                   newest installed linux-headers)
#   make man        the man pages in build/man (docs/man/, scripts/gen-man.py)
#   make deb        Debian packages ptwalk and ptwalk-dkms in build/deb
#   make install    bin/ptwalk, its helpers in libexec/ptwalk/, budgets in
#                   share/ptwalk/, man pages under DESTDIR/PREFIX (default
#                   /usr/local)
#   make kernel-ab PATCH=file.patch [SRC=linux-source-7.3|tarball] [EXPECT=skip-fix]
#                   a kernel patch before/after: builds linux-source-6.1
#                   (or SRC, e.g. linux-source-7.3) without and with it
#                   (scripts/kernel/ptwalk.config and the tree's preemption
#                   fragment, -j2: long), boots both, compares
#                   (scripts/kernel-ab.sh); not part of make test
#   make kernel-debug [SRC=linux-source-6.1|tarball]
#                   linux-source-7.3 (or SRC) with scripts/kernel/debug.config
#                   (DEBUG_PREEMPT, PROVE_LOCKING, DEBUG_ATOMIC_SLEEP, KASAN,
#                   about 14 min at -j2), the module's selftest booted on it,
#                   no splat allowed (scripts/kernel-debug.sh); not in make test
#   make cross-version [CROSS_OUT=dir]
#                   the standard scenarios on Debian 6.1 and 6.12 cloud
#                   (TCG, icount and real time) and on the host, compared
#                   6.1 vs 6.12 (scripts/cross_version.py; about an hour)

PYTHON  ?= /usr/bin/python3
BUILD   := build
CMAKE_BUILD := $(BUILD)/cmake
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
PREFIX  ?= /usr/local
DESTDIR ?=

.PHONY: all deps deps-test build userspace selftests module module-matrix test test-unit \
	test-selftests test-py test-py-host test-py-vm test-matrix qualify bench clean vm-matrix fuzz fuzz-build \
	fuzz-run install man deb kernel-ab kernel-debug \
	cross-version stall-table working-set-table lint format

all: build

deps:
	scripts/deps.sh build

deps-test:
	scripts/deps.sh build python vm module perf prometheus fuzz lint man deb kernel-7.3-cloud kernel-6.18-cloud buildroot

build: userspace selftests

userspace: deps
	cmake -S userspace -B $(CMAKE_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(CMAKE_BUILD) -j$(JOBS)

selftests: deps
	$(MAKE) -C selftests

module:
	$(MAKE) -C module

# ptwalk.ko for every installed kernel headers tree (the VM matrix)
module-matrix:
	scripts/build-modules.sh
	$(MAKE) -C module walker

# Each stage is timed (scripts/stage-time.sh) and the table printed last;
# the suites after the build run even when one before failed.
TEST_TIMES := $(BUILD)/test-times.txt
# ptwalk.ko's builds (module-matrix), the fuzz targets' build and lint run
# beside pytest-host, which leaves most of the 2 CPUs idle (5.6 CPU-minutes
# in 7:45 here), at SCHED_IDLE: a host test's task preempts them at once
# when it wakes. The host tests that read the matrix's ptwalk.ko are marked
# vm and run after them (their failure is the VM stage's). Not beside the
# VM stage (its guests keep both CPUs busy) nor the fuzz run (libFuzzer's
# per-input timeout is wall-clock time).
BESIDE_LOG := $(BUILD)/test-beside.log
test:
	@mkdir -p $(BUILD); rm -f $(TEST_TIMES); T="scripts/stage-time.sh $(TEST_TIMES)"; \
	$$T deps $(MAKE) deps-test && $$T build $(MAKE) build || \
		{ scripts/stage-time.sh --table $(TEST_TIMES); exit 1; }; \
	rc=0; \
	$$T unit $(MAKE) test-unit || rc=1; \
	$$T selftests $(MAKE) test-selftests || rc=1; \
	{ $$T module-matrix --beside chrt --idle 0 $(MAKE) module-matrix; \
	  $$T fuzz-build --beside chrt --idle 0 $(MAKE) fuzz-build; \
	  $$T lint --beside chrt --idle 0 $(MAKE) lint; } >$(BESIDE_LOG) 2>&1 & \
	$$T pytest-host $(MAKE) test-py-host || rc=1; \
	t0=$$(date +%s); wait; echo "beside-wait 0 $$(($$(date +%s) - t0))" >>$(TEST_TIMES); \
	echo "--- module-matrix, fuzz-build and lint, run beside pytest-host ($(BESIDE_LOG)):"; \
	cat $(BESIDE_LOG); \
	[ "$$(grep -Ec '^(module-matrix|fuzz-build|lint) 0 ' $(TEST_TIMES))" = 3 ] || rc=1; \
	$$T pytest-vm $(MAKE) test-py-vm || rc=1; \
	$$T fuzz-run $(MAKE) fuzz-run || rc=1; \
	scripts/stage-time.sh --table $(TEST_TIMES); \
	if [ $$rc = 0 ]; then echo "make test: every suite passed"; \
	else echo "make test: a suite FAILED (see above)"; fi; \
	exit $$rc

test-unit:
	$(BUILD)/ptwalk_unit --gtest_brief=1

test-selftests:
	$(MAKE) -C selftests run_tests
	selftests/test-budget-breach.sh

# pytest in two groups: what runs on this host, then what boots kernels in
# QEMU (marker vm: one boot per matrix kernel for its suites, the boot
# reliability boots, the stall budget under icount)
# (-rsfE --tb=short: each failure's assertion in a few lines, and its
# one-line summary last, where a CI log cut in the middle still shows it)
test-py: test-py-host test-py-vm

test-py-host:
	$(PYTHON) -m pytest -q -rsfE --tb=short --durations=15 -m "not vm" scripts/tests

test-py-vm:
	$(PYTHON) -m pytest -q -rsfE --tb=short --durations=25 -m vm scripts/tests

# the VM suites on every flavour of the four series (make test boots the
# cloud flavour alone of 6.18 and 7.3); about twice pytest-vm's time
TEST_MATRIX = debian-6.1,debian-6.12,debian-6.18,debian-7.3
test-matrix: build
	scripts/deps.sh vm module kernels buildroot
	$(MAKE) module-matrix
	PTWALK_VM_MATRIX=$(TEST_MATRIX) $(PYTHON) -m pytest -q -rsfE --tb=short --durations=25 -m vm scripts/tests

# the parsers' libFuzzer targets, ~10 s each (scripts/fuzz.sh, userspace/fuzz)
fuzz: fuzz-build
	$(MAKE) fuzz-run

fuzz-build:
	scripts/deps.sh build fuzz
	scripts/fuzz.sh build

fuzz-run:
	scripts/fuzz.sh run brief

# the static checks, each run even when one before failed (scripts/lint.sh)
lint:
	scripts/deps.sh lint
	scripts/lint.sh

format:
	scripts/deps.sh lint
	scripts/lint.sh --format

# the deps.sh group that unpacks a mainline SRC (linux-source-7.3 or 7.2)
KSRC_DEPS = $(if $(findstring 7.3,$(SRC)),kernel-src-7.3) $(if $(findstring 7.2,$(SRC)),kernel-src-7.2)

kernel-ab:
	@test -n "$(PATCH)" || { echo "make kernel-ab: PATCH=FILE is needed" >&2; exit 2; }
	scripts/deps.sh build python vm kernel $(KSRC_DEPS)
	cmake -S userspace -B $(CMAKE_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(CMAKE_BUILD) -j2 --target ptwalk
	scripts/kernel-ab.sh --jobs 2 $(if $(SRC),--src $(SRC)) $(if $(EXPECT),--expect $(EXPECT)) $(PATCH)

kernel-debug:
	scripts/deps.sh build vm kernel $(if $(SRC),$(KSRC_DEPS),kernel-src-7.3)
	scripts/kernel-debug.sh --jobs 2 $(if $(SRC),--src $(SRC))

CROSS_OUT ?= build/cross-version
cross-version: build
	scripts/build-modules.sh /usr/src/linux-headers-*-cloud-amd64
	$(PYTHON) scripts/cross_version.py --out $(CROSS_OUT) --jobs 2

qualify:
	scripts/deps.sh build python
	$(MAKE) build
	scripts/qualify.sh

# the standard scenarios in each Debian kernel build (VM) and on the host
vm-matrix: deps-test
	$(MAKE) build
	$(MAKE) module-matrix
	$(PYTHON) scripts/ptwalk-vm-matrix

# which walk stalls which operation, per kernel (Debian 6.1, 6.12, 6.18,
# 7.3 cloud under icount): results/stall-table/TIME/table.md; the kept one
# is results/reference/stall-table
stall-table: deps-test
	scripts/deps.sh kernels
	$(MAKE) build
	$(MAKE) module-matrix
	$(PYTHON) scripts/ptwalk-stall-table

# the working-set method (clear_refs + smaps Referenced) against a known
# working set: accuracy, cost, stalls, per kernel and on the host:
# results/working-set/TIME/table.md; the kept one is
# results/reference/working-set
working-set-table: deps-test
	scripts/deps.sh kernels
	$(MAKE) build
	$(MAKE) module-matrix
	$(PYTHON) scripts/ptwalk-working-set-table --host

bench: deps
	scripts/deps.sh fuzz
	$(MAKE) build
	scripts/bench.sh

# The helpers ptwalk execs (compare, report, calibrate) go to libexec/ptwalk/
# with layout.json, which tells the report tools where the budgets and the
# built fit library are, relative to itself (scripts/ptwalk_report/layout.py).
# the man pages, from docs/man/*.md and the option tables (scripts/gen-man.py)
man: build
	scripts/deps.sh man
	$(PYTHON) scripts/gen-man.py $(BUILD)/ptwalk $(BUILD)/man

install: man
	scripts/install.sh "$(DESTDIR)" "$(PREFIX)"

# the Debian packages ptwalk and ptwalk-dkms in build/deb (debian/,
# debhelper), from this tree's build; lintian build/deb/*.deb checks them
deb: build man
	scripts/deps.sh deb
	mkdir -p $(BUILD)/deb
	DEB_BUILD_OPTIONS=nocheck dpkg-buildpackage -b -us -uc -nc \
		--buildinfo-option=-u$(BUILD)/deb --buildinfo-file=$(BUILD)/deb/ptwalk.buildinfo \
		--changes-option=-u$(BUILD)/deb --changes-file=$(BUILD)/deb/ptwalk.changes

clean:
	rm -rf $(BUILD)
	@if [ -f module/Makefile ]; then $(MAKE) -C module clean; fi
