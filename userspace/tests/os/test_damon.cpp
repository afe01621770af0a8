// SPDX-License-Identifier: GPL-2.0
// DamonSysfs against fake DAMON sysfs trees in a temporary directory, never
// the machine's own. A plain directory does not react to writes as sysfs
// does (writing nr_kdamonds does not create kdamonds/0), so the fake holds
// the whole tree a configured kdamond has, with the kernel's defaults, and
// the tests check what the driver wrote, and in which order (inotify).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>
#include <vector>

#include "ptwalk/damon.hpp"
#include "ptwalk/fd.hpp"
#include "ptwalk/procfs.hpp"
#include "temp_dir.hpp"

using namespace ptwalk;
namespace fs = std::filesystem;

namespace {

void put(const std::string &path, const std::string &text)
{
	fs::create_directories(fs::path(path).parent_path());
	FILE *f = fopen(path.c_str(), "w");
	ASSERT_NE(f, nullptr) << path;
	fputs(text.c_str(), f);
	fclose(f);
}

std::string get(const std::string &path)
{
	return read_file(path, nullptr).value_or("<missing>");
}

const char *kCtx = "/kdamonds/0/contexts/0";
const char *kScheme = "/kdamonds/0/contexts/0/schemes/0";

// The admin tree as the kernel has it after writing 1 to each nr_ file
// (kdamonds, contexts, targets, schemes), with its defaults
// (damon_sysfs_attrs_add_dirs(): intervals 5000/100000/60000000 us,
// nr_regions 10..1000; access_pattern ranges [0, 0]).
struct FakeDamon {
	TempDir tmp;
	std::string root, modules;
	FakeDamon()
	{
		root = tmp.path + "/admin";
		modules = tmp.path + "/module";
		fs::create_directories(modules);
		std::string c = root + kCtx, s = root + kScheme;
		put(root + "/kdamonds/nr_kdamonds", "0\n");
		put(root + "/kdamonds/0/state", "off\n");
		put(root + "/kdamonds/0/pid", "-1\n");
		put(root + "/kdamonds/0/contexts/nr_contexts", "0\n");
		put(c + "/avail_operations", "vaddr\nfvaddr\npaddr\n");
		put(c + "/operations", "vaddr\n");
		put(c + "/monitoring_attrs/intervals/sample_us", "5000\n");
		put(c + "/monitoring_attrs/intervals/aggr_us", "100000\n");
		put(c + "/monitoring_attrs/intervals/update_us", "60000000\n");
		put(c + "/monitoring_attrs/nr_regions/min", "10\n");
		put(c + "/monitoring_attrs/nr_regions/max", "1000\n");
		put(c + "/targets/nr_targets", "0\n");
		put(c + "/targets/0/pid_target", "0\n");
		put(c + "/schemes/nr_schemes", "0\n");
		put(s + "/action", "stat\n");
		for (const char *r : {"sz", "nr_accesses", "age"}) {
			put(s + "/access_pattern/" + r + "/min", "0\n");
			put(s + "/access_pattern/" + r + "/max", "0\n");
		}
		put(s + "/tried_regions/total_bytes", "0\n");
	}
	std::string at(const std::string &rel) const { return get(root + rel); }
	void region(int i, uint64_t start, uint64_t end, unsigned nr, unsigned age) const
	{
		std::string d = root + kScheme + "/tried_regions/" + std::to_string(i);
		put(d + "/start", std::to_string(start) + "\n");
		put(d + "/end", std::to_string(end) + "\n");
		put(d + "/nr_accesses", std::to_string(nr) + "\n");
		put(d + "/age", std::to_string(age) + "\n");
		put(d + "/sz_filter_passed", "0\n"); // 6.14+
	}
};

// Every file and directory under dir: its content and mtime.
using Snapshot = std::map<std::string, std::pair<std::string, int64_t>>;
Snapshot snapshot(const std::string &dir)
{
	Snapshot out;
	for (const auto &e : fs::recursive_directory_iterator(dir)) {
		struct stat st;
		stat(e.path().c_str(), &st);
		int64_t t = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
		out[e.path()] = {e.is_directory() ? "<dir>" : get(e.path()), t};
	}
	return out;
}

// The files written (closed after writing) under root, in order.
struct WriteLog {
	Fd fd;
	std::string root;
	std::map<int, std::string> dirs;
	explicit WriteLog(const std::string &r)
		: fd(inotify_init1(IN_NONBLOCK | IN_CLOEXEC)), root(r)
	{
		watch(root);
		for (const auto &e : fs::recursive_directory_iterator(root))
			if (e.is_directory())
				watch(e.path());
	}
	void watch(const std::string &d)
	{
		int wd = inotify_add_watch(fd.get(), d.c_str(), IN_CLOSE_WRITE);
		EXPECT_GE(wd, 0) << d;
		dirs[wd] = d.substr(root.size());
	}
	std::vector<std::string> written()
	{
		std::vector<std::string> out;
		alignas(inotify_event) char buf[65536];
		ssize_t n;
		while ((n = read(fd.get(), buf, sizeof(buf))) > 0) {
			for (char *p = buf; p < buf + n;) {
				auto *ev = reinterpret_cast<inotify_event *>(p);
				out.push_back(dirs[ev->wd] + "/" + ev->name);
				p += sizeof(inotify_event) + ev->len;
			}
		}
		return out;
	}
};

DamonAttrs test_attrs()
{
	DamonAttrs a;
	a.sample_us = 2000;
	a.aggr_us = 50000;
	a.update_us = 500000;
	a.min_nr_regions = 5;
	a.max_nr_regions = 200;
	return a;
}

} // namespace

