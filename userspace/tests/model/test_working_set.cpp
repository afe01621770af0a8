// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/working_set.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

using namespace ptwalk;

namespace {

WorkingSetSpec spec(double f, WsPattern p)
{
	WorkingSetSpec s;
	s.fraction = f;
	s.pattern = p;
	return s;
}

std::set<uint64_t> pages_of(const TouchSequence &q, uint64_t p0, uint64_t p1)
{
	std::set<uint64_t> s;
	for (uint64_t p = p0; p < p1; p++)
		s.insert(q.page(p));
	return s;
}

} // namespace

TEST(WorkingSet, ParsesAShareAndAPattern)
{
	std::string err;
	auto a = parse_working_set("0.25", &err);
	ASSERT_TRUE(a) << err;
	EXPECT_DOUBLE_EQ(a->fraction, 0.25);
	EXPECT_EQ(a->pattern, WsPattern::uniform);
	auto b = parse_working_set("10%,drift", &err);
	ASSERT_TRUE(b) << err;
	EXPECT_DOUBLE_EQ(b->fraction, 0.1);
	EXPECT_EQ(b->pattern, WsPattern::drift);
	ASSERT_TRUE(parse_working_set("1,hot", &err));
	for (const char *bad : {"", "0", "1.01", "-0.5", "abc", "0.5,", "0.5,cold", "nan", "%"}) {
		err.clear();
		EXPECT_FALSE(parse_working_set(bad, &err)) << bad;
		EXPECT_FALSE(err.empty()) << bad;
	}
}

// Every round touches per_round distinct pages of the mapping, whatever the
// pattern and however the share divides the pages.
TEST(WorkingSet, ARoundTouchesItsShareOfDistinctPages)
{
	for (uint64_t pages : {1ull, 7ull, 4096ull, 16384ull, 100000ull})
		for (WsPattern p : {WsPattern::uniform, WsPattern::hot, WsPattern::drift})
			for (double f : {0.01, 0.25, 0.5, 1.0}) {
				const TouchSequence q(pages, spec(f, p));
				const uint64_t k = q.per_round();
				EXPECT_GE(k, 1u);
				EXPECT_LE(k, pages);
				for (uint64_t r : {0ull, 1ull, 17ull}) {
					auto s = pages_of(q, r * k, (r + 1) * k);
					EXPECT_EQ(s.size(), k) << pages << " " << f;
					EXPECT_LT(*s.rbegin(), pages);
					EXPECT_EQ(q.distinct(r * k, (r + 1) * k), k);
				}
			}
}

// hot: the same set every round; drift: it moves on by an eighth of itself
// each round; uniform: a new draw each round, so two rounds overlap by
// about k*k/pages.
TEST(WorkingSet, PatternsDifferInHowRoundsOverlap)
{
	const uint64_t n = 16384;
	const TouchSequence hot(n, spec(0.25, WsPattern::hot));
	const uint64_t k = hot.per_round();
	EXPECT_EQ(k, 4096u);
	EXPECT_EQ(hot.distinct(0, 5 * k), k);
	EXPECT_EQ(pages_of(hot, 0, k), pages_of(hot, 3 * k, 4 * k));

	const TouchSequence drift(n, spec(0.25, WsPattern::drift));
	EXPECT_EQ(drift.distinct(0, 2 * k), k + k / 8);
	EXPECT_EQ(drift.distinct(0, 9 * k), k + 8 * (k / 8));

	const TouchSequence uni(n, spec(0.25, WsPattern::uniform));
	const double expect = 2.0 * double(k) - double(k) * double(k) / double(n);
	EXPECT_NEAR(double(uni.distinct(0, 2 * k)), expect, 0.05 * expect);
	// distinct() against the pages themselves, across a round's edge
	EXPECT_EQ(uni.distinct(k / 2, 2 * k + 7), pages_of(uni, k / 2, 2 * k + 7).size());
	EXPECT_EQ(uni.distinct(5, 5), 0u);
	EXPECT_EQ(uni.distinct(9, 5), 0u);
}

