// SPDX-License-Identifier: GPL-2.0
// `ptwalk monitor` with ptwalk.ko loaded: every walk the module records on
// the host, by any process, with the stalls it attributed to each.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <sys/mount.h>
#include <tuple>
#include <unistd.h>

#include "ptwalk/clock.hpp"
#include "ptwalk/module_view.hpp"
#include "ptwalk/monitor.hpp"
#include "ptwalk/procfs.hpp"
#include "ptwalk/signals.hpp"
#include "ptwalk/result.hpp"
#include "ptwalk/units.hpp"

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

} // namespace

int run_module_monitor(const MonitorOptions &o)
{
	const char *dir = kModuleDir;
	if (!module_loaded()) {
		fprintf(stderr, "ptwalk monitor: --backend module: ptwalk.ko is not loaded\n");
		return 1;
	}
	bool mounted = false;
	if (access(dir, F_OK) != 0) {
		if (mount("debugfs", "/sys/kernel/debug", "debugfs", 0, nullptr) != 0) {
			fprintf(stderr, "ptwalk monitor: mounting debugfs: %s\n", strerror(errno));
			return 1;
		}
		mounted = true;
	}
	std::optional<StopSignals> stop_signals(std::in_place);

	const std::string d = dir;
	uint64_t seq0 = 0;
	for (auto &w : parse_module_walks(read_file(d + "/walks", nullptr).value_or("")))
		seq0 = std::max(seq0, w.seq);
	std::map<uint64_t, ModuleWalk> walks;
	std::map<std::tuple<uint64_t, int32_t, uint64_t>, ModuleStall> stalls;
	std::map<int32_t, std::string> comms;
	const uint64_t t0 = now_ns();
	if (!o.quiet)
		fprintf(stderr, "ptwalk monitor: watching walks recorded by ptwalk.ko for %.1f s "
				"(Ctrl-C stops early)\n", double(o.duration_ns) / 1e9);
	for (;;) {
		for (auto &w : parse_module_walks(read_file(d + "/walks", nullptr).value_or("")))
			if (w.seq > seq0 && walks.emplace(w.seq, w).second &&
			    !comms.count(w.target_tgid))
				comms[w.target_tgid] = comm_of(w.target_tgid); // while alive
		for (auto &s : parse_module_stalls(read_file(d + "/stalls", nullptr).value_or("")))
			if (s.walk_seq > seq0)
				stalls.emplace(std::make_tuple(s.walk_seq, s.waiter_pid, s.start_ns), s);
		if (StopSignals::caught() || now_ns() - t0 >= o.duration_ns)
			break;
		usleep(200000);
	}
	const uint64_t t1 = now_ns();
	const bool interrupted = StopSignals::caught() != 0;
	stop_signals.reset();
	if (mounted)
		umount("/sys/kernel/debug");

	Json j = Json::object();
	j["schema"] = "ptwalk.monitor/1";
	j["backend"] = "module";
	j["duration_ns"] = t1 - t0;
	j["requested_duration_ns"] = o.duration_ns;
	j["interrupted"] = interrupted;
	j["start_ns"] = t0;
	j["min_hold_ns"] = o.min_hold_ns;
	Json arr = Json::array();
	size_t shown = 0;
	if (!o.quiet)
		printf("%9s %-13s %-22s %-22s %10s %10s %9s %s\n", "START_S", "KIND",
		       "WALKER (pid comm)", "TARGET (tgid comm)", "DUR_MS", "PTE_SLOTS",
		       "HOLD_MS", "STALLS (pid comm wait_ms)");
	for (auto &[seq, w] : walks) {
		Json h = Json::object();
		h["seq"] = seq;
		h["kind"] = w.kind;
		h["start_ns"] = w.start_ns;
		h["duration_ns"] = w.duration_ns;
		h["span_ns"] = w.end_ns - w.start_ns;
		h["pte_tables"] = w.pte_tables;
		h["pte_slots"] = w.pte_slots;
		h["lock_hold_ns"] = w.lock_hold_ns;
		h["mode"] = w.lock_mode;
		h["tlb_flushes"] = w.tlb_flushes;
		h["holder"] = Json(Json::Object{{"pid", w.walker_pid}, {"comm", w.walker_comm}});
		// the module names the target itself (the walked task's tgid)
		h["target"] = Json(Json::Object{{"tgid", w.target_tgid},
						 {"comm", comms.count(w.target_tgid)
								  ? comms[w.target_tgid]
								  : std::string("?")},
						 {"basis", std::string("module")}});
		Json wa = Json::array();
		std::string cells;
		for (auto &[k, s] : stalls) {
			if (s.walk_seq != seq)
				continue;
			wa.push(Json(Json::Object{{"pid", s.waiter_pid}, {"comm", s.waiter_comm},
						  {"wait_ns", s.wait_ns}, {"mode", s.mode}}));
			char c[96];
			snprintf(c, sizeof(c), " %d %s %.2f", s.waiter_pid, s.waiter_comm.c_str(),
				 double(s.wait_ns) / 1e6);
			cells += c;
		}
		h["waiters"] = std::move(wa);
		const bool big = w.lock_hold_ns >= o.min_hold_ns || w.duration_ns >= o.min_hold_ns;
		if (!o.quiet && big) {
			char walker[64], target[64];
			snprintf(walker, sizeof(walker), "%d %s", w.walker_pid, w.walker_comm.c_str());
			snprintf(target, sizeof(target), "%d %s", w.target_tgid,
				 h["target"].find("comm")->string().value_or("?").c_str());
			printf("%9.3f %-13s %-22s %-22s %10.2f %10llu %9.2f%s\n",
			       double(int64_t(w.start_ns - t0)) / 1e9, w.kind.c_str(), walker, target,
			       double(w.duration_ns) / 1e6, (unsigned long long)w.pte_slots,
			       double(w.lock_hold_ns) / 1e6, cells.c_str());
			shown++;
		}
		arr.push(std::move(h));
	}
	j["walks"] = std::move(arr);
	if (!o.quiet)
		printf("ptwalk monitor (module): %.2f s, %zu walks recorded, %zu >= %s shown\n",
		       double(t1 - t0) / 1e9, walks.size(), shown, format_ns(o.min_hold_ns).c_str());
	if (!o.out_path.empty()) {
		std::string e = write_atomically(o.out_path, j.dump(1) + "\n");
		if (!e.empty()) {
			fprintf(stderr, "ptwalk monitor: %s\n", e.c_str());
			return 1;
		}
	}
	return 0;
}

} // namespace ptwalk
