// SPDX-License-Identifier: GPL-2.0
// perf integration: the report/stat parsers on outputs recorded on this
// project's 6.18 test host (testdata/perf/README), the session's refusals,
// and one live session on a process whose page tables another process walks
// through /proc/PID/clear_refs.
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <gtest/gtest.h>
#include <string>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptwalk/clock.hpp"
#include "ptwalk/fd.hpp"
#include "ptwalk/perf_session.hpp"
#include "ptwalk/procfs.hpp"

using namespace ptwalk;

namespace {

std::string testdata(const char *name)
{
	std::string path = std::string(PTWALK_TESTDATA) + "/perf/" + name;
	std::string err;
	auto text = read_file(path, &err);
	EXPECT_TRUE(text) << err;
	return text ? *text : "";
}

double num(const Json *j)
{
	return j && j->number() ? *j->number() : -1;
}

std::string str(const Json *j)
{
	return j && j->string() ? *j->string() : "";
}

} // namespace

TEST(PerfSessionParse, ReportNoChildrenWithSampleCounts)
{
	// perf report --stdio --sort symbol --no-children -g none
	// --show-nr-samples -t '\t' (what PerfSession runs)
	Json r = parse_perf_report_symbols(testdata("report_fields_nochildren_clear_refs.txt"), 15);
	EXPECT_EQ(str(r.find("event")), "cpu-clock");
	// perf record said "(15998 samples)"; the header abbreviates to 15K.
	EXPECT_EQ(num(r.find("samples")), 15998);
	EXPECT_EQ(str(r.find("samples_header")), "15K");
	EXPECT_EQ(num(r.find("lost_samples")), 0);
	const Json *top = r.find("top_kernel_symbols");
	ASSERT_TRUE(top && top->is_array());
	ASSERT_EQ(top->size(), 15u);
	EXPECT_EQ(str(top->at(0).find("symbol")), "vm_normal_folio");
	EXPECT_DOUBLE_EQ(num(top->at(0).find("percent")), 54.58);
	EXPECT_EQ(num(top->at(0).find("samples")), 8732);
	EXPECT_EQ(str(top->at(1).find("symbol")), "clear_refs_pte_range");
	EXPECT_EQ(num(top->at(1).find("samples")), 3490);
	double prev = 100;
	for (size_t i = 0; i < top->size(); ++i) {
		std::string s = str(top->at(i).find("symbol"));
		// the padding and the trailing IPC columns are not part of the name
		EXPECT_EQ(s.find_first_of(" \t"), std::string::npos) << s;
		EXPECT_NE(s, "builtin_address_internal") << "a user ([.]) symbol among kernel ones";
		double p = num(top->at(i).find("percent"));
		EXPECT_LE(p, prev);
		prev = p;
	}
	// the sum of the [k] lines' Overhead column (45 [.] lines left out)
	EXPECT_DOUBLE_EQ(num(r.find("kernel_percent")), 99.6);
	EXPECT_EQ(num(r.find("entries")), 123);
}

TEST(PerfSessionParse, ReportOfARecordingWithoutSamples)
{
	// perf report exits 0, prints no table and says so on stderr: the
	// parser gives no count (the session takes "0" from that stderr line).
	Json r = parse_perf_report_symbols(testdata("report_fields_zero_samples.txt"), 15);
	EXPECT_EQ(r.find("samples"), nullptr);
	EXPECT_EQ(r.find("event"), nullptr);
	EXPECT_EQ(num(r.find("entries")), 0);
	EXPECT_EQ(r.find("top_kernel_symbols")->size(), 0u);
	EXPECT_NE(testdata("report_fields_zero_samples.stderr").find("has no samples"),
		  std::string::npos);
}

