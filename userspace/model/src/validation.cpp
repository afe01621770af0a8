// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/validation.hpp"

#include "ptwalk/result.hpp"

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
	snprintf(buf, sizeof(buf), "%s %llu/%llu = %.3f < %.2f", what,
		 (unsigned long long)a, (unsigned long long)b,
		 b ? double(a) / double(b) : 0.0, min);
	return buf;
}

// Slow operations of the victims during walks, and how many of them the
// view has a stall for (the view's recall).
struct Recall {
	uint64_t ref = 0, recalled = 0, not_slept = 0, before = 0, before_hit = 0;
	uint64_t ambiguous = 0, ambiguous_hit = 0, not_behind = 0;
	Json unexplained = Json::array();
};

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

Recall recall_of(const ValidationInput &in)
{
	std::map<pid_t, std::vector<const ViewStall *>> stalls_by_tid;
	for (const auto &s : in.stalls)
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
			Json u = Json::object();
			u["victim"] = o.victim;
			u["tid"] = o.tid;
			u["start_ns"] = o.start_ns;
			u["ns"] = o.end_ns - o.start_ns;
			r.unexplained.push(std::move(u));
		}
	}
	return r;
}

// The view's stalls above the threshold, and how many a victim's own clock
// confirms (the view's precision).
struct Precision {
	uint64_t checked = 0, confirmed = 0, smallest = UINT64_MAX;
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
		for (const VictimOp *o : by_tid[s.tid])
			if (within(s, *o, in.tol_ns)) {
				p.confirmed++;
				break;
			}
	}
	return p;
}

Json disagreements(const ValidationInput &in, const Recall &r, const Precision &p)
{
	Json dis = Json::array();
	if (r.ref && double(r.recalled) < in.min_recall * double(r.ref))
		dis.push(fmt_ratio("recall", r.recalled, r.ref, in.min_recall));
	if (p.checked && double(p.confirmed) < in.min_precision * double(p.checked))
		dis.push(fmt_ratio("precision", p.confirmed, p.checked, in.min_precision));
	if (in.ops_dropped)
		dis.push("victims' slow-operation log overflowed: " +
			 std::to_string(in.ops_dropped) + " operations not kept");
	// a truncated stall list is complete above the threshold only when its
	// smallest entry is below it (the lists are sorted largest first)
	if (in.stalls_total > in.stalls.size() && p.smallest >= in.threshold_ns &&
	    in.complete_above_ns > in.threshold_ns)
		dis.push("stall list truncated above the threshold: " +
			 std::to_string(in.stalls_total) + " attributed, " +
			 std::to_string(in.stalls.size()) + " listed");
	return dis;
}

} // namespace

Json validate_stalls(const ValidationInput &in)
{
	Recall r = recall_of(in);
	const Precision p = precision_of(in);
	Json v = Json::object();
	v["view"] = in.view;
	v["reference"] = "victims' own clocks: operations >= threshold_ns during walks";
	v["threshold_ns"] = in.threshold_ns;
	v["reference_ops"] = r.ref;
	v["reference_ops_dropped"] = in.ops_dropped;
	v["slow_not_slept"] = r.not_slept;
	v["began_before_walk"] = r.before;
	v["began_before_walk_recalled"] = r.before_hit;
	v["other_victim_preempted"] = r.ambiguous;
	v["other_victim_preempted_recalled"] = r.ambiguous_hit;
	if (in.second)
		v["not_behind_walk"] = r.not_behind;
	v["recalled"] = r.recalled;
	v["recall"] = r.ref ? Json(double(r.recalled) / double(r.ref)) : Json();
	v["unexplained"] = std::move(r.unexplained);
	v["stalls_checked"] = p.checked;
	v["confirmed"] = p.confirmed;
	v["precision"] = p.checked ? Json(double(p.confirmed) / double(p.checked)) : Json();
	Json dis = disagreements(in, r, p);
	v["agree"] = dis.size() == 0;
	v["disagreements"] = std::move(dis);
	return v;
}

namespace {

std::string one_line(const Json &st)
{
	auto n = [&](const char *k) {
		const Json *x = st.find(k);
		return x && x->number() ? uint64_t(*x->number()) : 0;
	};
	const Json *agree = st.find("agree");
	const bool ok = agree && agree->boolean().value_or(false);
	char buf[256];
	snprintf(buf, sizeof(buf),
		 "validation: victims' clocks vs %s: %llu/%llu slow operations "
		 "during walks explained, %llu/%llu stalls >= %.1f ms confirmed: %s",
		 st.find("view") ? st.find("view")->string().value_or("?").c_str() : "?",
		 (unsigned long long)n("recalled"), (unsigned long long)n("reference_ops"),
		 (unsigned long long)n("confirmed"), (unsigned long long)n("stalls_checked"),
		 double(n("threshold_ns")) / 1e6, ok ? "agree" : "DISAGREE");
	std::string out = buf;
	std::string apart;
	auto add = [&](uint64_t v, const char *what) {
		if (v)
			apart += (apart.empty() ? "" : ", ") + std::to_string(v) + " " + what;
	};
	add(n("slow_not_slept"), "did not sleep (preempted)");
	add(n("other_victim_preempted"), "overlapped a preempted victim");
	add(n("began_before_walk"), "began before the walk");
	add(n("not_behind_walk"), "not behind a walker hold (tracepoint view)");
	if (!apart.empty())
		out += "\n  not in the reference: " + apart;
	if (const Json *d = st.find("disagreements"))
		for (size_t i = 0; i < d->size(); i++)
			out += "\n  disagreement: " + d->at(i).string().value_or("");
	return out;
}

} // namespace

