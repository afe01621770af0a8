// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/monitor.hpp"
#include "ptwalk/result.hpp"
#include "ptwalk/module_view.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <mutex>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

#include "ptwalk/clock.hpp"
#include "ptwalk/fd.hpp"
#include "ptwalk/http_server.hpp"
#include "ptwalk/monitor_metrics.hpp"
#include "ptwalk/perf_events.hpp"
#include "ptwalk/procfs.hpp"
#include "ptwalk/tracefs.hpp"
#include "monitor_tasks.hpp"
#include "monitor_trace.hpp"

namespace ptwalk {

namespace {

using namespace monitor_detail;

volatile sig_atomic_t g_interrupted = 0;

void on_signal(int) { g_interrupted = 1; }

// Installs SIGINT and SIGTERM handlers for its lifetime, restores the old ones.
class SignalGuard {
public:
	SignalGuard()
	{
		g_interrupted = 0;
		struct sigaction sa;
		std::memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		ok_[0] = sigaction(SIGINT, &sa, &old_[0]) == 0;
		ok_[1] = sigaction(SIGTERM, &sa, &old_[1]) == 0;
	}
	~SignalGuard()
	{
		if (ok_[0])
			sigaction(SIGINT, &old_[0], nullptr);
		if (ok_[1])
			sigaction(SIGTERM, &old_[1], nullptr);
	}
	SignalGuard(const SignalGuard &) = delete;
	SignalGuard &operator=(const SignalGuard &) = delete;

private:
	struct sigaction old_[2];
	bool ok_[2] = {false, false};
};

std::string ms(uint64_t ns)
{
	char b[32];
	snprintf(b, sizeof(b), "%.3f", double(ns) / 1e6);
	return b;
}

double cpu_seconds()
{
	rusage ru{};
	getrusage(RUSAGE_SELF, &ru);
	return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double unix_now()
{
	timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

// A directory the textfile is written to: writable by us, checked up front
// with a probe file so a bad directory fails at start, not after an hour.
std::string check_textfile_dir(const std::string &dir)
{
	struct stat st;
	if (stat(dir.c_str(), &st) != 0)
		return "--textfile " + dir + ": " + strerror(errno);
	if (!S_ISDIR(st.st_mode))
		return "--textfile " + dir + ": not a directory";
	const std::string probe = dir + "/.ptwalk_monitor.probe." + std::to_string(getpid());
	Fd fd(open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
	if (!fd)
		return "--textfile " + dir + ": not writable: " + strerror(errno);
	fd.reset();
	unlink(probe.c_str());
	return "";
}

} // namespace

int run_monitor(const MonitorOptions &o)
{
	if (o.backend == "module" || (o.backend == "auto" && module_loaded()))
		return run_module_monitor(o);
	const bool continuous = !o.serve_host.empty() || !o.textfile_dir.empty();
	if (!o.textfile_dir.empty()) {
		if (auto e = check_textfile_dir(o.textfile_dir); !e.empty()) {
			fprintf(stderr, "ptwalk monitor: %s\n", e.c_str());
			return kMonitorFailed;
		}
	}
	SignalGuard sig;
	MonitorMetrics metrics(o.max_comms);
	const double start_unix = unix_now();
	HttpServer server;
	auto render = [&] { return metrics.render(double(now_ns()) / 1e9, cpu_seconds(), start_unix); };
	if (!o.serve_host.empty()) {
		std::string err;
		if (!server.start(o.serve_host, o.serve_port,
				  [&](const std::string &path) {
					  HttpServer::Response r;
					  if (path == "/metrics") {
						  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
						  r.body = render();
					  } else if (path == "/") {
						  r.body = "ptwalk monitor: metrics at /metrics\n";
					  } else {
						  r.status = 404;
						  r.body = "not found\n";
					  }
					  return r;
				  },
				  &err)) {
			fprintf(stderr, "ptwalk monitor: %s\n", err.c_str());
			return kMonitorFailed;
		}
	}

	std::vector<Walk> walks; // duration mode: kept for the table and JSON
	TaskNames names;
	Prober prober;
	prober.start();
	WalkTracker::Config tc;
	tc.min_hold_ns = o.min_hold_ns;
	tc.prober_tid = prober.tid();
	auto target_comm = [&](pid_t p) {
		std::string c = prober.comm(p);
		if (c.empty())
			c = names.comm(p);
		return c;
	};
	WalkTracker tracker(
		tc,
		[&](const Walk &w) {
			std::vector<double> waits;
			for (const auto &x : w.waiters)
				waits.push_back(double(x.ns()) / 1e9);
			metrics.add_walk(names.comm(w.hold.tgid),
					 w.target_tgid ? target_comm(w.target_tgid) : "",
					 w.kind, lock_mode_name(w.hold.write),
					 double(w.hold.ns()) / 1e9, waits, w.waiters_total,
					 w.target_tgid != 0, w.self, w.basis,
					 double(now_ns()) / 1e9);
			if (!continuous || !o.out_path.empty()) {
				walks.push_back(w);
				if (continuous && walks.size() > 100000)
					walks.erase(walks.begin(), walks.begin() + 50000);
			}
		},
		[&](uint64_t t) { return prober.at(t); });

	MonitorTrace trace;
	MonitorTrace::Hooks hooks;
	tracker.on_task([&](pid_t tid, pid_t tgid) { names.note(tid, tgid); });
	tracker.on_foreign_hold([&](const LockSpan &h) { trace.scan_fds(h.tid, h.tgid, h.start_ns); });
	hooks.lock = [&](const LockEvent &e) { tracker.lock(e); };
	hooks.ended = [&](pid_t tgid, uint64_t t, bool exec) {
		tracker.task_end(tgid, t, exec);
		if (exec)
			prober.queue(tgid);
	};
	hooks.born = [&](pid_t child, uint64_t t) { tracker.task_born(child, t); };
	hooks.fd_evidence = [&](pid_t tid, uint64_t start, WalkFile f) {
		tracker.fd_evidence(tid, start, std::move(f));
	};
	hooks.round = [&](uint64_t at, bool final) {
		tracker.advance(at, final);
		if (tracker.wants_probe()) {
			tracker.clear_wants_probe();
			prober.rescan();
		}
	};
	hooks.comm = [&](pid_t tid, std::string_view c) { names.set(tid, c); };
	hooks.fork = [&](pid_t pid, pid_t tid, pid_t ptid) {
		names.fork(ptid, tid);
		if (pid == tid)
			prober.queue(pid);
	};
	std::string err;
	const uint64_t t0 = now_ns();
	if (!trace.start(std::move(hooks), &err)) {
		fprintf(stderr, "ptwalk monitor: tracepoint backend unavailable: %s\n", err.c_str());
		prober.stop();
		server.stop();
		return kMonitorUnsupported;
	}
	prober.rescan();
	prober.wait_first_scan(5'000'000'000ull);
	auto health = [&] {
		MonitorHealth h;
		h.events = trace.events();
		h.lost = trace.lost();
		h.probes = prober.probes();
		h.fd_scans = trace.fd_scans();
		// unpaired/probe_facts live on the reader thread: read after stop
		return h;
	};
	if (!o.quiet) {
		std::string what = continuous ? "" : " for " + std::to_string(double(o.duration_ns) / 1e9) + " s";
		if (o.duration_ns == 0)
			what = " until stopped";
		fprintf(stderr, "ptwalk monitor: watching mmap_lock holds >= %s ms%s%s%s (Ctrl-C stops)\n",
			ms(o.min_hold_ns).c_str(), what.c_str(),
			o.serve_host.empty() ? "" : (", serving http://" + o.serve_host + ":" +
						     std::to_string(server.port()) + "/metrics").c_str(),
			o.textfile_dir.empty() ? "" : (", textfile " + o.textfile_dir + "/ptwalk_monitor.prom").c_str());
	}
	int rc = 0;
	const std::string textfile = o.textfile_dir.empty() ? "" : o.textfile_dir + "/ptwalk_monitor.prom";
	uint64_t next_text = now_ns();
	const uint64_t end = o.duration_ns ? t0 + o.duration_ns : UINT64_MAX;
	while (!g_interrupted && now_ns() < end) {
		metrics.set_health(health());
		if (!textfile.empty() && now_ns() >= next_text) {
			if (auto e = write_atomically(textfile, render()); !e.empty()) {
				fprintf(stderr, "ptwalk monitor: %s\n", e.c_str());
				rc = kMonitorFailed;
				break;
			}
			next_text = now_ns() + o.textfile_interval_ns;
		}
		uint64_t step = std::min<uint64_t>(end - now_ns() + 1, 200'000'000);
		timespec ts{time_t(step / 1'000'000'000), long(step % 1'000'000'000)};
		nanosleep(&ts, nullptr); // a signal ends the sleep
	}
	trace.stop(); // the tracker emits every pending walk
	prober.stop();
	const uint64_t t1 = now_ns();
	const bool interrupted = g_interrupted != 0;
	MonitorHealth h = health();
	h.unpaired = tracker.unpaired();
	h.probe_facts = tracker.probe_facts();
	metrics.set_health(h);
	server.stop();
	if (!textfile.empty() && rc == 0) {
		if (auto e = write_atomically(textfile, render()); !e.empty()) {
			fprintf(stderr, "ptwalk monitor: %s\n", e.c_str());
			rc = kMonitorFailed;
		}
	}
	if (continuous && o.out_path.empty()) {
		if (!o.quiet)
			fprintf(stderr, "ptwalk monitor: stopped after %.1f s, %llu events, %llu lost\n",
				double(t1 - t0) / 1e9, (unsigned long long)h.events,
				(unsigned long long)h.lost);
		return rc;
	}

	MmIndex mmi;
	Json j = Json::object();
	j["schema"] = "ptwalk.monitor/1";
	j["backend"] = "tracepoint";
	j["duration_ns"] = t1 - t0;
	j["requested_duration_ns"] = o.duration_ns;
	j["interrupted"] = interrupted;
	j["start_ns"] = t0;
	j["min_hold_ns"] = o.min_hold_ns;
	j["min_wait_ns"] = kMonitorMinWaitNs;
	j["events"] = h.events;
	j["unpaired_events"] = h.unpaired;
	j["lost_events"] = h.lost;
	j["probes"] = h.probes;
	j["probe_facts"] = h.probe_facts;
	j["fd_scans"] = h.fd_scans;
	j["lifecycle_events"] = trace.lifecycle();
	j["memcg_field"] = trace.memcg_field();
	j["ring_bytes_per_cpu"] = uint64_t(trace.ring_bytes_per_cpu());
	std::sort(walks.begin(), walks.end(), [](const Walk &a, const Walk &b) {
		return a.hold.start_ns < b.hold.start_ns;
	});
	Json arr = Json::array();
	for (const auto &w : walks) {
		Json x = Json::object();
		x["start_ns"] = w.hold.start_ns;
		x["hold_ns"] = w.hold.ns();
		x["mode"] = lock_mode_name(w.hold.write);
		x["kind"] = w.kind;
		x["mm"] = mmi.label(w.hold.mm);
		Json &ho = x["holder"];
		ho["pid"] = w.hold.tid;
		ho["tgid"] = w.hold.tgid;
		ho["comm"] = names.comm(w.hold.tid);
		ho["process_comm"] = names.comm(w.hold.tgid);
		Json &t = x["target"];
		t["tgid"] = w.target_tgid;
		t["comm"] = w.target_tgid ? target_comm(w.target_tgid) : "?";
		t["basis"] = w.basis;
		t["self"] = w.self;
		if (!w.why.empty())
			t["why"] = w.why;
		if (!w.walk_file.empty())
			x["walk_file"] = w.walk_file;
		x["waiters_total"] = uint64_t(w.waiters_total);
		Json wa = Json::array();
		for (const auto &ws : w.waiters) {
			Json y = Json::object();
			y["pid"] = ws.tid;
			y["tgid"] = ws.tgid;
			y["comm"] = names.comm(ws.tid);
			y["wait_ns"] = ws.ns();
			y["mode"] = lock_mode_name(ws.write);
			wa.push(std::move(y));
		}
		x["waiters"] = std::move(wa);
		arr.push(std::move(x));
	}
	j["holds"] = std::move(arr);

	if (!o.quiet && !continuous) {
		printf("ptwalk monitor: %.2f s%s, %llu events, %llu lost; %zu holds >= %s ms\n",
		       double(t1 - t0) / 1e9, interrupted ? " (interrupted)" : "",
		       (unsigned long long)h.events, (unsigned long long)h.lost, walks.size(),
		       ms(o.min_hold_ns).c_str());
		if (h.lost)
			printf("  warning: the kernel dropped %llu events; holds and waiters may be missing\n",
			       (unsigned long long)h.lost);
		if (!walks.empty())
			printf("%9s %11s %-6s %-12s %-24s %-28s %-6s %s\n", "START_S", "HOLD_MS",
			       "MODE", "KIND", "HOLDER (pid comm)", "TARGET (tgid comm basis)",
			       "MM", "WAITERS");
		MmIndex pmi; // same order as the JSON labels
		const size_t kMaxRows = 200;
		size_t shown = 0;
		for (const auto &w : walks) {
			std::string mm = pmi.label(w.hold.mm);
			if (shown++ >= kMaxRows)
				continue;
			std::string holder = std::to_string(w.hold.tid) + " " + names.comm(w.hold.tid);
			std::string target = w.self ? "self (" + w.basis + ")"
				: w.target_tgid ? std::to_string(w.target_tgid) + " " +
							  target_comm(w.target_tgid) + " (" + w.basis + ")"
				: "unknown";
			std::string waiters = std::to_string(w.waiters_total);
			if (!w.waiters.empty())
				waiters += " (max " + ms(w.waiters[0].ns()) + " ms: " +
					   std::to_string(w.waiters[0].tid) + " " +
					   names.comm(w.waiters[0].tid) + ")";
			printf("%9.3f %11s %-6s %-12s %-24s %-28s %-6s %s\n",
			       double(w.hold.start_ns - std::min(w.hold.start_ns, t0)) / 1e9,
			       ms(w.hold.ns()).c_str(), lock_mode_name(w.hold.write), w.kind.c_str(),
			       holder.c_str(), target.c_str(), mm.c_str(), waiters.c_str());
			if (!w.why.empty())
				printf("%9s   unknown target: %s\n", "", w.why.c_str());
		}
		if (walks.size() > kMaxRows)
			printf("  ... %zu more holds%s\n", walks.size() - kMaxRows,
			       o.out_path.empty() ? " (use an output file to see all)" : " in the JSON");
		fflush(stdout);
	}
	if (!o.out_path.empty()) {
		if (auto werr = write_atomically(o.out_path, j.dump(2) + "\n"); !werr.empty()) {
			fprintf(stderr, "ptwalk monitor: %s\n", werr.c_str());
			return kMonitorFailed;
		}
	}
	return rc;
}

} // namespace ptwalk
