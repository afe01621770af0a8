// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/toucher.hpp"

#include <algorithm>
#include <ctime>
#include <sys/prctl.h>
#include <unistd.h>

#include "ptwalk/clock.hpp"
#include "ptwalk/working_set.hpp"

namespace ptwalk {

void touch_loop(const Scenario *sc, Shared *sh, uint8_t *base, size_t len)
{
	prctl(PR_SET_NAME, "ptwalk-touch");
	const TouchSequence seq(len / 4096, *sc->working_set);
	const uint64_t k = seq.per_round(), interval = sc->interval_ns;
	while (!sh->victims_go.load() && !sh->stop.load())
		usleep(1000);
	const uint64_t t0 = now_ns();
	sh->touch.start_ns.store(t0);
	for (uint64_t pos = 0; !sh->stop.load(std::memory_order_relaxed); pos++) {
		// touch pos is due at its share of its round: at most a
		// millisecond early
		const uint64_t due = t0 + (pos / k) * interval +
				     uint64_t((unsigned __int128)(pos % k) * interval / k);
		for (uint64_t now = now_ns(); due > now + 1000000 && !sh->stop.load();
		     now = now_ns()) {
			const uint64_t t = std::min(due, now + 50000000); // wake to check stop
			timespec ts{time_t(t / 1000000000ull), long(t % 1000000000ull)};
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
		}
		// a write: the accessed and the dirty bit alike (a written-set
		// method sees it as well as an accessed-set one)
		*reinterpret_cast<volatile uint64_t *>(base + seq.page(pos) * 4096) = pos;
		sh->touch.position.store(pos + 1, std::memory_order_release);
		if ((pos + 1) % kTouchStride == 0) {
			const uint32_t i = uint32_t((pos + 1) / kTouchStride);
			if (i < kTouchTimeline) {
				sh->touch.timeline_ns[i] = now_ns();
				sh->touch.ntimeline.store(i + 1, std::memory_order_release);
			}
		}
	}
	sh->touch.stop_ns.store(now_ns());
}

} // namespace ptwalk
