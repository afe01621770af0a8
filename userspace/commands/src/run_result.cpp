// SPDX-License-Identifier: GPL-2.0
// `ptwalk run`'s result, piece by piece. See run_result.hpp.
#include "run_result.hpp"

#include <cstring>
#include <ctime>
#include <string>
#include <string_view>

#include "ptwalk/procfs.hpp"
#include "ptwalk/result.hpp"
#include "ptwalk/units.hpp"

namespace ptwalk::run_result {

namespace {

std::string iso_now()
{
	char buf[32];
	time_t t = time(nullptr);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

} // namespace

RunResult header(const RunOptions &o)
{
	RunResult result;
	result.started_at = iso_now();
	result.argv = o.argv;
	result.kernel = kernel_info();
	result.host = host_info();
	return result;
}

ScenarioInfo scenario(const Scenario &sc)
{
	ScenarioInfo scen;
	scen.size_bytes = sc.size;
	scen.backing = sc.backing;
	if (sc.backing == Backing::file)
		scen.dir = sc.dir;
	if (sc.backing == Backing::alias)
		scen.alias = {physical_bytes(sc), double(sc.size) / double(physical_bytes(sc))};
	if (sc.backing == Backing::zeropage)
		scen.lower_bound = "every PTE maps the zero page: walks skip "
				   "non-normal pages, so this bounds walk cost from below";
	scen.profile = sc.profile;
	scen.victims = sc.victims;
	if (sc.fault_region != FaultRegion::any)
		scen.fault_region = sc.fault_region;
	scen.interval_ns = sc.interval_ns;
	scen.duration_ns = sc.duration_ns;
	scen.op_interval_ns = sc.op_interval_ns;
	scen.populate_threads = sc.populate_threads;
	scen.max_scans = sc.max_iterations;
	return scen;
}

namespace {

// What a backend saw of one walk.
void add_view(WalkEntry &j, const WalkKernelView &v)
{
	if (v.has_lock)
		j.lock = {v.lock_hold_ns, v.lock_wait_ns, v.lock_acquisitions, v.lock_mode};
	j.stalls = {v.stalls, v.max_stall_ns, v.max_stall_walker_held_ns};
	if (!v.has_module)
		return;
	WalkEntry::Module m;
	m.call_ns = v.kernel_duration_ns;
	if (v.walk_timed) {
		m.walk_ns = v.kernel_walk_ns;
		if (v.pte_slots)
			m.ns_per_pte = double(v.kernel_walk_ns) / double(v.pte_slots);
	}
	m.pte_tables = v.pte_tables;
	m.pte_slots_visited = v.pte_slots;
	m.pte_revisits = v.pte_revisits;
	m.pte_tables_mmap_locked = v.pte_tables_mmap_locked;
	m.tlb_flushes = v.tlb_flushes;
	m.tlb_ipis = v.tlb_ipis;
	m.probe_missed = v.probe_missed;
	m.vma = v.vma;
	j.module = m;
}

// The scanner's record of one walk, against the workload's size (ws, may
// be null) and the alias calibration (may be null).
WalkEntry walk_entry(const WalkRecord &w, const WalkSize *ws, const AliasCalibration *cal,
		     uint64_t rss_ref)
{
	WalkEntry j;
	j.kind = w.kind;
	j.iteration = w.iteration;
	j.walker_pid = w.walker_pid;
	j.start_ns = w.start_ns;
	j.duration_ns = w.end_ns - w.start_ns;
	j.syscall_ns = w.syscall_ns;
	if (ws) {
		j.size = {ws->entries, ws->ptes, ws->pmd_entries, ws->pte_slots};
		if (ws->entries) {
			const double nspte = double(w.end_ns - w.start_ns) / double(ws->entries);
			j.ns_per_pte = nspte;
			if (auto r = cal ? cal->ratio_of(j.kind) : std::nullopt)
				j.ns_per_pte_corrected = nspte * *r;
		}
	}
	if (w.bytes)
		j.bytes_read = w.bytes;
	if (j.kind == WalkKind::smaps && w.error == 0)
		j.referenced_bytes = w.referenced;
	if (j.kind == WalkKind::smaps_rollup && w.error == 0) {
		j.rollup_rss_bytes = w.rollup_rss;
		const std::string gap = rollup_coverage_gap(w.rollup_rss, rss_ref);
		if (!gap.empty())
			j.incomplete = gap;
	}
	if (w.error)
		j.error = strerror(w.error);
	return j;
}

} // namespace

std::vector<WalkEntry> walks(const Shared &sh, uint32_t nw,
			     const std::vector<WalkKernelView> &views, const WalkSize *ws,
			     const AliasCalibration *cal, uint64_t rss_ref)
{
	std::vector<WalkEntry> walks;
	for (uint32_t i = 0; i < nw; i++) {
		walks.push_back(walk_entry(sh.walks[i], ws, cal, rss_ref));
		if (i < views.size() && views[i].seen)
			add_view(walks.back(), views[i]);
	}
	return walks;
}

WorkingSetResult working_set(const Scenario &sc, const Shared &sh, uint32_t nw)
{
	WorkingSetResult r;
	r.spec = *sc.working_set;
	r.interval_ns = sc.interval_ns;
	const TouchSequence seq(sh.mapping_bytes / r.page_bytes, r.spec);
	r.touches = sh.touch.position.load();
	const uint64_t t0 = sh.touch.start_ns.load(), t1 = sh.touch.stop_ns.load();
	r.touch_ns = t0 && t1 > t0 ? t1 - t0 : 0;
	if (r.touch_ns)
		r.achieved_share =
			double(r.touches) /
			(double(r.touch_ns) / double(sc.interval_ns) * double(seq.pages()));
	if (is_kernel_monitor(sc.profile)) {
		const DamonState &ds = sh.damon;
		std::vector<DamonRead> reads;
		for (uint32_t i = 0; i < std::min(ds.ncalls.load(), kMaxDamonCalls); i++) {
			const DamonCall &c = ds.calls[i];
			reads.push_back({c.write_ns, c.return_ns, c.pos_before, c.pos_after,
					 c.accessed_bytes, c.kdamond_cpu_ns, c.nr_regions});
		}
		WorkingSetResult::Damon d;
		d.sample_us = ds.sample_us;
		d.aggr_us = ds.aggr_us;
		d.update_us = ds.update_us;
		d.return_slack_us = ds.return_slack_us;
		d.update_timeouts = ds.update_timeouts.load();
		d.kdamond_pid = ds.kdamond_pid;
		std::vector<TouchPoint> tl;
		const uint32_t n = std::min(sh.touch.ntimeline.load(), kTouchTimeline);
		for (uint32_t i = 1; i < n; i++)
			tl.push_back({sh.touch.timeline_ns[i], uint64_t(i) * kTouchStride});
		ws_judge_damon(&r, seq, reads, tl, d);
		return r;
	}
	std::vector<WsWalk> walks;
	for (uint32_t i = 0; i < nw; i++) {
		const WalkRecord &w = sh.walks[i];
		if (w.error)
			continue;
		walks.push_back({w.kind, w.start_ns, w.end_ns, w.ws_pos_before, w.ws_pos_after,
				 w.kind == WalkKind::smaps
					 ? std::optional<uint64_t>(w.referenced_mapping)
					 : std::nullopt,
				 w.syscall_ns});
	}
	ws_judge(&r, seq, walks);
	return r;
}

std::vector<VictimEntry> victims(const Shared &sh)
{
	std::vector<VictimEntry> victims;
	for (unsigned i = 0; i < sh.nvictims; i++) {
		const VictimSlot &v = sh.victims[i];
		victims.push_back({v.victim, v.tid.load(), v.outside.count() + v.during.count(),
				   v.outside, v.during,
				   v.run_delay_known.load()
					   ? std::optional<uint64_t>(v.run_delay_ns.load())
					   : std::nullopt});
	}
	return victims;
}

std::vector<VictimOp> slow_ops(const Shared &sh, uint64_t *dropped)
{
	std::vector<VictimOp> ops;
	for (unsigned i = 0; i < sh.nvictims; i++) {
		const VictimSlot &v = sh.victims[i];
		const uint32_t n = v.nslow.load();
		*dropped += n > kMaxSlowOps ? n - kMaxSlowOps : 0;
		for (uint32_t k = 0; k < std::min(n, kMaxSlowOps); k++)
			ops.push_back({pid_t(v.tid.load()), v.victim, v.slow[k].start_ns,
				       v.slow[k].end_ns, (v.slow[k].during & kOpDuring) != 0,
				       (v.slow[k].during & kOpBeganDuring) != 0,
				       v.slow[k].slept == kSleepUnknown
					       ? -1
					       : int((v.slow[k].slept & kOpSlept) != 0),
				       v.slow[k].slept == kSleepUnknown
					       ? -1
					       : int((v.slow[k].slept & kOpPreempted) != 0),
				       (v.slow[k].during & kOpUpkeep) != 0});
	}
	return ops;
}

} // namespace ptwalk::run_result
