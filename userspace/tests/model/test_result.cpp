// SPDX-License-Identifier: GPL-2.0
// The typed result against fixed inputs: the walk summary, the validation,
// the stall estimate and the table, text for text, against what the result
// held when it was assembled by string keys (testdata/result/), and the
// document's member order.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "ptwalk/procfs.hpp"
#include "ptwalk/result.hpp"
#include "ptwalk/validation.hpp"
#include "ptwalk/vma_layout.hpp"
#include "ptwalk/walk_kinds.hpp"
#include "test_util.hpp"

using namespace ptwalk;
using tests::table_text;

namespace {

std::string golden(const std::string &name)
{
	return read_file(std::string(PTWALK_TESTDATA) + "/result/" + name, nullptr).value_or("");
}

// The text against testdata/result/NAME; with PTWALK_GOLDEN_UPDATE=1 in the
// environment the file is written instead (only to record the text of code
// known to be right), as the perf goldens are (backends/golden.hpp).
void expect_golden(const std::string &name, const std::string &text)
{
	const std::string path = std::string(PTWALK_TESTDATA) + "/result/" + name;
	if (std::getenv("PTWALK_GOLDEN_UPDATE")) {
		FILE *f = fopen(path.c_str(), "w");
		ASSERT_TRUE(f) << path;
		ASSERT_EQ(fwrite(text.data(), 1, text.size(), f), text.size());
		fclose(f);
		return;
	}
	EXPECT_EQ(text, golden(name)) << "golden: " << path;
}

template <typename T>
std::string text(const T &v)
{
	Json::Value j = v;
	return Json(j).dump(1) + "\n";
}

std::string summary_text(const RunResult &r)
{
	Json::Value j = Json::Value::object();
	for (const auto &s : r.walk_summary)
		j[name(s.kind)] = s;
	return Json(j).dump(1) + "\n";
}

// variant: 1 corrected ns/PTE, 2 incomplete, 3 failed
WalkEntry walk(WalkKind kind, uint64_t dur, bool lock, int variant)
{
	WalkEntry w;
	w.kind = kind;
	w.iteration = 1;
	w.walker_pid = 77;
	w.start_ns = 1000;
	w.duration_ns = dur;
	w.syscall_ns = dur - 10;
	w.size = {262144, 262144, 0, 262144};
	w.ns_per_pte = double(dur) / 262144;
	if (variant == 1)
		w.ns_per_pte_corrected = double(dur) / 262144 * 0.8;
	if (variant == 2)
		w.incomplete = "gap";
	if (variant == 3)
		w.error = "No such process";
	if (lock)
		w.lock = {dur / 2, 5, 2, info(kind).lock_mode}; // as the table says
	w.stalls = {1, dur / 3};
	return w;
}

WalkSize size(uint64_t pmd, uint64_t rss, uint64_t vmas)
{
	WalkSize s;
	s.ptes = 262144;
	s.pmd_entries = pmd;
	s.pte_slots = 262656;
	s.rss = rss;
	s.vmas = vmas;
	return s;
}

LayoutSummary layout(uint64_t vmas, uint64_t mapping_vmas, uint64_t largest)
{
	LayoutSummary l;
	l.vmas = vmas;
	l.mapping.vmas = mapping_vmas;
	l.mapping.largest_bytes = largest;
	return l;
}

KernelStall stall(int tid, uint64_t start, uint64_t wait)
{
	KernelStall s;
	s.tid = tid;
	s.start_ns = start;
	s.wait_ns = wait;
	return s;
}

const std::vector<VictimOp> kOps = {
	{11, Victim::mmap, 500, 2500000, true, true, 1, 0},
	{12, Victim::read, 40000000, 60000000, true, true, 1, 0},
	{12, Victim::read, 70000000, 72000000, true, true, 1, 0},
	{13, Victim::read, 80000000, 82000000, true, true, 0, 1},
	{14, Victim::read, 90000000, 92000000, true, false, 1, 0},
};

// A tracepoint run of 1 GiB anon: walks of three kinds, some failed, one
// incomplete; a truncated stall list; an mmap victim.
RunResult anon_run()
{
	RunResult r;
	r.scenario.size_bytes = uint64_t(1) << 30;
	r.scenario.backing = Backing::anon;
	r.scenario.profile = Profile::cadvisor;
	r.scenario.interval_ns = 1000000000;
	r.scenario.duration_ns = 10000000000ull;
	r.backend = BackendKind::tracepoint;
	r.backend_detail = "tp detail";
	r.kernel.uname = KernelInfo::Uname{"6.1.0-test", "", ""};
	r.workload.size_start = size(3, uint64_t(1) << 30, 0);
	r.workload.vma_layout = layout(20, 1, uint64_t(1) << 30);
	r.walks = {walk(WalkKind::smaps, 3000000, false, 0),
		   walk(WalkKind::smaps, 1000000, true, 1),
		   walk(WalkKind::smaps, 2000000, true, 1),
		   walk(WalkKind::clear_refs, 5000000, true, 2),
		   walk(WalkKind::clear_refs, 4000000, true, 0),
		   walk(WalkKind::clear_refs, 6000000, true, 3),
		   walk(WalkKind::pagemap, 7000000, false, 3)};
	r.kernel_view.tracepoint.emplace().lost_events = 3;
	r.kernel_view.stalls = StallsView{};
	r.kernel_view.stalls->list = {stall(11, 1000, 2000000), stall(12, 50000000, 3000000)};
	r.kernel_view.stalls->total = 5;
	VictimEntry v{Victim::mmap, 11, 12, {}, {}};
	for (uint64_t x : {100, 100, 100, 100, 100, 900, 900, 1000, 1000, 5000})
		v.outside.record(x);
	v.during.record(200);
	v.during.record(9000);
	r.victims.push_back(v);
	return r;
}

} // namespace

