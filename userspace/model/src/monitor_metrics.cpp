// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/monitor_metrics.hpp"

#include <algorithm>

namespace ptwalk {

MonitorMetrics::MonitorMetrics(size_t max_comms)
	: walkers_(max_comms, {"other"}), targets_(max_comms, {"other", "unknown"})
{
}

void MonitorMetrics::add_walk(const std::string &walker, const std::string &target,
			      const HoldKind &kind, const std::string &mode, double hold_s,
			      const std::vector<double> &waits_s, size_t waiters_total,
			      bool target_known, bool self, const std::string &basis, double now_s)
{
	std::lock_guard<std::mutex> g(mu_);
	const std::string w = walkers_.fold(walker);
	const std::string t = target_known ? targets_.fold(target) : "unknown";
	Series &s = series_[Key{w, t, prom::sanitize(name(kind)), mode}];
	s.walks++;
	s.waiters += waiters_total;
	s.hold.observe(hold_s);
	double longest = 0;
	for (double x : waits_s) {
		s.wait.observe(x);
		longest = std::max(longest, x);
	}
	basis_[basis]++;
	for (auto &[k, q] : recent_)
		while (!q.empty() && std::get<0>(q.front()) < now_s - kRecentWindowS)
			q.pop_front();
	// the gauges are of walks by another process: not the target's own
	// locks, nor its teardown run by a reader
	if (self || kind == HoldKind{HoldCause::exit})
		return;
	auto &r = recent_[{w, t}];
	r.emplace_back(now_s, longest, hold_s);
}

void MonitorMetrics::set_health(const MonitorHealth &h)
{
	std::lock_guard<std::mutex> g(mu_);
	health_ = h;
}

std::string MonitorMetrics::render(double now_s, double cpu_s, double start_unix_s) const
{
	std::lock_guard<std::mutex> g(mu_);
	prom::Exposition x;
	auto labels = [](const Key &k) {
		return prom::Labels{{"walker", std::get<0>(k)},
				    {"target", std::get<1>(k)},
				    {"kind", std::get<2>(k)},
				    {"mode", std::get<3>(k)}};
	};
	x.family(
		"ptwalk_monitor_walks_total", "counter",
		"mmap_lock holds of at least --min-hold, by walker comm, target comm, kind and lock mode");
	for (const auto &[k, s] : series_)
		x.sample("ptwalk_monitor_walks_total", labels(k), double(s.walks));
	x.family("ptwalk_monitor_walk_hold_seconds", "histogram",
		 "how long each walk held the target's mmap_lock");
	for (const auto &[k, s] : series_)
		s.hold.render(x, "ptwalk_monitor_walk_hold_seconds", labels(k));
	x.family("ptwalk_monitor_walk_wait_seconds", "histogram",
		 "how long each task that waited behind a walk waited for the mmap_lock");
	for (const auto &[k, s] : series_)
		s.wait.render(x, "ptwalk_monitor_walk_wait_seconds", labels(k));
	x.family("ptwalk_monitor_walk_waiters_total", "counter", "tasks that waited behind walks");
	for (const auto &[k, s] : series_)
		x.sample("ptwalk_monitor_walk_waiters_total", labels(k), double(s.waiters));

	auto recent = [&](const char *name, int field) {
		for (const auto &[wt, q] : recent_) {
			double m = 0;
			for (const auto &e : q)
				if (std::get<0>(e) >= now_s - kRecentWindowS)
					m = std::max(m,
						     field == 1 ? std::get<1>(e) : std::get<2>(e));
			x.sample(name, {{"walker", wt.first}, {"target", wt.second}}, m);
		}
	};
	x.family(
		"ptwalk_monitor_recent_wait_max_seconds", "gauge",
		"longest wait behind a walk of target by walker (another process) that ended in the last 60 s (0: none)");
	recent("ptwalk_monitor_recent_wait_max_seconds", 1);
	x.family(
		"ptwalk_monitor_recent_hold_max_seconds", "gauge",
		"longest mmap_lock hold of a walk of target by walker (another process) that ended in the last 60 s (0: none)");
	recent("ptwalk_monitor_recent_hold_max_seconds", 2);
	x.family(
		"ptwalk_monitor_target_basis_total", "counter",
		"walks by how the target was named: probe, mm_owner, fd_table, exit (the mm's teardown after its owner's end) or unknown");
	for (const auto &[b, n] : basis_)
		x.sample("ptwalk_monitor_target_basis_total", {{"basis", b}}, double(n));

	x.family(
		"ptwalk_monitor_events_total", "counter",
		"mmap_lock trace events seen (decoded, or paired in the kernel by the bpf backend)");
	x.sample("ptwalk_monitor_events_total", {}, double(health_.events));
	x.family(
		"ptwalk_monitor_lost_events_total", "counter",
		"trace events the kernel dropped (ring buffer full): walks and waits may be missing");
	x.sample("ptwalk_monitor_lost_events_total", {}, double(health_.lost));
	x.family(
		"ptwalk_monitor_unpaired_events_total", "counter",
		"lock events that did not fit a wait or a hold (lost or started before the monitor)");
	x.sample("ptwalk_monitor_unpaired_events_total", {}, double(health_.unpaired));
	x.family("ptwalk_monitor_probes_total", "counter",
		 "/proc/PID/cmdline reads that identify a process's mm");
	x.sample("ptwalk_monitor_probes_total", {}, double(health_.probes));
	x.family("ptwalk_monitor_probe_facts_total", "counter",
		 "probes whose own mmap_lock event was seen (mm identified)");
	x.sample("ptwalk_monitor_probe_facts_total", {}, double(health_.probe_facts));
	x.family("ptwalk_monitor_fd_scans_total", "counter", "walker fd tables read during a walk");
	x.sample("ptwalk_monitor_fd_scans_total", {}, double(health_.fd_scans));
	x.family("ptwalk_monitor_folded_comms_total", "counter",
		 "walks whose walker or target comm was folded into other (label limit)");
	x.sample("ptwalk_monitor_folded_comms_total", {},
		 double(walkers_.folded() + targets_.folded()));
	x.family("ptwalk_monitor_cpu_seconds_total", "counter",
		 "CPU time (user + system) of the monitor itself");
	x.sample("ptwalk_monitor_cpu_seconds_total", {}, cpu_s);
	if (health_.kernel_run_ns >= 0) {
		x.family(
			"ptwalk_monitor_bpf_run_seconds_total", "counter",
			"run time of the monitor's BPF programs in the kernel (paid by the tasks that take mmap_lock)");
		x.sample("ptwalk_monitor_bpf_run_seconds_total", {},
			 double(health_.kernel_run_ns) / 1e9);
	}
	x.family("ptwalk_monitor_start_time_seconds", "gauge",
		 "when the monitor started (Unix time)");
	x.sample("ptwalk_monitor_start_time_seconds", {}, start_unix_s);
	x.family("ptwalk_monitor_info", "gauge", "backend in use");
	x.sample("ptwalk_monitor_info", {{"backend", name(health_.backend)}}, 1);
	return x.text();
}

} // namespace ptwalk
