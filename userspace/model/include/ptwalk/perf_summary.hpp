// SPDX-License-Identifier: GPL-2.0
// A result's "perf" (`ptwalk run --perf`, results/SCHEMA.md) as typed
// parts: the perf session and its parsers (backends' perf_session.hpp) fill
// them, the commands and tests read their members, and each part's to_json
// writes it once. What perf did not give stays out: a member that is
// present only sometimes is an optional (or a list written only when it has
// entries), never a made-up figure.
//
// A part that failed carries "error" where the step that failed put it:
// after the figures that step had already written, before the rest
// (error_at). A later failure of the same part replaces the message and
// keeps the place.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptwalk/json.hpp"

namespace ptwalk {

// One kernel symbol of `perf report` ("top_kernel_symbols").
struct PerfSymbol {
	std::string symbol;
	double percent = 0;              // of all the samples, user and kernel
	std::optional<uint64_t> samples; // the Samples column, when readable
};

// Counts by name in the order perf first gave them (a JSON object).
using PerfCounts = std::vector<std::pair<std::string, uint64_t>>;

// The count of name; nullptr when there is none.
const uint64_t *find_count(const PerfCounts &c, std::string_view name);

// parse_perf_report_symbols: one `perf report --stdio -t '\t'` table.
struct PerfReportSummary {
	std::optional<std::string> event;          // "# Samples: ... of event 'x'"
	std::optional<uint64_t> samples;           // the Samples column's sum (when a column)
	std::optional<std::string> samples_header; // "15K": perf's abbreviation
	std::optional<uint64_t> lost_samples;
	uint64_t entries = 0;
	double kernel_percent = 0; // rounded to 0.01
	std::vector<PerfSymbol> top_kernel_symbols;
};

// An event perf stat did not count, and why ("unsupported").
struct PerfUnsupported {
	std::string event, reason;
};

// parse_perf_stat_csv: one `perf stat -x,` file.
struct PerfStatSummary {
	PerfCounts events;                        // summed over lines; msec ones as "<name>_ns"
	std::vector<PerfUnsupported> unsupported; // "<not supported>", "<not counted>"
	PerfCounts run_ns;                        // ns each counter ran
	std::vector<std::string> malformed;       // lines not understood (written when any)
};

// A part's "error" and the step (At) after whose figures it is written.
template <class At>
struct PerfPartError {
	std::optional<std::string> error;
	At error_at{}; // the first step

	// Sets error; the first failure decides where it is written.
	void fail(std::string why, At at)
	{
		if (!error)
			error_at = at;
		error = std::move(why);
	}
	// Writes "error" when it belongs after step `at`.
	void put_error(Json::Value &j, At at) const
	{
		if (error && error_at == at)
			j["error"] = *error;
	}
};

// Where "record"'s error goes: after "stop" (perf record failed: not
// started, not stopped cleanly), after "data" (no perf.data, perf report
// failed or unreadable), after "report" (a report without a sample count).
enum class PerfRecordErrorAt { record, data, report };

// "record": perf record -g of the scanner, and its report.
struct PerfRecordPart : PerfPartError<PerfRecordErrorAt> {
	using ErrorAt = PerfRecordErrorAt;

	std::string event = "cpu-clock"; // the report's event, once read
	int64_t pid = 0;                 // the scanner
	std::optional<std::string> command, stop, data, report;
	std::optional<uint64_t> samples, lost_samples;
	std::optional<double> kernel_percent;
	std::optional<std::vector<PerfSymbol>> top_kernel_symbols;
};

// Where "stat"'s error goes: after "stop" (perf stat failed: not started,
// not stopped cleanly) or after "file" (its file unreadable).
enum class PerfStatErrorAt { stat, file };

// "stat": perf stat of the tracepoints in the scanner and the target.
struct PerfStatPart : PerfPartError<PerfStatErrorAt> {
	using ErrorAt = PerfStatErrorAt;

	std::optional<std::string> command, scope, stop, file;
	std::optional<PerfCounts> events;         // once the file was read
	std::vector<PerfUnsupported> unsupported; // always written
	std::optional<PerfCounts> run_ns;         // once the file was read
	std::vector<std::string> malformed;       // written when any
	std::vector<std::string> missing;         // requested, no line: written when any
};

// The result's "perf": PerfSession::stop()'s summary, or start()'s refusal
// (the commands: "error" alone, no "notes").
struct PerfSummary {
	std::optional<std::string> version; // `perf --version`, without "perf version "
	std::optional<PerfRecordPart> record;
	std::optional<PerfStatPart> stat;
	std::optional<std::string> workdir;
	std::optional<std::string> error;              // perf did not run (or the session threw)
	std::optional<std::vector<std::string>> notes; // absent only in start()'s refusal
};

void to_json(Json::Value &j, const PerfSymbol &s);
void to_json(Json::Value &j, const PerfUnsupported &u);
void to_json(Json::Value &j, const PerfReportSummary &r);
void to_json(Json::Value &j, const PerfStatSummary &s);
void to_json(Json::Value &j, const PerfRecordPart &r);
void to_json(Json::Value &j, const PerfStatPart &s);
void to_json(Json::Value &j, const PerfSummary &p);

} // namespace ptwalk
