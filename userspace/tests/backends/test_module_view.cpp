// SPDX-License-Identifier: GPL-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <tuple>

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
	EXPECT_EQ(w[0].kind, WalkKind::clear_refs);
	EXPECT_EQ(w[0].walker_pid, 812);
	EXPECT_EQ(w[0].target_tgid, 800);
	EXPECT_EQ(w[0].pte_slots, 65536u);
	EXPECT_EQ(w[0].pte_tables, 128u);
	EXPECT_EQ(w[0].lock_mode, LockMode::write);
	EXPECT_EQ(w[0].stalls, 2u);
	EXPECT_EQ(w[1].kind, WalkKind::smaps_rollup);
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

// The split of each stall (module keys walker_held_ns, others_held_ns,
// split_complete): read only from a complete split that fits in the wait.
TEST(ModuleView, ParsesStallSplit)
{
	auto s = parse_module_stalls(data("stalls-split.txt"));
	ASSERT_EQ(s.size(), 6u);
	EXPECT_EQ(s[0].walker_held_ns, 6000000u);
	EXPECT_EQ(s[0].others_held_ns, 500000u);
	EXPECT_FALSE(s[1].walker_held_ns); // split_complete=0
	EXPECT_FALSE(s[1].others_held_ns);
	EXPECT_EQ(s[2].walker_held_ns, 2500000u);
	EXPECT_EQ(s[2].others_held_ns, 300000u);
	EXPECT_EQ(s[3].walker_held_ns, 1500000u);
	EXPECT_EQ(s[3].others_held_ns, 0u);
	EXPECT_FALSE(s[4].walker_held_ns); // 1400000 + 200000 > wait 1500000
	EXPECT_FALSE(s[5].walker_held_ns); // a module without the keys
	// the doc sample predates the split
	for (auto &x : parse_module_stalls(data("stalls-doc-sample.txt")))
		EXPECT_FALSE(x.walker_held_ns || x.others_held_ns);
}

TEST(ModuleView, KernelViewSplitsStalls)
{
	ModuleRecords rec;
	for (auto &w : parse_module_walks(data("walks-doc-sample.txt")))
		rec.walks.emplace(w.seq, w);
	for (auto &x : parse_module_stalls(data("stalls-split.txt")))
		rec.stalls.emplace(std::make_tuple(x.walk_seq, x.waiter_pid, x.start_ns), x);
	rec.walker = 812;
	rec.target = 800;
	rec.threads = {{805, Victim::mmap}, {806, Victim::fault}, {807, Victim::fault}};
	const std::vector<WalkSpan> spans = {{WalkKind::clear_refs, 812, 900000, 9100000},
					     {WalkKind::smaps_rollup, 812, 19900000, 26100000}};
	KernelView kv;
	auto views = module_kernel_view(spans, rec, kv);
	ASSERT_EQ(views.size(), 2u);
	EXPECT_EQ(views[0].stalls, 3u);
	EXPECT_EQ(views[0].max_stall_ns, 6900000u);
	EXPECT_EQ(views[0].max_stall_walker_held_ns, 6000000u);
	EXPECT_EQ(views[1].stalls, 3u);
	EXPECT_EQ(views[1].max_stall_walker_held_ns, 1500000u);

	ASSERT_TRUE(kv.stalls);
	const auto &list = kv.stalls->list; // longest first
	ASSERT_EQ(list.size(), 6u);
	EXPECT_EQ(list[0].wait_ns, 6900000u);
	EXPECT_EQ(list[0].walker_held_ns, 6000000u);
	EXPECT_EQ(list[0].others_held_ns, 500000u);
	EXPECT_EQ(list[0].free_ns, 400000u);
	EXPECT_EQ(list[1].wait_ns, 5000000u); // split incomplete: all three unset
	EXPECT_FALSE(list[1].walker_held_ns || list[1].others_held_ns || list[1].free_ns);
	EXPECT_EQ(list[2].free_ns, 200000u);
	EXPECT_EQ(list[3].wait_ns, 2000000u);
	EXPECT_EQ(list[3].free_ns, 500000u);
	EXPECT_FALSE(list[4].free_ns);
	EXPECT_FALSE(list[5].free_ns);
	for (auto &k : list) {
		EXPECT_FALSE(k.walker_off_cpu_ns); // the module has no sched events
		if (k.free_ns) {
			EXPECT_EQ(*k.walker_held_ns + *k.others_held_ns + *k.free_ns, k.wait_ns);
		}
	}

	std::map<std::string, const ThreadWaits *> by;
	for (auto &t : kv.stalls->threads)
		by[waiter_name(t.waiter)] = &t;
	ASSERT_TRUE(by.count("mmap") && by.count("fault") && by.count("victim-x") &&
		    by.count("victim-y"));
	EXPECT_EQ(by["mmap"]->max_attributed_walker_held_ns, 6000000u);
	EXPECT_EQ(by["fault"]->max_attributed_walker_held_ns, 2500000u); // 806 unsplit
	EXPECT_FALSE(by["victim-x"]->max_attributed_walker_held_ns);
	EXPECT_FALSE(by["victim-y"]->max_attributed_walker_held_ns);

	// into the result JSON by the lead's names
	const std::string j = Json(Json::Value(kv)).dump();
	EXPECT_NE(j.find("\"walker_held_ns\":6000000,\"others_held_ns\":500000,\"free_ns\":400000"),
		  std::string::npos)
		<< j;
	EXPECT_NE(j.find("\"max_attributed_walker_held_ns\":6000000"), std::string::npos) << j;
}

