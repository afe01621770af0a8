// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/monitor.hpp"
#include "ptwalk/result.hpp"
#include "ptwalk/module_view.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <mutex>
#include <unistd.h>

#include "ptwalk/clock.hpp"
#include "ptwalk/fd.hpp"
#include "ptwalk/procfs.hpp"

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

namespace {

volatile sig_atomic_t g_interrupted = 0;

void on_sigint(int) { g_interrupted = 1; }

// Installs the SIGINT handler for its lifetime, restores the old one.
class SigintGuard {
public:
	SigintGuard()
	{
		g_interrupted = 0;
		struct sigaction sa;
		std::memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_sigint;
		sigemptyset(&sa.sa_mask);
		installed_ = sigaction(SIGINT, &sa, &old_) == 0;
	}
	~SigintGuard()
	{
		if (installed_)
			sigaction(SIGINT, &old_, nullptr);
	}
	SigintGuard(const SigintGuard &) = delete;
	SigintGuard &operator=(const SigintGuard &) = delete;

private:
	struct sigaction old_;
	bool installed_ = false;
};

// comm of tasks, read from /proc as soon as a task is first seen (it may
// be gone by the end). Filled on the reader thread, read after stop().
class TaskNames {
public:
	void note(pid_t tid, pid_t tgid)
	{
		lookup(tid);
		lookup(tgid);
	}
	void set(pid_t tid, std::string_view comm) { names_[tid] = std::string(comm); }
	void fork(pid_t ptid, pid_t tid)
	{
		lookup(ptid);
		if (!names_.count(tid))
			names_[tid] = names_[ptid];
	}
	std::string comm(pid_t pid) const
	{
		auto it = names_.find(pid);
		return it == names_.end() || it->second.empty() ? "?" : it->second;
	}

private:
	void lookup(pid_t pid)
	{
		if (pid <= 0)
			return;
		auto [it, fresh] = names_.try_emplace(pid);
		if (!fresh)
			return;
		if (auto t = read_file("/proc/" + std::to_string(pid) + "/comm", nullptr)) {
			while (!t->empty() && t->back() == '\n')
				t->pop_back();
			it->second = *t;
		}
	}
	std::unordered_map<pid_t, std::string> names_;
};


std::string ms(uint64_t ns)
{
	char b[32];
	snprintf(b, sizeof(b), "%.3f", double(ns) / 1e6);
	return b;
}

void sleep_until_done(uint64_t end_ns)
{
	while (!g_interrupted) {
		uint64_t now = now_ns();
		if (now >= end_ns)
			return;
		uint64_t step = std::min<uint64_t>(end_ns - now, 50'000'000);
		timespec ts{time_t(step / 1'000'000'000), long(step % 1'000'000'000)};
		nanosleep(&ts, nullptr); // EINTR: loop checks the flag
	}
}

} // namespace

