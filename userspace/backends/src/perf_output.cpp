// SPDX-License-Identifier: GPL-2.0
// The parsers of what perf writes in its field-separated forms: `perf
// report --stdio -t '\\t'` symbols and `perf stat -x,` counts. Pure, so
// tested and fuzzed on recorded output. See perf_session.hpp.
#include "ptwalk/perf_session.hpp"

#include <algorithm>
#include <cmath>
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
		out.push_back(trim(line.substr(
			pos, tab == std::string_view::npos ? std::string_view::npos : tab - pos)));
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

PerfReportSummary parse_perf_report_symbols(std::string_view text, size_t top)
{
	std::vector<PerfSymbol> kernel;
	PerfReportSummary out;
	std::string samples_header;
	// columns, by the names of the header line: "# Overhead\tSamples\tSymbol"
	// (children mode: "# Children\tSelf\tSymbol")
	size_t pct_col = SIZE_MAX, samples_col = SIZE_MAX, sym_col = SIZE_MAX;
	uint64_t sample_sum = 0;
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
				if (of != std::string_view::npos && !out.event) {
					std::string_view ev = c.substr(of + 11);
					out.event = std::string(ev.substr(0, ev.find('\'')));
				}
			} else if (c.starts_with("Total Lost Samples:")) {
				out.lost_samples = parse_u64(c.substr(19));
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
		++out.entries;
		if (nsamples)
			sample_sum += *nsamples;
		if (sym[1] == 'k') {
			kernel_pct += *pct;
			kernel.push_back({std::string(trim(sym.substr(3))), *pct, nsamples});
		}
	}
	std::stable_sort(kernel.begin(), kernel.end(),
			 [](const PerfSymbol &a, const PerfSymbol &b) {
		return a.percent > b.percent;
	});
	if (samples_col != SIZE_MAX)
		out.samples = sample_sum;
	if (!samples_header.empty())
		out.samples_header = samples_header;
	// rounded to 0.01 without an integer cast: a percent may parse as
	// anything up to 1e308 ("1e300%")
	out.kernel_percent = std::floor(kernel_pct * 100 + 0.5) / 100;
	if (kernel.size() > top)
		kernel.resize(top);
	out.top_kernel_symbols = std::move(kernel);
	return out;
}

PerfStatSummary parse_perf_stat_csv(std::string_view text)
{
	// count,unit,event,run_ns,run_pct[,metric,metric_unit]
	// count may be "<not supported>" / "<not counted>".
	PerfStatSummary out;
	auto add = [](PerfCounts &v, const std::string &k, uint64_t x) {
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
			out.malformed.emplace_back(whole);
			continue;
		}
		std::string name(trim(f[2]));
		std::string_view cnt = trim(f[0]);
		if (cnt.starts_with("<")) {
			if (std::none_of(out.unsupported.begin(), out.unsupported.end(),
					 [&](const PerfUnsupported &u) { return u.event == name; }))
				out.unsupported.push_back(
					{name, std::string("perf stat: ") + std::string(cnt)});
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
			out.malformed.emplace_back(whole);
			continue;
		}
		std::string key = trim(f[1]) == "msec" ? name + "_ns" : name;
		add(out.events, key, *v);
		if (f.size() > 3)
			if (auto r = parse_u64(f[3]))
				add(out.run_ns, name, *r);
	}
	return out;
}

} // namespace ptwalk
