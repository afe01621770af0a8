// SPDX-License-Identifier: GPL-2.0
// `ptwalk run --perf`: perf record / perf stat as child processes. The
// parsers of what they write are in perf_output.cpp. See perf_session.hpp.
#include "ptwalk/perf_session.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <optional>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>
#include <vector>

#include "ptwalk/clock.hpp"
#include "ptwalk/fd.hpp"
#include "ptwalk/process.hpp"
#include "ptwalk/procfs.hpp"
#include "ptwalk/tracefs.hpp"
#include "ptwalk/perf_control.hpp"
#include "ptwalk/text.hpp"

namespace ptwalk {

namespace {

using text::split_lines;
using text::trim;

using namespace perf_detail;

} // namespace

// --- the session -----------------------------------------------------------

struct PerfSession::Impl {
	bool started = false, stopped = false;
	std::string why;
	std::string perf; // resolved path
	std::string workdir;
	PerfOptions opt;
	pid_t scanner = 0, target = 0;
	std::string version;
	std::vector<std::string> notes;
	Tracefs tracefs;

	// perf's --control pipes stay open while perf runs: closing our end
	// makes perf 6.1 record drop the fd from its poll array and fail at
	// exit with "Thread and evlist pollfd index mismatch" (no data).
	Control record_ctl, stat_ctl;
	Child record;
	std::string record_error, record_cmd, record_stop;
	std::string data_path, record_log;
	Child stat;
	std::string stat_error, stat_cmd, stat_stop, stat_scope;
	std::string stat_path, stat_log;
	std::vector<PerfUnsupported> stat_unsupported;
	std::vector<std::string> stat_events;
	PerfSummary result;

	void stop_children()
	{
		if (record.pid() > 0 && record_stop.empty()) {
			// perf record -p ends by itself once the scanner has
			// exited; a SIGINT racing with that exit has left
			// perf 6.1 hung after writing its data: give it time.
			if (process_gone(scanner))
				record.wait_for(std::min(opt.stop_timeout_ms, 3000));
			record_stop = record.stop(SIGINT, opt.stop_timeout_ms);
		}
		if (stat.pid() > 0 && stat_stop.empty())
			stat_stop = stat.stop(SIGINT, opt.stop_timeout_ms);
		record_ctl = Control{};
		stat_ctl = Control{};
		if (tracefs.mounted_by_us())
			notes.push_back("tracefs: mounted by ptwalk at " + tracefs.root() +
					" for perf, unmounted");
		tracefs.release();
	}

	std::string path(const char *name) const
	{
		return (workdir.empty() ? std::string(".") : workdir) + "/" + name;
	}

