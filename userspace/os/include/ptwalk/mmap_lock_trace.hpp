// SPDX-License-Identifier: GPL-2.0
// The mmap_lock tracepoints (mmap_lock_start_locking, _acquire_returned,
// _released; since 5.11) as a time-ordered stream of lock events, paired per
// task into waits (start_locking -> acquire_returned) and holds
// (acquire_returned(success) -> released).
//
// The `mm` field is a raw kernel pointer. It is used only as an opaque key
// in memory; nothing here prints or stores it (MmIndex maps it to "mm#N").
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <unordered_map>
#include <vector>

#include "ptwalk/lock_mode.hpp"
#include "ptwalk/perf_events.hpp"
#include "ptwalk/tracefs.hpp"

namespace ptwalk {

enum class LockEventType : uint8_t { StartLocking, AcquireReturned, Released };

struct LockEvent {
	uint64_t time_ns = 0; // CLOCK_MONOTONIC
	uint64_t mm = 0;      // opaque key, never output
	pid_t tgid = 0;
	pid_t tid = 0;
	LockEventType type = LockEventType::StartLocking;
	bool write = false;
	bool success = true; // acquire_returned only
};

// A wait (start_locking -> acquire_returned) or a hold
// (acquire_returned -> released) of one task on one mm.
struct LockSpan {
	uint64_t start_ns = 0, end_ns = 0;
	uint64_t mm = 0;
	pid_t tgid = 0, tid = 0;
	bool write = false;
	bool success = true; // waits: the lock was acquired
	// holds: the mm's teardown (exit_mmap()), run by whoever dropped its
	// last reference: the owner's exit or exec, or a /proc reader
	bool teardown = false;
	uint64_t ns() const { return end_ns - start_ns; }
	bool overlaps(uint64_t s, uint64_t e) const { return start_ns < e && end_ns > s; }
};

// Per-(task, mm) state machine over time-ordered events. A downgrade
// (acquire_returned(read) while holding write) ends the write hold and
// starts a read hold. Events that do not fit (a lost or pre-start event)
// are counted in unpaired().
class LockPairer {
public:
	class Sink {
	public:
		virtual ~Sink() = default;
		virtual void wait(const LockSpan &w) = 0;
		// A hold began (end_ns == start_ns); hold() follows at release.
		virtual void hold_begin(const LockSpan &h) { (void)h; }
		virtual void hold(const LockSpan &h) = 0;
	};
	explicit LockPairer(Sink &sink) : sink_(sink) {}
	void feed(const LockEvent &e);
	uint64_t unpaired() const { return unpaired_; }

private:
	struct Key {
		pid_t tid;
		uint64_t mm;
		bool operator==(const Key &o) const { return tid == o.tid && mm == o.mm; }
	};
	struct KeyHash {
		size_t operator()(const Key &k) const noexcept
		{
			return std::hash<uint64_t>()(
				k.mm ^ (uint64_t(uint32_t(k.tid)) * 0x9e3779b97f4a7c15ull));
		}
	};
	enum class Phase : uint8_t { Idle, Waiting, Holding };
	struct State {
		Phase phase = Phase::Idle;
		bool write = false;
		uint64_t since = 0;
		pid_t tgid = 0;
	};
	Sink &sink_;
	std::unordered_map<Key, State, KeyHash> states_;
	uint64_t unpaired_ = 0;
};

// A context switch (sched:sched_switch): prev_tid left the CPU, next_tid
// took it. prev_runnable: prev_tid left still runnable (preempted, or
// yielded in TASK_RUNNING), so it waits for a CPU from now on; else it
// went to sleep.
struct SchedSwitch {
	uint64_t time_ns = 0; // CLOCK_MONOTONIC
	pid_t prev_tid = 0, next_tid = 0;
	bool prev_runnable = false;
};

// A wakeup (sched:sched_wakeup): tid was made runnable; it waits for a CPU
// until a switch with next_tid == tid.
struct SchedWakeup {
	uint64_t time_ns = 0; // CLOCK_MONOTONIC
	pid_t tid = 0;
};

// Merges per-CPU streams into time order: events are held back until
// they are older than the drain time minus a margin, then delivered sorted.
// Ev needs a time_ns member.
template <typename Ev>
class BasicEventReorder {
public:
	explicit BasicEventReorder(uint64_t margin_ns = 10'000'000) : margin_(margin_ns) {}
	void push(const Ev &e) { pending_.push_back(e); }
	// Delivers (in time order) the events older than drained_at - margin,
	// or all of them when final.
	void flush(uint64_t drained_at_ns, bool final,
		   const std::function<void(const Ev &)> &deliver)
	{
		if (pending_.empty())
			return;
		std::stable_sort(pending_.begin(), pending_.end(),
				 [](const Ev &a, const Ev &b) { return a.time_ns < b.time_ns; });
		const uint64_t limit = final                     ? UINT64_MAX
				       : drained_at_ns > margin_ ? drained_at_ns - margin_
								 : 0;
		size_t n = 0;
		for (; n < pending_.size() && pending_[n].time_ns <= limit; n++) {
			const Ev &e = pending_[n];
			if (e.time_ns < last_)
				late_++;
			else
				last_ = e.time_ns;
			deliver(e);
		}
		pending_.erase(pending_.begin(), pending_.begin() + ptrdiff_t(n));
	}
	// Events that arrived older than one already delivered.
	uint64_t late() const { return late_; }

private:
	uint64_t margin_;
	uint64_t last_ = 0;
	uint64_t late_ = 0;
	std::vector<Ev> pending_;
};

using EventReorder = BasicEventReorder<LockEvent>;

// Decodes sched:sched_switch records (prev_pid, prev_state, next_pid) by
// its format. prev_state is the task's reported state: 0 (TASK_RUNNING)
// when it yielded runnable, TASK_REPORT_MAX (0x100, the "R+" of the
// event's print format) when preempted, a sleeping state's bit below it
// otherwise: __trace_sched_switch_state(), include/trace/events/sched.h
// (4.15: 3f5fe9fef5b2 "sched/debug: Fix task state recording/printout").
// A format without prev_state decodes with prev_runnable false (a sleep:
// no runnable span assumed).
class SchedSwitchDecoder {
public:
	bool init(const TraceEventFormat &f, std::string *err);
	bool decode(const PerfSample &s, SchedSwitch &out) const;
	uint32_t id() const { return id_; }

private:
	uint32_t id_ = 0;
	TraceField type_, prev_, next_, state_;
	bool has_state_ = false;
};

// Decodes sched:sched_wakeup records (pid) by its format.
class SchedWakeupDecoder {
public:
	bool init(const TraceEventFormat &f, std::string *err);
	bool decode(const PerfSample &s, SchedWakeup &out) const;
	uint32_t id() const { return id_; }

private:
	uint32_t id_ = 0;
	TraceField type_, pid_;
};

// Decodes raw mmap_lock records by the parsed format files.
class MmapLockDecoder {
public:
	// start = mmap_lock_start_locking, acq = mmap_lock_acquire_returned,
	// rel = mmap_lock_released.
	bool init(const TraceEventFormat &start, const TraceEventFormat &acq,
		  const TraceEventFormat &rel, std::string *err);
	// The three formats read from tracefs, then init(); false with *err
	// naming the missing tracepoint.
	bool init(const Tracefs &tfs, std::string *err);
	bool decode(const PerfSample &s, LockEvent &out) const;
	std::vector<uint32_t> ids() const;
	// "memcg_id" (6.14+), "memcg_path" (older: 6.1, 6.12) or "none": informational.
	const std::string &memcg_field() const { return memcg_; }

private:
	struct Ev {
		uint32_t id = 0;
		TraceField type, mm, write, success;
		bool has_success = false;
	};
	Ev ev_[3];
	std::string memcg_;
};

// Tracefs + formats + perf_event_open + reorder: a time-ordered stream of
// mmap_lock events delivered to a consumer on the reader thread.
class MmapLockTrace final : private PerfSink {
public:
	struct Options {
		std::string filter; // e.g. "common_pid == 1 || ..."
		size_t ring_bytes_per_cpu = 16u << 20;
		uint64_t reorder_margin_ns = 10'000'000;
		// Optional, on the reader thread, as the records are drained
		// (ahead of the reordered lock events): exec/comm changes and
		// forks of every task, so short-lived tasks still get a name.
		std::function<void(pid_t pid, pid_t tid, std::string_view comm)> on_comm;
		std::function<void(pid_t pid, pid_t ppid, pid_t tid, pid_t ptid)> on_fork;
		// Optional: sched:sched_switch in the same session, delivered in
		// time order with the lock events; sched_filter (e.g. "prev_pid
		// == 1 || next_pid == 1") is its kernel filter. When the event
		// cannot be opened the lock events go on without it
		// (sched_available() false, sched_why() says why).
		std::function<void(const SchedSwitch &)> on_sched;
		std::string sched_filter;
		// Optional, with on_sched: sched:sched_wakeup in the same time
		// order, wakeup_filter (e.g. "pid == 1") its kernel filter.
		// Without it (or when it cannot be opened: wakeup_available()
		// false, wakeup_why() says why) switches come alone.
		std::function<void(const SchedWakeup &)> on_wakeup;
		std::string wakeup_filter;
	};
	using Consumer = std::function<void(const LockEvent &)>;

