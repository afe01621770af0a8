// SPDX-License-Identifier: GPL-2.0
#include <algorithm>

#include <gtest/gtest.h>

#include "ptwalk/procfs.hpp"
#include "ptwalk/result.hpp"
#include "ptwalk/scanner.hpp"
#include "ptwalk/scenario.hpp"
#include "ptwalk/vma_layout.hpp"

using namespace ptwalk;

TEST(Scenario, NamesRoundTrip)
{
	for (auto p : {Profile::clear_refs, Profile::clear_refs_anon, Profile::clear_refs_file,
		       Profile::softdirty, Profile::smaps, Profile::smaps_rollup, Profile::maps,
		       Profile::numa_maps, Profile::pagemap, Profile::pagemap_scan,
		       Profile::cadvisor, Profile::wss})
		EXPECT_EQ(parse_profile(name(p)), p);
	for (auto b :
	     {Backing::anon, Backing::thp, Backing::shmem, Backing::file, Backing::hugetlb})
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
		  (std::vector<WalkKind>{WalkKind::smaps, WalkKind::clear_refs}));
	// wss.pl: clear, sleep, read
	auto w = profile_walks(Profile::wss);
	ASSERT_EQ(w.size(), 2u);
	EXPECT_EQ(w[0], WalkKind::clear_refs);
	EXPECT_EQ(w[1], WalkKind::smaps);
	EXPECT_EQ(profile_walks(Profile::smaps_rollup)[0], WalkKind::smaps_rollup);
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

// The memory guard's page-table figure: anonymous THP keeps a deposited PTE
// table per huge page, so it costs a 4 KiB mapping's tables plus its PMDs;
// hugetlb only PMD tables.
TEST(Scenario, PageTableBytesCountTheThpDeposit)
{
	Scenario sc;
	sc.size = uint64_t(1) << 30;
	sc.backing = Backing::anon;
	EXPECT_EQ(page_table_bytes(sc), uint64_t(2) << 20);
	sc.backing = Backing::thp;
	EXPECT_EQ(page_table_bytes(sc), (uint64_t(2) << 20) + 4096);
	sc.backing = Backing::hugetlb;
	EXPECT_EQ(page_table_bytes(sc), 4096u);
}

TEST(Result, SummaryPerKind)
{
	std::vector<WalkEntry> walks;
	for (int i = 0; i < 4; i++) {
		WalkEntry w;
		w.kind = i % 2 ? WalkKind::smaps : WalkKind::clear_refs;
		w.duration_ns = uint64_t(1000000 * (i + 1));
		w.size = WalkEntry::Size{262144, 262144, 0, 0};
		w.ns_per_pte = double(1000000 * (i + 1)) / 262144;
		walks.push_back(w);
	}
	WalkEntry bad;
	bad.kind = WalkKind::smaps;
	bad.duration_ns = 1;
	bad.error = "No such process";
	walks.push_back(bad);
	const auto sum = summarize_walks(walks, uint64_t(1) << 30);
	const KindSummary *cr = find_kind(sum, WalkKind::clear_refs);
	ASSERT_NE(cr, nullptr);
	EXPECT_EQ(cr->count, 2u);
	EXPECT_EQ(cr->ptes, 262144u);
	ASSERT_TRUE(cr->duration);
	EXPECT_EQ(cr->duration->p50_ns, 1000000u);
	EXPECT_EQ(cr->duration->max_ns, 3000000u);
	EXPECT_DOUBLE_EQ(cr->duration->ms_per_gib_p50.value(), 1.0);
	EXPECT_FALSE(cr->lock_hold); // no lock-aware backend
	const KindSummary *sm = find_kind(sum, WalkKind::smaps);
	EXPECT_EQ(sm->count, 3u);
	EXPECT_EQ(sm->errors, 1u);
	EXPECT_EQ(sm->duration->max_ns, 4000000u);
	EXPECT_EQ(sum.front().kind, WalkKind::clear_refs); // in the order the walks show them
}

// A whole lock view that saw one walk of 20 take mmap_lock (a 127 us
// look-up under it in a 6.19 maps run) saw 19 take none: the median hold is
// 0, not 127 us, and the per-VMA fact is not contradicted by one look-up. A view
// that lost events may have lost the others' holds: they are not counted.
TEST(Result, WalksWithoutAHoldCountAsNoneWhereOthersHeld)
{
	std::vector<WalkEntry> walks;
	for (int i = 0; i < 20; i++) {
		WalkEntry w;
		w.kind = WalkKind::maps;
		w.duration_ns = 4000000;
		if (i == 7)
			w.lock = WalkEntry::Lock{127000, 0, 1, LockMode::read};
		walks.push_back(w);
	}
	const auto lossy = summarize_walks(walks, uint64_t(256) << 20);
	EXPECT_EQ(find_kind(lossy, WalkKind::maps)->lock_hold->p50_ns, 127000u);
	const auto sum = summarize_walks(walks, uint64_t(256) << 20, true);
	const KindSummary *m = find_kind(sum, WalkKind::maps);
	ASSERT_TRUE(m && m->lock_hold);
	EXPECT_EQ(m->lock_hold->p50_ns, 0u);
	EXPECT_EQ(m->lock_hold->max_ns, 127000u);
	EXPECT_EQ(m->lock_hold->mode, LockMode::read);
	RunResult r;
	r.kernel.uname = KernelInfo::Uname{"6.19.14+deb13-cloud-amd64", "#1 SMP", "x86_64"};
	r.backend = BackendKind::tracepoint;
	r.scenario.size_bytes = uint64_t(256) << 20;
	r.walks = walks;
	r.walk_summary = sum;
	r.kernel_view.stalls = StallsView{};
	r.workload.vma_layout = LayoutSummary{};
	r.workload.vma_layout->vmas = 20;
	r.workload.vma_layout->mapping.vmas = 1;
	r.workload.vma_layout->mapping.largest_bytes = uint64_t(256) << 20;
	add_stall_estimates(r, LayoutSpec{});
	ASSERT_TRUE(r.stall_estimate);
	const auto &ks = r.stall_estimate->kinds;
	const auto it = std::find_if(ks.begin(), ks.end(), [](const StallEstimate::Kind &k) {
		return k.kind == WalkKind::maps;
	});
	ASSERT_NE(it, ks.end());
	EXPECT_EQ(it->lock_unit, LockUnit::vma_lock);
	EXPECT_EQ(it->locking.agrees, true) << it->locking.why;
	// a kind every walk of which held it keeps its median
	for (auto &w : walks)
		w.lock = WalkEntry::Lock{3000000, 0, 1, LockMode::read};
	const auto all = summarize_walks(walks, uint64_t(256) << 20, true);
	EXPECT_EQ(find_kind(all, WalkKind::maps)->lock_hold->p50_ns, 3000000u);
}