// A window runs from a clear_refs walk to the next smaps walk; the truth's
// low end leaves out the touch in flight at each edge and what the walks'
// own spans saw, the high end keeps both.
TEST(WorkingSet, JudgesWindowsAgainstTheTruthRange)
{
	const TouchSequence q(1000, spec(0.1, WsPattern::hot)); // k = 100
	const uint64_t pb = 4096;
	std::vector<WsWalk> w = {
		{WalkKind::smaps, 0, 1, 0, 0, 0}, // no clear_refs before it: no window
		{WalkKind::clear_refs, 10, 20, 0, 5, std::nullopt, 4},
		{WalkKind::smaps, 100, 110, 60, 62, 56 * pb,
		 6}, // lo: [6, 60) = 54, hi: [0, 63) = 63
		{WalkKind::clear_refs, 200, 210, 100, 101, std::nullopt},
		{WalkKind::smaps, 300, 310, 150, 150, 80 * pb}, // hi: [100, 151): 51 -> above
		{WalkKind::clear_refs, 400, 410, 200, 200, std::nullopt},
		{WalkKind::smaps, 500, 510, 260, 260, 30 * pb}, // lo: [201, 260) = 59 -> below
	};
	WorkingSetResult r;
	ws_judge(&r, q, w);
	ASSERT_EQ(r.windows.size(), 3u);
	EXPECT_EQ(r.windows[0].truth_lo_bytes, 54 * pb);
	EXPECT_EQ(r.windows[0].truth_hi_bytes, 63 * pb);
	EXPECT_EQ(r.windows[0].touch_first, 0u);
	EXPECT_EQ(r.windows[0].touch_end, 63u);
	EXPECT_EQ(r.windows[0].error, 0);
	EXPECT_EQ(r.windows[0].start_ns, 10u);
	EXPECT_EQ(r.windows[0].end_ns, 110u);
	EXPECT_EQ(r.windows[1].truth_hi_bytes, 51 * pb);
	EXPECT_NEAR(r.windows[1].error, (80.0 - 51) / 51, 1e-9);
	EXPECT_EQ(r.windows[2].truth_lo_bytes, 59 * pb);
	EXPECT_NEAR(r.windows[2].error, (30.0 - 59) / 59, 1e-9);
	ASSERT_TRUE(r.accuracy);
	EXPECT_EQ(r.accuracy->windows, 3u);
	EXPECT_EQ(r.accuracy->within, 1u);
	EXPECT_NEAR(r.accuracy->max_abs_error, (80.0 - 51) / 51, 1e-9);
	EXPECT_NEAR(r.accuracy->bias, ((80.0 - 51) / 51 + (30.0 - 59) / 59) / 3, 1e-9);
	EXPECT_FALSE(r.why);
	// the cost: the two walks' syscall time per window (10, 0, 0)
	EXPECT_EQ(r.windows[0].walk_ns, 10u);
	ASSERT_TRUE(r.cost);
	EXPECT_EQ(r.cost->walk_ns_p50, 0u);
	EXPECT_NEAR(r.cost->core_share, 10.0 / (100 + 110 + 110), 1e-12);
	EXPECT_NEAR(r.cost->ns_per_gib_p50, 0, 1e-12);
}

TEST(WorkingSet, AProfileWithoutWindowsSaysWhy)
{
	const TouchSequence q(1000, spec(0.1, WsPattern::hot));
	WorkingSetResult r;
	ws_judge(&r, q, {{WalkKind::clear_refs, 0, 1, 0, 0, std::nullopt}});
	EXPECT_TRUE(r.windows.empty());
	EXPECT_FALSE(r.accuracy);
	ASSERT_TRUE(r.why);
	EXPECT_NE(r.why->find("--scanner wss"), std::string::npos);
}

TEST(WorkingSet, ConflictsAreNamed)
{
	Scenario sc;
	sc.victims = {Victim::mmap, Victim::fault};
	EXPECT_EQ(working_set_conflict(sc), ""); // none asked
	sc.working_set = spec(0.5, WsPattern::hot);
	EXPECT_EQ(working_set_conflict(sc), "");
	sc.victims.push_back(Victim::write);
	EXPECT_NE(working_set_conflict(sc).find("write victim"), std::string::npos);
	sc.victims = {};
	sc.backing = Backing::zeropage;
	EXPECT_NE(working_set_conflict(sc).find("zeropage"), std::string::npos);
}

