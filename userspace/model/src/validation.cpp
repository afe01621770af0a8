// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/validation.hpp"

#include "ptwalk/result.hpp"
#include "ptwalk/units.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string_view>

namespace ptwalk {

namespace {

bool within(const ViewStall &s, const VictimOp &o, uint64_t tol)
{
	const uint64_t s0 = s.start_ns, s1 = s.start_ns + s.wait_ns;
	return s0 + tol >= o.start_ns && s1 <= o.end_ns + tol;
}

std::string fmt_ratio(const char *what, uint64_t a, uint64_t b, double min)
{
	char buf[160];
	snprintf(buf, sizeof(buf), "%s %llu/%llu = %.3f < %.2f", what, (unsigned long long)a,
		 (unsigned long long)b, b ? double(a) / double(b) : 0.0, min);
	return buf;
}

// Slow operations of the victims during walks, and how many of them the
// view has a stall for (the view's recall).
struct Recall {
	uint64_t ref = 0, recalled = 0, not_slept = 0, before = 0, before_hit = 0;
	uint64_t ambiguous = 0, ambiguous_hit = 0, not_behind = 0;
	uint64_t vma_lock = 0, outside_holds = 0;
	std::vector<UnexplainedOp> unexplained;
};

// A victim whose operation write-locks a VMA: the mmap victim its own (to
// unmap it), the vma victim the walked one (to split it). A walker under
// per-VMA locks read-locks every VMA it shows, so either may wait for it.
bool writes_vmas(Victim v)
{
	return v == Victim::mmap || v == Victim::vma;
}

// Another victim slow without sleeping across this one: it may have held
// the lock while preempted, and this wait be its doing (with a second
// view, the adjudication decides instead).
bool other_victim_preempted(const ValidationInput &in, const VictimOp &o)
{
	if (in.second)
		return false;
	for (const auto &p : in.ops)
		if (p.tid != o.tid && (p.slept == 0 || p.preempted == 1) &&
		    p.end_ns - p.start_ns >= in.threshold_ns && p.start_ns < o.end_ns &&
		    p.end_ns > o.start_ns)
			return true;
	return false;
}

bool seen_by_second_view(const ValidationInput &in, const VictimOp &o)
{
	for (const auto &s : *in.second)
		if (s.tid == o.tid && within(s, o, in.tol_ns))
			return true;
	return false;
}

// o overlapped a walk under VMA read locks (vma_walk_spans)
bool during_vma_walk(const ValidationInput &in, const VictimOp &o)
{
	return in.vma_walk_spans.empty() ||
	       std::any_of(in.vma_walk_spans.begin(), in.vma_walk_spans.end(),
			   [&](auto &s) { return o.start_ns < s.second && s.first < o.end_ns; });
}

// o overlapped a walk's hold of the target mm (walk_holds): any walk's, so
// that two walkers' holds that overlap (cadvisor) need no order between them
bool during_walk_hold(const std::vector<std::pair<uint64_t, uint64_t>> &holds, const VictimOp &o)
{
	return std::any_of(holds.begin(), holds.end(), [&](const auto &h) {
		return h.first < o.end_ns && h.second > o.start_ns;
	});
}

Recall recall_of(const ValidationInput &in)
{
	std::map<pid_t, std::vector<const ViewStall *>> stalls_by_tid;
	for (const auto &s : in.every_stall ? *in.every_stall : in.stalls)
		stalls_by_tid[s.tid].push_back(&s);
	Recall r;
	for (const auto &o : in.ops) {
		if (!o.during || o.end_ns - o.start_ns < in.threshold_ns)
			continue;
		// with a second view, a wait that spun or was preempted rather
		// than slept (rt_mutex and rwsem owners spin on a running owner)
		// is a candidate: the second view adjudicates it below
		if (o.slept == 0 && !(in.second && o.preempted == 1)) {
			r.not_slept++;
			continue;
		}
		bool hit = false;
		for (const ViewStall *st : stalls_by_tid[o.tid])
			if (within(*st, o, in.tol_ns)) {
				hit = true;
				break;
			}
		if (!o.began_during) {
			r.before++;
			r.before_hit += hit;
			continue;
		}
		if (!hit && in.vma_lock_unseen && !in.vma_view && writes_vmas(o.victim) &&
		    during_vma_walk(in, o)) {
			r.vma_lock++;
			continue;
		}
		if (!hit && !in.second && in.walk_holds && !during_walk_hold(*in.walk_holds, o)) {
			r.outside_holds++;
			continue;
		}
		if (other_victim_preempted(in, o)) {
			r.ambiguous++;
			r.ambiguous_hit += hit;
			continue;
		}
		if (!hit && in.second && !seen_by_second_view(in, o)) {
			r.not_behind++;
			continue;
		}
		r.ref++;
		if (hit) {
			r.recalled++;
		} else if (r.unexplained.size() < 20) {
			r.unexplained.push_back(
				{o.victim, o.tid, o.start_ns, o.end_ns - o.start_ns});
		}
	}
	return r;
}

// The view's stalls above the threshold, and how many a victim's own clock
// confirms (the view's precision).
struct Precision {
	uint64_t checked = 0, confirmed = 0, smallest = UINT64_MAX;
	uint64_t by_upkeep = 0; // confirmed by the victim's upkeep alone
	std::vector<UnconfirmedStall> unconfirmed;
};

Precision precision_of(const ValidationInput &in)
{
	std::map<pid_t, std::vector<const VictimOp *>> by_tid;
	for (const auto &o : in.ops)
		by_tid[o.tid].push_back(&o);
	Precision p;
	for (const auto &s : in.stalls) {
		p.smallest = std::min(p.smallest, s.wait_ns);
		if (s.wait_ns < in.threshold_ns)
			continue;
		p.checked++;
		bool seen = false, by_op = false;
		for (const VictimOp *o : by_tid[s.tid])
			if (within(s, *o, in.tol_ns)) {
				seen = true;
				by_op |= !o->upkeep;
			}
		p.confirmed += seen;
		p.by_upkeep += seen && !by_op;
		if (!seen && p.unconfirmed.size() < 20)
			p.unconfirmed.push_back({int32_t(s.tid), s.start_ns, s.wait_ns});
	}
	return p;
}

std::vector<std::string> disagreements(const ValidationInput &in, const Recall &r,
				       const Precision &p)
{
	std::vector<std::string> dis;
	if (r.ref && double(r.recalled) < in.min_recall * double(r.ref))
		dis.push_back(fmt_ratio("recall", r.recalled, r.ref, in.min_recall));
	if (p.checked && double(p.confirmed) < in.min_precision * double(p.checked))
		dis.push_back(fmt_ratio("precision", p.confirmed, p.checked, in.min_precision));
	if (in.ops_dropped)
		dis.push_back("victims' slow-operation log overflowed: " +
			      std::to_string(in.ops_dropped) + " operations not kept");
	// a truncated stall list is complete above the threshold only when its
	// smallest entry is below it (the lists are sorted largest first)
	if (in.stalls_total > in.stalls.size() && p.smallest >= in.threshold_ns &&
	    in.complete_above_ns > in.threshold_ns)
		dis.push_back("stall list truncated above the threshold: " +
			      std::to_string(in.stalls_total) + " attributed, " +
			      std::to_string(in.stalls.size()) + " listed");
	return dis;
}

} // namespace

StallValidation validate_stalls(const ValidationInput &in)
{
	Recall r = recall_of(in);
	Precision p = precision_of(in);
	StallValidation v;
	v.view = in.view;
	v.threshold_ns = in.threshold_ns;
	v.reference_ops = r.ref;
	v.reference_ops_dropped = in.ops_dropped;
	v.slow_not_slept = r.not_slept;
	v.began_before_walk = r.before;
	v.began_before_walk_recalled = r.before_hit;
	v.other_victim_preempted = r.ambiguous;
	v.other_victim_preempted_recalled = r.ambiguous_hit;
	if (in.second)
		v.not_behind_walk = r.not_behind;
	else if (in.walk_holds)
		v.outside_walk_holds = r.outside_holds;
	if (in.vma_lock_unseen && !in.vma_view)
		v.vma_lock_waits = r.vma_lock;
	v.recalled = r.recalled;
	if (r.ref)
		v.recall = double(r.recalled) / double(r.ref);
	v.unexplained = std::move(r.unexplained);
	v.stalls_checked = p.checked;
	v.confirmed = p.confirmed;
	v.confirmed_by_upkeep = p.by_upkeep;
	if (p.checked)
		v.precision = double(p.confirmed) / double(p.checked);
	v.unconfirmed = std::move(p.unconfirmed);
	v.disagreements = disagreements(in, r, p);
	v.agree = v.disagreements.empty();
	return v;
}

namespace {

// The module's figures of the scanner's walks against the mapping's PTE
// slots [lo, hi] and, when there is one, the module's complete walk.
struct WalkTally {
	uint64_t le = 0, timed = 0, inb = 0, with_slots = 0, short_yield = 0;
	uint64_t short_unconfirmed = 0;
};

WalkTally tally_walks(const RunResult &result, double lo, double hi,
		      std::optional<double> slots_ref)
{
	const double rss_ref = double(workload_rss_reference(result.workload));
	WalkTally t;
	for (const WalkEntry &w : result.walks) {
		if (!w.module)
			continue;
		if (w.module->walk_ns) {
			t.timed++;
			if (*w.module->walk_ns <= w.syscall_ns)
				t.le++;
		}
		if (lo <= 0 || w.error)
			continue;
		const double s = double(w.module->pte_slots_visited);
		// smaps_rollup gives the lock up to a waiting writer between
		// VMAs, and 6.1 then skips the VMA it finds (its "Case 1"
		// continue).  Such a walk is told by a view independent of
		// the module: the Rss its own text reported ("incomplete").
		// The module must agree: the lock taken more than once, and
		// short of a complete walk by at least the pages the Rss
		// misses (less what the victims may return; more is fine:
		// a skipped file VMA has slots that are not resident).
		// Without a complete walk to compare with: fewer slots than
		// the mapping.  Either view alone is a disagreement.
		if (w.incomplete) {
			const double rss = w.rollup_rss_bytes ? double(*w.rollup_rss_bytes)
							      : rss_ref;
			const double missed = (rss_ref - rss) / 4096;
			const double slack = double(kRollupRssSlack / 4096);
			const bool fewer = slots_ref ? *slots_ref - s >= missed - slack : s < lo;
			if (fewer && w.lock && w.lock->acquisitions > 1)
				t.short_yield++;
			else
				t.short_unconfirmed++;
			continue;
		}
		t.with_slots++;
		if (s >= lo && s <= hi)
			t.inb++;
	}
	return t;
}

std::vector<std::string> walk_disagreements(const WalkValidation &v)
{
	std::vector<std::string> dis;
	if (v.matched_once != v.walks || v.module_walks_unmatched)
		dis.push_back("walks matched " + std::to_string(v.matched_once) + " of " +
			      std::to_string(v.walks) + ", " +
			      std::to_string(v.module_walks_unmatched) +
			      " module records unmatched");
	if (v.walk_proper_le_syscall != v.walk_proper_timed)
		dis.push_back("walk proper longer than the syscall in " +
			      std::to_string(v.walk_proper_timed - v.walk_proper_le_syscall) +
			      " walks");
	if (v.short_unconfirmed)
		dis.push_back("smaps_rollup's Rss says VMAs were skipped in " +
			      std::to_string(v.short_unconfirmed) +
			      " walks the module did not see short (mmap_lock taken once, or PTE"
			      " slots not short of a complete walk by the pages missed)");
	if (v.pte_slots_in_bounds != v.pte_slots_checked)
		dis.push_back("PTE slots out of bounds in " +
			      std::to_string(v.pte_slots_checked - v.pte_slots_in_bounds) +
			      " walks");
	return dis;
}

} // namespace

std::optional<WalkValidation> validate_walks(const RunResult &result)
{
	if (!result.kernel_view.module)
		return std::nullopt;
	const ModuleKernelView &kv = *result.kernel_view.module;
	const std::optional<WalkSize> &start = result.workload.size_start;
	const double vmas = start && start->vmas ? double(start->vmas) : 1;
	const double lo = double(result.scenario.size_bytes) / 4096, hi = lo + 512 * vmas;
	// the module's PTE slots of a complete walk (ptwalk's own rollup of
	// the stopped workload)
	std::optional<double> slots_ref;
	if (kv.reference_walk && kv.reference_walk->lock_holds == 1)
		slots_ref = double(kv.reference_walk->pte_slots);
	const WalkTally t = tally_walks(result, lo, hi, slots_ref);
	WalkValidation v;
	v.walks = kv.walks_hookable;
	v.matched_once = kv.walks_matched;
	v.module_walks_unmatched = kv.module_walks_unmatched;
	v.walk_proper_timed = t.timed;
	v.walk_proper_le_syscall = t.le;
	v.pte_slots_checked = t.with_slots;
	v.pte_slots_in_bounds = t.inb;
	v.pte_slots_lo = lo;
	v.pte_slots_hi = hi;
	v.short_after_yielding_lock = t.short_yield;
	v.short_unconfirmed = t.short_unconfirmed;
	v.complete_walk_pte_slots = slots_ref;
	v.disagreements = walk_disagreements(v);
	v.agree = v.disagreements.empty();
	return v;
}

namespace {

// A kernel view's attributed stalls, as the backend listed them.
std::vector<ViewStall> stalls_of(const std::vector<KernelStall> &list)
{
	std::vector<ViewStall> out;
	for (const auto &s : list)
		out.push_back({pid_t(s.tid), s.start_ns, s.wait_ns,
			       s.vma_chain_ns.value_or(0) && !s.walker_held_ns.value_or(0),
			       s.late_hold_ns.value_or(0) > 0 || s.at_release.value_or(false)});
	return out;
}

// The view under test: its stalls, how many it attributed, and above which
// wait its list is complete (absent: only as far as it shows).
void set_view(ValidationInput &in, const StallsView &sv)
{
	in.stalls = stalls_of(sv.list);
	if (sv.every_stall)
		in.every_stall = stalls_of(*sv.every_stall);
	else
		in.every_stall.reset();
	in.stalls_total = sv.total.value_or(in.stalls.size());
	in.complete_above_ns = sv.complete_above_ns.value_or(UINT64_MAX);
	in.walk_holds = sv.walk_holds ? &*sv.walk_holds : nullptr;
}

// stalls >= threshold in a also in b (same thread, overlapping); those
// behind VMA locks counted apart (vma, when given; else they are in), and
// those b does not list whose walk part b's start may follow (late)
uint64_t seen_in(const std::vector<ViewStall> &a, const std::vector<ViewStall> &b,
		 uint64_t threshold, uint64_t *total, uint64_t *vma = nullptr,
		 uint64_t *late = nullptr)
{
	uint64_t n = 0;
	*total = 0;
	for (const auto &x : a) {
		if (x.wait_ns < threshold)
			continue;
		if (vma && x.vma) {
			++*vma;
			continue;
		}
		const bool in = std::any_of(b.begin(), b.end(), [&](const ViewStall &y) {
			return y.tid == x.tid && y.start_ns < x.start_ns + x.wait_ns &&
			       x.start_ns < y.start_ns + y.wait_ns;
		});
		if (!in && late && x.late) {
			++*late;
			continue;
		}
		++*total;
		n += in;
	}
	return n;
}

// --cross-check: the same stall split by both views (see ViewsAgreement).
void compare_splits(const StallsView &first, const StallsView &second, ViewsAgreement &v)
{
	constexpr uint64_t slack = ViewsAgreement::kSplitSlackNs;
	auto near = [](uint64_t a, uint64_t b) { return (a > b ? a - b : b - a) <= slack; };
	for (const auto &m : first.list) {
		if (!m.walker_held_ns)
			continue;
		const KernelStall *twin = nullptr;
		int n = 0;
		for (const auto &t : second.list)
			if (t.walker_held_ns && t.tid == m.tid && near(t.start_ns, m.start_ns) &&
			    near(t.wait_ns, m.wait_ns)) {
				twin = &t;
				n++;
			}
		if (n != 1)
			continue;
		v.split_compared++;
		const uint64_t a = *m.walker_held_ns, b = *twin->walker_held_ns;
		const uint64_t d = a > b ? a - b : b - a;
		v.split_max_diff_ns = std::max(v.split_max_diff_ns, d);
		// each view read the clock in its own probe of each event: a
		// boundary within the wait may lie apart by the module's spread
		const uint64_t spread = m.clock_spread_ns.value_or(0);
		if (double(d) <= double(slack) + 0.02 * double(m.wait_ns) + double(spread))
			v.split_agree++;
	}
}

// --cross-check: the tracepoint view judged on its own against the
// victims, and how many stalls of each view the other saw.
void add_second_view(Validation &val, const ValidationInput &in, const StallsView &first,
		     const StallsView &second)
{
	ValidationInput in2 = in;
	in2.view = BackendKind::tracepoint;
	set_view(in2, second);
	in2.second = nullptr;
	in2.vma_view = false; // the tracepoints see no VMA lock
	val.stalls_tracepoint = validate_stalls(in2);
	ViewsAgreement views;
	views.module_in_tracepoint = seen_in(in.stalls, in2.stalls, in.threshold_ns,
					     &views.module_stalls, &views.module_behind_vma_locks,
					     &views.module_late_unseen);
	views.tracepoint_in_module =
		seen_in(in2.stalls, in.stalls, in.threshold_ns, &views.tracepoint_stalls);
	compare_splits(first, second, views);
	val.views = views;
}

// The listed stalls' splits: a stall with any part must have all three,
// summing to its wait; the walker's off-CPU part and the waiter's runnable
// part (disjoint by construction) fit in the walker's.
void check_parts(const StallsView &sv, StallParts &p)
{
	for (const auto &s : sv.list) {
		if (!s.walker_held_ns && !s.others_held_ns && !s.free_ns)
			continue;
		p.checked++;
		if (!s.walker_held_ns || !s.others_held_ns || !s.free_ns ||
		    *s.walker_held_ns + *s.others_held_ns + *s.free_ns != s.wait_ns ||
		    (s.walker_off_cpu_ns && *s.walker_off_cpu_ns > *s.walker_held_ns) ||
		    (s.waiter_runnable_ns &&
		     *s.waiter_runnable_ns + s.walker_off_cpu_ns.value_or(0) > *s.walker_held_ns))
			p.bad++;
	}
}

// The waiter's runnable parts against the kernel's own account: a victim's
// listed stalls (one thread's waits never overlap) can be runnable for no
// longer than its schedstat run_delay over the whole run. The tolerance
// covers the two clocks' reads at the run's edges (the victim reads its
// schedstat after the go and after the stop, the events run longer).
std::optional<StallParts::Runnable> check_runnable(const StallsView &sv,
						   const std::vector<VictimEntry> &victims)
{
	std::map<Victim, uint64_t> sum; // in the victims' order
	bool any = false;
	for (const auto &s : sv.list)
		if (s.waiter_runnable_ns) {
			any = true;
			if (s.waiter.victim) // another waiter has no schedstat of its own
				sum[*s.waiter.victim] += *s.waiter_runnable_ns;
		}
	if (!any)
		return std::nullopt;
	StallParts::Runnable r;
	r.tolerance_ns = 1000000;
	for (const auto &[victim, total] : sum) {
		const VictimEntry *v = find_victim(victims, victim);
		if (!v || !v->run_delay_ns)
			continue;
		r.victims++;
		if (total > *v->run_delay_ns + r.tolerance_ns) {
			r.bad++;
			r.bad_victims.push_back(victim);
		}
	}
	return r;
}

} // namespace

bool walks_under_vma_locks(const RunResult &result)
{
	const std::string_view rel =
		result.kernel.uname ? std::string_view(result.kernel.uname->release) : "";
	for (const WalkEntry &w : result.walks)
		if (locking_fact(w.kind, rel).unit == LockUnit::vma_lock)
			return true;
	return false;
}

void add_validation(RunResult &result, const std::vector<VictimOp> &ops, uint64_t ops_dropped,
		    const KernelView *second)
{
	const KernelView &kv = result.kernel_view;
	const BackendKind view = result.backend;
	// the second view counts only with stalls of its own
	const StallsView *second_sv = second && second->stalls ? &*second->stalls : nullptr;
	Validation val;
	if (kv.stalls && (view == BackendKind::tracepoint || view == BackendKind::module)) {
		ValidationInput in;
		in.view = view;
		in.ops = ops;
		in.ops_dropped = ops_dropped;
		in.vma_lock_unseen = walks_under_vma_locks(result);
		const std::string_view rel =
			result.kernel.uname ? std::string_view(result.kernel.uname->release) : "";
		for (const WalkEntry &w : result.walks)
			if (locking_fact(w.kind, rel).unit == LockUnit::vma_lock)
				in.vma_walk_spans.emplace_back(w.start_ns,
							       w.start_ns + w.duration_ns);
		set_view(in, *kv.stalls);
		// the module's VMA-lock view: its writers' waits are attributed too
		if (kv.vma_locks && kv.vma_locks->available) {
			for (const auto &w : kv.vma_locks->list)
				in.stalls.push_back({w.tid, w.start_ns, w.wait_ns, true});
			in.stalls_total += kv.vma_locks->list.size();
			in.vma_view = true;
		}
		std::vector<ViewStall> second_stalls;
		if (second) {
			if (second_sv)
				second_stalls = stalls_of(second_sv->list);
			in.second = &second_stalls;
		}
		val.stalls = validate_stalls(in);
		if (second)
			add_second_view(val, in, *kv.stalls, second_sv ? *second_sv : StallsView{});
	} else {
		val.stalls.view = view;
		val.stalls.skipped =
			std::string("no kernel view of stalls with the ") + name(view) + " backend";
	}
	val.walks = validate_walks(result);
	if (kv.stalls || second_sv) {
		StallParts parts;
		if (kv.stalls)
			check_parts(*kv.stalls, parts);
		if (second_sv)
			check_parts(*second_sv, parts);
		if (kv.stalls)
			parts.runnable = check_runnable(*kv.stalls, result.victims);
		val.stall_parts = parts;
	}
	result.validation = std::move(val);
}

} // namespace ptwalk
