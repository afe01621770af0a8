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
