// SPDX-License-Identifier: GPL-2.0
// ptwalk monitor's names of tasks (comm), from the perf rings' COMM and
// FORK records and /proc. The rings are one per CPU and read one after
// the other, so a task's records reach us out of time order when it ran
// on two CPUs in between: an exec on one CPU and a rename (prctl,
// /proc/self/comm) just after on another come in the same round, the
// rename first when its CPU's ring is read first. Each name therefore
// keeps the time it was set, and an older record never overwrites a
// newer name.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <unordered_map>

namespace ptwalk {

class TaskNames {
public:
	// read(pid): its comm now (empty when gone); now(): the clock the
	// records' times are on (CLOCK_MONOTONIC)
	TaskNames(std::function<std::string(pid_t)> read, std::function<uint64_t()> now)
		: read_(std::move(read)), now_(std::move(now))
	{
	}
	// a task seen in a lock event: read its name if we have none
	void note(pid_t tid, pid_t tgid)
	{
		lookup(tid);
		lookup(tgid);
	}
	// a COMM record (exec or rename) of time t
	void set(pid_t tid, std::string_view comm, uint64_t t);
	// a FORK record of time t: the child has its parent's name
	void fork(pid_t ptid, pid_t tid, uint64_t t);
	// "?" when unknown
	std::string comm(pid_t pid) const;
	// when comm(pid) was last set (0: never, or by nothing dated)
	uint64_t since(pid_t pid) const;

private:
	struct Name {
		std::string comm;
		uint64_t t = 0;
	};
	void bound();
	void lookup(pid_t pid);
	std::function<std::string(pid_t)> read_;
	std::function<uint64_t()> now_;
	std::unordered_map<pid_t, Name> names_;
};

} // namespace ptwalk
