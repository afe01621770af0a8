// SPDX-License-Identifier: GPL-2.0
// ptwalk: measure what userspace-triggered page-table walks cost and how
// long they stall the walked process.
#include <cerrno>
#include <cstdio>
#include <unistd.h>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ptwalk/http_server.hpp"
#include "ptwalk/monitor.hpp"
#include "ptwalk/result.hpp"
#include "ptwalk/run.hpp"
#include "ptwalk/units.hpp"

using namespace ptwalk;

namespace {

const char kUsage[] =
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
	"  version   print the version\n"
	"\n"
	"ptwalk run options:\n"
	"  --size SIZE          mapping size, binary suffixes K M G T (default 1G)\n"
	"  --backing KIND       anon|thp|shmem|file|hugetlb|alias|zeropage (default anon)\n"
	"                       alias: one memfd of --physical bytes mapped again and\n"
	"                       again (incident-scale page tables on a small host);\n"
	"                       zeropage: every PTE maps the zero page (lower bound)\n"
	"  --physical SIZE      real memory behind --backing alias (default 1G)\n"
	"  --calibrate-size SIZE  alias: measure the aliasing bias at this size with\n"
	"                       distinct and aliased pages first (default 8G or what\n"
	"                       fits; 0 = don't, figures stay uncorrected)\n"
	"  --vma-layout L       the VMA layout production has, for the worst-stall\n"
	"                       estimate: one (one VMA per mapping, as a memory-\n"
	"                       mapped index; default), aliased (as measured), or\n"
	"                       SIZE (the mapping split into VMAs of SIZE)\n"
	"  --dir DIR            directory of the sparse file for --backing file\n"
	"                       (default $TMPDIR or /tmp)\n"
	"  --victims LIST       comma list of read,write,fault,mmap (default read,mmap)\n"
	"                       'none' for no victim\n"
	"  --fault-region WHERE the fault victim's region: any (where mmap puts\n"
	"                       it; default), below or above the walked mapping\n"
	"  --scanner PROFILE    clear_refs|clear_refs_anon|clear_refs_file|softdirty|\n"
	"                       smaps|smaps_rollup|maps|numa_maps|pagemap|pagemap_scan|\n"
	"                       cadvisor|wss (default clear_refs)\n"
	"  --interval T         time between scans: 250ms, 1s, ... (default 1s)\n"
	"  --duration T         how long the scanner runs (default 10s)\n"
	"  --op-interval T      victims' pace, one operation per T; 0 = flat out\n"
	"                       (default 20us)\n"
	"  --populate-threads N threads that populate the mapping (default: CPUs)\n"
	"  --backend B          auto|module|tracepoint|syscall (default auto)\n"
	"  --cross-check        with the module backend, also open the mmap_lock\n"
	"                       tracepoints: a second kernel view, compared with\n"
	"                       the module and the victims in \"validation\"\n"
	"  --out FILE.json      write the result (schema ptwalk.result/1) atomically\n"
	"  --force              skip the memory and disk space guards\n"
	"  --quiet              no table on stdout\n"
	"  --dry-run            check the options and the memory guard, print the\n"
	"                       plan, run nothing\n"
	"  --perf               perf record -g the scanner and perf stat the ptwalk:*,\n"
	"                       mmap_lock:* and tlb:* tracepoints; the summary goes in\n"
	"                       the result, the data in OUT.perf/\n"
	"\n"
	"ptwalk monitor options:\n"
	"  --duration T         how long to watch (default 10s; with --serve or\n"
	"                       --textfile: until SIGTERM/SIGINT)\n"
	"  --min-hold T         report holds at least this long (default 1ms)\n"
	"  --out FILE.json      write what was seen (schema ptwalk.monitor/1)\n"
	"  --backend B          auto (module when ptwalk.ko is loaded, else bpf, else\n"
	"                       tracepoint) | module | bpf (holds paired in the kernel:\n"
	"                       the cheap one) | tracepoint (every event through perf)\n"
	"  --serve ADDR:PORT    serve Prometheus metrics at http://ADDR:PORT/metrics\n"
	"  --web-config FILE    TLS and basic auth for --serve, the Prometheus\n"
	"                       exporter-toolkit format (tls_server_config: cert_file,\n"
	"                       key_file, client_ca_file; basic_auth_users: bcrypt)\n"
	"  --textfile DIR       write DIR/ptwalk_monitor.prom (node_exporter textfile\n"
	"                       collector format) atomically, every --textfile-interval\n"
	"  --textfile-interval T  (default 15s)\n"
	"  --max-comms N        distinct walker/target comm labels before \"other\"\n"
	"                       (default 64)\n"
	"  --quiet              no table on stdout, no start line on stderr\n"
	"  SIGTERM or SIGINT stops it cleanly (exit 0; the last textfile and the\n"
	"  JSON are written whole)\n"
	"\n"
	"exit status: 0 done, 1 failed, 2 bad usage, 4 skipped (unsupported here),\n"
	"128+N interrupted by signal N (a partial result is still written)\n";

[[noreturn]] void usage_error(const std::string &cmd, const std::string &msg)
{
	fprintf(stderr, "ptwalk %s: %s (see 'ptwalk help')\n", cmd.c_str(), msg.c_str());
	exit(2);
}

// Splits "--key=value" / "--key value"; flags take no value.
struct Args {
	std::string cmd;
	std::vector<std::string> argv;
	size_t i = 0;

