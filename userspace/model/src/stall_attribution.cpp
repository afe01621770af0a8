// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/stall_attribution.hpp"

#include <algorithm>
#include <map>

namespace ptwalk {

StallAccumulator::StallAccumulator(StallConfig cfg)
	: cfg_(std::move(cfg)), pairer_(*this)
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
	if (e.tgid == cfg_.target && !is_walker(e.tid, e.tgid))
		target_mm_events_[e.mm]++;
	pairer_.feed(e);
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
	for (auto r = walker_holds_.rbegin(); !overlap && r != walker_holds_.rend() &&
					      r->end_ns > w.start_ns;
	     ++r)
		if (r->mm == w.mm && r->start_ns < w.end_ns)
			overlap = true;
	if (overlap)
		candidates_.push_back({w, it->second});
}

void StallAccumulator::hold_begin(const LockSpan &h)
{
	if (!is_walker(h.tid, h.tgid))
		return;
	for (auto &o : open_walker_holds_)
		if (o.tid == h.tid && o.mm == h.mm) {
			o = h;
			return;
		}
	open_walker_holds_.push_back(h);
}

void StallAccumulator::hold(const LockSpan &h)
{
	if (!is_walker(h.tid, h.tgid))
		return;
	std::erase_if(open_walker_holds_, [&](const LockSpan &o) {
		return o.tid == h.tid && o.mm == h.mm;
	});
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
bool find_target_mm(const StallAccumulator &acc, const std::vector<WalkSpan> &walks,
		    uint64_t &mm, std::string &basis)
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
			v.lock_mode = rd && wr ? "read+write" : wr ? "write" : "read";
	}
	std::sort(wh.begin(), wh.end(), [](const WalkHold &a, const WalkHold &b) {
		return a.h.start_ns < b.h.start_ns;
	});
	return wh;
}

struct Stall {
	const StallAccumulator::WatchedWait *w;
	size_t walk;
};

struct Attribution {
	std::vector<Stall> stalls;
	std::vector<uint64_t> attributed, max_attr; // per watched thread
};

// The walk whose hold excludes the wait (a write hold excludes every wait,
// a read hold a write wait) and overlaps it most; SIZE_MAX: none.
size_t excluding_walk(const StallAccumulator::WatchedWait &c, const std::vector<WalkHold> &wh,
		      uint64_t longest)
{
	// holds starting before the wait ends, back to the longest hold
	auto hi = std::lower_bound(wh.begin(), wh.end(), c.span.end_ns,
				   [](const WalkHold &a, uint64_t t) { return a.h.start_ns < t; });
	uint64_t best_ov = 0;
	size_t best_walk = SIZE_MAX;
	for (auto it = hi; it != wh.begin();) {
		--it;
		if (it->h.start_ns + longest < c.span.start_ns)
			break;
		if (!it->h.overlaps(c.span.start_ns, c.span.end_ns))
			continue;
		if (!it->h.write && !c.span.write)
			continue; // read beside read: not excluded
		uint64_t ov = std::min(it->h.end_ns, c.span.end_ns) -
			      std::max(it->h.start_ns, c.span.start_ns);
		if (best_walk == SIZE_MAX || ov > best_ov) {
			best_ov = ov;
			best_walk = it->walk;
		}
	}
	return best_walk;
}

// A wait is a stall of the walk whose hold excludes it and overlaps it
// most. One chain is followed, as ptwalk.ko does: a read wait that began
// while a write wait the walk blocks was pending queues behind that writer.
Attribution attribute_waits(const StallAccumulator &acc, uint64_t tmm,
			    const std::vector<WalkHold> &wh, std::vector<WalkKernelView> &views)
{
	const size_t nthreads = acc.config().threads.size();
	Attribution at{{}, std::vector<uint64_t>(nthreads, 0), std::vector<uint64_t>(nthreads, 0)};
	uint64_t longest = 0;
	for (const auto &x : wh)
		longest = std::max(longest, x.h.ns());
	auto attribute = [&](const StallAccumulator::WatchedWait &c, size_t walk) {
		WalkKernelView &v = views[walk];
		v.stalls++;
		v.max_stall_ns = std::max(v.max_stall_ns, c.span.ns());
		at.attributed[c.thread]++;
		at.max_attr[c.thread] = std::max(at.max_attr[c.thread], c.span.ns());
		at.stalls.push_back({&c, walk});
	};
	std::vector<const StallAccumulator::WatchedWait *> readers;
	std::vector<std::pair<const StallAccumulator::WatchedWait *, size_t>> writers;
	for (const auto &c : acc.candidates()) {
		if (c.span.mm != tmm)
			continue;
		const size_t walk = excluding_walk(c, wh, longest);
		if (walk == SIZE_MAX) {
			if (!c.span.write)
				readers.push_back(&c);
			continue;
		}
		if (c.span.write)
			writers.push_back({&c, walk});
		attribute(c, walk);
	}
	for (const auto *r : readers)
		for (const auto &[w, walk] : writers)
			if (w->span.tid != r->span.tid && w->span.start_ns <= r->span.start_ns &&
			    w->span.end_ns > r->span.start_ns) {
				attribute(*r, walk);
				break;
			}
	return at;
}

// Per victim name (threads of one name merged): its waits on the target mm
// and what of them was attributed to walks.
std::vector<ThreadWaits> thread_summary(const StallAccumulator &acc,
					const std::vector<std::string> &names, uint64_t tmm,
					const Attribution &at)
{
	const auto &threads = acc.config().threads;
	std::vector<ThreadWaits> th;
	for (const auto &n : names) {
		ThreadWaits &o = th.emplace_back();
		o.name = n;
		for (size_t i = 0; i < threads.size(); i++) {
			if (threads[i].name != n)
				continue;
			if (const Histogram *h = acc.waits(i, tmm))
				o.waits.merge(*h);
			o.attributed += at.attributed[i];
			o.max_attributed_ns = std::max(o.max_attributed_ns, at.max_attr[i]);
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
	for (const auto &s : stalls) {
		if (!keep_stall(sv.list.size(), s.w->span.ns(), stats))
			break;
		sv.list.push_back({s.w->span.tid, threads[s.w->thread].name,
				   lock_mode_name(s.w->span.write), s.w->span.start_ns,
				   s.w->span.ns(), s.walk, std::nullopt});
	}
	if (stalls.size() < stats.hard_cap)
		sv.complete_above_ns = stats.keep_above_ns;
}

} // namespace

std::vector<WalkKernelView> attribute_stalls(const StallAccumulator &acc,
					     const std::vector<WalkSpan> &walks,
					     const AttributionStats &stats,
					     KernelView &kv)
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

	// Victim names in first-seen order; threads of one name merge.
	std::vector<std::string> names;
	for (const auto &t : acc.config().threads)
		if (std::find(names.begin(), names.end(), t.name) == names.end())
			names.push_back(t.name);

	StallsView &sv = kv.stalls.emplace();
	if (!tp.target_mm_found) {
		for (const auto &n : names)
			sv.threads.push_back({n, {}, 0, 0, std::nullopt,
					      "target mm not found: no lock events by the "
					      "target's threads nor walker holds in walk windows"});
		return views;
	}
	const std::vector<WalkHold> wh = walk_holds(acc, walks, tmm, views);
	Attribution at = attribute_waits(acc, tmm, wh, views);
	sv.threads = thread_summary(acc, names, tmm, at);
	stall_list(sv, std::move(at.stalls), acc, stats);
	return views;
}

} // namespace ptwalk
