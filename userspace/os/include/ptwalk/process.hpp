// SPDX-License-Identifier: GPL-2.0
// The children ptwalk forks and owns, one abstraction for both kinds: a
// function run in a forked child (the workload, the scanner) and a program
// exec'd (perf). Started by Child::run or Child::exec; waited for, stopped
// and reaped alike.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <sys/types.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace ptwalk {

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
	// How long stop() waits once it has SIGKILLed the child.
	static constexpr int kKillWaitMs = 60000;
	static constexpr int kUntilReaped = -1; // as long as it takes

	// Forks a child that runs f() and exits with its result. The child
	// dies with ptwalk (SIGKILL), leaves SIGINT and SIGHUP to it, has
	// SIGTERM at default and stays in ptwalk's process group. Not
	// started() when fork failed (errno set).
	template <typename F>
	static Child run(F f)
	{
		fflush(nullptr);
		const pid_t parent = getpid();
		pid_t p = ::fork();
		if (p == 0) {
			enter_function_child(parent);
			_exit(f());
		}
		return Child(p, false);
	}

	// Forks and execs argv[0] (a path) with stdout/stderr into files
	// (truncated), keep_fds inherited at their numbers, every other fd
	// closed on exec, signals unblocked and SIGINT/SIGTERM at default (the
	// caller may block them for a signalfd), its own process group (a
	// terminal ^C reaches ptwalk, which stops the child itself; stop()
	// and kill_and_reap() SIGKILL the whole group) and SIGINT when the
	// forking thread dies, so perf writes its data even if ptwalk is
	// killed. nullopt with *err when it could not start (exec failures
	// included).
	static std::optional<Child> exec(const std::vector<std::string> &argv,
					 const std::string &out_path, const std::string &err_path,
					 const std::vector<int> &keep_fds, std::string *err);

	Child() = default;
	Child(const Child &) = delete;
	Child &operator=(const Child &) = delete;
	Child(Child &&o) noexcept
		: pid_(std::exchange(o.pid_, -1)), status_(o.status_), reaped_(o.reaped_),
		  own_group_(o.own_group_)
	{
	}
	Child &operator=(Child &&o) noexcept;
	~Child() { kill_and_reap(); }

	bool started() const { return pid_ > 0; }
	pid_t pid() const { return pid_; }
	bool running() const { return pid_ > 0 && !reaped_; }
	bool reaped() const { return reaped_; }
	// The wait status once reaped() (-1 if something else reaped it).
	int status() const { return status_; }

	// Non-blocking reap; true once the child is gone (or never started).
	bool poll_exit();
	// Waits up to timeout_ms for the child to exit.
	bool wait_for(int timeout_ms);
	// Sends sig (none when 0), waits up to timeout_ms for the child to
	// exit, then SIGKILLs it (its process group when it leads one) and
	// waits up to kill_wait_ms more (kUntilReaped: until it is reaped).
	// What happened, in words; status() holds how it ended.
	std::string stop(int sig, int timeout_ms, int kill_wait_ms = kKillWaitMs);
	// SIGKILL (its process group when it leads one), then reap, blocking.
	void kill_and_reap();

private:
	Child(pid_t pid, bool own_group) : pid_(pid), own_group_(own_group) {}
	// In a function child, before f(); exits if parent is gone already.
	static void enter_function_child(pid_t parent);
	void kill_group(int sig);
	pid_t pid_ = -1;
	int status_ = 0;
	bool reaped_ = false;
	bool own_group_ = false; // exec'd children lead their own group
};

// argv joined by spaces, for messages.
std::string command_line(const std::vector<std::string> &argv);

} // namespace ptwalk