// The module records every waiter on the target's mm: a stall of a thread
// ptwalk did not register names the waiter by its comm, never as a victim.
TEST(ModuleView, NamesAnUnregisteredWaiterByItsComm)
{
	ModuleRecords rec;
	for (auto &w : parse_module_walks(data("walks-doc-sample.txt")))
		rec.walks.emplace(w.seq, w);
	for (auto &x : parse_module_stalls(
		     "walk_seq=7 kind=clear_refs waiter_pid=805 waiter_comm=victim-mmap "
		     "target_tgid=800 start_ns=2000000 wait_ns=3000000 mode=write "
		     "walker_pid=812 acquired=1\n"
		     "walk_seq=7 kind=clear_refs waiter_pid=801 waiter_comm=ptwalk-workload "
		     "target_tgid=800 start_ns=2500000 wait_ns=2000000 mode=read "
		     "walker_pid=812 acquired=1\n"))
		rec.stalls.emplace(std::make_tuple(x.walk_seq, x.waiter_pid, x.start_ns), x);
	rec.walker = 812;
	rec.target = 800;
	rec.threads = {{805, Victim::mmap}};
	KernelView kv;
	module_kernel_view({{WalkKind::clear_refs, 812, 900000, 9100000}}, rec, kv);
	ASSERT_TRUE(kv.stalls);
	const auto &list = kv.stalls->list;
	ASSERT_EQ(list.size(), 2u);
	EXPECT_EQ(list[0].waiter.victim, Victim::mmap);
	EXPECT_FALSE(list[1].waiter.victim);
	EXPECT_EQ(list[1].waiter.comm, "ptwalk-workload");

	const Json::Value j(kv);
	EXPECT_EQ(j["stalls"][0]["victim"], "mmap");
	EXPECT_FALSE(j["stalls"][0].contains("waiter_comm"));
	EXPECT_EQ(j["stalls"][1]["waiter_comm"], "ptwalk-workload");
	EXPECT_FALSE(j["stalls"][1].contains("victim"));
	// the member where "victim" stands, and the threads by victim or comm
	EXPECT_EQ(j["stalls"][1].dump().substr(0, 52),
		  "{\"tid\":801,\"waiter_comm\":\"ptwalk-workload\",\"start_ns");
	std::vector<std::string> threads;
	for (const auto &[k, v] : j["threads"].items())
		threads.push_back(k);
	EXPECT_EQ(threads, (std::vector<std::string>{"mmap", "ptwalk-workload"}));
}

