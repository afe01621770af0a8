// SPDX-License-Identifier: GPL-2.0
// ptwalk monitor's model of what the trace shows, without I/O: mmap_lock
// holds and their waiters (HoldCollector, analyze_holds), which process owns
// which mm (MmOwners), and each walk from its lock events, the walker's open
// /proc file and the probes (WalkTracker); the fd table's walk files are in
// monitor_walk_file.cpp. The command is in monitor.cpp.
#include "ptwalk/monitor_model.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "ptwalk/walk_kinds.hpp"

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
			return a.ns() != b.ns() ? a.ns() > b.ns() : a.start_ns < b.start_ns;
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

void MmOwners::probe(uint64_t mm, pid_t tgid, uint64_t t, Basis basis, bool building)
{
	auto &v = lives_[mm];
	if (!v.empty() && v.back().end_ns == UINT64_MAX) {
		if (v.back().tgid == tgid)
			return;
		// the previous owner's end was not seen (a lost event): the
		// address is someone else's now
		pid_t old = v.back().tgid;
		v.back().end_ns = t;
		v.back().end_reason = LifeEnd::reused;
		auto &o = by_tgid_[old];
		o.erase(std::remove(o.begin(), o.end(), mm), o.end());
	}
	auto &mine = by_tgid_[tgid];
	if (building) {
		// its mm until the exec: both stay open
		mine.push_back(mm);
		v.push_back(MmLife{tgid, t, UINT64_MAX, LifeEnd::exit, basis, true});
		return;
	}
	// the same process with another open mm: an exec we did not see
	for (uint64_t other : mine) {
		auto &ov = lives_[other];
		if (!ov.empty() && ov.back().end_ns == UINT64_MAX && ov.back().tgid == tgid &&
		    !ov.back().building) {
			ov.back().end_ns = t;
			ov.back().end_reason = LifeEnd::exec;
		}
	}
	mine.assign(1, mm);
	v.push_back(MmLife{tgid, t, UINT64_MAX, LifeEnd::exit, basis});
	last_mm_[tgid] = mm;
}

void MmOwners::ended(pid_t tgid, uint64_t t, LifeEnd why)
{
	ended_[tgid] = t;
	if (why == LifeEnd::exec)
		execs_[tgid] = t;
	auto it = by_tgid_.find(tgid);
	if (it == by_tgid_.end())
		return;
	const bool exec = why == LifeEnd::exec;
	std::vector<uint64_t> keep;
	for (uint64_t mm : it->second) {
		auto &v = lives_[mm];
		if (v.empty() || v.back().end_ns != UINT64_MAX || v.back().tgid != tgid)
			continue;
		if (exec && v.back().building) {
			v.back().building = false; // the mm the exec installed
			last_mm_[tgid] = mm;
			keep.push_back(mm);
			continue;
		}
		v.back().end_ns = t;
		v.back().end_reason = why;
	}
	if (keep.empty())
		by_tgid_.erase(it);
	else
		it->second = std::move(keep);
}

bool MmOwners::execed_between(pid_t tgid, uint64_t from, uint64_t to) const
{
	auto it = execs_.find(tgid);
	return it != execs_.end() && it->second >= from && it->second <= to;
}

bool MmOwners::process_ended(pid_t tgid, uint64_t t) const
{
	auto it = ended_.find(tgid);
	return it != ended_.end() && it->second <= t;
}

pid_t MmOwners::ended_owner(uint64_t mm, uint64_t t) const
{
	auto it = lives_.find(mm);
	if (it == lives_.end() || it->second.empty() || it->second.back().end_ns >= t)
		return 0;
	return it->second.back().tgid;
}

MmOwners::Owner MmOwners::owner_at(uint64_t mm, uint64_t t, pid_t holder, bool teardown) const
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
		// the mm torn down after its owner's exit/exec: by the owner's
		// own task, or by whoever dropped the last reference to it (a
		// /proc reader still inside its read when the owner exited)
		if (t > l.end_ns && (holder == l.tgid || teardown) &&
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
			o.basis = l.basis;
			o.teardown = teardown; // its end not seen yet
			return o;
		}
	}
	const MmLife &last = v.back();
	o.pending = true;
	o.why = "the previous owner (tgid " + std::to_string(last.tgid) + ") ended (" +
		name(last.end_reason) + ") before the hold; no probe has seen the address since";
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
	for (auto it = torn_.begin(); it != torn_.end();)
		it = it->second < t ? torn_.erase(it) : std::next(it);
	for (auto it = last_mm_.begin(); it != last_mm_.end();) {
		auto e = ended_.find(it->first);
		it = e != ended_.end() && e->second < t ? last_mm_.erase(it) : std::next(it);
	}
	for (auto *m : {&born_, &ended_, &execs_})
		for (auto it = m->begin(); it != m->end();)
			it = it->second < t ? m->erase(it) : std::next(it);
}

// --- WalkTracker ------------------------------------------------------

WalkTracker::WalkTracker(Config c, Emit emit, ProbeLookup probe_at)
	: cfg_(c), emit_(std::move(emit)), probe_at_(std::move(probe_at))
{
}

