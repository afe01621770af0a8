// SPDX-License-Identifier: GPL-2.0
// Time intervals [start_ns, end_ns) of the stall split
// (stall_attribution.cpp): a running union, the length of a set, a clip.
#pragma once

#include <cstdint>
#include <vector>

#include "ptwalk/stall_attribution.hpp"

namespace ptwalk {

using Interval = StallAccumulator::Interval;

// Adds [s, e) to a time-ordered union of intervals built by ascending s.
void add_interval(std::vector<Interval> &u, uint64_t s, uint64_t e);
// The total length of a set of intervals, overlaps counted once.
uint64_t union_ns(std::vector<Interval> v);
// [a, b) clipped to [lo, hi): empty (start == end) when disjoint
Interval clip(uint64_t a, uint64_t b, uint64_t lo, uint64_t hi);

} // namespace ptwalk
