// SPDX-License-Identifier: GPL-2.0
// `ptwalk run`: one scenario - fork the workload, fork the scanner, observe
// with a backend, write the result.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptwalk/result_enums.hpp"
#include "ptwalk/scenario.hpp"
#include "ptwalk/vma_layout.hpp"

namespace ptwalk {

// --backend of `ptwalk run`: automatic (module when ptwalk.ko is loaded,
// else tracepoint, else syscall), or a backend that runs scenarios
// (PTW_BACKENDS in result_enums.def, named as it names them).
#define PTW_RUN_BACKEND(e, run, monitor) PTW_IF_##run(e, )
enum class RunBackend { automatic, PTW_BACKENDS(PTW_RUN_BACKEND) };
#undef PTW_RUN_BACKEND
const char *name(RunBackend b);
std::optional<RunBackend> parse_run_backend(std::string_view s);
// The backend asked for; nullopt for automatic.
std::optional<BackendKind> backend_kind(RunBackend b);
std::string all_run_backends(); // "auto|module|..." for messages

struct RunOptions {
	Scenario sc = default_scenario();
	RunBackend backend = RunBackend::automatic;
	std::string out_path;
	bool force = false;
	bool quiet = false;         // no table on stdout
	bool dry_run = false;       // validate, print the plan, exit
	bool perf = false;          // perf record -g the scanner, perf stat tracepoints
	bool cross_check = false;   // module backend: also the tracepoint view
	bool victims_given = false; // --victims was given (--working-set's default)
	// alias backing: size of the distinct-vs-aliased calibration;
	// UINT64_MAX = default (8 GiB or what fits), 0 = none
	uint64_t calibrate_size = UINT64_MAX;
	// the VMA layout production has, for the stall estimate (--vma-layout)
	LayoutSpec layout;
	std::vector<std::string> argv;
};

// Checks everything that can be checked before a process is forked;
// "" when fine, else a one-line reason. May fill defaults (dir).
std::string validate_run(RunOptions &o);

// Exit status: 0 done, 1 failed, 2 bad input, 4 skipped, 128+sig when
// interrupted (partial result still written).
int run_command(RunOptions o);

} // namespace ptwalk
