// SPDX-License-Identifier: GPL-2.0
#include <gtest/gtest.h>

#include "ptwalk/procfs.hpp"
#include "ptwalk/result.hpp"
#include "ptwalk/scanner.hpp"
#include "ptwalk/scenario.hpp"

using namespace ptwalk;

TEST(Scenario, NamesRoundTrip)
{
	for (auto p : {Profile::clear_refs, Profile::clear_refs_anon, Profile::clear_refs_file,
		       Profile::softdirty, Profile::smaps, Profile::smaps_rollup, Profile::maps,
		       Profile::numa_maps, Profile::pagemap, Profile::pagemap_scan,
		       Profile::cadvisor, Profile::wss})
		EXPECT_EQ(parse_profile(name(p)), p);
	for (auto b : {Backing::anon, Backing::thp, Backing::shmem, Backing::file,
		       Backing::hugetlb})
		EXPECT_EQ(parse_backing(name(b)), b);
	for (auto v : {Victim::read, Victim::write, Victim::fault, Victim::mmap})
		EXPECT_EQ(parse_victim(name(v)), v);
	EXPECT_FALSE(parse_profile("clear-refs"));
	EXPECT_FALSE(parse_backing("ANON"));
	EXPECT_FALSE(parse_victim(""));
}

TEST(Scenario, ProfilesDoWhatTheMonitorsDo)
{
	// cAdvisor: read smaps (sum Referenced:), then clear the bits
	EXPECT_EQ(profile_walks(Profile::cadvisor),
		  (std::vector<const char *>{"smaps", "clear_refs"}));
	// wss.pl: clear, sleep, read
	auto w = profile_walks(Profile::wss);
	ASSERT_EQ(w.size(), 2u);
	EXPECT_STREQ(w[0], "clear_refs");
	EXPECT_STREQ(w[1], "smaps");
	EXPECT_STREQ(profile_walks(Profile::smaps_rollup)[0], "smaps_rollup");
}

TEST(Scenario, PagemapScanSupportMatchesKernel)
{
	// the host either supports the ioctl (6.7+) or names the reason
	std::string why = profile_unsupported(Profile::pagemap_scan);
	if (!why.empty()) {
		EXPECT_NE(why.find("PAGEMAP_SCAN"), std::string::npos);
	}
	EXPECT_EQ(profile_unsupported(Profile::clear_refs), "");
}

TEST(Result, SummaryPerKind)
{
	Json r = Json::object();
	r["scenario"]["size_bytes"] = uint64_t(1) << 30;
	for (int i = 0; i < 4; i++) {
		Json w = Json::object();
		w["kind"] = i % 2 ? "smaps" : "clear_refs";
		w["duration_ns"] = uint64_t(1000000 * (i + 1));
		w["ptes"] = 262144;
		w["ns_per_pte"] = double(1000000 * (i + 1)) / 262144;
		r["walks"].push(std::move(w));
	}
	Json bad = Json::object();
	bad["kind"] = "smaps";
	bad["duration_ns"] = 1;
	bad["error"] = "No such process";
	r["walks"].push(std::move(bad));
	summarize_walks(r);
	const Json *cr = r.find("walk_summary")->find("clear_refs");
	ASSERT_NE(cr, nullptr);
	EXPECT_EQ(cr->find("count")->number(), 2.0);
	EXPECT_EQ(cr->find("duration_p50_ns")->number(), 1000000.0);
	EXPECT_EQ(cr->find("duration_max_ns")->number(), 3000000.0);
	EXPECT_DOUBLE_EQ(cr->find("ms_per_gib_p50")->number().value(), 1.0);
	const Json *sm = r.find("walk_summary")->find("smaps");
	EXPECT_EQ(sm->find("count")->number(), 3.0);
	EXPECT_EQ(sm->find("errors")->number(), 1.0);
	EXPECT_EQ(sm->find("duration_max_ns")->number(), 4000000.0);
}

TEST(Result, AtomicWriteLeavesNoTemporary)
{
	char dir[] = "/tmp/ptwalk-test-XXXXXX";
	ASSERT_NE(mkdtemp(dir), nullptr);
	std::string path = std::string(dir) + "/r.json";
	EXPECT_EQ(write_atomically(path, "{}\n"), "");
	EXPECT_EQ(read_file(path, nullptr), "{}\n");
	std::string bad = std::string(dir) + "/missing/r.json";
	EXPECT_NE(write_atomically(bad, "{}"), "");
	EXPECT_EQ(system((std::string("rm -r ") + dir).c_str()), 0);
}