// Kinds and modes become enums where the records are read: a record of a
// kind the module does not have is left out, a mode it does not name is none.
TEST(ModuleView, RecordsOfUnknownKindsAreLeftOut)
{
	const char *text = "seq=1 kind=clear_refs walker_pid=5 lock_mode=mixed lock_hold_ns=9\n"
			   "seq=2 kind=maps walker_pid=5 lock_mode=read\n"
			   "seq=3 kind=nope walker_pid=5 lock_mode=read\n"
			   "seq=4 kind=smaps walker_pid=5 lock_mode=bogus\n";
	auto w = parse_module_walks(text);
	ASSERT_EQ(w.size(), 2u);
	EXPECT_EQ(w[0].kind, WalkKind::clear_refs);
	EXPECT_EQ(w[0].lock_mode, LockMode::mixed);
	EXPECT_EQ(w[1].seq, 4u);
	EXPECT_EQ(w[1].kind, WalkKind::smaps);
	EXPECT_EQ(w[1].lock_mode, LockMode::none);
	auto s = parse_module_stalls("walk_seq=1 kind=pagemap mode=write walker_mode=read\n"
				     "walk_seq=2 kind=numa_maps mode=write walker_mode=read\n");
	ASSERT_EQ(s.size(), 1u);
	EXPECT_EQ(s[0].kind, WalkKind::pagemap);
	EXPECT_EQ(s[0].mode, LockMode::write);
	EXPECT_EQ(s[0].walker_mode, LockMode::read);
}

TEST(ModuleView, KindMapping)
{
	EXPECT_EQ(module_kind(WalkKind::clear_refs_anon), WalkKind::clear_refs);
	EXPECT_EQ(module_kind(WalkKind::softdirty), WalkKind::clear_refs);
	EXPECT_EQ(module_kind(WalkKind::smaps_rollup), WalkKind::smaps_rollup);
	EXPECT_EQ(module_kind(WalkKind::maps), std::nullopt);
	EXPECT_EQ(module_kind(WalkKind::numa_maps), std::nullopt);
}

TEST(ModuleView, MatchesEachWalkOnceByWalkerKindAndTime)
{
	auto w = parse_module_walks(data("walks-doc-sample.txt"));
	std::vector<WalkSpan> spans = {
		{WalkKind::clear_refs, 812, 900000, 9100000},      // -> seq 7
		{WalkKind::smaps_rollup, 812, 19000000, 27000000}, // -> seq 8
		{WalkKind::clear_refs, 812, 29000000, 32000000},   // seq 9 is another walker
		{WalkKind::maps, 812, 40000000, 41000000},         // not hooked
		{WalkKind::clear_refs, 812, 900000, 9100000},      // seq 7 already used
	};
	auto m = match_walks(spans, w, 0);
	EXPECT_EQ(m, (std::vector<int>{0, 1, -1, -1, -1}));
	// outside the span (beyond the slack): no match
	std::vector<WalkSpan> late = {{WalkKind::clear_refs, 812, 2000000, 8000000}};
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
		EXPECT_EQ(module_kind(x.kind), x.kind) << name(x.kind);
		EXPECT_GT(x.walker_pid, 0);
		EXPECT_LE(x.start_ns, x.end_ns);
		EXPECT_LE(x.duration_ns, x.end_ns - x.start_ns + 1);
		EXPECT_GT(x.pte_slots, 0u);
		EXPECT_EQ(x.lock_mode == LockMode::none, x.lock_hold_ns == 0) << x.seq;
	}
	auto s = parse_module_stalls(*stalls_txt);
	for (auto &x : s) {
		EXPECT_GT(x.wait_ns, 0u);
		EXPECT_TRUE(x.mode == LockMode::read || x.mode == LockMode::write) << name(x.mode);
	}
}

