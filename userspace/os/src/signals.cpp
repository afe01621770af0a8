// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/signals.hpp"

#include <cstring>

namespace ptwalk {

namespace {

volatile sig_atomic_t g_stop_signal = 0;

void on_stop_signal(int sig)
{
	g_stop_signal = sig;
}

} // namespace

volatile sig_atomic_t &StopSignals::flag()
{
	return g_stop_signal;
}

StopSignals::StopSignals()
{
	g_stop_signal = 0;
	struct sigaction sa;
	std::memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++)
		ok_[i] = sigaction(kSignals[i], &sa, &old_[i]) == 0;
}

StopSignals::~StopSignals()
{
	for (int i = 0; i < 3; i++)
		if (ok_[i])
			sigaction(kSignals[i], &old_[i], nullptr);
}

} // namespace ptwalk