TEST(PerfSessionParse, ReportChildrenModeUsesSelfAndSkipsCallChains)
{
	// `perf report --stdio --sort symbol -t '\t'` of a -g recording:
	// Children and Self columns, call-chain lines between the entries.
	Json r = parse_perf_report_symbols(
		testdata("report_fields_children_callchain_clear_refs.txt"), 5);
	EXPECT_EQ(str(r.find("event")), "cpu-clock");
	EXPECT_EQ(r.find("samples"), nullptr) << "no Samples column: no exact count";
	const Json *top = r.find("top_kernel_symbols");
	ASSERT_TRUE(top && top->is_array());
	ASSERT_EQ(top->size(), 5u);
	// by Self (54.58%), not Children (72.08%), the same figure as the
	// no-children report of the same recording
	EXPECT_EQ(str(top->at(0).find("symbol")), "vm_normal_folio");
	EXPECT_DOUBLE_EQ(num(top->at(0).find("percent")), 54.58);
	EXPECT_EQ(str(top->at(1).find("symbol")), "clear_refs_pte_range");
	EXPECT_DOUBLE_EQ(num(top->at(1).find("percent")), 21.82);
}

TEST(PerfSessionParse, ReportColumnsByNameAndOddLines)
{
	const char *text = "# Samples: 12  of event 'task-clock'\n"
			   "# Symbol\tOverhead\n" // columns in another order
			   "[k] do_syscall_64\t 50.00%\n"
			   "            |\n"
			   "            ---entry_SYSCALL_64\n"
			   "[.] std::vector<int, std::allocator<int> >::push_back\t 25.00%\n"
			   "[k] 0xffffffff81000000\t25.00%\n"
			   "garbage line\n"
			   "[k\t7%%\n"
			   "[k] x\tnot a percent\n";
	Json r = parse_perf_report_symbols(text, 15);
	EXPECT_EQ(str(r.find("event")), "task-clock");
	EXPECT_EQ(num(r.find("entries")), 3);
	EXPECT_EQ(r.find("samples"), nullptr);
	const Json *top = r.find("top_kernel_symbols");
	ASSERT_TRUE(top);
	ASSERT_EQ(top->size(), 2u);
	EXPECT_EQ(str(top->at(0).find("symbol")), "do_syscall_64");
	// hidden kernel addresses (kptr_restrict) stay visible as addresses
	EXPECT_EQ(str(top->at(1).find("symbol")), "0xffffffff81000000");
	EXPECT_DOUBLE_EQ(num(r.find("kernel_percent")), 75.0);
	// without a header line nothing is a table: perf's human form is not
	// taken for the field-separated one
	r = parse_perf_report_symbols("    50.00%  [k] do_syscall_64\n", 15);
	EXPECT_EQ(num(r.find("entries")), 0);
}

TEST(PerfSessionParse, ReportEmpty)
{
	Json r = parse_perf_report_symbols("", 15);
	EXPECT_EQ(num(r.find("entries")), 0);
	ASSERT_TRUE(r.find("top_kernel_symbols"));
	EXPECT_EQ(r.find("top_kernel_symbols")->size(), 0u);
	EXPECT_EQ(r.find("samples"), nullptr);
}

TEST(PerfSessionParse, StatPerPidTracepoints)
{
	// perf stat -x, -o FILE -p SCANNER,TARGET -e mmap_lock:...,tlb:tlb_flush
	Json s = parse_perf_stat_csv(testdata("stat_pids_mmap_lock_tlb.csv"));
	const Json *ev = s.find("events");
	ASSERT_TRUE(ev && ev->is_object());
	EXPECT_EQ(ev->size(), 4u);
	EXPECT_EQ(num(ev->find("mmap_lock:mmap_lock_start_locking")), 400);
	EXPECT_EQ(num(ev->find("mmap_lock:mmap_lock_acquire_returned")), 400);
	EXPECT_EQ(num(ev->find("mmap_lock:mmap_lock_released")), 400);
	EXPECT_EQ(num(ev->find("tlb:tlb_flush")), 2);
	EXPECT_EQ(s.find("unsupported")->size(), 0u);
	EXPECT_EQ(num(s.find("run_ns")->find("tlb:tlb_flush")), 1222367643);
	EXPECT_EQ(s.find("malformed"), nullptr);
}

