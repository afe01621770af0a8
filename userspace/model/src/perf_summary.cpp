// SPDX-License-Identifier: GPL-2.0
// perf's summary (perf_summary.hpp), written once: each part in the member
// order the perf session has always given it.
#include "ptwalk/perf_summary.hpp"

namespace ptwalk {

const uint64_t *find_count(const PerfCounts &c, std::string_view name)
{
	for (const auto &[k, v] : c)
		if (k == name)
			return &v;
	return nullptr;
}

namespace {

Json::Value counts_json(const PerfCounts &c)
{
	Json::Value o = Json::Value::object();
	for (const auto &[k, v] : c)
		o[k] = v;
	return o;
}

} // namespace

void to_json(Json::Value &j, const PerfSymbol &s)
{
	j = Json::Value::object();
	j["symbol"] = s.symbol;
	j["percent"] = s.percent;
	put_optional(j, "samples", s.samples);
}

void to_json(Json::Value &j, const PerfUnsupported &u)
{
	j = Json::Value::object();
	j["event"] = u.event;
	j["reason"] = u.reason;
}

void to_json(Json::Value &j, const PerfReportSummary &r)
{
	j = Json::Value::object();
	put_optional(j, "event", r.event);
	put_optional(j, "samples", r.samples);
	put_optional(j, "samples_header", r.samples_header);
	put_optional(j, "lost_samples", r.lost_samples);
	j["entries"] = r.entries;
	j["kernel_percent"] = r.kernel_percent;
	j["top_kernel_symbols"] = r.top_kernel_symbols;
}

void to_json(Json::Value &j, const PerfStatSummary &s)
{
	j = Json::Value::object();
	j["events"] = counts_json(s.events);
	j["unsupported"] = s.unsupported;
	j["run_ns"] = counts_json(s.run_ns);
	if (!s.malformed.empty())
		j["malformed"] = s.malformed;
}

void to_json(Json::Value &j, const PerfRecordPart &r)
{
	using At = PerfRecordPart::ErrorAt;
	j = Json::Value::object();
	j["event"] = r.event;
	j["pid"] = r.pid;
	put_optional(j, "command", r.command);
	put_optional(j, "stop", r.stop);
	r.put_error(j, At::record);
	put_optional(j, "data", r.data);
	r.put_error(j, At::data);
	put_optional(j, "report", r.report);
	r.put_error(j, At::report);
	put_optional(j, "samples", r.samples);
	put_optional(j, "lost_samples", r.lost_samples);
	put_optional(j, "kernel_percent", r.kernel_percent);
	put_optional(j, "top_kernel_symbols", r.top_kernel_symbols);
}

void to_json(Json::Value &j, const PerfStatPart &s)
{
	using At = PerfStatPart::ErrorAt;
	j = Json::Value::object();
	put_optional(j, "command", s.command);
	put_optional(j, "scope", s.scope);
	put_optional(j, "stop", s.stop);
	s.put_error(j, At::stat);
	put_optional(j, "file", s.file);
	s.put_error(j, At::file);
	if (s.events)
		j["events"] = counts_json(*s.events);
	j["unsupported"] = s.unsupported;
	if (s.run_ns)
		j["run_ns"] = counts_json(*s.run_ns);
	if (!s.malformed.empty())
		j["malformed"] = s.malformed;
	if (!s.missing.empty())
		j["missing"] = s.missing;
}

void to_json(Json::Value &j, const PerfSummary &p)
{
	j = Json::Value::object();
	put_optional(j, "version", p.version);
	put_optional(j, "record", p.record);
	put_optional(j, "stat", p.stat);
	put_optional(j, "workdir", p.workdir);
	put_optional(j, "error", p.error);
	put_optional(j, "notes", p.notes);
}

} // namespace ptwalk
