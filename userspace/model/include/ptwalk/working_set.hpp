// SPDX-License-Identifier: GPL-2.0
// The known working set of `ptwalk run --working-set FRACTION[,PATTERN]`.
// The workload's toucher writes pages of the walked mapping in a sequence
// fixed by the pattern: round after round (one round per --interval), each
// round `per_round` pages, and publishes how many touches it has done (its
// position). Any span of time between two reads of the position touched
// exactly the pages of the sequence between them, so the truth of a
// working-set method's window is known from positions alone, and the
// sequence is regenerated here, not stored.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptwalk/json.hpp"
#include "ptwalk/scenario.hpp"
#include "ptwalk/walk_kinds.hpp"

namespace ptwalk {

// SHARE[,PATTERN]: "0.25", "25%", "0.25,hot": a share of the pages in (0, 1] and a pattern
// (default uniform); nullopt with *err saying why.
std::optional<WorkingSetSpec> parse_working_set(std::string_view s, std::string *err);

// Why the scenario cannot have a known working set ("" when it can): the
// read and write victims touch the mapping at random, zeropage's pages
// must not be written.
std::string working_set_conflict(const Scenario &sc);

class TouchSequence {
public:
	// pages: 4 KiB pages of the mapping (>= 1)
	TouchSequence(uint64_t pages, const WorkingSetSpec &spec);
	uint64_t pages() const { return pages_; }
	uint64_t per_round() const { return per_round_; }
	// the page (index into the mapping) of touch number pos
	uint64_t page(uint64_t pos) const;
	// how many distinct pages touches [p0, p1) wrote (0 when p1 <= p0)
	uint64_t distinct(uint64_t p0, uint64_t p1) const;

private:
	struct Round {
		uint64_t mul, add, shift;
	};
	Round round(uint64_t r) const;

	uint64_t pages_, per_round_;
	WsPattern pattern_;
};

// One walk of a run as the working-set accounting needs it: its kind, its
// span, the toucher's position read just before it began and just after it
// ended, and (smaps walks) the Referenced bytes within the walked mapping.
struct WsWalk {
	WalkKind kind;
	uint64_t start_ns, end_ns;
	uint64_t pos_before, pos_after;
	std::optional<uint64_t> referenced_bytes;
	uint64_t syscall_ns = 0; // its time in the walking syscalls
};

// One window of the clear_refs + smaps Referenced method: from a
// clear_refs walk to the next smaps walk. The truth is a range: lo, the
// pages surely touched after the clear_refs ended and before the smaps
// began (so Referenced must count them); hi, every page touched from the
// clear_refs' start to the smaps' end (the most it may count).
struct WsWindow {
	uint64_t start_ns = 0, end_ns = 0; // clear_refs start .. smaps end
	uint64_t estimate_bytes = 0;
	uint64_t truth_lo_bytes = 0, truth_hi_bytes = 0;
	// the touch positions the high end counts, [first, end): the rounds a
	// window spans are (end - 1) / per_round - first / per_round + 1
	uint64_t touch_first = 0, touch_end = 0;
	// signed, against the range: 0 within it, (est - hi) / hi above it,
	// (est - lo) / lo below it
	double error = 0;
	// the method's cost: the two walks' time in their syscalls (kernel
	// CPU time, the walks' own; the text's parsing is not in it)
	uint64_t walk_ns = 0;
};

struct WorkingSetResult {
	WorkingSetSpec spec;
	uint64_t interval_ns = 0; // one round
	uint64_t pages = 0, per_round = 0;
	uint64_t page_bytes = 4096;
	uint64_t touches = 0;  // the toucher's position at its stop
	uint64_t touch_ns = 0; // from its first touch to its stop
	// touches per round it achieved over the rounds its time spans
	double achieved_share = 0;
	std::string method; // "clear_refs+smaps_referenced"
	std::vector<WsWindow> windows;
	struct Accuracy {
		unsigned windows = 0, within = 0;
		double median_abs_error = 0, bias = 0, max_abs_error = 0;
	};
	std::optional<Accuracy> accuracy; // none without a window
	struct Cost {
		uint64_t walk_ns_p50 = 0;  // a window's walks, median
		double ns_per_gib_p50 = 0; // the same per GiB of the mapping
		double core_share = 0;     // their time over the windows' span
	};
	std::optional<Cost> cost;
	std::optional<std::string> why; // why there is no window
	// --scanner damon: the kdamond's settings and work; the cost's
	// walk_ns is then its CPU time per window
	struct Damon {
		uint64_t sample_us = 0, aggr_us = 0, update_us = 0;
		uint64_t return_slack_us = 0; // a read's return after its apply, at most
		int32_t kdamond_pid = 0;
		uint64_t kdamond_cpu_ns = 0; // over the reads, first to last
		unsigned reads = 0, windows_skipped = 0;
		unsigned update_timeouts = 0; // empty reads, not in reads (< 6.14)
		uint32_t regions_p50 = 0;
	};
	std::optional<Damon> damon;
};

// One read of a DAMON aggregation's regions (--scanner damon): when its
// update request was written and returned, the toucher's position at
// both, the accessed bytes in the mapping, the kdamond's CPU time then.
struct DamonRead {
	uint64_t write_ns = 0, return_ns = 0;
	uint64_t pos_before = 0, pos_after = 0;
	uint64_t accessed_bytes = 0;
	uint64_t kdamond_cpu_ns = 0;
	uint32_t nr_regions = 0;
};

// The windows of the clear_refs + smaps Referenced method in a run's
// walks, and their accuracy.
void ws_judge(WorkingSetResult *r, const TouchSequence &seq, const std::vector<WsWalk> &walks);

// The toucher's count of touches done by a time (its timeline, and the
// scanner's reads of its position).
struct TouchPoint {
	uint64_t t_ns = 0, count = 0;
};

// The windows of DAMON's estimate: each aggregation from one read of its
// regions to the next, judged only when the next surely caught the very
// next aggregation; its edges known to within return_slack of each read's
// return, the truth taken from the toucher's timeline at those bounds;
// d: the kdamond's settings.
void ws_judge_damon(WorkingSetResult *r, const TouchSequence &seq,
		    const std::vector<DamonRead> &reads, const std::vector<TouchPoint> &timeline,
		    WorkingSetResult::Damon d);

void to_json(Json::Value &j, const WorkingSetResult &r);
// The run table's part: the truth and the method's accuracy in a few lines.
void print_working_set(const WorkingSetResult &r, FILE *out);

} // namespace ptwalk
