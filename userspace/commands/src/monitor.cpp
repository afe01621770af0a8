// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/monitor.hpp"
#include "ptwalk/result.hpp"
#include "ptwalk/module_view.hpp"

#include <algorithm>
#include <optional>
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
#include <linux/capability.h>
#include <mutex>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

#include "ptwalk/capabilities.hpp"
#include "ptwalk/clock.hpp"
#include "ptwalk/fd.hpp"
#include "ptwalk/http_server.hpp"
#include "ptwalk/monitor_metrics.hpp"
#include "ptwalk/perf_events.hpp"
#include "ptwalk/procfs.hpp"
#include "ptwalk/signals.hpp"
#include "ptwalk/task_names.hpp"
#include "ptwalk/tracefs.hpp"
#include "ptwalk/monitor_json.hpp"
#include "monitor_tasks.hpp"
#include "monitor_trace.hpp"

namespace ptwalk {

namespace {

using namespace monitor_detail;

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

// One `ptwalk monitor` run on the tracepoint backend: the trace feeds the
// model (WalkTracker), each walk the model finds goes to the metrics and,
// for the table and the JSON, to walks_.
class Session {
public:
	explicit Session(const MonitorOptions &o)
		: o_(o), continuous_(!o.serve_host.empty() || !o.textfile_dir.empty()),
		  metrics_(o.max_comms), start_unix_(unix_now()),
		  textfile_(o.textfile_dir.empty() ? "" : o.textfile_dir + "/ptwalk_monitor.prom")
	{
	}
	bool continuous() const { return continuous_; }

	// The HTTP endpoint, when asked for. false: said why on stderr.
	bool serve()
	{
		if (o_.serve_host.empty())
			return true;
		std::string err;
		WebConfig web;
		if (!o_.web_config.empty() && !load_web_config(o_.web_config, &web, &err)) {
			fprintf(stderr, "ptwalk monitor: --web-config %s: %s\n",
				o_.web_config.c_str(), err.c_str());
			return false;
		}
		https_ = web.tls();
		if (server_.start(
			    o_.serve_host, o_.serve_port,
			    [this](const std::string &path) { return page(path); }, &err, web))
			return true;
		fprintf(stderr, "ptwalk monitor: %s\n", err.c_str());
		return false;
	}

