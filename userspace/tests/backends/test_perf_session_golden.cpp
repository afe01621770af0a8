// SPDX-License-Identifier: GPL-2.0
// The text of PerfSession::stop()'s "perf" member on each path reachable
// without a real perf, byte for byte (testdata/perf/golden/session_*.json):
// not started, perf missing or unusable, and a stand-in perf that fails
// (or succeeds at) each step of record, report and stat. Recorded from the
// untyped session (its "perf" member); the typed one must write the same text: which keys are
// present, in which order ("error" sits where the step that failed put it).
//
// What differs from host to host is replaced before the comparison: the
// session's directory ($DIR), the scanner's pid ($PID), the --control fds,
// the threads of a SIGKILLed stand-in, the notes start() writes about this
// host (and whether tracefs had to be mounted), the tracepoint list (in stat's command) and the tracepoint systems
// this kernel lacks (stat's first "unsupported" entries). The stand-in's
// perf stat counts by position in its -e list ($E0, $E1, ...): the first
// is missing, the second not counted, the others counted 7 (folded into
// one "$En" member).
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <gtest/gtest.h>
#include <regex>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "golden.hpp"
#include "ptwalk/fd.hpp"
#include "ptwalk/perf_session.hpp"
#include "ptwalk/tracefs.hpp"

using namespace ptwalk;