TEST(ResultGolden, TracepointRunAsAssembledByKeys)
{
	RunResult r = anon_run();
	r.walk_summary = summarize_walks(r.walks, r.scenario.size_bytes);
	add_validation(r, kOps, 2, nullptr);
	add_stall_estimates(r, LayoutSpec{LayoutSpec::size, 256u << 20});
	expect_golden("anon_walk_summary.json", summary_text(r));
	expect_golden("anon_validation.json", text(r.validation));
	ASSERT_TRUE(r.stall_estimate);
	expect_golden("anon_stall_estimate.json", text(*r.stall_estimate));
	r.error = "scanner: failed";
	expect_golden("anon_table.txt", table_text(r));
}

namespace {

// An aliased module run with a second view: a calibration, a fallback,
// module records that disagree with the walks.
RunResult alias_run()
{
	RunResult a;
	a.scenario.size_bytes = uint64_t(1) << 30;
	a.scenario.backing = Backing::alias;
	a.scenario.alias = {uint64_t(1) << 28, 4.0};
	a.scenario.lower_bound = "zero pages";
	a.scenario.profile = Profile::smaps;
	a.scenario.interval_ns = 1000000000;
	a.scenario.duration_ns = 10000000000ull;
	AliasCalibration cal;
	cal.size_bytes = uint64_t(8) << 30;
	cal.tolerance = 0.15;
	KindVerdict cr;
	cr.kind = WalkKind::clear_refs;
	cr.cost_ratio_range = {0.6, 0.9};
	cr.factor_range = {0.5, 0.95};
	cr.why = "cost ratio differs";
	KindVerdict sm;
	sm.kind = WalkKind::smaps;
	sm.cost_ratio_range = {0.8, 0.84};
	cal.kinds = {cr, sm};
	cal.ratio = {{WalkKind::smaps, 0.82}};
	cal.stall_ratio = {{WalkKind::smaps, 1.1}};
	a.alias_calibration = cal;
	a.backend = BackendKind::module;
	a.backend_detail = "ptwalk.ko";
	a.backend_fallback = "bpf unavailable";
	a.kernel.uname = KernelInfo::Uname{"6.1.0-test", "", ""};
	a.workload.size_start = size(0, uint64_t(258) << 20, 20);
	a.workload.vma_layout = layout(24, 4, uint64_t(1) << 28);
	a.workload.size_end = size(0, uint64_t(260) << 20, 0);
	for (int i = 0; i < 4; i++) {
		WalkEntry w = walk(i == 3 ? WalkKind::clear_refs : WalkKind::smaps,
				   2000000 + i * 1000, true, i == 1 ? 1 : 0);
		w.bytes_read = 3000 + i;
		w.module = WalkEntry::Module{};
		w.module->call_ns = 1500000;
		if (i != 2)
			w.module->walk_ns = i == 1 ? 3000000 : 1000000;
		w.module->pte_tables = 513;
		w.module->pte_slots_visited = i == 0 ? 262700 : 262300;
		if (i == 1) {
			w.incomplete = "short";
			w.rollup_rss_bytes = uint64_t(100) << 20;
		}
		a.walks.push_back(w);
	}
	ModuleKernelView &m = a.kernel_view.module.emplace();
	m.walks_matched = 3;
	m.walks_hookable = 4;
	m.module_walks_unmatched = 1;
	m.reference_walk = {262700, 1};
	a.kernel_view.stalls = StallsView{};
	a.kernel_view.stalls->list = {stall(11, 1000, 2000000)};
	a.kernel_view.stalls->complete_above_ns = 1000000;
	a.victims.push_back({Victim::read, 12, 0, {}, {}});
	return a;
}

} // namespace