TEST(DamonSysfs, UnavailableWithoutSysfsDirectory)
{
	TempDir t;
	std::string root = t.path + "/admin";
	DamonSysfs d(root, t.path + "/module");
	std::string why = d.unavailable();
	EXPECT_NE(why.find("No such file or directory"), std::string::npos) << why;
	EXPECT_NE(why.find("CONFIG_DAMON_SYSFS"), std::string::npos) << why;
	EXPECT_EQ(d.start(getpid(), DamonAttrs{}), why);
	EXPECT_FALSE(d.started());
	EXPECT_FALSE(fs::exists(root));
}

TEST(DamonSysfs, FreeTreeIsAvailable)
{
	FakeDamon f;
	EXPECT_EQ(DamonSysfs(f.root, f.modules).unavailable(), "");
}

TEST(DamonSysfs, RefusesAnExistingKdamondAndWritesNothing)
{
	FakeDamon f;
	put(f.root + "/kdamonds/nr_kdamonds", "1\n");
	put(f.root + "/kdamonds/0/state", "on\n");
	put(f.root + "/kdamonds/0/pid", "999\n");
	Snapshot before = snapshot(f.tmp.path);
	{
		DamonSysfs d(f.root, f.modules);
		std::string why = d.unavailable();
		EXPECT_NE(why.find("DAMON is in use: 1 kdamond(s) already configured"),
			  std::string::npos)
			<< why;
		EXPECT_NE(why.find("ptwalk does not touch another's"), std::string::npos) << why;
		EXPECT_EQ(d.start(getpid(), DamonAttrs{}), why);
		EXPECT_FALSE(d.kdamond_pid());
		auto r = d.regions();
		ASSERT_TRUE(std::holds_alternative<std::string>(r));
		EXPECT_EQ(d.stop(), "");
	}
	EXPECT_EQ(snapshot(f.tmp.path), before);
}

TEST(DamonSysfs, RefusesWhileAnExclusiveDamonModuleRuns)
{
	FakeDamon f;
	put(f.modules + "/damon_reclaim/parameters/enabled", "N\n");
	put(f.modules + "/damon_stat/parameters/enabled", "Y\n");
	Snapshot before = snapshot(f.tmp.path);
	DamonSysfs d(f.root, f.modules);
	std::string why = d.start(getpid(), DamonAttrs{});
	EXPECT_NE(why.find("DAMON is in use: damon_stat"), std::string::npos) << why;
	EXPECT_EQ(snapshot(f.tmp.path), before);
	put(f.modules + "/damon_stat/parameters/enabled", "N\n");
	EXPECT_EQ(d.unavailable(), "");
}

