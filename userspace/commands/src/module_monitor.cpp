// SPDX-License-Identifier: GPL-2.0
// `ptwalk monitor` with ptwalk.ko loaded: every walk the module records on
// the host, by any process, with the stalls it attributed to each.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <sys/mount.h>
#include <tuple>
#include <unistd.h>

#include "ptwalk/capabilities.hpp"
#include "ptwalk/clock.hpp"
#include "ptwalk/fd.hpp"
#include "ptwalk/module_view.hpp"
#include "ptwalk/monitor.hpp"
#include "ptwalk/procfs.hpp"
#include "ptwalk/signals.hpp"
#include "ptwalk/result.hpp"
#include "ptwalk/units.hpp"
#include "ptwalk/monitor_json.hpp"

namespace ptwalk {

namespace {

std::string comm_of(int32_t pid)
{
	if (pid <= 0)
		return "?";
	auto c = read_file("/proc/" + std::to_string(pid) + "/comm", nullptr);
	if (!c)
		return "(exited)";
	while (!c->empty() && c->back() == '\n')
		c->pop_back();
	return *c;
}

// What the module recorded while the monitor watched: walks after seq0,
// their stalls, and the targets' names read while they lived.
struct Recorded {
	std::map<uint64_t, ModuleWalk> walks;
	std::map<std::tuple<uint64_t, int32_t, uint64_t>, ModuleStall> stalls;
	std::map<int32_t, std::string> comms;
	uint64_t t0 = 0, t1 = 0;
	bool interrupted = false;
};

// Polls the module's records every 200 ms until the duration ends or a
// stop signal.
Recorded collect(const MonitorOptions &o, const std::string &d)
{
	StopSignals stop_signals;
	Recorded r;
	uint64_t seq0 = 0;
	for (auto &w : parse_module_walks(read_file(d + "/walks", nullptr).value_or("")))
		seq0 = std::max(seq0, w.seq);
	r.t0 = now_ns();
	if (!o.quiet)
		fprintf(stderr,
			"ptwalk monitor: watching walks recorded by ptwalk.ko for %.1f s "
			"(Ctrl-C stops early)\n",
			double(o.duration_ns) / 1e9);
	for (;;) {
		for (auto &w : parse_module_walks(read_file(d + "/walks", nullptr).value_or("")))
			if (w.seq > seq0 && r.walks.emplace(w.seq, w).second &&
			    !r.comms.count(w.target_tgid))
				r.comms[w.target_tgid] = comm_of(w.target_tgid); // while alive
		for (auto &s : parse_module_stalls(read_file(d + "/stalls", nullptr).value_or("")))
			if (s.walk_seq > seq0)
				r.stalls.emplace(
					std::make_tuple(s.walk_seq, s.waiter_pid, s.start_ns), s);
		if (StopSignals::caught() || now_ns() - r.t0 >= o.duration_ns)
			break;
		usleep(200000);
	}
	r.t1 = now_ns();
	r.interrupted = StopSignals::caught() != 0;
	return r;
}

// One walk as the JSON holds it; *cells: its stalls for the table row.
ModuleHold walk_hold(uint64_t seq, const ModuleWalk &w, const Recorded &r, std::string *cells)
{
	ModuleHold h;
	h.seq = seq;
	h.kind = w.kind;
	h.start_ns = w.start_ns;
	h.duration_ns = w.duration_ns;
	h.span_ns = w.end_ns - w.start_ns;
	h.pte_tables = w.pte_tables;
	h.pte_slots = w.pte_slots;
	h.lock_hold_ns = w.lock_hold_ns;
	h.mode = w.lock_mode;
	h.tlb_flushes = w.tlb_flushes;
	h.holder = {w.walker_pid, std::nullopt, w.walker_comm, std::nullopt};
	// the module names the target itself (the walked task's tgid)
	auto c = r.comms.find(w.target_tgid);
	h.target = {w.target_tgid, c != r.comms.end() ? c->second : std::string("?"), Basis::module,
		    std::nullopt, std::nullopt};
	for (auto &[k, s] : r.stalls) {
		if (s.walk_seq != seq)
			continue;
		h.waiters.push_back({s.waiter_pid, std::nullopt, s.waiter_comm, std::nullopt,
				     s.wait_ns, s.mode});
		char cell[96];
		snprintf(cell, sizeof(cell), " %d %s %.2f", s.waiter_pid, s.waiter_comm.c_str(),
			 double(s.wait_ns) / 1e6);
		*cells += cell;
	}
	return h;
}

void print_row(const ModuleWalk &w, const ModuleHold &h, const std::string &cells, uint64_t t0)
{
	char walker[64], target[64];
	snprintf(walker, sizeof(walker), "%d %s", w.walker_pid, w.walker_comm.c_str());
	snprintf(target, sizeof(target), "%d %s", w.target_tgid, h.target.comm.c_str());
	printf("%9.3f %-13s %-22s %-22s %10.2f %10llu %9.2f%s\n",
	       double(int64_t(w.start_ns - t0)) / 1e9, name(w.kind), walker, target,
	       double(w.duration_ns) / 1e6, (unsigned long long)w.pte_slots,
	       double(w.lock_hold_ns) / 1e6, cells.c_str());
}

} // namespace

int run_module_monitor(const MonitorOptions &o)
{
	if (!module_loaded()) {
		fprintf(stderr, "ptwalk monitor: --backend module: ptwalk.ko is not loaded\n");
		return 1;
	}
	bool mounted = false;
	if (access(kModuleDir, F_OK) != 0) {
		if (mount("debugfs", "/sys/kernel/debug", "debugfs", 0, nullptr) != 0) {
			fprintf(stderr, "ptwalk monitor: mounting debugfs: %s\n", strerror(errno));
			return 1;
		}
		mounted = true;
	}
	// Mounted here: the records read through a descriptor of their
	// directory and the mount detached at once, so that nothing is left to
	// unmount (CAP_SYS_ADMIN) at the end.
	std::string dir = kModuleDir;
	Fd dir_fd;
	if (mounted) {
		dir_fd.reset(open(kModuleDir, O_PATH | O_DIRECTORY | O_CLOEXEC));
		const int e = errno;
		umount2("/sys/kernel/debug", MNT_DETACH);
		if (!dir_fd) {
			fprintf(stderr, "ptwalk monitor: %s: %s\n", kModuleDir, strerror(e));
			return 1;
		}
		dir = "/proc/self/fd/" + std::to_string(dir_fd.get());
	}
	// Least privilege from here on: the module's files (0400, root's, in
	// root's 0700 debugfs) are the owner's to read and its records name
	// the target itself; /proc/PID/comm is anyone's. No capability is kept.
	bool bounding_kept = false;
	if (auto e = keep_only_capabilities({}, &bounding_kept); !e.empty()) {
		fprintf(stderr, "ptwalk monitor: dropping capabilities: %s\n", e.c_str());
		return 1;
	}
	const Recorded r = collect(o, dir);

	MonitorResult res = monitor_result(BackendKind::module, o, r.t0, r.t1, r.interrupted);
	std::vector<ModuleHold> &walks = res.walks.emplace();
	size_t shown = 0;
	if (!o.quiet)
		printf("%9s %-13s %-22s %-22s %10s %10s %9s %s\n", "START_S", "KIND",
		       "WALKER (pid comm)", "TARGET (tgid comm)", "DUR_MS", "PTE_SLOTS", "HOLD_MS",
		       "STALLS (pid comm wait_ms)");
	for (auto &[seq, w] : r.walks) {
		std::string cells;
		ModuleHold h = walk_hold(seq, w, r, &cells);
		if (!o.quiet &&
		    (w.lock_hold_ns >= o.min_hold_ns || w.duration_ns >= o.min_hold_ns)) {
			print_row(w, h, cells, r.t0);
			shown++;
		}
		walks.push_back(std::move(h));
	}
	if (!o.quiet)
		printf("ptwalk monitor (module): %.2f s, %zu walks recorded, %zu >= %s shown\n",
		       double(r.t1 - r.t0) / 1e9, r.walks.size(), shown,
		       format_ns(o.min_hold_ns).c_str());
	if (!o.out_path.empty()) {
		std::string e =
			write_atomically(o.out_path, monitor_result_json(res).dump(1) + "\n");
		if (!e.empty()) {
			fprintf(stderr, "ptwalk monitor: %s\n", e.c_str());
			return 1;
		}
	}
	return 0;
}

} // namespace ptwalk
