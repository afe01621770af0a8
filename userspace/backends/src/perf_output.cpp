// SPDX-License-Identifier: GPL-2.0
// The parsers of what perf writes in its field-separated forms: `perf
// report --stdio -t '\\t'` symbols and `perf stat -x,` counts. Pure, so
// tested and fuzzed on recorded output. See perf_session.hpp.
#include "ptwalk/perf_session.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "ptwalk/text.hpp"

namespace ptwalk {

using text::parse_double;
using text::parse_u64;
using text::split_lines;
using text::trim;

// --- parsers ---------------------------------------------------------------

namespace {

std::vector<std::string_view> split_fields(std::string_view line)
{
	std::vector<std::string_view> out;
	for (size_t pos = 0;;) {
		size_t tab = line.find('\t', pos);
		out.push_back(trim(line.substr(pos, tab == std::string_view::npos
							    ? std::string_view::npos : tab - pos)));
		if (tab == std::string_view::npos)
			return out;
		pos = tab + 1;
	}
}

std::optional<double> percent(std::string_view f)
{
	if (f.empty() || f.back() != '%')
		return std::nullopt;
	return parse_double(f.substr(0, f.size() - 1));
}

} // namespace

Json parse_perf_report_symbols(std::string_view text, size_t top)
{
	struct Entry {
		std::string symbol;
		double percent = 0;
		std::optional<uint64_t> samples;
	};
	std::vector<Entry> kernel;
	Json out = Json::object();
	std::optional<std::string> event;
	std::optional<uint64_t> lost;
	std::string samples_header;
	// columns, by the names of the header line: "# Overhead\tSamples\tSymbol"
	// (children mode: "# Children\tSelf\tSymbol")
	size_t pct_col = SIZE_MAX, samples_col = SIZE_MAX, sym_col = SIZE_MAX;
	uint64_t sample_sum = 0;
	size_t entries = 0;
	double kernel_pct = 0;

	for (std::string_view line : split_lines(text)) {
		if (!line.empty() && line.back() == '\r')
			line.remove_suffix(1);
		if (!line.empty() && line.front() == '#') {
			std::string_view c = trim(line.substr(1));
			if (c.starts_with("Samples:")) {
				// "Samples: 15K of event 'cpu-clock'"
				size_t of = c.find(" of event '");
				size_t n = of == std::string_view::npos ? of : of - 8;
				samples_header = std::string(trim(c.substr(8, n)));
				if (of != std::string_view::npos && !event) {
					std::string_view ev = c.substr(of + 11);
					event = std::string(ev.substr(0, ev.find('\'')));
				}
			} else if (c.starts_with("Total Lost Samples:")) {
				lost = parse_u64(c.substr(19));
			} else if (c.find('\t') != std::string_view::npos) {
				auto names = split_fields(c);
				pct_col = samples_col = sym_col = SIZE_MAX;
				for (size_t i = 0; i < names.size(); i++) {
					if (names[i] == "Symbol")
						sym_col = i;
					else if (names[i] == "Samples")
						samples_col = i;
					else if (names[i] == "Overhead" || names[i] == "Self")
						pct_col = i;
				}
			}
			continue;
		}
		// " 54.58% \t 8732       \t[k] vm_normal_folio   \t-      -"
		if (pct_col == SIZE_MAX || sym_col == SIZE_MAX)
			continue; // no header yet: not a table
		auto f = split_fields(line);
		if (f.size() <= std::max(pct_col, sym_col))
			continue; // call-chain line, blank
		auto pct = percent(f[pct_col]);
		std::string_view sym = f[sym_col];
		if (!pct || sym.size() < 3 || sym[0] != '[' || sym[2] != ']')
			continue;
		std::optional<uint64_t> nsamples;
		if (samples_col < f.size())
			nsamples = parse_u64(f[samples_col]);
		++entries;
		if (nsamples)
			sample_sum += *nsamples;
		if (sym[1] == 'k') {
			kernel_pct += *pct;
			kernel.push_back({std::string(trim(sym.substr(3))), *pct, nsamples});
		}
	}
	std::stable_sort(kernel.begin(), kernel.end(),
			 [](const Entry &a, const Entry &b) { return a.percent > b.percent; });
	if (event)
		out["event"] = *event;
	if (samples_col != SIZE_MAX)
		out["samples"] = sample_sum;
	if (!samples_header.empty())
		out["samples_header"] = samples_header;
	if (lost)
		out["lost_samples"] = *lost;
	out["entries"] = entries;
	// rounded to 0.01 without an integer cast: a percent may parse as
	// anything up to 1e308 ("1e300%")
	out["kernel_percent"] = std::floor(kernel_pct * 100 + 0.5) / 100;
	Json syms = Json::array();
	for (size_t i = 0; i < kernel.size() && i < top; ++i) {
		Json s = Json::object();
		s["symbol"] = kernel[i].symbol;
		s["percent"] = kernel[i].percent;
		if (kernel[i].samples)
			s["samples"] = *kernel[i].samples;
		syms.push(std::move(s));
	}
	out["top_kernel_symbols"] = std::move(syms);
	return out;
}

Json parse_perf_stat_csv(std::string_view text)
{
	// count,unit,event,run_ns,run_pct[,metric,metric_unit]
	// count may be "<not supported>" / "<not counted>".
	Json events = Json::object(), unsupported = Json::array(), run = Json::object(),
	     malformed = Json::array();
	std::vector<std::pair<std::string, uint64_t>> counts; // keeps order
	std::vector<std::pair<std::string, uint64_t>> runs;
	std::vector<std::string> unsup_seen;
	auto add = [](std::vector<std::pair<std::string, uint64_t>> &v, const std::string &k,
		      uint64_t x) {
		for (auto &[name, val] : v)
			if (name == k) {
				val += x;
				return;
			}
		v.emplace_back(k, x);
	};
	for (std::string_view line : split_lines(text)) {
		line = trim(line);
		if (line.empty() || line.front() == '#')
			continue;
		const std::string_view whole = line;
		std::vector<std::string_view> f;
		while (true) {
			size_t c = line.find(',');
			f.push_back(line.substr(0, c));
			if (c == std::string_view::npos)
				break;
			line.remove_prefix(c + 1);
		}
		if (f.size() < 3 || trim(f[2]).empty()) {
			malformed.push(std::string(whole));
			continue;
		}
		std::string name(trim(f[2]));
		std::string_view cnt = trim(f[0]);
		if (cnt.starts_with("<")) {
			if (std::find(unsup_seen.begin(), unsup_seen.end(), name) == unsup_seen.end()) {
				unsup_seen.push_back(name);
				Json u = Json::object();
				u["event"] = name;
				u["reason"] = std::string("perf stat: ") + std::string(cnt);
				unsupported.push(std::move(u));
			}
			continue;
		}
		auto v = parse_u64(cnt);
		if (!v) {
			// software clocks print msec with decimals: keep as-is in ns
			auto d = parse_double(cnt);
			// (a negative, NaN or huge count is malformed, not UB)
			if (d && trim(f[1]) == "msec" && *d >= 0 &&
			    *d * 1e6 + 0.5 < 18446744073709551616.0)
				v = uint64_t(*d * 1e6 + 0.5);
		}
		if (!v) {
			malformed.push(std::string(whole));
			continue;
		}
		std::string key = trim(f[1]) == "msec" ? name + "_ns" : name;
		add(counts, key, *v);
		if (f.size() > 3)
			if (auto r = parse_u64(f[3]))
				add(runs, name, *r);
	}
	for (auto &[k, v] : counts)
		events[k] = v;
	for (auto &[k, v] : runs)
		run[k] = v;
	Json out = Json::object();
	out["events"] = std::move(events);
	out["unsupported"] = std::move(unsupported);
	out["run_ns"] = std::move(run);
	if (malformed.size())
		out["malformed"] = std::move(malformed);
	return out;
}

} // namespace ptwalk
