// SPDX-License-Identifier: GPL-2.0
// ptwalk monitor's model of the trace, without I/O (monitor_model.cpp): which
// mmap_lock holds were long and who waited behind them, which process owns
// which mm over its lifetime, and each walk from its lock events and the
// walker's open /proc file. The command is commands/src/monitor.cpp.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <unordered_map>
#include <vector>

#include "ptwalk/hold_kind.hpp"
#include "ptwalk/json.hpp"
#include "ptwalk/mmap_lock_trace.hpp"
#include "ptwalk/result_enums.hpp"

namespace ptwalk {

// Waits shorter than this are not kept as waiters (an uncontended
// acquisition takes well under a microsecond).
inline constexpr uint64_t kMonitorMinWaitNs = 1000;

// The pure part: time-ordered events in, long holds and waits out.
class HoldCollector final : private LockPairer::Sink {
public:
	explicit HoldCollector(uint64_t min_hold_ns, uint64_t min_wait_ns = kMonitorMinWaitNs);
	void feed(const LockEvent &e);

	uint64_t events() const { return events_; }
	uint64_t unpaired() const { return pairer_.unpaired(); }
	uint64_t min_hold_ns() const { return min_hold_; }
	uint64_t min_wait_ns() const { return min_wait_; }
	const std::vector<LockSpan> &holds() const { return holds_; }
	const std::vector<LockSpan> &waits() const { return waits_; }
	// lock events per mm per tgid
	const std::unordered_map<uint64_t, std::unordered_map<pid_t, uint64_t>> &mm_events() const
	{
		return mm_events_;
	}

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
std::vector<MonitoredHold> analyze_holds(const HoldCollector &c, size_t max_waiters = 32);

// --- Targets from facts -------------------------------------------------
//
// The mmap_lock tracepoints carry an opaque mm pointer, not an owner, and an
// idle target never locks its own mm. Owners come from facts only:
//  - probe: the monitor reads /proc/PID/cmdline; the kernel takes that
//    process's mmap_lock for read (access_remote_vm), so the lock event of
//    the monitor's own probing thread inside [begin, end] names PID's mm;
//  - exit/exec of the owner (sched_process_exit with group_dead,
//    sched_process_exec) ends that mm's life: a later walk on a reused
//    address is never given to the previous owner;
//  - the walker's fd table (/proc/TID/fd -> /proc/PID/smaps, ...) while the
//    walk is in flight names the file it walks, hence the kind.
// (The syscalls:sys_enter_openat tracepoint carries a user pointer, not the
// path, on the kernels we run; so paths come from the fd table.)

// How the monitor knows a walk's target: Basis (result_enums.hpp).
// How an mm's life ended.
enum class LifeEnd { exit, exec, reused };
const char *name(LifeEnd e);

// One life of an mm address: owned by tgid from some time to end_ns.
struct MmLife {
	pid_t tgid = 0;
	uint64_t first_fact_ns = 0; // the first probe
	uint64_t end_ns = UINT64_MAX;
	LifeEnd end_reason = LifeEnd::exit; // when end_ns is set
	Basis basis = Basis::probe;         // the first fact's kind: probe | mm_owner
	// an mm its owner is building in execve() (locked before the exec
	// event): the exec ends the owner's other lives, not this one
	bool building = false;
};

// Owners of mm keys over time.
class MmOwners {
public:
	// PID's mm is `mm` at time t: a probe, or (basis "mm_owner") the
	// kernel's mm->owner read by the BPF backend.
	void probe(uint64_t mm, pid_t tgid, uint64_t t, Basis basis = Basis::probe,
		   bool building = false);
	// tgid exited (last thread) or exec'd at t: its mm's life ends.
	void ended(pid_t tgid, uint64_t t, LifeEnd why);
	// A process (tgid) began at t (fork or exec): it cannot have owned an
	// mm before.
	void born(pid_t tgid, uint64_t t) { born_[tgid] = t; }
	// The process ended (exit, exec) at or before t.
	bool process_ended(pid_t tgid, uint64_t t) const;
	// Its latest exec was in [from, to].
	bool execed_between(pid_t tgid, uint64_t from, uint64_t to) const;
	// The kernel marked a hold on mm from t its teardown (exit_mmap()).
	void torn_down(uint64_t mm, uint64_t t) { torn_[mm] = t; }
	// Facts say tgid's mm at t is not `mm`: it owns another then (an
	// open life, not torn down by then), or it had exited by t (no exec)
	// and `mm` was never its. A reader of tgid's /proc files then cannot
	// be walking `mm`.
	bool not_its_mm(pid_t tgid, uint64_t mm, uint64_t t) const;