namespace {

// How the stand-in perf behaves, per subcommand.
struct Fake {
	// record: noack (exits at "enable"), ok (exits 0 at SIGINT), hang
	// (ignores SIGINT: SIGKILLed), hang_captured (hang, after perf's
	// "Captured and wrote" line)
	std::string record = "ok";
	bool data = true; // record writes its -o file
	// report: fail (exit 1), table (the recorded no-children report),
	// nosamples (the recorded empty report and its stderr), nocount (the
	// children-mode report: no Samples column)
	std::string report = "table";
	// stat: noack, ok / hang without writing -o, ok_csv / hang_csv
	std::string stat = "ok_csv";
};

std::string script(const Fake &f)
{
	const std::string td = std::string(PTWALK_TESTDATA) + "/perf/";
	std::string report_body =
		f.report == "fail" ? "echo 'fake report fails' >&2; exit 1"
		: f.report == "table"
			? "cat " + td + "report_fields_nochildren_clear_refs.txt; exit 0"
		: f.report == "nosamples"
			? "cat " + td + "report_fields_zero_samples.txt; cat " + td +
				  "report_fields_zero_samples.stderr >&2; exit 0"
			: "cat " + td +
				  "report_fields_children_callchain_clear_refs.txt; "
				  "echo 'fake: no count' >&2; exit 0";
	std::string mode =
		"if [ $cmd = record ]; then mode=" + f.record + "; else mode=" + f.stat + "; fi\n";
	return "#!/bin/bash\n"
	       "case $1 in --version) echo 'perf version 0.0-fake'; exit 0;;\n"
	       "report) " +
	       report_body +
	       ";; esac\n"
	       "cmd=$1; shift\n"
	       "while [ $# -gt 0 ]; do case $1 in -o) out=$2;; -e) evs=$2;; --control) c=$2;;\n"
	       "esac; shift; done\n"
	       "c=${c#fd:}; ctl=${c%,*}; ack=${c#*,}\n" +
	       mode +
	       "if [ $mode = noack ]; then read -r x <&$ctl; echo \"fake $cmd: cannot enable\" >&2;"
	       " exit 1; fi\n" +
	       (f.data ? "[ $cmd = record ] && echo data > \"$out\"\n" : "") +
	       "if [ $mode = ok_csv ] || [ $mode = hang_csv ]; then\n"
	       " IFS=, read -ra E <<< \"$evs\"\n"
	       " { echo '# started on fake'; echo\n"
	       "   for i in \"${!E[@]}\"; do case $i in 0) ;;\n"
	       "     1) echo \"<not counted>,,${E[1]},0,0.00,,\";;\n"
	       "     *) echo \"7,,${E[$i]},1000,100.00,,\";; esac; done\n"
	       "   echo '0.53,msec,cpu-clock,538182,100.00,0.299,CPUs utilized'\n"
	       "   echo 'bogus,,'; } > \"$out\"\n"
	       "fi\n"
	       "[ $mode = hang_captured ] && echo '[ perf record: Captured and wrote 0.001 MB "
	       "perf.data (3 samples) ]' >&2\n"
	       // ready for SIGINT before the ack: stop() may follow at once
	       "sleep 1000 & sp=$!\n"
	       "case $mode in hang*) echo \"fake $cmd: stuck\" >&2; trap '' INT;;\n"
	       " *) trap 'kill $sp; exit 0' INT;; esac\n"
	       "echo ack >&$ack\n"
	       "while :; do wait; done\n";
}

void replace_all(std::string &s, const std::string &from, const std::string &to)
{
	for (size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size())
		s.replace(p, from.size(), to);
}

// The events of stat's command ("-e a,b,c -D"), in order.
std::vector<std::string> stat_events(const std::string &text)
{
	std::smatch m;
	std::vector<std::string> out;
	if (!std::regex_search(text, m, std::regex(" -e ([^ ]+) -D ")))
		return out;
	std::string l = m[1];
	for (size_t p = 0;;) {
		size_t c = l.find(',', p);
		out.push_back(l.substr(p, c == std::string::npos ? c : c - p));
		if (c == std::string::npos)
			return out;
		p = c + 1;
	}
}

std::string normalize(std::string t, const std::string &dir, pid_t pid)
{
	const auto evs = stat_events(t);
	replace_all(t, dir, "$DIR");
	if (!evs.empty()) {
		std::string joined;
		for (const auto &e : evs)
			joined += (joined.empty() ? "" : ",") + e;
		replace_all(t, " -e " + joined + " -D ", " -e $EVENTS -D ");
		for (size_t i = 0; i < evs.size(); ++i)
			replace_all(t, "\"" + evs[i] + "\"", "\"$E" + std::to_string(i) + "\"");
	}
	auto re = [&t](const char *pattern, const char *with) {
		t = std::regex_replace(t, std::regex(pattern), with);
	};
	// the pid where the document names it, never a bare number: a count
	// equal to the pid (8732 samples, CI 11-29) is data, not the pid
	const std::string ps = std::to_string(pid);
	re(("\"pid\":" + ps + "\\b").c_str(), "\"pid\":$$PID");
	re((" -p " + ps + " ").c_str(), " -p $$PID ");
	re(("\\(pid " + ps + "\\)").c_str(), "(pid $$PID)");
	re("fd:[0-9]+,[0-9]+", "fd:$$FD");
	re("\\(threads: [^)]*\\)", "(threads: $$THREADS)");
	re("\"(no hardware PMU|samples come from the cpu-clock|kernel\\.kptr_restrict=|"
	   "kernel\\.perf_event_paranoid=)[^\"]*\"",
	   "\"$$HOSTNOTE\"");
	// a tracefs ptwalk mounted itself (none was mounted)
	re(",\"tracefs: mounted by ptwalk at [^\"]*\"", "");
	re("\"\\$HOSTNOTE\"(,\"\\$HOSTNOTE\")+", "\"$$HOSTNOTE\"");
	// the systems this kernel lacks, listed by start() (first in the array)
	re("\\{\"event\":\"[a-z_]+:\\*\",\"reason\":\"[^\"]*\"\\},?", "");
	re("\"\\$E([2-9]|[1-9][0-9])\":(7|1000),", "\"$$En\":$2,");
	re("(\"\\$En\":(7|1000),)+", "$1");
	return t;
}

struct Session {
	std::string dir;
	pid_t sleeper = -1;
	Session()
	{
		char d[] = "/tmp/ptwalk-perf-golden-XXXXXX";
		if (mkdtemp(d))
			dir = d;
		sleeper = fork();
		if (sleeper == 0) {
			for (;;)
				pause();
		}
	}
	~Session()
	{
		if (sleeper > 0) {
			kill(sleeper, SIGKILL);
			waitpid(sleeper, nullptr, 0);
		}
		if (!dir.empty())
			std::filesystem::remove_all(dir);
	}
	// The "perf" member's text once stop() has run, normalized.
	std::string run(const Fake &f, bool *started)
	{
		const std::string fake = dir + "/perf";
		const std::string s = script(f);
		{
			Fd fd(open(fake.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755));
			EXPECT_TRUE(fd) << fake;
			EXPECT_EQ(write(fd.get(), s.data(), s.size()), ssize_t(s.size()));
		}
		PerfSession p;
		PerfOptions o;
		o.perf = fake;
		o.workdir = dir;
		o.stop_timeout_ms = 1500; // "did not stop within 1500 ms": in the text
		*started = p.start(sleeper, sleeper, o);
		return normalize(perf_text(p.stop()), dir, sleeper);
	}
	static std::string perf_text(const PerfSummary &summary)
	{
		return golden::text_of(summary);
	}
};

void expect_session(const char *name, const Fake &f, bool start_ok = true)
{
	SCOPED_TRACE(name);
	Session s;
	ASSERT_FALSE(s.dir.empty());
	ASSERT_GT(s.sleeper, 0);
	bool started = false;
	std::string text = s.run(f, &started);
	EXPECT_EQ(started, start_ok);
	golden::expect_text(std::string("session_") + name, text);
}

bool root_with_tracepoints()
{
	Tracefs t;
	std::string err;
	return geteuid() == 0 && t.open(&err) &&
	       std::filesystem::exists(t.root() + "/events/mmap_lock");
}

} // namespace

