# SPDX-License-Identifier: GPL-2.0
# ptwalk: build, test, qualify.
#
#   make            build userspace (build/ptwalk) and the selftests
#   make test       every suite: C++ unit tests, selftests, pytest (incl. VM)
#   make qualify    the main job: the standard scenario on this host
#   make bench      benchmarks (figures, not assertions)
#   make module     ptwalk.ko against KDIR (default: running kernel, else the
#                   newest installed linux-headers)

PYTHON  ?= /usr/bin/python3
BUILD   := build
CMAKE_BUILD := $(BUILD)/cmake
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all deps deps-test build userspace selftests module test test-unit \
	test-selftests test-py qualify bench clean

all: build

deps:
	scripts/deps.sh build

deps-test:
	scripts/deps.sh build python vm module

build: userspace selftests

userspace: deps
	cmake -S userspace -B $(CMAKE_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(CMAKE_BUILD) -j$(JOBS)

selftests: deps
	@if [ -f selftests/Makefile ]; then $(MAKE) -C selftests; fi

module:
	$(MAKE) -C module

test: deps-test
	$(MAKE) build
	$(MAKE) test-unit
	$(MAKE) test-selftests
	$(MAKE) test-py

test-unit:
	$(BUILD)/ptwalk_unit --gtest_brief=1

test-selftests:
	@if [ -f selftests/Makefile ]; then $(MAKE) -C selftests run_tests; \
	else echo "selftests: none yet"; fi

test-py:
	$(PYTHON) -m pytest -q -rs scripts/tests

qualify:
	scripts/deps.sh build python
	$(MAKE) build
	scripts/qualify.sh

bench: deps
	$(MAKE) build
	scripts/bench.sh

clean:
	rm -rf $(BUILD)
	@if [ -f module/Makefile ]; then $(MAKE) -C module clean; fi
