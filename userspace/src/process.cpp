// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/process.hpp"

#include <cerrno>
#include <csignal>
#include <sys/prctl.h>
#include <sys/wait.h>

namespace ptwalk {

void child_setup()
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGTERM, SIG_DFL);
}

int reap(pid_t pid, int timeout_ms, int first_signal)
{
	int status = 0;
	if (pid <= 0)
		return status;
	if (first_signal)
		kill(pid, first_signal);
	for (int waited = 0;; waited += 10) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid || (r < 0 && errno == ECHILD))
			return status;
		if (waited >= timeout_ms) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return status;
		}
		usleep(10000);
	}
}

bool child_exited(pid_t pid, int *status)
{
	return waitpid(pid, status, WNOHANG) == pid;
}

} // namespace ptwalk
