// SPDX-License-Identifier: GPL-2.0
// ptwalk monitor: owners from facts, the streaming walk tracker, the
// Prometheus exposition.
#include <functional>
#include <gtest/gtest.h>

#include "ptwalk/monitor.hpp"
#include "ptwalk/monitor_metrics.hpp"
#include "ptwalk/prom.hpp"
#include "test_util.hpp"

using namespace ptwalk;

namespace {

constexpr uint64_t kMm = 0xffff888100070000ull;

using tests::lock_event;
using tests::lock_hold;

void feed(WalkTracker &t, std::vector<LockEvent> v)
{
	tests::feed_in_time_order(std::move(v), [&t](const LockEvent &e) { t.lock(e); });
}

// 1 us holds count, waiters may end 100 ns later, probes wait timeout
WalkTracker::Config small_config(uint64_t timeout_ns, pid_t prober = 0)
{
	WalkTracker::Config c;
	c.min_hold_ns = 1000;
	c.grace_ns = 100;
	c.resolve_timeout_ns = timeout_ns;
	c.prober_tid = prober;
	return c;
}

WalkTracker::Emit collect(std::vector<Walk> &out)
{
	return [&out](const Walk &w) { out.push_back(w); };
}

} // namespace

TEST(MmOwners, ProbeNamesAnIdleOwnerBeforeAndAfter)
{
	MmOwners o;
	o.probe(kMm, 100, 5000);
	// a hold before the probe: the same life (nothing ended in between)
	EXPECT_EQ(o.owner_at(kMm, 1000, 300).tgid, 100);
	EXPECT_EQ(o.owner_at(kMm, 9000, 300).tgid, 100);
	EXPECT_FALSE(o.owner_at(kMm, 9000, 300).teardown);
}

TEST(MmOwners, ExitEndsTheLifeAndReuseIsNeverThePreviousOwner)
{
	MmOwners o;
	o.probe(kMm, 100, 1000);
	o.ended(100, 2000, LifeEnd::exit);
	// the exiting owner's own teardown after its exit event: itself
	auto td = o.owner_at(kMm, 2100, 100);
	EXPECT_EQ(td.tgid, 100);
	EXPECT_TRUE(td.teardown);
	// someone else on the address after the exit, no probe since: unknown
	auto u = o.owner_at(kMm, 3000, 300);
	EXPECT_EQ(u.tgid, 0);
	EXPECT_TRUE(u.pending);
	EXPECT_NE(u.why.find("tgid 100"), std::string::npos);
	// a new process gets the address; probed later
	o.born(200, 2500);
	o.probe(kMm, 200, 4000);
	EXPECT_EQ(o.owner_at(kMm, 3000, 300).tgid, 200);
	// a hold on the address before 200 existed is not 200's
	auto before = o.owner_at(kMm, 2200, 300);
	EXPECT_EQ(before.tgid, 0);
	EXPECT_FALSE(before.pending);
	EXPECT_NE(before.why.find("reused"), std::string::npos);
	// and never 100's after its life ended
	EXPECT_NE(o.owner_at(kMm, 5000, 300).tgid, 100);
}

TEST(MmOwners, UnseenExitIsClosedByTheNextProbe)
{
	MmOwners o;
	o.probe(kMm, 100, 1000);
	o.probe(kMm, 200, 5000); // 100's exit was lost
	EXPECT_EQ(o.owner_at(kMm, 900, 300).tgid, 100);
	EXPECT_EQ(o.owner_at(kMm, 5001, 300).tgid, 200);
	// exec of 200 to a new mm
	o.probe(kMm + 64, 200, 6000);
	EXPECT_EQ(o.owner_at(kMm + 64, 6001, 300).tgid, 200);
	EXPECT_TRUE(o.owner_at(kMm, 7000, 300).pending);
}

TEST(MmOwners, UnknownMmSaysWhy)
{
	MmOwners o;
	auto u = o.owner_at(kMm, 10, 1);
	EXPECT_EQ(u.tgid, 0);
	EXPECT_TRUE(u.pending);
	EXPECT_FALSE(u.why.empty());
}

