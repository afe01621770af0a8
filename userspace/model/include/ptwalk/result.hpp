// SPDX-License-Identifier: GPL-2.0
// Result assembly: the versioned document (results/SCHEMA.md; its typed
// parts in result_types.hpp), its walk summary, and the table printed on
// stdout.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "ptwalk/result_types.hpp"

namespace ptwalk {

constexpr const char *kResultSchema = "ptwalk.result/1";
constexpr const char *kVersion = "0.1.0";

// Why a smaps_rollup walk did not cover the workload, from the Rss its own
// text reported against the workload's Rss read while nothing contended
// (the larger of the start and end readings); "" when it covered it or the
// shortfall is within what the victims may return (2 MiB). More than that
// means VMAs were skipped: 6.1's
// show_smaps_rollup() skips the VMA it finds after yielding mmap_lock to a
// writer (fixed upstream by 6d065f507d82, which did not apply to 6.1.y).
std::string rollup_coverage_gap(uint64_t rollup_rss, uint64_t workload_rss);
// What the run itself may take from the workload's Rss: the fault victim
// returns its 1 MiB, the mmap victim unmaps 64 KiB.
constexpr uint64_t kRollupRssSlack = 2u << 20;
// The workload's Rss read while nothing contended: the larger of
// workload.size_start and size_end (a skipping rollup only reads less); 0
// when neither was read.
uint64_t workload_rss_reference(const WorkloadInfo &workload);
// "walk_summary": per kind, in the order the walks first show it, of a
// mapping of size_bytes. whole_lock_view: the backend saw every mmap_lock
// event of the walks (a lock view that lost none), so a complete walk
// without a hold took none: where other walks of its kind held the lock it
// counts as a hold of 0.
std::vector<KindSummary> summarize_walks(const std::vector<WalkEntry> &walks, uint64_t size_bytes,
					 bool whole_lock_view = false);
// Prints the human table of a result (walk kinds, victims out vs during).
void print_table(const RunResult &result, FILE *out);
// Writes text to path atomically (temporary file in the same directory,
// fsync, rename). Returns "" or a one-line error.
std::string write_atomically(const std::string &path, const std::string &text);

} // namespace ptwalk
