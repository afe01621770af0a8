// SPDX-License-Identifier: GPL-2.0
// The text of what parse_perf_report_symbols and parse_perf_stat_csv give,
// byte for byte (testdata/perf/golden): on the outputs recorded on the test
// host (testdata/perf/README) and on edge inputs. Recorded from the untyped
// parsers; the typed ones must write the same text (key order, presence,
// number formatting).
#include <gtest/gtest.h>
#include <string>

#include "golden.hpp"
#include "ptwalk/perf_session.hpp"
#include "ptwalk/procfs.hpp"

using namespace ptwalk;

namespace {

std::string testdata(const char *name)
{
	return golden::perf_testdata(name);
}

// The parsers' results as the result file writes them (compact here).
std::string report(std::string_view text, size_t top)
{
	return golden::text_of(parse_perf_report_symbols(text, top));
}

std::string stat(std::string_view text)
{
	return golden::text_of(parse_perf_stat_csv(text));
}

} // namespace

TEST(PerfOutputGolden, ReportRecorded)
{
	golden::expect_text("report_nochildren_top15",
			    report(testdata("report_fields_nochildren_clear_refs.txt"), 15));
	golden::expect_text("report_nochildren_top3",
			    report(testdata("report_fields_nochildren_clear_refs.txt"), 3));
	golden::expect_text("report_nochildren_top0",
			    report(testdata("report_fields_nochildren_clear_refs.txt"), 0));
	golden::expect_text("report_children_top5",
			    report(testdata("report_fields_children_callchain_clear_refs.txt"), 5));
	golden::expect_text("report_zero_samples",
			    report(testdata("report_fields_zero_samples.txt"), 15));
}

TEST(PerfOutputGolden, ReportEdges)
{
	golden::expect_text("report_empty", report("", 15));
	golden::expect_text("report_no_header", report("    50.00%  [k] do_syscall_64\n", 15));
	golden::expect_text("report_odd_lines",
			    report(testdata("report_fields_odd_lines.txt"), 15));
	// CRLF, lost samples, a Samples column with an unreadable count (no
	// "samples" for that symbol), percents needing 17 digits, a header
	// without an event, a name with a quote and a byte that is not UTF-8
	golden::expect_text("report_crlf_lost_odd_counts", report("# Total Lost Samples: 7\r\n"
								  "# Samples: 4K\r\n"
								  "# Overhead\tSamples\tSymbol\r\n"
								  " 33.333333333%\t 6\t[k] a\"q\r\n"
								  " 0.1%\t x\t[k] b\xff\r\n"
								  " 12.5%\t 3\t[.] user\r\n"
								  " 1e300%\t 1\t[k] huge\r\n",
								  15));
	// a sum too big for a double: kernel_percent is written as null
	golden::expect_text("report_kernel_percent_overflow",
			    report("# Overhead\tSymbol\n 1e308%\t[k] a\n 1e308%\t[k] b\n", 15));
	golden::expect_text("report_samples_column_no_entries",
			    report("# Samples: 0 of event 'cpu-clock'\n"
				   "# Overhead\tSamples\tSymbol\n",
				   15));
	golden::expect_text("report_two_events_first_kept",
			    report("# Samples: 1 of event 'a'\n# Samples: 2 of event 'b'\n"
				   "# Overhead\tSymbol\n 100%\t[k] x\n",
				   15));
}

TEST(PerfOutputGolden, StatRecorded)
{
	golden::expect_text("stat_pids_mmap_lock_tlb",
			    stat(testdata("stat_pids_mmap_lock_tlb.csv")));
	golden::expect_text("stat_no_pmu_not_supported",
			    stat(testdata("stat_no_pmu_not_supported.csv")));
}

TEST(PerfOutputGolden, StatEdges)
{
	golden::expect_text("stat_empty", stat(""));
	golden::expect_text("stat_sums_and_malformed",
			    stat("# started on x\n\n"
				 "3,,tlb:tlb_flush,10,100.00,,\n"
				 "4,,tlb:tlb_flush,10,100.00,,\n"
				 "<not counted>,,mmap_lock:mmap_lock_released,0,0.00,,\n"
				 "<not counted>,,mmap_lock:mmap_lock_released,0,0.00,,\n"
				 "what,,\n"
				 "12x,,foo:bar,1,100,,\n"));
	golden::expect_text("stat_msec_and_odd_counts",
			    stat("-.53,msec,cpu-clock,538182,100.00,0.299,CPUs utilized\n"
				 "1.5,msec,task-clock,12,100.00,,\n"
				 "1e30,msec,big,1,100,,\n"
				 "5,,ev\xfe,1\n"
				 "6,,nrun\n"
				 "7,,ev_ns,x,1\n"
				 "1,,ev,1,1\n"
				 "<not supported>,,\"q\",0,0\n"
				 "just one field\n"
				 "1,,  ,1\n"));
	golden::expect_text("stat_only_unsupported", stat("<not supported>,,cycles,0,100.00,,\n"));
}
