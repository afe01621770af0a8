// SPDX-License-Identifier: GPL-2.0
// A ptwalk.result/1 document (results/SCHEMA.md) as typed parts: the
// commands fill them, the summary, the table and the validation read their
// members, and each part's nlohmann to_json writes it once, in the schema's
// member order. A member that is present only sometimes is an optional: an
// empty one stays out. The kernel's and host's facts are os's typed
// KernelInfo and HostInfo (procfs.hpp), with their own to_json; perf's
// summary is PerfSummary (perf_summary.hpp), filled by the perf session.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptwalk/alias_calibration.hpp"
#include "ptwalk/histogram.hpp"
#include "ptwalk/json.hpp"
#include "ptwalk/kernel_view.hpp"
#include "ptwalk/perf_summary.hpp"
#include "ptwalk/walk_kinds.hpp"
#include "ptwalk/procfs.hpp"
#include "ptwalk/scenario.hpp"
#include "ptwalk/vma_layout.hpp"
#include "ptwalk/working_set.hpp"

namespace ptwalk {

// "scenario": what was asked for.
struct ScenarioInfo {
	struct Alias {
		uint64_t physical_bytes = 0;
		double factor = 0;
	};
	uint64_t size_bytes = 0;
	Backing backing = Backing::anon;
	std::optional<std::string> dir;         // file backing
	std::optional<Alias> alias;             // alias backing: "aliased": true
	std::optional<std::string> lower_bound; // zeropage backing: why
	Profile profile = Profile::cadvisor;
	std::vector<Victim> victims;
	std::optional<FaultRegion> fault_region; // fault victim placed below/above
	uint64_t interval_ns = 0, duration_ns = 0, op_interval_ns = 0;
	unsigned populate_threads = 0;
	uint64_t max_scans = 0; // --scans; 0: as many as the duration allows
};

// "workload": the walked process.
struct WorkloadInfo {
	int pid = 0;
	uint64_t populate_ns = 0, populate_bytes = 0;
	std::optional<double> populate_bytes_per_s;
	std::optional<WalkSize> size_start;
	std::optional<LayoutSummary> vma_layout;
	std::optional<WalkSize> size_end;
	std::optional<std::string> ptes_source; // zeropage: where the PTE count is from
};

// "self_memory": ptwalk's own memory apart from the mapping.
struct SelfMemory {
	std::optional<uint64_t> workload_rss_minus_mapping_bytes;
	std::optional<uint64_t> parent_hwm_bytes;
	std::optional<uint64_t> scanner_hwm_bytes;
};

// One "walks" entry: the scanner's record and what the backend saw of it.
struct WalkEntry {
	struct Size { // the workload's size, when it was measured
		uint64_t ptes = 0, ptes_4k = 0, pmd_leaves = 0, pte_slots = 0;
	};
	struct Lock { // tracepoint and module backends
		uint64_t hold_ns = 0, wait_ns = 0;
		uint32_t acquisitions = 0;
		LockMode mode = LockMode::none;
	};
	struct Stalls { // any backend that saw the walk
		uint32_t count = 0;
		uint64_t max_ns = 0;
		std::optional<uint64_t> max_walker_held_ns;
	};
	struct Module {               // the module backend
		uint64_t call_ns = 0; // also written as kernel_duration_ns
		std::optional<uint64_t> walk_ns;
		std::optional<double> ns_per_pte;
		uint64_t pte_tables = 0, pte_slots_visited = 0, pte_revisits = 0;
		uint64_t pte_tables_mmap_locked = 0; // of pte_tables, walked holding mmap_lock
		uint64_t tlb_flushes = 0, tlb_ipis = 0, probe_missed = 0;
		std::optional<VmaHolds> vma; // the VMA-lock view's
	};
	WalkKind kind = WalkKind::clear_refs;
	uint64_t iteration = 0;
	int32_t walker_pid = 0;
	uint64_t start_ns = 0, duration_ns = 0, syscall_ns = 0;
	std::optional<Size> size;
	std::optional<double> ns_per_pte, ns_per_pte_corrected;
	std::optional<uint64_t> bytes_read, referenced_bytes, rollup_rss_bytes;
	std::optional<std::string> incomplete, error;
	std::optional<Lock> lock;
	std::optional<Stalls> stalls;
	std::optional<Module> module;
};

// One "walk_summary" member: the walks of one kind.
struct KindSummary {
	struct Durations {
		uint64_t p50_ns = 0, max_ns = 0, min_ns = 0;
		std::optional<double> ms_per_gib_p50;
	};
	struct PerPte {
		double p50 = 0, min = 0;
	};
	struct LockHold {
		uint64_t p50_ns = 0, max_ns = 0;
		// how the complete walks held it: read, write, mixed (both),
		// none (no walk held it)
		LockMode mode = LockMode::none;
	};
	WalkKind kind = WalkKind::clear_refs;
	uint64_t count = 0, errors = 0, incomplete = 0, ptes = 0;
	std::optional<Durations> duration;
	std::optional<PerPte> ns_per_pte;
	std::optional<double> ns_per_pte_corrected_p50;
	std::optional<LockHold> lock_hold;
	std::optional<uint64_t> max_stall_ns;
};

// One "victims" member: a victim's latencies outside and during walks.
struct VictimEntry {
	Victim victim = Victim::read;
	int32_t tid = 0;
	uint64_t ops = 0;
	Histogram outside, during;
	// its time runnable but not on a CPU over the run, by the kernel's
	// schedstat (run_delay); unset when the kernel does not keep it
	std::optional<uint64_t> run_delay_ns;
};

// A reference operation no attributed stall explains.
struct UnexplainedOp {
	Victim victim = Victim::read;
	int32_t tid = 0;
	uint64_t start_ns = 0, ns = 0;
};

// An attributed stall no operation the victim logged contains.
struct UnconfirmedStall {
	int32_t tid = 0;
	uint64_t start_ns = 0, wait_ns = 0;
};

// "validation.stalls": one view's stalls against the victims' clocks
// (validation.hpp says how).
struct StallValidation {
	BackendKind view = BackendKind::tracepoint;
	std::optional<std::string> skipped; // no view of stalls: why, and nothing else
	uint64_t threshold_ns = 0, reference_ops = 0, reference_ops_dropped = 0;
	uint64_t slow_not_slept = 0, began_before_walk = 0, began_before_walk_recalled = 0;
	uint64_t other_victim_preempted = 0, other_victim_preempted_recalled = 0;
	std::optional<uint64_t> not_behind_walk; // with a second view
	// without one, where the view gives the walks' holds: slow operations
	// no stall explains that overlapped none of them
	std::optional<uint64_t> outside_walk_holds;
	// VMA-lock waits no view sees (ValidationInput::vma_lock_unseen):
	// present only when the run had such walks
	std::optional<uint64_t> vma_lock_waits;
	uint64_t recalled = 0;
	std::optional<double> recall; // null: nothing to judge it on
	std::vector<UnexplainedOp> unexplained;
	uint64_t stalls_checked = 0, confirmed = 0;
	uint64_t confirmed_by_upkeep = 0;          // of confirmed: by the victim's upkeep alone
	std::optional<double> precision;           // null: nothing to judge it on
	std::vector<UnconfirmedStall> unconfirmed; // the first 20
	bool agree = false;
	std::vector<std::string> disagreements;
};

// "validation.views": how many stalls of one view the other saw.
struct ViewsAgreement {
	uint64_t module_stalls = 0, module_in_tracepoint = 0;
	uint64_t tracepoint_in_module = 0, tracepoint_stalls = 0;
	// module stalls behind VMA locks (ViewStall::vma), not compared: the
	// tracepoints cannot see them
	uint64_t module_behind_vma_locks = 0;
	// module stalls whose walk part ended before the waiter's decision
	// (ViewStall::late) the tracepoints do not list, not compared: perf
	// may have read their start after that part (KERNEL-FACTS.md 26)
	uint64_t module_late_unseen = 0;
	// the same stall in both lists (same thread, start and wait within
	// kSplitSlackNs), split by both: how many, and how many whose
	// walker_held_ns agree within kSplitSlackNs + 2% of the wait; the
	// largest difference
	uint64_t split_compared = 0, split_agree = 0, split_max_diff_ns = 0;
	static constexpr uint64_t kSplitSlackNs = 50000;
};

// "validation.walks": the module's walk records against the scanner's walks.
struct WalkValidation {
	uint64_t walks = 0, matched_once = 0, module_walks_unmatched = 0;
	uint64_t walk_proper_timed = 0, walk_proper_le_syscall = 0;
	uint64_t pte_slots_checked = 0, pte_slots_in_bounds = 0;
	double pte_slots_lo = 0, pte_slots_hi = 0; // "pte_slots_bounds"
	uint64_t short_after_yielding_lock = 0, short_unconfirmed = 0;
	std::optional<double> complete_walk_pte_slots;
	bool agree = false;
	std::vector<std::string> disagreements;
};

// Every listed stall that carries a split (the kernel view's, and the
// second view's with --cross-check) checked: walker_held + others_held +
// free == wait_ns, all three present.
struct StallParts {
	uint64_t checked = 0, bad = 0;
	// waiter_runnable_ns against the kernel's own account of each
	// victim's runnable time (victims.NAME.run_delay_ns): the victims
	// checked, and those whose listed stalls' runnable parts add up to
	// more than it (+ tolerance); unset when no stall has the part
	struct Runnable {
		uint64_t victims = 0, bad = 0;
		uint64_t tolerance_ns = 0;
		std::vector<Victim> bad_victims;
	};
	std::optional<Runnable> runnable;
};

struct Validation {
	StallValidation stalls;
	std::optional<StallValidation> stalls_tracepoint; // --cross-check
	std::optional<ViewsAgreement> views;              // --cross-check
	std::optional<WalkValidation> walks;              // the module backend
	std::optional<std::string> second_view;           // --cross-check without one: why
	std::optional<StallParts> stall_parts;            // views with stalls
};

// The whole document, its members in the schema's order (schema and tool
// are constants: to_json writes them).
struct RunResult {
	bool complete = false;
	std::string started_at;
	std::vector<std::string> argv;
	KernelInfo kernel;                                 // os's kernel_info()
	HostInfo host;                                     // os's host_info()
	std::optional<AliasCalibration> alias_calibration; // the alias backing
	std::optional<std::string> interrupted, error;
	ScenarioInfo scenario;
	BackendKind backend = BackendKind::syscall;
	std::string backend_detail;
	std::optional<std::string> backend_fallback;
	WorkloadInfo workload;
	SelfMemory self_memory;
	uint64_t scan_start_ns = 0, scan_end_ns = 0;
	std::vector<WalkEntry> walks;
	uint64_t walks_dropped = 0;
	KernelView kernel_view;          // the backend's own findings
	std::optional<PerfSummary> perf; // --perf: the perf session's summary
	std::vector<VictimEntry> victims;
	std::optional<WorkingSetResult> working_set; // --working-set
	Validation validation;
	std::optional<KernelView> kernel_view_tracepoint; // --cross-check: the second view's
	std::vector<KindSummary> walk_summary;
	std::optional<StallEstimate> stall_estimate;
};

// The kind's summary or victim by name; nullptr when there is none.
const KindSummary *find_kind(const std::vector<KindSummary> &s, WalkKind kind);
const VictimEntry *find_victim(const std::vector<VictimEntry> &v, Victim victim);

void to_json(Json::Value &j, const ScenarioInfo &s);
void to_json(Json::Value &j, const LayoutSummary &l);
void to_json(Json::Value &j, const WorkloadInfo &w);
void to_json(Json::Value &j, const SelfMemory &m);
void to_json(Json::Value &j, const WalkEntry &w);
void to_json(Json::Value &j, const KindSummary &s);
void to_json(Json::Value &j, const StallValidation &v);
void to_json(Json::Value &j, const ViewsAgreement &v);
void to_json(Json::Value &j, const WalkValidation &v);
void to_json(Json::Value &j, const Validation &v);
void to_json(Json::Value &j, const StallEstimate &e);
void to_json(Json::Value &j, const RunResult &r);

// The document as ptwalk's JSON value (its dump() is the file's text).
Json result_json(const RunResult &r);

} // namespace ptwalk
