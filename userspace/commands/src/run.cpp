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
#include "ptwalk/alias_bias.hpp"
#include "ptwalk/clock.hpp"
#include "ptwalk/module_view.hpp"
#include "ptwalk/perf_session.hpp"
#include "ptwalk/procfs.hpp"
#include "ptwalk/process.hpp"
#include "ptwalk/result.hpp"
#include "ptwalk/scanner.hpp"
#include "ptwalk/shared.hpp"
#include "ptwalk/signals.hpp"
#include "ptwalk/units.hpp"
#include "ptwalk/validation.hpp"
#include "ptwalk/workload.hpp"
#include "run_result.hpp"

namespace ptwalk {

namespace {

constexpr const char *kNoVmaView =
	"the mmap_lock tracepoints do not see VMA locks; ptwalk.ko's VMA-lock view does "
	"(--backend module, where the kernel's VMA locks are reference counts)";

// set by the stop signals while run_command's StopSignals lives
volatile sig_atomic_t &g_signal = StopSignals::flag();

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

std::unique_ptr<Backend> pick_backend(RunBackend want)
{
	if (want == RunBackend::syscall)
		return make_syscall_backend();
	if (want == RunBackend::module || (want == RunBackend::automatic && module_loaded()))
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
	if (sc.working_set && !o.victims_given) // read and write would touch it
		sc.victims = {Victim::mmap, Victim::fault};
	if (std::string e = working_set_conflict(sc); !e.empty())
		return e;
	if (o.backend == RunBackend::module && !module_loaded())
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
			       " needs about " + format_bytes(need) + " (" + format_bytes(phys) +
			       " of memory + " + format_bytes(tables) +
			       " of page tables) but only " + format_bytes(avail) +
			       " is available (MemAvailable minus a " + format_bytes(margin) +
			       " margin); use a smaller --size, --backing alias, or --force";
	}
	if (sc.backing == Backing::alias && sc.physical < 4096)
		return "--physical must be at least 4K";
	if (sc.backing == Backing::alias && o.calibrate_size == UINT64_MAX)
		o.calibrate_size = default_alias_bias_size(m.available);
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
		       "MemAvailable %s; scanner %s every %s for %s%s\n",
		       format_bytes(sc.size).c_str(), name(sc.backing), (unsigned long long)ptes,
		       format_bytes(physical_bytes(sc)).c_str(),
		       format_bytes(page_table_bytes(sc)).c_str(),
		       format_bytes(m.available).c_str(), name(sc.profile),
		       format_ns(sc.interval_ns).c_str(), format_ns(sc.duration_ns).c_str(),
		       sc.max_iterations
			       ? (" or " + std::to_string(sc.max_iterations) + " scans").c_str()
			       : "");
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

namespace {

// One run, its phases in order: what each phase learns, the next reads.
struct Run {
	RunOptions &o;
	Shared *sh = nullptr;
	RunResult result;
	Child wl, sc; // the workload, the scanner
	bool wl_gone = false;
	uint64_t t_start = 0, t_scan = 0, t_scan_end = 0;
	std::optional<WalkSize> size0, size1;
	std::unique_ptr<Backend> backend, second;
	std::string fallback, second_why;
	PerfSession perf;
	std::optional<PerfSummary> perf_summary; // start()'s refusal, or stop()'s
	std::string failure;
	int exit_code = 0;

