// SPDX-License-Identifier: GPL-2.0
// The DAMON sysfs driver (damon.hpp). Kernel facts are cited by file and
// function. "7.3": Debian's linux-source-7.3; "6.12": the callback-based
// sysfs.c of the 6.12 series, and the 6.14 patches that replaced it ("mm/
// damon/sysfs: use damos_walk() for schemes tried regions update", with
// damon_call() and damos_walk() in core.c), which 6.18 has as 7.3 does.
// 6.1 has DAMON sysfs but no tried_regions (6.1 sysfs.c: its state commands
// stop at "update_schemes_stats"): start() says so.
//
// The files, parent first as usage.rst's example writes them (writing an
// nr_X file removes the X children and creates new ones with defaults:
// damon_sysfs_kdamonds_add_dirs(), damon_sysfs_contexts_add_dirs(), ...):
//
//   kdamonds/nr_kdamonds                      1
//   kdamonds/0/contexts/nr_contexts           1
//   kdamonds/0/contexts/0/avail_operations    read: must list "vaddr"
//   .../0/operations                          vaddr
//   .../0/monitoring_attrs/intervals/         sample_us, aggr_us, update_us
//   .../0/monitoring_attrs/nr_regions/        min, max
//   .../0/targets/nr_targets                  1
//   .../0/targets/0/pid_target                the pid
//   .../0/schemes/nr_schemes                  1
//   .../0/schemes/0/action                    stat
//   .../0/schemes/0/access_pattern/{sz,nr_accesses,age}/{min,max}
//   kdamonds/0/state                          on
//
// Their stores only parse the value (a number: min_store(), sysfs-common.c,
// pid_target_store(), sysfs.c; or a name of a fixed list: operations_store(),
// action_store()), whether or not the kdamond runs: "on" builds the context
// from them (damon_sysfs_turn_damon_on() -> damon_sysfs_build_ctx()) and
// fails with EINVAL if one is wrong; while it runs only "commit" would apply
// them. The nr_ files rebuild their children (EBUSY only when another holds
// damon_sysfs_lock); nr_kdamonds is also refused (EBUSY) while any kdamond
// runs (damon_sysfs_kdamonds_busy()).
// Files newer kernels add (intervals_goal/, addr_unit, pause, refresh_ms,
// probes/, {core_,ops_,}filters/, dests/, quotas/goals/) keep the defaults
// their nr_ writes gave them: off, or nothing.
#include "ptwalk/damon.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <limits>
#include <memory>
#include <string_view>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "ptwalk/fd.hpp"
#include "ptwalk/text.hpp"

