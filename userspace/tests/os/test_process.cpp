// SPDX-License-Identifier: GPL-2.0
// Child: a function run in a forked child and a program exec'd, waited for,
// stopped and reaped alike.
#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptwalk/clock.hpp"
#include "ptwalk/process.hpp"
#include "ptwalk/procfs.hpp"
#include "temp_dir.hpp"

using ptwalk::Child;

namespace {

std::string contents(const std::string &path)
{
	std::string err;
	auto t = ptwalk::read_file(path, &err);
	return t ? *t : "";
}

// Polls until pid is gone (a zombie counts): true within timeout_ms.
bool gone_within(pid_t pid, int timeout_ms)
{
	const uint64_t end = ptwalk::now_ns() + uint64_t(timeout_ms) * 1000000ull;
	while (!ptwalk::process_gone(pid)) {
		if (ptwalk::now_ns() >= end)
			return false;
		usleep(5000);
	}
	return true;
}

// While it lives, orphaned descendants are reparented to this process (not
// to init, which may not reap them in a container): reap() collects one.
struct Subreaper {
	Subreaper() { prctl(PR_SET_CHILD_SUBREAPER, 1); }
	~Subreaper() { prctl(PR_SET_CHILD_SUBREAPER, 0); }
	// an orphan now ours, once it is gone (a zombie); a live one SIGKILLed
	static void reap(pid_t pid, bool gone)
	{
		if (!gone)
			kill(pid, SIGKILL);
		while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
		}
	}
};

// Whether pid ignores sig (SigIgn of /proc/pid/status).
bool ignores(pid_t pid, int sig)
{
	auto st = ptwalk::read_file("/proc/" + std::to_string(pid) + "/status", nullptr);
	size_t at = st ? st->find("SigIgn:\t") : std::string::npos;
	if (at == std::string::npos)
		return false;
	unsigned long long mask = std::strtoull(st->c_str() + at + 8, nullptr, 16);
	return mask & (1ull << (sig - 1));
}

// Polls until the child ignores sig (its dispositions change right after
// fork): true within a second.
bool comes_to_ignore(pid_t pid, int sig)
{
	for (int i = 0; i < 200; i++) {
		if (ignores(pid, sig))
			return true;
		usleep(5000);
	}
	return false;
}

[[noreturn]] void wait_forever()
{
	for (;;)
		pause();
}

// A child that starts a grandchild waiting forever, hands its pid over
// the pipe p once ready(pid) holds (else it exits 2) and exits at once,
// without destructors, so the grandchild outlives its Child. The child;
// the grandchild's pid in grand, -1 when none came.
Child orphan_grandchild(int p[2], pid_t &grand, const std::function<bool(pid_t)> &ready = {})
{
	Child mid = Child::run([&] {
		close(p[0]);
		Child g = Child::run([] {
			wait_forever();
			return 0;
		});
		pid_t pid = g.pid();
		if (ready && !ready(pid))
			return 2;
		if (write(p[1], &pid, sizeof(pid)) != ssize_t(sizeof(pid)))
			return 1;
		_exit(0); // no destructor: the grandchild outlives its Child
	});
	close(p[1]);
	if (read(p[0], &grand, sizeof(grand)) != ssize_t(sizeof(grand)))
		grand = -1;
	close(p[0]);
	return mid;
}

} // namespace

TEST(Child, FunctionChildExitsWithTheFunctionsResult)
{
	Child c = Child::run([] { return 7; });
	ASSERT_TRUE(c.started()) << std::strerror(errno);
	ASSERT_TRUE(c.wait_for(10000));
	EXPECT_TRUE(c.reaped());
	EXPECT_FALSE(c.running());
	ASSERT_TRUE(WIFEXITED(c.status()));
	EXPECT_EQ(WEXITSTATUS(c.status()), 7);
	EXPECT_EQ(ptwalk::describe_status(c.status()), "exit status 7");
	// once reaped, stop() only says so
	EXPECT_EQ(c.stop(SIGTERM, 1000), "had exited: exit status 7");
}

