// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/run.hpp"

#include <algorithm>
#include <csignal>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <memory>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptwalk/backend.hpp"
#include "ptwalk/calibrate.hpp"
#include "ptwalk/clock.hpp"
#include "ptwalk/module_view.hpp"
#include "ptwalk/perf_session.hpp"
#include "ptwalk/procfs.hpp"
#include "ptwalk/process.hpp"
#include "ptwalk/result.hpp"
#include "ptwalk/scanner.hpp"
#include "ptwalk/shared.hpp"
#include "ptwalk/units.hpp"
#include "ptwalk/validation.hpp"
#include "ptwalk/workload.hpp"
#include "run_result.hpp"

namespace ptwalk {

namespace {

volatile sig_atomic_t g_signal = 0;

void on_signal(int sig) { g_signal = sig; }

void install_handlers()
{
	struct sigaction sa{};
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, nullptr);
	sigaction(SIGTERM, &sa, nullptr);
	sigaction(SIGHUP, &sa, nullptr);
}

void progress_bar(uint64_t done, uint64_t total, uint64_t elapsed_ns)
{
	const int width = 30;
	double f = total ? double(done) / double(total) : 1;
	int fill = int(f * width);
	double rate = elapsed_ns ? double(done) / (double(elapsed_ns) / 1e9) : 0;
	double eta = rate > 0 ? double(total - done) / rate : 0;
	fprintf(stderr, "\rpopulating [%.*s%*s] %3d%% %s/%s %s/s ETA %.0fs ", fill,
		"##############################", width - fill, "", int(f * 100),
		format_bytes(done).c_str(), format_bytes(total).c_str(),
		format_bytes(uint64_t(rate)).c_str(), eta);
}

// want was validated: auto, module, tracepoint or syscall.
std::unique_ptr<Backend> pick_backend(const std::string &want)
{
	if (want == "syscall")
		return make_syscall_backend();
	if (want == "module" || (want == "auto" && module_loaded()))
		return make_module_backend();
	return make_tracepoint_backend();
}

} // namespace

std::string validate_run(RunOptions &o)
{
	Scenario &sc = o.sc;
	if (sc.size == 0)
		return "--size must be greater than 0";
	sc.size = (sc.size + 4095) & ~uint64_t(4095);
	if (sc.interval_ns == 0)
		return "--interval must be greater than 0";
	if (sc.duration_ns == 0)
		return "--duration must be greater than 0";
	if (sc.victims.size() > kMaxVictims)
		return "at most " + std::to_string(kMaxVictims) + " victims";
	if (o.backend != "auto" && o.backend != "module" &&
	    o.backend != "tracepoint" && o.backend != "syscall")
		return "unknown --backend '" + o.backend +
		       "' (use auto, module, tracepoint or syscall)";
	if (o.backend == "module" && !module_loaded())
		return "--backend module: ptwalk.ko is not loaded "
		       "(/sys/module/ptwalk missing; build with 'make module' and insmod it)";

	std::string err;
	auto mi = read_file("/proc/meminfo", &err);
	if (!mi)
		return err;
	MemInfo m = parse_meminfo(*mi);
	if (sc.backing == Backing::hugetlb) {
		if (!m.hugepage_size)
			return "hugetlb: no Hugepagesize in /proc/meminfo";
		if (sc.size % m.hugepage_size)
			return "--size must be a multiple of the huge page size (" +
			       format_bytes(m.hugepage_size) + ") for hugetlb";
	} else if (!o.force) {
		// the physical backing, its page tables (8 bytes per 4 KiB page
		// mapped, aliases included), a margin
		const uint64_t phys = physical_bytes(sc);
		const uint64_t tables = page_table_bytes(sc);
		const uint64_t need = phys + tables;
		const uint64_t margin = std::max<uint64_t>(512ull << 20, m.total / 20);
		const uint64_t avail = m.available > margin ? m.available - margin : 0;
		if (need > avail)
			return "--size " + format_bytes(sc.size) + " " + name(sc.backing) +
			       " needs about " + format_bytes(need) + " (" +
			       format_bytes(phys) + " of memory + " + format_bytes(tables) +
			       " of page tables) but only " + format_bytes(avail) +
			       " is available (MemAvailable minus a " + format_bytes(margin) +
			       " margin); use a smaller --size, --backing alias, or --force";
	}
	if (sc.backing == Backing::alias && sc.physical < 4096)
		return "--physical must be at least 4K";
	if (sc.backing == Backing::alias && o.calibrate_size == UINT64_MAX)
		o.calibrate_size = default_calibration_size(m.available);
	if (sc.backing == Backing::alias && o.calibrate_size && !o.force) {
		const uint64_t margin = std::max<uint64_t>(512ull << 20, m.total / 20);
		if (o.calibrate_size + o.calibrate_size / 512 + margin > m.available)
			return "--calibrate-size " + format_bytes(o.calibrate_size) +
			       " does not fit in MemAvailable (" + format_bytes(m.available) + ")";
	}
	if (sc.backing == Backing::file) {
		if (sc.dir.empty()) {
			const char *t = getenv("TMPDIR");
			sc.dir = t && *t ? t : "/tmp";
		}
		struct stat st;
		if (stat(sc.dir.c_str(), &st) != 0)
			return "--dir " + sc.dir + ": " + strerror(errno);
		if (!S_ISDIR(st.st_mode))
			return "--dir " + sc.dir + ": not a directory";
		if (access(sc.dir.c_str(), W_OK) != 0)
			return "--dir " + sc.dir + ": " + strerror(errno);
		struct statvfs vfs;
		if (statvfs(sc.dir.c_str(), &vfs) == 0 && !o.force) {
			const uint64_t free_b = uint64_t(vfs.f_bavail) * vfs.f_frsize;
			if (free_b < sc.size)
				return "--dir " + sc.dir + " has " + format_bytes(free_b) +
				       " free; the file needs " + format_bytes(sc.size) +
				       " (use another --dir, a smaller --size, or --force)";
		}
	}
	if (!o.out_path.empty()) {
		// prove now that the result can be written, not after the run
		std::string probe = o.out_path + ".probe." + std::to_string(getpid());
		int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0)
			return "--out " + o.out_path + ": " + strerror(errno);
		close(fd);
		unlink(probe.c_str());
	}
	return "";
}

