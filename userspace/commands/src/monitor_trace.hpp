// SPDX-License-Identifier: GPL-2.0
// ptwalk monitor's trace, for monitor.cpp only: the process lifecycle read
// through perf_event_open and the mmap_lock activity, either every event
// through perf (the tracepoint backend) or, paired in the kernel, only the
// long holds, the waits behind them, foreign walks as they begin and the
// prober's acquisitions (the bpf backend, os/bpf/lock_spans.bpf.c), handed
// in time order to the model (monitor_model.cpp) through its hooks.
#pragma once

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <mutex>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <functional>
#include <optional>
#include <type_traits>
#include <string_view>

#include "ptwalk/bpf_lock_spans.hpp"
#include "ptwalk/clock.hpp"
#include "ptwalk/fd.hpp"
#include "ptwalk/monitor.hpp"
#include "ptwalk/perf_events.hpp"
#include "ptwalk/procfs.hpp"
#include "ptwalk/sorted_runs.hpp"
#include "ptwalk/tracefs.hpp"

namespace ptwalk::monitor_detail {

// The trace: mmap_lock events plus the process lifecycle (exit, exec,
// fork), time-ordered, fed to a WalkTracker on the reader thread. In-flight
// holds are checked against the holder's fd table as the samples arrive.
class MonitorTrace final : private PerfSink {
public:
	struct Hooks {
		std::function<void(const LockEvent &)> lock;
		std::function<void(pid_t tgid, uint64_t t, bool exec)> ended;
		std::function<void(pid_t child, uint64_t t)> born;
		std::function<void(pid_t tid, uint64_t start, WalkFile f)> fd_evidence;
		std::function<void(uint64_t drained_at, bool final)> round;
		std::function<void(pid_t tid, std::string_view comm, uint64_t t)> comm;
		std::function<void(pid_t pid, pid_t tid, pid_t ptid, uint64_t t)> fork;
		// bpf backend: a span paired in the kernel (in end order), a
		// prober's acquisition, the kernel's mm->owner of an mm
		std::function<void(const LockSpan &s, bool hold)> span;
		std::function<void(const LockEvent &)> probe;
		std::function<void(uint64_t mm, pid_t tgid, uint64_t t, bool building)> owner;
	};
	~MonitorTrace() override { stop(); }