TEST(PerfSessionParse, StatNotSupportedOnHostWithoutPmu)
{
	Json s = parse_perf_stat_csv(testdata("stat_no_pmu_not_supported.csv"));
	const Json *ev = s.find("events");
	ASSERT_TRUE(ev);
	EXPECT_EQ(ev->find("cycles"), nullptr) << "never a fake zero";
	EXPECT_EQ(num(ev->find("cpu-clock_ns")), 530000);
	EXPECT_EQ(num(ev->find("mmap_lock:mmap_lock_released")), 35);
	const Json *u = s.find("unsupported");
	ASSERT_TRUE(u);
	ASSERT_EQ(u->size(), 2u);
	EXPECT_EQ(str(u->at(0).find("event")), "cycles");
	EXPECT_EQ(str(u->at(0).find("reason")), "perf stat: <not supported>");
	EXPECT_EQ(str(u->at(1).find("event")), "instructions");
}

TEST(PerfSessionParse, StatSumsRepeatedLinesAndKeepsMalformed)
{
	const char *text = "# started on x\n\n"
			   "3,,tlb:tlb_flush,10,100.00,,\n"
			   "4,,tlb:tlb_flush,10,100.00,,\n"
			   "<not counted>,,mmap_lock:mmap_lock_released,0,0.00,,\n"
			   "<not counted>,,mmap_lock:mmap_lock_released,0,0.00,,\n"
			   "what,,\n"
			   "12x,,foo:bar,1,100,,\n";
	Json s = parse_perf_stat_csv(text);
	EXPECT_EQ(num(s.find("events")->find("tlb:tlb_flush")), 7);
	EXPECT_EQ(num(s.find("run_ns")->find("tlb:tlb_flush")), 20);
	ASSERT_EQ(s.find("unsupported")->size(), 1u);
	EXPECT_EQ(str(s.find("unsupported")->at(0).find("reason")), "perf stat: <not counted>");
	ASSERT_TRUE(s.find("malformed"));
	EXPECT_EQ(s.find("malformed")->size(), 2u);
}

TEST(PerfSessionApi, StopWithoutStartSaysSoAndIsIdempotent)
{
	PerfSession s;
	Json a = s.stop();
	ASSERT_TRUE(a.find("perf"));
	EXPECT_EQ(str(a.find("perf")->find("error")), "perf session not started");
	EXPECT_EQ(a.find("perf")->find("record"), nullptr);
	EXPECT_EQ(s.stop().dump(), a.dump());
}

TEST(PerfSessionApi, MissingPerfIsRefusedWithThePath)
{
	char dir[] = "/tmp/ptwalk-perf-XXXXXX";
	ASSERT_NE(mkdtemp(dir), nullptr) << std::strerror(errno);
	{
		PerfSession s;
		PerfOptions o;
		o.perf = "/nonexistent/perf";
		o.workdir = dir;
		EXPECT_FALSE(s.start(getpid(), getpid(), o));
		EXPECT_NE(s.why().find("/nonexistent/perf"), std::string::npos) << s.why();
		Json j = s.stop();
		EXPECT_NE(str(j.find("perf")->find("error")).find("/nonexistent/perf"),
			  std::string::npos)
			<< j.dump();
	}
	{
		PerfSession s;
		PerfOptions o;
		o.perf = "ptwalk-no-such-perf";
		o.workdir = dir;
		EXPECT_FALSE(s.start(getpid(), getpid(), o));
		EXPECT_NE(s.why().find("not found in PATH"), std::string::npos) << s.why();
	}
	{
		PerfSession s; // an executable that is not perf: --version fails
		PerfOptions o;
		o.perf = "/bin/false";
		o.workdir = dir;
		EXPECT_FALSE(s.start(getpid(), getpid(), o));
		EXPECT_NE(s.why().find("perf unusable"), std::string::npos) << s.why();
	}
	std::filesystem::remove_all(dir);
}

