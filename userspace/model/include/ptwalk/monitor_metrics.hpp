// SPDX-License-Identifier: GPL-2.0
// What `ptwalk monitor --serve/--textfile` exports: walks and the waits they
// caused as Prometheus counters and histograms, labelled by walker comm,
// target comm, kind and lock mode (pids are never labels; comms past a
// limit fold into "other"), plus the monitor's own health. Thread-safe:
// the trace thread adds, the HTTP thread and the textfile writer render.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "ptwalk/hold_kind.hpp"
#include "ptwalk/prom.hpp"
#include "ptwalk/result_enums.hpp"

namespace ptwalk {

struct MonitorHealth {
	uint64_t events = 0;      // mmap_lock events decoded
	uint64_t lost = 0;        // dropped by the kernel (ring full)
	uint64_t unpaired = 0;    // events that did not fit a wait/hold
	uint64_t late = 0;        // arrived after later ones were handed on
	uint64_t probes = 0;      // /proc/PID/cmdline probes done
	uint64_t probe_facts = 0; // probes whose lock event was seen
	uint64_t fd_scans = 0;    // walker fd tables read
	BackendKind backend = BackendKind::tracepoint;
	// bpf: the programs' run time in the kernel (-1: not counted)
	int64_t kernel_run_ns = -1;
};

class MonitorMetrics {
public:
	explicit MonitorMetrics(size_t max_comms);
	// One finished walk. hold/wait in seconds; waits: each waiter's wait.
	// now_s: monotonic seconds, for the recent-max gauges.
	void add_walk(const std::string &walker, const std::string &target, const HoldKind &kind,
		      const std::string &mode, double hold_s, const std::vector<double> &waits_s,
		      size_t waiters_total, bool target_known, bool self, const std::string &basis,
		      double now_s);
	void set_health(const MonitorHealth &h);
	// The exposition text. now_s as above; cpu_s: this process's CPU time.
	std::string render(double now_s, double cpu_s, double start_time_unix_s) const;

	// Longest hold/wait of walks by another process (not the target's own
	// holds) that ended within this window, per walker and target.
	static constexpr double kRecentWindowS = 60;

private:
	using Key = std::tuple<std::string, std::string, std::string, std::string>;
	struct Series {
		uint64_t walks = 0, waiters = 0;
		prom::Histogram hold{prom::walk_seconds_buckets()};
		prom::Histogram wait{prom::walk_seconds_buckets()};
	};
	mutable std::mutex mu_;
	prom::LabelFolder walkers_, targets_;
	std::map<Key, Series> series_;
	std::map<std::string, uint64_t> basis_;
	// per (walker, target): (end time, longest wait, hold) of recent walks
	std::map<std::pair<std::string, std::string>, std::deque<std::tuple<double, double, double>>>
		recent_;
	MonitorHealth health_;
};

} // namespace ptwalk
