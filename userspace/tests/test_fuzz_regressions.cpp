// SPDX-License-Identifier: GPL-2.0
// Inputs the fuzz targets (userspace/fuzz) found to break a parser or the
// JSON writer, reduced to the point.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ptwalk/json.hpp"
#include "ptwalk/perf_events.hpp"
#include "ptwalk/perf_session.hpp"
#include "ptwalk/tracefs.hpp"

using namespace ptwalk;

// fuzz_json, fuzz_perf_session: bytes that are not UTF-8 (a comm from
// ptwalk.ko, %XX-unescaped, a path, a symbol) went into the JSON as is, and
// compare/report, reading results as UTF-8, failed (UnicodeDecodeError).
TEST(FuzzRegressions, JsonEscapeKeepsOutputUtf8)
{
	const std::string fffd = "\xef\xbf\xbd";
	EXPECT_EQ(json_escape("a\xff"
			      "b"),
		  "a" + fffd + "b");
	EXPECT_EQ(json_escape("\xc3"), fffd);                                  // cut short
	EXPECT_EQ(json_escape("\xc0\xaf"), fffd + fffd);                       // overlong '/'
	EXPECT_EQ(json_escape("\xed\xa0\x80"), fffd + fffd + fffd);            // a surrogate
	EXPECT_EQ(json_escape("\xf4\x90\x80\x80"), fffd + fffd + fffd + fffd); // > U+10FFFF
	const std::string valid = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \x7f";
	EXPECT_EQ(json_escape(valid), valid);
	Json j = Json::object();
	j["comm"] = std::string("kworker\xff");
	EXPECT_EQ(j.dump(), "{\"comm\":\"kworker" + fffd + "\"}");
}

// fuzz_perf_session: "-.53,msec,cpu-clock,..." cast -530000.0 to uint64_t
// (UB); NaN and huge counts the same.
TEST(FuzzRegressions, PerfStatNegativeOrHugeMsecIsMalformed)
{
	PerfStatSummary s =
		parse_perf_stat_csv("-.53,msec,cpu-clock,538182,100.00,0.299,CPUs utilized\n"
				    "1e300,msec,task-clock,1,100.00,,\n"
				    "nan,msec,task-clock,1,100.00,,\n"
				    "0.53,msec,cpu-clock,538182,100.00,0.299,CPUs utilized\n");
	EXPECT_EQ(s.malformed.size(), 3u);
	const uint64_t *ns = find_count(s.events, "cpu-clock_ns");
	ASSERT_NE(ns, nullptr);
	EXPECT_EQ(*ns, 530000u);
}

// fuzz_perf_session: a percent parses as any double; kernel_percent was
// rounded through int64_t, UB past 9.2e16 %.
TEST(FuzzRegressions, PerfReportHugePercent)
{
	PerfReportSummary r =
		parse_perf_report_symbols("# Overhead\tSymbol\n 1e300%\t[k] foo\n", 15);
	EXPECT_DOUBLE_EQ(r.kernel_percent, 1e300);
	r = parse_perf_report_symbols("# Overhead\tSymbol\n 32.05%\t[k] foo\n", 15);
	EXPECT_DOUBLE_EQ(r.kernel_percent, 32.05);
}

// fuzz_strings: "505900,7-800000401" asked for 8e8 ints (out of memory);
// a range up to INT_MAX overflowed the loop counter (UB).
TEST(FuzzRegressions, CpuListOutOfRange)
{
	EXPECT_TRUE(parse_cpu_list("505900,7-800000401").empty());
	EXPECT_TRUE(parse_cpu_list("0-2147483647").empty());
	EXPECT_TRUE(parse_cpu_list("2147483647").empty());
	EXPECT_EQ(parse_cpu_list("0-3,8191\n"), (std::vector<int>{0, 1, 2, 3, 8191}));
}

// fuzz_tracefs: a type with brackets outside the forms the kernel prints
// ("unsignehar[] memcg_path", no __data_loc) made libtraceevent 1.7.1 leak a
// token. The shape check refuses it; the kernel's forms do not leak.
TEST(FuzzRegressions, FormatThatLeakedInLibtraceevent)
{
	std::ifstream in(std::string(PTWALK_TESTDATA) + "/tracefs/malformed/libtraceevent-leak",
			 std::ios::binary);
	ASSERT_TRUE(in.good());
	std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
	std::string err;
	EXPECT_FALSE(parse_event_format(text, &err));
	EXPECT_NE(err.find("format line 4: not a field line"), std::string::npos) << err;
	// a macro name its tokenizer rewrites ("uct LOCAL_PR_FMT* mm") leaked too
	std::ifstream in2(std::string(PTWALK_TESTDATA) +
				  "/tracefs/malformed/libtraceevent-leak-macro",
			  std::ios::binary);
	ASSERT_TRUE(in2.good());
	text.assign(std::istreambuf_iterator<char>(in2), std::istreambuf_iterator<char>());
	EXPECT_FALSE(parse_event_format(text, &err));
	EXPECT_NE(err.find("format line 5: not a field line"), std::string::npos) << err;
	for (const char *decl :
	     {"char buf[]", "char comm[16]", "__data_loc char[] x", "__rel_loc char[] b",
	      "__data_loc cpumask_t cpumask", "const char *const * argv", "char *name"}) {
		std::string f = "name: e\nID: 5\nformat:\n\tfield:" + std::string(decl) +
				";\toffset:8;\tsize:4;\tsigned:0;\n";
		EXPECT_TRUE(parse_event_format(f, &err)) << decl << ": " << err;
	}
}

// fuzz_tracefs, with libtraceevent 1.7.1 parsing the format unchecked: this
// format (a __data_loc field line cut inside its declaration) made it strcmp
// a NULL. The shape check in front of it refuses the cut line.
TEST(FuzzRegressions, FormatThatCrashedLibtraceevent)
{
	std::ifstream in(std::string(PTWALK_TESTDATA) + "/tracefs/malformed/libtraceevent-null",
			 std::ios::binary);
	ASSERT_TRUE(in.good());
	std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
	ASSERT_EQ(text.size(), 181u);
	std::string err;
	EXPECT_FALSE(parse_event_format(text, &err));
	EXPECT_NE(err.find("format line 1:"), std::string::npos) << err; // "name:d"
	text.replace(0, 6, "name: d");
	EXPECT_FALSE(parse_event_format(text, &err));
	EXPECT_NE(err.find("format line 5: not a field line"), std::string::npos) << err;
}