namespace {

// Children of the live test: SIGKILLed and reaped on every exit path.
struct Kids {
	std::vector<pid_t> pids;
	~Kids()
	{
		for (pid_t p : pids) {
			kill(p, SIGKILL);
			while (waitpid(p, nullptr, 0) < 0 && errno == EINTR) {
			}
		}
	}
	bool wait(pid_t p, int timeout_ms, int *status)
	{
		uint64_t end = now_ns() + uint64_t(timeout_ms) * 1000000ull;
		while (now_ns() < end) {
			if (waitpid(p, status, WNOHANG) == p) {
				std::erase(pids, p);
				return true;
			}
			usleep(10000);
		}
		return false;
	}
};

} // namespace

TEST(PerfSessionApi, PerfIgnoringSigintIsKilledWithItsChildren)
{
	// A stand-in perf: answers --version, acks "enable" on its --control
	// fd, then ignores SIGINT with a child of its own; `report` fails.
	char dir[] = "/tmp/ptwalk-perf-XXXXXX";
	ASSERT_NE(mkdtemp(dir), nullptr) << std::strerror(errno);
	struct Rm {
		std::string d;
		~Rm() { std::filesystem::remove_all(d); }
	} rm{dir};
	std::string fake = std::string(dir) + "/perf";
	{
		std::string script =
			"#!/bin/bash\n"
			"case $1 in --version) echo 'perf version 0.0-fake'; exit 0;;\n"
			"report) echo 'fake report fails' >&2; exit 1;; esac\n"
			"trap '' INT\n"
			"echo $$ > " + std::string(dir) + "/fake-$1.pid\n"
			"while [ $# -gt 0 ]; do [ \"$1\" = --control ] && c=$2; shift; done\n"
			"c=${c#fd:}; ack=${c#*,}\n"
			"echo ack >&$ack\n"
			"sleep 1000 & echo $! > " + std::string(dir) + "/fake-sleep.pid\n"
			"while :; do wait; done\n";
		Fd f(open(fake.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755));
		ASSERT_TRUE(f) << fake << ": " << std::strerror(errno);
		ASSERT_EQ(write(f.get(), script.data(), script.size()), ssize_t(script.size()));
	}
	pid_t sleeper = fork();
	ASSERT_GE(sleeper, 0);
	if (sleeper == 0) {
		for (;;)
			pause();
	}
	Kids kids{{sleeper}};
	PerfSession s;
	PerfOptions o;
	o.perf = fake;
	o.workdir = dir;
	o.stop_timeout_ms = 300;
	ASSERT_TRUE(s.start(sleeper, sleeper, o)) << s.why();
	std::string err;
	auto rec_pid = read_file(std::string(dir) + "/fake-record.pid", &err);
	ASSERT_TRUE(rec_pid) << err;
	uint64_t t0 = now_ns();
	Json j = s.stop();
	EXPECT_LT(now_ns() - t0, 5000000000ull);
	SCOPED_TRACE(j.dump(2));
	const Json *rec = j.find("perf")->find("record");
	ASSERT_TRUE(rec);
	EXPECT_NE(str(rec->find("stop")).find("SIGKILLed"), std::string::npos);
	EXPECT_FALSE(str(rec->find("error")).empty());
	EXPECT_EQ(rec->find("samples"), nullptr) << "never a figure perf did not give";
	EXPECT_EQ(str(j.find("perf")->find("version")), "0.0-fake");
	// the stand-ins and the children they started are gone
	for (const char *name : {"fake-record.pid", "fake-stat.pid", "fake-sleep.pid"}) {
		auto t = read_file(std::string(dir) + "/" + name, &err);
		if (!t && std::string(name) == "fake-stat.pid")
			continue; // stat may not have started (no tracefs)
		ASSERT_TRUE(t) << err;
		pid_t p = pid_t(std::atoi(t->c_str()));
		ASSERT_GT(p, 0);
		// killed: gone, or a zombie its new parent has not reaped yet
		auto dead = [p] {
			if (kill(p, 0) != 0 && errno == ESRCH)
				return true;
			auto st = read_file("/proc/" + std::to_string(p) + "/stat", nullptr);
			if (!st)
				return true;
			size_t rp = st->rfind(')');
			return rp != std::string::npos && rp + 2 < st->size() && (*st)[rp + 2] == 'Z';
		};
		bool gone = dead();
		for (int i = 0; i < 200 && !gone; i++) {
			usleep(10000);
			gone = dead();
		}
		EXPECT_TRUE(gone) << name << " " << p << " alive";
	}
}

