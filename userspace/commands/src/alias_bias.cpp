// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/alias_bias.hpp"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <map>
#include <memory>
#include <unistd.h>
#include <vector>

#include "ptwalk/process.hpp"
#include "ptwalk/procfs.hpp"
#include "ptwalk/scanner.hpp"
#include "ptwalk/shared.hpp"
#include "ptwalk/units.hpp"
#include "ptwalk/vma_layout.hpp"
#include "ptwalk/workload.hpp"

namespace ptwalk {

namespace {

// One workload, one kind of walk, `reps` walks with an mmap victim.
struct Measured {
	bool ok = false;
	double ns_per_pte = 0;   // median
	double walk_max_ns = 0;
	double stall_max_ns = 0; // mmap victim, max during walks (0: none seen)
	uint64_t stall_ops = 0;  // victim operations during walks
	uint64_t vmas = 0;       // VMAs of the process
	double read_bytes = 0;   // mean bytes a walk read (read walks)
};

Measured measure(const Scenario &c, const volatile sig_atomic_t *stop, std::string *why)
{
	Measured out;
	Shared *sh = create_shared();
	if (!sh) {
		*why = std::string("shared memory: ") + strerror(errno);
		return out;
	}
	std::unique_ptr<Shared, void (*)(Shared *)> guard(sh, destroy_shared);
	sh->nvictims = unsigned(c.victims.size());
	for (unsigned i = 0; i < sh->nvictims; i++)
		snprintf(sh->victims[i].name, sizeof(sh->victims[i].name), "%s",
			 name(c.victims[i]));
	Child wl = Child::run([&] { return workload_main(c, sh); });
	if (!wl.started()) {
		*why = std::string("fork: ") + strerror(errno);
		return out;
	}
	while (sh->workload_state.load() < kReady && !*stop) {
		if (wl.poll_exit()) {
			*why = std::string("workload: ") + sh->message;
			return out;
		}
		usleep(20000);
	}
	std::string err;
	std::optional<WalkSize> size;
	if (!*stop) {
		size = measure_walk_size(wl.pid(), &err);
		if (auto maps = read_file("/proc/" + std::to_string(wl.pid()) + "/maps", nullptr))
			out.vmas = parse_vma_layout(*maps, "").all.size();
	}
	if (size && !*stop) {
		sh->victims_go = 1;
		// the victim is operating before the first walk (bounded: 2 s)
		for (int i = 0; i < 200 && sh->nvictims && !*stop &&
				sh->victims[0].outside.count() < 20;
		     i++)
			usleep(10000);
		Child sc = Child::run([&] { return scanner_main(c, wl.pid(), sh); });
		sh->scanner_go = 1;
		bool done = !sc.started();
		while (!done && !*stop)
			if (!(done = sc.poll_exit()))
				usleep(20000);
		if (!done)
			sc.stop(SIGTERM, 5000, Child::kUntilReaped);
	}
	sh->stop = 1;
	sh->exit_now = 1;
	wl.stop(0, 5000, Child::kUntilReaped);
	if (*stop) {
		*why = "interrupted";
		return out;
	}
	if (!size) {
		*why = err;
		return out;
	}
	const uint64_t entries = size->entries;
	std::vector<double> per;
	double bytes = 0;
	for (uint32_t i = 0; i < std::min(sh->nwalks.load(), kMaxWalks); i++) {
		const WalkRecord &w = sh->walks[i];
		if (w.error || !entries)
			continue;
		per.push_back(double(w.end_ns - w.start_ns) / double(entries));
		out.walk_max_ns = std::max(out.walk_max_ns, double(w.end_ns - w.start_ns));
		bytes += double(w.bytes);
	}
	if (per.empty()) {
		*why = sh->scanner_message[0] ? sh->scanner_message : "no walk completed";
		return out;
	}
	std::sort(per.begin(), per.end());
	out.ns_per_pte = per[per.size() / 2];
	out.read_bytes = bytes / double(per.size());
	if (sh->nvictims) {
		out.stall_max_ns = double(sh->victims[0].during.max());
		out.stall_ops = sh->victims[0].during.count();
	}
	out.ok = true;
	return out;
}

// Share of a `size` mapping of `vmas` equal VMAs walked under the longest
// hold of `kind`'s lock (1 for unknown kinds: the whole walk).
double hold_fraction(const char *kind, uint64_t size, uint64_t vmas, uint64_t vpr)
{
	const KindLocking *kl = kind_locking(kind);
	if (!kl || !size)
		return 1;
	return double(hold_bytes(kl->unit, size, vmas, (size + vmas - 1) / vmas, vpr)) /
	       double(size);
}

std::string pct(double x)
{
	char b[32];
	snprintf(b, sizeof(b), "%.0f%%", x * 100);
	return b;
}

std::string fmt2(double x)
{
	char b[32];
	snprintf(b, sizeof(b), "%.2f", x);
	return b;
}

} // namespace

uint64_t default_alias_bias_size(uint64_t avail)
{
	const uint64_t fit = avail / 2;
	return std::max<uint64_t>(256ull << 20, std::min<uint64_t>(8ull << 30, fit)) &
	       ~uint64_t((2u << 20) - 1);
}

std::vector<uint64_t> alias_bias_sizes(uint64_t largest)
{
	const uint64_t align = ~uint64_t((2u << 20) - 1);
	largest &= align;
	uint64_t small = largest > (4ull << 30) ? (2ull << 30) : (largest / 2) & align;
	if (small < (2u << 20) || small >= largest)
		return {largest};
	return {small, largest};
}

void judge_alias_bias(Json &cal, double tol)
{
	const Json *sizes = cal.find("sizes");
	if (!sizes)
		return;
	// kind -> per-size cost ratio, stall model ratio
	std::map<std::string, std::vector<std::pair<uint64_t, std::pair<double, double>>>> per;
	std::vector<std::string> order;
	for (size_t i = 0; i < sizes->size(); i++) {
		const Json &s = sizes->at(i);
		const uint64_t sz = uint64_t(s.find("size_bytes") ? s.find("size_bytes")->number().value_or(0) : 0);
		const Json *ks = s.find("kinds");
		if (!ks)
			continue;
		for (const char *k : {"clear_refs", "clear_refs_anon", "clear_refs_file", "softdirty",
				      "smaps", "smaps_rollup", "maps", "numa_maps", "pagemap",
				      "pagemap_scan"}) {
			const Json *e = ks->find(k);
			if (!e)
				continue;
			auto cr = e->find("cost_ratio") ? e->find("cost_ratio")->number() : std::nullopt;
			auto sr = e->find("stall_model_ratio")
					  ? e->find("stall_model_ratio")->number()
					  : std::nullopt;
			if (!cr)
				continue;
			if (!per.count(k))
				order.push_back(k);
			per[k].push_back({sz, {*cr, sr.value_or(NAN)}});
		}
	}
	Json kinds = Json::object(), ratio = Json::object(), sratio = Json::object();
	for (auto &k : order) {
		auto &v = per[k];
		double clo = INFINITY, chi = -INFINITY, slo = INFINITY, shi = -INFINITY;
		double flo = INFINITY, fhi = -INFINITY, csum = 0, ssum = 0;
		bool stall_ok = true;
		for (auto &[sz, p] : v) {
			clo = std::min(clo, p.first);
			chi = std::max(chi, p.first);
			csum += p.first;
			if (std::isnan(p.second) || p.second <= 0) {
				stall_ok = false;
				continue;
			}
			slo = std::min(slo, p.second);
			shi = std::max(shi, p.second);
			ssum += p.second;
			flo = std::min(flo, p.first * p.second);
			fhi = std::max(fhi, p.first * p.second);
		}
		Json e = Json::object();
		e["sizes"] = uint64_t(v.size());
		e["cost_ratio_range"] = Json(Json::Array{clo, chi});
		const double cspread = clo > 0 ? (chi - clo) / clo : INFINITY;
		e["cost_spread"] = std::isfinite(cspread) ? Json(cspread) : Json();
		const bool cost_ok = v.size() >= 2 && cspread <= tol;
		std::string why;
		if (v.size() < 2)
			why = "one size only: agreement between sizes cannot be checked";
		else if (!cost_ok)
			why = "cost ratio differs between sizes by " + pct(cspread) + " (" +
			      fmt2(clo) + " to " + fmt2(chi) + "; more than " + pct(tol) + ")";
		double sspread = INFINITY;
		if (stall_ok && slo > 0) {
			sspread = (shi - slo) / slo;
			e["stall_model_ratio_range"] = Json(Json::Array{slo, shi});
			e["stall_spread"] = sspread;
			e["factor_range"] = Json(Json::Array{flo, fhi});
		} else {
			e["factor_range"] = Json(Json::Array{clo, chi});
			const std::string w = "no stall seen by the mmap victim at some size";
			why += (why.empty() ? "" : "; ") + w;
		}
		const bool s_ok = stall_ok && v.size() >= 2 && sspread <= tol;
		if (stall_ok && v.size() >= 2 && !s_ok)
			why += (why.empty() ? "" : "; ") + std::string("stall vs model differs between sizes by ") +
			       pct(sspread) + " (" + fmt2(slo) + " to " + fmt2(shi) + "; more than " +
			       pct(tol) + ")";
		e["cost_corrected"] = cost_ok;
		e["stall_corrected"] = cost_ok && s_ok;
		if (!why.empty())
			e["why"] = why;
		if (cost_ok)
			ratio[k] = csum / double(v.size());
		if (cost_ok && s_ok)
			sratio[k] = ssum / double(v.size());
		kinds[k] = std::move(e);
	}
	cal["tolerance"] = tol;
	cal["kinds"] = std::move(kinds);
	cal["ratio"] = std::move(ratio);
	cal["stall_ratio"] = std::move(sratio);
}

Json measure_alias_bias(const Scenario &sc, const std::vector<uint64_t> &sizes, int reps,
		     const volatile sig_atomic_t *stop)
{
	Json j = Json::object();
	if (sizes.empty()) {
		j["skipped"] = "no calibration size";
		return j;
	}
	std::vector<const char *> kinds;
	for (const char *k : profile_walks(sc.profile))
		if (std::find_if(kinds.begin(), kinds.end(),
				 [&](const char *x) { return !strcmp(x, k); }) == kinds.end())
			kinds.push_back(k);
	Json per_size = Json::array();
	Json last_d = Json::object(), last_a = Json::object();
	for (uint64_t size : sizes) {
		Json s = Json::object();
		// the run's own physical backing (the struct pages a walk meets,
		// and so how cache-hot they are, are what aliasing changes), but
		// at least two VMAs
		const uint64_t phys = std::max<uint64_t>(
			std::min<uint64_t>(sc.physical, size / 2) & ~uint64_t(4095), 4096);
		s["size_bytes"] = size;
		s["aliased_physical_bytes"] = phys;
		s["aliased_vmas"] = (size + phys - 1) / phys;
		Json ks = Json::object();
		for (const char *k : kinds) {
			Scenario c = sc;
			c.size = size;
			c.victims = {Victim::mmap};
			c.profile = parse_profile(k).value_or(sc.profile);
			c.interval_ns = 10000000; // the victim runs between walks too
			c.duration_ns = 3600ull * 1000000000ull; // bounded by max_iterations
			c.max_iterations = uint64_t(reps);
			// Both sides are the same kind of mapping (a memfd, MAP_SHARED,
			// 4 KiB pages); only the number of times each page is mapped
			// differs, so the cost ratio isolates aliasing from the backing.
			c.backing = Backing::alias;
			std::string why;
			c.physical = size; // every page mapped once: distinct pages, one VMA
			Measured d = measure(c, stop, &why);
			if (!d.ok) {
				j["skipped"] = "distinct-page calibration (" + std::string(k) + ", " +
					       format_bytes(size) + "): " + why;
				return j;
			}
			c.physical = phys;
			Measured a = measure(c, stop, &why);
			if (!a.ok) {
				j["skipped"] = "aliased calibration (" + std::string(k) + ", " +
					       format_bytes(size) + "): " + why;
				return j;
			}
			const uint64_t nvmas = (size + phys - 1) / phys;
			const uint64_t vpr = smaps_vmas_per_read(
				a.vmas ? a.read_bytes / double(a.vmas) : 0);
			Json e = Json::object();
			e["distinct_ns_per_pte"] = d.ns_per_pte;
			e["aliased_ns_per_pte"] = a.ns_per_pte;
			const double cr = a.ns_per_pte > 0 ? d.ns_per_pte / a.ns_per_pte : 0;
			e["cost_ratio"] = cr;
			e["distinct_walk_max_ns"] = uint64_t(d.walk_max_ns);
			e["aliased_walk_max_ns"] = uint64_t(a.walk_max_ns);
			e["distinct_stall_max_ns"] = uint64_t(d.stall_max_ns);
			e["aliased_stall_max_ns"] = uint64_t(a.stall_max_ns);
			e["distinct_stall_ops"] = d.stall_ops;
			e["aliased_stall_ops"] = a.stall_ops;
			// The stall model: a writer waits for the walk of the share of
			// the mapping under the longest hold. Checked on the distinct
			// side against its own walk (so the cost noise cancels); the
			// estimate then takes the cost from the aliased walk x ratio.
			const double pred_d = d.walk_max_ns * hold_fraction(k, size, 1, vpr);
			const double pred_a = a.walk_max_ns * hold_fraction(k, size, nvmas, vpr);
			e["predicted_distinct_stall_ns"] = uint64_t(pred_d);
			e["predicted_aliased_stall_ns"] = uint64_t(pred_a);
			if (pred_d > 0 && d.stall_ops)
				e["stall_model_ratio"] = d.stall_max_ns / pred_d;
			if (pred_a > 0 && a.stall_ops)
				e["aliased_model_ratio"] = a.stall_max_ns / pred_a;
			if (size == sizes.back()) {
				last_d[k] = d.ns_per_pte;
				last_a[k] = a.ns_per_pte;
			}
			ks[k] = std::move(e);
		}
		s["kinds"] = std::move(ks);
		per_size.push(std::move(s));
	}
	// the largest size, as before: what the walks' raw figures compare with
	j["size_bytes"] = sizes.back();
	j["reps"] = reps;
	j["aliased_physical_bytes"] = std::max<uint64_t>(
		std::min<uint64_t>(sc.physical, sizes.back() / 2) & ~uint64_t(4095), 4096);
	j["distinct_ns_per_pte"] = std::move(last_d);
	j["aliased_ns_per_pte"] = std::move(last_a);
	j["sizes"] = std::move(per_size);
	judge_alias_bias(j);
	return j;
}

} // namespace ptwalk
