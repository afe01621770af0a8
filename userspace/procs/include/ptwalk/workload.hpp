// SPDX-License-Identifier: GPL-2.0
// The walked process: maps and populates the region, then runs the victim
// threads until told to stop. Runs in its own (forked) process.
#pragma once

#include "ptwalk/scenario.hpp"
#include "ptwalk/shared.hpp"

namespace ptwalk {

// Entry point of the forked workload child; returns its exit status.
int workload_main(const Scenario &sc, Shared *sh);

// Populates [addr, addr+len) with `threads` threads using
// MADV_POPULATE_WRITE (or _READ when !write), falling back to touching each
// page where the kernel lacks it (< 5.14). Adds to *progress as it goes.
// Returns 0 or an errno.
int populate(void *addr, size_t len, bool write, unsigned threads, std::atomic<uint64_t> *progress,
	     const char **method);

} // namespace ptwalk
