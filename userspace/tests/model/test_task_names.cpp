// SPDX-License-Identifier: GPL-2.0
#include <gtest/gtest.h>

#include <map>

#include "ptwalk/task_names.hpp"

using namespace ptwalk;

namespace {

// /proc as the test sets it, and a clock it moves
struct FakeHost {
	std::map<pid_t, std::string> proc;
	uint64_t now = 1000;
	TaskNames names()
	{
		return TaskNames(
			[this](pid_t p) {
			auto it = proc.find(p);
			return it == proc.end() ? std::string() : it->second;
			},
			[this] { return now; });
	}
};

} // namespace

// A walker execs on CPU 1 (COMM "python3" at t=100) and renames itself on
// CPU 0 (COMM "pwh-walk" at t=140); both records come in one round, CPU
// 0's ring read first: the rename must stay its name.
TEST(TaskNames, RenameReadBeforeItsExecStays)
{
	FakeHost h;
	TaskNames n = h.names();
	n.fork(10, 42, 50);
	n.set(42, "pwh-walk", 140);
	n.set(42, "python3", 100);
	EXPECT_EQ(n.comm(42), "pwh-walk");
	EXPECT_EQ(n.since(42), 140u);
}

TEST(TaskNames, RecordsInTimeOrderTakeTheLatest)
{
	FakeHost h;
	TaskNames n = h.names();
	n.set(42, "python3", 100);
	n.set(42, "pwh-walk", 140);
	EXPECT_EQ(n.comm(42), "pwh-walk");
	n.set(42, "again", 200); // a later exec
	EXPECT_EQ(n.comm(42), "again");
}

// The child's FORK record read after its exec's COMM (the parent's CPU's
// ring read last) leaves the child's own name; a FORK record of a reused
// pid replaces the name of the pid's previous task.
TEST(TaskNames, ForkNeverHidesTheChildsLaterName)
{
	FakeHost h;
	h.proc[10] = "pytest";
	TaskNames n = h.names();
	n.set(42, "python3", 100);
	n.fork(10, 42, 50);
	EXPECT_EQ(n.comm(42), "python3");
	n.fork(10, 42, 300); // pid 42 again, a new task
	EXPECT_EQ(n.comm(42), "pytest");
}

// /proc read now is newer than any record still in a ring; a task already
// gone says nothing, and a record still names it.
TEST(TaskNames, ProcIsNowAndAGoneTaskTellsNothing)
{
	FakeHost h;
	h.proc[7] = "now-name";
	TaskNames n = h.names();
	n.note(7, 7);
	n.set(7, "old-name", 900);
	EXPECT_EQ(n.comm(7), "now-name");
	n.note(8, 8); // gone
	EXPECT_EQ(n.comm(8), "?");
	n.set(8, "short-lived", 900);
	EXPECT_EQ(n.comm(8), "short-lived");
}