namespace ptwalk {

namespace {

// Most DAMON files take damon_sysfs_lock with mutex_trylock() and fail with
// EBUSY while another access holds it (sysfs.c: state_show(), state_store(),
// pid_show(), nr_kdamonds_store(), nr_contexts_store(); sysfs-schemes.c:
// nr_schemes_store()). 7.3's state_store() holds it across a whole
// tried_regions update. Retried for up to a second.
constexpr int kBusyRetries = 100;
constexpr useconds_t kBusyWaitUs = 10000;

std::string describe(const std::string &path, int e)
{
	std::string s = path + ": " + std::strerror(e);
	if (e == EACCES || e == EPERM)
		s += " (DAMON's files are root's: 0600)";
	return s;
}

// Writes value in one write(2), as `echo -n value > path` does (kstrtoint(),
// kstrtoul() and sysfs_streq() take it with or without a newline). The
// file must exist: no O_CREAT. 0 or the errno.
int write_attr(const std::string &path, const std::string &value)
{
	for (int i = 0;; i++) {
		Fd fd(open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
		if (!fd)
			return errno;
		ssize_t n = write(fd.get(), value.data(), value.size());
		int e = n == ssize_t(value.size()) ? 0 : n < 0 ? errno : EIO;
		if ((e != EBUSY && e != EINTR) || i >= kBusyRetries)
			return e;
		usleep(kBusyWaitUs);
	}
}

// The file's text, trimmed; nullopt with *err = errno. One read(2): a sysfs
// attribute hands over its whole text (at most a page) in the first.
std::optional<std::string> read_attr(const std::string &path, int *err)
{
	for (int i = 0;; i++) {
		Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
		if (!fd) {
			*err = errno;
			return std::nullopt;
		}
		char buf[4096];
		ssize_t n = read(fd.get(), buf, sizeof(buf));
		if (n >= 0)
			return std::string(text::trim(std::string_view(buf, size_t(n))));
		*err = errno;
		if ((*err != EBUSY && *err != EINTR) || i >= kBusyRetries)
			return std::nullopt;
		usleep(kBusyWaitUs);
	}
}

std::string write_each(std::initializer_list<std::pair<std::string, std::string>> files)
{
	for (const auto &[path, value] : files)
		if (int e = write_attr(path, value))
			return describe(path, e) + " (writing \"" + value + "\")";
	return "";
}

bool is_dir(const std::string &path)
{
	struct stat st;
	return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The checks of damon_set_attrs() (core.c, 6.12 and 7.3), which "on" runs.
std::string check_attrs(const DamonAttrs &a)
{
	if (!a.sample_us || !a.aggr_us || !a.update_us)
		return "DAMON: the sampling, aggregation and update intervals must be > 0";
	if (a.sample_us > a.aggr_us)
		return "DAMON: the sampling interval exceeds the aggregation interval";
	if (a.min_nr_regions < 3 || a.min_nr_regions > a.max_nr_regions)
		return "DAMON: needs 3 <= min_nr_regions <= max_nr_regions";
	return "";
}

// A kdamond stops by itself once no target's task is alive
// (kdamond_need_stop(), core.c: ops.target_valid, damon_va_target_valid()
// in vaddr.c); state then reads "off" (state_show(): damon_is_running() in
// 7.3, damon_sysfs_ctx_running() in 6.12, both ctx->kdamond != NULL).
const char *kStoppedWhy = "the kdamond has stopped: its target process exited";

std::string check_running(const std::string &state)
{
	int e = 0;
	auto s = read_attr(state, &e);
	if (!s)
		return describe(state, e);
	if (*s == "off")
		return state + " reads \"off\": " + kStoppedWhy;
	return "";
}

std::string read_u64(const std::string &path, uint64_t max, uint64_t &out)
{
	int e = 0;
	auto s = read_attr(path, &e);
	if (!s)
		return describe(path, e);
	auto v = text::parse_u64(*s);
	if (!v || *v > max)
		return path + ": \"" + *s + "\" is not a number the kernel writes there";
	out = *v;
	return "";
}

// tried_regions/<i>/ (damos_sysfs_populate_region_dir(), 7.3; 6.12's
// damon_sysfs_before_damos_apply()): start, end ("%lu"), nr_accesses, age
// ("%u"); 6.14+ add sz_filter_passed, 7.x a probes/ directory.
std::string read_region(const std::string &dir, DamonRegion &r)
{
	constexpr uint64_t u32 = std::numeric_limits<uint32_t>::max();
	constexpr uint64_t u64 = std::numeric_limits<uint64_t>::max();
	uint64_t nr = 0, age = 0;
	std::string err = read_u64(dir + "/start", u64, r.start);
	if (err.empty())
		err = read_u64(dir + "/end", u64, r.end);
	if (err.empty())
		err = read_u64(dir + "/nr_accesses", u32, nr);
	if (err.empty())
		err = read_u64(dir + "/age", u32, age);
	if (err.empty() && r.end <= r.start)
		err = dir + ": end " + std::to_string(r.end) + " <= start " +
		      std::to_string(r.start);
	r.nr_accesses = uint32_t(nr);
	r.age = uint32_t(age);
	return err;
}

// The region directories are named 0..N-1 in address order, next to the
// total_bytes file (kobject_init_and_add(..., "%d", nr_regions)).
std::variant<std::vector<DamonRegion>, std::string> read_tried_regions(const std::string &dir)
{
	std::unique_ptr<DIR, int (*)(DIR *)> d(opendir(dir.c_str()), closedir);
	if (!d)
		return describe(dir, errno);
	std::vector<uint64_t> idx;
	while (const dirent *de = readdir(d.get())) {
		std::string_view name = de->d_name;
		if (!name.empty() && name.size() < 10 &&
		    std::all_of(name.begin(), name.end(),
				[](char ch) { return ch >= '0' && ch <= '9'; }))
			idx.push_back(*text::parse_u64(name));
	}
	std::sort(idx.begin(), idx.end());
	std::vector<DamonRegion> out(idx.size());
	for (size_t i = 0; i < idx.size(); i++) {
		std::string err = read_region(dir + "/" + std::to_string(idx[i]), out[i]);
		if (!err.empty())
			return err;
	}
	return out;
}

} // namespace

// Before 6.14 an update ends when the scheme was applied once or when two
// apply intervals of jiffies have passed, whichever is first (6.12.118
// mm/damon/sysfs-schemes.c: damos_tried_regions_init_upd_status() sets
// upd_timeout_jiffies, damos_sysfs_mark_finished_regions_updates() ends it
// after any sampling past it). An aggregation is aggr/sample samplings,
// each a sleep of sample_us and the kdamond's work (kdamond_fn()), so it is
// longer on the wall than aggr_us, and on a busy or emulated machine the
// apply can come after the timeout: the update then ends with no region
// (6.12 cloud under TCG, 12-05: aggregations 275 and 600 ms apart for a
// 200 ms interval, the third read empty). 6.14+ wait for the apply itself
// (damos_walk()).
static bool damon_update_may_time_out()
{
	utsname u{};
	unsigned major = 0, minor = 0;
	return uname(&u) != 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2 || major < 6 ||
	       (major == 6 && minor < 14);
}

DamonSysfs::DamonSysfs(std::string root, std::string modules)
	: root_(std::move(root)), modules_(std::move(modules)),
	  update_may_time_out_(damon_update_may_time_out())
{
}

DamonSysfs::~DamonSysfs()
{
	if (owned_)
		stop();
}

std::string DamonSysfs::kdamond_dir() const
{
	return root_ + "/kdamonds/0";
}

std::string DamonSysfs::unavailable() const
{
	struct stat st;
	int e = stat(root_.c_str(), &st) != 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
	if (e)
		return root_ + ": " + std::strerror(e) + " (a kernel without CONFIG_DAMON_SYSFS)";
	// nr_kdamonds_show(): how many kdamonds/<N>/ exist, running or not
	const std::string nr_path = root_ + "/kdamonds/nr_kdamonds";
	auto nr = read_attr(nr_path, &e);
	if (!nr)
		return describe(nr_path, e);
	auto n = text::parse_u64(*nr);
	if (!n)
		return nr_path + ": \"" + *nr + "\" is not a number";
	if (*n > 0)
		return "DAMON is in use: " + std::to_string(*n) +
		       " kdamond(s) already configured (" + nr_path +
		       "); ptwalk does not touch another's";
	if (access(nr_path.c_str(), W_OK) != 0)
		return describe(nr_path, errno);
	// These modules start their context with damon_start(..., true): while
	// it runs, a sysfs "on" (damon_start(..., false)) fails with EBUSY
	// (core.c, damon_start(): running_exclusive_ctxs). Their "enabled"
	// parameters: reclaim.c, lru_sort.c, stat.c (MODULE_PARAM_PREFIX).
	for (const char *m : {"damon_reclaim", "damon_lru_sort", "damon_stat"}) {
		std::string p = modules_ + "/" + m + "/parameters/enabled";
		if (auto v = read_attr(p, &e); v && *v == "Y")
			return std::string("DAMON is in use: ") + m +
			       " runs its own kdamond, which excludes others (" + p +
			       " is Y); ptwalk does not touch another's";
	}
	return "";
}

std::string DamonSysfs::start(pid_t pid, const DamonAttrs &a)
{
	if (owned_)
		return "DAMON: already started";
	if (pid <= 0)
		return "DAMON: no target pid";
	if (std::string err = check_attrs(a); !err.empty())
		return err;
	if (std::string why = unavailable(); !why.empty())
		return why;
	const std::string nr = root_ + "/kdamonds/nr_kdamonds";
	if (int e = write_attr(nr, "1"))
		return describe(nr, e);
	owned_ = true;
	attrs_ = a;
	std::string err = configure(pid, a);
	const std::string state = kdamond_dir() + "/state";
	if (err.empty()) {
		// damon_sysfs_turn_damon_on(): EINVAL when the pid has gone
		// (damon_sysfs_add_target(): find_get_pid()), the ops are not
		// registered (damon_select_ops()) or damon_set_attrs() refuses;
		// EBUSY when an exclusive context runs (damon_start())
		if (int e = write_attr(state, "on"))
			err = describe(state, e) + " (writing \"on\")";
	}
	if (err.empty())
		err = check_running(state);
	if (!err.empty()) {
		std::string undo = stop();
		if (!undo.empty())
			err += "; undoing it: " + undo;
	}
	return err;
}

std::string DamonSysfs::configure(pid_t pid, const DamonAttrs &a)
{
	const std::string k = kdamond_dir();
	const std::string c = k + "/contexts/0";
	std::string err = write_each({{k + "/contexts/nr_contexts", "1"}});
	if (!err.empty())
		return err;
	// avail_operations_show(): one line per registered operations set
	// (damon_is_registered_ops()); vaddr is there with CONFIG_DAMON_VADDR.
	// A context dir is needed to read it, hence here and not unavailable().
	int e = 0;
	auto ops = read_attr(c + "/avail_operations", &e);
	if (!ops)
		return describe(c + "/avail_operations", e);
	bool vaddr = false;
	for (std::string_view l : text::split_lines(*ops))
		vaddr = vaddr || text::trim(l) == "vaddr";
	if (!vaddr)
		return "DAMON has no vaddr operations (CONFIG_DAMON_VADDR off): " + c +
		       "/avail_operations lists \"" + *ops + "\"";
	const std::string m = c + "/monitoring_attrs";
	err = write_each({
		{c + "/operations", "vaddr"},
		{m + "/intervals/sample_us", std::to_string(a.sample_us)},
		{m + "/intervals/aggr_us", std::to_string(a.aggr_us)},
		{m + "/intervals/update_us", std::to_string(a.update_us)},
		{m + "/nr_regions/min", std::to_string(a.min_nr_regions)},
		{m + "/nr_regions/max", std::to_string(a.max_nr_regions)},
		{c + "/targets/nr_targets", "1"},
		{c + "/targets/0/pid_target", std::to_string(pid)},
	});
	return err.empty() ? set_scheme() : err;
}

// One scheme, action "stat" (DAMOS_STAT: the region is left alone), whose
// access pattern (closed intervals, __damos_valid_target(), core.c) takes
// every region: sz [0, ULONG_MAX], nr_accesses and age [0, UINT_MAX] (the
// ul_range files are unsigned long; struct damos_access_pattern holds
// nr_accesses and age as unsigned int). The kernel's defaults are [0, 0]
// for all three (damon_sysfs_access_pattern_add_range_dir()), matching no
// region. The rest stays as the nr_schemes write made it: no quotas
// (kzalloc'd: ms and bytes 0 disable them, usage.rst), watermarks metric
// "none" (damon_sysfs_watermarks_alloc(DAMOS_WMARK_NONE, ...)): always
// active (damos_wmark_wait_us() returns 0), apply_interval_us 0: every
// aggregation (damos_set_next_apply_sis()), no filters.
std::string DamonSysfs::set_scheme()
{
	const std::string s = kdamond_dir() + "/contexts/0/schemes";
	std::string err = write_each({{s + "/nr_schemes", "1"}});
	if (!err.empty())
		return err;
	if (!is_dir(s + "/0/tried_regions"))
		return s + "/0/tried_regions: missing (DAMON's tried_regions need Linux 6.2+)";
	const std::string p = s + "/0/access_pattern";
	const std::string ulong_max = std::to_string(std::numeric_limits<unsigned long>::max());
	const std::string uint_max = std::to_string(std::numeric_limits<unsigned int>::max());
	return write_each({
		{s + "/0/action", "stat"},
		{p + "/sz/min", "0"},
		{p + "/sz/max", ulong_max},
		{p + "/nr_accesses/min", "0"},
		{p + "/nr_accesses/max", uint_max},
		{p + "/age/min", "0"},
		{p + "/age/max", uint_max},
	});
}

std::string DamonSysfs::adopt()
{
	const std::string nr_path = root_ + "/kdamonds/nr_kdamonds";
	int e = 0;
	auto nr = read_attr(nr_path, &e);
	if (!nr)
		return describe(nr_path, e);
	if (*nr != "1")
		return nr_path + " reads \"" + *nr + "\", not the one kdamond ptwalk started";
	owned_ = true;
	return "";
}

// pid_show(): the kdamond thread's pid, -1 when it does not run.
std::optional<pid_t> DamonSysfs::kdamond_pid() const
{
	if (!owned_)
		return std::nullopt;
	int e = 0;
	auto s = read_attr(kdamond_dir() + "/pid", &e);
	auto v = s ? text::parse_u64(*s) : std::nullopt; // "-1": nullopt
	if (!v || *v == 0 || *v > uint64_t(std::numeric_limits<pid_t>::max()))
		return std::nullopt;
	return pid_t(*v);
}

// "update_schemes_tried_regions" (state_store() -> damon_sysfs_handle_cmd()):
//
// 7.3 (6.14+): damon_sysfs_update_schemes_tried_regions() clears the region
// dirs and calls damos_walk() (core.c) holding damon_sysfs_lock; it waits,
// in wait_for_completion() (uninterruptible), until kdamond_apply_schemes()
// has applied every scheme once (damos_walk_complete()): at most one apply
// interval (aggr_us here) and the sampling in progress. A kdamond that
// exits cancels the walk (damos_walk_cancel() in kdamond_fn()): ECANCELED;
// one already stopped: ECANCELED at once (walk_control_obsolete).
//
// 6.12: damon_sysfs_handle_cmd() queues the request and polls every 100 ms
// (schedule_timeout_idle(): not interruptible either) until the kdamond's
// callbacks have handled it, or the kdamond stopped; then it returns 0,
// with whatever regions were collected. The callbacks take it at the next
// sampling, collect during the next apply of the scheme and finish then,
// or after 2 apply intervals without one (damos_tried_regions_init_upd_
// status(): upd_timeout_jiffies). EINVAL when the kdamond is not running.
//
// Hence the state check after the write, and update_wait_bound_us().
std::variant<std::vector<DamonRegion>, std::string> DamonSysfs::regions()
{
	if (!owned_)
		return std::string("DAMON: not started");
	const std::string state = kdamond_dir() + "/state";
	if (std::string err = check_running(state); !err.empty())
		return err;
	if (int e = write_attr(state, "update_schemes_tried_regions")) {
		if (e == ECANCELED || e == EINVAL)
			return describe(state, e) + ": " + kStoppedWhy;
		return describe(state, e) + " (writing \"update_schemes_tried_regions\")";
	}
	if (std::string err = check_running(state); !err.empty())
		return err;
	const std::string dir = kdamond_dir() + "/contexts/0/schemes/0/tried_regions";
	auto r = read_tried_regions(dir);
	if (auto *v = std::get_if<std::vector<DamonRegion>>(&r);
	    v && v->empty() && !update_may_time_out_)
		return dir + ": no regions (the scheme was applied to none)";
	return r;
}

uint64_t DamonSysfs::update_wait_bound_us() const
{
	// 6.12's worst: the next sampling, 2 apply intervals, the sampling that
	// notices, the 100 ms poll; plus 100 ms for the scheduler
	return 2 * attrs_.aggr_us + 2 * attrs_.sample_us + 200000;
}

std::string DamonSysfs::stop()
{
	if (!owned_)
		return "";
	const std::string state = kdamond_dir() + "/state";
	int e = 0;
	auto s = read_attr(state, &e);
	if (!s || *s != "off") {
		// damon_sysfs_turn_damon_off(): EINVAL for a kdamond never turned
		// on; 6.12 also returns damon_stop()'s EPERM (__damon_stop()) for
		// one that exited meanwhile. damon_stop() waits for the thread
		// (kthread_stop_put()), so nr_kdamonds is free after.
		e = write_attr(state, "off");
		if (e && e != EINVAL && e != EPERM && e != ENOENT)
			return describe(state, e) + " (writing \"off\")";
	}
	// damon_sysfs_kdamonds_add_dirs(kdamonds, 0): removes kdamonds/0 and
	// all under it; the kdamond's context goes with it
	// (damon_sysfs_kdamond_release() -> damon_destroy_ctx())
	const std::string nr = root_ + "/kdamonds/nr_kdamonds";
	if ((e = write_attr(nr, "0")))
		return describe(nr, e) + " (writing \"0\")";
	owned_ = false;
	return "";
}

uint64_t damon_accessed_bytes(const std::vector<DamonRegion> &r, uint64_t lo, uint64_t hi)
{
	uint64_t sum = 0;
	for (const DamonRegion &x : r) {
		if (x.nr_accesses == 0)
			continue;
		uint64_t a = std::max(x.start, lo), b = std::min(x.end, hi);
		if (a < b)
			sum += b - a;
	}
	return sum;
}

} // namespace ptwalk