	// The prober, the model and the trace. false: the tracepoint backend
	// is unavailable (said on stderr, everything started is stopped).
	bool start()
	{
		prober_.start();
		WalkTracker::Config tc;
		tc.min_hold_ns = o_.min_hold_ns;
		tc.prober_tid = prober_.tid();
		tracker_.emplace(
			tc, [this](const Walk &w) { on_walk(w); },
			[this](uint64_t t) { return prober_.at(t); });
		std::string err;
		BpfLockSpansConfig bc;
		bc.min_hold_ns = o_.min_hold_ns;
		bc.min_wait_ns = kMonitorMinWaitNs;
		bc.prober_tid = prober_.tid();
		bc.run_time_stats = o_.bpf_run_time;
		const bool want_bpf = o_.backend == MonitorBackend::bpf ||
				      o_.backend == MonitorBackend::automatic;
		bool ok = trace_.start(hooks(), want_bpf ? &bc : nullptr, &err);
		std::string bpf_err;
		if (!ok && o_.backend == MonitorBackend::automatic && trace_.bpf_failed()) {
			// every event through perf instead: dearer, the same answers
			bpf_err = err;
			ok = trace_.start(hooks(), nullptr, &err);
			if (ok) {
				bpf_unavailable_ = bpf_err;
				if (!o_.quiet)
					fprintf(stderr,
						"ptwalk monitor: BPF unavailable (%s); "
						"reading every mmap_lock event through perf\n",
						bpf_err.c_str());
			}
		}
		if (!ok) {
			if (!bpf_err.empty())
				fprintf(stderr,
					"ptwalk monitor: bpf and tracepoint backends unavailable: "
					"bpf: %s; tracepoint: %s\n",
					bpf_err.c_str(), err.c_str());
			else
				fprintf(stderr, "ptwalk monitor: %s backend unavailable: %s\n",
					name(o_.backend == MonitorBackend::bpf
						     ? BackendKind::bpf
						     : BackendKind::tracepoint),
					err.c_str());
			prober_.stop();
			server_.stop();
			return false;
		}
		// The window starts once every event is watched: loading and
		// attaching the BPF programs and enabling the perf events took
		// 0.6 s on a loaded 2-CPU host, and no hold of that time can be
		// in the result.
		t0_ = now_ns();
		prober_.rescan();
		prober_.wait_first_scan(5'000'000'000ull);
		return true;
	}

	// Until the duration ends or a signal; the textfile rewritten on its
	// interval. 0, or kMonitorFailed when the textfile cannot be written.
	int watch()
	{
		if (!o_.quiet)
			announce();
		uint64_t next_text = now_ns();
		const uint64_t end = o_.duration_ns ? t0_ + o_.duration_ns : UINT64_MAX;
		while (!StopSignals::caught() && now_ns() < end) {
			metrics_.set_health(health());
			published_.store(true, std::memory_order_release);
			if (!textfile_.empty() && now_ns() >= next_text) {
				if (!write_textfile())
					return kMonitorFailed;
				next_text = now_ns() + o_.textfile_interval_ns;
			}
			uint64_t step = std::min<uint64_t>(end - now_ns() + 1, 200'000'000);
			timespec ts{time_t(step / 1'000'000'000), long(step % 1'000'000'000)};
			nanosleep(&ts, nullptr); // a signal ends the sleep
		}
		return 0;
	}

	// Stops the trace (the model emits every pending walk) and the rest;
	// the final textfile. rc: what watch() returned.
	int stop(int rc)
	{
		trace_.stop();
		prober_.stop();
		t1_ = now_ns();
		interrupted_ = StopSignals::caught() != 0;
		h_ = health();
		h_.unpaired = tracker_->unpaired() + trace_.counts().unpaired_in_kernel;
		h_.probe_facts = tracker_->probe_facts();
		metrics_.set_health(h_);
		server_.stop();
		if (!textfile_.empty() && rc == 0 && !write_textfile())
			rc = kMonitorFailed;
		std::sort(walks_.begin(), walks_.end(), [](const Walk &a, const Walk &b) {
			return a.hold.start_ns < b.hold.start_ns;
		});
		return rc;
	}

	void print_stopped() const
	{
		fprintf(stderr, "ptwalk monitor: stopped after %.1f s, %llu events, %llu lost\n",
			double(t1_ - t0_) / 1e9, (unsigned long long)h_.events,
			(unsigned long long)h_.lost);
	}
	MonitorResult result();
	void print_table();

private:
	// On the server's threads, several at once: reads only metrics_ (its
	// own mutex), the clock and constants.
	HttpServer::Response page(const std::string &path) const
	{
		HttpServer::Response r;
		if (path == "/metrics" && !published_.load(std::memory_order_acquire)) {
			// bound before the backend is chosen (least privilege): no
			// figure, not the default backend's, until the first snapshot
			r.status = 503;
			r.body = "ptwalk monitor: starting\n";
		} else if (path == "/metrics") {
			r.content_type = "text/plain; version=0.0.4; charset=utf-8";
			r.body = render();
		} else if (path == "/") {
			r.body = "ptwalk monitor: metrics at /metrics\n";
		} else {
			r.status = 404;
			r.body = "not found\n";
		}
		return r;
	}
	std::string render() const
	{
		return metrics_.render(double(now_ns()) / 1e9, cpu_seconds(), start_unix_);
	}
	bool write_textfile()
	{
		if (auto e = write_atomically(textfile_, render()); !e.empty()) {
			fprintf(stderr, "ptwalk monitor: %s\n", e.c_str());
			return false;
		}
		return true;
	}
	// A process's name from its COMM and FORK records when any came
	// since we started (they follow a rename after its probe), else what
	// its probe read.
	std::string target_comm(pid_t p)
	{
		if (names_.since(p))
			return names_.comm(p);
		std::string c = prober_.comm(p);
		return c.empty() ? names_.comm(p) : c;
	}
	void on_walk(const Walk &w)
	{
		std::vector<double> waits;
		for (const auto &x : w.waiters)
			waits.push_back(double(x.ns()) / 1e9);
		metrics_.add_walk(names_.comm(w.hold.tgid),
				  w.target_tgid ? target_comm(w.target_tgid) : "", w.kind,
				  name(held_mode(w.hold.write)), double(w.hold.ns()) / 1e9, waits,
				  w.waiters_total, w.target_tgid != 0, w.self, name(w.basis),
				  double(now_ns()) / 1e9);
		if (continuous_ && o_.out_path.empty())
			return; // nothing keeps them
		walks_.push_back(w);
		if (continuous_ && walks_.size() > 100000)
			walks_.erase(walks_.begin(), walks_.begin() + 50000);
	}
	MonitorTrace::Hooks hooks()
	{
		WalkTracker &t = *tracker_;
		t.on_task([this](pid_t tid, pid_t tgid) { names_.note(tid, tgid); });
		t.on_foreign_hold(
			[this](const LockSpan &h) { trace_.scan_fds(h.tid, h.tgid, h.start_ns); });
		MonitorTrace::Hooks k;
		k.lock = [&t](const LockEvent &e) { t.lock(e); };
		k.ended = [this, &t](pid_t tgid, uint64_t at, bool exec) {
			t.task_end(tgid, at, exec);
			if (exec)
				prober_.queue(tgid);
		};
		k.born = [&t](pid_t child, uint64_t at) { t.task_born(child, at); };
		k.fd_evidence = [&t](pid_t tid, uint64_t start, WalkFile f) {
			t.fd_evidence(tid, start, std::move(f));
		};
		k.round = [this, &t](uint64_t at, bool final) {
			t.advance(at, final);
			// for health() on other threads: the scrape sees them live
			unpaired_.store(t.unpaired(), std::memory_order_relaxed);
			probe_facts_.store(t.probe_facts(), std::memory_order_relaxed);
			if (t.wants_probe()) {
				t.clear_wants_probe();
				prober_.rescan();
			}
		};
		k.comm = [this](pid_t tid, std::string_view c, uint64_t at) {
			names_.set(tid, c, at);
		};
		k.span = [&t](const LockSpan &s, bool hold) { t.span(s, hold); };
		k.probe = [&t](const LockEvent &e) { t.probe_acquire(e); };
		k.owner = [&t](uint64_t mm, pid_t tgid, uint64_t at, bool building) {
			t.owner_fact(mm, tgid, at, building);
		};
		k.fork = [this](pid_t pid, pid_t tid, pid_t ptid, uint64_t at) {
			names_.fork(ptid, tid, at);
			if (pid == tid)
				prober_.queue(pid);
		};
		return k;
	}
	MonitorHealth health() const
	{
		MonitorHealth h;
		const MonitorTrace::Counts c = trace_.counts();
		h.events = c.events;
		h.lost = c.lost;
		h.probes = prober_.probes();
		h.fd_scans = trace_.fd_scans();
		h.late = c.late;
		h.backend = backend();
		if (c.bpf && c.bpf->run_time_counted)
			h.kernel_run_ns = int64_t(c.bpf->run_ns);
		// the model's, as of the reader thread's last round
		h.unpaired = unpaired_.load(std::memory_order_relaxed) + c.unpaired_in_kernel;
		h.probe_facts = probe_facts_.load(std::memory_order_relaxed);
		return h;
	}
	void announce() const
	{
		std::string what =
			continuous_ ? ""
				    : " for " + std::to_string(double(o_.duration_ns) / 1e9) + " s";
		if (o_.duration_ns == 0)
			what = " until stopped";
		fprintf(stderr,
			"ptwalk monitor: watching mmap_lock holds >= %s ms%s%s%s (Ctrl-C stops)\n",
			ms(o_.min_hold_ns).c_str(), what.c_str(),
			o_.serve_host.empty()
				? ""
				: (", serving " + std::string(https_ ? "https" : "http") + "://" +
				   o_.serve_host + ":" + std::to_string(server_.port()) +
				   "/metrics")
					  .c_str(),
			textfile_.empty() ? "" : (", textfile " + textfile_).c_str());
	}
	BackendKind backend() const
	{
		return trace_.bpf_used() ? BackendKind::bpf : BackendKind::tracepoint;
	}
	MonitorHold hold(const Walk &w, MmIndex &mmi);
	std::string table_row(const Walk &w, MmIndex &pmi);

	const MonitorOptions &o_;
	const bool continuous_;
	MonitorMetrics metrics_;
	const double start_unix_;
	const std::string textfile_;
	HttpServer server_;
	bool https_ = false;
	TaskNames names_{[](pid_t p) { return proc_comm(p); }, [] { return now_ns(); }};
	Prober prober_;
	std::optional<WalkTracker> tracker_;
	MonitorTrace trace_;
	std::vector<Walk> walks_; // duration mode: kept for the table and JSON
	uint64_t t0_ = 0, t1_ = 0;
	bool interrupted_ = false;
	MonitorHealth h_;
	// the model's counters, published by the reader thread each round
	std::atomic<uint64_t> unpaired_{0}, probe_facts_{0};
	// metrics_ holds a health snapshot of the started trace: /metrics is 503 before
	std::atomic<bool> published_{false};
	std::string bpf_unavailable_; // auto fell back to perf: why
};

MonitorHold Session::hold(const Walk &w, MmIndex &mmi)
{
	MonitorHold x;
	x.start_ns = w.hold.start_ns;
	x.hold_ns = w.hold.ns();
	x.mode = held_mode(w.hold.write);
	x.kind = w.kind;
	x.mm = mmi.label(w.hold.mm);
	x.holder = {w.hold.tid, w.hold.tgid, names_.comm(w.hold.tid), names_.comm(w.hold.tgid)};
	x.target.tgid = w.target_tgid;
	x.target.comm = w.target_tgid ? target_comm(w.target_tgid) : "?";
	x.target.basis = w.basis;
	x.target.self = w.self;
	if (!w.why.empty())
		x.target.why = w.why;
	if (!w.walk_file.empty())
		x.walk_file = w.walk_file;
	x.waiters_total = w.waiters_total;
	for (const auto &ws : w.waiters)
		x.waiters.push_back({ws.tid, ws.tgid, names_.comm(ws.tid), ws.start_ns, ws.ns(),
				     held_mode(ws.write)});
	return x;
}

MonitorResult Session::result()
{
	MonitorResult r = monitor_result(backend(), o_, t0_, t1_, interrupted_);
	MonitorTraceResult &t = r.trace.emplace();
	if (!bpf_unavailable_.empty())
		t.bpf_unavailable = bpf_unavailable_;
	if (trace_.bpf_used())
		t.bpf = trace_.bpf_stats();
	t.health = h_;
	t.lifecycle_events = trace_.lifecycle();
	t.memcg_field = trace_.memcg_field();
	t.ring_bytes_per_cpu = trace_.ring_bytes_per_cpu();
	MmIndex mmi;
	for (const auto &w : walks_)
		t.holds.push_back(hold(w, mmi));
	return r;
}

std::string Session::table_row(const Walk &w, MmIndex &pmi)
{
	std::string mm = pmi.label(w.hold.mm);
	std::string holder = std::to_string(w.hold.tid) + " " + names_.comm(w.hold.tid);
	const std::string basis = name(w.basis);
	std::string target = w.self ? "self (" + basis + ")"
			     : w.target_tgid
				     ? std::to_string(w.target_tgid) + " " +
					       target_comm(w.target_tgid) + " (" + basis + ")"
				     : "unknown";
	std::string waiters = std::to_string(w.waiters_total);
	if (!w.waiters.empty())
		waiters += " (max " + ms(w.waiters[0].ns()) +
			   " ms: " + std::to_string(w.waiters[0].tid) + " " +
			   names_.comm(w.waiters[0].tid) + ")";
	auto row = [&](char *buf, size_t n) {
		return snprintf(buf, n, "%9.3f %11s %-6s %-12s %-24s %-28s %-6s %s\n",
				double(w.hold.start_ns - std::min(w.hold.start_ns, t0_)) / 1e9,
				ms(w.hold.ns()).c_str(), name(held_mode(w.hold.write)),
				name(w.kind), holder.c_str(), target.c_str(), mm.c_str(),
				waiters.c_str());
	};
	std::string out(size_t(std::max(row(nullptr, 0), 0)), '\0');
	row(out.data(), out.size() + 1);
	if (!w.why.empty())
		out += std::string(9, ' ') + "   unknown target: " + w.why + "\n";
	return out;
}

void Session::print_table()
{
	printf("ptwalk monitor: %.2f s%s, %llu events, %llu lost; %zu holds >= %s ms\n",
	       double(t1_ - t0_) / 1e9, interrupted_ ? " (interrupted)" : "",
	       (unsigned long long)h_.events, (unsigned long long)h_.lost, walks_.size(),
	       ms(o_.min_hold_ns).c_str());
	if (h_.lost)
		printf("  warning: the kernel dropped %llu events; holds and waiters may be missing\n",
		       (unsigned long long)h_.lost);
	if (!walks_.empty())
		printf("%9s %11s %-6s %-12s %-24s %-28s %-6s %s\n", "START_S", "HOLD_MS", "MODE",
		       "KIND", "HOLDER (pid comm)", "TARGET (tgid comm basis)", "MM", "WAITERS");
	MmIndex pmi; // same order as the JSON labels
	const size_t kMaxRows = 200;
	for (size_t i = 0; i < walks_.size() && i < kMaxRows; i++)
		fputs(table_row(walks_[i], pmi).c_str(), stdout);
	if (walks_.size() > kMaxRows)
		printf("  ... %zu more holds%s\n", walks_.size() - kMaxRows,
		       o_.out_path.empty() ? " (use an output file to see all)" : " in the JSON");
	fflush(stdout);
}

} // namespace

MonitorResult monitor_result(BackendKind backend, const MonitorOptions &o, uint64_t t0, uint64_t t1,
			     bool interrupted)
{
	MonitorResult r;
	r.backend = backend;
	r.duration_ns = t1 - t0;
	r.requested_duration_ns = o.duration_ns;
	r.interrupted = interrupted;
	r.start_ns = t0;
	r.min_hold_ns = o.min_hold_ns;
	return r;
}

int run_monitor(const MonitorOptions &o)
{
	const bool continuous = !o.serve_host.empty() || !o.textfile_dir.empty();
	if (o.backend == MonitorBackend::module ||
	    (o.backend == MonitorBackend::automatic && !continuous && module_loaded()))
		return run_module_monitor(o);
	if (!o.textfile_dir.empty()) {
		if (auto e = check_textfile_dir(o.textfile_dir); !e.empty()) {
			fprintf(stderr, "ptwalk monitor: %s\n", e.c_str());
			return kMonitorFailed;
		}
	}
	StopSignals stop_signals;
	Session s(o);
	if (!s.serve())
		return kMonitorFailed;
	if (!s.start())
		return kMonitorUnsupported;
	// Least privilege from here on: the BPF programs are loaded and
	// attached, the perf events (mmap_lock, sched lifecycle, every CPU)
	// open and mapped, the port bound; nothing later opens another (no
	// hotplug reopen), and reading the rings, the BPF maps and their
	// run-time counter needs no capability. Naming targets still reads
	// /proc: cmdline and comm are anyone's to read, but the fd table of a
	// walker of another user, /proc/TGID/task/TID/fd (scan_fds), needs
	// CAP_DAC_READ_SEARCH to list (mode 0500, the walker's) and
	// CAP_SYS_PTRACE to readlink (ptrace_may_access). Those two are kept,
	// everything else goes from every thread's effective, permitted and
	// bounding sets (the last takes CAP_SETPCAP, which the deploy files
	// grant for this and nothing else).
	bool bounding_kept = false;
	if (auto e = keep_only_capabilities({CAP_DAC_READ_SEARCH, CAP_SYS_PTRACE}, &bounding_kept);
	    !e.empty()) {
		fprintf(stderr, "ptwalk monitor: dropping capabilities: %s\n", e.c_str());
		s.stop(0);
		return kMonitorFailed;
	}
	if (bounding_kept && !o.quiet)
		fprintf(stderr,
			"ptwalk monitor: capabilities dropped but for "
			"CAP_DAC_READ_SEARCH CAP_SYS_PTRACE; the bounding set kept as it was "
			"(no CAP_SETPCAP to drop from it)\n");
	// written as root without CAP_DAC_OVERRIDE from now on
	if (!o.textfile_dir.empty()) {
		if (auto e = check_textfile_dir(o.textfile_dir); !e.empty()) {
			fprintf(stderr, "ptwalk monitor: %s\n", e.c_str());
			s.stop(0);
			return kMonitorFailed;
		}
	}
	const int rc = s.stop(s.watch());
	if (s.continuous() && o.out_path.empty()) {
		if (!o.quiet)
			s.print_stopped();
		return rc;
	}
	const Json j = monitor_result_json(s.result());
	if (!o.quiet && !s.continuous())
		s.print_table();
	if (!o.out_path.empty()) {
		if (auto werr = write_atomically(o.out_path, j.dump(2) + "\n"); !werr.empty()) {
			fprintf(stderr, "ptwalk monitor: %s\n", werr.c_str());
			return kMonitorFailed;
		}
	}
	return rc;
}

} // namespace ptwalk