TEST(Child, FunctionChildLeavesSigintToUsAndStaysInOurGroup)
{
	Child c = Child::run([] {
		wait_forever();
		return 0;
	});
	ASSERT_TRUE(c.started());
	EXPECT_EQ(getpgid(c.pid()), getpgrp());
	ASSERT_TRUE(comes_to_ignore(c.pid(), SIGINT));
	EXPECT_TRUE(ignores(c.pid(), SIGHUP));
	EXPECT_FALSE(ignores(c.pid(), SIGTERM));
	kill(c.pid(), SIGINT);
	EXPECT_FALSE(c.wait_for(100));
	EXPECT_TRUE(c.running());
	std::string what = c.stop(SIGTERM, 10000, Child::kUntilReaped);
	EXPECT_EQ(what.rfind("stopped by signal: killed by ", 0), 0u) << what;
	ASSERT_TRUE(WIFSIGNALED(c.status()));
	EXPECT_EQ(WTERMSIG(c.status()), SIGTERM);
}

TEST(Child, FunctionChildDiesWithItsParent)
{
	Subreaper sr;
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	// a child that starts a grandchild, hands over its pid and exits: the
	// grandchild gets SIGKILL (PR_SET_PDEATHSIG); its death signal is set
	// before it ignores SIGINT
	pid_t grand = -1;
	Child mid = orphan_grandchild(p, grand, [](pid_t g) { return comes_to_ignore(g, SIGINT); });
	ASSERT_TRUE(mid.started());
	ASSERT_NE(grand, -1) << "no pid from the child";
	ASSERT_TRUE(mid.wait_for(10000));
	EXPECT_EQ(WEXITSTATUS(mid.status()), 0);
	ASSERT_GT(grand, 0);
	const bool gone = gone_within(grand, 10000);
	EXPECT_TRUE(gone) << "grandchild " << grand << " outlived its parent";
	Subreaper::reap(grand, gone);
}

TEST(Child, FunctionChildOfAParentGoneDuringForkDoesNotLinger)
{
	// the parent exits at once, often before its child has set its death
	// signal: the child sees it has a new parent and exits
	Subreaper sr;
	for (int i = 0; i < 20; i++) {
		int p[2];
		ASSERT_EQ(pipe(p), 0);
		pid_t grand = -1;
		Child mid = orphan_grandchild(p, grand);
		ASSERT_NE(grand, -1) << "no pid from the child";
		ASSERT_TRUE(mid.wait_for(10000));
		const bool gone = gone_within(grand, 10000);
		EXPECT_TRUE(gone) << "grandchild " << grand << " outlived its parent";
		Subreaper::reap(grand, gone);
	}
}

