// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/monitor.hpp"
#include "ptwalk/result.hpp"
#include "ptwalk/module_view.hpp"

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

#include "ptwalk/clock.hpp"
#include "ptwalk/fd.hpp"
#include "ptwalk/http_server.hpp"
#include "ptwalk/monitor_metrics.hpp"
#include "ptwalk/perf_events.hpp"
#include "ptwalk/procfs.hpp"
#include "ptwalk/tracefs.hpp"

namespace ptwalk {

HoldCollector::HoldCollector(uint64_t min_hold_ns, uint64_t min_wait_ns)
	: min_hold_(min_hold_ns), min_wait_(min_wait_ns), pairer_(*this)
{
}

void HoldCollector::feed(const LockEvent &e)
{
	events_++;
	mm_events_[e.mm][e.tgid]++;
	pairer_.feed(e);
}

void HoldCollector::wait(const LockSpan &w)
{
	if (w.ns() >= min_wait_)
		waits_.push_back(w);
}

void HoldCollector::hold(const LockSpan &h)
{
	if (h.ns() >= min_hold_)
		holds_.push_back(h);
}

std::vector<MonitoredHold> analyze_holds(const HoldCollector &c, size_t max_waiters)
{
	// waits per mm, by start
	std::unordered_map<uint64_t, std::vector<LockSpan>> waits;
	std::unordered_map<uint64_t, uint64_t> longest;
	for (const auto &w : c.waits()) {
		waits[w.mm].push_back(w);
		longest[w.mm] = std::max(longest[w.mm], w.ns());
	}
	for (auto &[mm, v] : waits)
		std::sort(v.begin(), v.end(), [](const LockSpan &a, const LockSpan &b) {
			return a.start_ns < b.start_ns;
		});

	// each tgid's home mm: where its threads lock most
	std::unordered_map<pid_t, std::pair<uint64_t, uint64_t>> top; // tgid -> (count, mm)
	for (const auto &[mm, per] : c.mm_events())
		for (const auto &[tgid, n] : per) {
			auto &t = top[tgid];
			if (n > t.first || (n == t.first && mm < t.second))
				t = {n, mm};
		}
	std::unordered_map<pid_t, uint64_t> home;
	for (const auto &[tgid, t] : top)
		home[tgid] = t.second;

	std::vector<MonitoredHold> out;
	for (const auto &h : c.holds()) {
		MonitoredHold m;
		m.hold = h;
		uint64_t best = 0, self = 0;
		if (auto it = c.mm_events().find(h.mm); it != c.mm_events().end())
			for (const auto &[tgid, n] : it->second) {
				if (tgid == h.tgid)
					self = n;
				else if (tgid > 0 &&
					 (n > best || (n == best && tgid < m.owner_tgid))) {
					best = n;
					m.owner_tgid = tgid;
				}
			}
		if (self > best && home.count(h.tgid) && home[h.tgid] == h.mm) {
			m.owner_tgid = h.tgid;
			m.owner_basis = "self";
		} else if (best) {
			m.owner_basis = "other_tasks";
		}
		if (auto it = waits.find(h.mm); it != waits.end()) {
			const auto &v = it->second;
			auto hi = std::lower_bound(v.begin(), v.end(), h.end_ns,
						   [](const LockSpan &a, uint64_t t) {
							   return a.start_ns < t;
						   });
			const uint64_t lw = longest[h.mm];
			for (auto w = hi; w != v.begin();) {
				--w;
				if (w->start_ns + lw < h.start_ns)
					break;
				if (w->tid != h.tid && w->overlaps(h.start_ns, h.end_ns))
					m.waiters.push_back(*w);
			}
		}
		std::sort(m.waiters.begin(), m.waiters.end(),
			  [](const LockSpan &a, const LockSpan &b) {
				  return a.ns() != b.ns() ? a.ns() > b.ns()
							  : a.start_ns < b.start_ns;
			  });
		m.waiters_total = m.waiters.size();
		if (m.waiters.size() > max_waiters)
			m.waiters.resize(max_waiters);
		out.push_back(std::move(m));
	}
	std::sort(out.begin(), out.end(), [](const MonitoredHold &a, const MonitoredHold &b) {
		return a.hold.start_ns < b.hold.start_ns;
	});
	return out;
}

// --- MmOwners ---------------------------------------------------------

void MmOwners::probe(uint64_t mm, pid_t tgid, uint64_t t)
{
	auto &v = lives_[mm];
	if (!v.empty() && v.back().end_ns == UINT64_MAX) {
		if (v.back().tgid == tgid)
			return;
		// the previous owner's end was not seen (a lost event): the
		// address is someone else's now
		pid_t old = v.back().tgid;
		v.back().end_ns = t;
		v.back().end_reason = "reused";
		auto &o = by_tgid_[old];
		o.erase(std::remove(o.begin(), o.end(), mm), o.end());
	}
	// the same process with another open mm: an exec we did not see
	auto &mine = by_tgid_[tgid];
	for (uint64_t other : mine) {
		auto &ov = lives_[other];
		if (!ov.empty() && ov.back().end_ns == UINT64_MAX && ov.back().tgid == tgid) {
			ov.back().end_ns = t;
			ov.back().end_reason = "exec";
		}
	}
	mine.assign(1, mm);
	v.push_back(MmLife{tgid, t, UINT64_MAX, ""});
}

void MmOwners::ended(pid_t tgid, uint64_t t, const char *why)
{
	auto it = by_tgid_.find(tgid);
	if (it == by_tgid_.end())
		return;
	for (uint64_t mm : it->second) {
		auto &v = lives_[mm];
		if (!v.empty() && v.back().end_ns == UINT64_MAX && v.back().tgid == tgid) {
			v.back().end_ns = t;
			v.back().end_reason = why;
		}
	}
	by_tgid_.erase(it);
}

MmOwners::Owner MmOwners::owner_at(uint64_t mm, uint64_t t, pid_t holder) const
{
	Owner o;
	auto it = lives_.find(mm);
	if (it == lives_.end() || it->second.empty()) {
		o.pending = true;
		o.why = "no probe has seen this mm (its owner exited, or it was never probed)";
		return o;
	}
	const auto &v = it->second;
	auto born_after = [&](pid_t tgid) {
		auto b = born_.find(tgid);
		return b != born_.end() && b->second > t;
	};
	for (size_t i = 0; i < v.size(); i++) {
		const MmLife &l = v[i];
		const uint64_t prev_end = i ? v[i - 1].end_ns : 0;
		// the owner's own task tearing its mm down after exit/exec
		if (t > l.end_ns && holder == l.tgid &&
		    (i + 1 == v.size() || t < v[i + 1].first_fact_ns)) {
			o.tgid = l.tgid;
			o.teardown = true;
			return o;
		}
		if (t > prev_end && t <= l.end_ns) {
			if (holder != l.tgid && born_after(l.tgid)) {
				o.why = "mm address reused: the hold predates tgid " +
					std::to_string(l.tgid) + ", which owns it now";
				return o;
			}
			o.tgid = l.tgid;
			return o;
		}
	}
	const MmLife &last = v.back();
	o.pending = true;
	o.why = "the previous owner (tgid " + std::to_string(last.tgid) + ") ended (" +
		last.end_reason + ") before the hold; no probe has seen the address since";
	return o;
}

void MmOwners::prune(uint64_t t)
{
	for (auto it = lives_.begin(); it != lives_.end();) {
		auto &v = it->second;
		while (v.size() > 1 && v.front().end_ns < t)
			v.erase(v.begin());
		if (v.size() == 1 && v.front().end_ns < t)
			it = lives_.erase(it);
		else
			++it;
	}
	for (auto it = born_.begin(); it != born_.end();)
		it = it->second < t ? born_.erase(it) : std::next(it);
}

// --- fd table ---------------------------------------------------------

std::optional<WalkFile> parse_walk_file(std::string_view link)
{
	static const char *kFiles[] = {"clear_refs", "smaps", "smaps_rollup", "pagemap",
				       "numa_maps", "maps", "mem", "cmdline",
				       "environ", "auxv", "status"};
	if (link.substr(0, 6) != "/proc/")
		return std::nullopt;
	link.remove_prefix(6);
	auto num = [](std::string_view &s) -> long {
		long n = 0;
		size_t i = 0;
		for (; i < s.size() && s[i] >= '0' && s[i] <= '9' && i < 9; i++)
			n = n * 10 + (s[i] - '0');
		if (i == 0 || i >= s.size() || s[i] != '/')
			return -1;
		s.remove_prefix(i + 1);
		return n;
	};
	long pid = num(link);
	if (pid <= 0)
		return std::nullopt;
	if (link.substr(0, 5) == "task/") {
		link.remove_prefix(5);
		if (num(link) <= 0)
			return std::nullopt;
	}
	for (const char *f : kFiles)
		if (link == f)
			return WalkFile{pid_t(pid), std::string(f)};
	return std::nullopt;
}

// --- WalkTracker ------------------------------------------------------

WalkTracker::WalkTracker(Config c, Emit emit, ProbeLookup probe_at)
	: cfg_(c), emit_(std::move(emit)), probe_at_(std::move(probe_at))
{
}

void WalkTracker::pair(const LockEvent &e)
{
	State &st = states_[std::make_pair(e.tid, e.mm)];
	switch (e.type) {
	case LockEventType::StartLocking:
		if (st.phase != Phase::Idle)
			unpaired_++; // lost acquire_returned or released
		st = State{Phase::Waiting, e.write, e.time_ns};
		break;
	case LockEventType::AcquireReturned:
		if (st.phase == Phase::Waiting) {
			wait(LockSpan{st.since, e.time_ns, e.mm, e.tgid, e.tid, e.write, e.success});
		} else if (st.phase == Phase::Holding && st.write && !e.write) {
			// mmap_write_downgrade(): the write hold ends, a read hold starts
			hold(LockSpan{st.since, e.time_ns, e.mm, e.tgid, e.tid, true, true});
		} else {
			unpaired_++; // lost start_locking (or released)
		}
		st = e.success ? State{Phase::Holding, e.write, e.time_ns} : State{};
		break;
	case LockEventType::Released:
		if (st.phase == Phase::Holding)
			hold(LockSpan{st.since, e.time_ns, e.mm, e.tgid, e.tid, st.write, true});
		else
			unpaired_++;
		st = State{};
		break;
	}
}

void WalkTracker::lock(const LockEvent &e)
{
	events_++;
	if (cfg_.prober_tid && e.tid == cfg_.prober_tid &&
	    e.type == LockEventType::AcquireReturned && e.success && probe_at_) {
		if (pid_t p = probe_at_(e.time_ns)) {
			owners_.probe(e.mm, p, e.time_ns);
			probe_facts_++;
		}
	}
	pair(e);
}

void WalkTracker::fd_evidence(pid_t tid, uint64_t hold_start_ns, WalkFile f)
{
	fd_ev_[{tid, hold_start_ns}] = std::move(f);
}

void WalkTracker::wait(const LockSpan &w)
{
	// Only waits that end after a walk's hold began can be behind it: a
	// wait that ended while the hold went on was granted alongside it (both
	// read), so a wait is matched against the walks pending when it ends.
	if (w.ns() < cfg_.min_wait_ns || (cfg_.prober_tid && w.tid == cfg_.prober_tid))
		return; // our own probe queued behind a walk is not a victim
	if (pending_.empty() || !pending_mms_.count(w.mm))
		return;
	for (auto &p : pending_) {
		const LockSpan &h = p.walk.hold;
		if (h.mm == w.mm && w.tid != h.tid && w.overlaps(h.start_ns, h.end_ns)) {
			p.walk.waiters.push_back(w);
			if (on_task_)
				on_task_(w.tid, w.tgid);
		}
	}
}

void WalkTracker::hold(const LockSpan &h)
{
	if (h.ns() < cfg_.min_hold_ns)
		return;
	Pending p;
	p.walk.hold = h;
	pending_.push_back(std::move(p));
	pending_mms_[h.mm]++;
	if (on_task_)
		on_task_(h.tid, h.tgid);
	if (on_foreign_ && !fd_ev_.count({h.tid, h.start_ns}) &&
	    owners_.owner_at(h.mm, h.start_ns, h.tgid).tgid != h.tgid)
		on_foreign_(h);
}

bool WalkTracker::resolve(Walk &w, bool final)
{
	const LockSpan &h = w.hold;
	auto o = owners_.owner_at(h.mm, h.start_ns, h.tgid);
	std::optional<WalkFile> fd;
	if (auto it = fd_ev_.find({h.tid, h.start_ns}); it != fd_ev_.end())
		fd = it->second;
	if (!o.tgid && o.pending && !final && !fd) {
		wants_probe_ = true;
		return false;
	}
	if (o.tgid) {
		w.target_tgid = o.tgid;
		w.basis = o.teardown ? "exit" : "probe";
	} else if (fd) {
		// the walker had /proc/PID/<file> open while it held the lock
		w.target_tgid = fd->pid;
		w.basis = "fd_table";
	} else {
		w.basis = "unknown";
		w.why = o.why;
	}
	w.self = w.target_tgid && w.target_tgid == h.tgid;
	if (fd) {
		w.kind = fd->file;
		w.walk_file = "/proc/" + std::to_string(fd->pid) + "/" + fd->file;
	} else if (o.teardown) {
		w.kind = "exit";
	} else if (w.self) {
		w.kind = "own"; // the process's own mmap/munmap/fault/exit
	} else {
		w.kind = "unknown";
	}
	return true;
}

void WalkTracker::advance(uint64_t now, bool final)
{
	for (auto it = pending_.begin(); it != pending_.end();) {
		Walk &w = it->walk;
		const uint64_t end = w.hold.end_ns;
		if (!final && now < end + cfg_.grace_ns) {
			++it;
			continue;
		}
		const bool timed_out = final || now >= end + cfg_.resolve_timeout_ns;
		if (!resolve(w, timed_out)) {
			++it;
			continue;
		}
		std::sort(w.waiters.begin(), w.waiters.end(), [](const LockSpan &a, const LockSpan &b) {
			return a.ns() != b.ns() ? a.ns() > b.ns() : a.start_ns < b.start_ns;
		});
		w.waiters.erase(std::unique(w.waiters.begin(), w.waiters.end(),
					    [](const LockSpan &a, const LockSpan &b) {
						    return a.tid == b.tid && a.start_ns == b.start_ns;
					    }),
				w.waiters.end());
		w.waiters_total = w.waiters.size();
		if (w.waiters.size() > 32)
			w.waiters.resize(32);
		if (emit_)
			emit_(w);
		if (auto pm = pending_mms_.find(w.hold.mm); pm != pending_mms_.end() && --pm->second == 0)
			pending_mms_.erase(pm);
		it = pending_.erase(it);
	}
	if (final || now > last_prune_ + 10'000'000'000ull) {
		last_prune_ = now;
		const uint64_t old = now > 10'000'000'000ull ? now - 10'000'000'000ull : 0;
		for (auto it = fd_ev_.begin(); it != fd_ev_.end();)
			it = it->first.second < old ? fd_ev_.erase(it) : std::next(it);
		for (auto it = states_.begin(); it != states_.end();)
			it = it->second.phase == Phase::Idle ? states_.erase(it) : std::next(it);
		if (now > 600'000'000'000ull)
			owners_.prune(now - 600'000'000'000ull);
	}
}

namespace {

volatile sig_atomic_t g_interrupted = 0;

void on_signal(int) { g_interrupted = 1; }

// Installs SIGINT and SIGTERM handlers for its lifetime, restores the old ones.
class SignalGuard {
public:
	SignalGuard()
	{
		g_interrupted = 0;
		struct sigaction sa;
		std::memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		ok_[0] = sigaction(SIGINT, &sa, &old_[0]) == 0;
		ok_[1] = sigaction(SIGTERM, &sa, &old_[1]) == 0;
	}
	~SignalGuard()
	{
		if (ok_[0])
			sigaction(SIGINT, &old_[0], nullptr);
		if (ok_[1])
			sigaction(SIGTERM, &old_[1], nullptr);
	}
	SignalGuard(const SignalGuard &) = delete;
	SignalGuard &operator=(const SignalGuard &) = delete;

private:
	struct sigaction old_[2];
	bool ok_[2] = {false, false};
};

std::string trim_nl(std::string s)
{
	while (!s.empty() && s.back() == '\n')
		s.pop_back();
	return s;
}

std::string proc_comm(pid_t pid)
{
	if (pid <= 0)
		return "";
	auto t = read_file("/proc/" + std::to_string(pid) + "/comm", nullptr);
	return t ? trim_nl(*t) : "";
}

// comm of tasks, read from /proc as soon as a task is first seen (it may
// be gone by the end). Only touched on the trace reader thread until stop.
class TaskNames {
public:
	void note(pid_t tid, pid_t tgid)
	{
		lookup(tid);
		lookup(tgid);
	}
	void set(pid_t tid, std::string_view comm)
	{
		bound();
		names_[tid] = std::string(comm);
	}
	void fork(pid_t ptid, pid_t tid)
	{
		bound();
		lookup(ptid);
		if (!names_.count(tid))
			names_[tid] = names_[ptid];
	}
	std::string comm(pid_t pid) const
	{
		auto it = names_.find(pid);
		return it == names_.end() || it->second.empty() ? "?" : it->second;
	}
	void forget(pid_t pid) { names_.erase(pid); }

private:
	// a run of weeks sees millions of tasks: names are re-read when needed
	void bound()
	{
		if (names_.size() > 262144)
			names_.clear();
	}
	void lookup(pid_t pid)
	{
		if (pid <= 0)
			return;
		auto [it, fresh] = names_.try_emplace(pid);
		if (fresh)
			it->second = proc_comm(pid);
	}
	std::unordered_map<pid_t, std::string> names_;
};

std::string ms(uint64_t ns)
{
	char b[32];
	snprintf(b, sizeof(b), "%.3f", double(ns) / 1e6);
	return b;
}

pid_t my_tid() { return pid_t(syscall(SYS_gettid)); }

// The prober: reads /proc/PID/cmdline of processes so that the kernel takes
// their mmap_lock on its behalf; the trace sees that lock event (its tid,
// inside the logged interval) and so learns each process's mm.
class Prober {
public:
	struct Entry {
		pid_t pid;
		uint64_t t0, t1;
	};
	~Prober() { stop(); }
	void start()
	{
		std::unique_lock<std::mutex> l(mu_);
		running_ = true;
		full_scan_ = true;
		thread_ = std::thread([this] { run(); });
		ready_.wait(l, [this] { return tid_ != 0; });
	}
	void stop()
	{
		{
			std::lock_guard<std::mutex> g(mu_);
			if (!running_)
				return;
			running_ = false;
		}
		cv_.notify_all();
		if (thread_.joinable())
			thread_.join();
	}
	pid_t tid() const { return tid_; }
	// a new process or an exec: probe it soon
	void queue(pid_t pid)
	{
		std::lock_guard<std::mutex> g(mu_);
		queue_[pid] = now_ns() + 20'000'000; // after a fork, exec usually follows
	}
	// unknown mm seen: probe every process again (at most every 2 s)
	void rescan()
	{
		std::lock_guard<std::mutex> g(mu_);
		if (now_ns() >= last_full_ + 2'000'000'000ull) {
			full_scan_ = true;
			cv_.notify_all();
		}
	}
	// pid probed at time t (the trace thread), or 0
	pid_t at(uint64_t t) const
	{
		std::lock_guard<std::mutex> g(mu_);
		for (auto it = log_.rbegin(); it != log_.rend(); ++it)
			if (it->t0 <= t && t <= it->t1)
				return it->pid;
		return 0;
	}
	std::string comm(pid_t pid) const
	{
		std::lock_guard<std::mutex> g(mu_);
		auto it = comms_.find(pid);
		return it == comms_.end() ? "" : it->second;
	}
	uint64_t probes() const { return probes_.load(); }
	// Waits until the first full scan is done (bounded).
	void wait_first_scan(uint64_t timeout_ns)
	{
		std::unique_lock<std::mutex> l(mu_);
		ready_.wait_for(l, std::chrono::nanoseconds(timeout_ns),
				[this] { return last_full_ != 0; });
	}

private:
	void probe(pid_t pid)
	{
		const std::string d = "/proc/" + std::to_string(pid);
		std::string c = proc_comm(pid);
		Fd fd(open((d + "/cmdline").c_str(), O_RDONLY | O_CLOEXEC));
		if (!fd)
			return;
		char b[1];
		const uint64_t t0 = now_ns();
		ssize_t n = read(fd.get(), b, 1); // access_remote_vm: mmap_read_lock
		const uint64_t t1 = now_ns();
		probes_++;
		if (n <= 0)
			return; // kernel thread or zombie: no mm
		std::lock_guard<std::mutex> g(mu_);
		log_.push_back({pid, t0, t1});
		while (!log_.empty() && log_.front().t1 + 30'000'000'000ull < t1)
			log_.pop_front();
		if (!c.empty())
			comms_[pid] = c;
		if (comms_.size() > 65536)
			comms_.clear(); // bounded; names are re-read on the next probe
	}
	void run()
	{
		{
			std::lock_guard<std::mutex> g(mu_);
			tid_ = my_tid();
		}
		ready_.notify_all();
		const pid_t self = getpid();
		std::unique_lock<std::mutex> l(mu_);
		while (running_) {
			std::vector<pid_t> todo;
			bool full = full_scan_;
			full_scan_ = false;
			const uint64_t now = now_ns();
			for (auto it = queue_.begin(); it != queue_.end();) {
				if (it->second <= now || full) {
					todo.push_back(it->first);
					it = queue_.erase(it);
				} else {
					++it;
				}
			}
			l.unlock();
			if (full) {
				if (DIR *d = opendir("/proc")) {
					while (dirent *e = readdir(d)) {
						char *end;
						long p = strtol(e->d_name, &end, 10);
						if (*end == 0 && p > 0)
							todo.push_back(pid_t(p));
					}
					closedir(d);
				}
			}
			std::sort(todo.begin(), todo.end());
			todo.erase(std::unique(todo.begin(), todo.end()), todo.end());
			for (pid_t p : todo)
				if (p != self)
					probe(p);
			l.lock();
			if (full) {
				last_full_ = now_ns();
				ready_.notify_all();
			}
			cv_.wait_for(l, std::chrono::milliseconds(100),
				     [this] { return !running_ || full_scan_; });
		}
	}

	mutable std::mutex mu_;
	std::condition_variable cv_, ready_;
	std::thread thread_;
	bool running_ = false, full_scan_ = false;
	pid_t tid_ = 0;
	uint64_t last_full_ = 0;
	std::map<pid_t, uint64_t> queue_;
	std::deque<Entry> log_;
	std::unordered_map<pid_t, std::string> comms_;
	std::atomic<uint64_t> probes_{0};
};

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
		std::function<void(pid_t tid, std::string_view comm)> comm;
		std::function<void(pid_t pid, pid_t tid, pid_t ptid)> fork;
	};
	~MonitorTrace() override { stop(); }

	// false with *err: tracefs, the formats or perf_event_open failed
	bool start(Hooks h, std::string *err)
	{
		hooks_ = std::move(h);
		Tracefs tfs;
		if (!tfs.open(err))
			return false;
		static const char *names[3] = {"mmap_lock_start_locking",
					       "mmap_lock_acquire_returned",
					       "mmap_lock_released"};
		std::optional<TraceEventFormat> f[3];
		for (int i = 0; i < 3; i++) {
			f[i] = tfs.event_format("mmap_lock", names[i], err);
			if (!f[i]) {
				if (err)
					*err += " (tracepoint mmap_lock:" + std::string(names[i]) +
						" missing? needs Linux >= 5.11)";
				return false;
			}
		}
		if (!decoder_.init(*f[0], *f[1], *f[2], err))
			return false;
		std::vector<uint32_t> ids = decoder_.ids();
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
		cfg.ring_bytes_per_cpu = 16u << 20;
		cfg.track_tasks = true;
		cfg.poll_ms = 10;
		if (!perf_.open(cfg, err))
			return false;
		if (!perf_.start(*this, err))
			return false;
		running_ = true;
		return true;
	}
	void stop()
	{
		if (running_) {
			perf_.stop();
			running_ = false;
		}
	}
	uint64_t lost() const { return perf_.lost(); }
	uint64_t events() const { return events_.load(); }
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
	struct Ev {
		uint64_t t;
		int kind; // 0 lock, 1 exit, 2 exec, 3 fork
		LockEvent lock;
		pid_t pid;
	};
	void sample(const PerfSample &s) override
	{
		LockEvent e;
		if (decoder_.decode(s, e)) {
			events_.fetch_add(1, std::memory_order_relaxed);
			pending_.push_back(Ev{e.time_ns, 0, e, 0});
			if (e.type == LockEventType::AcquireReturned && e.success)
				inflight_[e.tid] = {e.tgid, e.time_ns, false};
			else if (e.type == LockEventType::Released)
				inflight_.erase(e.tid);

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
				pending_.push_back(Ev{s.time_ns, 1, {}, s.pid});
		} else if (has_exec_ && type == exec_.id) {
			pending_.push_back(Ev{s.time_ns, 2, {}, s.pid});
		} else if (has_fork_ && type == fork_.id &&
			   read_field_u64(*fork_.find("child_pid"), s.raw, v)) {
			pending_.push_back(Ev{s.time_ns, 3, {}, pid_t(v)});
		}
	}
	void round_end(uint64_t drained_at, bool final) override
	{
		// walks in flight for >= 1 ms: what does the walker have open?
		for (auto &[tid, f] : inflight_) {
			if (f.scanned || drained_at < f.since + 1'000'000)
				continue;
			f.scanned = true;
			scan_fds(tid, f.tgid, f.since);
		}
		if (inflight_.size() > 65536)
			inflight_.clear(); // tasks come and go: bounded
		std::stable_sort(pending_.begin(), pending_.end(),
				 [](const Ev &a, const Ev &b) { return a.t < b.t; });
		const uint64_t limit = final ? UINT64_MAX
				       : drained_at > kMargin ? drained_at - kMargin : 0;
		size_t n = 0;
		for (; n < pending_.size() && pending_[n].t <= limit; n++) {
			const Ev &e = pending_[n];
			switch (e.kind) {
			case 0: hooks_.lock(e.lock); break;
			case 1: hooks_.ended(e.pid, e.t, false); break;
			case 2: hooks_.ended(e.pid, e.t, true); hooks_.born(e.pid, e.t); break;
			case 3: hooks_.born(e.pid, e.t); break;
			}
		}
		pending_.erase(pending_.begin(), pending_.begin() + ptrdiff_t(n));
		hooks_.round(limit == UINT64_MAX ? drained_at : limit, final);
	}
public:
	// What the holder has open now (the hold that began at `since`).
	void scan_fds(pid_t tid, pid_t tgid, uint64_t since)
	{
		fd_scans_.fetch_add(1, std::memory_order_relaxed);
		const std::string dir = "/proc/" + std::to_string(tgid) + "/task/" +
					std::to_string(tid) + "/fd";
		DIR *d = opendir(dir.c_str());
		if (!d)
			return;
		std::optional<WalkFile> best;
		while (dirent *e = readdir(d)) {
			if (e->d_name[0] == '.')
				continue;
			char buf[256];
			ssize_t n = readlinkat(dirfd(d), e->d_name, buf, sizeof(buf) - 1);
			if (n <= 0)
				continue;
			auto f = parse_walk_file(std::string_view(buf, size_t(n)));
			// prefer a file of another process; the latest fd wins ties
			if (f && (!best || (best->pid == tgid && f->pid != tgid) ||
				  (f->pid != tgid) == (best->pid != tgid)))
				best = f;
		}
		closedir(d);
		if (best)
			hooks_.fd_evidence(tid, since, *best);
	}

private:
	void task_comm(pid_t, pid_t tid, std::string_view comm) override
	{
		if (hooks_.comm)
			hooks_.comm(tid, comm);
	}
	void task_fork(pid_t pid, pid_t, pid_t tid, pid_t ptid) override
	{
		if (hooks_.fork)
			hooks_.fork(pid, tid, ptid);
	}
	static constexpr uint64_t kMargin = 10'000'000;
	struct Inflight {
		pid_t tgid;
		uint64_t since;
		bool scanned;
	};
	Hooks hooks_;
	MmapLockDecoder decoder_;
	PerfTracepoints perf_;
	TraceEventFormat exit_, exec_, fork_;
	bool has_exit_ = false, group_dead_ = false, has_exec_ = false, has_fork_ = false;
	bool running_ = false;
	std::vector<Ev> pending_;
	std::unordered_map<pid_t, Inflight> inflight_;
	std::atomic<uint64_t> events_{0}, fd_scans_{0};
};

double cpu_seconds()
{
	rusage ru{};
	getrusage(RUSAGE_SELF, &ru);
	return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double unix_now()
{
	timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

// A directory the textfile is written to: writable by us, checked up front
// with a probe file so a bad directory fails at start, not after an hour.
std::string check_textfile_dir(const std::string &dir)
{
	struct stat st;
	if (stat(dir.c_str(), &st) != 0)
		return "--textfile " + dir + ": " + strerror(errno);
	if (!S_ISDIR(st.st_mode))
		return "--textfile " + dir + ": not a directory";
	const std::string probe = dir + "/.ptwalk_monitor.probe." + std::to_string(getpid());
	Fd fd(open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
	if (!fd)
		return "--textfile " + dir + ": not writable: " + strerror(errno);
	fd.reset();
	unlink(probe.c_str());
	return "";
}

} // namespace

int run_monitor(const MonitorOptions &o)
{
	if (o.backend == "module" || (o.backend == "auto" && module_loaded()))
		return run_module_monitor(o);
	const bool continuous = !o.serve_host.empty() || !o.textfile_dir.empty();
	if (!o.textfile_dir.empty()) {
		if (auto e = check_textfile_dir(o.textfile_dir); !e.empty()) {
			fprintf(stderr, "ptwalk monitor: %s\n", e.c_str());
			return kMonitorFailed;
		}
	}
	SignalGuard sig;
	MonitorMetrics metrics(o.max_comms);
	const double start_unix = unix_now();
	HttpServer server;
	auto render = [&] { return metrics.render(double(now_ns()) / 1e9, cpu_seconds(), start_unix); };
	if (!o.serve_host.empty()) {
		std::string err;
		if (!server.start(o.serve_host, o.serve_port,
				  [&](const std::string &path) {
					  HttpServer::Response r;
					  if (path == "/metrics") {
						  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
						  r.body = render();
					  } else if (path == "/") {
						  r.body = "ptwalk monitor: metrics at /metrics\n";
					  } else {
						  r.status = 404;
						  r.body = "not found\n";
					  }
					  return r;
				  },
				  &err)) {
			fprintf(stderr, "ptwalk monitor: %s\n", err.c_str());
			return kMonitorFailed;
		}
	}

	std::vector<Walk> walks; // duration mode: kept for the table and JSON
	TaskNames names;
	Prober prober;
	prober.start();
	WalkTracker::Config tc;
	tc.min_hold_ns = o.min_hold_ns;
	tc.prober_tid = prober.tid();
	auto target_comm = [&](pid_t p) {
		std::string c = prober.comm(p);
		if (c.empty())
			c = names.comm(p);
		return c;
	};
	WalkTracker tracker(
		tc,
		[&](const Walk &w) {
			std::vector<double> waits;
			for (const auto &x : w.waiters)
				waits.push_back(double(x.ns()) / 1e9);
			metrics.add_walk(names.comm(w.hold.tgid),
					 w.target_tgid ? target_comm(w.target_tgid) : "",
					 w.kind, lock_mode_name(w.hold.write),
					 double(w.hold.ns()) / 1e9, waits, w.waiters_total,
					 w.target_tgid != 0, w.self, w.basis,
					 double(now_ns()) / 1e9);
			if (!continuous || !o.out_path.empty()) {
				walks.push_back(w);
				if (continuous && walks.size() > 100000)
					walks.erase(walks.begin(), walks.begin() + 50000);
			}
		},
		[&](uint64_t t) { return prober.at(t); });

	MonitorTrace trace;
	MonitorTrace::Hooks hooks;
	tracker.on_task([&](pid_t tid, pid_t tgid) { names.note(tid, tgid); });
	tracker.on_foreign_hold([&](const LockSpan &h) { trace.scan_fds(h.tid, h.tgid, h.start_ns); });
	hooks.lock = [&](const LockEvent &e) { tracker.lock(e); };
	hooks.ended = [&](pid_t tgid, uint64_t t, bool exec) {
		tracker.task_end(tgid, t, exec);
		if (exec)
			prober.queue(tgid);
	};
	hooks.born = [&](pid_t child, uint64_t t) { tracker.task_born(child, t); };
	hooks.fd_evidence = [&](pid_t tid, uint64_t start, WalkFile f) {
		tracker.fd_evidence(tid, start, std::move(f));
	};
	hooks.round = [&](uint64_t at, bool final) {
		tracker.advance(at, final);
		if (tracker.wants_probe()) {
			tracker.clear_wants_probe();
			prober.rescan();
		}
	};
	hooks.comm = [&](pid_t tid, std::string_view c) { names.set(tid, c); };
	hooks.fork = [&](pid_t pid, pid_t tid, pid_t ptid) {
		names.fork(ptid, tid);
		if (pid == tid)
			prober.queue(pid);
	};
	std::string err;
	const uint64_t t0 = now_ns();
	if (!trace.start(std::move(hooks), &err)) {
		fprintf(stderr, "ptwalk monitor: tracepoint backend unavailable: %s\n", err.c_str());
		prober.stop();
		server.stop();
		return kMonitorUnsupported;
	}
	prober.rescan();
	prober.wait_first_scan(5'000'000'000ull);
	auto health = [&] {
		MonitorHealth h;
		h.events = trace.events();
		h.lost = trace.lost();
		h.probes = prober.probes();
		h.fd_scans = trace.fd_scans();
		// unpaired/probe_facts live on the reader thread: read after stop
		return h;
	};
	if (!o.quiet) {
		std::string what = continuous ? "" : " for " + std::to_string(double(o.duration_ns) / 1e9) + " s";
		if (o.duration_ns == 0)
			what = " until stopped";
		fprintf(stderr, "ptwalk monitor: watching mmap_lock holds >= %s ms%s%s%s (Ctrl-C stops)\n",
			ms(o.min_hold_ns).c_str(), what.c_str(),
			o.serve_host.empty() ? "" : (", serving http://" + o.serve_host + ":" +
						     std::to_string(server.port()) + "/metrics").c_str(),
			o.textfile_dir.empty() ? "" : (", textfile " + o.textfile_dir + "/ptwalk_monitor.prom").c_str());
	}
	int rc = 0;
	const std::string textfile = o.textfile_dir.empty() ? "" : o.textfile_dir + "/ptwalk_monitor.prom";
	uint64_t next_text = now_ns();
	const uint64_t end = o.duration_ns ? t0 + o.duration_ns : UINT64_MAX;
	while (!g_interrupted && now_ns() < end) {
		metrics.set_health(health());
		if (!textfile.empty() && now_ns() >= next_text) {
			if (auto e = write_atomically(textfile, render()); !e.empty()) {
				fprintf(stderr, "ptwalk monitor: %s\n", e.c_str());
				rc = kMonitorFailed;
				break;
			}
			next_text = now_ns() + o.textfile_interval_ns;
		}
		uint64_t step = std::min<uint64_t>(end - now_ns() + 1, 200'000'000);
		timespec ts{time_t(step / 1'000'000'000), long(step % 1'000'000'000)};
		nanosleep(&ts, nullptr); // a signal ends the sleep
	}
	trace.stop(); // the tracker emits every pending walk
	prober.stop();
	const uint64_t t1 = now_ns();
	const bool interrupted = g_interrupted != 0;
	MonitorHealth h = health();
	h.unpaired = tracker.unpaired();
	h.probe_facts = tracker.probe_facts();
	metrics.set_health(h);
	server.stop();
	if (!textfile.empty() && rc == 0) {
		if (auto e = write_atomically(textfile, render()); !e.empty()) {
			fprintf(stderr, "ptwalk monitor: %s\n", e.c_str());
			rc = kMonitorFailed;
		}
	}
	if (continuous && o.out_path.empty()) {
		if (!o.quiet)
			fprintf(stderr, "ptwalk monitor: stopped after %.1f s, %llu events, %llu lost\n",
				double(t1 - t0) / 1e9, (unsigned long long)h.events,
				(unsigned long long)h.lost);
		return rc;
	}

	MmIndex mmi;
	Json j = Json::object();
	j["schema"] = "ptwalk.monitor/1";
	j["backend"] = "tracepoint";
	j["duration_ns"] = t1 - t0;
	j["requested_duration_ns"] = o.duration_ns;
	j["interrupted"] = interrupted;
	j["start_ns"] = t0;
	j["min_hold_ns"] = o.min_hold_ns;
	j["min_wait_ns"] = kMonitorMinWaitNs;
	j["events"] = h.events;
	j["unpaired_events"] = h.unpaired;
	j["lost_events"] = h.lost;
	j["probes"] = h.probes;
	j["probe_facts"] = h.probe_facts;
	j["fd_scans"] = h.fd_scans;
	j["lifecycle_events"] = trace.lifecycle();
	j["memcg_field"] = trace.memcg_field();
	j["ring_bytes_per_cpu"] = uint64_t(trace.ring_bytes_per_cpu());
	std::sort(walks.begin(), walks.end(), [](const Walk &a, const Walk &b) {
		return a.hold.start_ns < b.hold.start_ns;
	});
	Json arr = Json::array();
	for (const auto &w : walks) {
		Json x = Json::object();
		x["start_ns"] = w.hold.start_ns;
		x["hold_ns"] = w.hold.ns();
		x["mode"] = lock_mode_name(w.hold.write);
		x["kind"] = w.kind;
		x["mm"] = mmi.label(w.hold.mm);
		Json &ho = x["holder"];
		ho["pid"] = w.hold.tid;
		ho["tgid"] = w.hold.tgid;
		ho["comm"] = names.comm(w.hold.tid);
		ho["process_comm"] = names.comm(w.hold.tgid);
		Json &t = x["target"];
		t["tgid"] = w.target_tgid;
		t["comm"] = w.target_tgid ? target_comm(w.target_tgid) : "?";
		t["basis"] = w.basis;
		t["self"] = w.self;
		if (!w.why.empty())
			t["why"] = w.why;
		if (!w.walk_file.empty())
			x["walk_file"] = w.walk_file;
		x["waiters_total"] = uint64_t(w.waiters_total);
		Json wa = Json::array();
		for (const auto &ws : w.waiters) {
			Json y = Json::object();
			y["pid"] = ws.tid;
			y["tgid"] = ws.tgid;
			y["comm"] = names.comm(ws.tid);
			y["wait_ns"] = ws.ns();
			y["mode"] = lock_mode_name(ws.write);
			wa.push(std::move(y));
		}
		x["waiters"] = std::move(wa);
		arr.push(std::move(x));
	}
	j["holds"] = std::move(arr);

	if (!o.quiet && !continuous) {
		printf("ptwalk monitor: %.2f s%s, %llu events, %llu lost; %zu holds >= %s ms\n",
		       double(t1 - t0) / 1e9, interrupted ? " (interrupted)" : "",
		       (unsigned long long)h.events, (unsigned long long)h.lost, walks.size(),
		       ms(o.min_hold_ns).c_str());
		if (h.lost)
			printf("  warning: the kernel dropped %llu events; holds and waiters may be missing\n",
			       (unsigned long long)h.lost);
		if (!walks.empty())
			printf("%9s %11s %-6s %-12s %-24s %-28s %-6s %s\n", "START_S", "HOLD_MS",
			       "MODE", "KIND", "HOLDER (pid comm)", "TARGET (tgid comm basis)",
			       "MM", "WAITERS");
		MmIndex pmi; // same order as the JSON labels
		const size_t kMaxRows = 200;
		size_t shown = 0;
		for (const auto &w : walks) {
			std::string mm = pmi.label(w.hold.mm);
			if (shown++ >= kMaxRows)
				continue;
			std::string holder = std::to_string(w.hold.tid) + " " + names.comm(w.hold.tid);
			std::string target = w.self ? "self (" + w.basis + ")"
				: w.target_tgid ? std::to_string(w.target_tgid) + " " +
							  target_comm(w.target_tgid) + " (" + w.basis + ")"
				: "unknown";
			std::string waiters = std::to_string(w.waiters_total);
			if (!w.waiters.empty())
				waiters += " (max " + ms(w.waiters[0].ns()) + " ms: " +
					   std::to_string(w.waiters[0].tid) + " " +
					   names.comm(w.waiters[0].tid) + ")";
			printf("%9.3f %11s %-6s %-12s %-24s %-28s %-6s %s\n",
			       double(w.hold.start_ns - std::min(w.hold.start_ns, t0)) / 1e9,
			       ms(w.hold.ns()).c_str(), lock_mode_name(w.hold.write), w.kind.c_str(),
			       holder.c_str(), target.c_str(), mm.c_str(), waiters.c_str());
			if (!w.why.empty())
				printf("%9s   unknown target: %s\n", "", w.why.c_str());
		}
		if (walks.size() > kMaxRows)
			printf("  ... %zu more holds%s\n", walks.size() - kMaxRows,
			       o.out_path.empty() ? " (use an output file to see all)" : " in the JSON");
		fflush(stdout);
	}
	if (!o.out_path.empty()) {
		if (auto werr = write_atomically(o.out_path, j.dump(2) + "\n"); !werr.empty()) {
			fprintf(stderr, "ptwalk monitor: %s\n", werr.c_str());
			return kMonitorFailed;
		}
	}
	return rc;
}

} // namespace ptwalk
