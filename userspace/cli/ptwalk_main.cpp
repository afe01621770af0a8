// SPDX-License-Identifier: GPL-2.0
// ptwalk: measure what userspace-triggered page-table walks cost and how
// long they stall the walked process.
#include <cerrno>
#include <cstdio>
#include <unistd.h>
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ptwalk/http_server.hpp"
#include "ptwalk/procfs.hpp"
#include "ptwalk/monitor.hpp"
#include "ptwalk/result.hpp"
#include "ptwalk/run.hpp"
#include "ptwalk/units.hpp"
#include "ptwalk/working_set.hpp"
#include "options.hpp"

using namespace ptwalk;
using namespace ptwalk::cli;

namespace {

const char kCommands[] =
	"usage: ptwalk <command> [options]\n"
	"\n"
	"commands:\n"
	"  run       one scenario: a workload is mapped and served, a scanner walks\n"
	"            it, walk cost and victim stalls are measured\n"
	"  monitor   watch every mmap_lock-holding walk on this host for a while\n"
	"  compare   A B: compare two result sets with significance\n"
	"            (scripts/ptwalk-compare; 'ptwalk compare --help')\n"
	"  report    RESULTS: Markdown report with plots, or --upstream RESULT for\n"
	"            a mailing-list report (scripts/ptwalk-report)\n"
	"  calibrate measure this host and write a selftest budget file with\n"
	"            headroom (--out FILE; 'ptwalk calibrate --help')\n"
	"  locking   each walk kind's locking on this kernel (or --release R),\n"
	"            and whether mmap_lock waiters wait for it ('ptwalk locking --help')\n"
	"  version   print the version\n"
	"  help      CMD: that command's usage, as 'ptwalk CMD --help' (or -h)\n"
	"  completion bash completion, made from the option tables above\n";

const char kMonitorStop[] =
	"  SIGTERM or SIGINT stops it cleanly (exit 0; the last textfile and the\n"
	"  JSON are written whole)\n";

const char kExitStatus[] =
	"exit status: 0 done, 1 failed, 2 bad usage, 4 skipped (unsupported here),\n"
	"128+N interrupted by signal N (a partial result is still written)\n";

uint64_t size_arg(const std::string &cmd, const std::string &k, const std::string &v)
{
	std::string err;
	auto s = parse_size(v, &err);
	if (!s)
		usage_error(cmd, k + " '" + v + "': " + err);
	return *s;
}

uint64_t duration_arg(const std::string &cmd, const std::string &k, const std::string &v)
{
	std::string err;
	auto d = parse_duration_ns(v, &err);
	if (!d)
		usage_error(cmd, k + " '" + v + "': " + err);
	return *d;
}

std::string join_victims(const std::vector<Victim> &vs)
{
	std::string s;
	for (Victim v : vs)
		s += std::string(s.empty() ? "" : ",") + name(v);
	return s;
}

using O = RunOptions;
const std::vector<Option<RunOptions>> kRunOptions =
	{
		{"--size", "SIZE", "mapping size, binary suffixes K M G T (default {default})",
		 [] { return format_size_arg(O{}.sc.size); }, nullptr,
		 [](O &o, const Args &a, const std::string &k,
		    const std::string &v) { o.sc.size = size_arg(a.cmd, k, v); }},
		{"--backing", "KIND",
		 "{choices} (default {default})\n"
		 "alias: one memfd of --physical bytes mapped again and\n"
		 "again (incident-scale page tables on a small host);\n"
		 "zeropage: every PTE maps the zero page (lower bound)",
		 [] { return std::string(name(O{}.sc.backing)); }, all_backings,
		 [](O &o, const Args &a, const std::string &, const std::string &v) {
	auto b = parse_backing(v);
	if (!b)
		usage_error(a.cmd, "unknown --backing '" + v + "' (use " + all_backings() + ")");
	o.sc.backing = *b;
		 }},
		{"--physical", "SIZE", "real memory behind --backing alias (default {default})",
		 [] { return format_size_arg(O{}.sc.physical); }, nullptr,
		 [](O &o, const Args &a, const std::string &k, const std::string &v) {
	o.sc.physical = size_arg(a.cmd, k, v);
		 }},
				      {"--calibrate-size", "SIZE",
				       "alias: measure the aliasing bias at this size with\n"
				       "distinct and aliased pages first (default 8G or what\n"
				       "fits; 0 = don't, figures stay uncorrected)",
				       nullptr, nullptr,
				       [](O &o, const Args &a, const std::string &k,
					  const std::string &v) {
	o.calibrate_size = size_arg(a.cmd, k, v);
				       }},
	{"--vma-layout", "L",
	 "the VMA layout production has, for the worst-stall\n"
	 "estimate: one (one VMA per mapping, as a memory-\n"
	 "mapped index; default), aliased (as measured), or\n"
	 "SIZE (the mapping split into VMAs of SIZE)",
	 nullptr, nullptr,
	 [](O &o, const Args &a, const std::string &, const std::string &v) {
	std::string err;
	auto l = parse_layout_spec(v, &err);
	if (!l)
		usage_error(a.cmd, "--vma-layout '" + v + "': " + err);
	o.layout = *l;
	 }},
	{"--dir", "DIR",
	 "directory of the sparse file for --backing file\n"
	 "(default $TMPDIR or /tmp)",
	 nullptr, nullptr,
	 [](O &o, const Args &, const std::string &, const std::string &v) { o.sc.dir = v; }},
	{"--victims", "LIST",
	 "comma list of {choices} (default {default})\n"
	 "'none' for no victim",
	 [] { return join_victims(O{}.sc.victims); },
	 [] {
	std::string s = all_victims();
	std::replace(s.begin(), s.end(), '|', ',');
	return s;
	 },
	 [](O &o, const Args &a, const std::string &, const std::string &v) {
	o.sc.victims.clear();
	o.victims_given = true;
	if (v == "none")
		return;
	size_t pos = 0;
	while (pos <= v.size()) {
		size_t c = v.find(',', pos);
		std::string one =
			v.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
		auto vk = parse_victim(one);
		if (!vk)
			usage_error(a.cmd,
				    "unknown victim '" + one + "' (use " + all_victims() + ")");
		for (auto x : o.sc.victims)
			if (x == *vk)
				usage_error(a.cmd, "victim '" + one + "' given twice");
		o.sc.victims.push_back(*vk);
		if (c == std::string::npos)
			break;
		pos = c + 1;
	}
	}},
	{"--fault-region", "WHERE",
	 "the fault victim's region: {choices} (default {default});\n"
	 "any is where mmap puts it, below/above the walked mapping",
	 [] { return std::string(name(O{}.sc.fault_region)); }, all_fault_regions,
	 [](O &o, const Args &a, const std::string &, const std::string &v) {
	auto f = parse_fault_region(v);
	if (!f)
		usage_error(a.cmd,
			    "unknown --fault-region '" + v + "' (use " + all_fault_regions() + ")");
	o.sc.fault_region = *f;
	 }},
	{"--working-set", "WS",
	 "a known working set, WS = SHARE[,PATTERN]: a thread\n"
	 "writes that share of the mapping's pages each\n"
	 "--interval; PATTERN {choices}\n"
	 "(default uniform; victims default to mmap,fault);\n"
	 "the result judges the wss or cadvisor scanner's\n"
	 "Referenced, or the damon scanner's DAMON regions,\n"
	 "against it",
	 nullptr, all_ws_patterns,
	 [](O &o, const Args &a, const std::string &k, const std::string &v) {
	std::string err;
	o.sc.working_set = parse_working_set(v, &err);
	if (!o.sc.working_set)
		usage_error(a.cmd, k + " '" + v + "': " + err);
	 }},
	{"--scanner", "PROFILE", "{choices} (default {default})",
	 [] { return std::string(name(O{}.sc.profile)); }, all_profiles,
	 [](O &o, const Args &a, const std::string &, const std::string &v) {
	auto p = parse_profile(v);
	if (!p)
		usage_error(a.cmd, "unknown --scanner '" + v + "' (use " + all_profiles() + ")");
	o.sc.profile = *p;
	 }},
	{"--interval", "T", "time between scans: 250ms, 1s, ... (default {default})",
	 [] { return format_duration_arg(O{}.sc.interval_ns); }, nullptr,
	 [](O &o, const Args &a, const std::string &k, const std::string &v) {
	o.sc.interval_ns = duration_arg(a.cmd, k, v);
	 }},
	{"--duration", "T", "how long the scanner runs (default {default})",
	 [] { return format_duration_arg(O{}.sc.duration_ns); }, nullptr,
	 [](O &o, const Args &a, const std::string &k, const std::string &v) {
	o.sc.duration_ns = duration_arg(a.cmd, k, v);
	 }},
	{"--scans", "N",
	 "stop after N scans, or at --duration if sooner\n"
	 "(default: as many as --duration allows)",
	 nullptr, nullptr,
	 [](O &o, const Args &a, const std::string &k, const std::string &v) {
	o.sc.max_iterations = count_arg(a.cmd, k, v, 1, 1000000);
	 }},
	{"--op-interval", "T",
	 "victims' pace, one operation per T; 0 = flat out\n"
	 "(default {default})",
	 [] { return format_duration_arg(O{}.sc.op_interval_ns); }, nullptr,
	 [](O &o, const Args &a, const std::string &k, const std::string &v) {
	o.sc.op_interval_ns = duration_arg(a.cmd, k, v);
	 }},
	{"--populate-threads", "N", "threads that populate the mapping (default: CPUs)", nullptr,
	 nullptr,
	 [](O &o, const Args &a, const std::string &k, const std::string &v) {
	o.sc.populate_threads = unsigned(count_arg(a.cmd, k, v, 1, 1024));
	 }},
	{"--backend", "B", "{choices} (default {default})",
	 [] { return std::string(name(O{}.backend)); }, all_run_backends,
	 [](O &o, const Args &, const std::string &, const std::string &v) {
	auto b = parse_run_backend(v);
	if (!b) { // as ptwalk run has always said it
		fprintf(stderr, "ptwalk run: unknown --backend '%s' (use %s)\n", v.c_str(),
			or_list(all_run_backends()).c_str());
		exit(2);
	}
	o.backend = *b;
	 }},
	{"--cross-check", "",
	 "with the module backend, also open the mmap_lock\n"
	 "tracepoints: a second kernel view, compared with\n"
	 "the module and the victims in \"validation\"",
	 nullptr, nullptr,
	 [](O &o, const Args &, const std::string &,
	    const std::string &) { o.cross_check = true; }},
	{"--out", "FILE.json", "write the result (schema ptwalk.result/1) atomically", nullptr,
	 nullptr,
	 [](O &o, const Args &, const std::string &, const std::string &v) { o.out_path = v; }},
	{"--force", "", "skip the memory and disk space guards", nullptr, nullptr,
	 [](O &o, const Args &, const std::string &, const std::string &) { o.force = true; }},
	{"--quiet", "", "no table on stdout", nullptr, nullptr,
	 [](O &o, const Args &, const std::string &, const std::string &) { o.quiet = true; }},
	{"--dry-run", "",
	 "check the options and the memory guard, print the\n"
	 "plan, run nothing",
	 nullptr, nullptr,
	 [](O &o, const Args &, const std::string &, const std::string &) { o.dry_run = true; }},
	{"--perf", "",
	 "perf record -g the scanner and perf stat the ptwalk:*,\n"
	 "mmap_lock:* and tlb:* tracepoints; the summary goes in\n"
	 "the result, the data in OUT.perf/",
	 nullptr, nullptr,
	 [](O &o, const Args &, const std::string &, const std::string &) { o.perf = true; }},
	};

// `ptwalk monitor`'s options, and whether --duration was given.
struct MonitorArgs {
	MonitorOptions o;
	bool duration_given = false;
};

using M = MonitorArgs;
using MonitorSet = std::function<void(M &, const Args &, const std::string &, const std::string &)>;
const std::vector<Option<MonitorArgs>> kMonitorOptions = {
	{"--duration", "T",
	 "how long to watch (default {default}; with --serve or\n"
	 "--textfile: until SIGTERM/SIGINT)",
	 [] { return format_duration_arg(MonitorOptions{}.duration_ns); }, nullptr,
	 MonitorSet([](M &m, const Args &a, const std::string &k, const std::string &v) {
		 m.o.duration_ns = duration_arg(a.cmd, k, v);
		 m.duration_given = true;
	 })},
	{"--min-hold", "T", "report holds at least this long (default {default})",
	 [] { return format_duration_arg(MonitorOptions{}.min_hold_ns); }, nullptr,
	 MonitorSet([](M &m, const Args &a, const std::string &k, const std::string &v) {
		 m.o.min_hold_ns = duration_arg(a.cmd, k, v);
	 })},
	{"--out", "FILE.json", "write what was seen (schema ptwalk.monitor/1)", nullptr, nullptr,
	 MonitorSet([](M &m, const Args &, const std::string &, const std::string &v) {
		 m.o.out_path = v;
	 })},
	{"--backend", "B",
	 "auto (module when ptwalk.ko is loaded, else bpf, else\n"
	 "tracepoint) | module | bpf (holds paired in the kernel:\n"
	 "the cheap one) | tracepoint (every event through perf)",
	 nullptr, nullptr,
	 MonitorSet([](M &m, const Args &a, const std::string &, const std::string &v) {
		 auto b = parse_monitor_backend(v);
		 if (!b)
			 usage_error(a.cmd, "unknown --backend '" + v + "' (use " +
						    or_list(all_monitor_backends()) + ")");
		 m.o.backend = *b;
	 })},
	{"--serve", "ADDR:PORT", "serve Prometheus metrics at http://ADDR:PORT/metrics", nullptr,
	 nullptr, MonitorSet([](M &m, const Args &a, const std::string &, const std::string &v) {
		 std::string err;
		 if (!parse_listen_address(v, &m.o.serve_host, &m.o.serve_port, &err))
			 usage_error(a.cmd, "--serve '" + v + "': " + err);
	 })},
	{"--web-config", "FILE",
	 "TLS and basic auth for --serve, the Prometheus\n"
	 "exporter-toolkit format (tls_server_config: cert_file,\n"
	 "key_file, client_ca_file; basic_auth_users: bcrypt)",
	 nullptr, nullptr,
	 MonitorSet([](M &m, const Args &a, const std::string &, const std::string &v) {
		 if (v.empty())
			 usage_error(a.cmd, "--web-config needs a file");
		 m.o.web_config = v;
	 })},
	{"--textfile", "DIR",
	 "write DIR/ptwalk_monitor.prom (node_exporter textfile\n"
	 "collector format) atomically, every --textfile-interval",
	 nullptr, nullptr,
	 MonitorSet([](M &m, const Args &a, const std::string &, const std::string &v) {
		 if (v.empty())
			 usage_error(a.cmd, "--textfile needs a directory");
		 m.o.textfile_dir = v;
	 })},
	{"--textfile-interval", "T", "(default {default})",
	 [] { return format_duration_arg(MonitorOptions{}.textfile_interval_ns); }, nullptr,
	 MonitorSet([](M &m, const Args &a, const std::string &k, const std::string &v) {
		 m.o.textfile_interval_ns = duration_arg(a.cmd, k, v);
		 if (m.o.textfile_interval_ns < 100'000'000)
			 usage_error(a.cmd, "--textfile-interval must be at least 100ms");
	 })},
	{"--max-comms", "N",
	 "distinct walker/target comm labels before \"other\"\n"
	 "(default {default})",
	 [] { return std::to_string(MonitorOptions{}.max_comms); }, nullptr,
	 MonitorSet([](M &m, const Args &a, const std::string &k, const std::string &v) {
		 m.o.max_comms = count_arg(a.cmd, k, v, 1, 10000);
	 })},
	{"--bpf-run-time", "",
	 "count the bpf backend's programs' run time in the\n"
	 "kernel (in the JSON and /metrics); it turns the kernel's\n"
	 "BPF run-time statistics on for every program on the host\n"
	 "while the monitor runs, each paying two clock reads a run",
	 nullptr, nullptr,
	 MonitorSet([](M &m, const Args &, const std::string &, const std::string &) {
		 m.o.bpf_run_time = true;
	 })},
	{"--quiet", "", "no table on stdout, no start line on stderr", nullptr, nullptr,
	 MonitorSet([](M &m, const Args &, const std::string &, const std::string &) {
		 m.o.quiet = true;
	 })},
};

std::string usage()
{
	return std::string(kCommands) + "\nptwalk run options:\n" + option_usage(kRunOptions) +
	       "\nptwalk monitor options:\n" + option_usage(kMonitorOptions) + kMonitorStop + "\n" +
	       kExitStatus;
}

// `ptwalk run --help`: its part of the usage text, on stdout, exit 0.
[[noreturn]] void run_help()
{
	printf("usage: ptwalk run [options]\n\nptwalk run options:\n%s\n%s",
	       option_usage(kRunOptions).c_str(), kExitStatus);
	exit(0);
}

int cmd_run(Args &a)
{
	if (wants_help(a))
		run_help();
	RunOptions o;
	parse_options(a, kRunOptions, o);
	o.argv = a.argv;
	o.argv.insert(o.argv.begin(), {"ptwalk", "run"});
	return run_command(std::move(o));
}

// `ptwalk monitor --help`: its part of the usage text, on stdout, exit 0.
[[noreturn]] void monitor_help()
{
	printf("usage: ptwalk monitor [options]\n\nptwalk monitor options:\n%s%s\n%s",
	       option_usage(kMonitorOptions).c_str(), kMonitorStop, kExitStatus);
	exit(0);
}

int cmd_monitor(Args &a)
{
	if (wants_help(a))
		monitor_help();
	MonitorArgs m;
	parse_options(a, kMonitorOptions, m);
	MonitorOptions &o = m.o;
	const bool continuous = !o.serve_host.empty() || !o.textfile_dir.empty();
	if (m.duration_given && o.duration_ns == 0)
		usage_error(a.cmd, "--duration must be greater than 0");
	if (continuous && !m.duration_given)
		o.duration_ns = 0; // until stopped
	if (!o.web_config.empty() && o.serve_host.empty())
		usage_error(a.cmd, "--web-config needs --serve");
	if (continuous && o.backend == MonitorBackend::module)
		usage_error(a.cmd, "--serve/--textfile need the bpf or tracepoint backend");
	return run_monitor(o);
}

// The helpers (the Python tools and the calibration program): installed
// by `make install` in <prefix>/libexec/ptwalk/ beside <prefix>/bin/; in the
// source tree, scripts/ beside build/ and build/selftests/. PTWALK_LIBEXECDIR
// names the directory instead. Exec'd with the rest of argv.
std::string helper_path(const std::string &name, const std::string &in_tree)
{
	if (const char *d = getenv("PTWALK_LIBEXECDIR"); d && *d)
		return std::string(d) + "/" + name;
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return "";
	self[n] = '\0';
	std::string dir(self);
	dir = dir.substr(0, dir.rfind('/')); // <prefix>/bin or build/
	std::string installed = dir + "/../libexec/ptwalk/" + name;
	if (access(installed.c_str(), F_OK) == 0)
		return installed;
	return dir + "/" + in_tree;
}

int exec_helper(const std::string &name, const std::string &in_tree, char **argv, int first)
{
	std::string path = helper_path(name, in_tree);
	if (path.empty()) {
		fprintf(stderr, "ptwalk: /proc/self/exe: %s\n", strerror(errno));
		return 1;
	}
	if (access(path.c_str(), X_OK) != 0) {
		fprintf(stderr, "ptwalk: %s: %s\n", path.c_str(), strerror(errno));
		return 1;
	}
	std::vector<char *> args{const_cast<char *>(path.c_str())};
	for (int i = first; argv[i]; i++)
		args.push_back(argv[i]);
	args.push_back(nullptr);
	execv(path.c_str(), args.data());
	fprintf(stderr, "ptwalk: exec %s: %s\n", path.c_str(), strerror(errno));
	return 1;
}

const char kCompletionUsage[] =
	"usage: ptwalk completion\n\n"
	"Prints a bash completion script for ptwalk, made from the same option\n"
	"tables as its usage: source it, or install it as\n"
	"/usr/share/bash-completion/completions/ptwalk (make install does).\n";

// `ptwalk completion`: the commands, and run's and monitor's options
std::string completion_script()
{
	return bash_completion(
		"run monitor compare report calibrate locking version help completion", kRunOptions,
		kMonitorOptions);
}

const char kVersionUsage[] = "usage: ptwalk version\n\nPrints ptwalk's version.\n";

// The commands, each run with its arguments (argv from first on for the
// helpers, which print their own usage for --help and -h)
int dispatch(Args &a, char **argv, int first)
{
	if (a.cmd == "run")
		return cmd_run(a);
	if (a.cmd == "monitor")
		return cmd_monitor(a);
	if (a.cmd == "compare")
		return exec_helper("ptwalk-compare", "../scripts/ptwalk-compare", argv, first);
	if (a.cmd == "report")
		return exec_helper("ptwalk-report", "../scripts/ptwalk-report", argv, first);
	if (a.cmd == "calibrate")
		return exec_helper("ptwalk_calibrate", "selftests/ptwalk_calibrate", argv, first);
	if (a.cmd == "locking")
		return cmd_locking(a);
	if (a.cmd == "completion") {
		if (wants_help(a)) {
			fputs(kCompletionUsage, stdout);
			return 0;
		}
		if (!a.argv.empty())
			usage_error(a.cmd, "unexpected argument '" + a.argv[0] + "'");
		fputs(completion_script().c_str(), stdout);
		return 0;
	}
	if (a.cmd == "version" || a.cmd == "--version") {
		if (wants_help(a)) {
			fputs(kVersionUsage, stdout);
			return 0;
		}
		if (!a.argv.empty())
			usage_error(a.cmd, "unexpected argument '" + a.argv[0] + "'");
		printf("ptwalk %s\n", kVersion);
		return 0;
	}
	fprintf(stderr, "ptwalk: unknown command '%s' (see 'ptwalk help')\n", a.cmd.c_str());
	return 2;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage().c_str(), stderr);
		return 2;
	}
	Args a;
	a.cmd = argv[1];
	for (int i = 2; i < argc; i++)
		a.argv.push_back(argv[i]);
	if (a.cmd == "help" || a.cmd == "--help" || a.cmd == "-h") {
		const std::string a2 = argc > 2 ? argv[2] : "";
		if (argc == 2 || (argc == 3 && (a2 == "--help" || a2 == "-h"))) {
			fputs(usage().c_str(), stdout);
			return 0;
		}
		// `ptwalk help --man-options CMD`: CMD's options as Markdown for
		// its man page (scripts/gen-man.py)
		if (argc == 4 && std::string(argv[2]) == "--man-options") {
			const std::string c = argv[3];
			if (c != "run" && c != "monitor")
				usage_error("help", "--man-options: run or monitor, not '" +
							    c.substr(0, 64) + "'");
			fputs((c == "run" ? option_markdown(kRunOptions)
					  : option_markdown(kMonitorOptions))
				      .c_str(),
			      stdout);
			return 0;
		}
		if (argc > 3)
			usage_error("help", "one command at a time");
		// `ptwalk help CMD` is `ptwalk CMD --help`
		static char help_flag[] = "--help";
		char *args[] = {argv[0], argv[2], help_flag, nullptr};
		Args h;
		h.cmd = argv[2];
		h.argv = {"--help"};
		return dispatch(h, args, 2);
	}
	return dispatch(a, argv, 2);
}
