// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/capabilities.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <linux/capability.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

#include "ptwalk/procfs.hpp"

namespace ptwalk {

namespace {

// What each thread applies to itself, set before any handler runs.
struct Plan {
	int drop[64]; // bounding set: every capability not kept
	int ndrop = 0;
	__user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
};
Plan g_plan;

// Async-signal-safe: system calls only. Bounding set first (dropping from
// it needs CAP_SETPCAP, still effective), then the three sets at once
// (the kernel empties the ambient set with the inheritable one).
void apply_plan()
{
	for (int i = 0; i < g_plan.ndrop; i++)
		prctl(PR_CAPBSET_DROP, g_plan.drop[i], 0, 0, 0);
	__user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
	syscall(SYS_capset, &h, g_plan.data);
}

void on_signal(int)
{
	const int e = errno;
	apply_plan();
	errno = e;
}

uint64_t status_mask(const std::string &status, const char *field)
{
	const size_t at = status.find(std::string("\n") + field + ":");
	if (at == std::string::npos)
		return ~0ull;
	return strtoull(status.c_str() + at + strlen(field) + 2, nullptr, 16);
}

// /proc/self/task/TID/status shows the plan applied
bool done(pid_t tid, uint64_t want, uint64_t bounding)
{
	auto st = read_file("/proc/self/task/" + std::to_string(tid) + "/status", nullptr);
	if (!st)
		return true; // exited
	const std::string s = "\n" + *st;
	return status_mask(s, "CapEff") == want && status_mask(s, "CapPrm") == want &&
	       status_mask(s, "CapBnd") == bounding && status_mask(s, "CapInh") == 0 &&
	       status_mask(s, "CapAmb") == 0;
}

std::vector<pid_t> threads()
{
	std::vector<pid_t> t;
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return t;
	while (dirent *e = readdir(d))
		if (e->d_name[0] != '.')
			t.push_back(pid_t(atoi(e->d_name)));
	closedir(d);
	return t;
}

} // namespace

uint64_t capability_mask(std::initializer_list<int> caps)
{
	uint64_t m = 0;
	for (int c : caps)
		m |= 1ull << c;
	return m;
}

std::string keep_only_capabilities(std::initializer_list<int> keep, bool *bounding_kept)
{
	// the running kernel's capabilities, not the headers'
	const int ncaps = std::min(int(cap_max_bits()), 64);
	// what this thread holds now: a capability asked for but not held
	// is not kept (capset(2) cannot raise the permitted set)
	uint64_t permitted = 0, bounding = 0;
	cap_flag_value_t setpcap = CAP_CLEAR;
	if (cap_t cur = cap_get_proc()) {
		for (int c = 0; c < ncaps; c++) {
			cap_flag_value_t v = CAP_CLEAR;
			if (cap_get_flag(cur, cap_value_t(c), CAP_PERMITTED, &v) == 0 &&
			    v == CAP_SET)
				permitted |= 1ull << c;
		}
		cap_get_flag(cur, CAP_SETPCAP, CAP_EFFECTIVE, &setpcap);
		cap_free(cur);
	} else {
		return std::string("cap_get_proc: ") + strerror(errno);
	}
	for (int c = 0; c < ncaps; c++)
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1)
			bounding |= 1ull << c;
	const uint64_t want = capability_mask(keep) & permitted;

	g_plan = Plan{};
	for (int c = 0; c < ncaps; c++) {
		if (!(bounding & (1ull << c)) || (want & (1ull << c)))
			continue;
		g_plan.drop[g_plan.ndrop++] = c;
	}
	for (int c = 0; c < ncaps; c++) {
		if (!(want & (1ull << c)))
			continue;
		g_plan.data[c / 32].effective |= 1u << (c % 32);
		g_plan.data[c / 32].permitted |= 1u << (c % 32);
	}
	// dropping from the bounding set takes CAP_SETPCAP: without it the
	// bounding set stays as it is (the caller says so)
	*bounding_kept = g_plan.ndrop > 0 && setpcap != CAP_SET;
	if (*bounding_kept)
		g_plan.ndrop = 0;
	else
		bounding &= want;

	// this thread: the bounding set, then the rest through libcap
	for (int i = 0; i < g_plan.ndrop; i++)
		if (prctl(PR_CAPBSET_DROP, g_plan.drop[i], 0, 0, 0) != 0)
			return std::string("prctl(PR_CAPBSET_DROP, ") +
			       std::to_string(g_plan.drop[i]) + "): " + strerror(errno);
	cap_t c = cap_init();
	if (!c)
		return std::string("cap_init: ") + strerror(errno);
	for (int k = 0; k < ncaps; k++) {
		if (!(want & (1ull << k)))
			continue;
		cap_value_t v = k;
		cap_set_flag(c, CAP_EFFECTIVE, 1, &v, CAP_SET);
		cap_set_flag(c, CAP_PERMITTED, 1, &v, CAP_SET);
	}
	const int rc = cap_set_proc(c);
	const int e = errno;
	cap_free(c);
	if (rc != 0)
		return std::string("cap_set_proc: ") + strerror(e);
	if (!done(pid_t(syscall(SYS_gettid)), want, bounding))
		return "capabilities: this thread's sets are not the ones asked for";

	// every other thread, by itself; a thread one of them starts meanwhile
	// inherits its creator's sets, before or after: checked again until none
	// is left (or 2 s)
	const int sig = SIGRTMIN + 5;
	struct sigaction sa {};
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, nullptr) != 0)
		return std::string("sigaction: ") + strerror(errno);
	const pid_t self = pid_t(syscall(SYS_gettid));
	for (int round = 0; round < 200; round++) {
		pid_t left = 0;
		for (pid_t t : threads()) {
			if (t == self || done(t, want, bounding))
				continue;
			left = t;
			if (round % 10 == 0 && syscall(SYS_tgkill, getpid(), t, sig) != 0 &&
			    errno != ESRCH)
				return "tgkill(" + std::to_string(t) + "): " + strerror(errno);
		}
		if (!left)
			return "";
		timespec ts{0, 10'000'000};
		nanosleep(&ts, nullptr);
	}
	return "capabilities: a thread did not drop its capabilities within 2 s";
}

} // namespace ptwalk
