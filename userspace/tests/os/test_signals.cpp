// SPDX-License-Identifier: GPL-2.0
#include <gtest/gtest.h>

#include <csignal>

#include "ptwalk/signals.hpp"

namespace {

volatile sig_atomic_t g_before = 0;
void before(int sig)
{
	g_before = sig;
}

sighandler_t handler_of(int sig)
{
	struct sigaction cur {};
	sigaction(sig, nullptr, &cur);
	return cur.sa_handler;
}

TEST(StopSignals, CatchesEachStopSignalAndRestoresTheHandlersBefore)
{
	for (int sig : {SIGINT, SIGTERM, SIGHUP})
		signal(sig, before);
	{
		ptwalk::StopSignals s;
		EXPECT_EQ(ptwalk::StopSignals::caught(), 0);
		for (int sig : {SIGINT, SIGHUP, SIGTERM}) {
			raise(sig); // caught, not fatal, and not the old handler
			EXPECT_EQ(ptwalk::StopSignals::caught(), sig);
		}
		EXPECT_EQ(g_before, 0);
		EXPECT_EQ(&ptwalk::StopSignals::flag(), &ptwalk::StopSignals::flag());
	}
	for (int sig : {SIGINT, SIGTERM, SIGHUP})
		EXPECT_EQ(handler_of(sig), before) << sig;
	raise(SIGHUP);
	EXPECT_EQ(g_before, SIGHUP);
	{
		ptwalk::StopSignals again; // a new command starts with none caught
		EXPECT_EQ(ptwalk::StopSignals::caught(), 0);
	}
	for (int sig : {SIGINT, SIGTERM, SIGHUP})
		signal(sig, SIG_DFL);
}

} // namespace
