// SPDX-License-Identifier: GPL-2.0
// A DAMON (Data Access MONitor) driver through its sysfs interface, for a
// per-process working-set scanner: kdamond 0 monitors one pid with the vaddr
// operations and one "stat" scheme matching every region, so the scheme's
// tried_regions list the whole monitored address space with each region's
// access count. Facts from the kernel's mm/damon/{sysfs.c,sysfs-schemes.c,
// core.c} of 6.12 and 7.3 (Documentation/admin-guide/mm/damon/usage.rst);
// the details are in damon.cpp, next to the code that depends on them.
//
// Only a DAMON nobody else uses is touched: any configured kdamond, or a
// DAMON module running its own exclusive context (DAMON_RECLAIM, _LRU_SORT,
// _STAT), and ptwalk refuses without writing anything. Everything it
// creates goes away in stop() (and the destructor).
//
// Errors are strings ("" = success), as Child::stop's; nothing throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <variant>
#include <vector>

namespace ptwalk {

// The monitoring attributes, as monitoring_attrs/ holds them. The kernel
// refuses "on" (damon_set_attrs(), core.c: -EINVAL) unless
// 3 <= min_nr_regions <= max_nr_regions and sample_us <= aggr_us;
// DamonSysfs::start() checks the same before writing anything.
struct DamonAttrs {
	uint64_t sample_us = 5000;    // one access check per region
	uint64_t aggr_us = 100000;    // nr_accesses counts checks per this
	uint64_t update_us = 1000000; // the target's VMAs re-read
	uint32_t min_nr_regions = 10, max_nr_regions = 1000;
};

// One region of tried_regions/<i>/: [start, end) of the target's virtual
// address space; nr_accesses: of how many of the last aggregation's access
// checks (aggr_us / sample_us of them) found it accessed; age: for how many
// aggregations its access count has stayed about the same.
struct DamonRegion {
	uint64_t start = 0, end = 0;
	uint32_t nr_accesses = 0;
	uint32_t age = 0;
};

class DamonSysfs {
public:
	static constexpr const char *kDefaultRoot = "/sys/kernel/mm/damon/admin";
	static constexpr const char *kDefaultModules = "/sys/module";

	// root: the admin directory; modules: where the DAMON modules'
	// parameters are (<modules>/damon_reclaim/parameters/enabled). Tests
	// point both at fake trees.
	explicit DamonSysfs(std::string root = kDefaultRoot, std::string modules = kDefaultModules);
	DamonSysfs(const DamonSysfs &) = delete;
	DamonSysfs &operator=(const DamonSysfs &) = delete;
	~DamonSysfs();

	// Why DAMON cannot be used here, or "": no sysfs directory, no
	// permission, a kdamond already configured by someone else, or a DAMON
	// module running exclusively. Only reads. Whether the kernel has the
	// vaddr operations shows only in a context's avail_operations, which
	// exists after writes: start() reports that one.
	std::string unavailable() const;

	// Configures kdamond 0 to monitor pid (vaddr, attrs, one "stat" scheme
	// matching every region) and turns it on. "" or an error; on error
	// everything it created is removed again.
	std::string start(pid_t pid, const DamonAttrs &a);
	bool started() const { return owned_; }

	// Takes over the kdamond a process of ours started and could not stop
	// (a scanner killed before its stop()), so that stop() removes it:
	// only when exactly one kdamond is configured. "" or why not.
	std::string adopt();

	// The kdamond's kernel thread (kdamonds/0/pid), for its CPU time;
	// nullopt when not started or not running.
	std::optional<pid_t> kdamond_pid() const;

	// The regions of the latest aggregation: writes
	// "update_schemes_tried_regions" to kdamonds/0/state and reads
	// schemes/0/tried_regions/<i>/. The write blocks in the kernel, not
	// interruptibly, until the kdamond has applied the scheme once: up to
	// update_wait_bound_us(). An error when the kdamond has stopped (the
	// target exited), or a region directory lacks a file. No region at all
	// is an error, but where the kernel ends an update on a timeout
	// (update_may_time_out()): there it is an empty set, a read that
	// caught no aggregation.
	std::variant<std::vector<DamonRegion>, std::string> regions();

	// Whether this kernel gives up an update of tried_regions after two
	// aggregations of wall time, with the regions collected so far (none
	// if the apply came later): before 6.14. From uname(); settable for
	// tests.
	bool update_may_time_out() const { return update_may_time_out_; }
	void set_update_may_time_out(bool v) { update_may_time_out_ = v; }

	// The longest a regions() call waits in the kernel with the attrs of
	// start(): two aggregations, a sampling and 6.12's 100 ms polling
	// (damon.cpp has the derivation), plus slack.
	uint64_t update_wait_bound_us() const;

	// Turns the kdamond off and sets nr_kdamonds back to 0, which removes
	// every directory and setting start() made. Idempotent; "" or an
	// error (then still started(), so it can be called again).
	std::string stop();

private:
	std::string kdamond_dir() const;
	std::string configure(pid_t pid, const DamonAttrs &a);
	std::string set_scheme();

	std::string root_, modules_;
	DamonAttrs attrs_;
	bool owned_ = false; // we wrote nr_kdamonds 1 and have not undone it
	bool update_may_time_out_;
};

// Working-set estimate: bytes of the regions with nr_accesses > 0, clipped
// to [lo, hi) (the workload's mapping).
uint64_t damon_accessed_bytes(const std::vector<DamonRegion> &r, uint64_t lo, uint64_t hi);

} // namespace ptwalk
