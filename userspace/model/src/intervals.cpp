// SPDX-License-Identifier: GPL-2.0
#include "intervals.hpp"

#include <algorithm>

namespace ptwalk {

void add_interval(std::vector<Interval> &u, uint64_t s, uint64_t e)
{
	if (e <= s)
		return;
	if (!u.empty() && s <= u.back().end_ns) {
		u.back().end_ns = std::max(u.back().end_ns, e);
		return;
	}
	u.push_back({s, e});
}

uint64_t union_ns(std::vector<Interval> v)
{
	std::sort(v.begin(), v.end(),
		  [](const Interval &a, const Interval &b) { return a.start_ns < b.start_ns; });
	uint64_t total = 0, cs = 0, ce = 0;
	bool open = false;
	for (const auto &x : v) {
		if (x.end_ns <= x.start_ns)
			continue;
		if (open && x.start_ns <= ce) {
			ce = std::max(ce, x.end_ns);
			continue;
		}
		if (open)
			total += ce - cs;
		cs = x.start_ns;
		ce = x.end_ns;
		open = true;
	}
	return open ? total + ce - cs : total;
}

Interval clip(uint64_t a, uint64_t b, uint64_t lo, uint64_t hi)
{
	const uint64_t s = std::max(a, lo), e = std::min(b, hi);
	return e > s ? Interval{s, e} : Interval{s, s};
}

} // namespace ptwalk
