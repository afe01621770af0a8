// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/process.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "ptwalk/clock.hpp"
#include "ptwalk/fd.hpp"
#include "ptwalk/procfs.hpp"

namespace ptwalk {

void Child::enter_function_child(pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent) // died before the line above
		_exit(127);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGTERM, SIG_DFL);
}

namespace {

const char *sig_name(int sig)
{
	return sig == SIGINT ? "SIGINT" : "signal";
}

std::string errno_text(int e)
{
	return std::strerror(e);
}

} // namespace

std::string describe_status(int status)
{
	if (WIFEXITED(status))
		return "exit status " + std::to_string(WEXITSTATUS(status));
	if (WIFSIGNALED(status))
		return std::string("killed by ") + strsignal(WTERMSIG(status));
	return "status " + std::to_string(status);
}

std::string task_states(pid_t pid)
{
	std::string out, err;
	std::string dir = "/proc/" + std::to_string(pid) + "/task";
	DIR *d = opendir(dir.c_str());
	if (!d)
		return dir + ": " + errno_text(errno);
	while (dirent *e = readdir(d)) {
		if (e->d_name[0] == '.')
			continue;
		std::string t = dir + "/" + e->d_name;
		auto stat = read_file(t + "/stat", &err);
		auto wchan = read_file(t + "/wchan", &err);
		char state = '?';
		if (stat) {
			size_t rp = stat->rfind(')');
			if (rp != std::string::npos && rp + 2 < stat->size())
				state = (*stat)[rp + 2];
		}
		if (!out.empty())
			out += ", ";
		out += std::string(e->d_name) + " " + state + " " +
		       (wchan && !wchan->empty() ? *wchan : std::string("-"));
	}
	closedir(d);
	return out;
}

bool process_gone(pid_t pid)
{
	std::string err;
	auto stat = read_file("/proc/" + std::to_string(pid) + "/stat", &err);
	if (!stat)
		return true;
	size_t rp = stat->rfind(')');
	return rp != std::string::npos && rp + 2 < stat->size() &&
	       ((*stat)[rp + 2] == 'Z' || (*stat)[rp + 2] == 'X');
}

Child &Child::operator=(Child &&o) noexcept
{
	if (this != &o) {
		kill_and_reap();
		pid_ = std::exchange(o.pid_, -1);
		status_ = o.status_;
		reaped_ = o.reaped_;
		own_group_ = o.own_group_;
	}
	return *this;
}

bool Child::poll_exit()
{
	if (pid_ <= 0 || reaped_)
		return true;
	int st = 0;
	pid_t r;
	do
		r = waitpid(pid_, &st, WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == pid_) {
		status_ = st;
		reaped_ = true;
	} else if (r < 0) { // ECHILD: SIGCHLD ignored, auto-reaped
		status_ = -1;
		reaped_ = true;
	}
	return reaped_;
}

bool Child::wait_for(int timeout_ms)
{
	uint64_t deadline = now_ns() + uint64_t(timeout_ms) * 1000000ull;
	while (!poll_exit()) {
		if (now_ns() >= deadline)
			return false;
		usleep(5000);
	}
	return true;
}

std::string Child::stop(int sig, int timeout_ms, int kill_wait_ms)
{
	if (pid_ <= 0)
		return "not started";
	if (poll_exit())
		return "had exited: " + describe_status(status_);
	if (sig)
		kill(pid_, sig);
	if (wait_for(timeout_ms))
		return std::string("stopped by ") + sig_name(sig) + ": " + describe_status(status_);
	std::string where = task_states(pid_);
	if (kill_wait_ms < 0) {
		kill_and_reap();
	} else {
		kill_group(SIGKILL);
		wait_for(kill_wait_ms);
	}
	return std::string("did not stop within ") + std::to_string(timeout_ms) + " ms of " +
	       sig_name(sig) + " (threads: " + where + "); SIGKILLed";
}

void Child::kill_and_reap()
{
	if (pid_ > 0 && !poll_exit()) {
		kill_group(SIGKILL);
		int st = 0;
		pid_t r;
		do
			r = waitpid(pid_, &st, 0);
		while (r < 0 && errno == EINTR);
		status_ = r == pid_ ? st : -1; // -1: reaped elsewhere (ECHILD)
		reaped_ = true;
	}
}

void Child::kill_group(int sig)
{
	if (!own_group_ || kill(-pid_, sig) != 0)
		kill(pid_, sig);
}

std::optional<Child> Child::exec(const std::vector<std::string> &argv, const std::string &out_path,
				 const std::string &err_path, const std::vector<int> &keep_fds,
				 std::string *err)
{
	std::vector<char *> cargv;
	for (const auto &a : argv)
		cargv.push_back(const_cast<char *>(a.c_str()));
	cargv.push_back(nullptr);

	Fd out(open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
	if (!out) {
		*err = "open " + out_path + ": " + errno_text(errno);
		return std::nullopt;
	}
	Fd errf;
	if (err_path != out_path) {
		errf.reset(open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
		if (!errf) {
			*err = "open " + err_path + ": " + errno_text(errno);
			return std::nullopt;
		}
	}
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	Fd in(devnull);
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0) {
		*err = std::string("pipe2: ") + errno_text(errno);
		return std::nullopt;
	}
	Fd exec_r(p[0]), exec_w(p[1]);
	const pid_t parent = getpid();

	pid_t pid = fork();
	if (pid < 0) {
		*err = "fork (" + argv[0] + "): " + errno_text(errno);
		return std::nullopt;
	}
	if (pid == 0) {
		// Child: async-signal-safe calls only.
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, nullptr);
		struct sigaction dfl {};
		dfl.sa_handler = SIG_DFL;
		for (int sig : {SIGINT, SIGTERM, SIGPIPE, SIGCHLD})
			sigaction(sig, &dfl, nullptr);
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGINT);
		if (getppid() != parent)
			_exit(127);
		int efd = errf ? errf.get() : out.get();
		if ((in && dup2(in.get(), 0) < 0) || dup2(out.get(), 1) < 0 || dup2(efd, 2) < 0)
			goto fail;
		for (int fd : keep_fds) {
			int fl = fcntl(fd, F_GETFD);
			if (fl < 0 || fcntl(fd, F_SETFD, fl & ~FD_CLOEXEC) < 0)
				goto fail;
		}
		execv(cargv[0], cargv.data());
fail:
		int e = errno;
		ssize_t w = write(exec_w.get(), &e, sizeof(e));
		(void)w;
		_exit(127);
	}
	setpgid(pid, pid); // also here: no window where kill(-pid) misses it
	exec_w.reset();
	Child child(pid, true);
	int e = 0;
	ssize_t n;
	do
		n = read(exec_r.get(), &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	if (n == sizeof(e)) {
		child.wait_for(5000);
		*err = "exec " + argv[0] + ": " + errno_text(e);
		return std::nullopt;
	}
	return child;
}

std::string command_line(const std::vector<std::string> &argv)
{
	std::string s;
	for (const auto &a : argv) {
		if (!s.empty())
			s += ' ';
		s += a;
	}
	return s;
}

} // namespace ptwalk