TEST(DamonSysfs, StartWritesTheConfigurationParentFirst)
{
	FakeDamon f;
	WriteLog log(f.root);
	DamonSysfs d(f.root, f.modules);
	ASSERT_EQ(d.start(4242, test_attrs()), "");
	EXPECT_TRUE(d.started());
	std::string c = kCtx, s = kScheme, m = c + "/monitoring_attrs";
	std::string ap = s + "/access_pattern";
	std::vector<std::string> want = {
		"/kdamonds/nr_kdamonds",
		"/kdamonds/0/contexts/nr_contexts",
		c + "/operations",
		m + "/intervals/sample_us",
		m + "/intervals/aggr_us",
		m + "/intervals/update_us",
		m + "/nr_regions/min",
		m + "/nr_regions/max",
		c + "/targets/nr_targets",
		c + "/targets/0/pid_target",
		s.substr(0, s.size() - 2) + "/nr_schemes",
		s + "/action",
		ap + "/sz/min",
		ap + "/sz/max",
		ap + "/nr_accesses/min",
		ap + "/nr_accesses/max",
		ap + "/age/min",
		ap + "/age/max",
		"/kdamonds/0/state",
	};
	EXPECT_EQ(log.written(), want);
	EXPECT_EQ(f.at("/kdamonds/nr_kdamonds"), "1");
	EXPECT_EQ(f.at("/kdamonds/0/contexts/nr_contexts"), "1");
	EXPECT_EQ(f.at(c + "/operations"), "vaddr");
	EXPECT_EQ(f.at(m + "/intervals/sample_us"), "2000");
	EXPECT_EQ(f.at(m + "/intervals/aggr_us"), "50000");
	EXPECT_EQ(f.at(m + "/intervals/update_us"), "500000");
	EXPECT_EQ(f.at(m + "/nr_regions/min"), "5");
	EXPECT_EQ(f.at(m + "/nr_regions/max"), "200");
	EXPECT_EQ(f.at(c + "/targets/nr_targets"), "1");
	EXPECT_EQ(f.at(c + "/targets/0/pid_target"), "4242");
	EXPECT_EQ(f.at(c + "/schemes/nr_schemes"), "1");
	EXPECT_EQ(f.at(s + "/action"), "stat");
	EXPECT_EQ(f.at(ap + "/sz/min"), "0");
	EXPECT_EQ(f.at(ap + "/sz/max"), "18446744073709551615");
	EXPECT_EQ(f.at(ap + "/nr_accesses/max"), "4294967295");
	EXPECT_EQ(f.at(ap + "/age/max"), "4294967295");
	EXPECT_EQ(f.at("/kdamonds/0/state"), "on");
	EXPECT_EQ(d.update_wait_bound_us(), 2u * 50000 + 2 * 2000 + 200000);
	EXPECT_EQ(d.start(4242, test_attrs()), "DAMON: already started");
}

TEST(DamonSysfs, KdamondPid)
{
	FakeDamon f;
	DamonSysfs d(f.root, f.modules);
	put(f.root + "/kdamonds/0/pid", "777\n");
	EXPECT_FALSE(d.kdamond_pid()); // not started: not ours
	ASSERT_EQ(d.start(4242, test_attrs()), "");
	EXPECT_EQ(d.kdamond_pid(), std::optional<pid_t>(777));
	put(f.root + "/kdamonds/0/pid", "-1\n");
	EXPECT_FALSE(d.kdamond_pid());
}