// The module's kernel_view from its recorded records, text for text: the
// golden text is the one the view wrote when it was still assembled by keys.
TEST(ModuleView, KernelViewFromRecordedRecords)
{
	const std::string dir = std::string(PTWALK_TESTDATA) + "/../../module/testdata/";
	ModuleRecords rec;
	for (auto &w : parse_module_walks(read_file(dir + "walks.txt", nullptr).value_or("")))
		rec.walks.emplace(w.seq, w);
	for (auto &x : parse_module_stalls(read_file(dir + "stalls.txt", nullptr).value_or("")))
		rec.stalls.emplace(std::make_tuple(x.walk_seq, x.waiter_pid, x.start_ns), x);
	rec.hooks = parse_records(read_file(dir + "hooks.txt", nullptr).value_or(""));
	rec.counters_text = read_file(dir + "counters.txt", nullptr).value_or("");
	rec.walker = 98;
	rec.target = 97;
	rec.self = 96; // its smaps_rollup of 97 is the reference walk
	rec.threads = {{100, Victim::mmap}};
	const std::vector<WalkSpan> spans = {{WalkKind::clear_refs, 98, 3971474000, 4132208000},
					     {WalkKind::maps, 98, 4132300000, 4132600000},
					     {WalkKind::clear_refs, 98, 4132697000, 4275779000},
					     {WalkKind::smaps, 98, 4275800000, 4276000000},
					     {WalkKind::clear_refs, 98, 4280773000, 4423559000}};
	KernelView kv;
	auto views = module_kernel_view(spans, rec, kv);
	ASSERT_EQ(views.size(), spans.size());
	EXPECT_TRUE(views[0].has_module);
	EXPECT_FALSE(views[1].seen);
	EXPECT_EQ(views[4].stalls, 1u);
	EXPECT_EQ(Json(Json::Value(kv)).dump(), data("kernel_view-recorded.json"));
	// and with no records at all
	KernelView empty;
	module_kernel_view(spans, ModuleRecords{}, empty);
	EXPECT_EQ(Json(Json::Value(empty)).dump(),
		  "{\"stalls_total\":0,\"stalls_complete_above_ns\":1000000,"
		  "\"source\":\"ptwalk.ko debugfs (walks, stalls, vma_waits, counters, hooks)\","
		  "\"walks_matched\":0,\"walks_hookable\":4,\"module_walks_unmatched\":0,"
		  "\"threads\":{},\"stalls\":[],\"hooks\":[],\"nmissed\":0,\"counters\":{},"
		  "\"vma_locks\":{\"available\":false,\"why\":\"this ptwalk.ko has no VMA-lock "
		  "view (no __vma_start_write hook): rebuild it\"}}");
}

namespace {

// one record with every key of a contract list: value "0" (a name for the
// string keys), key `odd` set to something else
template <size_t N>
std::string contract_record(const std::array<std::string_view, N> &keys, std::string_view odd)
{
	std::string line;
	for (auto k : keys) {
		const bool name = k == "kind" || k.ends_with("mode") || k.ends_with("_comm") ||
				  k == "hist";
		std::string v = name ? (k == odd ? "write" : "read") : (k == odd ? "7" : "0");
		if (k == "kind")
			v = k == odd ? "smaps" : "clear_refs";
		line += (line.empty() ? "" : " ") + std::string(k) + "=" + v;
	}
	return line + "\n";
}

std::string fields(const ModuleWalk &w)
{
	char b[512];
	snprintf(b, sizeof(b),
		 "%llu %s %d %s %d %llu %llu %llu %llu %d %llu %llu %llu %llu %llu %s "
		 "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
		 (unsigned long long)w.seq, name(w.kind), w.walker_pid, w.walker_comm.c_str(),
		 w.target_tgid, (unsigned long long)w.start_ns, (unsigned long long)w.end_ns,
		 (unsigned long long)w.call_ns, (unsigned long long)w.walk_ns, int(w.walk_timed),
		 (unsigned long long)w.pte_tables, (unsigned long long)w.pte_slots,
		 (unsigned long long)w.pte_revisits, (unsigned long long)w.lock_hold_ns,
		 (unsigned long long)w.lock_holds, name(w.lock_mode),
		 (unsigned long long)w.tlb_flushes, (unsigned long long)w.tlb_ipis,
		 (unsigned long long)w.calls, (unsigned long long)w.stalls,
		 (unsigned long long)w.lock_wait_ns, (unsigned long long)w.probe_missed,
		 (unsigned long long)w.vma_locks, (unsigned long long)w.vma_hold_ns,
		 (unsigned long long)w.vma_hold_max_ns, (unsigned long long)w.vma_fallbacks,
		 (unsigned long long)w.pte_tables_mmap_locked);
	return b;
}

std::string fields(const ModuleVmaWait &v)
{
	char b[320];
	snprintf(b, sizeof(b), "%llu %s %d %s %d %llu %llu %llu %d %d %d",
		 (unsigned long long)v.walk_seq, name(v.kind), v.writer_pid, v.writer_comm.c_str(),
		 v.target_tgid, (unsigned long long)v.start_ns, (unsigned long long)v.wait_ns,
		 (unsigned long long)v.walker_held_ns, v.walker_pid, int(v.behind_walk),
		 int(v.detach));
	return b;
}

// a contract record with key k set to v
std::string with(std::string r, std::string_view k, std::string_view v)
{
	const std::string key = " " + std::string(k) + "=";
	const size_t p = r.find(key);
	if (p == std::string::npos)
		return r;
	const size_t e = r.find_first_of(" \n", p + key.size());
	return r.replace(p + key.size(), e - p - key.size(), v);
}

std::string fields(const ModuleStall &s)
{
	char b[320];
	snprintf(b, sizeof(b), "%llu %s %d %s %d %llu %llu %s %d %s %d %lld %lld %lld %lld %lld %d",
		 (unsigned long long)s.walk_seq, name(s.kind), s.waiter_pid, s.waiter_comm.c_str(),
		 s.target_tgid, (unsigned long long)s.start_ns, (unsigned long long)s.wait_ns,
		 name(s.mode), s.walker_pid, name(s.walker_mode), int(s.acquired),
		 s.walker_held_ns ? (long long)*s.walker_held_ns : -1LL,
		 s.others_held_ns ? (long long)*s.others_held_ns : -1LL,
		 s.clock_spread_ns ? (long long)*s.clock_spread_ns : -1LL,
		 s.vma_chain_ns ? (long long)*s.vma_chain_ns : -1LL,
		 s.late_hold_ns ? (long long)*s.late_hold_ns : -1LL, int(s.at_release));
	return b;
}

} // namespace

