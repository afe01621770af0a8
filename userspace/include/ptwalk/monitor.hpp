// SPDX-License-Identifier: GPL-2.0
// `ptwalk monitor`: watch every mmap_lock hold on the system for a while and
// report the long ones as walks - who held whose mm, for how long, in which
// mode, and who waited behind it. Tracepoint backend only.
#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>
#include <unordered_map>
#include <vector>

#include "ptwalk/json.hpp"
#include "ptwalk/mmap_lock_trace.hpp"

namespace ptwalk {

struct MonitorOptions {
	uint64_t duration_ns = 10'000'000'000ull;
	uint64_t min_hold_ns = 1'000'000; // holds >= this are reported
	std::string out_path;             // JSON (tmp file + rename); "" = none
	bool quiet = false;               // no table on stdout
	std::string backend = "auto";     // auto (module if loaded) | module | tracepoint
};

// The module flavour: every walk ptwalk.ko records on the host, with the
// stalls it attributed. Same schema, "backend": "module".
int run_module_monitor(const MonitorOptions &o);

// 0 ok; 1 when the tracepoint backend is unavailable (one line on stderr)
// or the JSON could not be written. SIGINT ends the watch early; what was
// seen is still printed and written.
int run_monitor(const MonitorOptions &o);

// Waits shorter than this are not kept as waiters (an uncontended
// acquisition takes well under a microsecond).
inline constexpr uint64_t kMonitorMinWaitNs = 1000;

// The pure part: time-ordered events in, long holds and waits out.
class HoldCollector final : private LockPairer::Sink {
public:
	explicit HoldCollector(uint64_t min_hold_ns,
			       uint64_t min_wait_ns = kMonitorMinWaitNs);
	void feed(const LockEvent &e);

	uint64_t events() const { return events_; }
	uint64_t unpaired() const { return pairer_.unpaired(); }
	uint64_t min_hold_ns() const { return min_hold_; }
	uint64_t min_wait_ns() const { return min_wait_; }
	const std::vector<LockSpan> &holds() const { return holds_; }
	const std::vector<LockSpan> &waits() const { return waits_; }
	// lock events per mm per tgid
	const std::unordered_map<uint64_t, std::unordered_map<pid_t, uint64_t>> &
	mm_events() const { return mm_events_; }

private:
	void wait(const LockSpan &w) override;
	void hold(const LockSpan &h) override;

	uint64_t min_hold_, min_wait_;
	LockPairer pairer_;
	uint64_t events_ = 0;
	std::vector<LockSpan> holds_, waits_;
	std::unordered_map<uint64_t, std::unordered_map<pid_t, uint64_t>> mm_events_;
};

struct MonitoredHold {
	LockSpan hold;
	pid_t owner_tgid = 0; // 0: unknown
	// "other_tasks": the tgid (not the holder's) with the most lock events
	// on the mm; "self": the holder's own process (the mm is where its
	// threads lock most, and more than any other tgid); "unknown"
	std::string owner_basis = "unknown";
	std::vector<LockSpan> waiters; // longest first, at most max_waiters
	size_t waiters_total = 0;
};

// Holds in start order. Owner of the held mm: see owner_basis. The mm
// key may be reused by a new process after one exits within the window;
// counts then mix both (no exit tracking).
// Waiters: waits on the same mm by other tasks overlapping the hold.
std::vector<MonitoredHold> analyze_holds(const HoldCollector &c,
					 size_t max_waiters = 32);

} // namespace ptwalk
