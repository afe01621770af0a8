// SPDX-License-Identifier: GPL-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "ptwalk/sorted_runs.hpp"

namespace {

struct Rec {
	unsigned t;
	int seq; // push order: ties must keep it
};
struct ByTime {
	bool operator()(const Rec &a, const Rec &b) const { return a.t < b.t; }
};

// k rings of sorted records, read one ring after another, with a sorted
// leftover before them: the merge equals a stable sort of the whole.
void check(std::mt19937 &rng, int rings, size_t leftover)
{
	std::vector<Rec> v;
	ptwalk::SortedRuns<Rec, ByTime> runs;
	int seq = 0;
	std::uniform_int_distribution<unsigned> time(0, 50); // many ties
	std::vector<unsigned> left(leftover);
	for (auto &x : left)
		x = time(rng);
	std::sort(left.begin(), left.end());
	const size_t from = 3; // records before `from` are already handed on
	for (size_t i = 0; i < from; i++)
		v.push_back({999, -1});
	for (unsigned x : left)
		runs.push(v, from, {x, seq++});
	for (int r = 0; r < rings; r++) {
		std::vector<unsigned> ts(std::uniform_int_distribution<size_t>(0, 40)(rng));
		for (auto &x : ts)
			x = time(rng);
		std::sort(ts.begin(), ts.end());
		for (unsigned x : ts)
			runs.push(v, from, {x, seq++});
	}
	EXPECT_LE(runs.runs(), size_t(rings) + 1);
	std::vector<Rec> want(v.begin() + from, v.end());
	std::stable_sort(want.begin(), want.end(), ByTime());
	runs.merge(v, from);
	EXPECT_EQ(runs.runs(), 1u);
	ASSERT_EQ(v.size() - from, want.size());
	for (size_t i = 0; i < want.size(); i++) {
		EXPECT_EQ(v[from + i].t, want[i].t) << i;
		EXPECT_EQ(v[from + i].seq, want[i].seq) << i;
	}
	for (size_t i = 0; i < from; i++)
		EXPECT_EQ(v[i].seq, -1); // what was handed on is left alone
}

TEST(SortedRuns, MergesAnyNumberOfRingsStably)
{
	std::mt19937 rng(7);
	for (int rings = 0; rings <= 9; rings++)
		for (size_t leftover : {0u, 1u, 17u})
			for (int rep = 0; rep < 20; rep++)
				check(rng, rings, leftover);
}

TEST(SortedRuns, ADipInsideOneRingStartsARun)
{
	std::vector<Rec> v;
	ptwalk::SortedRuns<Rec, ByTime> runs;
	for (unsigned t : {1u, 5u, 3u, 4u, 2u})
		runs.push(v, 0, {t, int(t)});
	EXPECT_EQ(runs.runs(), 3u);
	runs.merge(v, 0);
	for (size_t i = 0; i < v.size(); i++)
		EXPECT_EQ(v[i].t, i + 1);
}

} // namespace