int run_monitor(const MonitorOptions &o)
{
	if (o.backend == "module" || (o.backend == "auto" && module_loaded()))
		return run_module_monitor(o);
	SigintGuard sig;
	HoldCollector col(o.min_hold_ns);
	TaskNames names;
	MmapLockTrace trace;
	MmapLockTrace::Options topt; // unfiltered, system-wide
	topt.on_comm = [&](pid_t, pid_t tid, std::string_view comm) { names.set(tid, comm); };
	topt.on_fork = [&](pid_t, pid_t, pid_t tid, pid_t ptid) { names.fork(ptid, tid); };
	std::string err;
	const uint64_t t0 = now_ns();
	if (!trace.start(topt,
			 [&](const LockEvent &e) {
				 names.note(e.tid, e.tgid);
				 col.feed(e);
			 },
			 &err)) {
		fprintf(stderr, "ptwalk monitor: tracepoint backend unavailable: %s\n",
			err.c_str());
		return 1;
	}
	if (!o.quiet)
		fprintf(stderr, "ptwalk monitor: watching mmap_lock holds >= %s ms for %.1f s (Ctrl-C stops early)\n",
			ms(o.min_hold_ns).c_str(), double(o.duration_ns) / 1e9);
	sleep_until_done(t0 + o.duration_ns);
	trace.stop();
	const uint64_t t1 = now_ns();
	const bool interrupted = g_interrupted != 0;

	auto holds = analyze_holds(col);
	MmIndex mmi;
	Json j = Json::object();
	j["schema"] = "ptwalk.monitor/1";
	j["backend"] = "tracepoint";
	j["duration_ns"] = t1 - t0;
	j["requested_duration_ns"] = o.duration_ns;
	j["interrupted"] = interrupted;
	j["start_ns"] = t0;
	j["min_hold_ns"] = o.min_hold_ns;
	j["min_wait_ns"] = col.min_wait_ns();
	j["events"] = col.events();
	j["unpaired_events"] = col.unpaired();
	j["late_events"] = trace.late();
	j["memcg_field"] = trace.memcg_field();
	j["ring_bytes_per_cpu"] = uint64_t(trace.ring_bytes_per_cpu());
	Json arr = Json::array();
	for (const auto &m : holds) {
		Json h = Json::object();
		h["start_ns"] = m.hold.start_ns;
		h["hold_ns"] = m.hold.ns();
		h["mode"] = lock_mode_name(m.hold.write);
		h["mm"] = mmi.label(m.hold.mm);
		Json &ho = h["holder"];
		ho["pid"] = m.hold.tid;
		ho["tgid"] = m.hold.tgid;
		ho["comm"] = names.comm(m.hold.tid);
		ho["process_comm"] = names.comm(m.hold.tgid);
		if (m.owner_tgid) {
			Json &t = h["target"];
			t["tgid"] = m.owner_tgid;
			t["comm"] = names.comm(m.owner_tgid);
			t["basis"] = m.owner_basis;
		} else {
			h["target"] = "unknown";
		}
		h["waiters_total"] = uint64_t(m.waiters_total);
		Json wa = Json::array();
		for (const auto &w : m.waiters) {
			Json x = Json::object();
			x["pid"] = w.tid;
			x["tgid"] = w.tgid;
			x["comm"] = names.comm(w.tid);
			x["wait_ns"] = w.ns();
			x["mode"] = lock_mode_name(w.write);
			wa.push(std::move(x));
		}
		h["waiters"] = std::move(wa);
		arr.push(std::move(h));
	}
	j["holds"] = std::move(arr);
	j["lost_events"] = trace.lost();

	if (!o.quiet) {
		printf("ptwalk monitor: %.2f s%s, %llu events, %llu lost; %zu holds >= %s ms\n",
		       double(t1 - t0) / 1e9, interrupted ? " (interrupted)" : "",
		       (unsigned long long)col.events(), (unsigned long long)trace.lost(),
		       holds.size(), ms(o.min_hold_ns).c_str());
		if (trace.lost())
			printf("  warning: the kernel dropped %llu events; holds and waiters may be missing\n",
			       (unsigned long long)trace.lost());
		if (!holds.empty())
			printf("%9s %11s %-6s %-24s %-24s %-6s %s\n", "START_S", "HOLD_MS",
			       "MODE", "HOLDER (pid comm)", "TARGET (tgid comm)", "MM",
			       "WAITERS");
		MmIndex pmi; // same order as the JSON labels
		const size_t kMaxRows = 200;
		size_t shown = 0;
		for (const auto &m : holds) {
			std::string mm = pmi.label(m.hold.mm);
			if (shown++ >= kMaxRows)
				continue;
			std::string holder = std::to_string(m.hold.tid) + " " + names.comm(m.hold.tid);
			std::string target = m.owner_basis == "self" ? "self"
				: m.owner_tgid
				? std::to_string(m.owner_tgid) + " " + names.comm(m.owner_tgid)
				: "unknown";
			std::string waiters = std::to_string(m.waiters_total);
			if (!m.waiters.empty())
				waiters += " (max " + ms(m.waiters[0].ns()) + " ms: " +
					   std::to_string(m.waiters[0].tid) + " " +
					   names.comm(m.waiters[0].tid) + ")";
			printf("%9.3f %11s %-6s %-24s %-24s %-6s %s\n",
			       double(m.hold.start_ns - std::min(m.hold.start_ns, t0)) / 1e9,
			       ms(m.hold.ns()).c_str(), lock_mode_name(m.hold.write),
			       holder.c_str(), target.c_str(), mm.c_str(), waiters.c_str());
		}
		if (holds.size() > kMaxRows)
			printf("  ... %zu more holds%s\n", holds.size() - kMaxRows,
			       o.out_path.empty() ? " (use an output file to see all)" : " in the JSON");
		fflush(stdout);
	}
	if (!o.out_path.empty()) {
		std::string werr;
		if (werr = write_atomically(o.out_path, j.dump(2) + "\n"); !werr.empty()) {
			fprintf(stderr, "ptwalk monitor: %s\n", werr.c_str());
			return 1;
		}
	}
	return 0;
}

} // namespace ptwalk
