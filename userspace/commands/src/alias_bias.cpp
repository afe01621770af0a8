// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/alias_bias.hpp"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <memory>
#include <optional>
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
	double ns_per_pte = 0; // median
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
		sh->victims[i].victim = c.victims[i];
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
		for (int i = 0;
		     i < 200 && sh->nvictims && !*stop && sh->victims[0].outside.count() < 20; i++)
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
// hold of `kind`'s lock.
double hold_fraction(WalkKind kind, uint64_t size, uint64_t vmas, uint64_t vpr)
{
	if (!size)
		return 1;
	return double(hold_bytes(info(kind).unit, size, vmas, (size + vmas - 1) / vmas, vpr)) /
	       double(size);
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

namespace {

// One kind at one size: distinct pages (each mapped once, one VMA) against
// pages aliased onto `phys` bytes. Empty, and *skipped says why, when
// either side could not be measured.
std::optional<KindCalibration> calibrate_kind(const Scenario &sc, WalkKind k, uint64_t size,
					      uint64_t phys, int reps,
					      const volatile sig_atomic_t *stop,
					      std::string *skipped)
{
	Scenario c = sc;
	c.size = size;
	c.victims = {Victim::mmap};
	c.profile = profile_of(k);
	c.interval_ns = 10000000;                // the victim runs between walks too
	c.duration_ns = 3600ull * 1000000000ull; // bounded by max_iterations
	c.max_iterations = uint64_t(reps);
	// Both sides are the same kind of mapping (a memfd, MAP_SHARED, 4 KiB
	// pages); only the number of times each page is mapped differs, so the
	// cost ratio isolates aliasing from the backing.
	c.backing = Backing::alias;
	std::string why;
	c.physical = size; // every page mapped once: distinct pages, one VMA
	Measured d = measure(c, stop, &why);
	if (!d.ok) {
		*skipped = "distinct-page calibration (" + std::string(name(k)) + ", " +
			   format_bytes(size) + "): " + why;
		return std::nullopt;
	}
	c.physical = phys;
	Measured a = measure(c, stop, &why);
	if (!a.ok) {
		*skipped = "aliased calibration (" + std::string(name(k)) + ", " +
			   format_bytes(size) + "): " + why;
		return std::nullopt;
	}
	const uint64_t nvmas = (size + phys - 1) / phys;
	const uint64_t vpr = smaps_vmas_per_read(a.vmas ? a.read_bytes / double(a.vmas) : 0);
	KindCalibration e;
	e.kind = k;
	e.distinct_ns_per_pte = d.ns_per_pte;
	e.aliased_ns_per_pte = a.ns_per_pte;
	e.cost_ratio = a.ns_per_pte > 0 ? d.ns_per_pte / a.ns_per_pte : 0;
	e.distinct_walk_max_ns = uint64_t(d.walk_max_ns);
	e.aliased_walk_max_ns = uint64_t(a.walk_max_ns);
	e.distinct_stall_max_ns = uint64_t(d.stall_max_ns);
	e.aliased_stall_max_ns = uint64_t(a.stall_max_ns);
	e.distinct_stall_ops = d.stall_ops;
	e.aliased_stall_ops = a.stall_ops;
	// The stall model: a writer waits for the walk of the share of the
	// mapping under the longest hold. Checked on the distinct side against
	// its own walk (so the cost noise cancels); the estimate then takes the
	// cost from the aliased walk x ratio.
	const double pred_d = d.walk_max_ns * hold_fraction(k, size, 1, vpr);
	const double pred_a = a.walk_max_ns * hold_fraction(k, size, nvmas, vpr);
	e.predicted_distinct_stall_ns = uint64_t(pred_d);
	e.predicted_aliased_stall_ns = uint64_t(pred_a);
	if (pred_d > 0 && d.stall_ops)
		e.stall_model_ratio = d.stall_max_ns / pred_d;
	if (pred_a > 0 && a.stall_ops)
		e.aliased_model_ratio = a.stall_max_ns / pred_a;
	return e;
}

// The run's own physical backing (the struct pages a walk meets, and so
// how cache-hot they are, are what aliasing changes), but at least two VMAs.
uint64_t aliased_physical(const Scenario &sc, uint64_t size)
{
	return std::max<uint64_t>(std::min<uint64_t>(sc.physical, size / 2) & ~uint64_t(4095),
				  4096);
}

} // namespace

AliasCalibration measure_alias_bias(const Scenario &sc, const std::vector<uint64_t> &sizes,
				    int reps, const volatile sig_atomic_t *stop)
{
	AliasCalibration cal;
	if (sizes.empty()) {
		cal.skipped = "no calibration size";
		return cal;
	}
	std::vector<WalkKind> kinds;
	for (WalkKind k : profile_walks(sc.profile))
		if (std::find(kinds.begin(), kinds.end(), k) == kinds.end())
			kinds.push_back(k);
	for (uint64_t size : sizes) {
		const uint64_t phys = aliased_physical(sc, size);
		SizeCalibration s{size, phys, (size + phys - 1) / phys, {}};
		for (WalkKind k : kinds) {
			std::string skipped;
			auto e = calibrate_kind(sc, k, size, phys, reps, stop, &skipped);
			if (!e)
				return AliasCalibration{skipped};
			s.kinds.push_back(*e);
		}
		cal.sizes.push_back(std::move(s));
	}
	// the largest size, as before: what the walks' raw figures compare with
	cal.size_bytes = sizes.back();
	cal.reps = reps;
	cal.aliased_physical_bytes = aliased_physical(sc, sizes.back());
	for (const auto &e : cal.sizes.back().kinds) {
		cal.distinct_ns_per_pte.push_back({e.kind, e.distinct_ns_per_pte});
		cal.aliased_ns_per_pte.push_back({e.kind, e.aliased_ns_per_pte});
	}
	judge_alias_bias(cal);
	return cal;
}

} // namespace ptwalk