	struct Owner {
		pid_t tgid = 0;               // 0: unknown
		bool teardown = false;        // the mm torn down after its owner's end
		bool pending = false;         // unknown, but a later probe may tell
		std::string why;              // when unknown
		Basis basis = Basis::unknown; // known: the life's (probe | mm_owner), exec
	};
	// Owner of `mm` for a hold starting at t by a task of holder_tgid.
	// teardown: the hold is known to be the mm's teardown (whoever holds it)
	Owner owner_at(uint64_t mm, uint64_t t, pid_t holder_tgid, bool teardown = false) const;
	// The mm's latest owner when it had ended (exit, exec) before t and
	// no fact has named a new one since; else 0.
	pid_t ended_owner(uint64_t mm, uint64_t t) const;
	// Drops lives ended before t (bounded memory in a long run).
	void prune(uint64_t t);
	size_t keys() const { return lives_.size(); }

private:
	std::unordered_map<uint64_t, std::vector<MmLife>> lives_;
	std::unordered_map<pid_t, std::vector<uint64_t>> by_tgid_; // open lives
	std::unordered_map<pid_t, uint64_t> born_, ended_, execs_;
	std::unordered_map<uint64_t, uint64_t> torn_; // mm -> its teardown's start
	std::unordered_map<pid_t, uint64_t> last_mm_; // tgid -> its latest mm named
};

// A /proc walk file in a task's fd table: /proc/PID/<file>.
struct WalkFile {
	pid_t pid = 0;
	std::optional<ProcFile> file; // nullopt: the holder's files disagree
};
// Parses a readlink of an fd; nullopt unless /proc/N/<walk file> (also
// /proc/N/task/M/<file>). The walk files: each walk kind's (walk_kinds.def),
// mem, cmdline, environ, auxv, status.
std::optional<WalkFile> parse_walk_file(std::string_view link);
// What a holder's open walk files (in fd order) say of the walk it is in:
// a file of another process before its own; when its files name more than
// one other process, the target is not told (pid 0) and the kind only if
// they agree on it. nullopt when nothing is told.
std::optional<WalkFile> pick_walk_file(const std::vector<WalkFile> &files, pid_t holder_tgid);

// A finished walk: a hold >= min_hold with its owner and waiters.
struct Walk {
	LockSpan hold;
	pid_t target_tgid = 0; // 0: unknown
	bool self = false;     // the holder's own mm
	Basis basis = Basis::unknown;
	std::string why; // unknown: the reason
	HoldKind kind = HoldCause::unknown;
	std::string walk_file;         // "/proc/PID/file" from the fd table, or ""
	std::vector<LockSpan> waiters; // longest first, at most 32
	size_t waiters_total = 0;
};

// The streaming analysis: time-ordered lock events (and facts) in,
// finished walks out. Not thread-safe: one feeding thread.
class WalkTracker final {
public:
	struct Config {
		uint64_t min_hold_ns = 1'000'000;
		uint64_t min_wait_ns = kMonitorMinWaitNs;
		uint64_t grace_ns = 300'000'000;                // waiters may end later
		uint64_t resolve_timeout_ns = 3'000'000'000ull; // for a probe
		pid_t prober_tid = 0;
	};
	using Emit = std::function<void(const Walk &)>;
	// probe_at(t) -> tgid probed by prober_tid at t, or 0.
	using ProbeLookup = std::function<pid_t(uint64_t t)>;
	WalkTracker(Config c, Emit emit, ProbeLookup probe_at);