TEST(ResultGolden, AliasedModuleRunAsAssembledByKeys)
{
	RunResult a = alias_run();
	KernelView second;
	second.stalls = StallsView{};
	second.stalls->list = {stall(11, 900, 2100000), stall(12, 40000100, 1500000)};
	a.walk_summary = summarize_walks(a.walks, a.scenario.size_bytes);
	add_validation(a, kOps, 0, &second);
	a.validation.second_view = "no second view";
	add_stall_estimates(a, LayoutSpec{});
	expect_golden("alias_walk_summary.json", summary_text(a));
	expect_golden("alias_validation.json", text(a.validation));
	ASSERT_TRUE(a.stall_estimate);
	expect_golden("alias_stall_estimate.json", text(*a.stall_estimate));
	EXPECT_EQ(workload_rss_reference(a.workload), 272629760u);
	a.complete = true;
	expect_golden("alias_table.txt", table_text(a));
}

TEST(ResultGolden, SyscallBackendSkipsTheStallValidation)
{
	RunResult s;
	s.backend = BackendKind::syscall;
	s.kernel_view.source = "syscall timing only";
	add_validation(s, kOps, 0, nullptr);
	expect_golden("syscall_validation.json", text(s.validation));
	EXPECT_EQ(validation_line(s.validation), "");
}

namespace {

std::vector<std::string> keys(const Json::Value &j)
{
	std::vector<std::string> k;
	for (const auto &[key, v] : j.items())
		k.push_back(key);
	return k;
}

using Keys = std::vector<std::string>;

} // namespace

// Every member that may be present, in the order the document had when it
// was assembled by string keys (run.cpp, run_result.cpp).
TEST(ResultJson, MembersInTheirOrder)
{
	RunResult r = alias_run();
	r.started_at = "2026-01-01T00:00:00Z";
	r.argv = {"ptwalk", "run"};
	r.host.hostname = "h";
	r.interrupted = "Interrupt";
	r.scenario.dir = "/tmp";
	r.scenario.victims = {Victim::read, Victim::mmap};
	r.scenario.max_scans = 3;
	r.workload.pid = 42;
	r.workload.populate_bytes_per_s = 1e9;
	r.workload.ptes_source = "VmPTE/8";
	r.self_memory = {1, 2, 3};
	r.perf = PerfSummary{};
	r.perf->error = "perf: not found in PATH";
	r.kernel_view_tracepoint = KernelView{};
	r.kernel_view_tracepoint->source = "tp";
	r.kernel_view_tracepoint->stalls.emplace().walk_holds.emplace(); // none held
	r.walk_summary = summarize_walks(r.walks, r.scenario.size_bytes);
	add_validation(r, kOps, 0, &*r.kernel_view_tracepoint);
	add_stall_estimates(r, LayoutSpec{});
	WalkEntry &w = r.walks[1];
	w.referenced_bytes = 7;
	w.error = "No such process";
	w.module->ns_per_pte = 1.5;
	const Json::Value j = r;
	// the long key lists packed as the schema lists them, not one a line
	// clang-format off
	EXPECT_EQ(keys(j), (Keys{"schema", "tool", "complete", "started_at", "argv", "kernel",
				 "host", "alias_calibration", "interrupted", "scenario", "backend",
				 "backend_detail", "backend_fallback", "workload", "self_memory",
				 "scan_start_ns", "scan_end_ns", "walks", "walks_dropped",
				 "kernel_view", "perf", "victims", "validation",
				 "kernel_view_tracepoint", "walk_summary", "stall_estimate"}));
	EXPECT_EQ(j["schema"], "ptwalk.result/1");
	EXPECT_EQ(keys(j["scenario"]),
		  (Keys{"size_bytes", "backing", "dir", "physical_bytes", "aliased", "alias_factor",
			"lower_bound", "profile", "victims", "interval_ns", "duration_ns",
			"op_interval_ns", "populate_threads", "max_scans"}));
	EXPECT_EQ(keys(j["workload"]),
		  (Keys{"pid", "populate_ns", "populate_bytes", "populate_bytes_per_s",
			"size_start", "vma_layout", "size_end", "ptes_source"}));
	EXPECT_EQ(keys(j["workload"]["vma_layout"]),
		  (Keys{"vmas", "bytes", "largest_bytes", "size_histogram", "mapping"}));
	EXPECT_EQ(keys(j["self_memory"]), (Keys{"workload_rss_minus_mapping_bytes",
						"parent_hwm_bytes", "scanner_hwm_bytes"}));
	EXPECT_EQ(keys(j["walks"][1]),
		  (Keys{"kind", "iteration", "walker_pid", "start_ns", "duration_ns", "syscall_ns",
			"ptes", "ptes_4k", "pmd_leaves", "pte_slots", "ns_per_pte",
			"ns_per_pte_corrected", "bytes_read", "referenced_bytes",
			"rollup_rss_bytes", "incomplete", "error", "lock_hold_ns", "lock_wait_ns",
			"lock_acquisitions", "lock_mode", "stalls", "max_stall_ns",
			"kernel_duration_ns", "kernel_call_ns", "kernel_walk_ns",
			"kernel_ns_per_pte", "pte_tables", "pte_slots_visited", "pte_revisits",
			"pte_tables_mmap_locked", "tlb_flushes", "tlb_ipis", "probe_missed"}));
	// clang-format on
	EXPECT_EQ(keys(j["victims"]), (Keys{"read"}));
	EXPECT_EQ(keys(j["victims"]["read"]), (Keys{"tid", "ops", "outside", "during"}));
	EXPECT_EQ(keys(j["validation"]),
		  (Keys{"stalls", "stalls_tracepoint", "views", "walks", "stall_parts"}));
	EXPECT_TRUE(j["validation"]["stalls"].contains("not_behind_walk"));
	// the tracepoint view judged alone, with the walks' holds it recorded
	EXPECT_FALSE(j["validation"]["stalls"].contains("outside_walk_holds"));
	EXPECT_TRUE(j["validation"]["stalls_tracepoint"].contains("outside_walk_holds"));
	EXPECT_EQ(j["tool"].dump(), R"({"name":"ptwalk","version":"0.1.0"})");
}