TEST(DamonSysfs, StartRejectsAttrsTheKernelRefusesBeforeWriting)
{
	FakeDamon f;
	Snapshot before = snapshot(f.tmp.path);
	DamonSysfs d(f.root, f.modules);
	DamonAttrs a = test_attrs();
	a.min_nr_regions = 2;
	EXPECT_NE(d.start(4242, a), "");
	a = test_attrs();
	a.sample_us = a.aggr_us + 1;
	EXPECT_NE(d.start(4242, a), "");
	EXPECT_NE(d.start(0, test_attrs()), "");
	EXPECT_FALSE(d.started());
	EXPECT_EQ(snapshot(f.tmp.path), before);
}

TEST(DamonSysfs, StartWithoutVaddrUndoesItsWrites)
{
	FakeDamon f;
	put(f.root + kCtx + std::string("/avail_operations"), "paddr\n");
	DamonSysfs d(f.root, f.modules);
	std::string err = d.start(4242, test_attrs());
	EXPECT_NE(err.find("no vaddr operations"), std::string::npos) << err;
	EXPECT_FALSE(d.started());
	EXPECT_EQ(f.at("/kdamonds/nr_kdamonds"), "0");
	EXPECT_EQ(f.at(kCtx + std::string("/targets/0/pid_target")), "0\n");
	EXPECT_EQ(f.at("/kdamonds/0/state"), "off\n"); // never on: "off" not written
}

TEST(DamonSysfs, StartWithoutTriedRegionsUndoesItsWrites)
{
	FakeDamon f; // 6.1: schemes have no tried_regions
	fs::remove_all(f.root + kScheme + "/tried_regions");
	DamonSysfs d(f.root, f.modules);
	std::string err = d.start(4242, test_attrs());
	EXPECT_NE(err.find("tried_regions need Linux 6.2+"), std::string::npos) << err;
	EXPECT_FALSE(d.started());
	EXPECT_EQ(f.at("/kdamonds/nr_kdamonds"), "0");
}

TEST(DamonSysfs, StartFailingOnAMissingFileUndoesItsWrites)
{
	FakeDamon f;
	fs::remove(f.root + kScheme + "/access_pattern/age/max");
	DamonSysfs d(f.root, f.modules);
	std::string err = d.start(4242, test_attrs());
	EXPECT_NE(err.find("age/max: No such file or directory"), std::string::npos) << err;
	EXPECT_FALSE(d.started());
	EXPECT_EQ(f.at("/kdamonds/nr_kdamonds"), "0");
	EXPECT_FALSE(fs::exists(f.root + kScheme + "/access_pattern/age/max"));
}

TEST(DamonSysfs, RegionsReadsTriedRegions)
{
	FakeDamon f;
	DamonSysfs d(f.root, f.modules);
	ASSERT_EQ(d.start(4242, test_attrs()), "");
	f.region(0, 0x400000, 0x600000, 0, 3);
	f.region(1, 0x7f0000000000, 0x7f0000200000, 12, 0);
	f.region(2, 0x7ffd00000000, 0x7ffd00021000, 1, 40);
	auto r = d.regions();
	ASSERT_TRUE(std::holds_alternative<std::vector<DamonRegion>>(r))
		<< std::get<std::string>(r);
	const auto &v = std::get<std::vector<DamonRegion>>(r);
	ASSERT_EQ(v.size(), 3u);
	EXPECT_EQ(v[0].start, 0x400000u);
	EXPECT_EQ(v[0].end, 0x600000u);
	EXPECT_EQ(v[0].nr_accesses, 0u);
	EXPECT_EQ(v[0].age, 3u);
	EXPECT_EQ(v[1].start, 0x7f0000000000u);
	EXPECT_EQ(v[1].nr_accesses, 12u);
	EXPECT_EQ(v[2].end, 0x7ffd00021000u);
	EXPECT_EQ(v[2].age, 40u);
	EXPECT_EQ(f.at("/kdamonds/0/state"), "update_schemes_tried_regions");
	EXPECT_EQ(damon_accessed_bytes(v, 0, UINT64_MAX), 0x200000u + 0x21000u);
}