	MmapLockTrace() = default;
	~MmapLockTrace() override { stop(); }
	// Mounts tracefs if needed (and unmounts it again once the formats are
	// read), opens and starts the events. false with *err on failure.
	bool start(const Options &o, Consumer consumer, std::string *err);
	void stop(); // idempotent; the consumer gets every remaining event

	uint64_t events() const { return events_.load(); } // decoded samples
	uint64_t undecoded() const { return undecoded_.load(); }
	uint64_t lost() const { return perf_.lost(); }
	uint64_t late() const { return reorder_.late(); } // after stop()
	bool filter_applied() const { return perf_.filter_applied(); }
	const std::string &filter_error() const { return perf_.filter_error(); }
	size_t ring_bytes_per_cpu() const { return perf_.ring_bytes_per_cpu(); }
	unsigned cpus() const { return perf_.cpus(); }
	const std::string &memcg_field() const { return decoder_.memcg_field(); }
	bool tracefs_was_mounted_by_us() const { return mounted_by_us_; }
	bool sched_available() const { return sched_on_; }
	const std::string &sched_why() const { return sched_why_; }
	// the sched filter was applied in the kernel (else: all switches come
	// and the consumer picks)
	bool sched_filter_applied() const { return sched_on_ && perf_.filter_applied(3); }
	const std::string &sched_filter_error() const { return perf_.filter_error(3); }
	bool wakeup_available() const { return wakeup_on_; }
	const std::string &wakeup_why() const { return wakeup_why_; }
	bool wakeup_filter_applied() const { return wakeup_on_ && perf_.filter_applied(4); }
	const std::string &wakeup_filter_error() const { return perf_.filter_error(4); }

private:
	void sample(const PerfSample &s) override;
	void round_end(uint64_t drained_at_ns, bool final) override;
	void task_comm(pid_t pid, pid_t tid, std::string_view comm, uint64_t time_ns) override;
	void task_fork(pid_t pid, pid_t ppid, pid_t tid, pid_t ptid, uint64_t time_ns) override;

	// lock events and context switches, one time order
	struct TraceEvent {
		enum class Kind : uint8_t { Lock, Switch, Wakeup };
		uint64_t time_ns = 0;
		Kind kind = Kind::Lock;
		LockEvent lock;
		SchedSwitch sw;
		SchedWakeup wk;
	};
	MmapLockDecoder decoder_;
	SchedSwitchDecoder sched_decoder_;
	SchedWakeupDecoder wakeup_decoder_;
	PerfTracepoints perf_;
	BasicEventReorder<TraceEvent> reorder_;
	Consumer consumer_;
	Options opt_;
	std::atomic<uint64_t> events_{0}, undecoded_{0};
	bool running_ = false;
	bool mounted_by_us_ = false;
	bool sched_on_ = false;
	std::string sched_why_;
	bool wakeup_on_ = false;
	std::string wakeup_why_;
};

// Opaque mm key -> "mm#N", N by first use.
class MmIndex {
public:
	size_t index(uint64_t mm);
	std::string label(uint64_t mm) { return "mm#" + std::to_string(index(mm)); }

private:
	std::unordered_map<uint64_t, size_t> idx_;
};

} // namespace ptwalk