	// Stop what was started and say why; the exit status to return.
	int abort(const std::string &msg)
	{
		fprintf(stderr, "ptwalk run: %s\n", msg.c_str());
		sh->stop = sh->exit_now = 1;
		sc.stop(SIGTERM, 5000, Child::kUntilReaped);
		wl.stop(0, 5000, Child::kUntilReaped);
		return 1;
	}
};

void measure_alias_bias_if_needed(Run &r)
{
	const Scenario &sc = r.o.sc;
	if (sc.backing != Backing::alias)
		return;
	if (r.o.calibrate_size == 0) {
		r.result.alias_calibration = AliasCalibration{
			"disabled (--calibrate-size 0): aliased figures are uncorrected"};
		return;
	}
	if (!r.o.quiet)
		fprintf(stderr,
			"calibrating the aliasing bias up to %s "
			"(distinct vs aliased pages, cost and stall)...\n",
			format_bytes(r.o.calibrate_size).c_str());
	r.result.alias_calibration =
		measure_alias_bias(sc, alias_bias_sizes(r.o.calibrate_size), 5, &g_signal);
}

// Waits for the workload to populate (a progress bar past a second on a
// terminal). -1 when ready or interrupted, else the exit status.
int wait_populated(Run &r)
{
	Shared *sh = r.sh;
	const bool tty = isatty(2) && !r.o.quiet;
	bool bar = false;
	while (sh->workload_state.load() < kReady) {
		if (g_signal)
			break;
		if (r.wl.poll_exit()) {
			r.wl_gone = true;
			break;
		}
		const uint64_t el = now_ns() - r.t_start;
		if (tty && el > 1000000000ull) {
			progress_bar(sh->populated_bytes.load(), r.o.sc.size, el);
			bar = true;
		}
		usleep(20000);
	}
	if (bar) {
		progress_bar(sh->populated_bytes.load(), r.o.sc.size, now_ns() - r.t_start);
		fputc('\n', stderr);
	}
	if (g_signal || sh->workload_state.load() == kReady)
		return -1;
	if (!r.wl_gone)
		r.wl.stop(SIGTERM, 2000, Child::kUntilReaped);
	std::string msg = sh->message[0] ? sh->message : "workload died";
	if (WIFSIGNALED(r.wl.status()))
		msg += std::string(" (killed by signal ") + strsignal(WTERMSIG(r.wl.status())) +
		       ")";
	if (sh->workload_state.load() == kSkipped) {
		fprintf(stderr, "ptwalk run: %s: skipped: %s\n", name(r.o.sc.backing), msg.c_str());
		return 4;
	}
	fprintf(stderr, "ptwalk run: workload: %s\n", msg.c_str());
	return 1;
}

// The populated workload, before its victims run: reading smaps_rollup is
// itself a walk, and the victims add small mappings of their own.
void describe_workload(Run &r)
{
	Shared *sh = r.sh;
	WorkloadInfo &w = r.result.workload;
	w.pid = int(r.wl.pid());
	w.populate_ns = sh->populate_ns.load();
	w.populate_bytes = sh->populated_bytes.load();
	if (sh->populate_ns.load())
		w.populate_bytes_per_s =
			double(sh->populated_bytes.load()) / (double(sh->populate_ns.load()) / 1e9);
	std::string err;
	if (!g_signal)
		r.size0 = measure_walk_size(r.wl.pid(), &err);
	w.size_start = r.size0;
	if (auto maps = read_file("/proc/" + std::to_string(r.wl.pid()) + "/maps", nullptr))
		w.vma_layout = layout_summary(parse_vma_layout(*maps, "ptwalk-alias"));
}

// The chosen backend; with --backend auto: module -> tracepoint -> syscall,
// saying why at each step. Exit status, or -1 when watching.
int start_backend(Run &r, const std::vector<WatchedThread> &threads)
{
	r.backend = pick_backend(r.o.backend);
	if (g_signal || r.backend->start(r.wl.pid(), threads, r.sc.pid()))
		return -1;
	if (r.o.backend != RunBackend::automatic)
		return r.abort(std::string("--backend ") + name(r.o.backend) + ": " +
			       r.backend->detail());
	r.fallback = std::string(name(r.backend->kind())) + " unavailable: " + r.backend->detail();
	bool ok = false;
	if (r.backend->kind() == BackendKind::module) {
		r.backend = make_tracepoint_backend();
		ok = r.backend->start(r.wl.pid(), threads, r.sc.pid());
		if (!ok)
			r.fallback += std::string("; ") + name(r.backend->kind()) +
				      " unavailable: " + r.backend->detail();
	}
	if (!ok) {
		r.backend = make_syscall_backend();
		r.backend->start(r.wl.pid(), threads, r.sc.pid());
	}
	return -1;
}

// --cross-check: the tracepoint backend beside ptwalk.ko, a second kernel
// view of the same walks and waits (validation.hpp); then perf, which must
// be recording before the scanner is released.
void start_second_view_and_perf(Run &r, const std::vector<WatchedThread> &threads)
{
	if (r.o.cross_check && !g_signal) {
		if (r.backend->kind() != BackendKind::module) {
			r.second_why = std::string("no second view: the primary backend is ") +
				       name(r.backend->kind());
		} else {
			r.second = make_tracepoint_backend();
			if (!r.second->start(r.wl.pid(), threads, r.sc.pid())) {
				r.second_why = "tracepoint view unavailable: " + r.second->detail();
				r.second.reset();
			}
		}
	}
	if (r.o.perf && !g_signal) {
		PerfOptions po;
		po.workdir =
			(r.o.out_path.empty() ? std::string("ptwalk") : r.o.out_path) + ".perf";
		if (!r.perf.start(r.sc.pid(), r.wl.pid(), po)) {
			r.perf_summary = PerfSummary{};
			r.perf_summary->error = r.perf.why();
		}
	}
}

// The scanner, then the backends, then let the scanner go. Exit status, or
// -1 when scanning.
int start_scan(Run &r)
{
	Shared *sh = r.sh;
	if (!g_signal) {
		r.sc = Child::run([&] { return scanner_main(r.o.sc, r.wl.pid(), sh); });
		if (!r.sc.started())
			return r.abort(std::string("fork: ") + strerror(errno));
	}
	std::vector<WatchedThread> threads;
	for (unsigned i = 0; i < sh->nvictims; i++)
		threads.push_back({pid_t(sh->victims[i].tid.load()), sh->victims[i].victim});
	if (int rc = start_backend(r, threads); rc >= 0)
		return rc;
	start_second_view_and_perf(r, threads);
	sh->scanner_go = 1;
	r.t_scan = now_ns();
	return -1;
}

// Until the scanner ends (or the workload dies, or a signal); then the
// size once more with the victims stopped and the mapping still there, and
// every watcher stopped.
void scan_and_stop(Run &r)
{
	Shared *sh = r.sh;
	bool sc_done = !r.sc.started();
	while (!sc_done && !g_signal) {
		if (r.sc.poll_exit()) {
			sc_done = true;
			break;
		}
		if (!r.wl_gone && r.wl.poll_exit()) {
			r.wl_gone = true;
			break;
		}
		usleep(20000);
	}
	r.t_scan_end = now_ns();
	sh->stop = 1;
	if (!sc_done)
		r.sc.stop(SIGTERM, 5000, Child::kUntilReaped);
	for (int i = 0; i < 500 && !r.wl_gone && sh->workload_state.load() != kStopped; i++) {
		if (r.wl.poll_exit())
			r.wl_gone = true;
		usleep(10000);
	}
	if (!g_signal && !r.wl_gone && sh->workload_state.load() == kStopped) {
		std::string err;
		r.size1 = measure_walk_size(r.wl.pid(), &err);
		// ptwalk's own memory apart from the mapping: O(1) in --size
		if (auto st =
			    read_file("/proc/" + std::to_string(r.wl.pid()) + "/status", nullptr)) {
			const uint64_t rss = parse_status(*st).vm_rss;
			const uint64_t map = sh->populated_bytes.load();
			r.result.self_memory.workload_rss_minus_mapping_bytes =
				rss > map ? rss - map : 0;
		}
	}
	r.result.workload.size_end = r.size1;
	sh->exit_now = 1;
	if (!r.wl_gone)
		r.wl.stop(0, 10000, Child::kUntilReaped);
	if (std::string e = release_scanner_damon(sh); !e.empty())
		r.failure = e;
	r.backend->stop();
	if (r.second)
		r.second->stop();
	if (r.o.perf && !r.perf_summary)
		r.perf_summary = r.perf.stop();
}

// What happened: interrupted, the workload died, or the scanner failed.
void outcome(Run &r)
{
	if (g_signal) {
		r.exit_code = 128 + int(g_signal);
		r.result.interrupted = strsignal(g_signal);
	} else if (r.wl_gone) {
		r.failure = "workload died during the scan";
		if (WIFSIGNALED(r.wl.status()))
			r.failure += std::string(" (") + strsignal(WTERMSIG(r.wl.status())) + ")";
	} else if (!WIFEXITED(r.sc.status()) || WEXITSTATUS(r.sc.status()) != 0) {
		r.failure = std::string("scanner: ") +
			    (r.sh->scanner_message[0] ? r.sh->scanner_message : "failed");
	}
	if (!r.failure.empty()) {
		r.result.error = r.failure;
		r.exit_code = 1;
	}
}

// The walks with each backend's view of them, the victims, and the
// validation of one view against the other (validation.hpp).
void assemble_walks(Run &r)
{
	Shared *sh = r.sh;
	const uint32_t nw = std::min(sh->nwalks.load(), kMaxWalks);
	std::vector<WalkSpan> spans;
	for (uint32_t i = 0; i < nw; i++) {
		const WalkRecord &w = sh->walks[i];
		spans.push_back({w.kind, w.walker_pid, w.start_ns, w.end_ns});
	}
	KernelView kv, kv2;
	auto views = r.backend->annotate(spans, kv);
	if (r.second)
		r.second->annotate(spans, kv2);
	std::optional<WalkSize> wsize = r.size0 ? r.size0 : r.size1;
	if (wsize && r.o.sc.backing == Backing::zeropage) {
		// zero-page PTEs are not in Rss: count them from the PTE tables
		wsize->ptes = wsize->pte_slots;
		wsize->entries = wsize->pte_slots;
		r.result.workload.ptes_source = "VmPTE/8 (zero-page PTEs are not counted in Rss)";
	}
	const auto &cal = r.result.alias_calibration;
	r.result.walks = run_result::walks(*sh, nw, views, wsize ? &*wsize : nullptr,
					   cal ? &*cal : nullptr,
					   workload_rss_reference(r.result.workload));
	r.result.walks_dropped = sh->walks_dropped.load();
	r.result.kernel_view = std::move(kv);
	// a view blind to VMA locks says so where the walks take them
	for (KernelView *k : {&r.result.kernel_view, &kv2})
		if (!k->vma_locks && k->stalls && walks_under_vma_locks(r.result))
			k->vma_locks = VmaLockView{false, kNoVmaView};
	if (r.o.perf)
		r.result.perf = std::move(r.perf_summary);
	r.result.victims = run_result::victims(*sh);
	if (r.o.sc.working_set)
		r.result.working_set = run_result::working_set(r.o.sc, *sh, nw);
	uint64_t slow_dropped = 0;
	const std::vector<VictimOp> slow_ops = run_result::slow_ops(*sh, &slow_dropped);
	add_validation(r.result, slow_ops, slow_dropped, r.second ? &kv2 : nullptr);
	if (r.o.cross_check && !r.second)
		r.result.validation.second_view = r.second_why;
	if (r.second)
		r.result.kernel_view_tracepoint = std::move(kv2);
}

void assemble(Run &r)
{
	RunResult &res = r.result;
	res.scenario = run_result::scenario(r.o.sc);
	res.backend = r.backend->kind();
	res.backend_detail = r.backend->detail();
	if (!r.fallback.empty())
		res.backend_fallback = r.fallback;
	if (auto st = read_file("/proc/self/status", nullptr))
		res.self_memory.parent_hwm_bytes = parse_status(*st).vm_hwm;
	if (r.sh->scanner_hwm)
		res.self_memory.scanner_hwm_bytes = r.sh->scanner_hwm;
	res.scan_start_ns = r.t_scan;
	res.scan_end_ns = r.t_scan_end;
	assemble_walks(r);
	// the tracepoints' view is whole when it lost no event (a walk they
	// saw take no lock took none); the module's gives every walk it
	// matched its hold, 0 acquisitions included, and a walk it did not
	// match (or a kind it does not hook) is unknown, not 0
	const KernelView &kv = res.kernel_view;
	const bool whole_lock_view = kv.stalls && kv.tracepoint && kv.tracepoint->lost_events == 0;
	res.walk_summary = summarize_walks(res.walks, res.scenario.size_bytes, whole_lock_view);
	add_stall_estimates(res, r.o.layout);
	res.complete = !g_signal && r.failure.empty();
}

// The table, the result file (atomically), and what went wrong.
int report(Run &r)
{
	if (!r.o.quiet)
		print_table(r.result, stdout);
	if (!r.o.out_path.empty()) {
		std::string e =
			write_atomically(r.o.out_path, result_json(r.result).dump(1) + "\n");
		if (!e.empty()) {
			fprintf(stderr, "ptwalk run: %s\n", e.c_str());
			return 1;
		}
	}
	if (!r.failure.empty())
		fprintf(stderr, "ptwalk run: %s\n", r.failure.c_str());
	if (g_signal)
		fprintf(stderr, "ptwalk run: interrupted (%s): partial result%s\n",
			strsignal(g_signal),
			r.o.out_path.empty() ? "" : (" written to " + r.o.out_path).c_str());
	return r.exit_code;
}

} // namespace

int run_command(RunOptions o)
{
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
	sh->nvictims = unsigned(o.sc.victims.size());
	for (unsigned i = 0; i < sh->nvictims; i++)
		sh->victims[i].victim = o.sc.victims[i];
	StopSignals stop_signals; // SIGINT/SIGTERM/SIGHUP: a partial result
	Run r{o};
	r.sh = sh;
	r.result = run_result::header(o);
	measure_alias_bias_if_needed(r);
	r.t_start = now_ns();
	r.wl = Child::run([&] { return workload_main(o.sc, sh); });
	if (!r.wl.started()) {
		fprintf(stderr, "ptwalk run: fork: %s\n", strerror(errno));
		return 1;
	}
	if (int rc = wait_populated(r); rc >= 0)
		return rc;
	describe_workload(r);
	sh->victims_go = 1;
	if (int rc = start_scan(r); rc >= 0)
		return rc;
	scan_and_stop(r);
	outcome(r);
	assemble(r);
	return report(r);
}

} // namespace ptwalk