TEST(Child, ExecChildExitStatusAndOutput)
{
	TempDir d;
	ASSERT_FALSE(d.path.empty());
	std::string err;
	auto c = Child::exec({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, d.file("out"),
			     d.file("err"), {}, &err);
	ASSERT_TRUE(c) << err;
	ASSERT_TRUE(c->wait_for(10000));
	ASSERT_TRUE(WIFEXITED(c->status()));
	EXPECT_EQ(WEXITSTATUS(c->status()), 3);
	EXPECT_EQ(contents(d.file("out")), "out\n");
	EXPECT_EQ(contents(d.file("err")), "err\n");
}

TEST(Child, ExecChildLeadsItsOwnGroup)
{
	TempDir d;
	std::string err;
	auto c = Child::exec({"/bin/sleep", "30"}, d.file("out"), d.file("out"), {}, &err);
	ASSERT_TRUE(c) << err;
	EXPECT_EQ(getpgid(c->pid()), c->pid());
	EXPECT_FALSE(c->wait_for(50));
	EXPECT_TRUE(c->running());
	std::string what = c->stop(SIGINT, 10000);
	EXPECT_EQ(what.rfind("stopped by SIGINT: killed by ", 0), 0u) << what;
	ASSERT_TRUE(WIFSIGNALED(c->status()));
	EXPECT_EQ(WTERMSIG(c->status()), SIGINT);
}

TEST(Child, KilledBySignal)
{
	Child f = Child::run([] {
		raise(SIGUSR1);
		return 0;
	});
	ASSERT_TRUE(f.wait_for(10000));
	ASSERT_TRUE(WIFSIGNALED(f.status()));
	EXPECT_EQ(WTERMSIG(f.status()), SIGUSR1);
	EXPECT_EQ(ptwalk::describe_status(f.status()),
		  std::string("killed by ") + strsignal(SIGUSR1));

	TempDir d;
	std::string err;
	auto e = Child::exec({"/bin/sh", "-c", "kill -USR2 $$"}, d.file("out"), d.file("out"), {},
			     &err);
	ASSERT_TRUE(e) << err;
	ASSERT_TRUE(e->wait_for(10000));
	ASSERT_TRUE(WIFSIGNALED(e->status()));
	EXPECT_EQ(WTERMSIG(e->status()), SIGUSR2);
}

TEST(Child, MissingProgramDoesNotStart)
{
	TempDir d;
	std::string err;
	auto c = Child::exec({"/nonexistent/ptwalk-no-such-program", "x"}, d.file("out"),
			     d.file("out"), {}, &err);
	EXPECT_FALSE(c);
	EXPECT_EQ(err,
		  "exec /nonexistent/ptwalk-no-such-program: " + std::string(strerror(ENOENT)));

	err.clear();
	c = Child::exec({"/bin/true"}, d.path + "/no/such/dir/out", d.file("err"), {}, &err);
	EXPECT_FALSE(c);
	EXPECT_EQ(err.rfind("open " + d.path + "/no/such/dir/out: ", 0), 0u) << err;
}

TEST(Child, FunctionChildIgnoringTheStopSignalIsKilledAfterTheTimeout)
{
	Child c = Child::run([] {
		signal(SIGTERM, SIG_IGN);
		wait_forever();
		return 0;
	});
	ASSERT_TRUE(c.started());
	ASSERT_TRUE(comes_to_ignore(c.pid(), SIGTERM));
	const uint64_t t0 = ptwalk::now_ns();
	std::string what = c.stop(SIGTERM, 100, Child::kUntilReaped);
	const uint64_t ms = (ptwalk::now_ns() - t0) / 1000000;
	EXPECT_EQ(what.rfind("did not stop within 100 ms of signal (threads: ", 0), 0u) << what;
	EXPECT_NE(what.find("); SIGKILLed"), std::string::npos) << what;
	EXPECT_GE(ms, 100u);
	EXPECT_LT(ms, 5000u);
	EXPECT_TRUE(c.reaped());
	ASSERT_TRUE(WIFSIGNALED(c.status()));
	EXPECT_EQ(WTERMSIG(c.status()), SIGKILL);
}

TEST(Child, ExecChildIgnoringTheStopSignalIsKilledWithItsGroup)
{
	TempDir d;
	std::string err;
	Subreaper sr;
	// a shell ignoring SIGINT with a child of its own (the child's pid in
	// the output)
	auto c = Child::exec({"/bin/sh", "-c", "trap '' INT; sleep 30 & echo $!; wait"},
			     d.file("out"), d.file("out"), {}, &err);
	ASSERT_TRUE(c) << err;
	pid_t grand = 0;
	for (int i = 0; i < 400 && !grand; i++) {
		grand = pid_t(std::atol(contents(d.file("out")).c_str()));
		if (!grand)
			usleep(5000);
	}
	ASSERT_GT(grand, 0);
	EXPECT_FALSE(c->wait_for(100));
	std::string what = c->stop(SIGINT, 100);
	EXPECT_EQ(what.rfind("did not stop within 100 ms of SIGINT", 0), 0u) << what;
	EXPECT_TRUE(c->reaped());
	ASSERT_TRUE(WIFSIGNALED(c->status()));
	EXPECT_EQ(WTERMSIG(c->status()), SIGKILL);
	const bool gone = gone_within(grand, 10000);
	EXPECT_TRUE(gone) << "the shell's child " << grand << " survived";
	Subreaper::reap(grand, gone);
}

TEST(Child, OwnerGoingAwayKillsAndReaps)
{
	pid_t f, e;
	{
		Child c = Child::run([] {
			wait_forever();
			return 0;
		});
		f = c.pid();
		TempDir d;
		std::string err;
		auto x = Child::exec({"/bin/sleep", "30"}, d.file("out"), d.file("out"), {}, &err);
		ASSERT_TRUE(x) << err;
		e = x->pid();
		Child moved = std::move(c); // the moved-from one owns nothing
		EXPECT_FALSE(c.started());
		EXPECT_EQ(moved.pid(), f);
	}
	// reaped: no longer our children
	EXPECT_EQ(waitpid(f, nullptr, WNOHANG), -1);
	EXPECT_EQ(errno, ECHILD);
	EXPECT_EQ(waitpid(e, nullptr, WNOHANG), -1);
	EXPECT_EQ(errno, ECHILD);
}

TEST(Child, NotStarted)
{
	Child c;
	EXPECT_FALSE(c.started());
	EXPECT_FALSE(c.running());
	EXPECT_TRUE(c.poll_exit());
	EXPECT_TRUE(c.wait_for(0));
	EXPECT_EQ(c.stop(SIGTERM, 100), "not started");
}
