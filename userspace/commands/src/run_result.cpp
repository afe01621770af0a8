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

Json header(const RunOptions &o)
{
	Json result = Json::object();
	result["schema"] = kResultSchema;
	result["tool"] = Json(Json::Object{{"name", "ptwalk"}, {"version", kVersion}});
	result["complete"] = false;
	result["started_at"] = iso_now();
	Json argv = Json::array();
	for (auto &a : o.argv)
		argv.push(a);
	result["argv"] = std::move(argv);
	result["kernel"] = kernel_info();
	result["host"] = host_info();

	return result;
}

Json scenario(const Scenario &sc)
{
	Json scen = Json::object();
	scen["size_bytes"] = sc.size;
	scen["backing"] = name(sc.backing);
	if (sc.backing == Backing::file)
		scen["dir"] = sc.dir;
	if (sc.backing == Backing::alias) {
		scen["physical_bytes"] = physical_bytes(sc);
		scen["aliased"] = true;
		scen["alias_factor"] = double(sc.size) / double(physical_bytes(sc));
	}
	if (sc.backing == Backing::zeropage)
		scen["lower_bound"] = "every PTE maps the zero page: walks skip "
				      "non-normal pages, so this bounds walk cost from below";
	scen["profile"] = name(sc.profile);
	Json vs = Json::array();
	for (auto v : sc.victims)
		vs.push(name(v));
	scen["victims"] = std::move(vs);
	scen["interval_ns"] = sc.interval_ns;
	scen["duration_ns"] = sc.duration_ns;
	scen["op_interval_ns"] = sc.op_interval_ns;
	scen["populate_threads"] = sc.populate_threads;
	return scen;
}

Json walks(const Shared &sh, uint32_t nw, const std::vector<WalkKernelView> &views,
	   const WalkSize *ws, const Json *ratios, uint64_t rss_ref)
{
	Json walks = Json::array();
	for (uint32_t i = 0; i < nw; i++) {
		const WalkRecord &w = sh.walks[i];
		Json j = Json::object();
		j["kind"] = w.kind;
		j["iteration"] = w.iteration;
		j["walker_pid"] = w.walker_pid;
		j["start_ns"] = w.start_ns;
		j["duration_ns"] = w.end_ns - w.start_ns;
		j["syscall_ns"] = w.syscall_ns;
		if (ws) {
			j["ptes"] = ws->entries;
			j["ptes_4k"] = ws->ptes;
			j["pmd_leaves"] = ws->pmd_entries;
			j["pte_slots"] = ws->pte_slots;
			if (ws->entries) {
				const double nspte = double(w.end_ns - w.start_ns) / double(ws->entries);
				j["ns_per_pte"] = nspte;
				const Json *r = ratios ? ratios->find(w.kind) : nullptr;
				if (r && r->number())
					j["ns_per_pte_corrected"] = nspte * *r->number();
			}
		}
		if (w.bytes)
			j["bytes_read"] = w.bytes;
		if (std::string_view(w.kind) == "smaps" && w.error == 0)
			j["referenced_bytes"] = w.referenced;
		if (std::string_view(w.kind) == "smaps_rollup" && w.error == 0) {
			j["rollup_rss_bytes"] = w.rollup_rss;
			const std::string gap = rollup_coverage_gap(w.rollup_rss, rss_ref);
			if (!gap.empty())
				j["incomplete"] = gap;
		}
		if (w.error)
			j["error"] = strerror(w.error);
		if (i < views.size() && views[i].seen) {
			const auto &v = views[i];
			if (v.has_lock) {
				j["lock_hold_ns"] = v.lock_hold_ns;
				j["lock_wait_ns"] = v.lock_wait_ns;
				j["lock_acquisitions"] = v.lock_acquisitions;
				j["lock_mode"] = v.lock_mode;
			}
			j["stalls"] = v.stalls;
			j["max_stall_ns"] = v.max_stall_ns;
			if (v.has_module) {
				j["kernel_duration_ns"] = v.kernel_duration_ns;
				j["kernel_call_ns"] = v.kernel_duration_ns;
				if (v.walk_timed) {
					j["kernel_walk_ns"] = v.kernel_walk_ns;
					if (v.pte_slots)
						j["kernel_ns_per_pte"] = double(v.kernel_walk_ns) /
									 double(v.pte_slots);
				}
				j["pte_tables"] = v.pte_tables;
				j["pte_slots_visited"] = v.pte_slots;
				j["pte_revisits"] = v.pte_revisits;
				j["tlb_flushes"] = v.tlb_flushes;
				j["tlb_ipis"] = v.tlb_ipis;
				j["probe_missed"] = v.probe_missed;
			}
		}
		walks.push(std::move(j));
	}
	return walks;
}

Json victims(const Shared &sh)
{
	Json victims = Json::object();
	for (unsigned i = 0; i < sh.nvictims; i++) {
		const VictimSlot &v = sh.victims[i];
		Json j = Json::object();
		j["tid"] = v.tid.load();
		j["ops"] = v.outside.count() + v.during.count();
		j["outside"] = v.outside.to_json();
		j["during"] = v.during.to_json();
		victims[v.name] = std::move(j);
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
			ops.push_back({pid_t(v.tid.load()), v.name, v.slow[k].start_ns,
					    v.slow[k].end_ns, (v.slow[k].during & kOpDuring) != 0,
					    (v.slow[k].during & kOpBeganDuring) != 0,
					    v.slow[k].slept == kSleepUnknown
						    ? -1 : int((v.slow[k].slept & kOpSlept) != 0),
					    v.slow[k].slept == kSleepUnknown
						    ? -1 : int((v.slow[k].slept & kOpPreempted) != 0)});
	}
	return ops;
}

} // namespace ptwalk::run_result
