// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/stall_attribution.hpp"

#include "intervals.hpp"

#include <algorithm>
#include <map>
#include <optional>

namespace ptwalk {

StallAccumulator::StallAccumulator(StallConfig cfg) : cfg_(std::move(cfg)), pairer_(*this)
{
	hist_.resize(cfg_.threads.size());
	for (size_t i = 0; i < cfg_.threads.size(); i++)
		watched_.emplace(cfg_.threads[i].tid, i);
}

bool StallAccumulator::is_walker(pid_t tid, pid_t tgid) const
{
	if (cfg_.walker <= 0)
		return false;
	return tid == cfg_.walker || (tgid == cfg_.walker && cfg_.walker != cfg_.target);
}

void StallAccumulator::feed(const LockEvent &e)
{
	events_++;
	if (sched_)
		running(e.tid);
	if (e.tgid == cfg_.target && !is_walker(e.tid, e.tgid))
		target_mm_events_[e.mm]++;
	const bool watched = watched_.count(e.tid) > 0;
	auto open = std::find_if(open_waits_.begin(), open_waits_.end(),
				 [&](const OpenWait &o) { return o.tid == e.tid && o.mm == e.mm; });
	if (watched && e.type == LockEventType::StartLocking) {
		if (open != open_waits_.end())
			open->start_ns = e.time_ns; // a lost acquire_returned
		else
			open_waits_.push_back({e.tid, e.mm, e.time_ns});
	}
	pairer_.feed(e);
	if (open != open_waits_.end() && e.type != LockEventType::StartLocking) {
		open_waits_.erase(open);
		prune_others();
	}
}

const Histogram *StallAccumulator::waits(size_t thread, uint64_t mm) const
{
	if (thread >= hist_.size())
		return nullptr;
	auto it = hist_[thread].find(mm);
	return it == hist_[thread].end() ? nullptr : it->second.get();
}

void StallAccumulator::wait(const LockSpan &w)
{
	if (is_walker(w.tid, w.tgid)) {
		walker_waits_.push_back(w);
		return;
	}
	auto it = watched_.find(w.tid);
	if (it == watched_.end())
		return;
	// the thread's runnable spans: read below if the wait is kept, gone
	// with the wait either way
	auto spans = runnable_.extract(w.tid);
	if (!w.success) {
		// a failed trylock (or an interrupted killable lock): no wait
		// the lock kept it in, see KERNEL-FACTS.md section 18
		failed_acquires_++;
		return;
	}
	auto &h = hist_[it->second][w.mm];
	if (!h)
		h = std::make_unique<Histogram>();
	h->record(w.ns());
	// Keep it when it overlaps a walker hold of the same mm: one still
	// open (it began before this wait ended), or a closed one ending after
	// the wait began. Closed holds are appended in end order.
	bool overlap = false;
	for (const auto &o : open_walker_holds_)
		if (o.mm == w.mm && o.start_ns < w.end_ns)
			overlap = true;
	for (auto r = walker_holds_.rbegin();
	     !overlap && r != walker_holds_.rend() && r->end_ns > w.start_ns; ++r)
		if (r->mm == w.mm && r->start_ns < w.end_ns)
			overlap = true;
	if (!overlap)
		return;
	WatchedWait c{w, it->second, {}, {}, w.start_ns >= others_horizon_ns_, {}, true};
	// the waiter's runnable spans within the wait (this thread's kept
	// spans all ended before now: it is running to end its wait)
	if (spans) {
		for (const auto &x : spans.mapped().spans)
			if (x.end_ns > w.start_ns && x.start_ns < w.end_ns)
				add_interval(c.runnable, std::max(x.start_ns, w.start_ns),
					     std::min(x.end_ns, w.end_ns));
		c.runnable_complete = !spans.mapped().dropped;
	}
	// other tasks' holds within the wait, clipped: the kept closed ones
	// and the open ones
	std::vector<LockSpan> in;
	for (const auto &o : recent_others_)
		if (o.mm == w.mm && o.tid != w.tid && o.overlaps(w.start_ns, w.end_ns))
			in.push_back(o);
	for (const auto &o : open_others_)
		if (o.mm == w.mm && o.tid != w.tid && o.start_ns < w.end_ns) {
			LockSpan x = o;
			x.end_ns = w.end_ns;
			in.push_back(x);
		}
	std::sort(in.begin(), in.end(),
		  [](const LockSpan &a, const LockSpan &b) { return a.start_ns < b.start_ns; });
	for (const auto &o : in)
		add_interval(o.write ? c.others_write : c.others_read,
			     std::max(o.start_ns, w.start_ns), std::min(o.end_ns, w.end_ns));
	candidates_.push_back(std::move(c));
}

void StallAccumulator::hold_begin(const LockSpan &h)
{
	auto &open = is_walker(h.tid, h.tgid) ? open_walker_holds_ : open_others_;
	for (auto &o : open)
		if (o.tid == h.tid && o.mm == h.mm) {
			o = h;
			return;
		}
	open.push_back(h);
}

void StallAccumulator::hold(const LockSpan &h)
{
	const bool walker = is_walker(h.tid, h.tgid);
	auto &open = walker ? open_walker_holds_ : open_others_;
	std::erase_if(open, [&](const LockSpan &o) { return o.tid == h.tid && o.mm == h.mm; });
	if (!walker) {
		keep_other(h);
		return;
	}
	walker_holds_.push_back(h);
}

namespace {

bool walk_owns(const WalkSpan &w, const LockSpan &s, const StallAccumulator &acc)
{
	if (w.walker_pid <= 0)
		return acc.is_walker(s.tid, s.tgid);
	return s.tid == w.walker_pid ||
	       (s.tgid == w.walker_pid && w.walker_pid != acc.config().target);
}

bool in_any_walk(const LockSpan &s, const std::vector<WalkSpan> &walks)
{
	for (const auto &w : walks)
		if (s.overlaps(w.start_ns, w.end_ns))
			return true;
	return false;
}

// Target mm and how it was found; false when it was not.
bool find_target_mm(const StallAccumulator &acc, const std::vector<WalkSpan> &walks, uint64_t &mm,
		    std::string &basis)
{
	uint64_t best = 0;
	for (const auto &[m, n] : acc.target_mm_events())
		if (n > best || (n == best && m < mm)) {
			best = n;
			mm = m;
		}
	if (best) {
		basis = "target_threads";
		return true;
	}
	// Fallback: what the walker holds longest inside walk windows.
	std::map<uint64_t, uint64_t> inside;
	std::map<uint64_t, bool> outside;
	for (const auto &h : acc.walker_holds()) {
		if (in_any_walk(h, walks))
			inside[h.mm] += h.ns();
		else
			outside[h.mm] = true;
	}
	for (int pass = 0; pass < 2 && !best; pass++)
		for (const auto &[m, ns] : inside)
			if ((pass == 1 || !outside[m]) && ns + 1 > best) {
				best = ns + 1;
				mm = m;
			}
	if (best) {
		basis = "walker_holds";
		return true;
	}
	return false;
}

// The walks' holds of the target mm, in start order; each walk's lock
// figures (hold, acquisitions, wait, mode) on the way.
struct WalkHold {
	LockSpan h;
	size_t walk;
};

std::vector<WalkHold> walk_holds(const StallAccumulator &acc, const std::vector<WalkSpan> &walks,
				 uint64_t tmm, std::vector<WalkKernelView> &views)
{
	std::vector<WalkHold> wh;
	for (size_t i = 0; i < walks.size(); i++) {
		const WalkSpan &w = walks[i];
		WalkKernelView &v = views[i];
		bool rd = false, wr = false;
		for (const auto &h : acc.walker_holds()) {
			if (h.mm != tmm || !walk_owns(w, h, acc) ||
			    !h.overlaps(w.start_ns, w.end_ns))
				continue;
			v.lock_hold_ns += h.ns();
			v.lock_acquisitions++;
			(h.write ? wr : rd) = true;
			wh.push_back({h, i});
		}
		bool waited = false;
		for (const auto &x : acc.walker_waits()) {
			if (x.mm != tmm || !walk_owns(w, x, acc) ||
			    !x.overlaps(w.start_ns, w.end_ns))
				continue;
			v.lock_wait_ns += x.ns();
			waited = true;
		}
		v.has_lock = v.lock_acquisitions > 0;
		v.seen = v.has_lock || waited;
		if (v.has_lock)
			v.lock_mode = lock_mode(rd, wr);
	}
	std::sort(wh.begin(), wh.end(),
		  [](const WalkHold &a, const WalkHold &b) { return a.h.start_ns < b.h.start_ns; });
	return wh;
}

struct Stall {
	const StallAccumulator::WatchedWait *w;
	size_t walk;
	// a read wait's pending attributed writer it queued behind, if any
	const StallAccumulator::WatchedWait *writer = nullptr;
	std::optional<uint64_t> walker_held, others_held, free, off_cpu, runnable;
};

struct Attribution {
	std::vector<Stall> stalls;
	std::vector<uint64_t> attributed, max_attr;    // per watched thread
	std::vector<std::optional<uint64_t>> max_held; // per watched thread
};

// The walk that first blocked the wait: the walk of the earliest hold that
// excludes it (a write hold excludes every wait, a read hold a write wait)
// and overlaps it, as ptwalk.ko marks a waiter at the first excluding hold
// (the one held when the wait began, or the first taken during it); a wait
// that outlives its walk into the walker's next one stays the first's.
// SIZE_MAX: none; since: when that hold began.
size_t excluding_walk(const StallAccumulator::WatchedWait &c, const std::vector<WalkHold> &wh,
		      uint64_t longest, uint64_t &since)
{
	// holds starting before the wait ends, back to the longest hold
	auto hi = std::lower_bound(wh.begin(), wh.end(), c.span.end_ns,
				   [](const WalkHold &a, uint64_t t) { return a.h.start_ns < t; });
	size_t first = SIZE_MAX;
	for (auto it = hi; it != wh.begin();) {
		--it;
		if (it->h.start_ns + longest < c.span.start_ns)
			break;
		if (!it->h.overlaps(c.span.start_ns, c.span.end_ns))
			continue;
		if (!it->h.write && !c.span.write)
			continue; // read beside read: not excluded
		first = it->walk; // by start, descending: the last found is first
		since = it->h.start_ns;
	}
	return first;
}

struct SplitInput {
	const std::vector<WalkHold> &wh;
	uint64_t longest;                                 // the longest walk hold
	const std::vector<StallAccumulator::OffCpu> &off; // by start
	uint64_t longest_off;                             // the longest closed one
	bool any_open; // some span never ended (no early stop then)
	bool sched;
	bool waiters; // the waiters' runnable spans are known
};

// The stall split (see the header): walker_held, others_held, free, and
// with sched events the walker's off-CPU part of walker_held.
void split_stall(Stall &st, const SplitInput &in)
{
	const StallAccumulator::WatchedWait &c = *st.w;
	if (!c.others_complete)
		return;
	const uint64_t s = c.span.start_ns, e = c.span.end_ns;
	// while the writer this reader queued behind is pending, read holds
	// exclude it too
	Interval chain{s, s};
	if (!c.span.write && st.writer)
		chain = clip(st.writer->span.start_ns, st.writer->span.end_ns, s, e);
	auto excluding = [&](bool write, uint64_t a, uint64_t b) {
		if (write || c.span.write)
			return clip(a, b, s, e);
		return clip(a, b, chain.start_ns, chain.end_ns);
	};
	std::vector<Interval> walker, all;
	std::vector<std::pair<pid_t, Interval>> pieces; // holder, part
	auto hi = std::lower_bound(in.wh.begin(), in.wh.end(), e,
				   [](const WalkHold &a, uint64_t t) { return a.h.start_ns < t; });
	for (auto it = hi; it != in.wh.begin();) {
		--it;
		if (it->h.start_ns + in.longest < s)
			break;
		if (it->h.tid == c.span.tid)
			continue;
		Interval x = excluding(it->h.write, it->h.start_ns, it->h.end_ns);
		if (x.end_ns <= x.start_ns)
			continue;
		// another walk's hold, the walker's next walk included, is
		// another holder's (ptwalk.ko splits it so)
		if (it->walk != st.walk) {
			all.push_back(x);
			continue;
		}
		walker.push_back(x);
		pieces.push_back({it->h.tid, x});
	}
	all.insert(all.end(), walker.begin(), walker.end());
	for (const auto &x : c.others_write)
		all.push_back(clip(x.start_ns, x.end_ns, s, e));
	for (const auto &x : c.others_read)
		all.push_back(excluding(false, x.start_ns, x.end_ns));
	const uint64_t held = union_ns(walker), any = union_ns(all);
	st.walker_held = held;
	st.others_held = any - held;
	st.free = (e - s) - any;
	if (!in.sched)
		return;
	// of walker_held, the holder off CPU: its off spans inside its pieces
	std::vector<Interval> off;
	for (const auto &[tid, p] : pieces) {
		auto top = std::lower_bound(in.off.begin(), in.off.end(), p.end_ns,
					    [](const StallAccumulator::OffCpu &a, uint64_t t) {
			return a.start_ns < t;
		});
		for (auto it = top; it != in.off.begin();) {
			--it;
			if (!in.any_open && it->start_ns + in.longest_off < p.start_ns)
				break;
			if (it->tid != tid)
				continue;
			Interval x = clip(it->start_ns, it->end_ns, p.start_ns, p.end_ns);
			if (x.end_ns > x.start_ns)
				off.push_back(x);
		}
	}
	st.off_cpu = union_ns(off);
	if (!in.waiters || !c.runnable_complete)
		return;
	// of walker_held outside walker_off_cpu, the waiter runnable off CPU:
	// |(walker pieces & runnable) | off| - |off|
	std::vector<Interval> both = off;
	for (const auto &p : walker)
		for (const auto &r : c.runnable) {
			Interval x = clip(r.start_ns, r.end_ns, p.start_ns, p.end_ns);
			if (x.end_ns > x.start_ns)
				both.push_back(x);
		}
	st.runnable = union_ns(both) - *st.off_cpu;
}

// Splits each attributed stall (walker held, others, free) and adds it
// to its walk's and its thread's figures.
static void split_and_count(Attribution &at, const StallAccumulator &acc,
			    const std::vector<WalkHold> &wh, uint64_t longest,
			    std::vector<WalkKernelView> &views)
{
	std::vector<StallAccumulator::OffCpu> off = acc.walker_off_cpu();
	std::sort(off.begin(), off.end(),
		  [](const StallAccumulator::OffCpu &a, const StallAccumulator::OffCpu &b) {
		return a.start_ns < b.start_ns;
	});
	uint64_t longest_off = 0;
	bool any_open = false;
	for (const auto &o : off) {
		if (o.end_ns == UINT64_MAX)
			any_open = true;
		else
			longest_off = std::max(longest_off, o.end_ns - o.start_ns);
	}
	const SplitInput in{
		wh, longest, off, longest_off, any_open, acc.sched(), acc.sched() && acc.waiters()};
	for (auto &st : at.stalls) {
		const StallAccumulator::WatchedWait &c = *st.w;
		split_stall(st, in);
		WalkKernelView &v = views[st.walk];
		v.stalls++;
		v.max_stall_ns = std::max(v.max_stall_ns, c.span.ns());
		at.attributed[c.thread]++;
		at.max_attr[c.thread] = std::max(at.max_attr[c.thread], c.span.ns());
		if (st.walker_held) {
			v.max_stall_walker_held_ns =
				std::max(v.max_stall_walker_held_ns.value_or(0), *st.walker_held);
			at.max_held[c.thread] =
				std::max(at.max_held[c.thread].value_or(0), *st.walker_held);
		}
	}
}

// A wait is a stall of the walk whose hold excludes it and overlaps it
// most. One chain is followed, as ptwalk.ko does: a read wait that began
// while a write wait the walk blocks was pending, and the walk was still
// going, queues behind that writer.
Attribution attribute_waits(const StallAccumulator &acc, uint64_t tmm,
			    const std::vector<WalkHold> &wh, const std::vector<WalkSpan> &walks,
			    std::vector<WalkKernelView> &views)
{
	const size_t nthreads = acc.config().threads.size();
	Attribution at{{},
		       std::vector<uint64_t>(nthreads, 0),
		       std::vector<uint64_t>(nthreads, 0),
		       std::vector<std::optional<uint64_t>>(nthreads)};
	uint64_t longest = 0;
	for (const auto &x : wh)
		longest = std::max(longest, x.h.ns());
	std::vector<const StallAccumulator::WatchedWait *> readers;
	std::vector<std::pair<const StallAccumulator::WatchedWait *, size_t>> writers;
	struct Direct {
		const StallAccumulator::WatchedWait *c;
		size_t walk;
		uint64_t since; // the excluding hold began
	};
	std::vector<Direct> direct;
	for (const auto &c : acc.candidates()) {
		if (c.span.mm != tmm)
			continue;
		uint64_t since = 0;
		const size_t walk = excluding_walk(c, wh, longest, since);
		if (walk == SIZE_MAX) {
			if (!c.span.write)
				readers.push_back(&c);
			continue;
		}
		if (c.span.write)
			writers.push_back({&c, walk});
		direct.push_back({&c, walk, since});
	}
	// the attributed writer a read wait queued behind, while the writer's
	// walk was going: ptwalk.ko chains a reader only to a writer of the
	// walk live at the reader's start.  A writer whose walk had ended
	// blocks the reader through no walk (6.1 cadvisor, 11-30: an smaps
	// walk ended 1.0 ms before a fault's read wait began, the clear_refs
	// walk after it write-locked 4.6 ms into that wait for 18.1 ms; the
	// view gave the wait to the smaps walk with nothing held, the module
	// to clear_refs)
	auto writer_of = [&](const StallAccumulator::WatchedWait &r)
		-> const std::pair<const StallAccumulator::WatchedWait *, size_t> * {
		if (r.span.write || !acc.config().readers_queue_behind_writers)
			return nullptr;
		for (const auto &x : writers)
			if (x.first->span.tid != r.span.tid &&
			    x.first->span.start_ns <= r.span.start_ns &&
			    x.first->span.end_ns > r.span.start_ns &&
			    walks[x.second].start_ns <= r.span.start_ns &&
			    walks[x.second].end_ns > r.span.start_ns)
				return &x;
		return nullptr;
	};
	for (const auto &d : direct) {
		const auto *w = writer_of(*d.c);
		// a reader queued behind a blocked writer from its start is that
		// writer's walk's before a write hold taken later excludes it
		// directly (a clear_refs after an smaps walk): ptwalk.ko marks
		// it at the first of the two
		const bool chain_first = w && d.since > d.c->span.start_ns;
		at.stalls.push_back(
			{d.c, chain_first ? w->second : d.walk, w ? w->first : nullptr});
	}
	for (const auto *r : readers)
		if (const auto *w = writer_of(*r))
			at.stalls.push_back({r, w->second, w->first});

	split_and_count(at, acc, wh, longest, views);
	return at;
}

// Per victim (its threads merged): its waits on the target mm and what of
// them was attributed to walks.
std::vector<ThreadWaits> thread_summary(const StallAccumulator &acc,
					const std::vector<Victim> &victims, uint64_t tmm,
					const Attribution &at)
{
	const auto &threads = acc.config().threads;
	std::vector<ThreadWaits> th;
	for (const Victim v : victims) {
		ThreadWaits &o = th.emplace_back();
		o.waiter.victim = v;
		for (size_t i = 0; i < threads.size(); i++) {
			if (threads[i].victim != v)
				continue;
			if (const Histogram *h = acc.waits(i, tmm))
				o.waits.merge(*h);
			o.attributed += at.attributed[i];
			o.max_attributed_ns = std::max(o.max_attributed_ns, at.max_attr[i]);
			if (at.max_held[i])
				o.max_attributed_walker_held_ns =
					std::max(o.max_attributed_walker_held_ns.value_or(0),
						 *at.max_held[i]);
		}
	}
	return th;
}

// The stalls, longest first, as many as keep_stall() keeps.
void stall_list(StallsView &sv, std::vector<Stall> stalls, const StallAccumulator &acc,
		const AttributionStats &stats)
{
	const auto &threads = acc.config().threads;
	std::sort(stalls.begin(), stalls.end(), [](const Stall &a, const Stall &b) {
		if (a.w->span.ns() != b.w->span.ns())
			return a.w->span.ns() > b.w->span.ns();
		return a.w->span.start_ns < b.w->span.start_ns;
	});
	sv.total = uint64_t(stalls.size());
	auto &every = sv.every_stall.emplace();
	for (const auto &s : stalls) {
		const Waiter who{threads[s.w->thread].victim, {}};
		every.push_back({s.w->span.tid, who, held_mode(s.w->span.write), s.w->span.start_ns,
				 s.w->span.ns(), s.walk, std::nullopt, s.walker_held, s.others_held,
				 s.free, s.off_cpu, s.runnable});
		if (keep_stall(sv.list.size(), s.w->span.ns(), stats))
			sv.list.push_back(every.back());
	}
	if (stalls.size() < stats.hard_cap)
		sv.complete_above_ns = stats.keep_above_ns;
}

} // namespace

std::vector<WalkKernelView> attribute_stalls(const StallAccumulator &acc,
					     const std::vector<WalkSpan> &walks,
					     const AttributionStats &stats, KernelView &kv)
{
	std::vector<WalkKernelView> views(walks.size());
	kv.source = stats.source;
	TracepointView &tp = kv.tracepoint.emplace();
	tp.events = acc.events();
	tp.lost_events = stats.lost_events;
	uint64_t tmm = 0;
	std::string basis;
	tp.target_mm_found = find_target_mm(acc, walks, tmm, basis);
	if (tp.target_mm_found)
		tp.target_mm_basis = basis;
	tp.unpaired_events = acc.unpaired();
	tp.failed_acquires = acc.failed_acquires();

	// Victims in first-seen order; threads of one victim merge.
	std::vector<Victim> victims;
	for (const auto &t : acc.config().threads)
		if (std::find(victims.begin(), victims.end(), t.victim) == victims.end())
			victims.push_back(t.victim);

	StallsView &sv = kv.stalls.emplace();
	if (!tp.target_mm_found) {
		for (const Victim v : victims)
			sv.threads.push_back({{v, {}},
					      {},
					      0,
					      0,
					      std::nullopt,
					      "target mm not found: no lock events by the "
					      "target's threads nor walker holds in walk windows"});
		return views;
	}
	const std::vector<WalkHold> wh = walk_holds(acc, walks, tmm, views);
	auto &spans = sv.walk_holds.emplace();
	for (const auto &x : wh)
		spans.emplace_back(x.h.start_ns, x.h.end_ns);
	Attribution at = attribute_waits(acc, tmm, wh, walks, views);
	sv.threads = thread_summary(acc, victims, tmm, at);
	stall_list(sv, std::move(at.stalls), acc, stats);
	return views;
}

} // namespace ptwalk