TEST(DamonSysfs, RegionsSortsDirectoriesByNumber)
{
	FakeDamon f;
	DamonSysfs d(f.root, f.modules);
	ASSERT_EQ(d.start(4242, test_attrs()), "");
	for (int i = 0; i < 11; i++)
		f.region(i, 0x1000 * (i + 1), 0x1000 * (i + 2), 1, 0);
	auto r = d.regions();
	ASSERT_TRUE(std::holds_alternative<std::vector<DamonRegion>>(r));
	const auto &v = std::get<std::vector<DamonRegion>>(r);
	ASSERT_EQ(v.size(), 11u);
	for (size_t i = 1; i < v.size(); i++)
		EXPECT_EQ(v[i].start, v[i - 1].end) << i;
}

TEST(DamonSysfs, RegionMissingAFileIsAnError)
{
	FakeDamon f;
	DamonSysfs d(f.root, f.modules);
	ASSERT_EQ(d.start(4242, test_attrs()), "");
	f.region(0, 0x1000, 0x2000, 1, 0);
	f.region(1, 0x2000, 0x3000, 1, 0);
	fs::remove(f.root + kScheme + "/tried_regions/1/age");
	auto r = d.regions();
	ASSERT_TRUE(std::holds_alternative<std::string>(r));
	const std::string &err = std::get<std::string>(r);
	EXPECT_NE(err.find("tried_regions/1/age: No such file or directory"), std::string::npos)
		<< err;
	put(f.root + kScheme + "/tried_regions/1/age", "x\n");
	r = d.regions();
	ASSERT_TRUE(std::holds_alternative<std::string>(r));
	EXPECT_NE(std::get<std::string>(r).find("is not a number"), std::string::npos);
}

TEST(DamonSysfs, NoRegionsIsAnError)
{
	FakeDamon f;
	DamonSysfs d(f.root, f.modules);
	d.set_update_may_time_out(false); // 6.14+: the write waits for an apply
	ASSERT_EQ(d.start(4242, test_attrs()), "");
	auto r = d.regions();
	ASSERT_TRUE(std::holds_alternative<std::string>(r));
	EXPECT_NE(std::get<std::string>(r).find("no regions"), std::string::npos);
}

// Before 6.14 the kernel ends an update on a timeout of two aggregations'
// jiffies, with no region if the apply came later: a read that caught no
// aggregation, not an error; a region found after it is read as ever.
TEST(DamonSysfs, NoRegionsAfterATimeoutIsAnEmptyRead)
{
	FakeDamon f;
	DamonSysfs d(f.root, f.modules);
	d.set_update_may_time_out(true);
	ASSERT_EQ(d.start(4242, test_attrs()), "");
	auto r = d.regions();
	ASSERT_TRUE(std::holds_alternative<std::vector<DamonRegion>>(r))
		<< std::get<std::string>(r);
	EXPECT_TRUE(std::get<std::vector<DamonRegion>>(r).empty());
	f.region(0, 0x1000, 0x2000, 1, 0);
	r = d.regions();
	ASSERT_TRUE(std::holds_alternative<std::vector<DamonRegion>>(r));
	EXPECT_EQ(std::get<std::vector<DamonRegion>>(r).size(), 1u);
}

TEST(DamonSysfs, RegionsAfterTheTargetExited)
{
	FakeDamon f;
	DamonSysfs d(f.root, f.modules);
	ASSERT_EQ(d.start(4242, test_attrs()), "");
	f.region(0, 0x1000, 0x2000, 1, 0);
	put(f.root + "/kdamonds/0/state", "off\n"); // the kdamond stopped itself
	auto r = d.regions();
	ASSERT_TRUE(std::holds_alternative<std::string>(r));
	const std::string &err = std::get<std::string>(r);
	EXPECT_NE(err.find("target process exited"), std::string::npos) << err;
	EXPECT_EQ(f.at("/kdamonds/0/state"), "off\n"); // no command written
	// stop() does not write "off" again, only nr_kdamonds
	WriteLog log(f.root);
	EXPECT_EQ(d.stop(), "");
	EXPECT_EQ(log.written(), std::vector<std::string>{"/kdamonds/nr_kdamonds"});
}

