// SPDX-License-Identifier: GPL-2.0
// Who stalled behind which walk: the pure part of the tracepoint backend.
// StallAccumulator consumes time-ordered mmap_lock events (live from
// MmapLockTrace or synthetic in tests); attribute_stalls() then matches them
// with the scanner's walks.
//
// Rules:
//  - walker task: tid == walker, or tgid == walker when walker != target
//    (so a walker thread inside the target process is told apart by tid);
//  - target mm: the mm most locked by threads of the target tgid (walker
//    excluded); else the mm the walker holds longest inside walk windows,
//    preferring mms it never holds outside them (its own mm);
//  - a walk's holds: the walker's holds of the target mm overlapping
//    [start_ns, end_ns] of the walk;
//  - a watched thread's wait (start_locking -> acquire_returned) on the
//    target mm that overlaps one of a walk's holds in a mode that excludes
//    it (a write hold any wait, a read hold a write wait) is attributed to
//    that walk (the walk with the largest overlap); a read wait that began
//    while an attributed write wait was pending is attributed with it (it
//    queues behind that writer), the rule ptwalk.ko follows.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "ptwalk/backend.hpp"
#include "ptwalk/histogram.hpp"
#include "ptwalk/json.hpp"
#include "ptwalk/mmap_lock_trace.hpp"

namespace ptwalk {

struct StallConfig {
	pid_t target = 0;
	std::vector<WatchedThread> threads;
	pid_t walker = 0;
};

class StallAccumulator final : private LockPairer::Sink {
public:
	explicit StallAccumulator(StallConfig cfg);
	// Time-ordered events. Keeps: walker holds and waits, per watched
	// thread and mm a histogram of every wait, and the watched waits that
	// overlap a walker hold (the only ones attribution can use).
	void feed(const LockEvent &e);

	const StallConfig &config() const { return cfg_; }
	uint64_t events() const { return events_; }
	uint64_t unpaired() const { return pairer_.unpaired(); }
	bool is_walker(pid_t tid, pid_t tgid) const;

	struct WatchedWait {
		LockSpan span;
		size_t thread = 0; // index into config().threads
	};
	const std::vector<LockSpan> &walker_holds() const { return walker_holds_; }
	const std::vector<LockSpan> &walker_waits() const { return walker_waits_; }
	const std::vector<WatchedWait> &candidates() const { return candidates_; }
	// events by target-tgid threads (walker excluded), per mm
	const std::unordered_map<uint64_t, uint64_t> &target_mm_events() const
	{
		return target_mm_events_;
	}
	// all waits of watched thread i on mm (nullptr when none)
	const Histogram *waits(size_t thread, uint64_t mm) const;

private:
	void wait(const LockSpan &w) override;
	void hold_begin(const LockSpan &h) override;
	void hold(const LockSpan &h) override;

	StallConfig cfg_;
	LockPairer pairer_;
	uint64_t events_ = 0;
	std::unordered_map<pid_t, size_t> watched_;
	std::vector<std::unordered_map<uint64_t, std::unique_ptr<Histogram>>> hist_;
	std::vector<LockSpan> walker_holds_, walker_waits_, open_walker_holds_;
	std::vector<WatchedWait> candidates_;
	std::unordered_map<uint64_t, uint64_t> target_mm_events_;
};

struct AttributionStats {
	uint64_t lost_events = 0;
	const char *source = "mmap_lock tracepoints via perf_event_open";
	// The stalls list keeps the max_stalls longest waits and, beyond them,
	// every wait of keep_above_ns or more (so the validation, whose threshold
	// is 1 ms, sees all it checks), up to hard_cap entries in all.
	size_t max_stalls = 200;
	uint64_t keep_above_ns = 1000000;
	size_t hard_cap = 20000;
};

// Whether the n-th stall of a list sorted longest first is kept (see
// AttributionStats): shared by the tracepoint and module views.
inline bool keep_stall(size_t n, uint64_t wait_ns, const AttributionStats &st)
{
	return n < st.hard_cap && (n < st.max_stalls || wait_ns >= st.keep_above_ns);
}

// Per-walk views (same order as walks) and the kernel view's source,
// tracepoint figures (events, lost events, the target mm) and stalls (per
// victim its waits and what of them was attributed; the stalls as kept).
// Without a target mm every view stays unseen.
std::vector<WalkKernelView> attribute_stalls(const StallAccumulator &acc,
					     const std::vector<WalkSpan> &walks,
					     const AttributionStats &stats,
					     KernelView &kernel_view);

} // namespace ptwalk
