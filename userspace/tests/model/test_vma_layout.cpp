// SPDX-License-Identifier: GPL-2.0
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>

#include "ptwalk/alias_bias.hpp"
#include "ptwalk/result_types.hpp"
#include "ptwalk/walk_kinds.hpp"
#include "ptwalk/vma_layout.hpp"

using namespace ptwalk;

namespace {

constexpr uint64_t GiB = 1ull << 30;

const char kMaps[] =
	"55d0c0000000-55d0c0001000 r--p 00000000 08:01 123  /usr/bin/ptwalk\n"
	"7f0000000000-7f0040000000 rw-s 00000000 00:01 9    /memfd:ptwalk-alias (deleted)\n"
	"7f0040000000-7f0080000000 rw-s 00000000 00:01 9    /memfd:ptwalk-alias (deleted)\n"
	"7f0080000000-7f00a0000000 rw-s 00000000 00:01 9    /memfd:ptwalk-alias (deleted)\n"
	"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0    [stack]\n"
	"7ffd00100000-7ffd00102000 rw-p 00000000 00:00 0 \n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]\n";

} // namespace

TEST(VmaLayout, ParsesMapsAndFindsTheAliases)
{
	VmaLayout l = parse_vma_layout(kMaps, "ptwalk-alias");
	ASSERT_EQ(l.all.size(), 6u); // [vsyscall] left out
	EXPECT_EQ(l.all[4].name, "[stack]");
	EXPECT_EQ(l.all[5].name, "");
	ASSERT_EQ(l.mapping.size(), 3u);
	EXPECT_EQ(l.mapping_bytes(), 2 * GiB + GiB / 2);
	EXPECT_EQ(l.largest(), GiB);
	// no name given or none matching: the largest VMA is the mapping
	VmaLayout one = parse_vma_layout(kMaps, "");
	ASSERT_EQ(one.mapping.size(), 1u);
	EXPECT_EQ(one.mapping[0], GiB);
}

TEST(VmaLayout, SummaryIsBounded)
{
	const LayoutSummary j = layout_summary(parse_vma_layout(kMaps, "ptwalk-alias"));
	EXPECT_EQ(j.vmas, 6u);
	EXPECT_EQ(j.largest_bytes, GiB);
	uint64_t n = 0;
	for (const auto &b : j.size_histogram)
		n += b.count;
	EXPECT_EQ(n, 6u);
	EXPECT_LE(j.size_histogram.size(), 64u);
	EXPECT_EQ(j.mapping.vmas, 3u);
	EXPECT_EQ(j.mapping.smallest_bytes, GiB / 2);
	// the summary's JSON: its members in order, one bucket's
	Json::Value v = j;
	EXPECT_EQ(v["mapping"].dump(), R"({"vmas":3,"bytes":2684354560,"largest_bytes":1073741824,)"
				       R"("smallest_bytes":536870912})");
	EXPECT_EQ(v["size_histogram"][0].dump(),
		  R"({"from_bytes":4096,"to_bytes":8191,"count":1,"bytes":4096})");
}

TEST(VmaLayout, LayoutSpecs)
{
	std::string err;
	EXPECT_EQ(parse_layout_spec("one", &err)->kind, LayoutSpec::one);
	EXPECT_EQ(parse_layout_spec("aliased", &err)->kind, LayoutSpec::aliased);
	auto s = parse_layout_spec("1G", &err);
	ASSERT_TRUE(s);
	EXPECT_EQ(s->kind, LayoutSpec::size);
	EXPECT_EQ(s->bytes, GiB);
	EXPECT_FALSE(parse_layout_spec("two", &err));
	EXPECT_NE(err.find("one, aliased"), std::string::npos);
	EXPECT_FALSE(parse_layout_spec("1", &err)); // below a page
}

