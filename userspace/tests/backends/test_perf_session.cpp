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
#include "golden.hpp"
#include "ptwalk/perf_session.hpp"
#include "ptwalk/procfs.hpp"

using namespace ptwalk;

namespace {

std::string testdata(const char *name)
{
	return golden::perf_testdata(name);
}

// A count by name; -1 when there is none.
double count(const PerfCounts &c, std::string_view name)
{
	const uint64_t *v = find_count(c, name);
	return v ? double(*v) : -1;
}

// The summary's text, as the result file writes it.
std::string text_of(const PerfSummary &p)
{
	Json::Value j;
	to_json(j, p);
	return Json(j).dump(2);
}

// A directory removed, with what it holds, when this goes.
struct RemoveAll {
	std::string d;
	~RemoveAll() { std::filesystem::remove_all(d); }
};

} // namespace

TEST(PerfSessionParse, ReportNoChildrenWithSampleCounts)
{
	// perf report --stdio --sort symbol --no-children -g none
	// --show-nr-samples -t '\t' (what PerfSession runs)
	PerfReportSummary r =
		parse_perf_report_symbols(testdata("report_fields_nochildren_clear_refs.txt"), 15);
	EXPECT_EQ(r.event, "cpu-clock");
	// perf record said "(15998 samples)"; the header abbreviates to 15K.
	EXPECT_EQ(r.samples, 15998u);
	EXPECT_EQ(r.samples_header, "15K");
	EXPECT_EQ(r.lost_samples, 0u);
	const auto &top = r.top_kernel_symbols;
	ASSERT_EQ(top.size(), 15u);
	EXPECT_EQ(top[0].symbol, "vm_normal_folio");
	EXPECT_DOUBLE_EQ(top[0].percent, 54.58);
	EXPECT_EQ(top[0].samples, 8732u);
	EXPECT_EQ(top[1].symbol, "clear_refs_pte_range");
	EXPECT_EQ(top[1].samples, 3490u);
	double prev = 100;
	for (const PerfSymbol &sym : top) {
		// the padding and the trailing IPC columns are not part of the name
		EXPECT_EQ(sym.symbol.find_first_of(" \t"), std::string::npos) << sym.symbol;
		EXPECT_NE(sym.symbol, "builtin_address_internal")
			<< "a user ([.]) symbol among kernel ones";
		EXPECT_LE(sym.percent, prev);
		prev = sym.percent;
	}
	// the sum of the [k] lines' Overhead column (45 [.] lines left out)
	EXPECT_DOUBLE_EQ(r.kernel_percent, 99.6);
	EXPECT_EQ(r.entries, 123u);
}

TEST(PerfSessionParse, ReportOfARecordingWithoutSamples)
{
	// perf report exits 0, prints no table and says so on stderr: the
	// parser gives no count (the session takes "0" from that stderr line).
	PerfReportSummary r =
		parse_perf_report_symbols(testdata("report_fields_zero_samples.txt"), 15);
	EXPECT_EQ(r.samples, std::nullopt);
	EXPECT_EQ(r.event, std::nullopt);
	EXPECT_EQ(r.entries, 0u);
	EXPECT_TRUE(r.top_kernel_symbols.empty());
	EXPECT_NE(testdata("report_fields_zero_samples.stderr").find("has no samples"),
		  std::string::npos);
}

TEST(PerfSessionParse, ReportChildrenModeUsesSelfAndSkipsCallChains)
{
	// `perf report --stdio --sort symbol -t '\t'` of a -g recording:
	// Children and Self columns, call-chain lines between the entries.
	PerfReportSummary r = parse_perf_report_symbols(
		testdata("report_fields_children_callchain_clear_refs.txt"), 5);
	EXPECT_EQ(r.event, "cpu-clock");
	EXPECT_EQ(r.samples, std::nullopt) << "no Samples column: no exact count";
	const auto &top = r.top_kernel_symbols;
	ASSERT_EQ(top.size(), 5u);
	// by Self (54.58%), not Children (72.08%), the same figure as the
	// no-children report of the same recording
	EXPECT_EQ(top[0].symbol, "vm_normal_folio");
	EXPECT_DOUBLE_EQ(top[0].percent, 54.58);
	EXPECT_EQ(top[1].symbol, "clear_refs_pte_range");
	EXPECT_DOUBLE_EQ(top[1].percent, 21.82);
}

