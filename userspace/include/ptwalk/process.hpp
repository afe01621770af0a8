// SPDX-License-Identifier: GPL-2.0
// The children ptwalk forks (workload, scanner): how they start and end.
#pragma once

#include <cstdio>
#include <sys/types.h>
#include <unistd.h>

namespace ptwalk {

// In a child: die with the parent, leave SIGINT and SIGHUP to it.
void child_setup();

// Forks a child that runs f() after child_setup() and exits with its
// result. Returns the child's pid, or -1 (errno set).
template <typename F> pid_t fork_child(F f)
{
	fflush(nullptr);
	pid_t p = fork();
	if (p == 0) {
		child_setup();
		_exit(f());
	}
	return p;
}

// Sends first_signal (if any), waits up to timeout_ms for pid to exit, then
// SIGKILLs it. Returns its wait status.
int reap(pid_t pid, int timeout_ms, int first_signal);

// Whether pid has exited (reaping it, *status set), without blocking.
bool child_exited(pid_t pid, int *status);

} // namespace ptwalk
