// SPDX-License-Identifier: GPL-2.0
// The tracepoint backend: mmap_lock tracepoints through perf_event_open,
// filtered on common_pid to the target's threads and the walker, paired and
// attributed by StallAccumulator / attribute_stalls().
#include <dirent.h>
#include <set>

#include "ptwalk/backend.hpp"
#include "ptwalk/mmap_lock_trace.hpp"
#include "ptwalk/procfs.hpp"
#include "ptwalk/stall_attribution.hpp"

namespace ptwalk {

namespace {

constexpr size_t kRingBytesPerCpu = 16u << 20;
constexpr size_t kMaxFilterChars = 3500; // SET_FILTER copies at most a page

void add_tasks(pid_t pid, std::set<pid_t> &out)
{
	std::string dir = "/proc/" + std::to_string(pid) + "/task";
	DIR *d = opendir(dir.c_str());
	if (!d)
		return;
	while (dirent *e = readdir(d)) {
		char *end = nullptr;
		long t = strtol(e->d_name, &end, 10);
		if (end && *end == 0 && t > 0)
			out.insert(pid_t(t));
	}
	closedir(d);
}

class TracepointBackend final : public Backend {
public:
	BackendKind kind() const override { return BackendKind::tracepoint; }
	std::string detail() const override { return detail_; }

	bool start(pid_t target, const std::vector<WatchedThread> &threads, pid_t walker) override
	{
		if (started_) {
			detail_ = "tracepoint backend: already started";
			return false;
		}
		std::set<pid_t> tids;
		if (target > 0) {
			tids.insert(target);
			add_tasks(target, tids);
		}
		for (const auto &t : threads)
			if (t.tid > 0)
				tids.insert(t.tid);
		if (walker > 0) {
			tids.insert(walker);
			if (walker != target)
				add_tasks(walker, tids);
		}
		std::string filter;
		for (pid_t t : tids) {
			if (!filter.empty())
				filter += " || ";
			filter += "common_pid == " + std::to_string(t);
		}
		std::string filter_note;
		if (filter.size() > kMaxFilterChars) {
			filter.clear();
			filter_note = "none: " + std::to_string(tids.size()) +
				      " tids make the filter too long";
		}
		acc_ = std::make_unique<StallAccumulator>(
			StallConfig{target, threads, walker, !kernel_is_preempt_rt()});
		MmapLockTrace::Options o;
		o.filter = filter;
		o.ring_bytes_per_cpu = kRingBytesPerCpu;
		std::string err;
		StallAccumulator *acc = acc_.get();
		// Context switches of the walker's tasks (both directions), to
		// tell the part of a stall the walker held the lock off CPU; and
		// the watched threads' switches and wakeups, to tell the part
		// the waiter was runnable but not on a CPU (stall_attribution.hpp).
		std::set<pid_t> wtids, vtids;
		if (walker > 0) {
			wtids.insert(walker);
			if (walker != target)
				add_tasks(walker, wtids);
		}
		for (const auto &t : threads)
			if (t.tid > 0 && !wtids.count(t.tid))
				vtids.insert(t.tid);
		std::string wakeup_filter;
		for (pid_t t : wtids) {
			if (!sched_filter_.empty())
				sched_filter_ += " || ";
			sched_filter_ += "prev_pid == " + std::to_string(t) +
					 " || next_pid == " + std::to_string(t);
		}
		for (pid_t t : vtids) {
			sched_filter_ += " || prev_pid == " + std::to_string(t) +
					 " || next_pid == " + std::to_string(t);
			if (!wakeup_filter.empty())
				wakeup_filter += " || ";
			wakeup_filter += "pid == " + std::to_string(t);
		}
		if (sched_filter_.size() > kMaxFilterChars)
			sched_filter_.clear(); // all switches; the accumulator picks
		if (wakeup_filter.size() > kMaxFilterChars)
			wakeup_filter.clear();
		if (!wtids.empty()) {
			o.sched_filter = sched_filter_;
			o.on_sched = [acc](const SchedSwitch &s) { acc->sched_switch(s); };
			if (!vtids.empty()) {
				o.wakeup_filter = wakeup_filter;
				o.on_wakeup = [acc](const SchedWakeup &w) { acc->sched_wakeup(w); };
			}
		}
		if (!trace_.start(
			    o, [acc](const LockEvent &e) { acc->feed(e); }, &err)) {
			detail_ = "tracepoint backend unavailable: " + err;
			acc_.reset();
			return false;
		}
		if (filter_note.empty())
			filter_note =
				trace_.filter_applied()
					? "common_pid (" + std::to_string(tids.size()) + " tids)"
					: "none: " + trace_.filter_error();
		filter_note_ = filter_note;
		sched_ = TraceSession::Sched{};
		if (wtids.empty()) {
			sched_.why = "no walker task to follow";
		} else if (!trace_.sched_available()) {
			sched_.why = trace_.sched_why();
		} else {
			sched_.available = true;
			sched_.filter =
				trace_.sched_filter_applied()
					? "prev_pid/next_pid (" + std::to_string(wtids.size()) +
						  " walker tids, " + std::to_string(vtids.size()) +
						  " waiter tids)"
					: "none (walker and waiter tids picked in userspace)" +
						  (trace_.sched_filter_error().empty()
							   ? std::string()
							   : ": " + trace_.sched_filter_error());
			sched_.waiters = trace_.wakeup_available();
			if (vtids.empty())
				sched_.waiters_why = "no waiter thread to follow";
			else if (!trace_.wakeup_available())
				sched_.waiters_why = trace_.wakeup_why();
		}
		acc_->set_sched(sched_.available);
		acc_->set_waiters(sched_.available && sched_.waiters.value_or(false));
		started_ = true;
		detail_ = "mmap_lock tracepoints via perf_event_open (" +
			  std::to_string(trace_.cpus()) + " CPUs x " +
			  std::to_string(trace_.ring_bytes_per_cpu() >> 20) +
			  " MiB rings, filter " + filter_note_ + ", tracefs " +
			  (trace_.tracefs_was_mounted_by_us() ? "mounted and unmounted by ptwalk"
							      : "already mounted") +
			  ")";
		return true;
	}