TEST(VmaLayout, EveryWalkKindHasACitedLockUnit)
{
	for (const char *k :
	     {"clear_refs", "clear_refs_anon", "clear_refs_file", "softdirty", "smaps",
	      "smaps_rollup", "maps", "numa_maps", "pagemap", "pagemap_scan"}) {
		const KindLocking *kl = kind_locking(k);
		ASSERT_TRUE(kl) << k;
		EXPECT_GT(strlen(kl->source), 20u) << k;
	}
	EXPECT_EQ(kind_locking("smaps_rollup")->unit, LockUnit::vma_when_contended);
	EXPECT_NE(std::string(kind_locking("smaps_rollup")->source).find("ff9f47f6f00c"),
		  std::string::npos);
	EXPECT_EQ(kind_locking("clear_refs")->unit, LockUnit::whole_walk);
	EXPECT_EQ(kind_locking("clear_refs")->lock_mode, LockMode::write);
	EXPECT_FALSE(layout_dependent(LockUnit::whole_walk));
	EXPECT_FALSE(layout_dependent(LockUnit::pmd_chunk));
	EXPECT_TRUE(layout_dependent(LockUnit::vma_when_contended));
	EXPECT_EQ(kind_locking("nope"), nullptr);
}

TEST(VmaLayout, HoldBytes)
{
	const uint64_t size = 8 * GiB;
	// smaps_rollup: one VMA's share
	EXPECT_EQ(hold_bytes(LockUnit::vma_when_contended, size, 8, GiB, 1), GiB);
	EXPECT_EQ(hold_bytes(LockUnit::vma_when_contended, size, 1, size, 1), size);
	// clear_refs: the whole walk whatever the layout
	EXPECT_EQ(hold_bytes(LockUnit::whole_walk, size, 8, GiB, 1), size);
	// pagemap: one PMD-sized range
	EXPECT_EQ(hold_bytes(LockUnit::pmd_chunk, size, 1, size, 1), 2ull << 20);
	// smaps: the VMAs of one read(), never more than the mapping
	EXPECT_EQ(hold_bytes(LockUnit::read_chunk, size, 8, GiB, 3), 3 * GiB);
	EXPECT_EQ(hold_bytes(LockUnit::read_chunk, size, 2, 4 * GiB, 3), size);
	EXPECT_EQ(smaps_vmas_per_read(1400), 3u); // 2 fit in 4 KiB, a third is walked
	EXPECT_EQ(smaps_vmas_per_read(0), 3u);
	EXPECT_EQ(smaps_vmas_per_read(100), 41u);
}

namespace {

// A result of an aliased run: 8 GiB in 8 VMAs, smaps_rollup and clear_refs
// walks of 100 ms max, 80 ms p50.
const StallEstimate::Kind *kind(const RunResult &r, WalkKind k)
{
	if (r.stall_estimate)
		for (const auto &e : r.stall_estimate->kinds)
			if (e.kind == k)
				return &e;
	return nullptr;
}

RunResult aliased_result(AliasCalibration cal)
{
	RunResult r;
	r.scenario.size_bytes = 8 * GiB;
	r.scenario.alias = ScenarioInfo::Alias{GiB, 8};
	for (WalkKind k : {WalkKind::smaps_rollup, WalkKind::clear_refs}) {
		KindSummary s;
		s.kind = k;
		s.duration = KindSummary::Durations{80000000, 100000000, 0, std::nullopt};
		s.max_stall_ns = 13000000;
		r.walk_summary.push_back(s);
	}
	r.workload.vma_layout = LayoutSummary{};
	r.workload.vma_layout->vmas = 20;
	r.workload.vma_layout->mapping.vmas = 8;
	r.workload.vma_layout->mapping.largest_bytes = GiB;
	r.alias_calibration = std::move(cal);
	return r;
}

} // namespace

