// SPDX-License-Identifier: GPL-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "ptwalk/histogram.hpp"

using ptwalk::Histogram;

TEST(Histogram, SmallValuesAreExact)
{
	Histogram h;
	for (uint64_t v = 0; v < 256; v++)
		h.record(v);
	EXPECT_EQ(h.count(), 256u);
	EXPECT_EQ(h.min(), 0u);
	EXPECT_EQ(h.max(), 255u);
	EXPECT_EQ(h.quantile(0.5), 127u);
	EXPECT_EQ(h.quantile(1.0), 255u);
}

TEST(Histogram, BucketBoundsAreContiguousAndMonotonic)
{
	for (unsigned i = 1; i < Histogram::kBuckets; i++) {
		ASSERT_EQ(Histogram::lower_bound(i), Histogram::upper_bound(i - 1) + 1) << i;
		ASSERT_EQ(Histogram::index_of(Histogram::lower_bound(i)), i);
		ASSERT_EQ(Histogram::index_of(Histogram::upper_bound(i - 1)), i - 1);
	}
	EXPECT_EQ(Histogram::index_of(UINT64_MAX), Histogram::kBuckets - 1);
}

TEST(Histogram, RelativeErrorBelowOnePercent)
{
	std::mt19937_64 rng(42);
	for (int i = 0; i < 200000; i++) {
		uint64_t v = rng() >> (rng() % 64);
		unsigned b = Histogram::index_of(v);
		uint64_t lo = Histogram::lower_bound(b), hi = Histogram::upper_bound(b);
		ASSERT_LE(lo, v);
		ASSERT_GE(hi, v);
		if (v >= 256) {
			ASSERT_LE(double(hi - lo) / double(lo), 0.01) << v;
		}
	}
}

TEST(Histogram, QuantilesMatchSortedSamplesWithinOnePercent)
{
	std::mt19937_64 rng(7);
	std::lognormal_distribution<double> d(9.0, 2.0); // ~8 us median, long tail
	std::vector<uint64_t> xs;
	Histogram h;
	for (int i = 0; i < 100000; i++) {
		uint64_t v = uint64_t(d(rng));
		xs.push_back(v);
		h.record(v);
	}
	std::sort(xs.begin(), xs.end());
	for (double q : {0.5, 0.9, 0.99, 0.999}) {
		uint64_t exact = xs[size_t(std::ceil(q * double(xs.size()))) - 1];
		uint64_t got = h.quantile(q);
		EXPECT_GE(got, exact) << q;
		EXPECT_LE(double(got), double(exact) * 1.01 + 1) << q;
	}
	EXPECT_EQ(h.quantile(1.0), xs.back());
	EXPECT_EQ(h.max(), xs.back());
}

TEST(Histogram, EmptyIsZero)
{
	Histogram h;
	EXPECT_EQ(h.count(), 0u);
	EXPECT_EQ(h.quantile(0.99), 0u);
	EXPECT_EQ(h.max(), 0u);
	EXPECT_EQ(h.min(), 0u);
}

TEST(Histogram, MergeAddsCounts)
{
	Histogram a, b;
	a.record(10);
	a.record(1000000);
	b.record(5);
	b.record(3000000000ull);
	a.merge(b);
	EXPECT_EQ(a.count(), 4u);
	EXPECT_EQ(a.min(), 5u);
	EXPECT_EQ(a.max(), 3000000000ull);
}

TEST(Histogram, JsonHasSummaryAndSparseBuckets)
{
	Histogram h;
	h.record(100);
	h.record(100);
	h.record(1000000);
	auto j = h.to_json();
	EXPECT_EQ(j.find("count")->number(), 3.0);
	EXPECT_EQ(j.find("max_ns")->number(), 1000000.0);
	ASSERT_NE(j.find("buckets"), nullptr);
	EXPECT_EQ(j.find("buckets")->size(), 2u);
	EXPECT_EQ(j.find("buckets")->at(0).at(0).number(), 100.0);
	EXPECT_EQ(j.find("buckets")->at(0).at(1).number(), 2.0);
}

TEST(Histogram, IsTriviallyCopyableForSharedMemory)
{
	EXPECT_TRUE(std::is_trivially_copyable_v<Histogram>);
	EXPECT_LE(sizeof(Histogram), 64u * 1024u);
}
