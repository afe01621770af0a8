// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/calibrate.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <unistd.h>
#include <vector>

#include "ptwalk/process.hpp"
#include "ptwalk/procfs.hpp"
#include "ptwalk/scanner.hpp"
#include "ptwalk/shared.hpp"
#include "ptwalk/workload.hpp"

namespace ptwalk {

namespace {

// One mapping, `reps` scanner intervals; per kind the median ns/PTE.
// Empty map + *why on failure.
std::map<std::string, double> measure(const Scenario &c, const volatile sig_atomic_t *stop,
				      std::string *why)
{
	std::map<std::string, double> out;
	Shared *sh = create_shared();
	if (!sh) {
		*why = std::string("shared memory: ") + strerror(errno);
		return out;
	}
	std::unique_ptr<Shared, void (*)(Shared *)> guard(sh, destroy_shared);
	pid_t wl = fork_child([&] { return workload_main(c, sh); });
	if (wl < 0) {
		*why = std::string("fork: ") + strerror(errno);
		return out;
	}
	int st;
	while (sh->workload_state.load() < kReady && !*stop) {
		if (child_exited(wl, &st)) {
			*why = std::string("workload: ") + sh->message;
			return out;
		}
		usleep(20000);
	}
	std::string err;
	std::optional<WalkSize> size;
	if (!*stop)
		size = measure_walk_size(wl, &err);
	if (size && !*stop) {
		sh->victims_go = 1;
		pid_t sc = fork_child([&] { return scanner_main(c, wl, sh); });
		sh->scanner_go = 1;
		bool done = sc < 0;
		while (!done && !*stop)
			if (!(done = child_exited(sc, &st)))
				usleep(20000);
		if (!done)
			reap(sc, 5000, SIGTERM);
	}
	sh->stop = 1;
	sh->exit_now = 1;
	reap(wl, 5000, 0);
	if (*stop) {
		*why = "interrupted";
		return out;
	}
	if (!size) {
		*why = err;
		return out;
	}
	const uint64_t entries = size->entries;
	std::map<std::string, std::vector<double>> per;
	for (uint32_t i = 0; i < std::min(sh->nwalks.load(), kMaxWalks); i++) {
		const WalkRecord &w = sh->walks[i];
		if (!w.error && entries)
			per[w.kind].push_back(double(w.end_ns - w.start_ns) / double(entries));
	}
	for (auto &[k, v] : per) {
		std::sort(v.begin(), v.end());
		out[k] = v[v.size() / 2];
	}
	if (out.empty())
		*why = sh->scanner_message[0] ? sh->scanner_message : "no walk completed";
	return out;
}

} // namespace

uint64_t default_calibration_size(uint64_t avail)
{
	const uint64_t fit = avail / 2;
	return std::max<uint64_t>(256ull << 20, std::min<uint64_t>(8ull << 30, fit)) &
	       ~uint64_t((2u << 20) - 1);
}

Json calibrate_alias(const Scenario &sc, uint64_t size, int reps,
		     const volatile sig_atomic_t *stop)
{
	Json j = Json::object();
	Scenario c = sc;
	c.size = size;
	c.victims.clear();
	c.interval_ns = 1000000;
	c.duration_ns = 3600ull * 1000000000ull; // bounded by max_iterations
	c.max_iterations = uint64_t(reps);
	c.populate_threads = sc.populate_threads;

	// Both sides are the same kind of mapping (a memfd, MAP_SHARED, 4 KiB
	// pages); only the number of times each page is mapped differs, so
	// the ratio isolates aliasing from the backing type.
	std::string why;
	c.backing = Backing::alias;
	c.physical = size; // every page mapped once: distinct pages
	auto distinct = measure(c, stop, &why);
	if (distinct.empty()) {
		j["skipped"] = "distinct-page calibration: " + why;
		return j;
	}
	c.backing = Backing::alias;
	c.physical = std::max<uint64_t>(size / 8, 4096);
	auto aliased = measure(c, stop, &why);
	if (aliased.empty()) {
		j["skipped"] = "aliased calibration: " + why;
		return j;
	}
	j["size_bytes"] = size;
	j["reps"] = reps;
	j["aliased_physical_bytes"] = c.physical;
	Json d = Json::object(), a = Json::object(), r = Json::object();
	for (auto &[k, v] : distinct) {
		d[k] = v;
		if (aliased.count(k) && aliased[k] > 0) {
			a[k] = aliased[k];
			r[k] = v / aliased[k];
		}
	}
	j["distinct_ns_per_pte"] = std::move(d);
	j["aliased_ns_per_pte"] = std::move(a);
	j["ratio"] = std::move(r);
	return j;
}

} // namespace ptwalk
