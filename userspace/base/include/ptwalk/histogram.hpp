// SPDX-License-Identifier: GPL-2.0
// Log-linear latency histogram (HDR style): values below 256 are exact; each
// power of two above is split into 128 buckets, so any recorded value is
// known to within 1/128 (< 0.8%) of itself. Fixed size, trivially copyable
// (it lives in memory shared between processes), and record() neither
// allocates nor locks: one writer per histogram.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <vector>

#include "ptwalk/json.hpp"

namespace ptwalk {

class Histogram {
public:
	static constexpr unsigned kSubBits = 7; // 128 per octave
	static constexpr unsigned kSub = 1u << kSubBits;
	static constexpr unsigned kLinear = 2 * kSub; // 0..255 exact
	static constexpr unsigned kOctaves = 64 - (kSubBits + 1);
	static constexpr unsigned kBuckets = kLinear + kOctaves * kSub;

	static constexpr unsigned index_of(uint64_t v) noexcept
	{
		if (v < kLinear)
			return unsigned(v);
		const unsigned msb = 63u - unsigned(std::countl_zero(v));
		const unsigned shift = msb - kSubBits;
		// top kSubBits+1 bits of v, minus the implicit leading one
		const unsigned sub = unsigned(v >> shift) - kSub;
		return kLinear + (msb - (kSubBits + 1)) * kSub + sub;
	}
	// Smallest value that lands in bucket i.
	static constexpr uint64_t lower_bound(unsigned i) noexcept
	{
		if (i < kLinear)
			return i;
		const unsigned o = (i - kLinear) / kSub;
		const unsigned sub = (i - kLinear) % kSub;
		const unsigned shift = o + 1;
		return (uint64_t(kSub + sub)) << shift;
	}
	// Largest value that lands in bucket i.
	static constexpr uint64_t upper_bound(unsigned i) noexcept
	{
		return i + 1 < kBuckets ? lower_bound(i + 1) - 1 : UINT64_MAX;
	}

	void record(uint64_t v) noexcept
	{
		counts_[index_of(v)]++;
		count_++;
		sum_ += v;
		if (v > max_)
			max_ = v;
		if (v < min_)
			min_ = v;
	}
	void reset() noexcept { *this = Histogram{}; }
	void merge(const Histogram &o) noexcept;

	uint64_t count() const noexcept { return count_; }
	uint64_t max() const noexcept { return count_ ? max_ : 0; }
	uint64_t min() const noexcept { return count_ ? min_ : 0; }
	double mean() const noexcept { return count_ ? double(sum_) / double(count_) : 0; }
	// Value at quantile q in [0,1]: the upper bound of the bucket holding
	// the ceil(q*count)-th smallest value, clamped to the exact max.
	uint64_t quantile(double q) const noexcept;
	uint64_t bucket(unsigned i) const noexcept { return counts_[i]; }

	// {"count","min_ns","p50_ns","p90_ns","p99_ns","p999_ns","p9999_ns",
	//  "max_ns","mean_ns","buckets":[[lower_ns,count],...]} (non-empty only)
	Json to_json(bool with_buckets = true) const;

private:
	std::array<uint64_t, kBuckets> counts_{};
	uint64_t count_ = 0;
	uint64_t sum_ = 0;
	uint64_t max_ = 0;
	uint64_t min_ = UINT64_MAX;
};

} // namespace ptwalk