TEST(StallEstimate, OneVmaLayoutScalesTheYieldingKindOnly)
{
	RunResult r = aliased_result(AliasCalibration{"disabled"});
	add_stall_estimates(r, LayoutSpec{});
	const StallEstimate::Kind *sr = kind(r, WalkKind::smaps_rollup);
	ASSERT_TRUE(sr);
	// aliased: one VMA of eight under a hold; one VMA: the whole walk
	EXPECT_EQ(sr->model_stall_max_ns, 12500000u);
	EXPECT_EQ(sr->estimate_max_ns, 100000000u);
	EXPECT_EQ(sr->status, EstimateStatus::uncorrected);
	EXPECT_NEAR(sr->model_check_ratio.value(), 13.0 / 12.5, 1e-9);
	const StallEstimate::Kind *cr = kind(r, WalkKind::clear_refs);
	EXPECT_EQ(cr->model_stall_max_ns, 100000000u);
	EXPECT_EQ(cr->estimate_max_ns, 100000000u);
	// the layout as measured reproduces the model for it
	RunResult r2 = aliased_result(AliasCalibration{"disabled"});
	add_stall_estimates(r2, LayoutSpec{LayoutSpec::aliased, 0});
	EXPECT_EQ(kind(r2, WalkKind::smaps_rollup)->estimate_max_ns, 12500000u);
	// VMAs of 2 GiB: a quarter
	RunResult r3 = aliased_result(AliasCalibration{"disabled"});
	add_stall_estimates(r3, LayoutSpec{LayoutSpec::size, 2 * GiB});
	EXPECT_EQ(kind(r3, WalkKind::smaps_rollup)->estimate_max_ns, 25000000u);
}

namespace {

SizeCalibration one_size(uint64_t size, double cost_ratio, double stall_ratio)
{
	KindCalibration k;
	k.kind = WalkKind::smaps_rollup;
	k.cost_ratio = cost_ratio;
	k.stall_model_ratio = stall_ratio;
	return SizeCalibration{size, 0, 0, {k}};
}

AliasCalibration judged(std::initializer_list<SizeCalibration> sizes)
{
	AliasCalibration cal;
	cal.sizes = sizes;
	judge_alias_bias(cal);
	return cal;
}

} // namespace

TEST(Calibration, CorrectedOnlyWhereSizesAgree)
{
	const AliasCalibration cal =
		judged({one_size(2 * GiB, 0.80, 1.00), one_size(8 * GiB, 0.88, 1.10)});
	// 10% apart: corrected, by the mean
	EXPECT_NEAR(cal.ratio_of(WalkKind::smaps_rollup).value(), 0.84, 1e-9);
	EXPECT_NEAR(cal.stall_ratio_of(WalkKind::smaps_rollup).value(), 1.05, 1e-9);
	EXPECT_FALSE(cal.verdict(WalkKind::smaps_rollup)->why);

	const AliasCalibration bad =
		judged({one_size(2 * GiB, 0.60, 1.0), one_size(8 * GiB, 0.90, 1.0)});
	EXPECT_FALSE(bad.ratio_of(WalkKind::smaps_rollup));
	EXPECT_FALSE(bad.stall_ratio_of(WalkKind::smaps_rollup));
	const KindVerdict *e = bad.verdict(WalkKind::smaps_rollup);
	EXPECT_NE(e->why.value().find("cost ratio differs"), std::string::npos);
	EXPECT_NEAR(e->factor_range.first, 0.60, 1e-9);
	EXPECT_NEAR(e->factor_range.second, 0.90, 1e-9);

	// the stall disagreeing alone keeps the cost correction, not the stall one
	const AliasCalibration st =
		judged({one_size(2 * GiB, 0.9, 0.5), one_size(8 * GiB, 0.9, 1.0)});
	EXPECT_TRUE(st.ratio_of(WalkKind::smaps_rollup));
	EXPECT_FALSE(st.stall_ratio_of(WalkKind::smaps_rollup));
	EXPECT_NE(st.verdict(WalkKind::smaps_rollup)->why.value().find("stall vs model"),
		  std::string::npos);

	// one size: nothing is called corrected
	EXPECT_FALSE(judged({one_size(2 * GiB, 0.9, 1.0)}).ratio_of(WalkKind::smaps_rollup));
}

TEST(StallEstimate, RangeWhenTheCalibrationDisagrees)
{
	RunResult r = aliased_result(
		judged({one_size(2 * GiB, 0.60, 1.0), one_size(8 * GiB, 0.90, 1.0)}));
	add_stall_estimates(r, LayoutSpec{});
	const StallEstimate::Kind *sr = kind(r, WalkKind::smaps_rollup);
	EXPECT_EQ(sr->status, EstimateStatus::range);
	EXPECT_FALSE(sr->estimate_max_ns);
	EXPECT_EQ(sr->estimate_max_range_ns->first, 60000000u);
	EXPECT_EQ(sr->estimate_max_range_ns->second, 90000000u);
	EXPECT_NE(sr->why.value().find("differs"), std::string::npos);

	RunResult r2 = aliased_result(
		judged({one_size(2 * GiB, 0.80, 1.0), one_size(8 * GiB, 0.84, 1.1)}));
	add_stall_estimates(r2, LayoutSpec{});
	const StallEstimate::Kind *c = kind(r2, WalkKind::smaps_rollup);
	EXPECT_EQ(c->status, EstimateStatus::corrected);
	EXPECT_NEAR(double(c->estimate_max_ns.value()), 100e6 * 0.82 * 1.05, 2);
}