TEST(WalkFiles, ParsesProcLinks)
{
	auto f = parse_walk_file("/proc/1234/smaps");
	ASSERT_TRUE(f);
	EXPECT_EQ(f->pid, 1234);
	EXPECT_EQ(f->file, ProcFile{WalkKind::smaps});
	f = parse_walk_file("/proc/77/task/78/clear_refs");
	ASSERT_TRUE(f);
	EXPECT_EQ(f->pid, 77);
	EXPECT_EQ(f->file, ProcFile{WalkKind::clear_refs});
	EXPECT_TRUE(parse_walk_file("/proc/9/smaps_rollup"));
	EXPECT_FALSE(parse_walk_file("/proc/self/smaps"));
	EXPECT_FALSE(parse_walk_file("/proc/12/smapsx"));
	EXPECT_FALSE(parse_walk_file("/tmp/proc/12/smaps"));
	EXPECT_FALSE(parse_walk_file("socket:[123]"));
	EXPECT_FALSE(parse_walk_file("/proc/12/task/x/smaps"));
}

TEST(WalkTracker, IdleTargetNamedByProbeWithWaiters)
{
	const pid_t prober = 999;
	std::vector<Walk> out;
	WalkTracker t(small_config(10'000, prober), collect(out),
		      [](uint64_t at) { return at >= 5000 && at <= 5100 ? pid_t(100) : pid_t(0); });
	std::vector<LockEvent> v;
	// walker 300 holds the idle target's mm for write 2000 ns
	lock_hold(v, 300, 300, kMm, true, 1000, 1000, 3000);
	// a thread of the target waits behind it
	lock_hold(v, 100, 101, kMm, false, 1500, 3001, 3010);
	// the prober waited too: not a victim
	lock_hold(v, 5, prober, kMm, false, 1600, 3002, 3003);
	feed(t, v);
	t.advance(3500, false);
	EXPECT_TRUE(out.empty()); // unknown yet: waits for a probe
	EXPECT_TRUE(t.wants_probe());
	// the probe: prober's own lock event inside its logged interval
	std::vector<LockEvent> p;
	lock_hold(p, 5, prober, kMm, false, 5050, 5050, 5060);
	feed(t, p);
	t.advance(6000, false);
	ASSERT_EQ(out.size(), 1u);
	EXPECT_EQ(out[0].target_tgid, 100);
	EXPECT_EQ(out[0].basis, Basis::probe);
	EXPECT_FALSE(out[0].self);
	EXPECT_EQ(out[0].kind, HoldKind{HoldCause::unknown}); // no fd evidence
	ASSERT_EQ(out[0].waiters_total, 1u);
	EXPECT_EQ(out[0].waiters[0].tid, 101);
	EXPECT_EQ(t.probe_facts(), 1u);
}

namespace {

// One hold 1000..4000 by task 300, no probe, fd evidence f at 1000, the
// tracker advanced to `to`: the walks it emits, into out.
void hold_with_fd_evidence(std::vector<Walk> &out, bool write, const WalkFile &f, uint64_t to)
{
	WalkTracker t(small_config(1000), collect(out), nullptr);
	std::vector<LockEvent> v;
	lock_hold(v, 300, 300, kMm, write, 1000, 1000, 4000);
	feed(t, v);
	t.fd_evidence(300, 1000, f);
	t.advance(to, false);
}

// out holds one walk, of these target, basis, kind and walked file.
void expect_one_walk(const std::vector<Walk> &out, pid_t tgid, Basis basis, HoldKind kind,
		     const std::string &file)
{
	ASSERT_EQ(out.size(), 1u);
	EXPECT_EQ(out[0].target_tgid, tgid);
	EXPECT_EQ(out[0].basis, basis);
	EXPECT_EQ(out[0].kind, kind);
	EXPECT_EQ(out[0].walk_file, file);
}

} // namespace

TEST(WalkTracker, FdEvidenceGivesKindAndTargetWhenNoProbe)
{
	std::vector<Walk> out;
	hold_with_fd_evidence(out, true, WalkFile{100, WalkKind::clear_refs}, 4200);
	expect_one_walk(out, 100, Basis::fd_table, HoldKind{WalkKind::clear_refs},
			"/proc/100/clear_refs");
}

// A scanner reading /proc/100/smaps_rollup holds its own mm (a fault
// between two reads) with that file open: the file names 100, whose mm a
// fact says is another (or who had exited), so it is not the walk of this
// hold. Seen on a loaded host: the tracepoint view said "smaps_rollup of
// 100 (fd_table)" where the kernel's mm->owner (bpf) said the scanner's
// own.
// Task 300 holds MM for read at 1000-4000 with /proc/100/FILE open; SETUP
// gives the tracker its facts first.
static void hold_with_fd(WalkTracker &t, uint64_t mm, WalkKind file,
			 const std::function<void(WalkTracker &)> &setup)
{
	t.owner_fact(kMm, 100, 500); // the target's mm, from a fact
	setup(t);
	std::vector<LockEvent> v;
	lock_hold(v, 300, 300, mm, false, 1000, 1000, 4000);
	feed(t, v);
	t.fd_evidence(300, 1000, WalkFile{100, file});
}

TEST(WalkTracker, FdEvidenceOfAnotherMmIsNotTheWalk)
{
	const uint64_t own = kMm + 0x1000;
	for (bool probed : {false, true}) {
		std::vector<Walk> out;
		WalkTracker t(small_config(1000), collect(out), nullptr);
		hold_with_fd(t, own, WalkKind::smaps_rollup, [&](WalkTracker &w) {
			if (probed)
				w.owner_fact(own, 300, 500);
		});
		t.advance(4200, false);
		if (!probed) {
			EXPECT_TRUE(out.empty()); // waits for a probe, not the fds
			EXPECT_TRUE(t.wants_probe());
			t.advance(5001, false);
			expect_one_walk(out, 0, Basis::unknown, HoldKind{HoldCause::unknown}, "");
			EXPECT_FALSE(out[0].why.empty());
		} else {
			expect_one_walk(out, 300, Basis::mm_owner, HoldKind{HoldCause::own}, "");
			EXPECT_TRUE(out[0].self);
		}
	}
	// the target exited before the hold: its file reaches no mm but one
	// it had; after an exec its new mm is unknown, and the file may name it
	for (bool exec : {false, true}) {
		std::vector<Walk> out;
		WalkTracker t(small_config(1000), collect(out), nullptr);
		hold_with_fd(t, own, WalkKind::smaps,
			     [&](WalkTracker &w) { w.task_end(100, 800, exec); });
		t.advance(5001, false);
		if (exec)
			expect_one_walk(out, 100, Basis::fd_table, HoldKind{WalkKind::smaps},
					"/proc/100/smaps");
		else
			expect_one_walk(out, 0, Basis::unknown, HoldKind{HoldCause::unknown}, "");
	}
	// the same fds on the target's own mm: its walk
	std::vector<Walk> out;
	WalkTracker t(small_config(1000), collect(out), nullptr);
	hold_with_fd(t, kMm, WalkKind::smaps_rollup, [](WalkTracker &) {});
	t.advance(4200, false);
	expect_one_walk(out, 100, Basis::mm_owner, HoldKind{WalkKind::smaps_rollup},
			"/proc/100/smaps_rollup");
}

TEST(WalkTracker, UnresolvedWalkEmittedWithReasonAfterTimeout)
{
	std::vector<Walk> out;
	WalkTracker t(small_config(1000), collect(out), nullptr);
	std::vector<LockEvent> v;
	lock_hold(v, 300, 300, kMm, true, 1000, 1000, 3000);
	lock_hold(v, 300, 300, kMm, true, 3500, 3500, 3600); // too short
	feed(t, v);
	t.advance(3200, false);
	EXPECT_TRUE(out.empty());
	t.advance(4001, false);
	ASSERT_EQ(out.size(), 1u);
	EXPECT_EQ(out[0].basis, Basis::unknown);
	EXPECT_FALSE(out[0].why.empty());
}

TEST(WalkTracker, ExitTeardownIsSelfAndReusedAddressNotTheOldOwner)
{
	const pid_t prober = 999;
	std::vector<Walk> out;
	WalkTracker t(small_config(100'000, prober), collect(out),
		      [](uint64_t at) { return at < 2000 ? pid_t(100) : pid_t(400); });
	std::vector<LockEvent> v;
	lock_hold(v, 5, prober, kMm, false, 500, 500, 510); // probe: kMm is 100's
	lock_hold(v, 300, 300, kMm, false, 600, 600, 1600); // a reader walks 100
	feed(t, v);
	t.task_end(100, 1700, false);
	v.clear();
	lock_hold(v, 100, 100, kMm, true, 1800, 1800, 30'000); // exit_mmap of 100
	feed(t, v);
	t.task_born(400, 40'000);
	v.clear();
	lock_hold(v, 400, 400, kMm, true, 41'000, 41'000, 45'000);   // new owner, own
	lock_hold(v, 300, 300, kMm, false, 50'000, 50'000, 52'000);  // reader on reused address
	lock_hold(v, 5, prober, kMm, false, 60'000, 60'000, 60'010); // probe: now 400's
	feed(t, v);
	t.advance(1'000'000, true);
	ASSERT_EQ(out.size(), 4u);
	std::sort(out.begin(), out.end(),
		  [](const Walk &a, const Walk &b) { return a.hold.start_ns < b.hold.start_ns; });
	EXPECT_EQ(out[0].target_tgid, 100);
	EXPECT_FALSE(out[0].self);
	EXPECT_EQ(out[1].target_tgid, 100);
	EXPECT_TRUE(out[1].self);
	EXPECT_EQ(out[1].kind, HoldKind{HoldCause::exit});
	EXPECT_EQ(out[1].basis, Basis::exit);
	EXPECT_EQ(out[2].target_tgid, 400);
	EXPECT_TRUE(out[2].self);
	EXPECT_EQ(out[2].kind, HoldKind{HoldCause::own});
	EXPECT_EQ(out[3].target_tgid, 400); // never 100
}

TEST(Prom, EscapesAndFormats)
{
	EXPECT_EQ(prom::escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
	EXPECT_EQ(prom::format_value(3), "3");
	EXPECT_EQ(prom::format_value(0.1), "0.1");
	EXPECT_EQ(prom::sanitize("k\xff"
				 "w"),
		  "k?w");
	prom::Exposition x;
	x.family("m_total", "counter", "help");
	x.sample("m_total", {{"a", "x\"y"}}, 2);
	EXPECT_EQ(x.text(),
		  "# HELP m_total help\n# TYPE m_total counter\nm_total{a=\"x\\\"y\"} 2\n");
}

TEST(Prom, HistogramIsCumulativeWithInf)
{
	prom::Histogram h({0.1, 1});
	h.observe(0.05);
	h.observe(0.1); // le is inclusive
	h.observe(0.5);
	h.observe(7);
	prom::Exposition x;
	h.render(x, "h", {});
	EXPECT_NE(x.text().find("h_bucket{le=\"0.1\"} 2\n"), std::string::npos) << x.text();
	EXPECT_NE(x.text().find("h_bucket{le=\"1\"} 3\n"), std::string::npos);
	EXPECT_NE(x.text().find("h_bucket{le=\"+Inf\"} 4\n"), std::string::npos);
	EXPECT_NE(x.text().find("h_count 4\n"), std::string::npos);
	EXPECT_NE(x.text().find("h_sum 7.65\n"), std::string::npos);
}

TEST(Prom, LabelFolderBoundsCardinality)
{
	prom::LabelFolder f(2, {"unknown"});
	EXPECT_EQ(f.fold("a"), "a");
	EXPECT_EQ(f.fold("b"), "b");
	EXPECT_EQ(f.fold("c"), "other");
	EXPECT_EQ(f.fold("a"), "a");
	EXPECT_EQ(f.fold("unknown"), "unknown");
	EXPECT_EQ(f.folded(), 1u);
}

TEST(MonitorMetrics, RendersLabelsAndOtherPastTheLimit)
{
	MonitorMetrics m(1);
	m.add_walk("perl", "idle", WalkKind::smaps, "read", 0.04, {0.03}, 1, true, false, "probe",
		   100);
	m.add_walk("cat", "idle", WalkKind::smaps, "read", 0.2, {}, 0, true, false, "probe", 101);
	m.add_walk("cat", "", HoldCause::unknown, "write", 0.002, {}, 0, false, false, "unknown",
		   102);
	m.add_walk("idle", "idle", HoldCause::own, "write", 0.5, {}, 0, true, true, "probe", 102);
	// idle's exit torn down by perl's read: idle's exit, not perl's walk
	m.add_walk("perl", "idle", HoldCause::exit, "read", 0.7, {}, 0, true, false, "exit", 102);
	std::string t = m.render(102, 1.5, 1e9);
	EXPECT_NE(
		t.find("ptwalk_monitor_walks_total{walker=\"perl\",target=\"idle\",kind=\"smaps\",mode=\"read\"} 1"),
		std::string::npos)
		<< t;
	EXPECT_NE(t.find("walker=\"other\",target=\"idle\""), std::string::npos);
	EXPECT_NE(t.find("target=\"unknown\""), std::string::npos);
	// the recent gauges: walks by another process only (not idle's own
	// 0.5 s, nor its teardown's 0.7 s)
	EXPECT_NE(
		t.find("ptwalk_monitor_recent_hold_max_seconds{walker=\"other\",target=\"idle\"} 0.2\n"),
		std::string::npos)
		<< t;
	EXPECT_NE(
		t.find("ptwalk_monitor_recent_hold_max_seconds{walker=\"perl\",target=\"idle\"} 0.04\n"),
		std::string::npos)
		<< t;
	EXPECT_NE(
		t.find("ptwalk_monitor_recent_wait_max_seconds{walker=\"perl\",target=\"idle\"} 0.03\n"),
		std::string::npos);
	EXPECT_NE(t.find("ptwalk_monitor_cpu_seconds_total 1.5"), std::string::npos);
	// outside the recent window the gauge drops to 0
	std::string later = m.render(1000, 1.5, 1e9);
	EXPECT_NE(
		later.find(
			"ptwalk_monitor_recent_hold_max_seconds{walker=\"perl\",target=\"idle\"} 0\n"),
		std::string::npos)
		<< later;
}

TEST(WalkTracker, TeardownRunByTheLastReaderIsTheOwnersExit)
{
	const pid_t prober = 999;
	std::vector<Walk> out;
	WalkTracker t(small_config(100'000, prober), collect(out),
		      [](uint64_t) { return pid_t(100); });
	std::vector<LockEvent> v;
	lock_hold(v, 5, prober, kMm, false, 500, 500, 510); // probe: kMm is 100's
	lock_hold(v, 300, 300, kMm, false, 600, 600, 1600); // the reader walks 100
	feed(t, v);
	t.fd_evidence(300, 600, WalkFile{100, WalkKind::pagemap});
	t.task_end(100, 1700, false);
	v.clear();
	lock_hold(v, 300, 300, kMm, false, 1800, 1800, 9000); // unmap_vmas()
	lock_hold(v, 300, 300, kMm, true, 9000 + 400'000, 9000 + 400'000, 9000 + 420'000);
	feed(t, v);
	t.fd_evidence(300, 1800, WalkFile{100, WalkKind::pagemap});
	// a clear_refs writer that got the mm before the exit: write, but
	// not at once after a read hold of its own
	v.clear();
	lock_hold(v, 301, 301, kMm, true, 430'000, 430'000, 440'000);
	// the address reused by a process no fact names yet: its own madvise,
	// then at once munmap, has the shape but is no teardown
	lock_hold(v, 400, 400, kMm, false, 600'000, 600'000, 610'000);
	lock_hold(v, 400, 400, kMm, true, 610'500, 610'500, 620'000);
	feed(t, v);
	t.advance(10'000'000, true);
	ASSERT_EQ(out.size(), 6u);
	std::sort(out.begin(), out.end(),
		  [](const Walk &a, const Walk &b) { return a.hold.start_ns < b.hold.start_ns; });
	EXPECT_EQ(out[0].kind, HoldKind{WalkKind::pagemap});
	EXPECT_FALSE(out[0].hold.teardown);
	for (int i : {1, 2}) {
		SCOPED_TRACE(i);
		EXPECT_TRUE(out[i].hold.teardown);
		EXPECT_EQ(out[i].kind, HoldKind{HoldCause::exit});
		EXPECT_EQ(out[i].target_tgid, 100);
		EXPECT_EQ(out[i].basis, Basis::exit);
		EXPECT_FALSE(out[i].self);
	}
	EXPECT_EQ(out[1].walk_file, "/proc/100/pagemap");
	for (int i : {3, 4, 5}) {
		SCOPED_TRACE(i);
		EXPECT_FALSE(out[i].hold.teardown);
		EXPECT_NE(out[i].kind, HoldKind{HoldCause::exit});
	}
}

// With the tracepoints and an owner never named: the shape is a teardown
// only when the process whose /proc file the holder reads has ended; the
// same shape on a live process's mm (its own read, then an mmap) is not.
TEST(WalkTracker, TeardownShapeOfAnUnnamedMmNeedsTheReadProcessEnded)
{
	std::vector<Walk> out;
	WalkTracker t(small_config(100'000), collect(out), nullptr);
	t.task_end(100, 500, false);
	// the fd table is read while the read hold is in flight
	std::vector<LockEvent> v;
	lock_hold(v, 300, 300, kMm, false, 1000, 1000, 9000);
	feed(t, v);
	t.fd_evidence(300, 1000, WalkFile{100, WalkKind::pagemap});
	v.clear();
	lock_hold(v, 300, 300, kMm, true, 9500, 9500, 12'000);
	lock_hold(v, 301, 301, kMm + 64, false, 20'000, 20'000, 29'000); // 101 lives
	feed(t, v);
	t.fd_evidence(301, 20'000, WalkFile{101, WalkKind::smaps});
	v.clear();
	lock_hold(v, 301, 301, kMm + 64, true, 29'500, 29'500, 32'000);
	feed(t, v);
	t.advance(1'000'000, true);
	ASSERT_EQ(out.size(), 4u);
	std::sort(out.begin(), out.end(),
		  [](const Walk &a, const Walk &b) { return a.hold.start_ns < b.hold.start_ns; });
	for (int i : {0, 1}) {
		SCOPED_TRACE(i);
		EXPECT_EQ(out[i].kind, HoldKind{HoldCause::exit});
		EXPECT_EQ(out[i].target_tgid, 100);
		EXPECT_EQ(out[i].basis, Basis::fd_table);
	}
	EXPECT_EQ(out[2].kind, HoldKind{WalkKind::smaps});
	EXPECT_NE(out[3].kind, HoldKind{HoldCause::exit});
}

// The same under the bpf backend: the kernel says which hold is a
// teardown (mm_users was 0), even before the owner's end is seen. Another
// process's teardown of an mm last named as someone else's, while it
// reads none of that one's /proc files, is an mm no fact named (its own,
// at an address reused, torn down by its exec): not credited to anyone.
TEST(WalkTracker, KernelMarkedTeardownIsTheOwnersExit)
{
	std::vector<Walk> out;
	WalkTracker t(small_config(10'000), collect(out), nullptr);
	t.owner_fact(kMm, 100, 500);
	t.owner_fact(kMm + 128, 200, 500);
	t.task_end(200, 600, false);
	t.span(LockSpan{1000, 5000, kMm, 300, 300, false, true, true}, true);
	t.fd_evidence(300, 1000, WalkFile{100, WalkKind::pagemap});
	t.span(LockSpan{6000, 8000, kMm + 64, 300, 300, false, true}, true);
	t.fd_evidence(300, 6000, WalkFile{100, WalkKind::smaps});
	t.span(LockSpan{9000, 12000, kMm + 128, 400, 400, false, true, true}, true);
	t.advance(100'000, true);
	ASSERT_EQ(out.size(), 3u);
	EXPECT_EQ(out[0].kind, HoldKind{HoldCause::exit});
	EXPECT_EQ(out[0].target_tgid, 100);
	EXPECT_EQ(out[0].basis, Basis::exit);
	EXPECT_FALSE(out[0].self);
	EXPECT_EQ(out[1].kind, HoldKind{WalkKind::smaps}); // an ordinary walk stays one
	EXPECT_EQ(out[2].kind, HoldKind{HoldCause::exit});
	EXPECT_EQ(out[2].target_tgid, 0); // never 200
	EXPECT_EQ(out[2].basis, Basis::unknown);
	EXPECT_FALSE(out[2].why.empty());
}

TEST(WalkTracker, KernelPairedSpansAndOwnerGiveTheSameWalk)
{
	std::vector<Walk> out;
	WalkTracker t(small_config(10'000), collect(out), nullptr);
	// walker 300 holds tgid 100's mm for write [1000, 3000]; a thread of
	// the target waited [1500, 3010]; a hold shorter than min_hold is
	// never handed on by the kernel, so none is fed here
	t.owner_fact(kMm, 100, 3000);
	t.span(LockSpan{1000, 3000, kMm, 300, 300, true, true}, true);
	t.span(LockSpan{1500, 3010, kMm, 100, 101, false, true}, false);
	t.advance(3500, false);
	ASSERT_EQ(out.size(), 1u);
	EXPECT_EQ(out[0].target_tgid, 100);
	EXPECT_EQ(out[0].basis, Basis::mm_owner);
	EXPECT_FALSE(out[0].self);
	EXPECT_EQ(out[0].hold.ns(), 2000u);
	ASSERT_EQ(out[0].waiters_total, 1u);
	EXPECT_EQ(out[0].waiters[0].tid, 101);
	EXPECT_EQ(out[0].waiters[0].ns(), 1510u);
}

TEST(WalkTracker, KernelOwnerOfAReusedAddressIsTheNewProcess)
{
	std::vector<Walk> out;
	WalkTracker t(small_config(10'000), collect(out), nullptr);
	t.owner_fact(kMm, 100, 3000);
	t.span(LockSpan{1000, 3000, kMm, 300, 300, false, true}, true);
	t.task_end(100, 4000, false); // the owner exits; the address is reused
	t.task_born(200, 4500);
	t.owner_fact(kMm, 200, 7000);
	t.span(LockSpan{5000, 7000, kMm, 300, 300, false, true}, true);
	t.advance(20'000, true);
	ASSERT_EQ(out.size(), 2u);
	EXPECT_EQ(out[0].target_tgid, 100);
	EXPECT_EQ(out[1].target_tgid, 200);
	EXPECT_EQ(out[1].basis, Basis::mm_owner);
}

TEST(WalkTracker, ProberAcquisitionAloneIsAProbeFactNotAnUnpairedEvent)
{
	const pid_t prober = 999;
	WalkTracker::Config c;
	c.prober_tid = prober;
	WalkTracker t(c, nullptr, [](uint64_t at) { return at == 5000 ? pid_t(100) : pid_t(0); });
	LockEvent e;
	e.time_ns = 5000;
	e.mm = kMm;
	e.tgid = 5;
	e.tid = prober;
	e.type = LockEventType::AcquireReturned;
	t.probe_acquire(e);
	EXPECT_EQ(t.probe_facts(), 1u);
	EXPECT_EQ(t.unpaired(), 0u);
	EXPECT_EQ(t.owners().owner_at(kMm, 6000, 300).tgid, 100);
}

// execve() locks the mm it builds before the exec event: that mm is the
// process's after the exec, not one the exec ended (no "exit" teardown).
TEST(MmOwners, ExecEndsTheOldMmNotTheOneItBuilt)
{
	const uint64_t old_mm = kMm, new_mm = kMm + 0x1000;
	MmOwners o;
	o.probe(old_mm, 100, 1000, Basis::mm_owner);
	o.probe(new_mm, 100, 2000, Basis::mm_owner, true); // built in execve
	o.ended(100, 3000, LifeEnd::exec);
	auto n = o.owner_at(new_mm, 4000, 100);
	EXPECT_EQ(n.tgid, 100);
	EXPECT_FALSE(n.teardown);
	// the old mm's later holds by the same process are its teardown
	auto d = o.owner_at(old_mm, 3500, 100);
	EXPECT_EQ(d.tgid, 100);
	EXPECT_TRUE(d.teardown);
	// and the process's exit ends the new one
	o.ended(100, 9000, LifeEnd::exit);
	EXPECT_TRUE(o.owner_at(new_mm, 9500, 100).teardown);
}

// A walker with several processes' files open does not say which one it
// walks: no target from its fds (the kernel's mm->owner or a probe must
// tell), and the kind only when its files agree.
TEST(PickWalkFile, AmbiguousTargetsAreNotGuessed)
{
	const pid_t me = 50;
	auto one = pick_walk_file({{me, WalkKind::maps}, {100, WalkKind::pagemap}}, me);
	ASSERT_TRUE(one);
	EXPECT_EQ(one->pid, 100);
	EXPECT_EQ(one->file, ProcFile{WalkKind::pagemap});
	auto two = pick_walk_file({{100, WalkKind::pagemap}, {101, WalkKind::pagemap}}, me);
	ASSERT_TRUE(two);
	EXPECT_EQ(two->pid, 0);
	EXPECT_EQ(two->file, ProcFile{WalkKind::pagemap});
	EXPECT_FALSE(pick_walk_file({{100, WalkKind::pagemap}, {101, WalkKind::smaps}}, me));
	auto own = pick_walk_file({{me, WalkKind::smaps}}, me);
	ASSERT_TRUE(own);
	EXPECT_EQ(own->pid, me);
	EXPECT_FALSE(pick_walk_file({}, me));
}

TEST(WalkTracker, AmbiguousFdEvidenceGivesKindButNoTarget)
{
	std::vector<Walk> out;
	hold_with_fd_evidence(out, false, WalkFile{0, WalkKind::pagemap}, 6000);
	expect_one_walk(out, 0, Basis::unknown, HoldKind{WalkKind::pagemap}, "");
}

// exec_mmap() tears the pre-exec mm down (a fork's copy of its parent's
// page tables) in the exec'ing task, then the exec event fires: that
// teardown is the process's own, whether the tracepoints' shape or the
// kernel's mark tells it, and whether or not a probe named the old mm.
TEST(WalkTracker, ExecsTeardownOfItsPreExecMmIsItsOwn)
{
	std::vector<Walk> out;
	WalkTracker t(small_config(10'000), collect(out), nullptr);
	// tracepoints: unmap under the read lock, the write lock at once
	std::vector<LockEvent> v;
	lock_hold(v, 300, 300, kMm, false, 1000, 1000, 9000);
	lock_hold(v, 300, 300, kMm, true, 9500, 9500, 12'000);
	feed(t, v);
	t.task_end(300, 20'000, true);
	// bpf: the kernel marks the teardown; one mm named by a probe
	t.owner_fact(kMm + 192, 600, 100);
	t.span(LockSpan{30'000, 40'000, kMm + 64, 400, 400, false, true, true}, true);
	t.task_end(400, 45'000, true);
	t.span(LockSpan{50'000, 60'000, kMm + 192, 600, 600, false, true, true}, true);
	t.task_end(600, 61'000, true);
	// the same shape with the exec 200 ms later: not tied to it
	v.clear();
	lock_hold(v, 500, 500, kMm + 128, false, 70'000, 70'000, 79'000);
	lock_hold(v, 500, 500, kMm + 128, true, 79'500, 79'500, 82'000);
	feed(t, v);
	t.task_end(500, 82'000 + 200'000'000, true);
	t.advance(300'000'000, true);
	ASSERT_EQ(out.size(), 6u);
	std::sort(out.begin(), out.end(),
		  [](const Walk &a, const Walk &b) { return a.hold.start_ns < b.hold.start_ns; });
	for (size_t i = 0; i < 4; i++) {
		SCOPED_TRACE(i);
		EXPECT_EQ(out[i].kind, HoldKind{HoldCause::exit});
		EXPECT_EQ(out[i].target_tgid, out[i].hold.tgid);
		EXPECT_TRUE(out[i].self);
		EXPECT_EQ(out[i].basis, Basis::exec);
	}
	EXPECT_EQ(out[4].hold.tgid, 500);
	EXPECT_NE(out[4].basis, Basis::exec);
	EXPECT_NE(out[4].kind, HoldKind{HoldCause::exit});
}
