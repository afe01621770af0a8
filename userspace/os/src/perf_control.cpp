// SPDX-License-Identifier: GPL-2.0
// How ptwalk drives perf: finding it, running it to completion, its
// --control protocol, and the tracefs facts it needs. See perf_control.hpp.
#include "ptwalk/perf_control.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptwalk/clock.hpp"
#include "ptwalk/procfs.hpp"
#include "ptwalk/text.hpp"

namespace ptwalk::perf_detail {

using text::split_lines;
using text::trim;

std::string errno_str(int e)
{
	return std::strerror(e);
}

std::string join(const std::vector<std::string> &v, const char *sep)
{
	std::string out;
	for (const auto &s : v) {
		if (!out.empty())
			out += sep;
		out += s;
	}
	return out;
}

std::string log_tail(const std::string &path, size_t n)
{
	std::string err;
	auto text = read_file(path, &err);
	if (!text)
		return "";
	auto lines = split_lines(*text);
	std::vector<std::string> keep;
	for (auto l : lines) {
		l = trim(l);
		if (!l.empty())
			keep.emplace_back(l);
	}
	if (keep.size() > n)
		keep.erase(keep.begin(), keep.end() - long(n));
	return join(keep, " | ");
}

static bool is_executable(const std::string &p)
{
	struct stat st {};
	return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
}

std::optional<std::string> resolve_program(const std::string &prog, std::string *err)
{
	if (prog.empty()) {
		*err = "perf: empty program name";
		return std::nullopt;
	}
	if (prog.find('/') != std::string::npos) {
		if (is_executable(prog))
			return prog;
		int e = errno;
		*err = prog + ": not an executable file (" + errno_str(e ? e : ENOENT) + ")";
		return std::nullopt;
	}
	const char *path = std::getenv("PATH");
	std::string_view dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
	while (true) {
		size_t c = dirs.find(':');
		std::string dir(dirs.substr(0, c));
		std::string cand = (dir.empty() ? std::string(".") : dir) + "/" + prog;
		if (is_executable(cand))
			return cand;
		if (c == std::string_view::npos)
			break;
		dirs.remove_prefix(c + 1);
	}
	*err = prog + ": not found in PATH (" + std::string(path ? path : "") +
	       "); install linux-perf";
	return std::nullopt;
}

bool exited_ok(const Child &c)
{
	int st = c.status();
	return c.reaped() && ((WIFEXITED(st) && WEXITSTATUS(st) == 0) ||
			      // perf re-raises SIGINT after writing its output
			      (WIFSIGNALED(st) && WTERMSIG(st) == SIGINT));
}

bool run_to_completion(const std::vector<std::string> &argv, const std::string &out_path,
		       const std::string &err_path, int timeout_ms, std::string *err)
{
	auto c = Child::exec(argv, out_path, err_path, {}, err);
	if (!c)
		return false;
	if (!c->wait_for(timeout_ms)) {
		*err = argv[0] + " " + argv[1] + ": " + c->stop(SIGINT, 2000) + " (timeout " +
		       std::to_string(timeout_ms) + " ms)";
		return false;
	}
	if (!exited_ok(*c)) {
		*err = argv[0] + " " + argv[1] + ": " + describe_status(c->status());
		std::string tail = log_tail(err_path);
		if (!tail.empty())
			*err += ": " + tail;
		return false;
	}
	return true;
}

std::optional<std::vector<std::string>> list_events(const std::string &root,
						    const std::string &system, std::string *err)
{
	std::string dir = root + "/events/" + system;
	DIR *d = opendir(dir.c_str());
	if (!d) {
		*err = dir + ": " + errno_str(errno);
		return std::nullopt;
	}
	std::vector<std::string> out;
	while (dirent *e = readdir(d)) {
		std::string name = e->d_name;
		if (name == "." || name == "..")
			continue;
		struct stat st {};
		if (stat((dir + "/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode))
			out.push_back(system + ":" + name);
	}
	closedir(d);
	std::sort(out.begin(), out.end());
	return out;
}

std::optional<long> read_long_file(const std::string &path)
{
	std::string err;
	auto t = read_file(path, &err);
	if (!t)
		return std::nullopt;
	std::string s(trim(*t));
	char *end = nullptr;
	long v = std::strtol(s.c_str(), &end, 10);
	if (s.empty() || *end)
		return std::nullopt;
	return v;
}

bool enable_and_wait(Control &c, Child &child, const std::string &log, int timeout_ms,
		     std::string *err)
{
	c.ctl_r.reset(); // the child has its copies now
	c.ack_w.reset();
	static const char kEnable[] = "enable\n";
	ssize_t w = write(c.ctl_w.get(), kEnable, sizeof(kEnable) - 1);
	if (w != ssize_t(sizeof(kEnable) - 1)) {
		*err = std::string("write perf control fd: ") + errno_str(errno);
		if (!child.poll_exit())
			*err += " (perf running)";
		else
			*err += " (perf " + describe_status(child.status()) + ": " + log_tail(log) +
				")";
		return false;
	}
	uint64_t deadline = now_ns() + uint64_t(timeout_ms) * 1000000ull;
	std::string got;
	while (now_ns() < deadline) {
		pollfd p{c.ack_r.get(), POLLIN, 0};
		int r = poll(&p, 1, 20);
		if (r > 0) {
			char buf[64];
			ssize_t n = read(c.ack_r.get(), buf, sizeof(buf));
			if (n > 0) {
				got.append(buf, size_t(n));
				if (got.find("ack") != std::string::npos)
					return true;
			} else if (n == 0) { // perf closed its end: it exited
				child.wait_for(2000);
				*err = "perf exited before enabling events (" +
				       describe_status(child.status()) + "): " + log_tail(log);
				return false;
			}
		} else if (r < 0 && errno != EINTR) {
			*err = std::string("poll perf ack fd: ") + errno_str(errno);
			return false;
		}
		if (child.poll_exit()) {
			*err = "perf exited before enabling events (" +
			       describe_status(child.status()) + "): " + log_tail(log);
			return false;
		}
	}
	*err = "perf did not acknowledge 'enable' within " + std::to_string(timeout_ms) +
	       " ms: " + log_tail(log);
	return false;
}

} // namespace ptwalk::perf_detail