// module/ptwalk_abi.h against this reader: every key the module prints is
// read into a field (changing its value changes what is parsed)
TEST(ModuleAbi, EveryWalkKeyIsRead)
{
	auto base = parse_module_walks(contract_record(contract::kWalkKeys, ""));
	ASSERT_EQ(base.size(), 1u);
	for (auto k : contract::kWalkKeys) {
		auto w = parse_module_walks(contract_record(contract::kWalkKeys, k));
		ASSERT_EQ(w.size(), 1u) << k;
		EXPECT_NE(fields(w[0]), fields(base[0])) << "walk key " << k << " is not read";
	}
}

TEST(ModuleAbi, EveryStallKeyIsRead)
{
	// a complete split of a 100 ns wait, so that each part is read (none
	// for late_hold_ns and at_release, read only without one)
	auto rec = [](std::string_view odd, bool split = true) {
		std::string r = contract_record(contract::kStallKeys, odd);
		auto set = [&](std::string_view k, std::string_view v) {
			const std::string key = " " + std::string(k) + "=";
			const size_t p = r.find(key);
			if (p == std::string::npos)
				return;
			const size_t e = r.find_first_of(" \n", p + key.size());
			r.replace(p + key.size(), e - p - key.size(), v);
		};
		if (odd != "wait_ns")
			set("wait_ns", "100");
		set("split_complete", odd == "split_complete" || !split ? "0" : "1");
		return r;
	};
	auto base = parse_module_stalls(rec(""));
	ASSERT_EQ(base.size(), 1u);
	ASSERT_TRUE(base[0].walker_held_ns);
	for (auto k : contract::kStallKeys) {
		const bool split = k != "late_hold_ns" && k != "at_release";
		auto s = parse_module_stalls(rec(k, split));
		ASSERT_EQ(s.size(), 1u) << k;
		EXPECT_NE(fields(s[0]),
			  fields(split ? base[0] : parse_module_stalls(rec("", false))[0]))
			<< "stall key " << k << " is not read";
	}
}