// exit_mmap() unmaps under the read lock, then takes the write lock at
// once to free the page tables
constexpr uint64_t kTeardownGapNs = 1'000'000;
// exec_mmap()'s teardown of the old mm to the exec event: the rest of
// load_elf_binary() (mapping the new image), well under this even when
// the task is preempted on a loaded host; below the resolve grace
constexpr uint64_t kExecTeardownNs = 100'000'000;

void WalkTracker::pair(const LockEvent &e)
{
	State &st = states_[std::make_pair(e.tid, e.mm)];
	switch (e.type) {
	case LockEventType::StartLocking: {
		if (st.phase != Phase::Idle)
			unpaired_++; // lost acquire_returned or released
		// Only with the tracepoints (the bpf program reads mm_users): a
		// teardown run by whoever dropped the mm's last reference (a
		// /proc reader) looks like that reader's walk until the write
		// lock follows. Confirmed or not at resolve().
		const bool after_read = e.write && st.phase == Phase::Idle && st.read_end &&
					e.time_ns - st.read_end <= kTeardownGapNs;
		const uint64_t read_start = after_read ? write_follows(e.tid, e.mm, st.read_end)
						       : 0;
		st = State{Phase::Waiting, e.write, after_read, e.time_ns, 0, read_start};
		break;
	}
	case LockEventType::AcquireReturned:
		if (st.phase == Phase::Waiting) {
			wait(LockSpan{st.since, e.time_ns, e.mm, e.tgid, e.tid, e.write,
				      e.success});
		} else if (st.phase == Phase::Holding && st.write && !e.write) {
			// mmap_write_downgrade(): the write hold ends, a read hold starts
			hold(LockSpan{st.since, e.time_ns, e.mm, e.tgid, e.tid, true, true});
		} else {
			unpaired_++; // lost start_locking (or released)
		}
		st = e.success ? State{Phase::Holding, e.write, st.after_read,
				       e.time_ns,      0,       st.read_start}
			       : State{};
		break;
	case LockEventType::Released:
		if (st.phase == Phase::Holding && st.after_read) {
			// the write hold's file is the one its read hold was reading
			if (auto f = fd_ev_.find({e.tid, st.read_start}); f != fd_ev_.end())
				fd_ev_.emplace(std::make_pair(e.tid, st.since), f->second);
		}
		if (st.phase == Phase::Holding)
			hold(LockSpan{st.since, e.time_ns, e.mm, e.tgid, e.tid, st.write, true},
			     st.after_read);
		else
			unpaired_++;
		st = State{.read_end = st.phase == Phase::Holding && !st.write ? e.time_ns : 0};
		break;
	}
}

// The read hold a write lock follows at once: exit_mmap()'s unmap, maybe.
// Its start when it is pending (long enough to be reported), else 0.
uint64_t WalkTracker::write_follows(pid_t tid, uint64_t mm, uint64_t read_end)
{
	for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) {
		const LockSpan &h = it->walk.hold;
		if (h.tid == tid && h.mm == mm && h.end_ns == read_end) {
			it->teardown_shape = true;
			return h.start_ns;
		}
	}
	return 0;
}

// The shape is a teardown when the mm is no live process's and the
// holder was its owner or is reading the owner's /proc files: its last
// named owner has ended, or, never named, the process whose /proc file
// the holder reads has. (A process's own madvise then munmap has the
// shape too, but on a live mm; after its owner's end no get_task_mm()
// succeeds, so no new walk of a dead mm begins.)
bool WalkTracker::teardown_shape_confirmed(const Pending &p,
					   const std::optional<WalkFile> &fd) const
{
	const LockSpan &h = p.walk.hold;
	if (!p.teardown_shape)
		return false;
	if (pid_t dead = owners_.ended_owner(h.mm, h.end_ns))
		return dead == h.tgid || reads_proc_of(h.tid, dead);
	return !owners_.owner_at(h.mm, h.start_ns, h.tgid).tgid && fd && fd->pid &&
	       fd->pid != h.tgid && owners_.process_ended(fd->pid, h.end_ns);
}

void WalkTracker::lock(const LockEvent &e)
{
	events_++;
	probe_acquire(e);
	pair(e);
}

void WalkTracker::probe_acquire(const LockEvent &e)
{
	if (cfg_.prober_tid && e.tid == cfg_.prober_tid &&
	    e.type == LockEventType::AcquireReturned && e.success && probe_at_) {
		if (pid_t p = probe_at_(e.time_ns)) {
			owners_.probe(e.mm, p, e.time_ns);
			probe_facts_++;
		}
	}
}

void WalkTracker::span(const LockSpan &s, bool is_hold)
{
	if (is_hold)
		hold(s);
	else
		wait(s);
}

