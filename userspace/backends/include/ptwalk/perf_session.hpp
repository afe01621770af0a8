// SPDX-License-Identifier: GPL-2.0
// `ptwalk run --perf`: the perf tool beside a run. `perf record -g` samples
// the scanner (the walker) on cpu-clock, `perf stat` counts the ptwalk:*,
// mmap_lock:* and tlb:* tracepoints this kernel has in the scanner and the
// target. Both run as child processes, started disabled and enabled through
// perf's --control fds, so start() returns once they count. stop() ends them
// (SIGINT, wait, SIGKILL), runs `perf report` and parses what perf wrote.
//
// What is missing is said, never filled in: no perf, no PMU, no tracefs, no
// ptwalk.ko each show up in the summary's notes, unsupported events or
// errors. The summary and the parsers' results are model's typed
// perf_summary.hpp, written by its to_json.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <sys/types.h>

#include "ptwalk/perf_summary.hpp"

namespace ptwalk {

struct PerfOptions {
	std::string perf = "perf";      // a path, or a name looked up in PATH
	std::string workdir;            // where perf.data, perf-stat.csv and logs go
					// (created if missing; "" = current dir)
	int stop_timeout_ms = 10000;    // SIGINT -> SIGKILL, per child
	int start_timeout_ms = 10000;   // perf's ack of "enable"
	int report_timeout_ms = 120000; // `perf report` run in stop()
};

class PerfSession {
public:
	PerfSession();
	~PerfSession(); // stop() if still running: no child outlives the session
	PerfSession(const PerfSession &) = delete;
	PerfSession &operator=(const PerfSession &) = delete;

	// Starts `perf record -e cpu-clock -g -p scanner` and
	// `perf stat -x, -p scanner,target -e <tracepoints>`. Tracepoints come
	// from tracefs (found, or mounted for the session and unmounted in
	// stop()); systems absent here (ptwalk:* without ptwalk.ko) are listed
	// as unsupported with the reason. Returns true when at least one of
	// the two runs (the other's failure is in stop()'s summary); false with
	// why() set when perf is missing or unusable. Never throws. Call once,
	// from a thread that outlives the session: the children get SIGINT
	// (PR_SET_PDEATHSIG) when it dies, and write their data. They run in
	// their own process group, so a terminal ^C reaches ptwalk only; stop()
	// then stops them. Call it while the scanner is held (before it walks):
	// perf has acknowledged "enable" when start() returns.
	bool start(pid_t scanner, pid_t target, const PerfOptions &o);

	// Stops both children (SIGINT, wait up to stop_timeout_ms, SIGKILL),
	// runs `perf report` and returns the result's "perf" (model's
	// perf_summary.hpp): the version, the "record" part (the event, the
	// samples, the top 15 kernel symbols by percent of all the scanner's
	// samples, user and kernel, where perf.data is, ...), the "stat" part
	// (counts by event, the events not counted and why, their scope, ...),
	// and the notes. A part that failed carries an error instead of (or
	// after) its figures. Idempotent: later calls return the same summary.
	// Before/without start(): the summary says why perf did not run.
	PerfSummary stop();

	std::string why() const;

private:
	struct Impl;
	std::unique_ptr<Impl> impl_;
};

// Parses `perf report --stdio --sort symbol -t '\t'` output, perf's
// field-separated form (best with --no-children -g none --show-nr-samples):
// columns are found by the names in its header line. Gives the event, the
// sum of the Samples column (only when there is one), the "# Samples:"
// figure as perf abbreviates it ("4K"), the lost samples, the number of
// entries, the kernel's percent and the `top` [k] entries by self overhead.
// Call-chain lines are skipped; in children mode the Self column is used.
PerfReportSummary parse_perf_report_symbols(std::string_view perf_report_stdio_text, size_t top);

// Parses `perf stat -x,` output (as written by -o: "# started on" header):
// counts by event, the events not counted and why, the ns each counter ran,
// and the lines not understood. Counts of an event seen on several lines
// (per-thread, per-cpu) are summed.
PerfStatSummary parse_perf_stat_csv(std::string_view perf_stat_x_output);

} // namespace ptwalk