	bool next(std::string *key, std::string *value,
		  const std::vector<std::string> &flags)
	{
		if (i >= argv.size())
			return false;
		std::string a = argv[i++];
		if (a.rfind("--", 0) != 0)
			usage_error(cmd, "unexpected argument '" + a + "'");
		size_t eq = a.find('=');
		if (eq != std::string::npos) {
			*key = a.substr(0, eq);
			*value = a.substr(eq + 1);
			return true;
		}
		*key = a;
		for (auto &f : flags)
			if (f == a) {
				value->clear();
				return true;
			}
		if (i >= argv.size() || argv[i].rfind("--", 0) == 0)
			usage_error(cmd, a + " needs a value");
		*value = argv[i++];
		return true;
	}
};

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

int cmd_run(Args &a)
{
	RunOptions o;
	o.sc.size = 1ull << 30;
	o.sc.victims = {Victim::read, Victim::mmap};
	o.sc.interval_ns = 1000000000ull;
	o.sc.duration_ns = 10000000000ull;
	std::string k, v;
	while (a.next(&k, &v, {"--force", "--quiet", "--dry-run", "--perf", "--cross-check"})) {
		if (k == "--size")
			o.sc.size = size_arg(a.cmd, k, v);
		else if (k == "--backing") {
			auto b = parse_backing(v);
			if (!b)
				usage_error(a.cmd, "unknown --backing '" + v + "' (use " +
							   all_backings() + ")");
			o.sc.backing = *b;
		} else if (k == "--dir")
			o.sc.dir = v;
		else if (k == "--physical")
			o.sc.physical = size_arg(a.cmd, k, v);
		else if (k == "--calibrate-size")
			o.calibrate_size = size_arg(a.cmd, k, v);
		else if (k == "--vma-layout") {
			std::string err;
			auto l = parse_layout_spec(v, &err);
			if (!l)
				usage_error(a.cmd, "--vma-layout '" + v + "': " + err);
			o.layout = *l;
		}
		else if (k == "--victims") {
			o.sc.victims.clear();
			if (v == "none")
				continue;
			size_t pos = 0;
			while (pos <= v.size()) {
				size_t c = v.find(',', pos);
				std::string one = v.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
				auto vk = parse_victim(one);
				if (!vk)
					usage_error(a.cmd, "unknown victim '" + one + "' (use " +
								   all_victims() + ")");
				for (auto x : o.sc.victims)
					if (x == *vk)
						usage_error(a.cmd, "victim '" + one + "' given twice");
				o.sc.victims.push_back(*vk);
				if (c == std::string::npos)
					break;
				pos = c + 1;
			}
		} else if (k == "--fault-region") {
			auto f = parse_fault_region(v);
			if (!f)
				usage_error(a.cmd, "unknown --fault-region '" + v + "' (use " +
							   all_fault_regions() + ")");
			o.sc.fault_region = *f;
		} else if (k == "--scanner") {
			auto p = parse_profile(v);
			if (!p)
				usage_error(a.cmd, "unknown --scanner '" + v + "' (use " +
							   all_profiles() + ")");
			o.sc.profile = *p;
		} else if (k == "--interval")
			o.sc.interval_ns = duration_arg(a.cmd, k, v);
		else if (k == "--duration")
			o.sc.duration_ns = duration_arg(a.cmd, k, v);
		else if (k == "--op-interval")
			o.sc.op_interval_ns = duration_arg(a.cmd, k, v);
		else if (k == "--populate-threads") {
			char *end = nullptr;
			long n = strtol(v.c_str(), &end, 10);
			if (v.empty() || *end || n < 1 || n > 1024)
				usage_error(a.cmd, "--populate-threads '" + v + "': want 1..1024");
			o.sc.populate_threads = unsigned(n);
		} else if (k == "--backend")
			o.backend = v;
		else if (k == "--out")
			o.out_path = v;
		else if (k == "--force")
			o.force = true;
		else if (k == "--quiet")
			o.quiet = true;
		else if (k == "--dry-run")
			o.dry_run = true;
		else if (k == "--perf")
			o.perf = true;
		else if (k == "--cross-check")
			o.cross_check = true;
		else
			usage_error(a.cmd, "unknown option " + k);
	}
	o.argv = a.argv;
	o.argv.insert(o.argv.begin(), {"ptwalk", "run"});
	return run_command(std::move(o));
}

// `ptwalk monitor --help`: its part of the usage text, on stdout, exit 0.
[[noreturn]] void monitor_help()
{
	const std::string u = kUsage;
	const size_t b = u.find("ptwalk monitor options:");
	const size_t e = u.find("\n\n", b);
	printf("usage: ptwalk monitor [options]\n\n%s\n\n%s", u.substr(b, e - b).c_str(),
	       u.substr(u.find("exit status:")).c_str());
	exit(0);
}

int cmd_monitor(Args &a)
{
	for (const auto &x : a.argv)
		if (x == "--help" || x == "-h")
			monitor_help();
	MonitorOptions o;
	std::string k, v;
	bool duration_given = false;
	while (a.next(&k, &v, {"--quiet"})) {
		if (k == "--duration") {
			o.duration_ns = duration_arg(a.cmd, k, v);
			duration_given = true;
		} else if (k == "--min-hold")
			o.min_hold_ns = duration_arg(a.cmd, k, v);
		else if (k == "--out")
			o.out_path = v;
		else if (k == "--quiet")
			o.quiet = true;
		else if (k == "--backend") {
			if (v != "auto" && v != "module" && v != "bpf" && v != "tracepoint")
				usage_error(a.cmd, "unknown --backend '" + v +
							   "' (use auto, module, bpf or tracepoint)");
			o.backend = v;
		} else if (k == "--serve") {
			std::string err;
			if (!parse_listen_address(v, &o.serve_host, &o.serve_port, &err))
				usage_error(a.cmd, "--serve '" + v + "': " + err);
		} else if (k == "--web-config") {
			if (v.empty())
				usage_error(a.cmd, "--web-config needs a file");
			o.web_config = v;
		} else if (k == "--textfile") {
			if (v.empty())
				usage_error(a.cmd, "--textfile needs a directory");
			o.textfile_dir = v;
		} else if (k == "--textfile-interval") {
			o.textfile_interval_ns = duration_arg(a.cmd, k, v);
			if (o.textfile_interval_ns < 100'000'000)
				usage_error(a.cmd, "--textfile-interval must be at least 100ms");
		} else if (k == "--max-comms") {
			char *end = nullptr;
			unsigned long n = strtoul(v.c_str(), &end, 10);
			if (v.empty() || *end || n < 1 || n > 10000)
				usage_error(a.cmd, "--max-comms '" + v + "': want 1..10000");
			o.max_comms = n;
		} else
			usage_error(a.cmd, "unknown option " + k);
	}
	const bool continuous = !o.serve_host.empty() || !o.textfile_dir.empty();
	if (duration_given && o.duration_ns == 0)
		usage_error(a.cmd, "--duration must be greater than 0");
	if (continuous && !duration_given)
		o.duration_ns = 0; // until stopped
	if (!o.web_config.empty() && o.serve_host.empty())
		usage_error(a.cmd, "--web-config needs --serve");
	if (continuous && o.backend == "module")
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

} // namespace

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(kUsage, stderr);
		return 2;
	}
	Args a;
	a.cmd = argv[1];
	for (int i = 2; i < argc; i++)
		a.argv.push_back(argv[i]);
	if (a.cmd == "run")
		return cmd_run(a);
	if (a.cmd == "monitor")
		return cmd_monitor(a);
	if (a.cmd == "compare")
		return exec_helper("ptwalk-compare", "../scripts/ptwalk-compare", argv, 2);
	if (a.cmd == "report")
		return exec_helper("ptwalk-report", "../scripts/ptwalk-report", argv, 2);
	if (a.cmd == "calibrate")
		return exec_helper("ptwalk_calibrate", "selftests/ptwalk_calibrate", argv, 2);
	if (a.cmd == "version" || a.cmd == "--version") {
		printf("ptwalk %s\n", kVersion);
		return 0;
	}
	if (a.cmd == "help" || a.cmd == "--help" || a.cmd == "-h") {
		fputs(kUsage, stdout);
		return 0;
	}
	fprintf(stderr, "ptwalk: unknown command '%s' (see 'ptwalk help')\n", a.cmd.c_str());
	return 2;
}