TEST(ModuleAbi, EveryVmaWaitKeyIsRead)
{
	// a 100 ns wait behind the walk: each flag read as 0 and 1
	auto rec = [](std::string_view odd) {
		std::string r = contract_record(contract::kVmaWaitKeys, odd);
		if (odd != "wait_ns")
			r = with(r, "wait_ns", "100");
		return with(r, "behind_walk", odd == "behind_walk" ? "0" : "1");
	};
	auto base = parse_module_vma_waits(rec(""));
	ASSERT_EQ(base.size(), 1u);
	for (auto k : contract::kVmaWaitKeys) {
		auto r = rec(k);
		if (k == "detach")
			r = with(r, "detach", "1");
		auto v = parse_module_vma_waits(r);
		ASSERT_EQ(v.size(), 1u) << k;
		EXPECT_NE(fields(v[0]), fields(base[0])) << "vma wait key " << k << " is not read";
	}
	// a walker-held part beyond the wait, or without the walk, is no record
	EXPECT_TRUE(parse_module_vma_waits(with(rec(""), "walker_held_ns", "101")).empty());
	EXPECT_TRUE(parse_module_vma_waits(
			    with(with(rec(""), "walker_held_ns", "5"), "behind_walk", "0"))
			    .empty());
}

TEST(ModuleAbi, KindsAndModesAreKnown)
{
	// every kind the module records is one a scanner walk maps to
	for (auto k : contract::kKinds) {
		const auto w = parse_walk_kind(k);
		ASSERT_TRUE(w) << k;
		EXPECT_EQ(module_kind(*w), w) << k;
	}
	// the reader's "mixed" (read+write) is a mode the module prints
	EXPECT_NE(std::find(contract::kLockModes.begin(), contract::kLockModes.end(), "mixed"),
		  contract::kLockModes.end());
	EXPECT_STREQ(kModuleDir, "/sys/kernel/debug/ptwalk");
}

namespace {

Record hook(const char *sym, const char *status)
{
	return {{"hook", sym}, {"type", "kretprobe"}, {"status", status}, {"err", "0"}};
}

ModuleRecords vma_records(const char *status)
{
	ModuleRecords rec;
	rec.walker = 98;
	rec.target = 97;
	rec.threads = {{100, Victim::mmap}, {101, Victim::vma}};
	ModuleWalk m;
	m.seq = 1;
	m.kind = WalkKind::smaps;
	m.walker_pid = 98;
	m.target_tgid = 97;
	m.start_ns = 1000;
	m.end_ns = 100000;
	m.vma_locks = 3;
	m.vma_hold_ns = 90000;
	m.vma_hold_max_ns = 50000;
	rec.walks[1] = m;
	ModuleStall st;
	st.walk_seq = 1;
	st.kind = WalkKind::smaps;
	st.waiter_pid = 100;
	st.start_ns = 20000;
	st.wait_ns = 30000;
	st.walker_held_ns = 0;
	st.others_held_ns = 25000;
	if (std::string_view(status) == "attached")
		st.vma_chain_ns = 25000; // the module prints it where the view is
	rec.stalls[{1, 100, 20000}] = st;
	// behind the walk: its walk-held part [15000, 50000) covers the
	// stall's [20000, 50000); the chain is capped by others_held
	rec.vma_waits[{1, 101, 15000}] = {1,     WalkKind::smaps, "victim-vma", 101,  97,   98,
					  15000, 40000,           35000,        true, false};
	rec.vma_waits[{1, 101, 60000}] = {
		1, WalkKind::smaps, "victim-vma", 101, 97, 55, 60000, 20000, 0, false, false};
	// another walker's walk: not this run's
	rec.vma_waits[{99, 101, 70000}] = {99,    WalkKind::smaps, "victim-vma", 101,  97,   77,
					   70000, 90000,           90000,        true, false};
	for (const char *sym : {"__vma_start_write", "lock_next_vma"})
		rec.hooks.push_back(hook(sym, status));
	return rec;
}

} // namespace