namespace {

bool perf_in_path()
{
	const char *path = std::getenv("PATH");
	std::string_view dirs = path ? path : "";
	while (!dirs.empty()) {
		size_t c = dirs.find(':');
		std::string p = std::string(dirs.substr(0, c)) + "/perf";
		if (access(p.c_str(), X_OK) == 0)
			return true;
		if (c == std::string_view::npos)
			break;
		dirs.remove_prefix(c + 1);
	}
	return false;
}

} // namespace

namespace {

// A child with size bytes of populated anonymous memory (4 KiB pages) that
// writes a byte to ready_w, then idles. Its pid, or -1.
pid_t fork_populated_target(size_t size, int ready_w)
{
	pid_t target = fork();
	if (target == 0) {
		void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (p == MAP_FAILED)
			_exit(2);
		madvise(p, size, MADV_NOHUGEPAGE); // 4 KiB PTEs to walk
		for (size_t i = 0; i < size; i += 4096)
			static_cast<volatile char *>(p)[i] = 1;
		char c = 'r';
		if (write(ready_w, &c, 1) != 1)
			_exit(3);
		for (;;)
			pause();
	}
	return target;
}

// A child that waits for a byte on go_r, then writes clear_refs for ~2 s.
// Its pid, or -1.
pid_t fork_clear_refs_scanner(const std::string &clear_refs, int go_r)
{
	pid_t scanner = fork();
	if (scanner == 0) {
		char g;
		if (read(go_r, &g, 1) != 1)
			_exit(2);
		uint64_t end = now_ns() + 2000000000ull;
		while (now_ns() < end) {
			int fd = open(clear_refs.c_str(), O_WRONLY);
			if (fd < 0)
				_exit(3);
			if (write(fd, "1", 1) != 1)
				_exit(4);
			close(fd);
		}
		_exit(0);
	}
	return scanner;
}

// perf record's part: cpu-clock samples, a page-table walk among the top
// kernel symbols.
void expect_walk_sampled(const Json *perf)
{
	const Json *rec = perf->find("record");
	ASSERT_TRUE(rec);
	EXPECT_EQ(rec->find("error"), nullptr);
	EXPECT_EQ(str(rec->find("event")), "cpu-clock");
	EXPECT_GT(num(rec->find("samples")), 0);
	const Json *top = rec->find("top_kernel_symbols");
	ASSERT_TRUE(top && top->is_array());
	ASSERT_GT(top->size(), 0u);
	bool walk_symbol = false;
	for (size_t i = 0; i < top->size(); ++i) {
		std::string s = str(top->at(i).find("symbol"));
		if (s.find("clear_refs") != std::string::npos ||
		    s.find("walk_") != std::string::npos || s.find("pte") != std::string::npos)
			walk_symbol = true;
	}
	EXPECT_TRUE(walk_symbol);
}

// perf stat's part: the mmap_lock events counted; ptwalk:* counted when
// ptwalk.ko is loaded, else said to be absent (j: the whole result).
void expect_lock_events_counted(const Json &j, const Json *perf)
{
	const Json *stat = perf->find("stat");
	ASSERT_TRUE(stat);
	EXPECT_EQ(stat->find("error"), nullptr);
	const Json *ev = stat->find("events");
	ASSERT_TRUE(ev);
	EXPECT_GT(num(ev->find("mmap_lock:mmap_lock_start_locking")), 0);
	EXPECT_GT(num(ev->find("mmap_lock:mmap_lock_acquire_returned")), 0);
	EXPECT_GT(num(ev->find("mmap_lock:mmap_lock_released")), 0);
	EXPECT_EQ(stat->find("missing"), nullptr);
	bool ptwalk_said = false;
	const Json *u = stat->find("unsupported");
	ASSERT_TRUE(u);
	for (size_t i = 0; i < u->size(); ++i)
		if (str(u->at(i).find("event")) == "ptwalk:*")
			ptwalk_said = str(u->at(i).find("reason")).find("ptwalk.ko") !=
				      std::string::npos;
	if (!ptwalk_said)
		for (const char *name : {"ptwalk:"})
			(void)name, ptwalk_said = j.dump().find("\"ptwalk:") != std::string::npos;
	EXPECT_TRUE(ptwalk_said);
}

} // namespace

