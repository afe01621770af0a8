// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/vma_layout.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <map>

#include "ptwalk/procfs.hpp"
#include "ptwalk/result_types.hpp"
#include "ptwalk/scenario.hpp"
#include "ptwalk/units.hpp"

namespace ptwalk {

namespace {

constexpr uint64_t kPmdBytes = 2ull << 20;
constexpr uint64_t kSeqBuf = 4096;

// Mean bytes per VMA of the read walks of `kind` (the seq_file record size).
double record_bytes(const std::vector<WalkEntry> &walks, WalkKind kind, double vmas)
{
	if (vmas <= 0)
		return 0;
	double sum = 0;
	unsigned n = 0;
	for (const WalkEntry &w : walks) {
		if (w.kind != kind || !w.bytes_read || *w.bytes_read == 0)
			continue;
		sum += double(*w.bytes_read);
		n++;
	}
	return n ? sum / n / vmas : 0;
}

} // namespace

uint64_t VmaLayout::largest() const
{
	uint64_t m = 0;
	for (auto &v : all)
		m = std::max(m, v.bytes());
	return m;
}

uint64_t VmaLayout::mapping_bytes() const
{
	uint64_t s = 0;
	for (auto b : mapping)
		s += b;
	return s;
}

VmaLayout parse_vma_layout(std::string_view maps, std::string_view mapping_name)
{
	VmaLayout l;
	for_each_line(maps, [&](std::string_view line) {
		unsigned long long a, b;
		int off = 0;
		std::string s(line);
		if (sscanf(s.c_str(), "%llx-%llx %*s %*s %*s %*s%n", &a, &b, &off) < 2 || b < a)
			return;
		Vma v{a, b, ""};
		if (off > 0 && size_t(off) < s.size()) {
			size_t p = s.find_first_not_of(' ', size_t(off));
			if (p != std::string::npos)
				v.name = s.substr(p);
		}
		if (v.name == "[vsyscall]")
			return;
		l.all.push_back(std::move(v));
	});
	if (!mapping_name.empty())
		for (auto &v : l.all)
			if (v.name.find(mapping_name) != std::string::npos)
				l.mapping.push_back(v.bytes());
	if (l.mapping.empty() && !l.all.empty())
		l.mapping.push_back(l.largest());
	return l;
}

LayoutSummary layout_summary(const VmaLayout &l)
{
	LayoutSummary j;
	std::map<unsigned, std::pair<uint64_t, uint64_t>> hist; // log2 -> count, bytes
	for (auto &v : l.all) {
		j.bytes += v.bytes();
		const unsigned b = v.bytes() ? unsigned(std::bit_width(v.bytes()) - 1) : 0;
		hist[b].first++;
		hist[b].second += v.bytes();
	}
	j.vmas = l.all.size();
	j.largest_bytes = l.largest();
	for (auto &[b, cb] : hist)
		j.size_histogram.push_back({uint64_t(1) << b,
					    b >= 63 ? UINT64_MAX : (uint64_t(2) << b) - 1, cb.first,
					    cb.second});
	j.mapping.vmas = l.mapping.size();
	j.mapping.bytes = l.mapping_bytes();
	if (!l.mapping.empty()) {
		j.mapping.largest_bytes = *std::max_element(l.mapping.begin(), l.mapping.end());
		j.mapping.smallest_bytes = *std::min_element(l.mapping.begin(), l.mapping.end());
	}
	return j;
}

std::optional<LayoutSpec> parse_layout_spec(std::string_view s, std::string *err)
{
	if (s == "one")
		return LayoutSpec{LayoutSpec::one, 0};
	if (s == "aliased")
		return LayoutSpec{LayoutSpec::aliased, 0};
	std::string e;
	auto b = parse_size(s, &e);
	if (!b || *b < 4096) {
		if (err)
			*err = "use one, aliased or a VMA size such as 1G" +
			       (e.empty() ? std::string(b ? " (at least 4K)" : "")
					  : " (" + e + ")");
		return std::nullopt;
	}
	return LayoutSpec{LayoutSpec::size, *b};
}

std::string describe(const LayoutSpec &l)
{
	switch (l.kind) {
	case LayoutSpec::one:
		return "one VMA per mapping";
	case LayoutSpec::aliased:
		return "the measured layout";
	case LayoutSpec::size:
		return "VMAs of " + format_bytes(l.bytes);
	}
	return "";
}

const KindLocking *kind_locking(std::string_view kind)
{
	return walk_kind_info(kind);
}

const char *name(LockUnit u)
{
	switch (u) {
#define PTW_X(unit, text)    \
	case LockUnit::unit: \
		return #unit;
		PTW_LOCK_UNITS(PTW_X)
#undef PTW_X
	}
	return "?";
}

const char *held_per(LockUnit u)
{
	switch (u) {
#define PTW_X(unit, text)    \
	case LockUnit::unit: \
		return text;
		PTW_LOCK_UNITS(PTW_X)
#undef PTW_X
	}
	return "?";
}

bool layout_dependent(LockUnit u)
{
	return u == LockUnit::vma_when_contended || u == LockUnit::read_chunk ||
	       u == LockUnit::vma_per_call;
}

uint64_t hold_bytes(LockUnit u, uint64_t mapping_bytes, uint64_t vmas, uint64_t largest_vma,
		    uint64_t vmas_per_read)
{
	largest_vma = std::min(largest_vma, mapping_bytes);
	switch (u) {
	case LockUnit::whole_walk:
		return mapping_bytes;
	case LockUnit::pmd_chunk:
		return std::min(mapping_bytes, kPmdBytes);
	case LockUnit::vma_when_contended:
	case LockUnit::vma_per_call:
		return largest_vma;
	case LockUnit::read_chunk:
		return std::min(mapping_bytes,
				largest_vma * std::max<uint64_t>(1, std::min(vmas, vmas_per_read)));
	case LockUnit::vma_lock:
		return 0;
	}
	return mapping_bytes;
}

uint64_t smaps_vmas_per_read(double record_bytes)
{
	if (!(record_bytes > 0))
		record_bytes = 1536;
	return uint64_t(std::floor(double(kSeqBuf) / record_bytes)) + 1;
}

namespace {

// The estimate from the scaled figures raw_max/raw_p50: as is for distinct
// pages; for aliased ones, corrected by the calibration's ratios when it
// has them for this kind, else a range, else uncorrected (and said so).
void estimate(StallEstimate::Kind &e, bool aliased, const AliasCalibration *cal, double raw_max,
	      double raw_p50)
{
	const auto r = cal ? cal->ratio_of(e.kind) : std::nullopt;
	const auto sr = cal ? cal->stall_ratio_of(e.kind) : std::nullopt;
	const KindVerdict *ck = cal ? cal->verdict(e.kind) : nullptr;
	if (!aliased) {
		e.status = EstimateStatus::distinct;
		e.why = "distinct pages: no aliasing correction needed";
	} else if (r && sr) {
		e.status = EstimateStatus::corrected;
		e.factor = *r * *sr;
		e.estimate_max_ns = uint64_t(raw_max * *r * *sr);
		e.estimate_p50_ns = uint64_t(raw_p50 * *r * *sr);
		return;
	} else if (ck) {
		const auto [lo, hi] = ck->factor_range;
		e.status = EstimateStatus::range;
		e.why = ck->why.value_or("");
		e.estimate_max_range_ns = {uint64_t(raw_max * lo), uint64_t(raw_max * hi)};
		e.estimate_p50_range_ns = {uint64_t(raw_p50 * lo), uint64_t(raw_p50 * hi)};
		return;
	} else {
		e.status = EstimateStatus::uncorrected;
		std::string why = "no calibration for this kind";
		if (cal && cal->skipped)
			why = *cal->skipped;
		e.why = why + ": the aliased per-PTE cost, scaled to the layout";
	}
	e.estimate_max_ns = uint64_t(raw_max);
	e.estimate_p50_ns = uint64_t(raw_p50);
}

// What one run says of the mapping it measured, and the layout asked for.
struct Layouts {
	double size = 0, all_vmas = 0;
	uint64_t m_vmas = 1, m_largest = 0;     // measured
	uint64_t u_vmas = 1, u_largest = 0;     // asked for (--layout)
	const Histogram *mmap_during = nullptr; // the mmap victim during walks
	unsigned nkinds = 0;                    // walk kinds in the run
	bool stall_view = false;                // the backend attributes stalls
};

// The stall this run measured for a kind: the backend's, or for a run of
// one kind the mmap victim's worst during walks. A kind that holds no
// mmap_lock on this kernel (vma_lock) in a run whose backend attributes
// stalls: the backend's, 0 when it attributed none to the kind (the
// victim's worst during such walks is its time off a CPU, not a wait for
// the walk's mmap_lock).
void measured_stall(StallEstimate::Kind &e, const KindSummary &s, const Layouts &L,
		    double model_meas)
{
	if (s.max_stall_ns && *s.max_stall_ns > 0) {
		e.measured_stall_source = MeasuredStallSource::backend;
		e.measured_stall_max_ns = *s.max_stall_ns;
	} else if (e.lock_unit == LockUnit::vma_lock && L.stall_view) {
		e.measured_stall_source = MeasuredStallSource::backend;
		e.measured_stall_max_ns = s.max_stall_ns.value_or(0);
	} else if (L.nkinds == 1 && L.mmap_during && L.mmap_during->count() > 0) {
		e.measured_stall_source = MeasuredStallSource::mmap_victim;
		e.measured_stall_max_ns = L.mmap_during->max();
	}
	if (e.measured_stall_max_ns && model_meas > 0)
		e.model_check_ratio = double(*e.measured_stall_max_ns) / model_meas;
}

// A walk under per-VMA locks may still take mmap_lock briefly, to fall
// back when a VMA cannot be locked: a median hold under 1% of the median
// walk is such a fallback, not a hold over the walk.
constexpr double kFallbackShare = 0.01;

// The locking fact for the run's kernel against the run's lock view
// (lock_view: the backend saw this kind's mmap_lock holds, so a complete
// walk without a hold took none).
StallEstimate::Locking check_locking(const RunResult &result, const KindSummary &s,
				     const LockingFact &f, bool lock_view)
{
	StallEstimate::Locking l;
	if (result.kernel.uname)
		l.release = result.kernel.uname->release;
	l.basis = f.basis;
	l.change = f.change;
	if (s.duration)
		l.walk_p50_ns = s.duration->p50_ns;
	const std::string rel = l.release.empty() ? "an unknown kernel" : l.release;
	const std::string fact =
		f.unit == LockUnit::vma_lock
			? std::string("per-VMA locks, no mmap_lock hold over the walk")
			: std::string("mmap_lock for ") + name(f.lock_mode) + ", " + name(f.unit);
	// a lock view that saw no mmap_lock taken in any complete walk (a 7.3
	// smaps run without a fallback) has seen no hold: that confirms a
	// per-VMA fact, it does not leave it unconfirmed
	const bool untaken = !s.lock_hold && lock_view && s.duration;
	if (!s.lock_hold && !untaken) {
		l.why = "the table says " + fact + " on " + rel +
			"; this run has no lock view (backend " + name(result.backend) +
			") to confirm it";
		return l;
	}
	const KindSummary::LockHold hold =
		s.lock_hold ? *s.lock_hold : KindSummary::LockHold{0, 0, LockMode::none};
	l.observed_mode = hold.mode;
	l.observed_hold_p50_ns = hold.p50_ns;
	const bool brief = l.walk_p50_ns && *l.walk_p50_ns > 0 &&
			   double(hold.p50_ns) < kFallbackShare * double(*l.walk_p50_ns);
	const bool none_seen = hold.mode == LockMode::none || brief;
	if (f.unit == LockUnit::vma_lock)
		l.agrees = none_seen;
	else
		l.agrees = !none_seen && hold.mode == f.lock_mode;
	const std::string seen =
		untaken     ? std::string("no mmap_lock taken in any of its walks")
		: none_seen ? std::string("no mmap_lock hold over its walks (mode ") +
				      name(hold.mode) + ", hold p50 " + format_ns(hold.p50_ns) + ")"
			    : std::string("mmap_lock held for ") + name(hold.mode) + " (hold p50 " +
				      format_ns(hold.p50_ns) + ")";
	l.why = std::string(*l.agrees ? "agrees: " : "DISAGREES: ") + "the table says " + fact +
		" on " + rel;
	if (f.basis == LockBasis::unread && f.change)
		l.why += std::string(" (unread: between ") + f.change->before + " and " +
			 f.change->since + ", where it changed)";
	l.why += "; the run saw " + seen;
	return l;
}

// The longest walk-held part of a VMA writer's wait behind a walk of kind
// (the module's VMA-lock view), if the run has that view.
std::optional<uint64_t> vma_writer_measured(const RunResult &result, WalkKind kind)
{
	const auto &v = result.kernel_view.vma_locks;
	if (!v || !v->available)
		return std::nullopt;
	uint64_t m = 0;
	for (const VmaLockWait &w : v->list)
		if (w.walk < result.walks.size() && result.walks[w.walk].kind == kind)
			m = std::max(m, w.walker_held_ns);
	return m;
}

StallEstimate::Kind estimate_kind(const RunResult &result, const KindSummary &s,
				  const KindLocking &kinfo, const Layouts &L)
{
	const std::string_view rel =
		result.kernel.uname ? std::string_view(result.kernel.uname->release) : "";
	const LockingFact kl = locking_fact(kinfo.id, rel);
	const auto *cal = result.alias_calibration ? &*result.alias_calibration : nullptr;
	const uint64_t vpr =
		kl.unit == LockUnit::read_chunk
			? smaps_vmas_per_read(record_bytes(result.walks, kinfo.id, L.all_vmas))
			: 1;
	const uint64_t size = uint64_t(L.size);
	StallEstimate::Kind e;
	e.kind = kinfo.id;
	// the module sees the holds of the kinds it hooks only; the
	// tracepoints every walker's
	const bool sees_kind = result.backend != BackendKind::module || *kinfo.module;
	e.locking = check_locking(result, s, kl, L.stall_view && sees_kind);
	e.lock_unit = kl.unit;
	e.lock_mode = kl.lock_mode;
	e.source = kl.source;
	e.layout_dependent = layout_dependent(kl.unit);
	if (kl.unit == LockUnit::read_chunk)
		e.vmas_per_read = vpr;
	e.measured_hold_bytes = hold_bytes(kl.unit, size, L.m_vmas, L.m_largest, vpr);
	e.layout_hold_bytes = hold_bytes(kl.unit, size, L.u_vmas, L.u_largest, vpr);
	const double dmax = double(s.duration->max_ns), dp50 = double(s.duration->p50_ns);
	const double model_meas = dmax * double(e.measured_hold_bytes) / L.size;
	e.model_stall_max_ns = uint64_t(model_meas);
	measured_stall(e, s, L, model_meas);
	if (kl.unit == LockUnit::vma_lock) {
		// no mmap_lock hold to scale: no estimate, rather than a wrong one
		e.status = EstimateStatus::no_mmap_lock;
		StallEstimate::Kind::VmaWriter vw;
		vw.model_max_ns = uint64_t(dmax * double(L.m_largest) / L.size);
		vw.measured_max_ns = vma_writer_measured(result, kinfo.id);
		if (!result.scenario.alias)
			vw.estimate_max_ns = uint64_t(dmax * double(L.u_largest) / L.size);
		e.vma_writer = vw;
		e.why = std::string("on ") + std::string(rel) + " " + name(kinfo.id) +
			" walks each VMA under its own VMA read lock (from " + kl.change->since +
			"): an mmap_lock waiter does not wait for the walk; a writer to the "
			"walked VMA does, and every mmap_lock waiter behind it: up to " +
			(vw.estimate_max_ns ? format_ns(*vw.estimate_max_ns) + " for the layout"
					    : std::string("(no estimate for an aliased run)")) +
			" (model here " + format_ns(vw.model_max_ns) + ", measured here " +
			(vw.measured_max_ns ? format_ns(*vw.measured_max_ns)
					    : std::string("- : no VMA-lock view")) +
			")";
		return e;
	}
	const double frac = double(e.layout_hold_bytes) / L.size;
	estimate(e, result.scenario.alias.has_value(), cal, dmax * frac, dp50 * frac);
	return e;
}

} // namespace

void add_stall_estimates(RunResult &result, const LayoutSpec &spec)
{
	const std::optional<LayoutSummary> &lay = result.workload.vma_layout;
	Layouts L;
	L.size = double(result.scenario.size_bytes);
	if (!lay || L.size <= 0)
		return;
	if (const VictimEntry *mmap = find_victim(result.victims, Victim::mmap))
		L.mmap_during = &mmap->during;
	L.stall_view = result.kernel_view.stalls.has_value();
	L.m_vmas = lay->mapping.vmas;
	L.m_largest = lay->mapping.largest_bytes;
	L.all_vmas = double(lay->vmas);
	L.u_largest = uint64_t(L.size);
	if (spec.kind == LayoutSpec::aliased) {
		L.u_vmas = L.m_vmas;
		L.u_largest = L.m_largest;
	} else if (spec.kind == LayoutSpec::size) {
		L.u_largest = std::min<uint64_t>(spec.bytes, uint64_t(L.size));
		L.u_vmas = (uint64_t(L.size) + L.u_largest - 1) / L.u_largest;
	}
	for (const WalkKindInfo &ki : kWalkKindInfo)
		L.nkinds += find_kind(result.walk_summary, ki.id) != nullptr;

	StallEstimate out;
	out.layout = describe(spec);
	out.layout_vmas = L.u_vmas;
	out.layout_largest_vma_bytes = L.u_largest;
	for (const WalkKindInfo &kl : kWalkKindInfo) {
		const KindSummary *s = find_kind(result.walk_summary, kl.id);
		if (s && s->duration)
			out.kinds.push_back(estimate_kind(result, *s, kl, L));
	}
	result.stall_estimate = std::move(out);
}

void print_stall_estimates(const StallEstimate &se, FILE *out)
{
	if (se.kinds.empty())
		return;
	auto ns = [](std::optional<uint64_t> v) { return v ? format_ns(*v) : std::string("-"); };
	fprintf(out,
		"\nworst mmap_lock stall: measured here vs estimated for %s "
		"(%llu VMA%s, largest %s)\n",
		se.layout.c_str(), (unsigned long long)se.layout_vmas,
		se.layout_vmas == 1 ? "" : "s", format_bytes(se.layout_largest_vma_bytes).c_str());
	fprintf(out, "%-14s %-19s %12s %12s %24s  %s\n", "walk kind", "lock held per", "stall here",
		"model here", "estimate", "status");
	for (const StallEstimate::Kind &e : se.kinds) {
		const char *per = held_per(e.lock_unit);
		std::string est;
		if (e.status == EstimateStatus::no_mmap_lock)
			est = "no mmap_lock";
		else if (const auto &rg = e.estimate_max_range_ns)
			est = format_ns(rg->first) + " - " + format_ns(rg->second);
		else
			est = ns(e.estimate_max_ns);
		fprintf(out, "%-14s %-19s %12s %12s %24s  %s\n", name(e.kind), per,
			ns(e.measured_stall_max_ns).c_str(), ns(e.model_stall_max_ns).c_str(),
			est.c_str(), name(e.status));
		if (e.why && !e.why->empty() && e.status != EstimateStatus::distinct)
			fprintf(out, "%-14s   %s\n", "", e.why->c_str());
		// the locking fact is shown where it is not plainly confirmed
		if (e.locking.agrees != std::optional<bool>(true) ||
		    e.locking.basis != LockBasis::table)
			fprintf(out, "%-14s   locking: %s\n", "", e.locking.why.c_str());
	}
	fprintf(out, "  model: the walk's max duration x the share of the mapping under its "
		     "longest mmap_lock hold (see stall_estimate.kinds.*.source)\n");
}

} // namespace ptwalk