namespace {

KindCalibration measured(WalkKind kind, double d, double a, bool stall, bool astall)
{
	KindCalibration e;
	e.kind = kind;
	e.distinct_ns_per_pte = d;
	e.aliased_ns_per_pte = a;
	e.cost_ratio = d / a;
	e.distinct_walk_max_ns = uint64_t(d * 1000);
	e.aliased_walk_max_ns = uint64_t(a * 1000);
	e.distinct_stall_max_ns = uint64_t(d * 500);
	e.aliased_stall_max_ns = uint64_t(a * 300);
	e.distinct_stall_ops = stall ? 3 : 0;
	e.aliased_stall_ops = astall ? 4 : 0;
	e.predicted_distinct_stall_ns = uint64_t(d * 900);
	e.predicted_aliased_stall_ns = uint64_t(a * 200);
	if (stall)
		e.stall_model_ratio = (d * 500) / (d * 900);
	if (astall)
		e.aliased_model_ratio = (a * 300) / (a * 200);
	return e;
}

} // namespace

// What measure_alias_bias() assembles, judged: smaps agrees at both sizes,
// clear_refs' victim saw no stall at one (the kinds of a size in the order
// measured, the verdict's in the walk kinds' order).
TEST(ResultGolden, CalibrationAsAssembledByKeys)
{
	AliasCalibration cal;
	cal.size_bytes = uint64_t(8) << 30;
	cal.reps = 5;
	cal.aliased_physical_bytes = uint64_t(1) << 30;
	cal.distinct_ns_per_pte = {{WalkKind::smaps, 40.0}, {WalkKind::clear_refs, 10.0}};
	cal.aliased_ns_per_pte = {{WalkKind::smaps, 50.0}, {WalkKind::clear_refs, 12.5}};
	const double d[2][2] = {{39.0, 10.0}, {40.0, 10.0}};
	const double a[2][2] = {{50.0, 12.0}, {50.0, 12.5}};
	for (int i = 0; i < 2; i++)
		cal.sizes.push_back(
			{uint64_t(2 + 6 * i) << 30,
			 uint64_t(1) << 30,
			 uint64_t(2 + 6 * i),
			 {measured(WalkKind::smaps, d[i][0], a[i][0], true, i == 0),
			  measured(WalkKind::clear_refs, d[i][1], a[i][1], i == 1, true)}});
	judge_alias_bias(cal);
	expect_golden("alias_calibration.json", text(cal));

	// one size: nothing corrected, and the tolerance given
	AliasCalibration one;
	KindCalibration pm;
	pm.kind = WalkKind::pagemap;
	pm.cost_ratio = 0.9;
	pm.stall_model_ratio = 1.0;
	one.sizes.push_back({uint64_t(2) << 30, 0, 0, {pm}});
	judge_alias_bias(one, 0.1);
	const Json::Value got = one;
	const Json::Value want = Json::Value::parse(golden("alias_calibration_one_size.json"));
	for (const char *k : {"tolerance", "kinds", "ratio", "stall_ratio"})
		EXPECT_EQ(got[k], want[k]) << k;

	EXPECT_EQ(text(AliasCalibration{"interrupted"}), "{\n \"skipped\": \"interrupted\"\n}\n");
}
