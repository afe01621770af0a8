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
//    that walk (the walk of the earliest such hold: the first to block it,
//    as ptwalk.ko attributes it); a read wait that began
//    while an attributed write wait was pending is attributed with it (it
//    queues behind that writer), the rule ptwalk.ko follows; not when
//    StallConfig::readers_queue_behind_writers is false (PREEMPT_RT);
//  - a wait whose acquire_returned failed (success=false: a failed
//    mmap_*_trylock(), which 6.1 and 6.12 trace as start_locking then
//    acquire_returned, or a killable lock interrupted) is neither a stall
//    nor in the victim's wait histogram; failed_acquires() counts them;
//  - each stall is split by interval arithmetic over [start, end] of the
//    wait: walker_held = the union of the attributed walk's holds that
//    exclude it (for a reader behind a pending attributed writer, the
//    walk's read holds while that writer is pending count too);
//    others_held = the union of other tasks' excluding holds and other
//    walks' (the walker's next walk included; same rule), minus
//    walker_held;
//    free = the rest. The three sum to the wait exactly. "Other tasks"
//    are the tasks whose events the session sees (the target's threads and
//    the walker's, or every task when the kernel filter was refused);
//    a holder outside them counts as free;
//  - with sched:sched_switch events, walker_off_cpu = the part of
//    walker_held during which the holding walker task was switched out;
//  - with the waiters' sched_wakeup and sched_switch events too,
//    waiter_runnable = the part of walker_held, outside walker_off_cpu,
//    during which the waiter was runnable but not on a CPU: from its
//    wakeup (or a switch that left it runnable: preempted) to its next
//    switch in. A writer behind a walk that drops and retakes the lock
//    sets rwsem's handoff bit only when it runs after RWSEM_WAIT_TIMEOUT
//    (module/KERNEL-FACTS.md entry 20); until a busy host runs it, the
//    walker takes the lock back: that time is the host's, not the walk's.
#pragma once

#include <cstdint>
#include <deque>
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
	// a reader queues behind a waiting writer (the chain above); false on
	// PREEMPT_RT, whose readers pass a writer until it holds the lock
	// (module/KERNEL-FACTS.md entry 27): there no read wait is a read walk's
	bool readers_queue_behind_writers = true;
};

class StallAccumulator final : private LockPairer::Sink {
public:
	explicit StallAccumulator(StallConfig cfg);
	// Time-ordered events. Keeps: walker holds and waits, per watched
	// thread and mm a histogram of every wait, and the watched waits that
	// overlap a walker hold (the only ones attribution can use).
	void feed(const LockEvent &e);
	// A context switch, in time order with feed(); only switches of a
	// walker task that holds a lock matter. set_sched(true) says the
	// session delivers them (else walker_off_cpu_ns stays unset).
	void sched_switch(const SchedSwitch &s);
	void set_sched(bool available) { sched_ = available; }
	bool sched() const { return sched_; }
	// A watched thread made runnable, in time order with feed();
	// set_waiters(true) says the session delivers the watched threads'
	// wakeups and switches (else waiter_runnable_ns stays unset).
	void sched_wakeup(const SchedWakeup &w);
	void set_waiters(bool available) { waiters_ = available; }
	bool waiters() const { return waiters_; }
	// off-CPU or runnable spans dropped because the task was seen running
	// (its own lock event, or a switch out of it) with no switch in seen
	uint64_t sched_gaps() const { return sched_gaps_; }

	const StallConfig &config() const { return cfg_; }
	uint64_t events() const { return events_; }
	uint64_t unpaired() const { return pairer_.unpaired(); }
	bool is_walker(pid_t tid, pid_t tgid) const;

	struct Interval {
		uint64_t start_ns = 0, end_ns = 0;
	};
	struct WatchedWait {
		LockSpan span;
		size_t thread = 0; // index into config().threads
		// other (non-walker) tasks' holds of the same mm during the wait,
		// clipped to it; unions per mode, in time order
		std::vector<Interval> others_write, others_read;
		// false when holds that could overlap it were dropped (cap)
		bool others_complete = true;
		// the waiter runnable but off CPU during the wait, clipped, in
		// time order (with waiters()); false when spans were dropped
		std::vector<Interval> runnable;
		bool runnable_complete = true;
	};
	// A walker task off CPU (switched out while holding a lock).
	struct OffCpu {
		pid_t tid = 0;
		uint64_t start_ns = 0, end_ns = 0; // end UINT64_MAX: never back
	};
	const std::vector<LockSpan> &walker_holds() const { return walker_holds_; }
	const std::vector<LockSpan> &walker_waits() const { return walker_waits_; }
	const std::vector<WatchedWait> &candidates() const { return candidates_; }
	// walker off-CPU spans that began inside one of its holds (closed ones,
	// then the open ones with end UINT64_MAX)
	std::vector<OffCpu> walker_off_cpu() const;
	uint64_t failed_acquires() const { return failed_acquires_; }
	// other tasks' closed holds kept now (the bound's working set) and
	// the most ever kept; dropped when over kMaxRecentOthers
	size_t others_kept() const { return recent_others_.size(); }
	size_t others_kept_max() const { return recent_others_max_; }
	static constexpr size_t kMaxRecentOthers = 1u << 16;
	// runnable spans kept per open wait, beyond which its split has no
	// waiter_runnable (no guessed figure)
	static constexpr size_t kMaxRunnable = 1u << 14;
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

	void keep_other(const LockSpan &h);
	void prune_others();
	void running(pid_t tid);
	void runnable_from(pid_t tid, uint64_t t);
	void runnable_until(pid_t tid, uint64_t t);

	StallConfig cfg_;
	LockPairer pairer_;
	uint64_t events_ = 0;
	uint64_t failed_acquires_ = 0;
	bool sched_ = false;
	bool waiters_ = false;
	uint64_t sched_gaps_ = 0;
	// watched threads runnable off CPU: tid -> since; the closed spans of
	// a thread with an open wait (the only ones a wait can overlap: a
	// span that ends while none is open ends before any later wait)
	struct Runnable {
		std::vector<Interval> spans;
		bool dropped = false;
	};
	std::unordered_map<pid_t, uint64_t> runnable_since_;
	std::unordered_map<pid_t, Runnable> runnable_;
	// Memory bound of other tasks' holds: a closed one is kept only while
	// a watched thread's wait on the same mm that began before its end is
	// still open (only such a wait can become a candidate it overlaps);
	// once no open wait began before its end it is dropped. The open ones
	// are at most one per (task, mm). The kept set is thus the holds
	// overlapping the waits open now, whatever the run's length; beyond
	// kMaxRecentOthers (a wait open for very long beside a tight locker)
	// the oldest go and others_horizon_ns_ marks waits that began before
	// as not split (no guessed figure).
	struct OpenWait {
		pid_t tid;
		uint64_t mm, start_ns;
	};
	std::vector<OpenWait> open_waits_;
	std::vector<LockSpan> open_others_;
	std::deque<LockSpan> recent_others_; // in end order
	size_t recent_others_max_ = 0;
	uint64_t others_horizon_ns_ = 0;
	// walker tasks switched out while holding: tid -> since
	std::unordered_map<pid_t, uint64_t> off_since_;
	std::vector<OffCpu> off_cpu_;
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