	void stop() override
	{
		if (started_)
			trace_.stop();
	}

	std::vector<WalkKernelView> annotate(const std::vector<WalkSpan> &walks,
					     KernelView &kv) override
	{
		kv = KernelView{};
		if (!started_ || !acc_) {
			kv.source = "mmap_lock tracepoints via perf_event_open";
			kv.unavailable = detail_;
			return std::vector<WalkKernelView>(walks.size());
		}
		stop();
		AttributionStats st;
		st.lost_events = trace_.lost();
		auto views = attribute_stalls(*acc_, walks, st, kv);
		TraceSession &s = kv.tracepoint->session.emplace();
		if (st.lost_events)
			s.lost_note = "the kernel dropped events: holds, waits "
				      "and attribution may be incomplete";
		s.late_events = trace_.late();
		s.undecoded_events = trace_.undecoded();
		s.filter = filter_note_;
		s.ring_bytes_per_cpu = uint64_t(trace_.ring_bytes_per_cpu());
		s.memcg_field = trace_.memcg_field();
		s.sched = sched_;
		if (s.sched->available)
			s.sched->spans_dropped = acc_->sched_gaps();
		return views;
	}

private:
	std::string detail_ = "tracepoint backend not started";
	std::string filter_note_, sched_filter_;
	TraceSession::Sched sched_;
	bool started_ = false;
	MmapLockTrace trace_;
	std::unique_ptr<StallAccumulator> acc_;
};

} // namespace

std::unique_ptr<Backend> make_tracepoint_backend()
{
	return std::make_unique<TracepointBackend>();
}

} // namespace ptwalk