TEST(Calibration, Sizes)
{
	EXPECT_EQ(alias_bias_sizes(8 * GiB), (std::vector<uint64_t>{2 * GiB, 8 * GiB}));
	EXPECT_EQ(alias_bias_sizes(4 * GiB), (std::vector<uint64_t>{2 * GiB, 4 * GiB}));
	EXPECT_EQ(alias_bias_sizes(256ull << 20),
		  (std::vector<uint64_t>{128ull << 20, 256ull << 20}));
	EXPECT_EQ(alias_bias_sizes(2ull << 20), (std::vector<uint64_t>{2ull << 20}));
}

// The results' "status" values (results/SCHEMA.md), and only those.
TEST(StallEstimate, StatusNamesRoundTrip)
{
	std::set<std::string> names;
#define PTW_X(s)                               \
	names.insert(name(EstimateStatus::s)); \
	EXPECT_EQ(parse_estimate_status(name(EstimateStatus::s)), EstimateStatus::s);
	PTW_ESTIMATE_STATUSES(PTW_X)
#undef PTW_X
	EXPECT_EQ(names, (std::set<std::string>{"distinct", "corrected", "range", "uncorrected",
						"no_mmap_lock"}));
	for (const char *bad : {"", "Distinct", "distinct ", "none", "?"})
		EXPECT_EQ(parse_estimate_status(bad), std::nullopt) << bad;
}

// The results' "measured_stall_source" texts, and only those.
TEST(StallEstimate, MeasuredStallSourceNamesRoundTrip)
{
	std::set<std::string> names;
#define PTW_X(s, text)                              \
	names.insert(name(MeasuredStallSource::s)); \
	EXPECT_EQ(parse_measured_stall_source(text), MeasuredStallSource::s);
	PTW_MEASURED_STALL_SOURCES(PTW_X)
#undef PTW_X
	EXPECT_EQ(names, (std::set<std::string>{"backend attribution (walk_summary.max_stall_ns)",
						"mmap victim, max during walks"}));
	for (const char *bad : {"", "backend", "mmap_victim", "?"})
		EXPECT_EQ(parse_measured_stall_source(bad), std::nullopt) << bad;
}

namespace {

// A distinct-page run of smaps and smaps_rollup over 256 MiB in one VMA on
// kernel `release`, each kind's lock view as given (mode, hold p50);
// walks of 70 ms max, 60 ms p50.
RunResult smaps_run(const char *release, std::optional<KindSummary::LockHold> smaps_hold,
		    std::optional<KindSummary::LockHold> rollup_hold)
{
	RunResult r;
	r.kernel.uname = KernelInfo::Uname{release, "#1 SMP", "x86_64"};
	r.backend = BackendKind::module;
	r.scenario.size_bytes = 256 << 20;
	for (auto [k, h] : {std::pair{WalkKind::smaps, smaps_hold},
			    std::pair{WalkKind::smaps_rollup, rollup_hold}}) {
		KindSummary s;
		s.kind = k;
		s.duration = KindSummary::Durations{60000000, 70000000, 0, std::nullopt};
		s.lock_hold = h;
		r.walk_summary.push_back(s);
	}
	r.workload.vma_layout = LayoutSummary{};
	r.workload.vma_layout->vmas = 20;
	r.workload.vma_layout->mapping.vmas = 1;
	r.workload.vma_layout->mapping.largest_bytes = 256 << 20;
	return r;
}

} // namespace

