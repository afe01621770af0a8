// SPDX-License-Identifier: GPL-2.0
#include <gtest/gtest.h>

#include "ptwalk/alias_bias.hpp"
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
	Json j = layout_summary(parse_vma_layout(kMaps, "ptwalk-alias"));
	EXPECT_EQ(j.find("vmas")->number().value(), 6);
	EXPECT_EQ(j.find("largest_bytes")->number().value(), double(GiB));
	const Json *h = j.find("size_histogram");
	ASSERT_TRUE(h);
	double n = 0;
	for (size_t i = 0; i < h->size(); i++)
		n += h->at(i).find("count")->number().value();
	EXPECT_EQ(n, 6);
	EXPECT_LE(h->size(), 64u);
	EXPECT_EQ(j.find("mapping")->find("vmas")->number().value(), 3);
	EXPECT_EQ(j.find("mapping")->find("smallest_bytes")->number().value(), double(GiB / 2));
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
	for (const char *k : {"clear_refs", "clear_refs_anon", "clear_refs_file", "softdirty",
			      "smaps", "smaps_rollup", "maps", "numa_maps", "pagemap",
			      "pagemap_scan"}) {
		const KindLocking *kl = kind_locking(k);
		ASSERT_TRUE(kl) << k;
		EXPECT_GT(strlen(kl->source), 20u) << k;
	}
	EXPECT_EQ(kind_locking("smaps_rollup")->unit, LockUnit::vma_when_contended);
	EXPECT_NE(std::string(kind_locking("smaps_rollup")->source).find("ff9f47f6f00c"),
		  std::string::npos);
	EXPECT_EQ(kind_locking("clear_refs")->unit, LockUnit::whole_walk);
	EXPECT_STREQ(kind_locking("clear_refs")->lock_mode, "write");
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
Json aliased_result(Json cal)
{
	Json r = Json::object();
	r["scenario"] = Json(Json::Object{{"size_bytes", 8 * GiB}, {"aliased", true}});
	Json ws = Json::object();
	for (const char *k : {"smaps_rollup", "clear_refs"})
		ws[k] = Json(Json::Object{{"duration_max_ns", 100000000},
					  {"duration_p50_ns", 80000000},
					  {"max_stall_ns", 13000000}});
	r["walk_summary"] = std::move(ws);
	r["workload"] = Json(Json::Object{
		{"vma_layout",
		 Json(Json::Object{{"vmas", 20},
				   {"mapping", Json(Json::Object{{"vmas", 8},
								 {"largest_bytes", GiB}})}})}});
	r["alias_calibration"] = std::move(cal);
	return r;
}

} // namespace

TEST(StallEstimate, OneVmaLayoutScalesTheYieldingKindOnly)
{
	Json r = aliased_result(Json(Json::Object{{"skipped", "disabled"}}));
	add_stall_estimates(r, LayoutSpec{});
	const Json *k = r.find("stall_estimate")->find("kinds");
	const Json *sr = k->find("smaps_rollup");
	ASSERT_TRUE(sr);
	// aliased: one VMA of eight under a hold; one VMA: the whole walk
	EXPECT_EQ(sr->find("model_stall_max_ns")->number().value(), 12500000);
	EXPECT_EQ(sr->find("estimate_max_ns")->number().value(), 100000000);
	EXPECT_EQ(sr->find("status")->string().value(), "uncorrected");
	EXPECT_NEAR(sr->find("model_check_ratio")->number().value(), 13.0 / 12.5, 1e-9);
	const Json *cr = k->find("clear_refs");
	EXPECT_EQ(cr->find("model_stall_max_ns")->number().value(), 100000000);
	EXPECT_EQ(cr->find("estimate_max_ns")->number().value(), 100000000);
	// the layout as measured reproduces the model for it
	Json r2 = aliased_result(Json(Json::Object{{"skipped", "disabled"}}));
	add_stall_estimates(r2, LayoutSpec{LayoutSpec::aliased, 0});
	EXPECT_EQ(r2.find("stall_estimate")->find("kinds")->find("smaps_rollup")
			  ->find("estimate_max_ns")->number().value(), 12500000);
	// VMAs of 2 GiB: a quarter
	Json r3 = aliased_result(Json(Json::Object{{"skipped", "disabled"}}));
	add_stall_estimates(r3, LayoutSpec{LayoutSpec::size, 2 * GiB});
	EXPECT_EQ(r3.find("stall_estimate")->find("kinds")->find("smaps_rollup")
			  ->find("estimate_max_ns")->number().value(), 25000000);
}

namespace {

Json one_size(uint64_t size, double cost_ratio, double stall_ratio)
{
	Json k = Json::object();
	k["smaps_rollup"] = Json(Json::Object{{"cost_ratio", cost_ratio},
					      {"stall_model_ratio", stall_ratio}});
	return Json(Json::Object{{"size_bytes", size}, {"kinds", std::move(k)}});
}

} // namespace