	void lock(const LockEvent &e);
	// The BPF backend pairs in the kernel (os/bpf/lock_spans.bpf.c): a
	// hold >= min_hold or a wait behind one, in the order they ended.
	void span(const LockSpan &s, bool is_hold);
	// ... and hands on the prober's acquisitions only.
	void probe_acquire(const LockEvent &e);
	// The kernel's mm->owner of mm at t (the BPF backend); building: the
	// owner itself locked it while it was not its mm (execve builds it).
	void owner_fact(uint64_t mm, pid_t tgid, uint64_t t, bool building = false);
	// Events the kernel paired (BPF): counted there, not here.
	void add_events(uint64_t n, uint64_t unpaired)
	{
		events_ += n;
		unpaired_ += unpaired;
	}
	void task_end(pid_t tgid, uint64_t t, bool exec)
	{
		owners_.ended(tgid, t, exec ? LifeEnd::exec : LifeEnd::exit);
	}
	void task_born(pid_t tgid, uint64_t t) { owners_.born(tgid, t); }
	// What the walker had open during the hold that began at hold_start.
	void fd_evidence(pid_t tid, uint64_t hold_start_ns, WalkFile f);
	// Emits walks whose grace (and probe wait) has passed by stream time
	// now; all of them when final.
	void advance(uint64_t now_ns, bool final);
	// A pending walk waits for a probe of an unknown mm.
	bool wants_probe() const { return wants_probe_; }
	void clear_wants_probe() { wants_probe_ = false; }
	// Called for the holder of each walk and each waiter behind one, as
	// they are seen (to read their names while they live).
	void on_task(std::function<void(pid_t tid, pid_t tgid)> f) { on_task_ = std::move(f); }
	// Called when a walk of another process's (or an unknown) mm ends and
	// no fd evidence was taken in flight: the walker may still have the
	// file open (a reader of smaps between two read() calls).
	void on_foreign_hold(std::function<void(const LockSpan &)> f)
	{
		on_foreign_ = std::move(f);
	}

	uint64_t events() const { return events_; }
	uint64_t unpaired() const { return unpaired_; }
	uint64_t probe_facts() const { return probe_facts_; }
	size_t tasks_in_flight() const { return states_.size(); }
	const MmOwners &owners() const { return owners_; }

private:
	// LockPairer's state machine, but a task's state is dropped once idle:
	// memory stays bounded by the tasks in flight in a run of weeks.
	struct Pending;
	void pair(const LockEvent &e);
	void wait(const LockSpan &w);
	void hold(const LockSpan &h, bool teardown_shape = false);
	bool resolve(Pending &p, bool final);
	uint64_t write_follows(pid_t tid, uint64_t mm, uint64_t read_end);
	bool teardown_shape_confirmed(const Pending &p, const std::optional<WalkFile> &fd) const;
	bool reads_proc_of(pid_t tid, pid_t pid) const;
	enum class Phase : uint8_t { Idle, Waiting, Holding };
	struct State {
		Phase phase = Phase::Idle;
		bool write = false;
		bool after_read = false; // a write lock at once after a read hold (see pair)
		uint64_t since = 0;
		uint64_t read_end = 0;   // Idle: the end of its last read hold
		uint64_t read_start = 0; // after_read: the start of that hold, if pending
	};
	struct KeyHash {
		size_t operator()(const std::pair<pid_t, uint64_t> &k) const noexcept
		{
			return std::hash<uint64_t>()(
				k.second ^ (uint64_t(uint32_t(k.first)) * 0x9e3779b97f4a7c15ull));
		}
	};

	struct Pending {
		Walk walk;
		uint64_t max_wait_end = 0;
		// exit_mmap()'s shape (tracepoints): a read hold followed at once
		// by the write lock, or that write hold
		bool teardown_shape = false;
	};
	Config cfg_;
	Emit emit_;
	ProbeLookup probe_at_;
	std::function<void(pid_t, pid_t)> on_task_;
	std::function<void(const LockSpan &)> on_foreign_;
	// (tid, mm); idle entries are swept every 10 s (no allocation per event)
	std::unordered_map<std::pair<pid_t, uint64_t>, State, KeyHash> states_;
	uint64_t unpaired_ = 0;
	MmOwners owners_;
	std::deque<Pending> pending_;
	std::unordered_map<uint64_t, uint32_t> pending_mms_;   // mm -> pending walks
	std::map<std::pair<pid_t, uint64_t>, WalkFile> fd_ev_; // (tid, hold start)
	uint64_t events_ = 0, probe_facts_ = 0, last_prune_ = 0;
	bool wants_probe_ = false;
};

} // namespace ptwalk