std::string validation_line(const Json &val)
{
	std::string out;
	if (const Json *st = val.find("stalls"); st && !st->find("skipped"))
		out = one_line(*st);
	if (const Json *st = val.find("stalls_tracepoint"))
		out += (out.empty() ? "" : "\n") + one_line(*st);
	if (const Json *v = val.find("views")) {
		auto n = [&](const char *k) {
			const Json *x = v->find(k);
			return x && x->number() ? (unsigned long long)*x->number() : 0ull;
		};
		char buf[200];
		snprintf(buf, sizeof(buf),
			 "validation: module vs tracepoint view: %llu/%llu module stalls seen "
			 "by the tracepoints, %llu/%llu tracepoint stalls by the module",
			 n("module_in_tracepoint"), n("module_stalls"), n("tracepoint_in_module"),
			 n("tracepoint_stalls"));
		out += std::string("\n") + buf;
	}
	return out;
}

} // namespace ptwalk

namespace ptwalk {

namespace {

std::optional<double> num_at(const Json &j, std::string_view k)
{
	const Json *x = j.find(k);
	return x ? x->number() : std::nullopt;
}

} // namespace

Json validate_walks(const Json &result)
{
	const Json *walks = result.find("walks");
	const Json *kv = result.find("kernel_view");
	if (!walks || !kv || !kv->find("walks_matched"))
		return Json();
	const double size = result.find("scenario")
				    ? num_at(*result.find("scenario"), "size_bytes").value_or(0)
				    : 0;
	double vmas = 1;
	if (const Json *w = result.find("workload"))
		if (const Json *s = w->find("size_start"))
			vmas = num_at(*s, "vmas").value_or(1);
	const double lo = size / 4096, hi = lo + 512 * vmas;
	// the workload's Rss (uncontended readings) and the module's PTE slots
	// of a complete walk (ptwalk's own rollup of the stopped workload)
	const double rss_ref = double(workload_rss_reference(result));
	std::optional<double> slots_ref;
	if (const Json *r = kv->find("reference_walk"))
		if (num_at(*r, "lock_holds").value_or(0) == 1)
			slots_ref = num_at(*r, "pte_slots");
	uint64_t n = 0, le = 0, timed = 0, inb = 0, with_slots = 0, short_yield = 0;
	uint64_t short_unconfirmed = 0;
	for (size_t i = 0; i < walks->size(); i++) {
		const Json &w = walks->at(i);
		if (!w.find("kernel_call_ns"))
			continue;
		n++;
		if (auto kw = num_at(w, "kernel_walk_ns")) {
			timed++;
			if (*kw <= num_at(w, "syscall_ns").value_or(0))
				le++;
		}
		if (auto s = num_at(w, "pte_slots_visited"); s && lo > 0 && !w.find("error")) {
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
			if (w.find("incomplete")) {
				const double missed =
					(rss_ref - num_at(w, "rollup_rss_bytes").value_or(rss_ref)) / 4096;
				const double slack = double(kRollupRssSlack / 4096);
				const bool fewer = slots_ref ? *slots_ref - *s >= missed - slack : *s < lo;
				if (fewer && num_at(w, "lock_acquisitions").value_or(0) > 1)
					short_yield++;
				else
					short_unconfirmed++;
				continue;
			}
			with_slots++;
			if (*s >= lo && *s <= hi)
				inb++;
		}
	}
	const uint64_t matched = uint64_t(num_at(*kv, "walks_matched").value_or(0));
	const uint64_t hookable = uint64_t(num_at(*kv, "walks_hookable").value_or(0));
	const uint64_t unmatched = uint64_t(num_at(*kv, "module_walks_unmatched").value_or(0));
	Json v = Json::object();
	v["walks"] = hookable;
	v["matched_once"] = matched;
	v["module_walks_unmatched"] = unmatched;
	v["walk_proper_timed"] = timed;
	v["walk_proper_le_syscall"] = le;
	v["pte_slots_checked"] = with_slots;
	v["pte_slots_in_bounds"] = inb;
	v["pte_slots_bounds"] = Json(Json::Array{Json(lo), Json(hi)});
	v["short_after_yielding_lock"] = short_yield;
	v["short_unconfirmed"] = short_unconfirmed;
	if (slots_ref)
		v["complete_walk_pte_slots"] = *slots_ref;
	Json dis = Json::array();
	if (matched != hookable || unmatched)
		dis.push("walks matched " + std::to_string(matched) + " of " +
			 std::to_string(hookable) + ", " + std::to_string(unmatched) +
			 " module records unmatched");
	if (le != timed)
		dis.push("walk proper longer than the syscall in " +
			 std::to_string(timed - le) + " walks");
	if (short_unconfirmed)
		dis.push("smaps_rollup's Rss says VMAs were skipped in " +
			 std::to_string(short_unconfirmed) +
			 " walks the module did not see short (mmap_lock taken once, or PTE"
			 " slots not short of a complete walk by the pages missed)");
	if (inb != with_slots)
		dis.push("PTE slots out of bounds in " + std::to_string(with_slots - inb) +
			 " walks");
	v["agree"] = dis.size() == 0;
	v["disagreements"] = std::move(dis);
	return v;
}

namespace {

std::vector<ViewStall> stalls_of(const Json &kv)
{
	std::vector<ViewStall> out;
	if (const Json *st = kv.find("stalls"))
		for (size_t i = 0; i < st->size(); i++) {
			const Json &s = st->at(i);
			out.push_back({pid_t(num_at(s, "tid").value_or(0)),
				       uint64_t(num_at(s, "start_ns").value_or(0)),
				       uint64_t(num_at(s, "wait_ns").value_or(0))});
		}
	return out;
}

// stalls >= threshold in a also in b (same thread, overlapping)
uint64_t seen_in(const std::vector<ViewStall> &a, const std::vector<ViewStall> &b,
		 uint64_t threshold, uint64_t *total)
{
	uint64_t n = 0;
	*total = 0;
	for (const auto &x : a) {
		if (x.wait_ns < threshold)
			continue;
		++*total;
		for (const auto &y : b)
			if (y.tid == x.tid && y.start_ns < x.start_ns + x.wait_ns &&
			    x.start_ns < y.start_ns + y.wait_ns) {
				n++;
				break;
			}
	}
	return n;
}

} // namespace

// Above which wait a kernel view's stall list is complete (UINT64_MAX:
// only as far as it shows).
static uint64_t complete_above(const Json &kv)
{
	const auto v = num_at(kv, "stalls_complete_above_ns");
	return v && *v >= 0 && *v < 1e18 ? uint64_t(*v) : UINT64_MAX;
}

void add_validation(Json &result, const std::vector<VictimOp> &ops, uint64_t ops_dropped,
		    const Json *second)
{
	const Json *kv = result.find("kernel_view");
	const Json *be = result.find("backend");
	const std::string view = be ? be->string().value_or("") : "";
	Json val = Json::object();
	if (kv && kv->find("stalls") && (view == "tracepoint" || view == "module")) {
		ValidationInput in;
		in.view = view;
		in.ops = ops;
		in.ops_dropped = ops_dropped;
		const Json &st = *kv->find("stalls");
		for (size_t i = 0; i < st.size(); i++) {
			const Json &s = st.at(i);
			in.stalls.push_back({pid_t(num_at(s, "tid").value_or(0)),
					     uint64_t(num_at(s, "start_ns").value_or(0)),
					     uint64_t(num_at(s, "wait_ns").value_or(0))});
		}
		in.stalls_total = uint64_t(num_at(*kv, "stalls_total").value_or(double(st.size())));
		in.complete_above_ns = complete_above(*kv);
		std::vector<ViewStall> second_stalls;
		if (second) {
			second_stalls = stalls_of(*second);
			in.second = &second_stalls;
		}
		val["stalls"] = validate_stalls(in);
		if (second) {
			// the second view judged on its own against the victims
			ValidationInput in2 = in;
			in2.view = "tracepoint";
			in2.stalls = second_stalls;
			in2.stalls_total = uint64_t(
				num_at(*second, "stalls_total").value_or(double(second_stalls.size())));
			in2.complete_above_ns = complete_above(*second);
			in2.second = nullptr;
			val["stalls_tracepoint"] = validate_stalls(in2);
			uint64_t t1 = 0, t2 = 0;
			Json views = Json::object();
			views["module_stalls"] = 0;
			views["module_in_tracepoint"] =
				seen_in(in.stalls, second_stalls, in.threshold_ns, &t1);
			views["module_stalls"] = t1;
			views["tracepoint_in_module"] =
				seen_in(second_stalls, in.stalls, in.threshold_ns, &t2);
			views["tracepoint_stalls"] = t2;
			val["views"] = std::move(views);
		}
	} else {
		Json s = Json::object();
		s["view"] = view;
		s["skipped"] = "no kernel view of stalls with the " + view + " backend";
		val["stalls"] = std::move(s);
	}
	Json w = validate_walks(result);
	if (!w.is_null())
		val["walks"] = std::move(w);
	result["validation"] = std::move(val);
}

} // namespace ptwalk