// --scanner damon: a window from one read of an aggregation's regions to
// the next, when the next surely caught the very next aggregation.
TEST(WorkingSet, DamonWindowsAreConsecutiveAggregations)
{
	const TouchSequence q(1000, spec(0.1, WsPattern::hot)); // k = 100
	const uint64_t pb = 4096, ms = 1000000;
	WorkingSetResult::Damon d;
	d.sample_us = 5000;
	d.aggr_us = 200000;
	d.return_slack_us = 55000;
	d.update_timeouts = 2; // empty reads, the scanner's count: kept as given
	// a read: written at w ms, returned at r ms, positions, accessed, CPU
	auto rd =
		[&](uint64_t w, uint64_t r, uint64_t p0, uint64_t p1, uint64_t acc, uint64_t cpu) {
		return DamonRead{w * ms, r * ms, p0, p1, acc * pb, cpu, 12};
	};
	std::vector<DamonRead> reads = {
		rd(0, 150, 0, 75, 0, 1000),
		// written 1 ms after the last returned: its aggregation ended at
		// or after max(0, 150 - 55) + 200 = 295 ms, so this read caught
		// it; lo [75, 76) hi [0, 176)
		rd(151, 350, 76, 175, 90, 4000),
		// written 300 ms after: it may have missed one: skipped
		rd(650, 800, 325, 400, 80, 9000),
		rd(801, 1000, 401, 500, 120, 9500), // hi [325, 501): 100 pages
	};
	WorkingSetResult r;
	ws_judge_damon(&r, q, reads, {}, d);
	ASSERT_EQ(r.windows.size(), 2u);
	EXPECT_EQ(r.method, "damon_vaddr");
	EXPECT_EQ(r.windows[0].start_ns, 95 * ms); // the earliest its aggregation began
	EXPECT_EQ(r.windows[0].end_ns, 350 * ms);
	EXPECT_EQ(r.windows[0].truth_hi_bytes, 100 * pb); // 176 touches of a 100-page set
	EXPECT_EQ(r.windows[0].truth_lo_bytes, 0u);       // [76, 76)
	EXPECT_EQ(r.windows[0].estimate_bytes, 90 * pb);
	EXPECT_EQ(r.windows[0].walk_ns, 3000u); // the kdamond's CPU in between
	EXPECT_EQ(r.windows[1].truth_hi_bytes, 100 * pb);
	EXPECT_NEAR(r.windows[1].error, 0.2, 1e-9); // 120 over a set of 100
	ASSERT_TRUE(r.damon);
	EXPECT_EQ(r.damon->reads, 4u);
	EXPECT_EQ(r.damon->windows_skipped, 1u);
	EXPECT_EQ(r.damon->kdamond_cpu_ns, 8500u);
	EXPECT_EQ(r.damon->regions_p50, 12u);
	EXPECT_EQ(r.damon->update_timeouts, 2u);
	Json::Value j;
	to_json(j, r);
	EXPECT_EQ(j["damon"]["update_timeouts"], 2);
	EXPECT_EQ(j["damon"]["reads"], 4);
	// 6.12's slack (a 100 ms poll) is larger: the second read's request
	// may then have come after its aggregation began late
	d.return_slack_us = 155000;
	reads[1] = rd(151, 350, 76, 175, 90, 4000);
	reads[0].write_ns = 0;
	reads[1].write_ns = 300 * ms; // after max(0, 150 - 155) + 200 - 5
	WorkingSetResult r2;
	ws_judge_damon(&r2, q, {reads[0], reads[1]}, {}, d);
	EXPECT_TRUE(r2.windows.empty());
	ASSERT_TRUE(r2.why);
	EXPECT_NE(r2.why->find("1 a missed aggregation apart"), std::string::npos) << *r2.why;
}

// Reads back to back leave no time between them for the truth's low end;
// the toucher's timeline gives the counts at the aggregation's edges.
TEST(WorkingSet, DamonTruthFromTheTimeline)
{
	const TouchSequence q(10000, spec(0.1, WsPattern::uniform)); // k = 1000
	const uint64_t ms = 1000000;
	WorkingSetResult::Damon d;
	d.sample_us = 5000;
	d.aggr_us = 200000;
	d.return_slack_us = 55000;
	std::vector<DamonRead> reads = {{0, 200 * ms, 0, 1000, 0, 0, 10},
					{201 * ms, 400 * ms, 1005, 2000, 0, 0, 10}};
	// a touch every 0.2 ms: count 5 * t_ms
	std::vector<TouchPoint> tl;
	for (uint64_t t = 10; t <= 400; t += 10)
		tl.push_back({t * ms, 5 * t});
	WorkingSetResult r;
	ws_judge_damon(&r, q, reads, {}, d);
	ASSERT_EQ(r.windows.size(), 1u);
	// without it: [1001, 1005), the read's own counts: 4 touches
	EXPECT_EQ(r.windows[0].truth_lo_bytes, 4u * 4096);
	WorkingSetResult r2;
	ws_judge_damon(&r2, q, reads, tl, d);
	ASSERT_EQ(r2.windows.size(), 1u);
	// low end: after 200 ms (count 1000, +1 in flight) and by
	// max(201, 400 - 55) = 345 ms (the timeline's last count by then: 1700
	// at 340 ms): touches [1001, 1700), all of round 1
	EXPECT_EQ(r2.windows[0].truth_lo_bytes, 699u * 4096);
	// high end: from max(0, 200 - 55) = 145 ms (count 725) to 400 ms
	// (count 2000, +1): [725, 2001), rounds 0 to 2: 275 + 1000 + 1 distinct
	// at most; uniform draws of distinct rounds may share pages
	EXPECT_LE(r2.windows[0].truth_hi_bytes, 1276u * 4096);
	EXPECT_GT(r2.windows[0].truth_hi_bytes, r2.windows[0].truth_lo_bytes);
	EXPECT_EQ(r2.windows[0].start_ns, 145 * ms);
	EXPECT_EQ(r2.windows[0].end_ns, 400 * ms);
}

TEST(WorkingSet, DamonNeedsAWorkingSet)
{
	Scenario sc;
	sc.profile = Profile::damon;
	EXPECT_NE(working_set_conflict(sc).find("--scanner damon needs --working-set"),
		  std::string::npos);
	sc.working_set = spec(0.25, WsPattern::hot);
	sc.victims = {Victim::mmap};
	EXPECT_EQ(working_set_conflict(sc), "");
}
