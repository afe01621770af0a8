// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/scanner.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <variant>
#include <ctime>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <vector>

#include "ptwalk/clock.hpp"
#include "ptwalk/damon.hpp"
#include "ptwalk/fd.hpp"
#include "ptwalk/procfs.hpp"
// the walk triggers shared with the selftests and the module's test walker
#include "ptwalk_trigger.h"

namespace ptwalk {

namespace {

constexpr size_t kBufSize = 8u << 20;

struct VmaRange {
	uint64_t start, end;
};

// The VMAs of a maps file, [vsyscall] left out (no page tables of its own).
std::vector<VmaRange> parse_maps(const std::string &text)
{
	std::vector<VmaRange> v;
	for_each_line(text, [&](std::string_view line) {
		unsigned long long a, b;
		if (line.find("[vsyscall]") == std::string_view::npos &&
		    sscanf(std::string(line).c_str(), "%llx-%llx", &a, &b) == 2)
			v.push_back({a, b});
	});
	return v;
}

class Scanner {
public:
	Scanner(const Scenario &sc, pid_t target, Shared *sh)
		: sc_(sc), sh_(sh), target_(target), proc_("/proc/" + std::to_string(target) + "/")
	{
		void *p = mmap(nullptr, kBufSize, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (p != MAP_FAILED)
			buf_ = Mapping(p, kBufSize);
		regions_.resize(4096);
	}
	bool ok() const { return bool(buf_); }
	int run();
	int run_damon();

private:
	// One timed walk: marks the shared sequence odd around it.
	template <typename F>
	int walk(WalkKind kind, F &&body);
	int read_file_walk(const char *file, WalkRecord *r, bool keep);
	int clear_refs(const char *value, WalkRecord *r);
	int pagemap(WalkRecord *r);
	int pagemap_scan(WalkRecord *r);
	int do_kind(WalkKind kind, WalkRecord *r);
	bool sleep_until(uint64_t t);

	const Scenario &sc_;
	Shared *sh_;
	pid_t target_;
	std::string proc_;
	Mapping buf_;
	size_t kept_ = 0; // bytes of the last read walk kept in buf_
	std::vector<page_region> regions_;
	std::vector<VmaRange> vmas_;
	uint64_t iteration_ = 0;
};

template <typename F>
int Scanner::walk(WalkKind kind, F &&body)
{
	WalkRecord r{};
	r.kind = kind;
	r.walker_pid = int32_t(getpid());
	r.iteration = iteration_;
	sh_->walk_seq.fetch_add(1, std::memory_order_acq_rel); // odd: walking
	r.ws_pos_before = sh_->touch.position.load(std::memory_order_acquire);
	r.start_ns = now_ns();
	int err = body(&r);
	r.end_ns = now_ns();
	r.ws_pos_after = sh_->touch.position.load(std::memory_order_acquire);
	sh_->walk_seq.fetch_add(1, std::memory_order_acq_rel); // even
	r.error = err;
	if (!err) {
		// what the walk's text says, parsed after its clock stopped and
		// before the record is published
		const std::string_view text(static_cast<char *>(buf_.get()), kept_);
		if (kind == WalkKind::smaps_rollup)
			// an independent view of the walk's coverage: 6.1
			// skips a VMA each time it yields mmap_lock
			r.rollup_rss = parse_smaps_rollup(text).rss;
		else if (kind == WalkKind::smaps)
			// cAdvisor/wss sum Referenced: after reading the file
			r.referenced = sum_smaps_referenced(text);
		if (kind == WalkKind::smaps && sc_.working_set)
			// the walked mapping's alone, against the truth
			r.referenced_mapping = sum_smaps_referenced_in(
				text, sh_->mapping_base, sh_->mapping_base + sh_->mapping_bytes);
	}
	uint32_t i = sh_->nwalks.load();
	if (i < kMaxWalks) {
		sh_->walks[i] = r;
		sh_->nwalks.store(i + 1, std::memory_order_release);
	} else {
		sh_->walks_dropped.fetch_add(1);
	}
	return err;
}

int Scanner::read_file_walk(const char *file, WalkRecord *r, bool keep)
{
	Fd fd(open((proc_ + file).c_str(), O_RDONLY | O_CLOEXEC));
	if (!fd)
		return errno;
	const uint64_t t0 = now_ns();
	long long n = ptw_trigger_read_all(fd.get(), static_cast<char *>(buf_.get()), kBufSize,
					   keep, &kept_, nullptr, nullptr);
	r->syscall_ns += now_ns() - t0;
	if (n < 0)
		return int(-n);
	r->bytes += uint64_t(n);
	return 0;
}

int Scanner::clear_refs(const char *value, WalkRecord *r)
{
	Fd fd(open((proc_ + "clear_refs").c_str(), O_WRONLY | O_CLOEXEC));
	if (!fd)
		return errno;
	const uint64_t t0 = now_ns();
	const int err = ptw_trigger_clear_refs(fd.get(), value);
	r->syscall_ns += now_ns() - t0;
	return err;
}

int Scanner::pagemap(WalkRecord *r)
{
	Fd fd(open((proc_ + "pagemap").c_str(), O_RDONLY | O_CLOEXEC));
	if (!fd)
		return errno;
	for (const auto &v : vmas_) {
		const uint64_t t0 = now_ns();
		long long n = ptw_trigger_pagemap(fd.get(), v.start, v.end, buf_.get(), kBufSize,
						  nullptr, nullptr);
		r->syscall_ns += now_ns() - t0;
		if (n < 0)
			return int(-n);
		r->bytes += uint64_t(n);
	}
	return 0;
}

int Scanner::pagemap_scan(WalkRecord *r)
{
	Fd fd(open((proc_ + "pagemap").c_str(), O_RDONLY | O_CLOEXEC));
	if (!fd)
		return errno;
	for (const auto &v : vmas_) {
		uint64_t a = v.start;
		while (a < v.end) {
			pm_scan_arg arg{};
			arg.start = a;
			arg.end = v.end;
			arg.vec = uint64_t(uintptr_t(regions_.data()));
			arg.vec_len = regions_.size();
			arg.category_anyof_mask = PAGE_IS_PRESENT;
			arg.return_mask = PAGE_IS_PRESENT;
			const uint64_t t0 = now_ns();
			long n = ptw_trigger_pagemap_scan(fd.get(), &arg);
			r->syscall_ns += now_ns() - t0;
			if (n < 0)
				return int(-n);
			for (long i = 0; i < n; i++)
				r->bytes += regions_[size_t(i)].end - regions_[size_t(i)].start;
			if (arg.walk_end <= a)
				break;
			a = arg.walk_end;
		}
	}
	return 0;
}

int Scanner::do_kind(WalkKind kind, WalkRecord *r)
{
	switch (kind) {
	case WalkKind::clear_refs:
		return clear_refs("1\n", r);
	case WalkKind::clear_refs_anon:
		return clear_refs("2\n", r);
	case WalkKind::clear_refs_file:
		return clear_refs("3\n", r);
	case WalkKind::softdirty:
		return clear_refs("4\n", r);
	case WalkKind::pagemap:
		return pagemap(r);
	case WalkKind::pagemap_scan:
		return pagemap_scan(r);
	case WalkKind::smaps:
	case WalkKind::smaps_rollup:
		// each keeps its text: smaps' Referenced, smaps_rollup's Rss
		// (what the kernel walked)
		return read_file_walk(info(kind).file, r, true);
	case WalkKind::maps:
	case WalkKind::numa_maps:
		return read_file_walk(info(kind).file, r, false);
	}
	return EINVAL;
}

bool Scanner::sleep_until(uint64_t t)
{
	while (!sh_->stop.load()) {
		uint64_t now = now_ns();
		if (now >= t)
			return true;
		uint64_t d = std::min<uint64_t>(t - now, 50000000); // wake to check stop
		timespec ts{time_t(d / 1000000000ull), long(d % 1000000000ull)};
		nanosleep(&ts, nullptr);
	}
	return false;
}

int Scanner::run()
{
	const bool needs_vmas = sc_.profile == Profile::pagemap ||
				sc_.profile == Profile::pagemap_scan;
	const uint64_t start = now_ns();
	const uint64_t end = start + sc_.duration_ns;
	uint64_t next = start;
	const auto kinds = profile_walks(sc_.profile);
	while (!sh_->stop.load() && now_ns() < end &&
	       !(sc_.max_iterations && iteration_ >= sc_.max_iterations)) {
		if (needs_vmas) {
			// the VMA list is read untimed, as a monitor caches it
			std::string err;
			auto maps = read_file(proc_ + "maps", &err);
			if (!maps) {
				snprintf(sh_->scanner_message, sizeof(sh_->scanner_message), "%s",
					 err.c_str());
				return 1;
			}
			vmas_ = parse_maps(*maps);
		}
		for (size_t i = 0; i < kinds.size(); i++) {
			if (sc_.profile == Profile::wss && i == 1 &&
			    !sleep_until(std::min(now_ns() + sc_.interval_ns, end)))
				break;
			const WalkKind kind = kinds[i];
			int err = walk(kind, [&](WalkRecord *r) { return do_kind(kind, r); });
			if (err) {
				snprintf(sh_->scanner_message, sizeof(sh_->scanner_message),
					 "%s walk of %s: %s", name(kind), proc_.c_str(),
					 strerror(err));
				return 1;
			}
		}
		iteration_++;
		if (sc_.profile == Profile::wss)
			continue; // its interval is the sleep between its walks
		next += sc_.interval_ns;
		if (next < now_ns())
			next = now_ns(); // a walk longer than the interval: no burst
		if (!sleep_until(std::min(next, end)))
			break;
	}
	return 0;
}

// A task's time on a CPU so far: the first field of /proc/PID/schedstat
// (sum_exec_runtime, ns; kernels with CONFIG_SCHED_INFO); 0 when unreadable.
uint64_t cpu_ns_of(pid_t pid)
{
	auto text = read_file("/proc/" + std::to_string(pid) + "/schedstat", nullptr);
	unsigned long long ns = 0;
	return text && sscanf(text->c_str(), "%llu", &ns) == 1 ? ns : 0;
}

// How long after the apply of the scheme that ends an aggregation a read of
// its regions may return: 6.14+ wakes the writer at the apply (damos_walk(),
// core.c), 6.12 polls every 100 ms (damon_sysfs_handle_cmd()); plus a
// sampling and 50 ms for the writer's wakeup on a busy machine.
uint64_t damon_return_slack_us(const DamonAttrs &a, bool polls)
{
	return (polls ? 100000 : 0) + a.sample_us + 50000;
}

// --scanner damon: kdamond monitors the workload with DAMON's usual
// sampling (5 ms) and an aggregation of one --interval; the scanner reads
// each aggregation's regions as a monitor would, with the toucher's
// position around each read (the window's truth) and the kdamond's CPU
// time (the method's cost). Exit 4 when DAMON cannot be used here.
int Scanner::run_damon()
{
	DamonSysfs d;
	DamonAttrs a;
	a.aggr_us = std::max<uint64_t>(sc_.interval_ns / 1000, 10000);
	a.sample_us = std::min<uint64_t>(5000, a.aggr_us / 2);
	a.update_us = std::max<uint64_t>(1000000, a.aggr_us);
	auto say = [&](const std::string &m) {
		snprintf(sh_->scanner_message, sizeof(sh_->scanner_message), "damon: %s",
			 m.c_str());
	};
	if (std::string why = d.unavailable(); !why.empty()) {
		say(why);
		return 4;
	}
	DamonState &ds = sh_->damon;
	// the kernels that poll are those whose update may time out
	ds.return_slack_us = damon_return_slack_us(a, d.update_may_time_out());
	ds.sample_us = a.sample_us;
	ds.aggr_us = a.aggr_us;
	ds.update_us = a.update_us;
	ds.started.store(1); // before the writes: the parent cleans up after us
	if (std::string err = d.start(target_, a); !err.empty()) {
		ds.stopped.store(1); // start() undid its writes
		say(err);
		return 1;
	}
	ds.kdamond_pid = d.kdamond_pid().value_or(0);
	const uint64_t end = now_ns() + sc_.duration_ns;
	int rc = 0;
	while (!sh_->stop.load() && now_ns() < end) {
		DamonCall c{};
		c.pos_before = sh_->touch.position.load(std::memory_order_acquire);
		c.write_ns = now_ns();
		auto r = d.regions();
		c.return_ns = now_ns();
		c.pos_after = sh_->touch.position.load(std::memory_order_acquire);
		if (auto *err = std::get_if<std::string>(&r)) {
			if (!sh_->stop.load()) { // else: the workload is winding down
				say(*err);
				rc = 1;
			}
			break;
		}
		const auto &regs = std::get<std::vector<DamonRegion>>(r);
		if (regs.empty()) { // the kernel's update timed out before an apply
			ds.update_timeouts.fetch_add(1);
			continue;
		}
		c.accessed_bytes = damon_accessed_bytes(regs, sh_->mapping_base,
							sh_->mapping_base + sh_->mapping_bytes);
		c.nr_regions = uint32_t(regs.size());
		c.kdamond_cpu_ns = ds.kdamond_pid ? cpu_ns_of(ds.kdamond_pid) : 0;
		const uint32_t i = ds.ncalls.load();
		if (i >= kMaxDamonCalls)
			break;
		ds.calls[i] = c;
		ds.ncalls.store(i + 1, std::memory_order_release);
	}
	if (std::string err = d.stop(); !err.empty()) {
		say("removing its kdamond: " + err);
		return 1;
	}
	ds.stopped.store(1);
	return rc;
}

} // namespace

std::string release_scanner_damon(Shared *sh)
{
	if (!sh->damon.started.load() || sh->damon.stopped.load())
		return "";
	DamonSysfs d;
	std::string err = d.adopt();
	if (err.empty())
		err = d.stop();
	if (err.empty())
		sh->damon.stopped.store(1);
	return err.empty() ? "" : "the scanner's kdamond is still configured: " + err;
}

std::string profile_unsupported(Profile p)
{
	if (p == Profile::damon)
		return DamonSysfs().unavailable();
	if (p != Profile::pagemap_scan)
		return "";
	Fd fd(open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
	if (!fd)
		return std::string("/proc/self/pagemap: ") + strerror(errno);
	page_region reg[1];
	pm_scan_arg arg{};
	arg.start = uint64_t(uintptr_t(&reg[0])) & ~uint64_t(4095);
	arg.end = arg.start + 4096;
	arg.vec = uint64_t(uintptr_t(reg));
	arg.vec_len = 1;
	arg.category_anyof_mask = PAGE_IS_PRESENT;
	arg.return_mask = PAGE_IS_PRESENT;
	if (long n = ptw_trigger_pagemap_scan(fd.get(), &arg); n < 0)
		return std::string("PAGEMAP_SCAN ioctl not supported by this kernel (") +
		       strerror(int(-n)) + "; it needs Linux 6.7+)";
	return "";
}

int scanner_main(const Scenario &sc, pid_t target, Shared *sh)
{
	prctl(PR_SET_NAME, "ptwalk-scanner");
	Scanner s(sc, target, sh);
	if (!s.ok()) {
		snprintf(sh->scanner_message, sizeof(sh->scanner_message), "scanner buffer: %s",
			 strerror(errno));
		return 1;
	}
	while (!sh->scanner_go.load() && !sh->stop.load())
		usleep(1000);
	int rc = is_kernel_monitor(sc.profile) ? s.run_damon() : s.run();
	if (auto st = read_file("/proc/self/status", nullptr))
		sh->scanner_hwm = parse_status(*st).vm_hwm;
	return rc;
}

} // namespace ptwalk
