// SPDX-License-Identifier: GPL-2.0
// What the unit tests share: synthetic mmap_lock event streams (one event,
// one hold, fed in time order) and the table print_table() writes. Test
// code only; tests/<layer>/test_*.cpp include it as "test_util.hpp".
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "ptwalk/mmap_lock_trace.hpp"
#include "ptwalk/result.hpp"

namespace ptwalk::tests {

// One mmap_lock event of task tid (of process tgid) on mm at t.
inline LockEvent lock_event(uint64_t t, pid_t tgid, pid_t tid, uint64_t mm, LockEventType type,
			    bool write, bool success = true)
{
	LockEvent e;
	e.time_ns = t;
	e.tgid = tgid;
	e.tid = tid;
	e.mm = mm;
	e.type = type;
	e.write = write;
	e.success = success;
	return e;
}

// One hold: start_locking at t0, acquired at t1, released at t2.
inline void lock_hold(std::vector<LockEvent> &v, pid_t tgid, pid_t tid, uint64_t mm, bool write,
		      uint64_t t0, uint64_t t1, uint64_t t2)
{
	v.push_back(lock_event(t0, tgid, tid, mm, LockEventType::StartLocking, write));
	v.push_back(lock_event(t1, tgid, tid, mm, LockEventType::AcquireReturned, write));
	v.push_back(lock_event(t2, tgid, tid, mm, LockEventType::Released, write));
}

// v to sink in time order, as the tracepoints deliver it (stable: events
// of one time keep the order they were listed in).
template <class Sink>
void feed_in_time_order(std::vector<LockEvent> v, Sink &&sink)
{
	std::stable_sort(v.begin(), v.end(), [](const LockEvent &a, const LockEvent &b) {
		return a.time_ns < b.time_ns;
	});
	for (const auto &e : v)
		sink(e);
}

// The table print_table() writes for r.
inline std::string table_text(const RunResult &r)
{
	char *buf = nullptr;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	print_table(r, f);
	fclose(f);
	std::string t(buf, len);
	free(buf);
	return t;
}

} // namespace ptwalk::tests
