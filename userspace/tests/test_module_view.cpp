// SPDX-License-Identifier: GPL-2.0
#include <gtest/gtest.h>

#include "ptwalk/module_view.hpp"
#include "ptwalk/procfs.hpp"

using namespace ptwalk;

static std::string data(const std::string &name)
{
	auto s = read_file(std::string(PTWALK_TESTDATA) + "/module/" + name, nullptr);
	EXPECT_TRUE(s.has_value()) << name;
	return s.value_or("");
}

TEST(ModuleView, UnescapesComm)
{
	EXPECT_EQ(unescape_comm("my%20monitor%25x"), "my monitor%x");
	EXPECT_EQ(unescape_comm("%3d"), "=");
	EXPECT_EQ(unescape_comm("%00"), "");
	EXPECT_EQ(unescape_comm("trailing%2"), "trailing%2"); // truncated escape kept
	EXPECT_EQ(unescape_comm("plain"), "plain");
}

TEST(ModuleView, ParsesWalksIgnoringUnknownKeys)
{
	auto w = parse_module_walks(data("walks-doc-sample.txt"));
	ASSERT_EQ(w.size(), 3u);
	EXPECT_EQ(w[0].seq, 7u);
	EXPECT_EQ(w[0].kind, "clear_refs");
	EXPECT_EQ(w[0].walker_pid, 812);
	EXPECT_EQ(w[0].target_tgid, 800);
	EXPECT_EQ(w[0].pte_slots, 65536u);
	EXPECT_EQ(w[0].pte_tables, 128u);
	EXPECT_EQ(w[0].lock_mode, "write");
	EXPECT_EQ(w[0].stalls, 2u);
	EXPECT_EQ(w[1].kind, "smaps_rollup");
	EXPECT_EQ(w[2].walker_comm, "my monitor%x");
}

TEST(ModuleView, ParsesStalls)
{
	auto s = parse_module_stalls(data("stalls-doc-sample.txt"));
	ASSERT_EQ(s.size(), 2u);
	EXPECT_EQ(s[0].walk_seq, 7u);
	EXPECT_EQ(s[0].waiter_comm, "victim-mmap");
	EXPECT_EQ(s[0].wait_ns, 6900000u);
	EXPECT_TRUE(s[0].acquired);
	EXPECT_FALSE(s[1].acquired);
}

TEST(ModuleView, KindMapping)
{
	EXPECT_EQ(module_kind("clear_refs_anon"), "clear_refs");
	EXPECT_EQ(module_kind("softdirty"), "clear_refs");
	EXPECT_EQ(module_kind("smaps_rollup"), "smaps_rollup");
	EXPECT_EQ(module_kind("maps"), "");
	EXPECT_EQ(module_kind("numa_maps"), "");
}

TEST(ModuleView, MatchesEachWalkOnceByWalkerKindAndTime)
{
	auto w = parse_module_walks(data("walks-doc-sample.txt"));
	std::vector<WalkSpan> spans = {
		{"clear_refs", 812, 900000, 9100000},     // -> seq 7
		{"smaps_rollup", 812, 19000000, 27000000}, // -> seq 8
		{"clear_refs", 812, 29000000, 32000000},  // seq 9 is another walker
		{"maps", 812, 40000000, 41000000},        // not hooked
		{"clear_refs", 812, 900000, 9100000},     // seq 7 already used
	};
	auto m = match_walks(spans, w, 0);
	EXPECT_EQ(m, (std::vector<int>{0, 1, -1, -1, -1}));
	// outside the span (beyond the slack): no match
	std::vector<WalkSpan> late = {{"clear_refs", 812, 2000000, 8000000}};
	EXPECT_EQ(match_walks(late, w, 0), std::vector<int>{-1});
	EXPECT_EQ(match_walks(late, w, 1000000), std::vector<int>{0});
}

// The module's own recorded output (module/testdata, from a 6.1 VM).
TEST(ModuleView, ParsesRecordedModuleOutput)
{
	const std::string dir = std::string(PTWALK_TESTDATA) + "/../../module/testdata/";
	auto walks_txt = read_file(dir + "walks.txt", nullptr);
	auto stalls_txt = read_file(dir + "stalls.txt", nullptr);
	ASSERT_TRUE(walks_txt && stalls_txt);
	auto w = parse_module_walks(*walks_txt);
	ASSERT_FALSE(w.empty());
	size_t lines = 0;
	for (char c : *walks_txt)
		lines += c == '\n';
	EXPECT_EQ(w.size(), lines); // every line a walk record
	for (auto &x : w) {
		EXPECT_FALSE(module_kind(x.kind).empty()) << x.kind;
		EXPECT_GT(x.walker_pid, 0);
		EXPECT_LE(x.start_ns, x.end_ns);
		EXPECT_LE(x.duration_ns, x.end_ns - x.start_ns + 1);
		EXPECT_GT(x.pte_slots, 0u);
		EXPECT_FALSE(x.lock_mode.empty());
	}
	auto s = parse_module_stalls(*stalls_txt);
	for (auto &x : s) {
		EXPECT_GT(x.wait_ns, 0u);
		EXPECT_TRUE(x.mode == "read" || x.mode == "write") << x.mode;
	}
}