// The pid is replaced where the document names it and nowhere else: a
// sample count that happens to equal the pid stays (CI failed on 11-29 when
// the stand-in's pid was 8732, the count of vm_normal_folio's samples).
TEST(PerfSessionGolden, NormalizeKeepsCountsEqualToThePid)
{
	const std::string in = "{\"pid\":8732,\"command\":\"/d/perf record -p 8732 -o x\","
			       "\"samples\":8732,\"s\":\"the scanner (pid 8732)\",\"n\":87321}";
	EXPECT_EQ(normalize(in, "/d", 8732),
		  "{\"pid\":$PID,\"command\":\"$DIR/perf record -p $PID -o x\","
		  "\"samples\":8732,\"s\":\"the scanner (pid $PID)\",\"n\":87321}");
}

TEST(PerfSessionGolden, Refused)
{
	{
		PerfSession p;
		golden::expect_text("session_not_started", Session::perf_text(p.stop()));
	}
	Session s;
	// a perf whose --version fails (the Debian wrapper without a
	// perf_<version> for this kernel)
	const std::string broken = s.dir + "/broken-perf";
	{
		const std::string text =
			"#!/bin/sh\necho 'no perf_6.18 for this kernel' >&2\nexit 1\n";
		Fd fd(open(broken.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755));
		ASSERT_TRUE(fd) << broken;
		ASSERT_EQ(write(fd.get(), text.data(), text.size()), ssize_t(text.size()));
	}
	for (const std::string &prog : {std::string("/nonexistent/perf"), broken}) {
		PerfSession p;
		PerfOptions o;
		o.perf = prog;
		o.workdir = s.dir;
		EXPECT_FALSE(p.start(s.sleeper, s.sleeper, o));
		golden::expect_text(std::string("session_refused_") +
					    (prog == broken ? "unusable" : "missing"),
				    normalize(Session::perf_text(p.stop()), s.dir, s.sleeper));
	}
}

TEST(PerfSessionGolden, StandInPerfEachStep)
{
	// perf stat needs tracefs and this kernel's mmap_lock tracepoints
	if (!root_with_tracepoints())
		GTEST_SKIP() << "needs root and the mmap_lock tracepoints";
	expect_session("both_noack", {"noack", false, "fail", "noack"}, false);
	expect_session("record_noack_stat_ok_nofile", {"noack", false, "fail", "ok"});
	expect_session("record_hang_nodata_stat_hang_nofile", {"hang", false, "fail", "hang"});
	expect_session("record_ok_nodata_stat_ok_csv", {"ok", false, "fail", "ok_csv"});
	expect_session("record_captured_table_stat_hang_csv",
		       {"hang_captured", true, "table", "hang_csv"});
	expect_session("record_report_fails_stat_noack", {"ok", true, "fail", "noack"});
	expect_session("record_table", {"ok", true, "table", "ok_csv"});
	expect_session("record_nosamples", {"ok", true, "nosamples", "ok_csv"});
	expect_session("record_nocount", {"ok", true, "nocount", "ok_csv"});
	expect_session("record_hang_table", {"hang", true, "table", "ok_csv"});
	expect_session("record_hang_nocount", {"hang", true, "nocount", "ok_csv"});
	expect_session("record_hang_report_fails", {"hang", true, "fail", "ok"});
}
