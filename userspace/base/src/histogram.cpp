// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/histogram.hpp"

#include <algorithm>
#include <cmath>

namespace ptwalk {

void Histogram::merge(const Histogram &o) noexcept
{
	for (unsigned i = 0; i < kBuckets; i++)
		counts_[i] += o.counts_[i];
	count_ += o.count_;
	sum_ += o.sum_;
	if (o.count_) {
		max_ = std::max(max_, o.max_);
		min_ = std::min(min_, o.min_);
	}
}

uint64_t Histogram::quantile(double q) const noexcept
{
	if (!count_)
		return 0;
	q = std::clamp(q, 0.0, 1.0);
	uint64_t rank = uint64_t(std::ceil(q * double(count_)));
	if (rank == 0)
		rank = 1;
	uint64_t seen = 0;
	for (unsigned i = 0; i < kBuckets; i++) {
		seen += counts_[i];
		if (seen >= rank)
			return std::clamp(upper_bound(i), min_, max_);
	}
	return max_;
}

Json Histogram::to_json(bool with_buckets) const
{
	Json j = Json::object();
	j["count"] = count_;
	j["min_ns"] = min();
	j["p50_ns"] = quantile(0.50);
	j["p90_ns"] = quantile(0.90);
	j["p99_ns"] = quantile(0.99);
	j["p999_ns"] = quantile(0.999);
	j["p9999_ns"] = quantile(0.9999);
	j["max_ns"] = max();
	j["mean_ns"] = mean();
	if (with_buckets) {
		Json b = Json::array();
		for (unsigned i = 0; i < kBuckets; i++)
			if (counts_[i])
				b.push(Json(Json::Array{Json(lower_bound(i)), Json(counts_[i])}));
		j["buckets"] = std::move(b);
	}
	return j;
}

} // namespace ptwalk
