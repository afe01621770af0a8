// SPDX-License-Identifier: GPL-2.0
// Monotonic clock shared by ptwalk's processes and the kernel (ktime_get_ns).
#pragma once

#include <cstdint>
#include <ctime>

namespace ptwalk {

// CLOCK_MONOTONIC in ns: the same clock as the kernel's ktime_get_ns() and
// perf's default sample clock, so user and kernel timestamps compare.
inline uint64_t now_ns() noexcept
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

} // namespace ptwalk