	// false with *err: tracefs, the formats, perf_event_open or (bpf
	// set) the BPF program failed; bpf_failed() tells the last apart.
	bool start(Hooks h, const BpfLockSpansConfig *bpf, std::string *err)
	{
		bpf_failed_ = false;
		if (!start_trace(std::move(h), bpf, err)) {
			bpf_.close(); // nothing stays attached after a failed start
			return false;
		}
		return true;
	}

private:
	bool start_trace(Hooks h, const BpfLockSpansConfig *bpf, std::string *err)
	{
		hooks_ = std::move(h);
		Tracefs tfs;
		if (!tfs.open(err))
			return false;
		if (!decoder_.init(tfs, err))
			return false;
		std::vector<uint32_t> ids;
		if (bpf) {
			if (!bpf_.open(*bpf, err)) {
				bpf_failed_ = true;
				return false;
			}
		} else {
			ids = decoder_.ids();
		}
		// lifecycle: optional (their absence is reported, not fatal)
		std::string e2;
		if (auto x = tfs.event_format("sched", "sched_process_exit", &e2)) {
			exit_ = *x;
			has_exit_ = x->find("pid") != nullptr;
			group_dead_ = x->find("group_dead") != nullptr;
			if (has_exit_)
				ids.push_back(x->id);
		}
		if (auto x = tfs.event_format("sched", "sched_process_exec", &e2)) {
			exec_ = *x;
			has_exec_ = true;
			ids.push_back(x->id);
		}
		if (auto x = tfs.event_format("sched", "sched_process_fork", &e2)) {
			fork_ = *x;
			has_fork_ = x->find("child_pid") != nullptr;
			if (has_fork_)
				ids.push_back(x->id);
		}
		tfs.release();
		PerfTracepointConfig cfg;
		cfg.tracepoint_ids = ids;
		// with BPF the rings carry the lifecycle only
		cfg.ring_bytes_per_cpu = bpf ? 2u << 20 : 16u << 20;
		cfg.track_tasks = true;
		// every event through perf: drained every 10 ms, which is also
		// how soon an in-flight walk's fd table is read. With BPF the
		// ring wakes the reader when a foreign walk begins, and the
		// reader sleeps long otherwise (next_poll_ms).
		cfg.poll_ms = bpf ? kBpfIdlePollMs : 10;
		if (bpf)
			cfg.wake_fds.push_back(bpf_.wake_fd());
		if (!perf_.open(cfg, err))
			return false;
		armed_ns_.store(UINT64_MAX, std::memory_order_relaxed);
		if (!perf_.start(*this, err))
			return false;
		// the events are enabled one CPU and tracepoint after the other:
		// a task's events before the last are seen in part, and are not
		// paired (the BPF program is armed alike)
		armed_ns_.store(now_ns(), std::memory_order_release);
		bpf_used_ = bpf != nullptr;
		running_ = true;
		return true;
	}

public:
	void stop()
	{
		if (running_) {
			perf_.stop(); // the last round_end drains the BPF ring too
			running_ = false;
		}
		if (bpf_.is_open()) {
			bpf_stats_ = bpf_.stats();
			bpf_.close();
		}
	}
	bool bpf_used() const { return bpf_used_; }
	bool bpf_failed() const { return bpf_failed_; }
	// the kernel side's counters (live while running, final after stop)
	BpfLockStats bpf_stats() const { return bpf_.is_open() ? bpf_.stats() : bpf_stats_; }
	// The trace's counters, the kernel side's read once.
	struct Counts {
		uint64_t events = 0;             // lock events seen
		uint64_t lost = 0;               // rings full, program runs skipped
		uint64_t unpaired_in_kernel = 0; // bpf: paired there
		uint64_t late = 0;               // arrived after later ones were handed on
		std::optional<BpfLockStats> bpf;
	};
	Counts counts() const
	{
		Counts c;
		c.lost = perf_.lost();
		c.late = late_.load(std::memory_order_relaxed);
		if (!bpf_used_) {
			c.events = events_.load();
			return c;
		}
		c.bpf = bpf_stats();
		c.events = c.bpf->events;
		c.lost += c.bpf->dropped + c.bpf->misses;
		c.unpaired_in_kernel = c.bpf->unpaired;
		return c;
	}
	uint64_t fd_scans() const { return fd_scans_.load(); }
	size_t ring_bytes_per_cpu() const { return perf_.ring_bytes_per_cpu(); }
	const std::string &memcg_field() const { return decoder_.memcg_field(); }
	std::string lifecycle() const
	{
		std::string s;
		s += has_exit_ ? (group_dead_ ? "exit" : "exit(no group_dead)") : "no-exit";
		s += has_exec_ ? ",exec" : ",no-exec";
		s += has_fork_ ? ",fork" : ",no-fork";
		return s;
	}

private:
	enum Kind : uint8_t { Lock, Exit, Exec, Fork, Hold, Wait, Probe, Owner };
	// One entry of the time-ordered stream, kept small: the tracepoint
	// backend moves every lock event through it.
	struct Ev {
		uint64_t t;
		Kind kind;
		bool building = false; // Owner: see WalkTracker::owner_fact
		pid_t pid = 0;         // Exit, Exec, Fork, Owner
		union {
			LockEvent lock; // Lock, Probe
			LockSpan span;  // Hold, Wait, Owner (its mm)
		};
		Ev(uint64_t at, Kind k, const LockEvent &e) : t(at), kind(k), lock(e) {}
		Ev(uint64_t at, Kind k, const LockSpan &sp, pid_t p = 0)
			: t(at), kind(k), pid(p), span(sp)
		{
		}
		Ev(uint64_t at, Kind k, pid_t p) : t(at), kind(k), pid(p), span() {}
	};
	static_assert(std::is_trivially_copyable_v<Ev> && sizeof(Ev) <= 56);
	// The BPF program's records, in the order it emitted them: each at
	// the time it was emitted (a span's end), as the trace's time runs.
	void take(const ptw_bpf_rec &r)
	{
		const pid_t tgid = pid_t(r.tgid), tid = pid_t(r.tid);
		const LockSpan sp{r.start_ns, r.end_ns,     r.mm,           tgid,
				  tid,        r.write != 0, r.success != 0, r.teardown != 0};
		auto owner = [&] {
			const bool mine = pid_t(r.owner_tgid) == tgid;
			// its exit tearing down its own mm: nothing to learn
			if (!r.owner_tgid || (mine && r.foreign == PTW_MM_NONE))
				return;
			Ev e(r.end_ns, Owner, sp, pid_t(r.owner_tgid));
			// the owner locking an mm while it has another: the one
			// execve() builds for it
			e.building = mine && r.foreign == PTW_MM_OTHER;
			add(e);
		};
		switch (r.kind) {
		case PTW_BPF_HOLD:
			owner();
			add(Ev(r.end_ns, Hold, sp));
			released(tid);
			break;
		case PTW_BPF_WAIT:
			add(Ev(r.end_ns, Wait, sp));
			break;
		case PTW_BPF_FOREIGN_ACQUIRE:
			owner();
			inflight_[tid] = {tgid, r.start_ns, false, true};
			break;
		case PTW_BPF_FOREIGN_RELEASE:
			released(tid);
			break;
		case PTW_BPF_PROBE: {
			LockEvent e;
			e.time_ns = r.start_ns;
			e.mm = r.mm;
			e.tgid = tgid;
			e.tid = tid;
			e.type = LockEventType::AcquireReturned;
			e.write = r.write != 0;
			add(Ev(r.start_ns, Probe, e));
			break;
		}
		}
	}
	void add(const Ev &e) { runs_.push(pending_, head_, e); }
	void released(pid_t tid)
	{
		auto it = inflight_.find(tid);
		if (it != inflight_.end())
			it->second.active = false;
	}
	void sample(const PerfSample &s) override
	{
		LockEvent e;
		if (decoder_.decode(s, e)) {
			if (e.time_ns < armed_ns_.load(std::memory_order_acquire))
				return;
			n_events_++;
			add(Ev(e.time_ns, Lock, e));
			// entries stay (marked idle) rather than churn the allocator
			// at every acquisition; bounded in round_end
			if (e.type == LockEventType::AcquireReturned && e.success) {
				inflight_[e.tid] = {e.tgid, e.time_ns, false, true};
			} else if (e.type == LockEventType::Released) {
				released(e.tid);
			}
			return;
		}
		uint64_t type = 0;
		if (s.raw.size() < 2)
			return;
		type = uint64_t(s.raw[0]) | uint64_t(s.raw[1]) << 8;
		uint64_t v = 0;
		if (has_exit_ && type == exit_.id) {
			uint64_t gd = 0;
			if (group_dead_)
				read_field_u64(*exit_.find("group_dead"), s.raw, gd);
			else
				gd = s.pid == s.tid; // older kernels: the leader's exit
			if (gd)
				add(Ev(s.time_ns, Exit, s.pid));
		} else if (has_exec_ && type == exec_.id) {
			add(Ev(s.time_ns, Exec, s.pid));
		} else if (has_fork_ && type == fork_.id &&
			   read_field_u64(*fork_.find("child_pid"), s.raw, v)) {
			add(Ev(s.time_ns, Fork, pid_t(v)));
		}
	}
	// BPF: while a walk of another process's mm is in flight and its
	// holder's fd table not read yet, wake when it is 1 ms old
	int next_poll_ms(int poll_ms) override
	{
		if (!bpf_used_)
			return poll_ms;
		const uint64_t now = now_ns();
		uint64_t soonest = UINT64_MAX;
		for (const auto &[tid, f] : inflight_)
			if (f.active && !f.scanned)
				soonest = std::min(soonest, f.since + kInflightScanNs);
		if (soonest == UINT64_MAX)
			return poll_ms;
		return soonest <= now ? 0
				      : int(std::min<uint64_t>((soonest - now) / 1'000'000 + 1,
							       uint64_t(poll_ms)));
	}
	void round_end(uint64_t drained_at, bool final) override
	{
		if (bpf_.is_open()) {
			bpf_.consume([this](const ptw_bpf_rec &r) { take(r); });
		}
		events_.store(n_events_, std::memory_order_relaxed);
		// walks in flight for >= 1 ms: what does the walker have open?
		for (auto &[tid, f] : inflight_) {
			if (!f.active || f.scanned || drained_at < f.since + kInflightScanNs)
				continue;
			f.scanned = true;
			scan_fds(tid, f.tgid, f.since);
		}
		if (inflight_.size() > 65536)
			std::erase_if(inflight_, [](const auto &kv) { return !kv.second.active; });
		if (inflight_.size() > 65536)
			inflight_.clear(); // tasks come and go: bounded
		runs_.merge(pending_, head_);
		const uint64_t limit = final                  ? UINT64_MAX
				       : drained_at > kMargin ? drained_at - kMargin
							      : 0;
		size_t n = head_;
		for (; n < pending_.size() && pending_[n].t <= limit; n++) {
			const Ev &e = pending_[n];
			if (e.t < last_delivered_)
				n_late_++; // EventReorder's rule (os/mmap_lock_trace)
			else
				last_delivered_ = e.t;
			switch (e.kind) {
			case Lock:
				hooks_.lock(e.lock);
				break;
			case Exit:
				hooks_.ended(e.pid, e.t, false);
				break;
			case Exec:
				hooks_.ended(e.pid, e.t, true);
				hooks_.born(e.pid, e.t);
				break;
			case Fork:
				hooks_.born(e.pid, e.t);
				break;
			case Hold:
				hooks_.span(e.span, true);
				break;
			case Wait:
				hooks_.span(e.span, false);
				break;
			case Probe:
				hooks_.probe(e.lock);
				break;
			case Owner:
				hooks_.owner(e.span.mm, e.pid, e.t, e.building);
				break;
			}
		}
		head_ = n;
		late_.store(n_late_, std::memory_order_relaxed);
		// drop what was handed on once it is at least half: each event is
		// moved O(1) times, not once per round it waits
		if (head_ == pending_.size()) {
			pending_.clear();
			head_ = 0;
		} else if (head_ * 2 >= pending_.size()) {
			pending_.erase(pending_.begin(), pending_.begin() + ptrdiff_t(head_));
			head_ = 0;
		}
		hooks_.round(limit == UINT64_MAX ? drained_at : limit, final);
	}

public:
	// What the holder has open now (the hold that began at `since`).
	void scan_fds(pid_t tid, pid_t tgid, uint64_t since)
	{
		fd_scans_.fetch_add(1, std::memory_order_relaxed);
		const std::string dir =
			"/proc/" + std::to_string(tgid) + "/task/" + std::to_string(tid) + "/fd";
		DIR *d = opendir(dir.c_str());
		if (!d)
			return;
		std::vector<WalkFile> files;
		while (dirent *e = readdir(d)) {
			if (e->d_name[0] == '.')
				continue;
			char buf[256];
			ssize_t n = readlinkat(dirfd(d), e->d_name, buf, sizeof(buf) - 1);
			if (n <= 0)
				continue;
			if (auto f = parse_walk_file(std::string_view(buf, size_t(n))))
				files.push_back(std::move(*f));
		}
		closedir(d);
		if (auto best = pick_walk_file(files, tgid))
			hooks_.fd_evidence(tid, since, *best);
	}

private:
	void task_comm(pid_t, pid_t tid, std::string_view comm, uint64_t t) override
	{
		if (hooks_.comm)
			hooks_.comm(tid, comm, t);
	}
	void task_fork(pid_t pid, pid_t, pid_t tid, pid_t ptid, uint64_t t) override
	{
		if (hooks_.fork)
			hooks_.fork(pid, tid, ptid, t);
	}
	static constexpr uint64_t kMargin = 10'000'000;
	static constexpr uint64_t kInflightScanNs = 1'000'000; // a walk's age at its fd scan
	static constexpr int kBpfIdlePollMs = 100;
	struct Inflight {
		pid_t tgid;
		uint64_t since;
		bool scanned;
		bool active; // false: released (kept to spare the allocator)
	};
	Hooks hooks_;
	MmapLockDecoder decoder_;
	PerfTracepoints perf_;
	TraceEventFormat exit_, exec_, fork_;
	bool has_exit_ = false, group_dead_ = false, has_exec_ = false, has_fork_ = false;
	bool running_ = false;
	BpfLockSpans bpf_;
	BpfLockStats bpf_stats_; // after stop
	bool bpf_failed_ = false, bpf_used_ = false;
	std::vector<Ev> pending_; // [head_, size): not yet handed to the model
	size_t head_ = 0;
	struct ByTime {
		bool operator()(const Ev &a, const Ev &b) const { return a.t < b.t; }
	};
	// each ring is read in time order: pending_ past head_ is a few runs
	SortedRuns<Ev, ByTime> runs_;
	uint64_t n_events_ = 0; // reader thread's count, published per round
	// The latest entry handed to the model, and the entries handed on
	// after a later one (the model saw them out of order). Reader thread;
	// n_late_ published in late_.
	uint64_t last_delivered_ = 0, n_late_ = 0;
	std::atomic<uint64_t> late_{0};
	std::unordered_map<pid_t, Inflight> inflight_;
	std::atomic<uint64_t> events_{0}, fd_scans_{0};
	std::atomic<uint64_t> armed_ns_{UINT64_MAX}; // lock events from then on
};

} // namespace ptwalk::monitor_detail