TEST(PerfSessionLive, ClearRefsWalkIsSampledAndCounted)
{
	if (geteuid() != 0)
		GTEST_SKIP() << "needs root (clear_refs of another process, perf "
				"kernel samples, tracefs)";
	if (!perf_in_path())
		GTEST_SKIP() << "perf not found in PATH";

	constexpr size_t kSize = 256u << 20;
	Kids kids;
	int ready[2], go[2];
	ASSERT_EQ(pipe2(ready, O_CLOEXEC), 0) << std::strerror(errno);
	Fd ready_r(ready[0]), ready_w(ready[1]);
	ASSERT_EQ(pipe2(go, O_CLOEXEC), 0) << std::strerror(errno);
	Fd go_r(go[0]), go_w(go[1]);

	// The target: 256 MiB of populated anonymous memory, then idle.
	pid_t target = fork_populated_target(kSize, ready_w.get());
	ASSERT_GE(target, 0) << std::strerror(errno);
	kids.pids.push_back(target);
	ready_w.reset();
	char c;
	ASSERT_EQ(read(ready_r.get(), &c, 1), 1) << "target did not populate";

	// The scanner: waits for "go", then writes clear_refs for ~2 s.
	std::string clear_refs = "/proc/" + std::to_string(target) + "/clear_refs";
	pid_t scanner = fork_clear_refs_scanner(clear_refs, go_r.get());
	ASSERT_GE(scanner, 0) << std::strerror(errno);
	kids.pids.push_back(scanner);
	go_r.reset();

	char dir[] = "/tmp/ptwalk-perf-XXXXXX";
	ASSERT_NE(mkdtemp(dir), nullptr) << std::strerror(errno);
	struct Rm {
		std::string d;
		~Rm() { std::filesystem::remove_all(d); }
	} rm{dir};

	PerfSession session;
	PerfOptions o;
	o.workdir = dir;
	ASSERT_TRUE(session.start(scanner, target, o)) << session.why();
	ASSERT_EQ(write(go_w.get(), "g", 1), 1);
	int st = 0;
	ASSERT_TRUE(kids.wait(scanner, 30000, &st)) << "scanner did not finish";
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "scanner status " << st;
	Json j = session.stop();
	SCOPED_TRACE(j.dump(2));
	EXPECT_EQ(session.stop().dump(), j.dump()) << "stop() is idempotent";

	const Json *perf = j.find("perf");
	ASSERT_TRUE(perf);
	EXPECT_FALSE(str(perf->find("version")).empty());
	ASSERT_NO_FATAL_FAILURE(expect_walk_sampled(perf));
	expect_lock_events_counted(j, perf);
}