TEST(PerfSessionParse, ReportColumnsByNameAndOddLines)
{
	// columns in another order (Symbol first), a call-graph line, a C++
	// name, a hidden kernel address, lines that are not entries
	PerfReportSummary r =
		parse_perf_report_symbols(testdata("report_fields_odd_lines.txt"), 15);
	EXPECT_EQ(r.event, "task-clock");
	EXPECT_EQ(r.entries, 3u);
	EXPECT_EQ(r.samples, std::nullopt);
	const auto &top = r.top_kernel_symbols;
	ASSERT_EQ(top.size(), 2u);
	EXPECT_EQ(top[0].symbol, "do_syscall_64");
	// hidden kernel addresses (kptr_restrict) stay visible as addresses
	EXPECT_EQ(top[1].symbol, "0xffffffff81000000");
	EXPECT_DOUBLE_EQ(r.kernel_percent, 75.0);
	// without a header line nothing is a table: perf's human form is not
	// taken for the field-separated one
	r = parse_perf_report_symbols("    50.00%  [k] do_syscall_64\n", 15);
	EXPECT_EQ(r.entries, 0u);
}

TEST(PerfSessionParse, ReportEmpty)
{
	PerfReportSummary r = parse_perf_report_symbols("", 15);
	EXPECT_EQ(r.entries, 0u);
	EXPECT_TRUE(r.top_kernel_symbols.empty());
	EXPECT_EQ(r.samples, std::nullopt);
}

TEST(PerfSessionParse, StatPerPidTracepoints)
{
	// perf stat -x, -o FILE -p SCANNER,TARGET -e mmap_lock:...,tlb:tlb_flush
	PerfStatSummary s = parse_perf_stat_csv(testdata("stat_pids_mmap_lock_tlb.csv"));
	EXPECT_EQ(s.events.size(), 4u);
	EXPECT_EQ(count(s.events, "mmap_lock:mmap_lock_start_locking"), 400);
	EXPECT_EQ(count(s.events, "mmap_lock:mmap_lock_acquire_returned"), 400);
	EXPECT_EQ(count(s.events, "mmap_lock:mmap_lock_released"), 400);
	EXPECT_EQ(count(s.events, "tlb:tlb_flush"), 2);
	EXPECT_TRUE(s.unsupported.empty());
	EXPECT_EQ(count(s.run_ns, "tlb:tlb_flush"), 1222367643);
	EXPECT_TRUE(s.malformed.empty());
}

TEST(PerfSessionParse, StatNotSupportedOnHostWithoutPmu)
{
	PerfStatSummary s = parse_perf_stat_csv(testdata("stat_no_pmu_not_supported.csv"));
	EXPECT_EQ(find_count(s.events, "cycles"), nullptr) << "never a fake zero";
	EXPECT_EQ(count(s.events, "cpu-clock_ns"), 530000);
	EXPECT_EQ(count(s.events, "mmap_lock:mmap_lock_released"), 35);
	ASSERT_EQ(s.unsupported.size(), 2u);
	EXPECT_EQ(s.unsupported[0].event, "cycles");
	EXPECT_EQ(s.unsupported[0].reason, "perf stat: <not supported>");
	EXPECT_EQ(s.unsupported[1].event, "instructions");
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
	PerfStatSummary s = parse_perf_stat_csv(text);
	EXPECT_EQ(count(s.events, "tlb:tlb_flush"), 7);
	EXPECT_EQ(count(s.run_ns, "tlb:tlb_flush"), 20);
	ASSERT_EQ(s.unsupported.size(), 1u);
	EXPECT_EQ(s.unsupported[0].reason, "perf stat: <not counted>");
	EXPECT_EQ(s.malformed.size(), 2u);
}

TEST(PerfSessionApi, StopWithoutStartSaysSoAndIsIdempotent)
{
	PerfSession s;
	PerfSummary a = s.stop();
	EXPECT_EQ(a.error, "perf session not started");
	EXPECT_FALSE(a.record);
	EXPECT_EQ(text_of(s.stop()), text_of(a));
}

