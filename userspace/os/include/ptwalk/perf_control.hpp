// SPDX-License-Identifier: GPL-2.0
// How ptwalk drives perf, for perf_session.cpp: finding the program, running
// it to completion, its --control protocol ("enable", then "ack"), and the
// tracefs facts it needs.
#pragma once

#include <fcntl.h>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

#include "ptwalk/fd.hpp"
#include "ptwalk/process.hpp"

namespace ptwalk::perf_detail {

std::string errno_str(int e);
std::string join(const std::vector<std::string> &v, const char *sep);
// The last n lines of a log, for error messages.
std::string log_tail(const std::string &path, size_t n = 4);
// A path or a name looked up in PATH; nullopt with *err when not found.
std::optional<std::string> resolve_program(const std::string &prog, std::string *err);
// Exited 0, or by the SIGINT perf re-raises after writing its output.
bool exited_ok(const Child &c);
// Runs argv to completion (timeout: SIGINT, then SIGKILL).
bool run_to_completion(const std::vector<std::string> &argv, const std::string &out_path,
		       const std::string &err_path, int timeout_ms, std::string *err);
// Event names of one tracepoint system: the subdirectories of
// <root>/events/<system>.
std::optional<std::vector<std::string>> list_events(const std::string &root,
						    const std::string &system, std::string *err);
// A file holding one integer.
std::optional<long> read_long_file(const std::string &path);

// perf's --control pipes: ptwalk writes commands, perf acknowledges.
struct Control {
	Fd ctl_r, ctl_w, ack_r, ack_w;
	bool open(std::string *err)
	{
		int a[2], b[2];
		if (pipe2(a, O_CLOEXEC) != 0 || pipe2(b, O_CLOEXEC) != 0) {
			*err = std::string("pipe2 (perf --control): ") + errno_str(errno);
			return false;
		}
		ctl_r.reset(above_stdio(a[0]));
		ctl_w.reset(a[1]);
		ack_r.reset(b[0]);
		ack_w.reset(above_stdio(b[1]));
		if (!ctl_r || !ack_w) {
			*err = std::string("fcntl F_DUPFD_CLOEXEC (perf --control): ") +
			       errno_str(errno);
			return false;
		}
		return true;
	}
	// The child's ends keep their numbers across exec: never 0-2, which
	// Child::exec() replaces with /dev/null and the logs.
	static int above_stdio(int fd)
	{
		if (fd >= 3)
			return fd;
		int n = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		close(fd);
		return n;
	}
	std::string arg() const
	{
		return "fd:" + std::to_string(ctl_r.get()) + "," + std::to_string(ack_w.get());
	}
};

// Sends "enable" and waits for perf's "ack"; false with *err when the child
// exits first or the timeout passes.
bool enable_and_wait(Control &c, Child &child, const std::string &log, int timeout_ms,
		     std::string *err);

} // namespace ptwalk::perf_detail
