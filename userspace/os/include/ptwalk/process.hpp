// SPDX-License-Identifier: GPL-2.0
// The children ptwalk forks: the workload and scanner (fork_child, reap)
// and the programs it runs and owns, as perf (Child, spawn).
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <sys/types.h>
#include <unistd.h>
#include <utility>
#include <vector>

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

// "exit status N", "killed by SIGNAME" or "status N" of a wait status.
std::string describe_status(int status);
// "tid state wchan" of each thread of pid, for a child that hangs.
std::string task_states(pid_t pid);
// A process that has exited (zombie included) or is gone.
bool process_gone(pid_t pid);

// A child process we own: waited for by pid only (never wait(-1), which
// would reap the caller's children); SIGKILLed and reaped if still alive
// when the owner goes away.
class Child {
public:
	Child() = default;
	explicit Child(pid_t pid) : pid_(pid) {}
	Child(const Child &) = delete;
	Child &operator=(const Child &) = delete;
	Child(Child &&o) noexcept
		: pid_(std::exchange(o.pid_, -1)), status_(o.status_), reaped_(o.reaped_) {}
	Child &operator=(Child &&o) noexcept;
	~Child() { kill_and_reap(); }

	pid_t pid() const { return pid_; }
	bool running() const { return pid_ > 0 && !reaped_; }
	bool reaped() const { return reaped_; }
	int status() const { return status_; }

	// Non-blocking reap; true once the child is gone.
	bool poll_exit();
	// Waits up to timeout_ms for the child to exit.
	bool wait_for(int timeout_ms);
	// sig, wait up to timeout_ms, then SIGKILL. Returns what happened.
	std::string stop(int sig, int timeout_ms);
	void kill_and_reap();

private:
	// The child leads its own process group (spawn): whatever it started
	// goes with it.
	void kill_group(int sig);
	pid_t pid_ = -1;
	int status_ = 0;
	bool reaped_ = false;
};

// Forks and execs argv[0] (a path) with stdout/stderr into files
// (truncated), keep_fds inherited at their numbers, every other fd closed on
// exec, signals unblocked and SIGINT/SIGTERM at default (the caller may
// block them for a signalfd), its own process group (a terminal ^C reaches
// ptwalk, which stops the child itself) and SIGINT when the forking thread
// dies, so perf writes its data even if ptwalk is killed. nullopt with *err
// when it could not start (exec failures included).
std::optional<Child> spawn(const std::vector<std::string> &argv, const std::string &out_path,
			   const std::string &err_path, const std::vector<int> &keep_fds,
			   std::string *err);

// argv joined by spaces, for messages.
std::string command_line(const std::vector<std::string> &argv);

} // namespace ptwalk
