// SPDX-License-Identifier: GPL-2.0
// The walker: a separate process that walks the target's page tables the
// way a monitoring daemon does, timing each walk around its syscalls.
#pragma once

#include <string>
#include <sys/types.h>

#include "ptwalk/scenario.hpp"
#include "ptwalk/shared.hpp"

namespace ptwalk {

// Entry point of the forked scanner child; returns its exit status
// (0 done, 1 a walk failed, 4 the profile is unsupported here).
int scanner_main(const Scenario &sc, pid_t target, Shared *sh);

// --scanner damon: a kdamond the scanner turned on and did not remove
// (killed before its stop()) is removed, as every exit path restores what
// it changed. "" or why it is still configured.
std::string release_scanner_damon(Shared *sh);

// Whether a profile can run on this kernel; "" when it can, else the reason.
std::string profile_unsupported(Profile p);

} // namespace ptwalk