TEST(DamonSysfs, StopWritesOffThenZeroOnce)
{
	FakeDamon f;
	DamonSysfs d(f.root, f.modules);
	ASSERT_EQ(d.start(4242, test_attrs()), "");
	WriteLog log(f.root);
	EXPECT_EQ(d.stop(), "");
	EXPECT_FALSE(d.started());
	std::vector<std::string> want = {"/kdamonds/0/state", "/kdamonds/nr_kdamonds"};
	EXPECT_EQ(log.written(), want);
	EXPECT_EQ(f.at("/kdamonds/0/state"), "off");
	EXPECT_EQ(f.at("/kdamonds/nr_kdamonds"), "0");
	put(f.root + "/kdamonds/nr_kdamonds", "1\n"); // someone else's now
	(void)log.written();
	EXPECT_EQ(d.stop(), "");
	EXPECT_TRUE(log.written().empty());
	EXPECT_EQ(f.at("/kdamonds/nr_kdamonds"), "1\n");
	EXPECT_FALSE(d.kdamond_pid());
	EXPECT_TRUE(std::holds_alternative<std::string>(d.regions()));
}

TEST(DamonSysfs, DestructorStops)
{
	FakeDamon f;
	{
		DamonSysfs d(f.root, f.modules);
		ASSERT_EQ(d.start(4242, test_attrs()), "");
		EXPECT_EQ(f.at("/kdamonds/nr_kdamonds"), "1");
	}
	EXPECT_EQ(f.at("/kdamonds/0/state"), "off");
	EXPECT_EQ(f.at("/kdamonds/nr_kdamonds"), "0");
}

// A run's cleanup after a scanner killed before its stop(): a new driver
// takes the one kdamond over and removes it; never another number of them.
TEST(DamonSysfs, AdoptTakesOverOneKdamondOnly)
{
	FakeDamon f;
	// as a scanner killed after start() leaves it
	put(f.root + "/kdamonds/0/state", "on\n");
	put(f.root + "/kdamonds/nr_kdamonds", "2\n");
	DamonSysfs d(f.root, f.modules);
	WriteLog log(f.root);
	EXPECT_NE(d.adopt().find("not the one kdamond"), std::string::npos);
	EXPECT_FALSE(d.started());
	EXPECT_EQ(d.stop(), "");
	EXPECT_TRUE(log.written().empty());
	put(f.root + "/kdamonds/nr_kdamonds", "1\n");
	(void)log.written();
	EXPECT_EQ(d.adopt(), "");
	EXPECT_TRUE(d.started());
	EXPECT_EQ(d.stop(), "");
	std::vector<std::string> want = {"/kdamonds/0/state", "/kdamonds/nr_kdamonds"};
	EXPECT_EQ(log.written(), want);
	EXPECT_EQ(f.at("/kdamonds/0/state"), "off");
	EXPECT_EQ(f.at("/kdamonds/nr_kdamonds"), "0");
}

TEST(DamonAccessedBytes, ClipsToTheMappingAndSkipsIdleRegions)
{
	std::vector<DamonRegion> r = {
		{0x1000, 0x5000, 3, 0},  // straddles lo: 0x3000..0x5000 counts
		{0x5000, 0x9000, 0, 7},  // idle: not counted
		{0x9000, 0xa000, 1, 0},  // inside
		{0xa000, 0x20000, 9, 1}, // straddles hi: ..0xc000
		{0x30000, 0x40000, 5, 0} // outside
	};
	EXPECT_EQ(damon_accessed_bytes(r, 0x3000, 0xc000), 0x2000u + 0x1000u + 0x2000u);
	EXPECT_EQ(damon_accessed_bytes(r, 0, UINT64_MAX), 0x4000u + 0x1000u + 0x16000u + 0x10000u);
	EXPECT_EQ(damon_accessed_bytes(r, 0x5000, 0x9000), 0u);
	EXPECT_EQ(damon_accessed_bytes(r, 0xc000, 0x3000), 0u); // empty range
	EXPECT_EQ(damon_accessed_bytes({}, 0, UINT64_MAX), 0u);
}