	bool start_record();
	bool start_stat();
	PerfRecordPart summarize_record();
	PerfStatPart summarize_stat();
};

PerfSession::PerfSession() : impl_(std::make_unique<Impl>()) {}

PerfSession::~PerfSession()
{
	if (impl_)
		impl_->stop_children();
}

std::string PerfSession::why() const
{
	return impl_->why;
}

bool PerfSession::Impl::start_record()
{
	data_path = path("perf.data");
	record_log = path("perf-record.log");
	Control &ctl = record_ctl;
	if (!ctl.open(&record_error))
		return false;
	// cpu-clock: a software timer, sampled in the scanner's context kernel
	// and user side alike; no PMU needed.
	std::vector<std::string> argv = {
		perf, "record",  "-e", "cpu-clock", "-g",        "-p",     std::to_string(scanner),
		"-o", data_path, "-D", "-1",        "--control", ctl.arg()};
	record_cmd = command_line(argv);
	auto c = Child::exec(argv, record_log, record_log, {ctl.ctl_r.get(), ctl.ack_w.get()},
			     &record_error);
	if (!c)
		return false;
	record = std::move(*c);
	if (!enable_and_wait(ctl, record, record_log, opt.start_timeout_ms, &record_error)) {
		record_error = "perf record: " + record_error;
		record_stop = record.stop(SIGINT, opt.stop_timeout_ms);
		return false;
	}
	return true;
}

bool PerfSession::Impl::start_stat()
{
	stat_path = path("perf-stat.csv");
	stat_log = path("perf-stat.log");
	std::string terr;
	if (!tracefs.open(&terr)) {
		stat_error = "tracefs: " + terr;
		for (const char *s : {"ptwalk:*", "mmap_lock:*", "tlb:*"})
			stat_unsupported.push_back({s, "tracefs unavailable: " + terr});
		return false;
	}
	struct Sys {
		const char *name, *why_missing;
	};
	const Sys systems[] = {
		{"ptwalk", "ptwalk.ko is not loaded"},
		{"mmap_lock", "kernel without mmap_lock tracepoints (5.10+, CONFIG_TRACING)"},
		{"tlb", "kernel without tlb tracepoints (x86 CONFIG_TRACING)"},
	};
	for (const auto &s : systems) {
		std::string err;
		auto evs = list_events(tracefs.root(), s.name, &err);
		if (!evs || evs->empty()) {
			stat_unsupported.push_back(
				{std::string(s.name) + ":*",
				 (evs ? tracefs.root() + "/events/" + s.name + ": empty" : err) +
					 " (" + s.why_missing + ")"});
			continue;
		}
		stat_events.insert(stat_events.end(), evs->begin(), evs->end());
	}
	if (stat_events.empty()) {
		stat_error = "no ptwalk:*, mmap_lock:* or tlb:* tracepoint on this kernel";
		return false;
	}
	Control &ctl = stat_ctl;
	if (!ctl.open(&stat_error))
		return false;
	std::string pids = std::to_string(scanner);
	if (target > 0 && target != scanner)
		pids += "," + std::to_string(target);
	stat_scope = "per task: the scanner (pid " + std::to_string(scanner) + ")" +
		     (target > 0 && target != scanner
			      ? " and the target (pid " + std::to_string(target) + ")"
			      : std::string()) +
		     ", all their threads and children; events of other processes on "
		     "this (shared) host are not counted";
	std::vector<std::string> argv = {perf,     "stat",    "-x,",
					 "-o",     stat_path, "-p",
					 pids,     "-e",      join(stat_events, ","),
					 "-D",     "-1",      "--control",
					 ctl.arg()};
	stat_cmd = command_line(argv);
	auto c = Child::exec(argv, stat_log, stat_log, {ctl.ctl_r.get(), ctl.ack_w.get()},
			     &stat_error);
	if (!c)
		return false;
	stat = std::move(*c);
	if (!enable_and_wait(ctl, stat, stat_log, opt.start_timeout_ms, &stat_error)) {
		stat_error = "perf stat: " + stat_error;
		stat_stop = stat.stop(SIGINT, opt.stop_timeout_ms);
		return false;
	}
	return true;
}

bool PerfSession::start(pid_t scanner, pid_t target, const PerfOptions &o)
{
	Impl &m = *impl_;
	if (m.started) {
		m.why = "PerfSession::start called twice";
		return false;
	}
	m.started = true;
	m.opt = o;
	m.scanner = scanner;
	m.target = target;
	try {
		if (scanner <= 0) {
			m.why = "no scanner pid";
			return false;
		}
		m.workdir = o.workdir.empty() ? "." : o.workdir;
		std::error_code ec;
		std::filesystem::create_directories(m.workdir, ec);
		if (ec) {
			m.why = "mkdir -p " + m.workdir + ": " + ec.message();
			return false;
		}
		if (!std::filesystem::is_directory(m.workdir, ec)) {
			m.why = m.workdir + ": " + errno_str(ENOTDIR);
			return false;
		}
		auto perf = resolve_program(o.perf, &m.why);
		if (!perf)
			return false;
		m.perf = *perf;

		// `perf --version` also proves the binary runs (the Debian
		// wrapper fails here when no perf_<version> matches the kernel).
		std::string vout = m.path("perf-version.txt"), err;
		if (!run_to_completion({m.perf, "--version"}, vout, vout, 10000, &err)) {
			m.why = "perf unusable: " + err;
			return false;
		}
		auto vt = read_file(vout, &err);
		m.version = vt ? std::string(trim(*vt)) : "";
		if (m.version.starts_with("perf version "))
			m.version = m.version.substr(13);
		unlink(vout.c_str());

		struct stat st {};
		if (::stat("/sys/bus/event_source/devices/cpu", &st) != 0 &&
		    ::stat("/sys/bus/event_source/devices/cpu_core", &st) != 0)
			m.notes.push_back("no hardware PMU (/sys/bus/event_source/devices/cpu "
					  "missing): samples come from the cpu-clock software "
					  "timer; no cycles/instructions counts");
		else
			m.notes.push_back("samples come from the cpu-clock software timer "
					  "(same on hosts with and without a PMU)");
		if (auto k = read_long_file("/proc/sys/kernel/kptr_restrict")) {
			if (*k >= 2 || (*k == 1 && geteuid() != 0))
				m.notes.push_back("kernel.kptr_restrict=" + std::to_string(*k) +
						  ": kernel addresses hidden, kernel symbols "
						  "will not resolve (left unchanged)");
		}
		if (auto p = read_long_file("/proc/sys/kernel/perf_event_paranoid"))
			if (*p > 1 && geteuid() != 0)
				m.notes.push_back(
					"kernel.perf_event_paranoid=" + std::to_string(*p) +
					": kernel samples need root or CAP_PERFMON");

		bool rec = m.start_record();
		bool st_ok = m.start_stat();
		if (!rec && !st_ok) {
			m.why = m.record_error + "; " + m.stat_error;
			m.stop_children();
			return false;
		}
		return true;
	} catch (const std::exception &e) {
		m.why = std::string("perf session: ") + e.what();
		m.stop_children();
		return false;
	}
}

PerfRecordPart PerfSession::Impl::summarize_record()
{
	using At = PerfRecordPart::ErrorAt;
	PerfRecordPart r;
	r.pid = scanner;
	if (!record_cmd.empty())
		r.command = record_cmd;
	if (!record_error.empty()) {
		r.fail(record_error, At::record);
		return r;
	}
	r.stop = record_stop;
	if (!exited_ok(record)) {
		std::string tail = log_tail(record_log);
		// "[ perf record: Captured and wrote 0.153 MB perf.data (947
		// samples) ]" is printed once perf.data is complete: a hang after
		// it loses nothing.
		if (tail.find("Captured and wrote") != std::string::npos)
			notes.push_back("perf record " + record_stop +
					" after writing its data (\"Captured and wrote\")");
		else
			r.fail("perf record " + record_stop + ": " + tail, At::record);
	}
	r.data = data_path;
	struct stat st {};
	if (::stat(data_path.c_str(), &st) != 0) {
		r.fail(data_path + ": " + errno_str(errno), At::data);
		return r;
	}
	std::string rep = path("perf-report.txt"), replog = path("perf-report.log"), err;
	std::vector<std::string> argv = {perf,
					 "report",
					 "-i",
					 data_path,
					 "--stdio",
					 "--sort",
					 "symbol",
					 "--no-children",
					 "-g",
					 "none",
					 "--show-nr-samples",
					 "--field-separator",
					 "\t"};
	if (!run_to_completion(argv, rep, replog, opt.report_timeout_ms, &err)) {
		r.fail(err, At::data);
		return r;
	}
	auto text = read_file(rep, &err);
	if (!text) {
		r.fail(err, At::data);
		return r;
	}
	r.report = rep;
	PerfReportSummary p = parse_perf_report_symbols(*text, 15);
	if (p.event)
		r.event = *p.event;
	if (p.samples) {
		r.samples = p.samples;
	} else if (log_tail(replog).find("has no samples") != std::string::npos) {
		// perf report's own word ("The perf.data data has no samples!",
		// exit 0, no table): the scanner never ran on a CPU while sampled
		r.samples = 0;
		notes.push_back("perf report: no samples in " + data_path);
	} else {
		r.fail("perf report: no sample count in " + rep + ": " + log_tail(replog),
		       At::report);
	}
	r.lost_samples = p.lost_samples;
	r.kernel_percent = p.kernel_percent;
	r.top_kernel_symbols = std::move(p.top_kernel_symbols);
	return r;
}

PerfStatPart PerfSession::Impl::summarize_stat()
{
	using At = PerfStatPart::ErrorAt;
	PerfStatPart s;
	if (!stat_cmd.empty())
		s.command = stat_cmd;
	if (!stat_scope.empty())
		s.scope = stat_scope;
	s.unsupported = stat_unsupported;
	if (!stat_error.empty()) {
		s.fail(stat_error, At::stat);
		return s;
	}
	s.stop = stat_stop;
	if (!exited_ok(stat))
		s.fail("perf stat " + stat_stop + ": " + log_tail(stat_log), At::stat);
	s.file = stat_path;
	std::string err;
	auto text = read_file(stat_path, &err);
	if (!text) {
		s.fail(err, At::file);
		return s;
	}
	PerfStatSummary p = parse_perf_stat_csv(*text);
	// Every requested event must have a line: a missing one is said.
	for (const auto &e : stat_events) {
		bool found = find_count(p.events, e) ||
			     std::any_of(p.unsupported.begin(), p.unsupported.end(),
					 [&](const PerfUnsupported &u) { return u.event == e; });
		if (!found)
			s.missing.push_back(e);
	}
	s.events = std::move(p.events);
	s.unsupported.insert(s.unsupported.end(), p.unsupported.begin(), p.unsupported.end());
	s.run_ns = std::move(p.run_ns);
	s.malformed = std::move(p.malformed);
	return s;
}

PerfSummary PerfSession::stop()
{
	Impl &m = *impl_;
	if (m.stopped)
		return m.result;
	m.stopped = true;
	PerfSummary perf;
	try {
		m.stop_children();
		if (!m.version.empty())
			perf.version = m.version;
		if (!m.started || m.perf.empty() ||
		    (m.record.pid() <= 0 && m.stat.pid() <= 0 && m.record_error.empty() &&
		     m.stat_error.empty())) {
			perf.error = m.started ? m.why : std::string("perf session not started");
		} else {
			perf.record = m.summarize_record();
			perf.stat = m.summarize_stat();
			perf.workdir = m.workdir;
		}
	} catch (const std::exception &e) {
		perf.error = std::string("perf session: ") + e.what();
	}
	perf.notes = m.notes;
	m.result = perf;
	return perf;
}

} // namespace ptwalk
