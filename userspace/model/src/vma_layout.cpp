// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/vma_layout.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <map>

#include "ptwalk/procfs.hpp"
#include "ptwalk/units.hpp"

namespace ptwalk {

namespace {

// Each entry was read in fs/proc/task_mmu.c of Debian's 6.1 source and of a
// current upstream tree (the release the host runs, 6.18, has the same code
// paths); fs/seq_file.c seq_read_iter() for the read() chunking.
constexpr KindLocking kLocking[] = {
	{"clear_refs", LockUnit::whole_walk, "write",
	 "clear_refs_write(): mmap_write_lock_killable() around "
	 "walk_page_range(mm, 0, -1) - the whole address space in one hold "
	 "(5.11+, 29a951dfb3c3 \"mm: fix clear_refs_write locking\"; 6.1 and "
	 "current alike; current also write-locks each VMA, PGWALK_WRLOCK)"},
	{"clear_refs_anon", LockUnit::whole_walk, "write",
	 "clear_refs_write() as clear_refs (value 2)"},
	{"clear_refs_file", LockUnit::whole_walk, "write",
	 "clear_refs_write() as clear_refs (value 3)"},
	{"softdirty", LockUnit::whole_walk, "write",
	 "clear_refs_write() as clear_refs (value 4), then flush_tlb_mm() "
	 "under the same hold"},
	{"smaps_rollup", LockUnit::vma_when_contended, "read",
	 "show_smaps_rollup(): after each VMA, if mmap_lock_is_contended() it "
	 "drops and retakes mmap_read_lock (5.10+, ff9f47f6f00c \"mm: proc: "
	 "smaps_rollup: do not stall write attempts on mmap_lock\"; 6.1 and "
	 "current alike): a writer waits for at most one VMA's walk"},
	{"smaps", LockUnit::read_chunk, "read",
	 "m_start()/m_stop() take and drop mmap_read_lock once per read(); "
	 "seq_read_iter() shows whole VMAs until its PAGE_SIZE buffer is full "
	 "and walks one more that does not fit (6.1 and current; kernels that "
	 "read maps under per-VMA locks still take mmap_lock for smaps): no "
	 "contention check, but never inside a VMA"},
	{"numa_maps", LockUnit::read_chunk, "read",
	 "as smaps (m_start()/m_stop() per read(), walk_page_vma() per VMA)"},
	{"maps", LockUnit::read_chunk, "read",
	 "as smaps, without a page walk (current kernels read maps under "
	 "per-VMA locks and RCU instead)"},
	{"pagemap", LockUnit::pmd_chunk, "read",
	 "pagemap_read(): mmap_read_lock around each PAGEMAP_WALK_SIZE "
	 "(PMD_SIZE, 2 MiB) range, dropped in between (6.1 and current): the "
	 "layout does not matter"},
	{"pagemap_scan", LockUnit::vma_per_call, "read",
	 "do_pagemap_scan(): one mmap_read_lock hold over walk_page_range("
	 "start, end) per ioctl until the output buffer fills (6.7+); ptwalk "
	 "issues one ioctl per VMA, so one VMA per hold"},
};

constexpr uint64_t kPmdBytes = 2ull << 20;
constexpr uint64_t kSeqBuf = 4096;

std::optional<double> num(const Json *j, std::string_view key)
{
	const Json *v = j ? j->find(key) : nullptr;
	return v ? v->number() : std::nullopt;
}

// Mean bytes per VMA of the read walks of `kind` (the seq_file record size).
double record_bytes(const Json &result, std::string_view kind, double vmas)
{
	const Json *walks = result.find("walks");
	if (!walks || vmas <= 0)
		return 0;
	double sum = 0;
	unsigned n = 0;
	for (size_t i = 0; i < walks->size(); i++) {
		const Json &w = walks->at(i);
		const Json *k = w.find("kind");
		if (!k || k->string().value_or("") != kind)
			continue;
		if (auto b = num(&w, "bytes_read"); b && *b > 0) {
			sum += *b;
			n++;
		}
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
		if (sscanf(s.c_str(), "%llx-%llx %*s %*s %*s %*s%n", &a, &b, &off) < 2 ||
		    b < a)
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

Json layout_summary(const VmaLayout &l)
{
	Json j = Json::object();
	uint64_t total = 0;
	std::map<unsigned, std::pair<uint64_t, uint64_t>> hist; // log2 -> count, bytes
	for (auto &v : l.all) {
		total += v.bytes();
		const unsigned b = v.bytes() ? unsigned(std::bit_width(v.bytes()) - 1) : 0;
		hist[b].first++;
		hist[b].second += v.bytes();
	}
	j["vmas"] = uint64_t(l.all.size());
	j["bytes"] = total;
	j["largest_bytes"] = l.largest();
	Json h = Json::array();
	for (auto &[b, cb] : hist)
		h.push(Json(Json::Object{{"from_bytes", uint64_t(1) << b},
					 {"to_bytes", b >= 63 ? UINT64_MAX : (uint64_t(2) << b) - 1},
					 {"count", cb.first},
					 {"bytes", cb.second}}));
	j["size_histogram"] = std::move(h);
	Json m = Json::object();
	m["vmas"] = uint64_t(l.mapping.size());
	m["bytes"] = l.mapping_bytes();
	m["largest_bytes"] =
		l.mapping.empty() ? uint64_t(0) : *std::max_element(l.mapping.begin(), l.mapping.end());
	m["smallest_bytes"] =
		l.mapping.empty() ? uint64_t(0) : *std::min_element(l.mapping.begin(), l.mapping.end());
	j["mapping"] = std::move(m);
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
			       (e.empty() ? std::string(b ? " (at least 4K)" : "") : " (" + e + ")");
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
	for (auto &k : kLocking)
		if (kind == k.kind)
			return &k;
	return nullptr;
}

const char *name(LockUnit u)
{
	switch (u) {
	case LockUnit::whole_walk:
		return "whole_walk";
	case LockUnit::vma_when_contended:
		return "vma_when_contended";
	case LockUnit::read_chunk:
		return "read_chunk";
	case LockUnit::pmd_chunk:
		return "pmd_chunk";
	case LockUnit::vma_per_call:
		return "vma_per_call";
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

constexpr const char *kEstimatedKinds[] = {"clear_refs", "clear_refs_anon", "clear_refs_file",
					    "softdirty", "smaps", "smaps_rollup", "maps",
					    "numa_maps", "pagemap", "pagemap_scan"};

// The estimate from the scaled figures raw_max/raw_p50: as is for distinct
// pages; for aliased ones, corrected by the calibration's ratios when it
// has them for this kind, else a range, else uncorrected (and said so).
void estimate(Json &e, const char *k, bool aliased, const Json *cal, double raw_max,
	      double raw_p50)
{
	if (!aliased) {
		e["status"] = "distinct";
		e["why"] = "distinct pages: no aliasing correction needed";
		e["estimate_max_ns"] = uint64_t(raw_max);
		e["estimate_p50_ns"] = uint64_t(raw_p50);
		return;
	}
	const Json *ratio = cal ? cal->find("ratio") : nullptr;
	const Json *sratio = cal ? cal->find("stall_ratio") : nullptr;
	const Json *ck = cal && cal->find("kinds") ? cal->find("kinds")->find(k) : nullptr;
	auto r = num(ratio, k), sr = num(sratio, k);
	if (r && sr) {
		e["status"] = "corrected";
		e["factor"] = *r * *sr;
		e["estimate_max_ns"] = uint64_t(raw_max * *r * *sr);
		e["estimate_p50_ns"] = uint64_t(raw_p50 * *r * *sr);
	} else if (ck && ck->find("factor_range")) {
		const Json *fr = ck->find("factor_range");
		const double lo = fr->at(0).number().value_or(1);
		const double hi = fr->at(1).number().value_or(1);
		e["status"] = "range";
		e["why"] = ck->find("why") ? ck->find("why")->string().value_or("") : std::string();
		e["estimate_max_range_ns"] =
			Json(Json::Array{uint64_t(raw_max * lo), uint64_t(raw_max * hi)});
		e["estimate_p50_range_ns"] =
			Json(Json::Array{uint64_t(raw_p50 * lo), uint64_t(raw_p50 * hi)});
	} else {
		e["status"] = "uncorrected";
		std::string why = "no calibration for this kind";
		if (cal && cal->find("skipped"))
			why = cal->find("skipped")->string().value_or(why);
		e["why"] = why + ": the aliased per-PTE cost, scaled to the layout";
		e["estimate_max_ns"] = uint64_t(raw_max);
		e["estimate_p50_ns"] = uint64_t(raw_p50);
	}
}

// What one run says of the mapping it measured, and the layout asked for.
struct Layouts {
	double size = 0, all_vmas = 0;
	uint64_t m_vmas = 1, m_largest = 0; // measured
	uint64_t u_vmas = 1, u_largest = 0; // asked for (--layout)
	const Json *mmap_during = nullptr;  // the mmap victim during walks
	unsigned nkinds = 0;                // walk kinds in the run
};

} // namespace

void add_stall_estimates(Json &result, const LayoutSpec &spec)
{
	const Json *scen = result.find("scenario");
	const Json *ws = result.find("walk_summary");
	const Json *wl = result.find("workload");
	const Json *lay = wl ? wl->find("vma_layout") : nullptr;
	const Json *mlay = lay ? lay->find("mapping") : nullptr;
	Layouts L;
	L.size = num(scen, "size_bytes").value_or(0);
	if (!scen || !ws || !mlay || L.size <= 0)
		return;
	const bool aliased = scen->find("aliased") != nullptr;
	const Json *cal = result.find("alias_calibration");
	if (const Json *victims = result.find("victims"); victims && victims->find("mmap"))
		L.mmap_during = victims->find("mmap")->find("during");
	L.m_vmas = uint64_t(num(mlay, "vmas").value_or(1));
	L.m_largest = uint64_t(num(mlay, "largest_bytes").value_or(L.size));
	L.all_vmas = num(lay, "vmas").value_or(0);
	L.u_largest = uint64_t(L.size);
	if (spec.kind == LayoutSpec::aliased) {
		L.u_vmas = L.m_vmas;
		L.u_largest = L.m_largest;
	} else if (spec.kind == LayoutSpec::size) {
		L.u_largest = std::min<uint64_t>(spec.bytes, uint64_t(L.size));
		L.u_vmas = (uint64_t(L.size) + L.u_largest - 1) / L.u_largest;
	}
	for (const char *k : kEstimatedKinds)
		L.nkinds += ws->find(k) != nullptr;

	Json out = Json::object();
	out["layout"] = describe(spec);
	out["layout_vmas"] = L.u_vmas;
	out["layout_largest_vma_bytes"] = L.u_largest;
	Json kinds = Json::object();
	for (const char *k : kEstimatedKinds) {
		const Json *s = ws->find(k);
		const KindLocking *kl = kind_locking(k);
		auto dmax = s ? num(s, "duration_max_ns") : std::nullopt;
		auto dp50 = s ? num(s, "duration_p50_ns") : std::nullopt;
		if (!kl || !dmax || !dp50)
			continue;
		const uint64_t vpr = kl->unit == LockUnit::read_chunk
					     ? smaps_vmas_per_read(record_bytes(result, k, L.all_vmas))
					     : 1;
		const uint64_t size = uint64_t(L.size);
		const uint64_t h_meas = hold_bytes(kl->unit, size, L.m_vmas, L.m_largest, vpr);
		const uint64_t h_user = hold_bytes(kl->unit, size, L.u_vmas, L.u_largest, vpr);
		Json e = Json::object();
		e["lock_unit"] = name(kl->unit);
		e["lock_mode"] = kl->lock_mode;
		e["source"] = kl->source;
		e["layout_dependent"] = layout_dependent(kl->unit);
		if (kl->unit == LockUnit::read_chunk)
			e["vmas_per_read"] = vpr;
		e["measured_hold_bytes"] = h_meas;
		e["layout_hold_bytes"] = h_user;
		const double model_meas = *dmax * double(h_meas) / L.size;
		e["model_stall_max_ns"] = uint64_t(model_meas);
		// the stall measured in this run, for this kind
		std::optional<double> meas;
		if (auto st = num(s, "max_stall_ns"); st && *st > 0) {
			meas = st;
			e["measured_stall_source"] = "backend attribution (walk_summary.max_stall_ns)";
		} else if (L.nkinds == 1 && L.mmap_during &&
			   num(L.mmap_during, "count").value_or(0) > 0) {
			meas = num(L.mmap_during, "max_ns");
			e["measured_stall_source"] = "mmap victim, max during walks";
		}
		if (meas) {
			e["measured_stall_max_ns"] = uint64_t(*meas);
			if (model_meas > 0)
				e["model_check_ratio"] = *meas / model_meas;
		}
		const double frac = double(h_user) / L.size;
		estimate(e, k, aliased, cal, *dmax * frac, *dp50 * frac);
		kinds[k] = std::move(e);
	}
	out["kinds"] = std::move(kinds);
	result["stall_estimate"] = std::move(out);
}

void print_stall_estimates(const Json &r, FILE *out)
{
	const Json *se = r.find("stall_estimate");
	const Json *kinds = se ? se->find("kinds") : nullptr;
	if (!kinds || !kinds->size())
		return;
	auto str = [](const Json *j, std::string_view k) {
		const Json *v = j ? j->find(k) : nullptr;
		return v ? v->string().value_or("") : std::string();
	};
	auto ns = [](std::optional<double> v) {
		return v ? format_ns(uint64_t(*v)) : std::string("-");
	};
	fprintf(out, "\nworst mmap_lock stall: measured here vs estimated for %s "
		     "(%llu VMA%s, largest %s)\n",
		str(se, "layout").c_str(), (unsigned long long)num(se, "layout_vmas").value_or(0),
		num(se, "layout_vmas").value_or(0) == 1 ? "" : "s",
		format_bytes(uint64_t(num(se, "layout_largest_vma_bytes").value_or(0))).c_str());
	fprintf(out, "%-14s %-19s %12s %12s %24s  %s\n", "walk kind", "lock held per",
		"stall here", "model here", "estimate", "status");
	for (const char *k : {"clear_refs", "clear_refs_anon", "clear_refs_file", "softdirty",
			      "smaps", "smaps_rollup", "maps", "numa_maps", "pagemap",
			      "pagemap_scan"}) {
		const Json *e = kinds->find(k);
		if (!e)
			continue;
		std::string unit = str(e, "lock_unit");
		const char *per = unit == "whole_walk"           ? "whole walk"
				  : unit == "vma_when_contended" ? "VMA (writer waits)"
				  : unit == "read_chunk"         ? "read() of VMAs"
				  : unit == "pmd_chunk"          ? "2 MiB range"
								 : "VMA (per ioctl)";
		std::string est;
		if (const Json *rg = e->find("estimate_max_range_ns"))
			est = format_ns(uint64_t(rg->at(0).number().value_or(0))) + " - " +
			      format_ns(uint64_t(rg->at(1).number().value_or(0)));
		else
			est = ns(num(e, "estimate_max_ns"));
		fprintf(out, "%-14s %-19s %12s %12s %24s  %s\n", k, per,
			ns(num(e, "measured_stall_max_ns")).c_str(),
			ns(num(e, "model_stall_max_ns")).c_str(), est.c_str(),
			str(e, "status").c_str());
		if (!str(e, "why").empty() && str(e, "status") != "distinct")
			fprintf(out, "%-14s   %s\n", "", str(e, "why").c_str());
	}
	fprintf(out, "  model: the walk's max duration x the share of the mapping under its "
		     "longest mmap_lock hold (see stall_estimate.kinds.*.source)\n");
}

} // namespace ptwalk