// The locking fact per kernel: smaps and numa_maps take mmap_lock per read()
// up to 7.1 (6.19, 7.0, 7.1 measured) and walk under per-VMA locks from 7.2;
// maps changed between 6.12 and 6.18, the releases between unread; an
// unknown release is unread; kinds without a change are as the table on
// every release.
TEST(LockingFact, PerKernelRelease)
{
	for (const char *rel : {"6.1.0-56-amd64", "6.12.95+deb12-rt-amd64", "6.18.44-fc", "6.19.3",
				"7.0.1+deb13-amd64", "7.1.9"}) {
		const LockingFact f = locking_fact(WalkKind::smaps, rel);
		EXPECT_EQ(f.unit, LockUnit::read_chunk) << rel;
		EXPECT_EQ(f.lock_mode, LockMode::read) << rel;
		EXPECT_EQ(f.basis, LockBasis::table) << rel;
		ASSERT_TRUE(f.change) << rel;
		EXPECT_EQ(f.fallback, nullptr) << rel; // mmap_lock throughout
	}
	for (const char *rel : {"7.2.13-amd64", "7.3.4+deb13-cloud-amd64", "8.0.1", "10.1"}) {
		const LockingFact f = locking_fact(WalkKind::smaps, rel);
		EXPECT_EQ(f.unit, LockUnit::vma_lock) << rel;
		EXPECT_EQ(f.lock_mode, LockMode::none) << rel;
		EXPECT_EQ(f.basis, LockBasis::changed) << rel;
		EXPECT_NE(std::string(f.source).find("lock_vma_range"), std::string::npos);
		EXPECT_EQ(locking_fact(WalkKind::numa_maps, rel).unit, LockUnit::vma_lock);
		// its ways back to mmap_lock: the look-up, and the overflow's fallback
		ASSERT_NE(f.fallback, nullptr) << rel;
		EXPECT_EQ(f.fallback->lock_mode, LockMode::read);
		EXPECT_NE(std::string(f.fallback->when).find("vm_refcnt"), std::string::npos);
		EXPECT_NE(std::string(f.fallback->lookup).find("no page table"), std::string::npos);
	}
	// an unknown release: the older fact, marked unread
	for (const char *rel : {"", "garbage", "7.x"}) {
		const LockingFact f = locking_fact(WalkKind::smaps, rel);
		EXPECT_EQ(f.basis, LockBasis::unread) << rel;
		EXPECT_EQ(f.unit, LockUnit::read_chunk) << rel;
	}
	// maps: per-VMA from 6.18 (measured), mmap_lock on 6.12
	EXPECT_EQ(locking_fact(WalkKind::maps, "6.18.15+deb13-amd64").unit, LockUnit::vma_lock);
	EXPECT_EQ(locking_fact(WalkKind::maps, "6.12.95+deb12-amd64").unit, LockUnit::read_chunk);
	for (const char *rel : {"6.13.1", "6.17.9+deb13-amd64"}) {
		EXPECT_EQ(locking_fact(WalkKind::maps, rel).basis, LockBasis::unread) << rel;
		EXPECT_EQ(locking_fact(WalkKind::maps, rel).unit, LockUnit::read_chunk) << rel;
	}
	// unchanged kinds: the table on every release, no change
	for (WalkKind k : {WalkKind::clear_refs, WalkKind::smaps_rollup, WalkKind::pagemap,
			   WalkKind::pagemap_scan}) {
		for (const char *rel : {"6.1.0", "7.3.4", "7.0.1", ""}) {
			const LockingFact f = locking_fact(k, rel);
			EXPECT_EQ(f.basis, LockBasis::table) << name(k) << rel;
			EXPECT_EQ(f.unit, info(k).unit) << name(k) << rel;
			EXPECT_EQ(f.change, nullptr);
			EXPECT_EQ(f.fallback, nullptr);
		}
	}
	EXPECT_STREQ(name(LockBasis::unread), "unread");
	EXPECT_EQ(hold_bytes(LockUnit::vma_lock, GiB, 1, GiB, 3), 0u);
	EXPECT_FALSE(layout_dependent(LockUnit::vma_lock));
	EXPECT_STREQ(name(LockUnit::vma_lock), "vma_lock");
}

