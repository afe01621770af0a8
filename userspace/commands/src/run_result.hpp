// SPDX-License-Identifier: GPL-2.0
// `ptwalk run`'s result, piece by piece, from what the run recorded (for
// run.cpp): the typed parts of result_types.hpp; the whole document is
// described in results/SCHEMA.md.
#pragma once

#include <cstdint>
#include <vector>

#include "ptwalk/backend.hpp"
#include "ptwalk/json.hpp"
#include "ptwalk/procfs.hpp"
#include "ptwalk/result_types.hpp"
#include "ptwalk/run.hpp"
#include "ptwalk/scenario.hpp"
#include "ptwalk/shared.hpp"
#include "ptwalk/validation.hpp"
#include "ptwalk/working_set.hpp"

namespace ptwalk::run_result {

// A result with its first members: started_at, argv, kernel, host.
RunResult header(const RunOptions &o);
// "scenario": what was asked for.
ScenarioInfo scenario(const Scenario &sc);
// "walks": the scanner's records with what the backend saw of each
// (views), the workload's PTE counts (ws, may be null), the alias
// calibration (cal, may be null) and its uncontended Rss (for smaps_rollup
// coverage).
std::vector<WalkEntry> walks(const Shared &sh, uint32_t nw,
			     const std::vector<WalkKernelView> &views, const WalkSize *ws,
			     const AliasCalibration *cal, uint64_t rss_ref);
// "working_set" (--working-set): the toucher's truth, and the windows of
// the working-set method the scanner ran judged against it.
WorkingSetResult working_set(const Scenario &sc, const Shared &sh, uint32_t nw);
// "victims": each victim's latencies outside and during walks.
std::vector<VictimEntry> victims(const Shared &sh);
// The victims' slow operations, their own clocks' view for the validation;
// *dropped: those their logs had no room for.
std::vector<VictimOp> slow_ops(const Shared &sh, uint64_t *dropped);

} // namespace ptwalk::run_result