TEST(Calibration, CorrectedOnlyWhereSizesAgree)
{
	Json cal = Json::object();
	cal["sizes"] = Json(Json::Array{one_size(2 * GiB, 0.80, 1.00), one_size(8 * GiB, 0.88, 1.10)});
	judge_alias_bias(cal);
	// 10% apart: corrected, by the mean
	EXPECT_NEAR(cal.find("ratio")->find("smaps_rollup")->number().value(), 0.84, 1e-9);
	EXPECT_NEAR(cal.find("stall_ratio")->find("smaps_rollup")->number().value(), 1.05, 1e-9);
	EXPECT_FALSE(cal.find("kinds")->find("smaps_rollup")->find("why"));

	Json bad = Json::object();
	bad["sizes"] = Json(Json::Array{one_size(2 * GiB, 0.60, 1.0), one_size(8 * GiB, 0.90, 1.0)});
	judge_alias_bias(bad);
	EXPECT_FALSE(bad.find("ratio")->find("smaps_rollup"));
	EXPECT_FALSE(bad.find("stall_ratio")->find("smaps_rollup"));
	const Json *e = bad.find("kinds")->find("smaps_rollup");
	EXPECT_NE(e->find("why")->string().value().find("cost ratio differs"), std::string::npos);
	EXPECT_NEAR(e->find("factor_range")->at(0).number().value(), 0.60, 1e-9);
	EXPECT_NEAR(e->find("factor_range")->at(1).number().value(), 0.90, 1e-9);

	// the stall disagreeing alone keeps the cost correction, not the stall one
	Json st = Json::object();
	st["sizes"] = Json(Json::Array{one_size(2 * GiB, 0.9, 0.5), one_size(8 * GiB, 0.9, 1.0)});
	judge_alias_bias(st);
	EXPECT_TRUE(st.find("ratio")->find("smaps_rollup"));
	EXPECT_FALSE(st.find("stall_ratio")->find("smaps_rollup"));
	EXPECT_NE(st.find("kinds")->find("smaps_rollup")->find("why")->string().value().find(
			  "stall vs model"),
		  std::string::npos);

	// one size: nothing is called corrected
	Json one = Json::object();
	one["sizes"] = Json(Json::Array{one_size(2 * GiB, 0.9, 1.0)});
	judge_alias_bias(one);
	EXPECT_FALSE(one.find("ratio")->find("smaps_rollup"));
}

TEST(StallEstimate, RangeWhenTheCalibrationDisagrees)
{
	Json cal = Json::object();
	cal["sizes"] = Json(Json::Array{one_size(2 * GiB, 0.60, 1.0), one_size(8 * GiB, 0.90, 1.0)});
	judge_alias_bias(cal);
	Json r = aliased_result(cal);
	add_stall_estimates(r, LayoutSpec{});
	const Json *sr = r.find("stall_estimate")->find("kinds")->find("smaps_rollup");
	EXPECT_EQ(sr->find("status")->string().value(), "range");
	EXPECT_FALSE(sr->find("estimate_max_ns"));
	EXPECT_EQ(sr->find("estimate_max_range_ns")->at(0).number().value(), 60000000);
	EXPECT_EQ(sr->find("estimate_max_range_ns")->at(1).number().value(), 90000000);
	EXPECT_NE(sr->find("why")->string().value().find("differs"), std::string::npos);

	Json good = Json::object();
	good["sizes"] = Json(Json::Array{one_size(2 * GiB, 0.80, 1.0), one_size(8 * GiB, 0.84, 1.1)});
	judge_alias_bias(good);
	Json r2 = aliased_result(good);
	add_stall_estimates(r2, LayoutSpec{});
	const Json *c = r2.find("stall_estimate")->find("kinds")->find("smaps_rollup");
	EXPECT_EQ(c->find("status")->string().value(), "corrected");
	EXPECT_NEAR(c->find("estimate_max_ns")->number().value(), 100e6 * 0.82 * 1.05, 2);
}

TEST(Calibration, Sizes)
{
	EXPECT_EQ(alias_bias_sizes(8 * GiB), (std::vector<uint64_t>{2 * GiB, 8 * GiB}));
	EXPECT_EQ(alias_bias_sizes(4 * GiB), (std::vector<uint64_t>{2 * GiB, 4 * GiB}));
	EXPECT_EQ(alias_bias_sizes(256ull << 20),
		  (std::vector<uint64_t>{128ull << 20, 256ull << 20}));
	EXPECT_EQ(alias_bias_sizes(2ull << 20), (std::vector<uint64_t>{2ull << 20}));
}