TEST(PerfSessionApi, MissingPerfIsRefusedWithThePath)
{
	char dir[] = "/tmp/ptwalk-perf-XXXXXX";
	ASSERT_NE(mkdtemp(dir), nullptr) << std::strerror(errno);
	// s with perf set to perf does not start, and why() names what
	auto expect_refused = [&dir](PerfSession &s, const char *perf, const char *what) {
		PerfOptions o;
		o.perf = perf;
		o.workdir = dir;
		EXPECT_FALSE(s.start(getpid(), getpid(), o));
		EXPECT_NE(s.why().find(what), std::string::npos) << s.why();
	};
	{
		PerfSession s;
		expect_refused(s, "/nonexistent/perf", "/nonexistent/perf");
		PerfSummary p = s.stop();
		EXPECT_NE(p.error.value_or("").find("/nonexistent/perf"), std::string::npos)
			<< text_of(p);
	}
	{
		PerfSession s;
		expect_refused(s, "ptwalk-no-such-perf", "not found in PATH");
	}
	{
		PerfSession s; // an executable that is not perf: --version fails
		expect_refused(s, "/bin/false", "perf unusable");
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
	RemoveAll rm{dir};
	std::string fake = std::string(dir) + "/perf";
	{
		std::string script =
			"#!/bin/bash\n"
			"case $1 in --version) echo 'perf version 0.0-fake'; exit 0;;\n"
			"report) echo 'fake report fails' >&2; exit 1;; esac\n"
			"trap '' INT\n"
			"echo $$ > " +
			std::string(dir) +
			"/fake-$1.pid\n"
			"while [ $# -gt 0 ]; do [ \"$1\" = --control ] && c=$2; shift; done\n"
			"c=${c#fd:}; ack=${c#*,}\n"
			"echo ack >&$ack\n"
			"sleep 1000 & echo $! > " +
			std::string(dir) +
			"/fake-sleep.pid\n"
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
	PerfSummary sum = s.stop();
	EXPECT_LT(now_ns() - t0, 5000000000ull);
	SCOPED_TRACE(text_of(sum));
	ASSERT_TRUE(sum.record);
	const PerfRecordPart &rec = *sum.record;
	EXPECT_NE(rec.stop.value_or("").find("SIGKILLed"), std::string::npos);
	EXPECT_FALSE(rec.error.value_or("").empty());
	EXPECT_EQ(rec.samples, std::nullopt) << "never a figure perf did not give";
	EXPECT_EQ(sum.version, "0.0-fake");
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
			return rp != std::string::npos && rp + 2 < st->size() &&
			       (*st)[rp + 2] == 'Z';
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
void expect_walk_sampled(const PerfSummary &perf)
{
	ASSERT_TRUE(perf.record);
	const PerfRecordPart &rec = *perf.record;
	EXPECT_EQ(rec.error, std::nullopt);
	EXPECT_EQ(rec.event, "cpu-clock");
	EXPECT_GT(rec.samples.value_or(0), 0u);
	ASSERT_TRUE(rec.top_kernel_symbols);
	ASSERT_GT(rec.top_kernel_symbols->size(), 0u);
	bool walk_symbol = false;
	for (const PerfSymbol &sym : *rec.top_kernel_symbols) {
		const std::string &s = sym.symbol;
		if (s.find("clear_refs") != std::string::npos ||
		    s.find("walk_") != std::string::npos || s.find("pte") != std::string::npos)
			walk_symbol = true;
	}
	EXPECT_TRUE(walk_symbol);
}

// perf stat's part: the mmap_lock events counted; ptwalk:* counted when
// ptwalk.ko is loaded, else said to be absent.
void expect_lock_events_counted(const PerfSummary &perf)
{
	ASSERT_TRUE(perf.stat);
	const PerfStatPart &stat = *perf.stat;
	EXPECT_EQ(stat.error, std::nullopt);
	ASSERT_TRUE(stat.events);
	EXPECT_GT(count(*stat.events, "mmap_lock:mmap_lock_start_locking"), 0);
	EXPECT_GT(count(*stat.events, "mmap_lock:mmap_lock_acquire_returned"), 0);
	EXPECT_GT(count(*stat.events, "mmap_lock:mmap_lock_released"), 0);
	EXPECT_TRUE(stat.missing.empty());
	bool ptwalk_said = false;
	for (const PerfUnsupported &u : stat.unsupported)
		if (u.event == "ptwalk:*")
			ptwalk_said = u.reason.find("ptwalk.ko") != std::string::npos;
	if (!ptwalk_said) // counted, not counted or missing: named somewhere
		ptwalk_said = text_of(perf).find("\"ptwalk:") != std::string::npos;
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
	RemoveAll rm{dir};

	PerfSession session;
	PerfOptions o;
	o.workdir = dir;
	ASSERT_TRUE(session.start(scanner, target, o)) << session.why();
	ASSERT_EQ(write(go_w.get(), "g", 1), 1);
	int st = 0;
	ASSERT_TRUE(kids.wait(scanner, 30000, &st)) << "scanner did not finish";
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "scanner status " << st;
	PerfSummary perf = session.stop();
	SCOPED_TRACE(text_of(perf));
	EXPECT_EQ(text_of(session.stop()), text_of(perf)) << "stop() is idempotent";

	EXPECT_FALSE(perf.version.value_or("").empty());
	ASSERT_NO_FATAL_FAILURE(expect_walk_sampled(perf));
	expect_lock_events_counted(perf);
}
