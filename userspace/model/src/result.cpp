// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/result.hpp"
#include "ptwalk/validation.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <unistd.h>
#include <vector>

#include "ptwalk/fd.hpp"
#include "ptwalk/units.hpp"
#include "ptwalk/vma_layout.hpp"

namespace ptwalk {

namespace {

// Walk kinds in the order tables list them.
constexpr const char *kWalkKinds[] = {
	"clear_refs", "clear_refs_anon", "clear_refs_file", "softdirty", "smaps",
	"smaps_rollup", "maps", "numa_maps", "pagemap", "pagemap_scan",
};

// Reads a numeric member as double; nullopt when absent or not numeric.
std::optional<double> num(const Json &j, std::string_view key)
{
	const Json *v = j.find(key);
	return v ? v->number() : std::nullopt;
}

std::string str(const Json &j, std::string_view key)
{
	const Json *v = j.find(key);
	if (!v)
		return "";
	return v->string().value_or(v->dump());
}

double quantile(std::vector<double> v, double q)
{
	if (v.empty())
		return 0;
	std::sort(v.begin(), v.end());
	// nearest rank
	size_t rank = size_t(std::ceil(q * double(v.size())));
	return v[rank ? rank - 1 : 0];
}

template <typename F> void each(const Json &arr, F f)
{
	for (size_t i = 0; i < arr.size(); i++)
		f(arr.at(i));
}

std::string grouped(uint64_t v)
{
	std::string s = std::to_string(v), out;
	int n = 0;
	for (auto it = s.rbegin(); it != s.rend(); ++it) {
		if (n && n % 3 == 0)
			out += ',';
		out += *it;
		n++;
	}
	return {out.rbegin(), out.rend()};
}

} // namespace

std::string rollup_coverage_gap(uint64_t rollup_rss, uint64_t workload_rss)
{
	if (rollup_rss + kRollupRssSlack >= workload_rss)
		return "";
	char b[160];
	snprintf(b, sizeof(b),
		 "smaps_rollup reported Rss %.1f MiB of the workload's %.1f MiB: "
		 "the kernel skipped VMAs",
		 double(rollup_rss) / 1048576.0, double(workload_rss) / 1048576.0);
	return b;
}

uint64_t workload_rss_reference(const Json &result)
{
	double ref = 0;
	if (const Json *w = result.find("workload"))
		for (const char *k : {"size_start", "size_end"})
			if (const Json *s = w->find(k))
				ref = std::max(ref, num(*s, "rss_bytes").value_or(0));
	return uint64_t(ref);
}

void summarize_walks(Json &result)
{
	const Json *walks = result.find("walks");
	const Json *scen = result.find("scenario");
	double gib = scen ? num(*scen, "size_bytes").value_or(0) / double(1u << 30) : 0;
	std::map<std::string, std::vector<const Json *>> by_kind;
	std::vector<std::string> order;
	if (walks)
		each(*walks, [&](const Json &w) {
			std::string k = str(w, "kind");
			if (!by_kind.count(k))
				order.push_back(k);
			by_kind[k].push_back(&w);
		});
	Json sum = Json::object();
	for (auto &k : order) {
		std::vector<double> dur, nspte, corr, hold, stall;
		double ptes = 0;
		unsigned errors = 0, incomplete = 0;
		for (const Json *w : by_kind[k]) {
			if (w->find("error")) {
				errors++;
				continue;
			}
			// its stalls are real, its cost is not the mapping's
			if (auto v = num(*w, "max_stall_ns"))
				stall.push_back(*v);
			if (w->find("incomplete")) {
				incomplete++;
				continue;
			}
			dur.push_back(num(*w, "duration_ns").value_or(0));
			if (auto v = num(*w, "ns_per_pte"))
				nspte.push_back(*v);
			if (auto v = num(*w, "ns_per_pte_corrected"))
				corr.push_back(*v);
			if (auto v = num(*w, "lock_hold_ns"))
				hold.push_back(*v);
			ptes = num(*w, "ptes").value_or(ptes);
		}
		Json s = Json::object();
		s["count"] = by_kind[k].size();
		s["errors"] = errors;
		s["incomplete"] = incomplete;
		s["ptes"] = uint64_t(ptes);
		if (!dur.empty()) {
			s["duration_p50_ns"] = uint64_t(quantile(dur, 0.5));
			s["duration_max_ns"] = uint64_t(quantile(dur, 1.0));
			s["duration_min_ns"] = uint64_t(quantile(dur, 0.0));
			if (gib > 0)
				s["ms_per_gib_p50"] = quantile(dur, 0.5) / 1e6 / gib;
		}
		if (!nspte.empty()) {
			s["ns_per_pte_p50"] = quantile(nspte, 0.5);
			s["ns_per_pte_min"] = quantile(nspte, 0.0);
		}
		if (!corr.empty())
			s["ns_per_pte_corrected_p50"] = quantile(corr, 0.5);
		if (!hold.empty()) {
			s["lock_hold_p50_ns"] = uint64_t(quantile(hold, 0.5));
			s["lock_hold_max_ns"] = uint64_t(quantile(hold, 1.0));
			s["lock_mode"] = str(*by_kind[k].front(), "lock_mode");
		}
		if (!stall.empty())
			s["max_stall_ns"] = uint64_t(quantile(stall, 1.0));
		sum[k] = std::move(s);
	}
	result["walk_summary"] = std::move(sum);
}

namespace {

// The scenario, the backend and the kernel.
void print_header(const Json &r, FILE *out)
{
	const Json *scen = r.find("scenario");
	const Json *wl = r.find("workload");
	const Json *size = wl ? wl->find("size_start") : nullptr;
	if (scen) {
		fprintf(out, "ptwalk run: %s %s, %s PTEs", format_bytes(uint64_t(
			num(*scen, "size_bytes").value_or(0))).c_str(),
			str(*scen, "backing").c_str(),
			size ? grouped(uint64_t(num(*size, "ptes").value_or(0))).c_str() : "?");
		if (size && num(*size, "pmd_entries").value_or(0) > 0)
			fprintf(out, " + %s PMD leaves",
				grouped(uint64_t(num(*size, "pmd_entries").value_or(0))).c_str());
		if (size)
			fprintf(out, " (%s of PTE tables)",
				format_bytes(uint64_t(num(*size, "pte_slots").value_or(0) * 8)).c_str());
		fprintf(out, "; scanner %s every %s for %s\n", str(*scen, "profile").c_str(),
			format_ns(uint64_t(num(*scen, "interval_ns").value_or(0))).c_str(),
			format_ns(uint64_t(num(*scen, "duration_ns").value_or(0))).c_str());
	}
	fprintf(out, "backend: %s (%s)\n", str(r, "backend").c_str(),
		str(r, "backend_detail").c_str());
	if (r.find("backend_fallback"))
		fprintf(out, "         %s\n", str(r, "backend_fallback").c_str());
	if (const Json *k = r.find("kernel"))
		fprintf(out, "kernel: %s\n", str(*k, "release").c_str());
}

// An aliased run: what it is, and the calibration of its bias.
void print_alias(const Json &r, FILE *out)
{
	const Json *scen = r.find("scenario");
	if (scen && scen->find("aliased")) {
		fprintf(out, "ALIASED: %s of virtual memory over %s of physical memory "
			"(each page mapped %.0fx): ns/PTE differs from distinct pages "
			"(hot struct pages, shared mapcounts)\n",
			format_bytes(uint64_t(num(*scen, "size_bytes").value_or(0))).c_str(),
			format_bytes(uint64_t(num(*scen, "physical_bytes").value_or(0))).c_str(),
			num(*scen, "alias_factor").value_or(0));
		const Json *cal = r.find("alias_calibration");
		if (cal && cal->find("ratio")) {
			fprintf(out, "  calibration up to %s, same run: distinct/aliased ns/PTE =",
				format_bytes(uint64_t(num(*cal, "size_bytes").value_or(0))).c_str());
			const Json *ra = cal->find("ratio");
			const Json *ck = cal->find("kinds");
			for (const char *k : kWalkKinds) {
				if (auto v = num(*ra, k)) {
					fprintf(out, " %s %.2f", k, *v);
				} else if (const Json *e = ck ? ck->find(k) : nullptr) {
					const Json *rg = e->find("cost_ratio_range");
					if (rg && rg->size() == 2)
						fprintf(out, " %s %.2f-%.2f (not applied)", k,
							rg->at(0).number().value_or(0),
							rg->at(1).number().value_or(0));
				}
			}
			fprintf(out, "\n  'corr.' = the aliased figure x that ratio: an estimate "
				     "for distinct pages, only where the calibrated sizes agree "
				     "within %.0f%%\n", num(*cal, "tolerance").value_or(0.15) * 100);
			if (const Json *ck2 = cal->find("kinds"))
				for (const char *k : kWalkKinds)
					if (const Json *e = ck2->find(k); e && e->find("why"))
						fprintf(out, "  %s: %s\n", k, str(*e, "why").c_str());
		} else if (cal) {
			fprintf(out, "  no calibration: %s\n",
				str(*cal, "skipped").c_str());
		}
	}
}

// One row per walk kind, and the walks left out of the figures.
void print_walks(const Json &r, FILE *out)
{
	const Json *scen = r.find("scenario");
	if (scen && scen->find("lower_bound"))
		fprintf(out, "ZERO PAGE: %s\n", str(*scen, "lower_bound").c_str());

	fprintf(out, "\n%-16s %6s %12s %10s %10s %8s %8s %16s%s\n", "walk kind", "walks",
		"PTEs", "dur p50", "dur max", "ns/PTE", "ms/GiB", "lock hold p50",
		scen && scen->find("aliased") ? "  ns/PTE corr." : "");
	if (const Json *ws = r.find("walk_summary")) {
		for (const char *k : kWalkKinds) {
			const Json *s = ws->find(k);
			if (!s)
				continue;
			std::string hold = "-";
			if (auto h = num(*s, "lock_hold_p50_ns"))
				hold = format_ns(uint64_t(*h)) + " " + str(*s, "lock_mode");
			char nspte[32] = "-", mspg[32] = "-";
			if (auto v = num(*s, "ns_per_pte_p50"))
				snprintf(nspte, sizeof(nspte), "%.1f", *v);
			if (auto v = num(*s, "ms_per_gib_p50"))
				snprintf(mspg, sizeof(mspg), "%.2f", *v);
			char corr[32] = "";
			if (auto v = num(*s, "ns_per_pte_corrected_p50"))
				snprintf(corr, sizeof(corr), "  %12.1f", *v);
			fprintf(out, "%-16s %6llu %12s %10s %10s %8s %8s %16s%s\n", k,
				(unsigned long long)num(*s, "count").value_or(0),
				grouped(uint64_t(num(*s, "ptes").value_or(0))).c_str(),
				format_ns(uint64_t(num(*s, "duration_p50_ns").value_or(0))).c_str(),
				format_ns(uint64_t(num(*s, "duration_max_ns").value_or(0))).c_str(),
				nspte, mspg, hold.c_str(), corr);
		}
		for (const char *k : kWalkKinds) {
			const Json *s = ws->find(k);
			const double n = s ? num(*s, "incomplete").value_or(0) : 0;
			if (n > 0)
				fprintf(out,
					"  %s: %.0f of %.0f walks skipped VMAs after yielding "
					"mmap_lock (their own Rss is short of the workload's): "
					"left out of the figures above; a kernel bug, fixed "
					"upstream by 6d065f507d82 and not in 6.1.y\n",
					k, n, num(*s, "count").value_or(0));
		}
	}
}

// The victims' latencies outside and during walks.
void print_victims(const Json &r, FILE *out)
{
	const Json *vs = r.find("victims");
	if (vs && vs->size()) {
		fprintf(out, "\n%-8s %9s %9s  %-21s %-21s %-21s %-21s %7s\n", "victim",
			"ops out", "during", "p50 out/during", "p99 out/during",
			"p99.9 out/during", "max out/during", "p99.9x");
		for (const char *v : {"read", "write", "fault", "mmap"}) {
			const Json *j = vs->find(v);
			if (!j)
				continue;
			const Json *o = j->find("outside"), *d = j->find("during");
			auto cell = [&](const char *key) {
				return format_ns(uint64_t(num(*o, key).value_or(0))) + " / " +
				       (num(*d, "count").value_or(0) > 0
						? format_ns(uint64_t(num(*d, key).value_or(0)))
						: std::string("-"));
			};
			double po = num(*o, "p999_ns").value_or(0), pd = num(*d, "p999_ns").value_or(0);
			char ratio[16] = "-";
			if (po > 0 && num(*d, "count").value_or(0) > 0)
				snprintf(ratio, sizeof(ratio), "%.1f", pd / po);
			fprintf(out, "%-8s %9llu %9llu  %-21s %-21s %-21s %-21s %7s\n", v,
				(unsigned long long)num(*o, "count").value_or(0),
				(unsigned long long)num(*d, "count").value_or(0),
				cell("p50_ns").c_str(), cell("p99_ns").c_str(),
				cell("p999_ns").c_str(), cell("max_ns").c_str(), ratio);
		}
	}
}

} // namespace

void print_table(const Json &r, FILE *out)
{
	print_header(r, out);
	print_alias(r, out);
	print_walks(r, out);
	print_victims(r, out);
	print_stall_estimates(r, out);
	if (const Json *kv = r.find("kernel_view"))
		if (auto lost = num(*kv, "lost_events"); lost && *lost > 0)
			fprintf(out, "\nwarning: %llu tracepoint events lost: lock figures are partial\n",
				(unsigned long long)*lost);
	if (const Json *val = r.find("validation")) {
		const std::string line = validation_line(*val);
		if (!line.empty())
			fprintf(out, "\n%s\n", line.c_str());
		if (const Json *w = val->find("walks"))
			if (const Json *d = w->find("disagreements"))
				for (size_t i = 0; i < d->size(); i++)
					fprintf(out, "validation: module records DISAGREE: %s\n",
						d->at(i).string().value_or("").c_str());
	}
	if (!r.find("complete") || !r.find("complete")->boolean().value_or(false))
		fprintf(out, "\nresult INCOMPLETE%s%s\n", r.find("error") ? ": " : "",
			r.find("error") ? str(r, "error").c_str() : "");
}

std::string write_atomically(const std::string &path, const std::string &text)
{
	std::string tmp = path + ".tmp." + std::to_string(getpid());
	Fd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
	if (!fd)
		return tmp + ": " + strerror(errno);
	size_t off = 0;
	while (off < text.size()) {
		ssize_t n = write(fd.get(), text.data() + off, text.size() - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			unlink(tmp.c_str());
			return tmp + ": " + strerror(e);
		}
		off += size_t(n);
	}
	if (fsync(fd.get()) != 0 && errno != EINVAL) {
		int e = errno;
		unlink(tmp.c_str());
		return tmp + ": fsync: " + strerror(e);
	}
	fd.reset();
	if (rename(tmp.c_str(), path.c_str()) != 0) {
		int e = errno;
		unlink(tmp.c_str());
		return path + ": " + strerror(e);
	}
	return "";
}

} // namespace ptwalk