// On 7.3 a smaps run gets no mmap_lock estimate (the 7.3 run that held
// mmap_lock 134 us was given a 257 ms one), and the fact is confirmed by a
// lock view that saw no hold; smaps_rollup keeps its estimate.
TEST(LockingFact, NoMmapLockEstimateWhereTheWalkHoldsNone)
{
	RunResult r = smaps_run("7.3.4+deb13-cloud-amd64",
				KindSummary::LockHold{134000, 400000, LockMode::none},
				KindSummary::LockHold{60000000, 70000000, LockMode::read});
	add_stall_estimates(r, LayoutSpec{});
	const StallEstimate::Kind *sm = kind(r, WalkKind::smaps);
	ASSERT_TRUE(sm);
	EXPECT_EQ(sm->status, EstimateStatus::no_mmap_lock);
	EXPECT_EQ(sm->lock_unit, LockUnit::vma_lock);
	EXPECT_FALSE(sm->estimate_max_ns);
	EXPECT_FALSE(sm->estimate_max_range_ns);
	EXPECT_EQ(sm->model_stall_max_ns, 0u);
	EXPECT_EQ(sm->locking.basis, LockBasis::changed);
	EXPECT_EQ(sm->locking.agrees, true);
	EXPECT_EQ(sm->locking.release, "7.3.4+deb13-cloud-amd64");
	// no stall view: the mmap victim's worst (none here)
	EXPECT_FALSE(sm->measured_stall_max_ns);
	const StallEstimate::Kind *sr = kind(r, WalkKind::smaps_rollup);
	ASSERT_TRUE(sr);
	EXPECT_EQ(sr->status, EstimateStatus::distinct);
	EXPECT_EQ(sr->estimate_max_ns, 70000000u);
	EXPECT_EQ(sr->locking.agrees, true);
	// the JSON carries the locking and no estimate
	const auto j = result_json(r).value();
	const auto &js = j.at("stall_estimate").at("kinds").at("smaps");
	EXPECT_EQ(js.at("status").get<std::string>(), "no_mmap_lock");
	EXPECT_FALSE(js.contains("estimate_max_ns"));
	EXPECT_EQ(js.at("locking").at("basis").get<std::string>(), "changed");
	EXPECT_EQ(js.at("locking").at("changed").at("since").get<std::string>(), "7.2");
	EXPECT_TRUE(js.at("locking").at("agrees").get<bool>());
	// printed: no figure, and the locking line
	char buf[8192] = {};
	FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");
	print_stall_estimates(*r.stall_estimate, f);
	fclose(f);
	EXPECT_NE(std::string(buf).find("no mmap_lock"), std::string::npos) << buf;
	EXPECT_NE(std::string(buf).find("locking: agrees"), std::string::npos) << buf;
}

// What moved: on 7.3 a writer to the walked VMA waits for the walker's hold
// of that VMA. Its model is the walk's max duration x the largest VMA's
// share; the module's VMA-lock view gives the measured walk-held part of
// such a wait, and the estimate is for the layout's largest VMA.
TEST(LockingFact, VmaWriterWaitsForTheWalkOfItsVma)
{
	RunResult r = smaps_run("7.3.4+deb13-cloud-amd64",
				KindSummary::LockHold{134000, 400000, LockMode::none},
				std::nullopt);
	// the victim split the mapping: its largest VMA is 3/4 of it
	r.workload.vma_layout->mapping.vmas = 2;
	r.workload.vma_layout->mapping.largest_bytes = 192 << 20;
	add_stall_estimates(r, LayoutSpec{});
	const StallEstimate::Kind *sm = kind(r, WalkKind::smaps);
	ASSERT_TRUE(sm && sm->vma_writer);
	EXPECT_EQ(sm->vma_writer->model_max_ns, 52500000u);    // 70 ms x 3/4
	EXPECT_EQ(sm->vma_writer->estimate_max_ns, 70000000u); // one VMA of 256 MiB
	EXPECT_FALSE(sm->vma_writer->measured_max_ns);         // no VMA-lock view
	EXPECT_NE(sm->why->find("measured here - : no VMA-lock view"), std::string::npos)
		<< *sm->why;

	// with the module's view: the longest walk-held part of a writer's
	// wait behind a smaps walk (not behind another kind's)
	WalkEntry sw, rw;
	sw.kind = WalkKind::smaps;
	rw.kind = WalkKind::smaps_rollup;
	r.walks = {sw, rw};
	VmaLockView &v = r.kernel_view.vma_locks.emplace();
	v.available = true;
	v.list = {{7, Waiter{Victim::vma, {}}, 0, 45000000, 41000000, 0, false},
		  {7, Waiter{Victim::vma, {}}, 0, 65000000, 64000000, 1, false}};
	add_stall_estimates(r, LayoutSpec{});
	sm = kind(r, WalkKind::smaps);
	EXPECT_EQ(sm->vma_writer->measured_max_ns, 41000000u);
	const auto j = result_json(r).value();
	const auto &vw = j.at("stall_estimate").at("kinds").at("smaps").at("vma_writer");
	EXPECT_EQ(vw.at("model_max_ns").get<uint64_t>(), 52500000u);
	EXPECT_EQ(vw.at("measured_max_ns").get<uint64_t>(), 41000000u);
	EXPECT_EQ(vw.at("estimate_max_ns").get<uint64_t>(), 70000000u);
	// an aliased run's VMAs share their pages: no estimate from it
	r.scenario.alias = ScenarioInfo::Alias{};
	add_stall_estimates(r, LayoutSpec{});
	EXPECT_FALSE(kind(r, WalkKind::smaps)->vma_writer->estimate_max_ns);
}

