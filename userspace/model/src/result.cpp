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
#include "ptwalk/scenario.hpp"
#include "ptwalk/units.hpp"
#include "ptwalk/vma_layout.hpp"

namespace ptwalk {

namespace {

double quantile(std::vector<double> v, double q)
{
	if (v.empty())
		return 0;
	std::sort(v.begin(), v.end());
	// nearest rank
	size_t rank = size_t(std::ceil(q * double(v.size())));
	return v[rank ? rank - 1 : 0];
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

// The figures of one kind's walks: a failed walk is only counted; an
// incomplete one gives only its stall (real), not its cost (not the
// mapping's).
KindSummary summarize_kind(WalkKind kind, const std::vector<const WalkEntry *> &ws, double gib,
			   bool whole_lock_view)
{
	KindSummary s;
	s.kind = kind;
	s.count = ws.size();
	std::vector<double> dur, nspte, corr, hold, stall;
	bool any_read = false, any_write = false;
	size_t untaken = 0; // complete walks that took no mmap_lock
	for (const WalkEntry *w : ws) {
		if (w->error) {
			s.errors++;
			continue;
		}
		if (w->stalls)
			stall.push_back(double(w->stalls->max_ns));
		if (w->incomplete) {
			s.incomplete++;
			continue;
		}
		dur.push_back(double(w->duration_ns));
		if (w->ns_per_pte)
			nspte.push_back(*w->ns_per_pte);
		if (w->ns_per_pte_corrected)
			corr.push_back(*w->ns_per_pte_corrected);
		if (!w->lock) {
			untaken++;
		} else {
			hold.push_back(double(w->lock->hold_ns));
			const LockMode m = w->lock->mode;
			any_read |= m == LockMode::read || m == LockMode::mixed;
			any_write |= m == LockMode::write || m == LockMode::mixed;
		}
		if (w->size)
			s.ptes = w->size->ptes;
	}
	if (!dur.empty()) {
		s.duration = {uint64_t(quantile(dur, 0.5)), uint64_t(quantile(dur, 1.0)),
			      uint64_t(quantile(dur, 0.0)), std::nullopt};
		if (gib > 0)
			s.duration->ms_per_gib_p50 = quantile(dur, 0.5) / 1e6 / gib;
	}
	if (!nspte.empty())
		s.ns_per_pte = {quantile(nspte, 0.5), quantile(nspte, 0.0)};
	if (!corr.empty())
		s.ns_per_pte_corrected_p50 = quantile(corr, 0.5);
	// A whole lock view that saw some walks take the lock saw the others
	// take none: they count as holds of 0 (a 6.19 maps run with one
	// fallback of 127 us in 20 walks has a median hold of 0, not 127 us).
	// A view that lost events may have lost a walk's hold: not counted.
	if (!hold.empty() && whole_lock_view)
		hold.insert(hold.end(), untaken, 0.0);
	if (!hold.empty())
		s.lock_hold = {uint64_t(quantile(hold, 0.5)), uint64_t(quantile(hold, 1.0)),
			       lock_mode(any_read, any_write)};
	if (!stall.empty())
		s.max_stall_ns = uint64_t(quantile(stall, 1.0));
	return s;
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

uint64_t workload_rss_reference(const WorkloadInfo &w)
{
	uint64_t ref = 0;
	for (const auto &s : {w.size_start, w.size_end})
		if (s)
			ref = std::max(ref, s->rss);
	return ref;
}

std::vector<KindSummary> summarize_walks(const std::vector<WalkEntry> &walks, uint64_t size_bytes,
					 bool whole_lock_view)
{
	const double gib = double(size_bytes) / double(1u << 30);
	std::map<WalkKind, std::vector<const WalkEntry *>> by_kind;
	std::vector<WalkKind> order;
	for (const auto &w : walks) {
		if (!by_kind.count(w.kind))
			order.push_back(w.kind);
		by_kind[w.kind].push_back(&w);
	}
	std::vector<KindSummary> sum;
	for (const auto &k : order)
		sum.push_back(summarize_kind(k, by_kind[k], gib, whole_lock_view));
	return sum;
}

namespace {

// The scenario, the backend and the kernel.
void print_header(const RunResult &r, FILE *out)
{
	const ScenarioInfo &scen = r.scenario;
	const std::optional<WalkSize> &size = r.workload.size_start;
	fprintf(out, "ptwalk run: %s %s, %s PTEs", format_bytes(scen.size_bytes).c_str(),
		name(scen.backing), size ? grouped(size->ptes).c_str() : "?");
	if (size && size->pmd_entries > 0)
		fprintf(out, " + %s PMD leaves", grouped(size->pmd_entries).c_str());
	if (size)
		fprintf(out, " (%s of PTE tables)", format_bytes(size->pte_slots * 8).c_str());
	fprintf(out, "; scanner %s every %s for %s", name(scen.profile),
		format_ns(scen.interval_ns).c_str(), format_ns(scen.duration_ns).c_str());
	if (scen.max_scans)
		fprintf(out, " or %llu scans", (unsigned long long)scen.max_scans);
	fputc('\n', out);
	fprintf(out, "backend: %s (%s)\n", name(r.backend), r.backend_detail.c_str());
	if (r.backend_fallback)
		fprintf(out, "         %s\n", r.backend_fallback->c_str());
	if (r.kernel.uname)
		fprintf(out, "kernel: %s\n", r.kernel.uname->release.c_str());
}

// The calibration of an aliased run's bias: its ratio per kind, or the
// range it found where its sizes disagree, and why.
void print_calibration(const AliasCalibration &cal, FILE *out)
{
	if (cal.skipped) {
		fprintf(out, "  no calibration: %s\n", cal.skipped->c_str());
		return;
	}
	fprintf(out, "  calibration up to %s, same run: distinct/aliased ns/PTE =",
		format_bytes(cal.size_bytes).c_str());
	for (const WalkKindInfo &ki : kWalkKindInfo) {
		const WalkKind id = ki.id;
		const char *k = ki.kind;
		if (auto v = cal.ratio_of(id)) {
			fprintf(out, " %s %.2f", k, *v);
		} else if (const KindVerdict *e = cal.verdict(id)) {
			fprintf(out, " %s %.2f-%.2f (not applied)", k, e->cost_ratio_range.first,
				e->cost_ratio_range.second);
		}
	}
	fprintf(out,
		"\n  'corr.' = the aliased figure x that ratio: an estimate "
		"for distinct pages, only where the calibrated sizes agree "
		"within %.0f%%\n",
		cal.tolerance * 100);
	for (const WalkKindInfo &ki : kWalkKindInfo)
		if (const KindVerdict *e = cal.verdict(ki.id); e && e->why)
			fprintf(out, "  %s: %s\n", ki.kind, e->why->c_str());
}

// An aliased run: what it is, and the calibration of its bias.
void print_alias(const RunResult &r, FILE *out)
{
	const ScenarioInfo &scen = r.scenario;
	if (!scen.alias)
		return;
	fprintf(out,
		"ALIASED: %s of virtual memory over %s of physical memory "
		"(each page mapped %.0fx): ns/PTE differs from distinct pages "
		"(hot struct pages, shared mapcounts)\n",
		format_bytes(scen.size_bytes).c_str(),
		format_bytes(scen.alias->physical_bytes).c_str(), scen.alias->factor);
	if (r.alias_calibration)
		print_calibration(*r.alias_calibration, out);
}

// One row per walk kind, and the walks left out of the figures.
void print_walks(const RunResult &r, FILE *out)
{
	if (r.scenario.lower_bound)
		fprintf(out, "ZERO PAGE: %s\n", r.scenario.lower_bound->c_str());

	fprintf(out, "\n%-16s %6s %12s %10s %10s %8s %8s %16s%s\n", "walk kind", "walks", "PTEs",
		"dur p50", "dur max", "ns/PTE", "ms/GiB", "lock hold p50",
		r.scenario.alias ? "  ns/PTE corr." : "");
	for (const WalkKindInfo &ki : kWalkKindInfo) {
		const char *k = ki.kind;
		const KindSummary *s = find_kind(r.walk_summary, ki.id);
		if (!s)
			continue;
		std::string hold = "-";
		if (s->lock_hold)
			hold = format_ns(s->lock_hold->p50_ns) + " " + name(s->lock_hold->mode);
		char nspte[32] = "-", mspg[32] = "-";
		if (s->ns_per_pte)
			snprintf(nspte, sizeof(nspte), "%.1f", s->ns_per_pte->p50);
		if (s->duration && s->duration->ms_per_gib_p50)
			snprintf(mspg, sizeof(mspg), "%.2f", *s->duration->ms_per_gib_p50);
		char corr[32] = "";
		if (s->ns_per_pte_corrected_p50)
			snprintf(corr, sizeof(corr), "  %12.1f", *s->ns_per_pte_corrected_p50);
		fprintf(out, "%-16s %6llu %12s %10s %10s %8s %8s %16s%s\n", k,
			(unsigned long long)s->count, grouped(s->ptes).c_str(),
			format_ns(s->duration ? s->duration->p50_ns : 0).c_str(),
			format_ns(s->duration ? s->duration->max_ns : 0).c_str(), nspte, mspg,
			hold.c_str(), corr);
	}
	for (const WalkKindInfo &ki : kWalkKindInfo) {
		const char *k = ki.kind;
		const KindSummary *s = find_kind(r.walk_summary, ki.id);
		if (s && s->incomplete > 0)
			fprintf(out,
				"  %s: %llu of %llu walks skipped VMAs after yielding "
				"mmap_lock (their own Rss is short of the workload's): "
				"left out of the figures above; a kernel bug, fixed "
				"upstream by 6d065f507d82 and not in 6.1.y\n",
				k, (unsigned long long)s->incomplete, (unsigned long long)s->count);
	}
}

// The victims' latencies outside and during walks.
void print_victims(const RunResult &r, FILE *out)
{
	if (r.victims.empty())
		return;
	fprintf(out, "\n%-8s %9s %9s  %-21s %-21s %-21s %-21s %7s\n", "victim", "ops out", "during",
		"p50 out/during", "p99 out/during", "p99.9 out/during", "max out/during", "p99.9x");
	for (const Victim victim : kVictims) {
		const VictimEntry *v = find_victim(r.victims, victim);
		if (!v)
			continue;
		const Histogram &o = v->outside, &d = v->during;
		auto cell = [&](uint64_t out_ns, uint64_t during_ns) {
			return format_ns(out_ns) + " / " +
			       (d.count() > 0 ? format_ns(during_ns) : std::string("-"));
		};
		auto q = [&](double p) { return cell(o.quantile(p), d.quantile(p)); };
		const uint64_t po = o.quantile(0.999), pd = d.quantile(0.999);
		char ratio[16] = "-";
		if (po > 0 && d.count() > 0)
			snprintf(ratio, sizeof(ratio), "%.1f", double(pd) / double(po));
		fprintf(out, "%-8s %9llu %9llu  %-21s %-21s %-21s %-21s %7s\n", name(victim),
			(unsigned long long)o.count(), (unsigned long long)d.count(),
			q(0.50).c_str(), q(0.99).c_str(), q(0.999).c_str(),
			cell(o.max(), d.max()).c_str(), ratio);
	}
}

// The worst attributed stall and who kept the lock from it, when the view
// split it (the list is longest first).
void print_worst_stall(const KernelView &kv, FILE *out)
{
	if (!kv.stalls || kv.stalls->list.empty())
		return;
	const KernelStall &s = kv.stalls->list.front();
	if (!s.walker_held_ns || !s.others_held_ns || !s.free_ns)
		return;
	std::string off;
	if (s.walker_off_cpu_ns)
		off = " (walker off CPU " + format_ns(*s.walker_off_cpu_ns) + " of it)";
	if (s.waiter_runnable_ns && *s.waiter_runnable_ns)
		off += " (waiter runnable, not on a CPU, " + format_ns(*s.waiter_runnable_ns) +
		       " of it)";
	std::string chain;
	if (s.vma_chain_ns && *s.vma_chain_ns)
		chain = " (a writer waiting for the walk's VMA lock " + format_ns(*s.vma_chain_ns) +
			" of it)";
	fprintf(out, "\nworst stall %s (%s, walk %llu): walk held %s%s, others %s%s, free %s\n",
		format_ns(s.wait_ns).c_str(), waiter_name(s.waiter).c_str(),
		(unsigned long long)s.walk, format_ns(*s.walker_held_ns).c_str(), off.c_str(),
		format_ns(*s.others_held_ns).c_str(), chain.c_str(), format_ns(*s.free_ns).c_str());
}

// The waits on VMA locks: the module's view of them, or why there is none.
void print_vma_locks(const KernelView &kv, FILE *out)
{
	if (!kv.vma_locks)
		return;
	const VmaLockView &v = *kv.vma_locks;
	if (!v.available) {
		fprintf(out, "vma locks: not seen: %s\n", v.why.value_or("").c_str());
		return;
	}
	fprintf(out,
		"vma locks (ptwalk.ko): %llu writer waits behind the walks' VMA read locks, "
		"longest %s (walk held %s at most), %llu during walks not behind one; "
		"%llu listed mmap_lock stalls queued behind such a writer, %s in all\n",
		(unsigned long long)v.waits_behind_walk, format_ns(v.max_wait_ns).c_str(),
		format_ns(v.max_walker_held_ns).c_str(), (unsigned long long)v.waits_not_behind,
		(unsigned long long)v.chain_stalls, format_ns(v.chain_ns).c_str());
}

// The validation's lines: the views against the victims, the module's
// records against the walks.
void print_validation(const Validation &val, FILE *out)
{
	const std::string line = validation_line(val);
	if (!line.empty())
		fprintf(out, "\n%s\n", line.c_str());
	if (val.walks)
		for (const auto &d : val.walks->disagreements)
			fprintf(out, "validation: module records DISAGREE: %s\n", d.c_str());
	if (val.stall_parts && val.stall_parts->bad)
		fprintf(out,
			"validation: stall splits DISAGREE: %llu of %llu do not sum to "
			"their wait\n",
			(unsigned long long)val.stall_parts->bad,
			(unsigned long long)val.stall_parts->checked);
	if (val.stall_parts && val.stall_parts->runnable && val.stall_parts->runnable->bad) {
		std::string names;
		for (const Victim b : val.stall_parts->runnable->bad_victims)
			names += std::string(names.empty() ? "" : ", ") + name(b);
		fprintf(out,
			"validation: waiter runnable DISAGREES with schedstat: %s runnable "
			"longer in its stalls than the kernel's run_delay\n",
			names.c_str());
	}
}

} // namespace

void print_table(const RunResult &r, FILE *out)
{
	print_header(r, out);
	print_alias(r, out);
	print_walks(r, out);
	print_victims(r, out);
	if (r.working_set)
		print_working_set(*r.working_set, out);
	print_worst_stall(r.kernel_view, out);
	print_vma_locks(r.kernel_view, out);
	if (r.stall_estimate)
		print_stall_estimates(*r.stall_estimate, out);
	if (const auto &tp = r.kernel_view.tracepoint; tp && tp->lost_events > 0)
		fprintf(out, "\nwarning: %llu tracepoint events lost: lock figures are partial\n",
			(unsigned long long)tp->lost_events);
	print_validation(r.validation, out);
	if (!r.complete)
		fprintf(out, "\nresult INCOMPLETE%s%s\n", r.error ? ": " : "",
			r.error ? r.error->c_str() : "");
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
