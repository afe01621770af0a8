// SPDX-License-Identifier: GPL-2.0
// The known working set: its sequence of touches and the windows of a
// working-set method judged against it. See working_set.hpp.
#include "ptwalk/working_set.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>

namespace ptwalk {

std::optional<WorkingSetSpec> parse_working_set(std::string_view s, std::string *err)
{
	WorkingSetSpec spec;
	const size_t comma = s.find(',');
	std::string frac(s.substr(0, comma));
	if (comma != std::string_view::npos) {
		auto p = parse_ws_pattern(s.substr(comma + 1));
		if (!p) {
			*err = "unknown pattern '" + std::string(s.substr(comma + 1)) + "' (use " +
			       all_ws_patterns() + ")";
			return std::nullopt;
		}
		spec.pattern = *p;
	}
	const bool pct = !frac.empty() && frac.back() == '%';
	if (pct)
		frac.pop_back();
	char *end = nullptr;
	double f = frac.empty() ? NAN : strtod(frac.c_str(), &end);
	if (frac.empty() || !end || *end || !std::isfinite(f)) {
		*err = "'" + std::string(s) + "' is not SHARE[,PATTERN] (0.25, 25%, 0.25,hot)";
		return std::nullopt;
	}
	if (pct)
		f /= 100;
	if (!(f > 0 && f <= 1)) {
		*err = "the share of pages must be in (0, 1] (0% < share <= 100%)";
		return std::nullopt;
	}
	spec.fraction = f;
	return spec;
}

std::string working_set_conflict(const Scenario &sc)
{
	if (is_kernel_monitor(sc.profile) && !sc.working_set)
		return std::string("--scanner ") + name(sc.profile) +
		       " needs --working-set: its estimate is judged against a known working set";
	if (!sc.working_set)
		return "";
	for (Victim v : sc.victims)
		if (v == Victim::read || v == Victim::write)
			return std::string("--working-set: the ") + name(v) +
			       " victim touches the mapping's pages at random, which the "
			       "working set's truth cannot allow (use --victims with fault, "
			       "mmap, vma, or none)";
	if (sc.backing == Backing::zeropage)
		return "--working-set writes its pages, which --backing zeropage "
		       "must not have";
	return "";
}

namespace {

// splitmix64: the rounds' multipliers and offsets
uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t mulmod(uint64_t a, uint64_t b, uint64_t n)
{
	return uint64_t((unsigned __int128)a * b % n);
}

} // namespace

TouchSequence::TouchSequence(uint64_t pages, const WorkingSetSpec &spec)
	: pages_(std::max<uint64_t>(pages, 1)), pattern_(spec.pattern)
{
	const double k = std::round(spec.fraction * double(pages_));
	per_round_ = std::clamp<uint64_t>(uint64_t(k), 1, pages_);
}

// Round r touches page (mul * x + add) % pages for x = shift + i, i < per_round:
// an affine map with mul coprime to pages is a permutation, so a round's
// pages are distinct, spread over the mapping, and cheap to regenerate.
TouchSequence::Round TouchSequence::round(uint64_t r) const
{
	// hot and drift keep round 0's map; uniform draws one per round
	const uint64_t key = pattern_ == WsPattern::uniform ? r : 0;
	Round o{};
	o.mul = pages_ == 1 ? 1 : (mix(key * 2 + 1) % pages_) | 1;
	while (pages_ > 1 && std::gcd(o.mul, pages_) != 1)
		o.mul = (o.mul + 2) % pages_;
	o.add = pages_ == 1 ? 0 : mix(key * 2 + 2) % pages_;
	// drift: the hot share moves on by an eighth of itself each round
	if (pattern_ == WsPattern::drift)
		o.shift = mulmod(r, std::max<uint64_t>(1, per_round_ / 8), pages_);
	return o;
}

uint64_t TouchSequence::page(uint64_t pos) const
{
	const Round o = round(pos / per_round_);
	const uint64_t x = (o.shift + pos % per_round_) % pages_;
	return (mulmod(o.mul, x, pages_) + o.add) % pages_;
}

uint64_t TouchSequence::distinct(uint64_t p0, uint64_t p1) const
{
	if (p1 <= p0)
		return 0;
	std::vector<uint64_t> seen((pages_ + 63) / 64);
	uint64_t n = 0;
	// a round's map once per round, not per touch
	for (uint64_t pos = p0; pos < p1;) {
		const uint64_t r = pos / per_round_;
		const uint64_t last = std::min(p1, (r + 1) * per_round_);
		const Round o = round(r);
		for (; pos < last; pos++) {
			const uint64_t x = (o.shift + pos % per_round_) % pages_;
			const uint64_t pg = (mulmod(o.mul, x, pages_) + o.add) % pages_;
			uint64_t &w = seen[pg / 64];
			const uint64_t bit = 1ull << (pg % 64);
			n += !(w & bit);
			w |= bit;
		}
	}
	return n;
}

namespace {

bool clears_refs(WalkKind k)
{
	return k == WalkKind::clear_refs || k == WalkKind::clear_refs_anon ||
	       k == WalkKind::clear_refs_file;
}

double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	const size_t n = v.size();
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double range_error(uint64_t est, uint64_t lo, uint64_t hi)
{
	if (est > hi)
		return hi ? double(est - hi) / double(hi) : INFINITY;
	if (est < lo)
		return -double(lo - est) / double(lo);
	return 0;
}

} // namespace

void ws_judge(WorkingSetResult *r, const TouchSequence &seq, const std::vector<WsWalk> &walks)
{
	r->pages = seq.pages();
	r->per_round = seq.per_round();
	r->method = "clear_refs+smaps_referenced";
	const WsWalk *cleared = nullptr;
	for (const auto &w : walks) {
		if (clears_refs(w.kind)) {
			cleared = &w;
			continue;
		}
		if (w.kind != WalkKind::smaps || !w.referenced_bytes || !cleared)
			continue;
		WsWindow win;
		win.start_ns = cleared->start_ns;
		win.end_ns = w.end_ns;
		win.estimate_bytes = *w.referenced_bytes;
		// the touch in progress at a read of the position may fall on
		// either side of the walk's edge: lo leaves it out, hi keeps it
		win.truth_lo_bytes =
			seq.distinct(cleared->pos_after + 1, w.pos_before) * r->page_bytes;
		win.touch_first = cleared->pos_before;
		win.touch_end = std::max(w.pos_after + 1, win.touch_first);
		win.truth_hi_bytes = seq.distinct(win.touch_first, win.touch_end) * r->page_bytes;
		win.error = range_error(win.estimate_bytes, win.truth_lo_bytes, win.truth_hi_bytes);
		win.walk_ns = cleared->syscall_ns + w.syscall_ns;
		r->windows.push_back(win);
		cleared = nullptr;
	}
	if (r->windows.empty()) {
		r->why = "no clear_refs walk followed by a smaps walk: the scanner's profile "
			 "has no working-set window (use --scanner wss or cadvisor)";
		return;
	}
	WorkingSetResult::Accuracy a;
	std::vector<double> abs;
	double sum = 0;
	for (const auto &w : r->windows) {
		a.windows++;
		a.within += w.error == 0;
		abs.push_back(std::fabs(w.error));
		sum += w.error;
	}
	a.median_abs_error = median(abs);
	a.max_abs_error = *std::max_element(abs.begin(), abs.end());
	a.bias = sum / double(abs.size());
	r->accuracy = a;
	WorkingSetResult::Cost c;
	std::vector<double> walk;
	uint64_t busy = 0, span = 0;
	for (const auto &w : r->windows) {
		walk.push_back(double(w.walk_ns));
		busy += w.walk_ns;
		span += w.end_ns - w.start_ns;
	}
	c.walk_ns_p50 = uint64_t(median(walk));
	c.ns_per_gib_p50 = median(walk) / (double(r->pages * r->page_bytes) / double(1ull << 30));
	c.core_share = span ? double(busy) / double(span) : 0;
	r->cost = c;
}

namespace {

// Touches surely done by t: the largest count seen at or before it.
uint64_t done_by(const std::vector<TouchPoint> &tl, uint64_t t)
{
	uint64_t n = 0;
	for (const TouchPoint &p : tl)
		if (p.t_ns <= t)
			n = std::max(n, p.count);
	return n;
}

// At most the touches done by t: the smallest count seen at or after it
// (the last count seen when none was).
uint64_t done_at_most(const std::vector<TouchPoint> &tl, uint64_t t)
{
	uint64_t n = UINT64_MAX, last = 0;
	for (const TouchPoint &p : tl) {
		last = std::max(last, p.count);
		if (p.t_ns >= t)
			n = std::min(n, p.count);
	}
	return n == UINT64_MAX ? last : n;
}

} // namespace

// Read k caught the first apply of the scheme after its request (6.12: after
// the sampling that takes it), and returned at most return_slack after it:
// apply_k in [B0, B1] = [max(write_k, return_k - slack), return_k]. Read k
// caught the aggregation right after read k-1's when its request was in
// before that one could end: write_k + sample <= A0 + aggr, with A0 the
// earliest apply_(k-1) can be. The aggregation ran from apply_(k-1) to
// apply_k: touches surely in it are those done after A1 = return_(k-1)
// and by B0 (the truth's low end), touches perhaps in it those after A0
// and by B1 (its high end). ws_judge() takes them as it takes a clear_refs
// walk (A0..A1) and the smaps walk after it (B0..B1), the counts at those
// instants from the toucher's timeline: low end [done_at_most(A1) + 1,
// done_by(B0)), high end [done_by(A0), done_at_most(B1) + 1).
void ws_judge_damon(WorkingSetResult *r, const TouchSequence &seq,
		    const std::vector<DamonRead> &reads, const std::vector<TouchPoint> &timeline,
		    WorkingSetResult::Damon d)
{
	std::vector<TouchPoint> tl = timeline;
	for (const DamonRead &c : reads) {
		tl.push_back({c.write_ns, c.pos_before});
		tl.push_back({c.return_ns, c.pos_after});
	}
	const uint64_t slack = d.return_slack_us * 1000;
	auto edge = [&](const DamonRead &c, WalkKind k, std::optional<uint64_t> est, uint64_t cpu) {
		const uint64_t lo =
			std::max(c.write_ns, c.return_ns > slack ? c.return_ns - slack : 0);
		return WsWalk{k,   lo, c.return_ns, done_by(tl, lo), done_at_most(tl, c.return_ns),
			      est, cpu};
	};
	std::vector<WsWalk> walks;
	std::vector<double> regions;
	for (size_t k = 0; k < reads.size(); k++) {
		const DamonRead &c = reads[k];
		regions.push_back(c.nr_regions);
		if (k > 0) {
			const DamonRead &p = reads[k - 1];
			const uint64_t a0 =
				std::max(p.write_ns, p.return_ns > slack ? p.return_ns - slack : 0);
			if (c.write_ns + d.sample_us * 1000 <= a0 + d.aggr_us * 1000) {
				const uint64_t cpu = c.kdamond_cpu_ns > p.kdamond_cpu_ns
							     ? c.kdamond_cpu_ns - p.kdamond_cpu_ns
							     : 0;
				walks.push_back(edge(c, WalkKind::smaps, c.accessed_bytes, cpu));
			} else {
				d.windows_skipped++;
			}
		}
		walks.push_back(edge(c, WalkKind::clear_refs, std::nullopt, 0));
	}
	d.reads = unsigned(reads.size());
	if (reads.size() > 1 && reads.back().kdamond_cpu_ns > reads.front().kdamond_cpu_ns)
		d.kdamond_cpu_ns = reads.back().kdamond_cpu_ns - reads.front().kdamond_cpu_ns;
	d.regions_p50 = regions.empty() ? 0 : uint32_t(median(regions));
	ws_judge(r, seq, walks);
	r->method = "damon_vaddr";
	if (r->windows.empty())
		r->why = "no two reads of DAMON's regions one aggregation apart (" +
			 std::to_string(reads.size()) + " reads, " +
			 std::to_string(d.windows_skipped) + " a missed aggregation apart)";
	r->damon = d;
}

void to_json(Json::Value &j, const WorkingSetResult &r)
{
	j = Json::Value::object();
	j["fraction"] = r.spec.fraction;
	j["pattern"] = name(r.spec.pattern);
	j["interval_ns"] = r.interval_ns;
	j["pages"] = r.pages;
	j["per_round"] = r.per_round;
	j["page_bytes"] = r.page_bytes;
	j["touches"] = r.touches;
	j["touch_ns"] = r.touch_ns;
	j["achieved_share"] = r.achieved_share;
	j["method"] = r.method;
	Json::Value wins = Json::Value::array();
	for (const auto &w : r.windows) {
		Json::Value x = Json::Value::object();
		x["start_ns"] = w.start_ns;
		x["end_ns"] = w.end_ns;
		x["estimate_bytes"] = w.estimate_bytes;
		x["truth_lo_bytes"] = w.truth_lo_bytes;
		x["truth_hi_bytes"] = w.truth_hi_bytes;
		x["touch_first"] = w.touch_first;
		x["touch_end"] = w.touch_end;
		x["error"] = w.error;
		x["walk_ns"] = w.walk_ns;
		wins.push_back(x);
	}
	j["windows"] = wins;
	if (r.accuracy) {
		const auto &a = *r.accuracy;
		j["accuracy"] = {{"windows", a.windows},
				 {"within_truth", a.within},
				 {"median_abs_error", a.median_abs_error},
				 {"bias", a.bias},
				 {"max_abs_error", a.max_abs_error}};
	}
	if (r.cost)
		j["cost"] = {{"walk_ns_p50", r.cost->walk_ns_p50},
			     {"ns_per_gib_p50", r.cost->ns_per_gib_p50},
			     {"core_share", r.cost->core_share}};
	put_optional(j, "why", r.why);
	if (r.damon) {
		const auto &d = *r.damon;
		j["damon"] = {{"sample_us", d.sample_us},
			      {"aggr_us", d.aggr_us},
			      {"update_us", d.update_us},
			      {"return_slack_us", d.return_slack_us},
			      {"kdamond_pid", d.kdamond_pid},
			      {"kdamond_cpu_ns", d.kdamond_cpu_ns},
			      {"reads", d.reads},
			      {"windows_skipped", d.windows_skipped},
			      {"update_timeouts", d.update_timeouts},
			      {"regions_p50", d.regions_p50}};
	}
}

void print_working_set(const WorkingSetResult &r, FILE *out)
{
	fprintf(out,
		"\nworking set (the truth): %.3g%% %s of %llu pages, %llu per %.3g ms round; "
		"achieved %.3g%% per round\n",
		r.spec.fraction * 100, name(r.spec.pattern), (unsigned long long)r.pages,
		(unsigned long long)r.per_round, double(r.interval_ns) / 1e6,
		r.achieved_share * 100);
	if (!r.accuracy) {
		fprintf(out, "  %s: no estimate: %s\n", r.method.c_str(),
			r.why ? r.why->c_str() : "");
		return;
	}
	const auto &a = *r.accuracy;
	fprintf(out,
		"  %s: %u windows, %u within the truth; error median %.1f%%, bias %+.1f%%, "
		"worst %.1f%%\n",
		r.method.c_str(), a.windows, a.within, a.median_abs_error * 100, a.bias * 100,
		a.max_abs_error * 100);
	if (r.cost)
		fprintf(out,
			"  cost: %.3g ms of %s a window (median; %.3g ms per GiB), %.2g%% of a core\n",
			double(r.cost->walk_ns_p50) / 1e6, r.damon ? "the kdamond's CPU" : "walks",
			r.cost->ns_per_gib_p50 / 1e6, r.cost->core_share * 100);
	if (r.damon)
		fprintf(out,
			"  DAMON: sampling %.3g ms, aggregation %.3g ms, %u reads (%u windows "
			"skipped: a missed aggregation), %u regions (median)\n",
			double(r.damon->sample_us) / 1e3, double(r.damon->aggr_us) / 1e3,
			r.damon->reads, r.damon->windows_skipped, r.damon->regions_p50);
	if (r.damon && r.damon->update_timeouts)
		fprintf(out,
			"  DAMON: %u reads empty: the kernel ended the update on its timeout "
			"before an apply (before 6.14)\n",
			r.damon->update_timeouts);
}

} // namespace ptwalk
