// SPDX-License-Identifier: GPL-2.0
// A result's "kernel_view" (results/SCHEMA.md): what the backend saw, in
// its own terms, as typed parts. The backends fill it, the validation and
// the table read its members, and its to_json writes it once, in the order
// each backend's view has always had.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ptwalk/histogram.hpp"
#include "ptwalk/json.hpp"
#include "ptwalk/lock_mode.hpp"
#include "ptwalk/scenario.hpp"

namespace ptwalk {

// Whose waits: a victim thread ptwalk registered, else the waiter's comm.
// Only the module's view has others: it records the stalls of every
// thread a walk blocked (module_view.cpp); the tracepoint view watches
// the victims alone.
struct Waiter {
	std::optional<Victim> victim;
	std::string comm; // when not a victim
};
// The victim's name, else the comm: the key of the view's "threads"
std::string waiter_name(const Waiter &w);

// One attributed wait, as the view lists it ("stalls").
struct KernelStall {
	int32_t tid = 0;
	Waiter waiter;                  // "victim", else "waiter_comm"
	LockMode mode = LockMode::none; // the waiter's
	uint64_t start_ns = 0, wait_ns = 0;
	uint64_t walk = 0;            // index into the result's walks
	std::optional<bool> acquired; // the module's
	// The wait split by who kept the lock from the waiter (results/
	// SCHEMA.md): the walker held it in a conflicting mode, other holders
	// did, or it was free (or held only compatibly) while the waiter had
	// not returned. walker_held + others_held + free == wait_ns; unset
	// when the view cannot split it.
	std::optional<uint64_t> walker_held_ns, others_held_ns, free_ns;
	// of walker_held_ns, the time the walker was off CPU (sched events)
	std::optional<uint64_t> walker_off_cpu_ns;
	// of walker_held_ns less walker_off_cpu_ns, the time the waiter was
	// runnable but not on a CPU (woken or preempted, waiting for one:
	// the waiters' sched_wakeup and sched_switch events)
	std::optional<uint64_t> waiter_runnable_ns;
	// the module's: how far apart the other probes of the same events
	// (perf's among them) may have read the clock at the boundaries of
	// walker_held_ns, summed (module/KERNEL-FACTS.md entry 26)
	std::optional<uint64_t> clock_spread_ns;
	// of others_held_ns, the time the holder was a writer waiting for a
	// walk's VMA read lock (the module's VMA-lock view): the walk's, by a
	// chain no tracepoint shows; set where that view is available
	std::optional<uint64_t> vma_chain_ns;
	// the module's, in a stall it could not split: the walk's only part,
	// its holds that ended before the waiter's decision, which other
	// probes (perf's) may have read the wait's start after
	std::optional<uint64_t> late_hold_ns;
	// the module's, in a stall it could not split: it began as the walk's
	// hold was being released, and whether the walk held the lock in it
	// is within the probes' spread (another view may not list it)
	std::optional<bool> at_release;
};

// One victim's waits ("threads"), its threads merged; in the module's
// view also those of other waiters, of one comm merged.
struct ThreadWaits {
	Waiter waiter;
	Histogram waits; // every wait on the target mm
	uint64_t attributed = 0, max_attributed_ns = 0;
	// the largest walker_held_ns of its attributed waits, when split
	std::optional<uint64_t> max_attributed_walker_held_ns;
	// the tracepoint view without a target mm: why (waits and attributed
	// are then null, and max_attributed_ns absent)
	std::optional<std::string> unknown_why;
};

// The attributed stalls of the tracepoint and module views.
struct StallsView {
	std::vector<ThreadWaits> threads; // in the view's order
	std::vector<KernelStall> list;    // "stalls", longest first, as kept
	// "stalls_total", absent when the tracepoint view found no target mm
	std::optional<uint64_t> total;
	// "stalls_complete_above_ns": above which wait the list is complete
	std::optional<uint64_t> complete_above_ns;
	// the walks' holds of the target mm, [start, end) in start order, as
	// the tracepoint view found them (not written: the validation's)
	std::optional<std::vector<std::pair<uint64_t, uint64_t>>> walk_holds;
	// every attributed stall, however short (the list keeps the longest
	// and those of 1 ms or more), as the tracepoint view found them (not
	// written: the validation's recall)
	std::optional<std::vector<KernelStall>> every_stall;
};

// The VMA read locks one walk took (the module's VMA-lock view).
struct VmaHolds {
	uint64_t locks = 0, hold_ns = 0, hold_max_ns = 0, fallbacks = 0;
};

// One writer's wait for the walked mm's VMA read locks ("vma_locks"
// "waits"): it held mmap_lock for write meanwhile.
struct VmaLockWait {
	int32_t tid = 0;
	Waiter writer;
	uint64_t start_ns = 0, wait_ns = 0;
	uint64_t walker_held_ns = 0; // until the walker's release woke it
	uint64_t walk = 0;           // index into the result's walks
	bool detach = false;         // the wait of a VMA's removal
};

// Waits on VMA locks ("vma_locks"): the module's view where its kernel's
// VMA locks are reference counts; otherwise why no view sees them.
struct VmaLockView {
	bool available = false;
	std::optional<std::string> why; // when not available
	// of this run's walks: writers a walker's release woke, and writers
	// that waited 10 us or more during a walk without one
	uint64_t waits_behind_walk = 0, waits_not_behind = 0;
	uint64_t max_wait_ns = 0, max_walker_held_ns = 0;
	std::vector<VmaLockWait> list; // behind walks, longest first
	// the listed mmap_lock stalls queued behind such a writer, and the
	// time they did (their vma_chain_ns summed)
	uint64_t chain_stalls = 0, chain_ns = 0;
};

// The tracepoint session's own figures (the backend's, beyond attribution).
struct TraceSession {
	std::optional<std::string> lost_note; // when events were lost
	uint64_t late_events = 0, undecoded_events = 0;
	std::string filter;
	uint64_t ring_bytes_per_cpu = 0;
	std::string memcg_field;
	// sched:sched_switch beside the lock events ("sched_events"): whether
	// it was opened, why not, and how it was filtered
	struct Sched {
		bool available = false;
		std::optional<std::string> why, filter;
		// the waiters' wakeups and switches followed too (with
		// available), else why not
		std::optional<bool> waiters;
		std::optional<std::string> waiters_why;
		// off-CPU or runnable spans dropped: the task ran with no
		// switch in seen (perf drops some events of a CPU leaving idle)
		std::optional<uint64_t> spans_dropped;
	};
	std::optional<Sched> sched;
};

// The tracepoint view's attribution figures.
struct TracepointView {
	uint64_t events = 0, lost_events = 0;
	bool target_mm_found = false;
	std::optional<std::string> target_mm_basis;
	uint64_t unpaired_events = 0;
	// acquire_returned(success=false) of watched threads: failed
	// trylocks, neither waits nor stalls (KERNEL-FACTS.md section 18)
	uint64_t failed_acquires = 0;
	std::optional<TraceSession> session; // the backend's, not attribute_stalls'
};

// The module view's own members.
struct ModuleKernelView {
	struct ReferenceWalk {
		uint64_t pte_slots = 0, lock_holds = 0;
	};
	std::optional<ReferenceWalk> reference_walk;
	uint64_t walks_matched = 0, walks_hookable = 0, module_walks_unmatched = 0;
	// each hook's debugfs record as the module printed it: key -> text
	std::vector<std::map<std::string, std::string>> hooks;
	uint64_t nmissed = 0;
	// "counter.kind" -> value, in the counters file's order
	std::vector<std::pair<std::string, uint64_t>> counters;
};

struct KernelView {
	std::string source;
	std::optional<std::string> unavailable; // "available": false, "why"
	std::optional<TracepointView> tracepoint;
	std::optional<ModuleKernelView> module;
	std::optional<StallsView> stalls; // the tracepoint and module views
	std::optional<VmaLockView> vma_locks;
};

void to_json(Json::Value &j, const KernelStall &s);
void to_json(Json::Value &j, const VmaLockView &v);
void to_json(Json::Value &j, const KernelView &v);

} // namespace ptwalk