// The VMA-lock view of a run: the walk's VMA read locks on its view, the
// writers behind it listed, and the part of an mmap_lock stall that a
// writer waiting for the walk's VMA held is the walk's (the chain).
TEST(ModuleVmaView, WaitsHoldsAndTheChain)
{
	const std::vector<WalkSpan> spans = {{WalkKind::smaps, 98, 900, 100100}};
	KernelView kv;
	auto views = module_kernel_view(spans, vma_records("attached"), kv);
	ASSERT_TRUE(kv.vma_locks);
	const VmaLockView &v = *kv.vma_locks;
	EXPECT_TRUE(v.available);
	EXPECT_EQ(v.waits_behind_walk, 1u);
	EXPECT_EQ(v.waits_not_behind, 1u);
	EXPECT_EQ(v.max_wait_ns, 40000u);
	EXPECT_EQ(v.max_walker_held_ns, 35000u);
	ASSERT_EQ(v.list.size(), 1u);
	EXPECT_EQ(v.list[0].writer.victim, Victim::vma);
	ASSERT_TRUE(views[0].vma);
	EXPECT_EQ(views[0].vma->locks, 3u);
	EXPECT_EQ(views[0].vma->hold_max_ns, 50000u);
	ASSERT_EQ(kv.stalls->list.size(), 1u);
	EXPECT_EQ(kv.stalls->list[0].vma_chain_ns, 25000u);
	EXPECT_EQ(v.chain_stalls, 1u);
	EXPECT_EQ(v.chain_ns, 25000u);
	const std::string j = Json(Json::Value(kv)).dump();
	EXPECT_NE(j.find("\"waits\":[{\"tid\":101,\"victim\":\"vma\","), std::string::npos) << j;
	EXPECT_NE(j.find("\"vma_chain_ns\":25000"), std::string::npos) << j;
}

// The module's chain is a part of the stall's others-held part; a record
// whose chain is larger is not split by it.
TEST(ModuleVmaView, ChainWithinOthersHeld)
{
	const std::string rec = "walk_seq=1 kind=smaps waiter_pid=100 waiter_comm=victim-mmap "
				"target_tgid=97 start_ns=20000 wait_ns=30000 mode=write "
				"walker_pid=98 walker_mode=read acquired=1 walker_held_ns=0 "
				"others_held_ns=25000 split_complete=1 clock_spread_ns=10 "
				"vma_chain_ns=";
	auto ok = parse_module_stalls(rec + "24000\n");
	ASSERT_EQ(ok.size(), 1u);
	EXPECT_EQ(ok[0].vma_chain_ns, 24000u);
	auto over = parse_module_stalls(rec + "26000\n");
	ASSERT_EQ(over.size(), 1u);
	EXPECT_FALSE(over[0].vma_chain_ns);
	// a split the module reports incomplete (a hold it did not see) keeps
	// its chain, within the wait: the chain is the writer's VMA wait's
	std::string inc = rec;
	inc.replace(inc.find("split_complete=1"), 16, "split_complete=0");
	auto part = parse_module_stalls(inc + "26000\n");
	ASSERT_EQ(part.size(), 1u);
	EXPECT_FALSE(part[0].others_held_ns);
	EXPECT_EQ(part[0].vma_chain_ns, 26000u);
	EXPECT_FALSE(parse_module_stalls(inc + "30001\n")[0].vma_chain_ns);
}

// Where the module could not build or attach the view, it says why and
// reports no figure: not a zero.
TEST(ModuleVmaView, AbsentViewSaysWhy)
{
	const std::vector<WalkSpan> spans = {{WalkKind::smaps, 98, 900, 100100}};
	KernelView kv;
	auto views = module_kernel_view(spans, vma_records("disabled"), kv);
	ASSERT_TRUE(kv.vma_locks);
	EXPECT_FALSE(kv.vma_locks->available);
	EXPECT_NE(kv.vma_locks->why->find("not reference counts"), std::string::npos);
	EXPECT_FALSE(views[0].vma);
	EXPECT_FALSE(kv.stalls->list[0].vma_chain_ns);
	const std::string j = Json(Json::Value(kv)).dump();
	EXPECT_NE(j.find("\"vma_locks\":{\"available\":false,\"why\":"), std::string::npos) << j;
	EXPECT_EQ(j.find("\"waits\":["), std::string::npos) << j;
	auto old = vma_records("attached");
	old.hooks.clear();
	module_kernel_view(spans, old, kv);
	EXPECT_NE(kv.vma_locks->why->find("no VMA-lock view"), std::string::npos);
}