void WalkTracker::owner_fact(uint64_t mm, pid_t tgid, uint64_t t, bool building)
{
	owners_.probe(mm, tgid, t, Basis::mm_owner, building);
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

void WalkTracker::hold(const LockSpan &h, bool teardown_shape)
{
	if (h.ns() < cfg_.min_hold_ns)
		return;
	if (h.teardown)
		owners_.torn_down(h.mm, h.start_ns);
	Pending p;
	p.walk.hold = h;
	p.teardown_shape = teardown_shape;
	pending_.push_back(std::move(p));
	pending_mms_[h.mm]++;
	if (on_task_)
		on_task_(h.tid, h.tgid);
	if (on_foreign_ && !fd_ev_.count({h.tid, h.start_ns}) &&
	    owners_.owner_at(h.mm, h.start_ns, h.tgid).tgid != h.tgid)
		on_foreign_(h);
}

// The task's fd table named one of pid's /proc files in one of its holds.
bool WalkTracker::reads_proc_of(pid_t tid, pid_t pid) const
{
	for (auto it = fd_ev_.lower_bound({tid, 0}); it != fd_ev_.end() && it->first.first == tid;
	     ++it)
		if (it->second.pid == pid)
			return true;
	return false;
}

bool WalkTracker::resolve(Pending &p, bool final)
{
	Walk &w = p.walk;
	LockSpan &h = w.hold;
	std::optional<WalkFile> fd;
	if (auto it = fd_ev_.find({h.tid, h.start_ns}); it != fd_ev_.end())
		fd = it->second;
	if (!h.teardown && teardown_shape_confirmed(p, fd))
		h.teardown = true;
	auto o = owners_.owner_at(h.mm, h.start_ns, h.tgid, h.teardown);
	if (o.teardown && o.tgid != h.tgid && !reads_proc_of(h.tid, o.tgid)) {
		// Another task tearing down the mm is the owner's last reader
		// only while it reads one of the owner's /proc files; else the
		// address was reused by an mm no fact named (its process's own,
		// torn down by its exec or exit)
		o = MmOwners::Owner{};
		o.why = "the mm's teardown; no fact named its owner (the address was reused)";
	}
	if ((!o.tgid || o.tgid == h.tgid) && (h.teardown || p.teardown_shape) &&
	    owners_.execed_between(h.tgid, h.end_ns, h.end_ns + kExecTeardownNs)) {
		// exec_mmap() drops the pre-exec mm (a fork's copy of its
		// parent's page tables: ms to tear down), then the exec event
		// fires: the process's own old mm. (A live process's own
		// teardown-shaped unmap just before an exec is its own mm too.)
		h.teardown = true;
		o = MmOwners::Owner{};
		o.tgid = h.tgid;
		o.teardown = true;
		o.basis = Basis::exec;
	}
	if (fd && fd->pid && fd->pid != o.tgid &&
	    (o.tgid || owners_.not_its_mm(fd->pid, h.mm, h.start_ns))) {
		// A reader of /proc/P/<file> locks P's mm, and facts say this mm
		// is someone else's or not P's: the file is open beside this
		// hold, not walked by it (a reader faulting on its own mm
		// between two read() calls)
		fd.reset();
	}
	if (!o.tgid && o.pending && !final && !(fd && fd->pid)) {
		wants_probe_ = true;
		return false;
	}
	if (o.tgid) {
		w.target_tgid = o.tgid;
		w.basis = o.teardown && o.basis != Basis::exec ? Basis::exit : o.basis;
	} else if (fd && fd->pid) {
		// the walker had /proc/PID/<file> open while it held the lock
		w.target_tgid = fd->pid;
		w.basis = Basis::fd_table;
	} else {
		w.basis = Basis::unknown;
		w.why = o.why;
	}
	w.self = w.target_tgid && w.target_tgid == h.tgid;
	if (fd && fd->file && fd->pid)
		w.walk_file = "/proc/" + std::to_string(fd->pid) + "/" + name(*fd->file);
	if (o.teardown || h.teardown) {
		// a reader's teardown: the hold is the owner's exit, not the
		// reader's walk (walk_file says which read ran it)
		w.kind = HoldCause::exit;
	} else if (fd && fd->file) {
		w.kind = hold_kind(*fd->file);
	} else if (w.self) {
		w.kind = HoldCause::own; // the process's own mmap/munmap/fault/exit
	} else {
		w.kind = HoldCause::unknown;
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
		if (!resolve(*it, timed_out)) {
			++it;
			continue;
		}
		std::sort(w.waiters.begin(), w.waiters.end(),
			  [](const LockSpan &a, const LockSpan &b) {
			return a.ns() != b.ns() ? a.ns() > b.ns() : a.start_ns < b.start_ns;
		});
		w.waiters.erase(std::unique(
					w.waiters.begin(), w.waiters.end(),
					[](const LockSpan &a, const LockSpan &b) {
			return a.tid == b.tid && a.start_ns == b.start_ns;
					}),
				w.waiters.end());
		w.waiters_total = w.waiters.size();
		if (w.waiters.size() > 32)
			w.waiters.resize(32);
		if (emit_)
			emit_(w);
		if (auto pm = pending_mms_.find(w.hold.mm);
		    pm != pending_mms_.end() && --pm->second == 0)
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

} // namespace ptwalk