// A run that contradicts the table is reported as a disagreement: on 7.3 a
// smaps walk held over mmap_lock, on 6.12 one that held none; no lock view:
// unconfirmed (null), never agreement.
TEST(LockingFact, DisagreementIsReported)
{
	RunResult r = smaps_run("7.3.4+deb13-amd64",
				KindSummary::LockHold{30000000, 60000000, LockMode::read},
				KindSummary::LockHold{60000000, 70000000, LockMode::none});
	add_stall_estimates(r, LayoutSpec{});
	const StallEstimate::Kind *sm = kind(r, WalkKind::smaps);
	EXPECT_EQ(sm->locking.agrees, false);
	EXPECT_NE(sm->locking.why.find("DISAGREES"), std::string::npos) << sm->locking.why;
	EXPECT_EQ(kind(r, WalkKind::smaps_rollup)->locking.agrees, false);

	RunResult old = smaps_run("6.12.95+deb12-amd64",
				  KindSummary::LockHold{0, 0, LockMode::none},
				  KindSummary::LockHold{60000000, 70000000, LockMode::read});
	add_stall_estimates(old, LayoutSpec{});
	EXPECT_EQ(kind(old, WalkKind::smaps)->locking.agrees, false);
	EXPECT_EQ(kind(old, WalkKind::smaps)->status, EstimateStatus::distinct);
	EXPECT_EQ(kind(old, WalkKind::smaps_rollup)->locking.agrees, true);

	// unread release (maps on 6.15): the run decides, and the why says it
	// is unread
	RunResult mid = smaps_run("6.15.2+deb13-amd64",
				  KindSummary::LockHold{100000, 200000, LockMode::none},
				  std::nullopt);
	mid.walk_summary.front().kind = WalkKind::maps;
	add_stall_estimates(mid, LayoutSpec{});
	const StallEstimate::Kind *ms = kind(mid, WalkKind::maps);
	ASSERT_TRUE(ms);
	EXPECT_EQ(ms->locking.basis, LockBasis::unread);
	EXPECT_EQ(ms->locking.agrees, false);
	EXPECT_NE(ms->locking.why.find("unread: between 6.12 and 6.18"), std::string::npos)
		<< ms->locking.why;
	const StallEstimate::Kind *mr = kind(mid, WalkKind::smaps_rollup);
	EXPECT_EQ(mr->locking.agrees, std::nullopt);
	EXPECT_NE(mr->locking.why.find("no lock view"), std::string::npos) << mr->locking.why;
}

