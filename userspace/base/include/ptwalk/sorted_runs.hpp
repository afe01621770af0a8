// SPDX-License-Identifier: GPL-2.0
// Records that arrive as a few sorted runs (one per CPU ring, each read in
// time order) put into one order in O(n log runs), stably: what std::
// stable_sort does in O(n log n) with a buffer of n on every round.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace ptwalk {

template <class T, class Less>
class SortedRuns {
public:
	explicit SortedRuns(Less less = Less()) : less_(less) {}

	// v[from, size) must be sorted when there are no runs (after merge()).
	void push(std::vector<T> &v, size_t from, const T &x)
	{
		if (v.size() > from && less_(x, v.back()))
			starts_.push_back(v.size());
		v.push_back(x);
	}
	size_t runs() const { return starts_.size() + 1; }

	// v[from, size) sorted; records that compare equal keep their order.
	void merge(std::vector<T> &v, size_t from)
	{
		auto at = [&v](size_t i) { return v.begin() + std::ptrdiff_t(i); };
		std::vector<size_t> b{from};
		b.insert(b.end(), starts_.begin(), starts_.end());
		b.push_back(v.size());
		while (b.size() > 2) {
			std::vector<size_t> next{b[0]};
			for (size_t i = 0; i + 2 < b.size(); i += 2) {
				std::inplace_merge(at(b[i]), at(b[i + 1]), at(b[i + 2]), less_);
				next.push_back(b[i + 2]);
			}
			if (b.size() % 2 == 0) // an odd run out: to the next pass
				next.push_back(b.back());
			b = std::move(next);
		}
		starts_.clear();
	}

private:
	Less less_;
	std::vector<size_t> starts_; // where each run past the first begins
};

} // namespace ptwalk