namespace {

// Before anything runs: the --dry-run plan, and what this machine cannot do
// (exit 4, skipped). Returns an exit code, or -1 to go on.
int preflight(const RunOptions &o)
{
	const Scenario &sc = o.sc;
	if (o.dry_run) {
		const uint64_t ptes = sc.backing == Backing::thp || sc.backing == Backing::hugetlb
					      ? sc.size / (2u << 20)
					      : sc.size / 4096;
		MemInfo m = parse_meminfo(read_file("/proc/meminfo", nullptr).value_or(""));
		printf("plan: %s %s: %llu leaf entries, %s of memory + %s of page tables; "
		       "MemAvailable %s; scanner %s every %s for %s\n",
		       format_bytes(sc.size).c_str(), name(sc.backing),
		       (unsigned long long)ptes, format_bytes(physical_bytes(sc)).c_str(),
		       format_bytes(page_table_bytes(sc)).c_str(),
		       format_bytes(m.available).c_str(), name(sc.profile),
		       format_ns(sc.interval_ns).c_str(), format_ns(sc.duration_ns).c_str());
		return 0;
	}
	if (sc.backing == Backing::hugetlb) {
		MemInfo m = parse_meminfo(read_file("/proc/meminfo", nullptr).value_or(""));
		if (m.hugepages_free * m.hugepage_size < sc.size) {
			fprintf(stderr,
				"ptwalk run: hugetlb: skipped: --size %s needs %llu free %s huge "
				"pages, %llu are free (reserve them: sysctl vm.nr_hugepages=N)\n",
				format_bytes(sc.size).c_str(),
				(unsigned long long)(sc.size / m.hugepage_size),
				format_bytes(m.hugepage_size).c_str(),
				(unsigned long long)m.hugepages_free);
			return 4;
		}
	}
	if (std::string why = profile_unsupported(sc.profile); !why.empty()) {
		fprintf(stderr, "ptwalk run: %s: skipped: %s\n", name(sc.profile), why.c_str());
		return 4;
	}

	return -1;
}

} // namespace