// A PAGEMAP_SCAN walk is an ioctl per output buffer, each a walk record of
// the module's: the records of the walker's scan join the matched one, and
// a stall attributed to any of them is the scan's (before, only one ioctl
// matched and its stalls alone were kept: recall 0 on 6.12 and 7.3).
TEST(ModuleView, CallsOfOneScanJoin)
{
	ModuleRecords rec;
	rec.walker = 98;
	rec.target = 97;
	rec.threads = {{100, Victim::mmap}};
	for (uint64_t i = 1; i <= 3; i++) {
		ModuleWalk m;
		m.seq = i;
		m.kind = WalkKind::pagemap_scan;
		m.walker_pid = 98;
		m.target_tgid = 97;
		m.start_ns = 1000000 * i;
		m.end_ns = 1000000 * i + 500000;
		m.call_ns = 500000;
		m.pte_slots = 100;
		m.lock_holds = 1;
		m.lock_hold_ns = 400000;
		m.lock_mode = LockMode::read;
		rec.walks[i] = m;
	}
	// another walker's scan in the same time: not this scan's
	ModuleWalk other = rec.walks[2];
	other.seq = 9;
	other.walker_pid = 55;
	rec.walks[9] = other;
	ModuleStall st;
	st.walk_seq = 3;
	st.kind = WalkKind::pagemap_scan;
	st.waiter_pid = 100;
	st.start_ns = 3100000;
	st.wait_ns = 1300000;
	rec.stalls[{3, 100, 3100000}] = st;
	const std::vector<WalkSpan> spans = {{WalkKind::pagemap_scan, 98, 900000, 3600000}};
	KernelView kv;
	auto views = module_kernel_view(spans, rec, kv);
	EXPECT_EQ(views[0].pte_slots, 300u);
	EXPECT_EQ(views[0].lock_acquisitions, 3u);
	EXPECT_EQ(views[0].lock_hold_ns, 1200000u);
	EXPECT_EQ(views[0].kernel_duration_ns, 1500000u);
	EXPECT_EQ(views[0].lock_mode, LockMode::read);
	EXPECT_EQ(views[0].stalls, 1u);
	EXPECT_EQ(kv.module->walks_matched, 1u);
	EXPECT_EQ(kv.module->module_walks_unmatched, 0u);
	ASSERT_EQ(kv.stalls->list.size(), 1u);
	EXPECT_EQ(kv.stalls->list[0].walk, 0u);
}

// late_hold_ns (the walk's only part, its holds that ended before the
// waiter's decision): read from a stall without a split, within the wait;
// a split stall, a zero or one longer than the wait has none.
TEST(ModuleView, LateHoldOnlyWithoutASplit)
{
	const std::string rec = "walk_seq=1 kind=pagemap waiter_pid=100 waiter_comm=victim-mmap "
				"target_tgid=97 start_ns=20000 wait_ns=1500000 mode=write "
				"walker_pid=98 walker_mode=read acquired=1 walker_held_ns=0 "
				"others_held_ns=0 split_complete=";
	auto late = parse_module_stalls(rec + "0 clock_spread_ns=0 late_hold_ns=26000\n");
	ASSERT_EQ(late.size(), 1u);
	EXPECT_FALSE(late[0].walker_held_ns);
	EXPECT_EQ(late[0].late_hold_ns, 26000u);
	EXPECT_FALSE(parse_module_stalls(rec + "0 late_hold_ns=0\n")[0].late_hold_ns);
	EXPECT_FALSE(parse_module_stalls(rec + "0 late_hold_ns=1500001\n")[0].late_hold_ns);
	auto split = parse_module_stalls(rec + "1 clock_spread_ns=0 late_hold_ns=26000\n");
	ASSERT_EQ(split.size(), 1u);
	EXPECT_EQ(split[0].walker_held_ns, 0u);
	EXPECT_FALSE(split[0].late_hold_ns);
	// at_release: a wait that began as the walk released, its part not
	// known; only without a split
	EXPECT_TRUE(parse_module_stalls(rec + "0 at_release=1\n")[0].at_release);
	EXPECT_FALSE(parse_module_stalls(rec + "0 at_release=0\n")[0].at_release);
	EXPECT_FALSE(parse_module_stalls(rec + "1 at_release=1\n")[0].at_release);
}