TEST(Result, RollupCoverageGapFromItsOwnRss)
{
	const uint64_t MiB = 1 << 20;
	// covered: equal, or short by what the victims may return
	EXPECT_EQ(rollup_coverage_gap(256 * MiB, 256 * MiB), "");
	EXPECT_EQ(rollup_coverage_gap(255 * MiB, 256 * MiB), "");
	EXPECT_EQ(rollup_coverage_gap(300 * MiB, 256 * MiB), "");
	// no reference: cannot tell
	EXPECT_EQ(rollup_coverage_gap(1 * MiB, 0), "");
	// the 256 MiB VMA skipped (the CI case: 1111 PTE slots walked)
	const std::string gap = rollup_coverage_gap(4444 * 1024, 260 * MiB);
	EXPECT_NE(gap.find("skipped VMAs"), std::string::npos) << gap;
	EXPECT_NE(gap.find("4.3 MiB of the workload's 260.0 MiB"), std::string::npos) << gap;
	EXPECT_NE(rollup_coverage_gap(250 * MiB, 256 * MiB), "");
}

TEST(Result, IncompleteWalksAreCountedButLeftOutOfTheFigures)
{
	RunResult r;
	r.scenario.size_bytes = uint64_t(1) << 30;
	for (int i = 0; i < 3; i++) {
		WalkEntry w;
		w.kind = WalkKind::smaps_rollup;
		w.duration_ns = uint64_t(10000000 * (i + 1));
		w.ns_per_pte = double(10000000 * (i + 1)) / 262144;
		w.lock = WalkEntry::Lock{uint64_t(9000000 * (i + 1)), 0, 1, LockMode::read};
		w.stalls = WalkEntry::Stalls{1, 1000000};
		r.walks.push_back(w);
	}
	WalkEntry skipped;
	skipped.kind = WalkKind::smaps_rollup;
	skipped.duration_ns = 100000;
	skipped.ns_per_pte = 0.4;
	skipped.lock = WalkEntry::Lock{50000, 0, 2, LockMode::read};
	skipped.stalls = WalkEntry::Stalls{1, 7000000};
	skipped.incomplete = "smaps_rollup reported Rss 4.3 MiB of the workload's 260.0 MiB";
	r.walks.push_back(skipped);
	r.walk_summary = summarize_walks(r.walks, r.scenario.size_bytes);
	const KindSummary *s = find_kind(r.walk_summary, WalkKind::smaps_rollup);
	ASSERT_NE(s, nullptr);
	EXPECT_EQ(s->count, 4u);
	EXPECT_EQ(s->incomplete, 1u);
	EXPECT_EQ(s->duration->min_ns, 10000000u);
	EXPECT_EQ(s->duration->p50_ns, 20000000u);
	EXPECT_GT(s->ns_per_pte->min, 1.0);
	EXPECT_EQ(s->lock_hold->max_ns, 27000000u);
	// the stall it caused is real and stays
	EXPECT_EQ(s->max_stall_ns, 7000000u);

	char *buf = nullptr;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	print_table(r, f);
	fclose(f);
	const std::string table(buf, len);
	free(buf);
	EXPECT_NE(table.find("smaps_rollup: 1 of 4 walks skipped VMAs"), std::string::npos)
		<< table;
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

TEST(Scenario, FaultRegionPlacement)
{
	for (auto f : {FaultRegion::any, FaultRegion::below, FaultRegion::above})
		EXPECT_EQ(parse_fault_region(name(f)), f);
	EXPECT_FALSE(parse_fault_region("under"));
	const uint64_t M = 1ull << 20, base = 0x7f0000100000ull, len = 64 * M + 4096;
	const uint64_t bytes = 1 * M;
	EXPECT_EQ(fault_region_address(FaultRegion::any, base, len, bytes), 0u);
	// above: past the mapping's end, 2 MiB aligned, a gap of 2 MiB or more
	const uint64_t up = fault_region_address(FaultRegion::above, base, len, bytes);
	EXPECT_EQ(up % (2 * M), 0u);
	EXPECT_GE(up, base + len + 2 * M);
	EXPECT_LT(up, base + len + 4 * M);
	// below: ends at least 2 MiB under the mapping's start, 2 MiB aligned
	const uint64_t down = fault_region_address(FaultRegion::below, base, len, bytes);
	EXPECT_EQ(down % (2 * M), 0u);
	EXPECT_LE(down + 2 * M + 2 * M, base); // span rounded to 2 MiB, plus the gap
	EXPECT_GE(down + 2 * M + 4 * M, base);
	// no room under a mapping near address 0
	EXPECT_EQ(fault_region_address(FaultRegion::below, 4 * M, len, bytes), 0u);
}