// A lock view (the tracepoints, the module) that saw no mmap_lock taken in
// any smaps walk confirms the 7.3 fact: a CI run with no fallback was left
// "no lock view" and unconfirmed. On 6.12 the same sight contradicts it; a
// backend without a lock view still confirms nothing.
TEST(LockingFact, NoHoldSeenByALockViewIsSeen)
{
	for (const char *rel : {"7.3.4+deb13-cloud-amd64", "6.12.95+deb12-amd64"}) {
		RunResult r = smaps_run(rel, std::nullopt, std::nullopt);
		r.kernel_view.stalls = StallsView{};
		add_stall_estimates(r, LayoutSpec{});
		const StallEstimate::Kind *sm = kind(r, WalkKind::smaps);
		ASSERT_TRUE(sm) << rel;
		ASSERT_TRUE(sm->locking.agrees) << rel << ": " << sm->locking.why;
		EXPECT_EQ(sm->locking.observed_mode, LockMode::none) << rel;
		EXPECT_EQ(sm->locking.observed_hold_p50_ns, 0u) << rel;
		EXPECT_NE(sm->locking.why.find("no mmap_lock taken in any of its walks"),
			  std::string::npos)
			<< sm->locking.why;
		const bool vma = sm->lock_unit == LockUnit::vma_lock;
		EXPECT_EQ(*sm->locking.agrees, vma) << rel << ": " << sm->locking.why;
		// smaps_rollup holds mmap_lock on both: seeing none disagrees
		EXPECT_EQ(kind(r, WalkKind::smaps_rollup)->locking.agrees, false) << rel;
	}
	// the module hooks smaps but not numa_maps: a numa_maps run with the
	// module backend (which the smaps_run results are) saw nothing of its
	// holds, and confirms nothing either way
	RunResult nm = smaps_run("6.12.95+deb12-amd64", std::nullopt, std::nullopt);
	nm.walk_summary.front().kind = WalkKind::numa_maps;
	nm.kernel_view.stalls = StallsView{};
	add_stall_estimates(nm, LayoutSpec{});
	const StallEstimate::Kind *n = kind(nm, WalkKind::numa_maps);
	ASSERT_TRUE(n);
	EXPECT_EQ(n->locking.agrees, std::nullopt) << n->locking.why;
	EXPECT_NE(n->locking.why.find("no lock view"), std::string::npos) << n->locking.why;
	RunResult blind = smaps_run("7.3.4+deb13-cloud-amd64", std::nullopt, std::nullopt);
	add_stall_estimates(blind, LayoutSpec{});
	const StallEstimate::Kind *sm = kind(blind, WalkKind::smaps);
	EXPECT_EQ(sm->locking.agrees, std::nullopt);
	EXPECT_NE(sm->locking.why.find("no lock view"), std::string::npos) << sm->locking.why;
}

// A smaps-only 7.3 run whose mmap victim was slow during walks (off a CPU)
// while the backend attributed no stall to the walk: the measured mmap_lock
// stall is the backend's 0, not the victim's worst; on 6.12 the victim's
// worst stays the figure when the backend attributes none.
TEST(LockingFact, NoVictimFigureAsTheStallOfAWalkHoldingNoMmapLock)
{
	for (const char *rel : {"7.3.4+deb13-cloud-amd64", "6.12.95+deb12-amd64"}) {
		RunResult r = smaps_run(rel, KindSummary::LockHold{144000, 300000, LockMode::read},
					std::nullopt);
		r.walk_summary.pop_back(); // smaps alone
		r.kernel_view.stalls = StallsView{};
		VictimEntry v{Victim::mmap, 11, 12, {}, {}};
		v.during.record(20950000);
		r.victims.push_back(v);
		add_stall_estimates(r, LayoutSpec{});
		const StallEstimate::Kind *sm = kind(r, WalkKind::smaps);
		ASSERT_TRUE(sm) << rel;
		ASSERT_TRUE(sm->measured_stall_max_ns) << rel;
		if (sm->lock_unit == LockUnit::vma_lock) {
			EXPECT_EQ(*sm->measured_stall_max_ns, 0u);
			EXPECT_EQ(sm->measured_stall_source, MeasuredStallSource::backend);
			EXPECT_EQ(sm->locking.agrees, true); // 144 us of a 60 ms walk
		} else {
			EXPECT_EQ(sm->measured_stall_source, MeasuredStallSource::mmap_victim);
			EXPECT_GT(*sm->measured_stall_max_ns, 20000000u);
			EXPECT_EQ(sm->locking.agrees, false); // 6.12 holds it over the walk
		}
	}
}