int run_command(RunOptions o)
{
	Scenario &sc = o.sc;
	if (std::string e = validate_run(o); !e.empty()) {
		fprintf(stderr, "ptwalk run: %s\n", e.c_str());
		return 2;
	}
	if (int rc = preflight(o); rc >= 0)
		return rc;

	Shared *sh = create_shared();
	if (!sh) {
		fprintf(stderr, "ptwalk run: shared memory: %s\n", strerror(errno));
		return 1;
	}
	std::unique_ptr<Shared, void (*)(Shared *)> sh_guard(sh, destroy_shared);
	sh->nvictims = unsigned(sc.victims.size());
	for (unsigned i = 0; i < sh->nvictims; i++)
		snprintf(sh->victims[i].name, sizeof(sh->victims[i].name), "%s",
			 name(sc.victims[i]));

	Json result = run_result::header(o);

	install_handlers();
	if (sc.backing == Backing::alias) {
		if (o.calibrate_size == 0) {
			result["alias_calibration"] = Json(Json::Object{
				{"skipped", "disabled (--calibrate-size 0): aliased figures are uncorrected"}});
		} else {
			if (!o.quiet)
				fprintf(stderr, "calibrating the aliasing bias up to %s "
					"(distinct vs aliased pages, cost and stall)...\n",
					format_bytes(o.calibrate_size).c_str());
			result["alias_calibration"] = calibrate_alias(
				sc, calibration_sizes(o.calibrate_size), 5, &g_signal);
		}
	}
	const uint64_t t_start = now_ns();
	pid_t wl = fork_child([&] { return workload_main(sc, sh); });
	if (wl < 0) {
		fprintf(stderr, "ptwalk run: fork: %s\n", strerror(errno));
		return 1;
	}

	int exit_code = 0;
	int wl_status = 0;
	bool wl_gone = false;
	const bool tty = isatty(2) && !o.quiet;
	bool bar = false;
	// wait for populate
	while (sh->workload_state.load() < kReady) {
		if (g_signal)
			break;
		if (child_exited(wl, &wl_status)) {
			wl_gone = true;
			break;
		}
		const uint64_t el = now_ns() - t_start;
		if (tty && el > 1000000000ull) {
			progress_bar(sh->populated_bytes.load(), sc.size, el);
			bar = true;
		}
		usleep(20000);
	}
	if (bar) {
		progress_bar(sh->populated_bytes.load(), sc.size, now_ns() - t_start);
		fputc('\n', stderr);
	}
	if (!g_signal && sh->workload_state.load() != kReady) {
		if (!wl_gone)
			wl_status = reap(wl, 2000, SIGTERM);
		const int st = sh->workload_state.load();
		std::string msg = sh->message[0] ? sh->message : "workload died";
		if (WIFSIGNALED(wl_status))
			msg += std::string(" (killed by signal ") +
			       strsignal(WTERMSIG(wl_status)) + ")";
		if (st == kSkipped) {
			fprintf(stderr, "ptwalk run: %s: skipped: %s\n", name(sc.backing),
				msg.c_str());
			return 4;
		}
		fprintf(stderr, "ptwalk run: workload: %s\n", msg.c_str());
		return 1;
	}

	Json workload = Json::object();
	workload["pid"] = int(wl);
	workload["populate_ns"] = sh->populate_ns.load();
	workload["populate_bytes"] = sh->populated_bytes.load();
	if (sh->populate_ns.load())
		workload["populate_bytes_per_s"] =
			double(sh->populated_bytes.load()) / (double(sh->populate_ns.load()) / 1e9);
	std::string err;
	// measured before victims run: reading smaps_rollup is itself a walk
	auto size0 = g_signal ? std::nullopt : measure_walk_size(wl, &err);
	if (size0)
		workload["size_start"] = size0->to_json();
	// the layout, before the victims add their small mappings
	if (auto maps = read_file("/proc/" + std::to_string(wl) + "/maps", nullptr))
		workload["vma_layout"] = layout_summary(parse_vma_layout(*maps, "ptwalk-alias"));
	sh->victims_go = 1;

	// scanner, then the backend, then let the scanner go
	auto backend = pick_backend(o.backend);
	pid_t sc_pid = -1;
	if (!g_signal) {
		sc_pid = fork_child([&] { return scanner_main(sc, wl, sh); });
		if (sc_pid < 0) {
			fprintf(stderr, "ptwalk run: fork: %s\n", strerror(errno));
			sh->stop = sh->exit_now = 1;
			reap(wl, 5000, 0);
			return 1;
		}
	}
	std::vector<WatchedThread> threads;
	for (unsigned i = 0; i < sh->nvictims; i++)
		threads.push_back({pid_t(sh->victims[i].tid.load()), sh->victims[i].name});
	std::string fallback;
	if (!g_signal && !backend->start(wl, threads, sc_pid)) {
		if (o.backend == "auto") {
			// module -> tracepoint -> syscall, saying why at each step
			fallback = backend->name() + " unavailable: " + backend->detail();
			bool ok = false;
			if (backend->name() == "module") {
				backend = make_tracepoint_backend();
				ok = backend->start(wl, threads, sc_pid);
				if (!ok)
					fallback += "; " + backend->name() +
						    " unavailable: " + backend->detail();
			}
			if (!ok) {
				backend = make_syscall_backend();
				backend->start(wl, threads, sc_pid);
			}
		} else {
			fprintf(stderr, "ptwalk run: --backend %s: %s\n", o.backend.c_str(),
				backend->detail().c_str());
			sh->stop = sh->exit_now = 1;
			reap(sc_pid, 5000, SIGTERM);
			reap(wl, 5000, 0);
			return 1;
		}
	}
	// --cross-check: the tracepoint backend beside ptwalk.ko, a second
	// kernel view of the same walks and waits (validation.hpp)
	std::unique_ptr<Backend> second;
	std::string second_why;
	if (o.cross_check && !g_signal) {
		if (backend->name() != "module") {
			second_why = "no second view: the primary backend is " + backend->name();
		} else {
			second = make_tracepoint_backend();
			if (!second->start(wl, threads, sc_pid)) {
				second_why = "tracepoint view unavailable: " + second->detail();
				second.reset();
			}
		}
	}
	// perf last: it must be recording before the scanner is released
	PerfSession perf;
	Json perf_json;
	if (o.perf && !g_signal) {
		PerfOptions po;
		po.workdir = (o.out_path.empty() ? std::string("ptwalk") : o.out_path) + ".perf";
		if (!perf.start(sc_pid, wl, po))
			perf_json = Json(Json::Object{{"error", perf.why()}});
	}
	sh->scanner_go = 1;
	const uint64_t t_scan = now_ns();

	int sc_status = 0;
	bool sc_done = sc_pid < 0;
	while (!sc_done && !g_signal) {
		if (child_exited(sc_pid, &sc_status)) {
			sc_done = true;
			break;
		}
		if (!wl_gone && child_exited(wl, &wl_status)) {
			wl_gone = true;
			break;
		}
		usleep(20000);
	}
	const uint64_t t_scan_end = now_ns();
	sh->stop = 1;
	if (!sc_done)
		sc_status = reap(sc_pid, 5000, SIGTERM);
	// victims stopped, mapping still there: measure the size once more
	for (int i = 0; i < 500 && !wl_gone && sh->workload_state.load() != kStopped; i++) {
		if (child_exited(wl, &wl_status))
			wl_gone = true;
		usleep(10000);
	}
	std::optional<WalkSize> size1;
	Json self_mem = Json::object();
	if (!g_signal && !wl_gone && sh->workload_state.load() == kStopped) {
		size1 = measure_walk_size(wl, &err);
		// ptwalk's own memory apart from the mapping: O(1) in --size
		auto st = read_file("/proc/" + std::to_string(wl) + "/status", nullptr);
		if (st) {
			const uint64_t rss = parse_status(*st).vm_rss;
			const uint64_t map = sh->populated_bytes.load();
			self_mem["workload_rss_minus_mapping_bytes"] = rss > map ? rss - map : 0;
		}
	}
	if (size1)
		workload["size_end"] = size1->to_json();
	sh->exit_now = 1;
	if (!wl_gone)
		wl_status = reap(wl, 10000, 0);
	backend->stop();
	if (second)
		second->stop();
	if (o.perf && perf_json.is_null()) {
		Json p = perf.stop();
		if (const Json *inner = p.find("perf"))
			perf_json = *inner;
	}

	// what happened
	std::string failure;
	if (g_signal) {
		exit_code = 128 + int(g_signal);
		result["interrupted"] = strsignal(g_signal);
	} else if (wl_gone) {
		failure = "workload died during the scan";
		if (WIFSIGNALED(wl_status))
			failure += std::string(" (") + strsignal(WTERMSIG(wl_status)) + ")";
	} else if (!WIFEXITED(sc_status) || WEXITSTATUS(sc_status) != 0) {
		failure = std::string("scanner: ") +
			  (sh->scanner_message[0] ? sh->scanner_message : "failed");
	}
	if (!failure.empty()) {
		result["error"] = failure;
		exit_code = 1;
	}

	result["scenario"] = run_result::scenario(sc);
	result["backend"] = backend->name();
	result["backend_detail"] = backend->detail();
	if (!fallback.empty())
		result["backend_fallback"] = fallback;
	result["workload"] = std::move(workload);
	if (auto st = read_file("/proc/self/status", nullptr))
		self_mem["parent_hwm_bytes"] = parse_status(*st).vm_hwm;
	if (sh->scanner_hwm)
		self_mem["scanner_hwm_bytes"] = sh->scanner_hwm;
	result["self_memory"] = std::move(self_mem);
	result["scan_start_ns"] = t_scan;
	result["scan_end_ns"] = t_scan_end;

	// walks
	const uint32_t nw = std::min(sh->nwalks.load(), kMaxWalks);
	std::vector<WalkSpan> spans;
	for (uint32_t i = 0; i < nw; i++) {
		const WalkRecord &w = sh->walks[i];
		spans.push_back({w.kind, w.walker_pid, w.start_ns, w.end_ns});
	}
	Json kv = Json::object();
	auto views = backend->annotate(spans, kv);
	Json kv2;
	if (second) {
		kv2 = Json::object();
		second->annotate(spans, kv2);
	}
	std::optional<WalkSize> wsize = size0 ? size0 : size1;
	if (wsize && sc.backing == Backing::zeropage) {
		// zero-page PTEs are not in Rss: count them from the PTE tables
		wsize->ptes = wsize->pte_slots;
		wsize->entries = wsize->pte_slots;
		result["workload"]["ptes_source"] = "VmPTE/8 (zero-page PTEs are not counted in Rss)";
	}
	const WalkSize *ws = wsize ? &*wsize : nullptr;
	const Json *ratios = nullptr;
	if (const Json *cal = result.find("alias_calibration"))
		ratios = cal->find("ratio");
	result["walks"] = run_result::walks(*sh, nw, views, ws, ratios,
					    workload_rss_reference(result));
	result["walks_dropped"] = sh->walks_dropped.load();
	result["kernel_view"] = std::move(kv);
	if (o.perf)
		result["perf"] = std::move(perf_json);

	result["victims"] = run_result::victims(*sh);
	// the victims' own clocks against the kernel view (validation.hpp)
	uint64_t slow_dropped = 0;
	const std::vector<VictimOp> slow_ops = run_result::slow_ops(*sh, &slow_dropped);
	add_validation(result, slow_ops, slow_dropped, second ? &kv2 : nullptr);
	if (o.cross_check && !second)
		result["validation"]["second_view"] = second_why;
	if (second)
		result["kernel_view_tracepoint"] = std::move(kv2);
	summarize_walks(result);
	add_stall_estimates(result, o.layout);
	result["complete"] = !g_signal && failure.empty();

	if (!o.quiet)
		print_table(result, stdout);
	if (!o.out_path.empty()) {
		std::string e = write_atomically(o.out_path, result.dump(1) + "\n");
		if (!e.empty()) {
			fprintf(stderr, "ptwalk run: %s\n", e.c_str());
			return 1;
		}
	}
	if (!failure.empty())
		fprintf(stderr, "ptwalk run: %s\n", failure.c_str());
	if (g_signal)
		fprintf(stderr, "ptwalk run: interrupted (%s): partial result%s\n",
			strsignal(g_signal),
			o.out_path.empty() ? "" : (" written to " + o.out_path).c_str());
	return exit_code;
}

} // namespace ptwalk
