// SPDX-License-Identifier: GPL-2.0
// StallAccumulator's bounded memory of other tasks' holds and its walker
// off-CPU spans from sched_switch (see stall_attribution.hpp): the parts
// the stall split reads beside the walker's own holds.
#include "ptwalk/stall_attribution.hpp"

#include <algorithm>
#include <cstdint>

namespace ptwalk {

// Drops the kept holds no open watched wait can still overlap (see the
// bound in the header).
void StallAccumulator::prune_others()
{
	if (open_waits_.empty()) {
		recent_others_.clear();
		return;
	}
	uint64_t oldest = UINT64_MAX;
	for (const auto &o : open_waits_)
		oldest = std::min(oldest, o.start_ns);
	while (!recent_others_.empty() && recent_others_.front().end_ns <= oldest)
		recent_others_.pop_front();
}

void StallAccumulator::keep_other(const LockSpan &h)
{
	bool wanted = false;
	for (const auto &o : open_waits_)
		if (o.mm == h.mm && o.tid != h.tid && o.start_ns < h.end_ns)
			wanted = true;
	if (!wanted)
		return;
	if (recent_others_.size() >= kMaxRecentOthers) {
		others_horizon_ns_ = std::max(others_horizon_ns_, recent_others_.front().end_ns);
		recent_others_.pop_front();
	}
	recent_others_.push_back(h);
	recent_others_max_ = std::max(recent_others_max_, recent_others_.size());
}

void StallAccumulator::runnable_from(pid_t tid, uint64_t t)
{
	if (watched_.count(tid) && !is_walker(tid, 0))
		runnable_since_.try_emplace(tid, t);
}

void StallAccumulator::runnable_until(pid_t tid, uint64_t t)
{
	auto it = runnable_since_.find(tid);
	if (it == runnable_since_.end())
		return;
	const uint64_t since = it->second;
	runnable_since_.erase(it);
	const bool open = std::any_of(open_waits_.begin(), open_waits_.end(),
				      [&](const OpenWait &o) { return o.tid == tid; });
	if (!open || t <= since)
		return;
	Runnable &r = runnable_[tid];
	if (r.spans.size() >= kMaxRunnable) {
		r.dropped = true;
		return;
	}
	r.spans.push_back({since, t});
}

void StallAccumulator::sched_wakeup(const SchedWakeup &w)
{
	if (waiters_)
		runnable_from(w.tid, w.time_ns);
}

// tid runs now (a switch out of it, or a lock event of its own): an off
// or runnable span still open for it had no switch in: a wakeup of a task
// that had not left its CPU yet (ttwu_runnable(): no switch follows), or
// a switch in perf did not deliver (it drops some events of a CPU leaving
// idle: on the 6.18 host perf record saw 668 of 880 switches in of a 1 ms
// sleeper). Such a span is dropped, not closed at a guess, so neither
// part grows by what no event showed.
void StallAccumulator::running(pid_t tid)
{
	// on every lock event: both maps are empty but for a few tasks
	if (!off_since_.empty() && off_since_.erase(tid))
		sched_gaps_++;
	if (!runnable_since_.empty() && runnable_since_.erase(tid))
		sched_gaps_++;
}

void StallAccumulator::sched_switch(const SchedSwitch &s)
{
	if (s.prev_tid != s.next_tid && s.prev_tid > 0)
		running(s.prev_tid);
	if (waiters_) {
		runnable_until(s.next_tid, s.time_ns);
		if (s.prev_runnable && s.prev_tid != s.next_tid)
			runnable_from(s.prev_tid, s.time_ns);
	}
	if (auto it = off_since_.find(s.next_tid); it != off_since_.end()) {
		off_cpu_.push_back({s.next_tid, it->second, s.time_ns});
		off_since_.erase(it);
	}
	if (s.prev_tid == s.next_tid)
		return;
	for (const auto &o : open_walker_holds_)
		if (o.tid == s.prev_tid) {
			off_since_.try_emplace(s.prev_tid, s.time_ns);
			return;
		}
}

std::vector<StallAccumulator::OffCpu> StallAccumulator::walker_off_cpu() const
{
	std::vector<OffCpu> v = off_cpu_;
	for (const auto &[tid, since] : off_since_)
		v.push_back({tid, since, UINT64_MAX});
	return v;
}

} // namespace ptwalk
