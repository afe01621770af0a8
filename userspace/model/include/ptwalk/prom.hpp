// SPDX-License-Identifier: GPL-2.0
// The Prometheus text exposition format (version 0.0.4), as node_exporter's
// textfile collector and a Prometheus scrape read it: families with HELP and
// TYPE lines, escaped label values, cumulative histogram buckets.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ptwalk::prom {

using Labels = std::vector<std::pair<std::string, std::string>>;

// Label value escaping: backslash, double quote and newline.
std::string escape_label(std::string_view v);
// A sample value: integers as integers, else shortest round-trip form;
// +Inf/-Inf/NaN spelled as Prometheus does.
std::string format_value(double v);

// Builds the text. Each family's HELP/TYPE is written once, before its
// first sample; samples of a family must be added together.
class Exposition {
public:
	void family(std::string_view name, std::string_view type, std::string_view help);
	void sample(std::string_view name, const Labels &labels, double value);
	const std::string &text() const { return out_; }

private:
	std::string out_;
};

// A histogram with fixed upper bounds (seconds); +Inf implied.
class Histogram {
public:
	explicit Histogram(std::vector<double> bounds);
	void observe(double v);
	// name_bucket{..,le=".."}, name_sum, name_count
	void render(Exposition &x, std::string_view name, const Labels &labels) const;
	uint64_t count() const { return count_; }
	double sum() const { return sum_; }

private:
	std::vector<double> bounds_;
	std::vector<uint64_t> counts_; // per bucket, bounds_.size() + 1 (Inf)
	double sum_ = 0;
	uint64_t count_ = 0;
};

// Hold and wait time buckets, seconds: 1 ms .. 10 s, with 0.1 exact (the
// alert threshold must be a bucket bound).
std::vector<double> walk_seconds_buckets();

// Bounded label values: the first `limit` distinct values pass (after
// sanitizing: printable ASCII only, others become '?'), later new ones
// become "other". Values in `always` pass and do not count.
class LabelFolder {
public:
	explicit LabelFolder(size_t limit, std::set<std::string> always = {})
		: limit_(limit), always_(std::move(always))
	{
	}
	std::string fold(std::string_view v);
	size_t distinct() const { return seen_.size(); }
	uint64_t folded() const { return folded_; }

private:
	size_t limit_;
	std::set<std::string> always_, seen_;
	uint64_t folded_ = 0;
};

std::string sanitize(std::string_view v);

} // namespace ptwalk::prom
