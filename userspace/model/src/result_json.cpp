// SPDX-License-Identifier: GPL-2.0
// The typed result's JSON (result_types.hpp): each part in the member order
// results/SCHEMA.md gives, written once.
#include "ptwalk/result.hpp"
#include "ptwalk/result_types.hpp"

namespace ptwalk {

const KindSummary *find_kind(const std::vector<KindSummary> &s, WalkKind kind)
{
	for (const auto &k : s)
		if (k.kind == kind)
			return &k;
	return nullptr;
}

const VictimEntry *find_victim(const std::vector<VictimEntry> &v, Victim victim)
{
	for (const auto &e : v)
		if (e.victim == victim)
			return &e;
	return nullptr;
}

void to_json(Json::Value &j, const ScenarioInfo &s)
{
	j = Json::Value::object();
	j["size_bytes"] = s.size_bytes;
	j["backing"] = name(s.backing);
	put_optional(j, "dir", s.dir);
	if (s.alias) {
		j["physical_bytes"] = s.alias->physical_bytes;
		j["aliased"] = true;
		j["alias_factor"] = s.alias->factor;
	}
	put_optional(j, "lower_bound", s.lower_bound);
	j["profile"] = name(s.profile);
	Json::Value victims = Json::Value::array();
	for (const Victim v : s.victims)
		victims.push_back(name(v));
	j["victims"] = std::move(victims);
	if (s.fault_region)
		j["fault_region"] = name(*s.fault_region);
	j["interval_ns"] = s.interval_ns;
	j["duration_ns"] = s.duration_ns;
	j["op_interval_ns"] = s.op_interval_ns;
	j["populate_threads"] = s.populate_threads;
	if (s.max_scans)
		j["max_scans"] = s.max_scans;
}

void to_json(Json::Value &j, const LayoutSummary &l)
{
	j = Json::Value::object();
	j["vmas"] = l.vmas;
	j["bytes"] = l.bytes;
	j["largest_bytes"] = l.largest_bytes;
	Json::Value h = Json::Value::array();
	for (const auto &b : l.size_histogram)
		h.push_back({{"from_bytes", b.from_bytes},
			     {"to_bytes", b.to_bytes},
			     {"count", b.count},
			     {"bytes", b.bytes}});
	j["size_histogram"] = std::move(h);
	j["mapping"] = {{"vmas", l.mapping.vmas},
			{"bytes", l.mapping.bytes},
			{"largest_bytes", l.mapping.largest_bytes},
			{"smallest_bytes", l.mapping.smallest_bytes}};
}

void to_json(Json::Value &j, const WorkloadInfo &w)
{
	j = Json::Value::object();
	j["pid"] = w.pid;
	j["populate_ns"] = w.populate_ns;
	j["populate_bytes"] = w.populate_bytes;
	put_optional(j, "populate_bytes_per_s", w.populate_bytes_per_s);
	if (w.size_start)
		j["size_start"] = w.size_start->to_json().value();
	put_optional(j, "vma_layout", w.vma_layout);
	if (w.size_end)
		j["size_end"] = w.size_end->to_json().value();
	put_optional(j, "ptes_source", w.ptes_source);
}

void to_json(Json::Value &j, const SelfMemory &m)
{
	j = Json::Value::object();
	put_optional(j, "workload_rss_minus_mapping_bytes", m.workload_rss_minus_mapping_bytes);
	put_optional(j, "parent_hwm_bytes", m.parent_hwm_bytes);
	put_optional(j, "scanner_hwm_bytes", m.scanner_hwm_bytes);
}

namespace {

void put_module(Json::Value &j, const WalkEntry::Module &m)
{
	j["kernel_duration_ns"] = m.call_ns; // its older name
	j["kernel_call_ns"] = m.call_ns;
	put_optional(j, "kernel_walk_ns", m.walk_ns);
	put_optional(j, "kernel_ns_per_pte", m.ns_per_pte);
	j["pte_tables"] = m.pte_tables;
	j["pte_slots_visited"] = m.pte_slots_visited;
	j["pte_revisits"] = m.pte_revisits;
	j["pte_tables_mmap_locked"] = m.pte_tables_mmap_locked;
	j["tlb_flushes"] = m.tlb_flushes;
	j["tlb_ipis"] = m.tlb_ipis;
	j["probe_missed"] = m.probe_missed;
	if (m.vma) {
		j["vma_locks"] = m.vma->locks;
		j["vma_hold_ns"] = m.vma->hold_ns;
		j["vma_hold_max_ns"] = m.vma->hold_max_ns;
		j["vma_fallbacks"] = m.vma->fallbacks;
	}
}

} // namespace

void to_json(Json::Value &j, const WalkEntry &w)
{
	j = Json::Value::object();
	j["kind"] = name(w.kind);
	j["iteration"] = w.iteration;
	j["walker_pid"] = w.walker_pid;
	j["start_ns"] = w.start_ns;
	j["duration_ns"] = w.duration_ns;
	j["syscall_ns"] = w.syscall_ns;
	if (w.size) {
		j["ptes"] = w.size->ptes;
		j["ptes_4k"] = w.size->ptes_4k;
		j["pmd_leaves"] = w.size->pmd_leaves;
		j["pte_slots"] = w.size->pte_slots;
	}
	put_optional(j, "ns_per_pte", w.ns_per_pte);
	put_optional(j, "ns_per_pte_corrected", w.ns_per_pte_corrected);
	put_optional(j, "bytes_read", w.bytes_read);
	put_optional(j, "referenced_bytes", w.referenced_bytes);
	put_optional(j, "rollup_rss_bytes", w.rollup_rss_bytes);
	put_optional(j, "incomplete", w.incomplete);
	put_optional(j, "error", w.error);
	if (w.lock) {
		j["lock_hold_ns"] = w.lock->hold_ns;
		j["lock_wait_ns"] = w.lock->wait_ns;
		j["lock_acquisitions"] = w.lock->acquisitions;
		j["lock_mode"] = name(w.lock->mode);
	}
	if (w.stalls) {
		j["stalls"] = w.stalls->count;
		j["max_stall_ns"] = w.stalls->max_ns;
		put_optional(j, "max_stall_walker_held_ns", w.stalls->max_walker_held_ns);
	}
	if (w.module)
		put_module(j, *w.module);
}

void to_json(Json::Value &j, const KindSummary &s)
{
	j = Json::Value::object();
	j["count"] = s.count;
	j["errors"] = s.errors;
	j["incomplete"] = s.incomplete;
	j["ptes"] = s.ptes;
	if (s.duration) {
		j["duration_p50_ns"] = s.duration->p50_ns;
		j["duration_max_ns"] = s.duration->max_ns;
		j["duration_min_ns"] = s.duration->min_ns;
		put_optional(j, "ms_per_gib_p50", s.duration->ms_per_gib_p50);
	}
	if (s.ns_per_pte) {
		j["ns_per_pte_p50"] = s.ns_per_pte->p50;
		j["ns_per_pte_min"] = s.ns_per_pte->min;
	}
	put_optional(j, "ns_per_pte_corrected_p50", s.ns_per_pte_corrected_p50);
	if (s.lock_hold) {
		j["lock_hold_p50_ns"] = s.lock_hold->p50_ns;
		j["lock_hold_max_ns"] = s.lock_hold->max_ns;
		j["lock_mode"] = name(s.lock_hold->mode);
	}
	put_optional(j, "max_stall_ns", s.max_stall_ns);
}

namespace {

Json::Value number_or_null(const std::optional<double> &v)
{
	return v ? Json::Value(*v) : Json::Value(nullptr);
}

} // namespace

void to_json(Json::Value &j, const StallValidation &v)
{
	j = Json::Value::object();
	j["view"] = name(v.view);
	if (v.skipped) {
		j["skipped"] = *v.skipped;
		return;
	}
	j["reference"] = "victims' own clocks: operations >= threshold_ns during walks";
	j["threshold_ns"] = v.threshold_ns;
	j["reference_ops"] = v.reference_ops;
	j["reference_ops_dropped"] = v.reference_ops_dropped;
	j["slow_not_slept"] = v.slow_not_slept;
	j["began_before_walk"] = v.began_before_walk;
	j["began_before_walk_recalled"] = v.began_before_walk_recalled;
	j["other_victim_preempted"] = v.other_victim_preempted;
	j["other_victim_preempted_recalled"] = v.other_victim_preempted_recalled;
	put_optional(j, "not_behind_walk", v.not_behind_walk);
	put_optional(j, "outside_walk_holds", v.outside_walk_holds);
	put_optional(j, "vma_lock_waits", v.vma_lock_waits);
	j["recalled"] = v.recalled;
	j["recall"] = number_or_null(v.recall);
	Json::Value u = Json::Value::array();
	for (const auto &o : v.unexplained)
		u.push_back({{"victim", name(o.victim)},
			     {"tid", o.tid},
			     {"start_ns", o.start_ns},
			     {"ns", o.ns}});
	j["unexplained"] = std::move(u);
	j["stalls_checked"] = v.stalls_checked;
	j["confirmed"] = v.confirmed;
	j["confirmed_by_upkeep"] = v.confirmed_by_upkeep;
	j["precision"] = number_or_null(v.precision);
	Json::Value c = Json::Value::array();
	for (const auto &s : v.unconfirmed)
		c.push_back({{"tid", s.tid}, {"start_ns", s.start_ns}, {"wait_ns", s.wait_ns}});
	j["unconfirmed"] = std::move(c);
	j["agree"] = v.agree;
	j["disagreements"] = v.disagreements;
}

void to_json(Json::Value &j, const ViewsAgreement &v)
{
	j = Json::Value::object();
	j["module_stalls"] = v.module_stalls;
	j["module_in_tracepoint"] = v.module_in_tracepoint;
	if (v.module_behind_vma_locks)
		j["module_behind_vma_locks"] = v.module_behind_vma_locks;
	if (v.module_late_unseen)
		j["module_late_unseen"] = v.module_late_unseen;
	j["tracepoint_in_module"] = v.tracepoint_in_module;
	j["tracepoint_stalls"] = v.tracepoint_stalls;
	j["split_compared"] = v.split_compared;
	j["split_agree"] = v.split_agree;
	j["split_max_diff_ns"] = v.split_max_diff_ns;
}

void to_json(Json::Value &j, const WalkValidation &v)
{
	j = Json::Value::object();
	j["walks"] = v.walks;
	j["matched_once"] = v.matched_once;
	j["module_walks_unmatched"] = v.module_walks_unmatched;
	j["walk_proper_timed"] = v.walk_proper_timed;
	j["walk_proper_le_syscall"] = v.walk_proper_le_syscall;
	j["pte_slots_checked"] = v.pte_slots_checked;
	j["pte_slots_in_bounds"] = v.pte_slots_in_bounds;
	j["pte_slots_bounds"] = {v.pte_slots_lo, v.pte_slots_hi};
	j["short_after_yielding_lock"] = v.short_after_yielding_lock;
	j["short_unconfirmed"] = v.short_unconfirmed;
	put_optional(j, "complete_walk_pte_slots", v.complete_walk_pte_slots);
	j["agree"] = v.agree;
	j["disagreements"] = v.disagreements;
}

void to_json(Json::Value &j, const Validation &v)
{
	j = Json::Value::object();
	j["stalls"] = v.stalls;
	put_optional(j, "stalls_tracepoint", v.stalls_tracepoint);
	put_optional(j, "views", v.views);
	put_optional(j, "walks", v.walks);
	put_optional(j, "second_view", v.second_view);
	if (v.stall_parts) {
		j["stall_parts"] = {{"checked", v.stall_parts->checked},
				    {"bad", v.stall_parts->bad}};
		if (const auto &x = v.stall_parts->runnable) {
			Json::Value o = {{"victims", x->victims},
					 {"bad", x->bad},
					 {"tolerance_ns", x->tolerance_ns}};
			Json::Value bad = Json::Value::array();
			for (const Victim b : x->bad_victims)
				bad.push_back(name(b));
			o["bad_victims"] = std::move(bad);
			j["stall_parts"]["runnable_vs_schedstat"] = std::move(o);
		}
	}
}

namespace {

void to_json(Json::Value &j, const StallEstimate::Locking &l)
{
	j = Json::Value::object();
	j["release"] = l.release;
	j["basis"] = name(l.basis);
	if (l.change) {
		j["changed"] = {{"before", l.change->before},
				{"since", l.change->since},
				{"lock_mode", name(l.change->lock_mode)},
				{"lock_unit", name(l.change->unit)}};
	}
	if (l.observed_mode)
		j["observed_lock_mode"] = name(*l.observed_mode);
	put_optional(j, "observed_hold_p50_ns", l.observed_hold_p50_ns);
	put_optional(j, "walk_p50_ns", l.walk_p50_ns);
	put_optional(j, "agrees", l.agrees);
	j["why"] = l.why;
}

void to_json(Json::Value &j, const StallEstimate::Kind &e)
{
	j = Json::Value::object();
	to_json(j["locking"], e.locking);
	j["lock_unit"] = name(e.lock_unit);
	j["lock_mode"] = name(e.lock_mode);
	j["source"] = e.source;
	j["layout_dependent"] = e.layout_dependent;
	put_optional(j, "vmas_per_read", e.vmas_per_read);
	j["measured_hold_bytes"] = e.measured_hold_bytes;
	j["layout_hold_bytes"] = e.layout_hold_bytes;
	j["model_stall_max_ns"] = e.model_stall_max_ns;
	if (e.measured_stall_source)
		j["measured_stall_source"] = name(*e.measured_stall_source);
	put_optional(j, "measured_stall_max_ns", e.measured_stall_max_ns);
	put_optional(j, "model_check_ratio", e.model_check_ratio);
	j["status"] = name(e.status);
	put_optional(j, "why", e.why);
	put_optional(j, "factor", e.factor);
	put_optional(j, "estimate_max_ns", e.estimate_max_ns);
	put_optional(j, "estimate_p50_ns", e.estimate_p50_ns);
	put_optional(j, "estimate_max_range_ns", e.estimate_max_range_ns);
	put_optional(j, "estimate_p50_range_ns", e.estimate_p50_range_ns);
	if (const auto &v = e.vma_writer) {
		Json::Value o = Json::Value::object();
		o["model_max_ns"] = v->model_max_ns;
		put_optional(o, "measured_max_ns", v->measured_max_ns);
		put_optional(o, "estimate_max_ns", v->estimate_max_ns);
		j["vma_writer"] = std::move(o);
	}
}

} // namespace

void to_json(Json::Value &j, const StallEstimate &e)
{
	j = Json::Value::object();
	j["layout"] = e.layout;
	j["layout_vmas"] = e.layout_vmas;
	j["layout_largest_vma_bytes"] = e.layout_largest_vma_bytes;
	Json::Value kinds = Json::Value::object();
	for (const auto &k : e.kinds)
		to_json(kinds[name(k.kind)], k);
	j["kinds"] = std::move(kinds);
}

namespace {

// "walks", "victims", "walk_summary": the parts of a run's figures.
void put_figures(Json::Value &j, const RunResult &r)
{
	j["walks"] = r.walks;
	j["walks_dropped"] = r.walks_dropped;
	j["kernel_view"] = r.kernel_view;
	put_optional(j, "perf", r.perf);
	Json::Value victims = Json::Value::object();
	for (const auto &v : r.victims) {
		Json::Value &e = victims[name(v.victim)];
		e = {{"tid", v.tid},
		     {"ops", v.ops},
		     {"outside", v.outside.to_json().value()},
		     {"during", v.during.to_json().value()}};
		put_optional(e, "run_delay_ns", v.run_delay_ns);
	}
	j["victims"] = std::move(victims);
	put_optional(j, "working_set", r.working_set);
	j["validation"] = r.validation;
	put_optional(j, "kernel_view_tracepoint", r.kernel_view_tracepoint);
	Json::Value summary = Json::Value::object();
	for (const auto &s : r.walk_summary)
		summary[name(s.kind)] = s;
	j["walk_summary"] = std::move(summary);
	put_optional(j, "stall_estimate", r.stall_estimate);
}

} // namespace

void to_json(Json::Value &j, const RunResult &r)
{
	j = Json::Value::object();
	j["schema"] = kResultSchema;
	j["tool"] = {{"name", "ptwalk"}, {"version", kVersion}};
	j["complete"] = r.complete;
	j["started_at"] = r.started_at;
	j["argv"] = r.argv;
	j["kernel"] = r.kernel;
	j["host"] = r.host;
	put_optional(j, "alias_calibration", r.alias_calibration);
	put_optional(j, "interrupted", r.interrupted);
	put_optional(j, "error", r.error);
	j["scenario"] = r.scenario;
	j["backend"] = name(r.backend);
	j["backend_detail"] = r.backend_detail;
	put_optional(j, "backend_fallback", r.backend_fallback);
	j["workload"] = r.workload;
	j["self_memory"] = r.self_memory;
	j["scan_start_ns"] = r.scan_start_ns;
	j["scan_end_ns"] = r.scan_end_ns;
	put_figures(j, r);
}

Json result_json(const RunResult &r)
{
	Json::Value v;
	to_json(v, r);
	return Json(v);
}

} // namespace ptwalk
