// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/procfs.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "ptwalk/fd.hpp"

namespace ptwalk {

std::optional<std::string> read_file(const std::string &path, std::string *err)
{
	Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
	if (!fd) {
		if (err)
			*err = path + ": " + strerror(errno);
		return std::nullopt;
	}
	std::string out;
	char buf[65536];
	for (;;) {
		ssize_t n = read(fd.get(), buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (err)
				*err = path + ": " + strerror(errno);
			return std::nullopt;
		}
		if (n == 0)
			break;
		out.append(buf, size_t(n));
	}
	return out;
}

namespace {

// Iterates "Key:   value kB" lines; calls f(key, value_in_bytes_or_raw).
template <typename F>
void for_each_kv(std::string_view text, F f)
{
	for_each_line(text, [&](std::string_view line) {
		size_t colon = line.find(':');
		if (colon == std::string_view::npos || colon == 0)
			return;
		std::string_view key = line.substr(0, colon);
		std::string_view rest = line.substr(colon + 1);
		size_t i = 0;
		while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\t'))
			i++;
		uint64_t v = 0;
		bool any = false;
		while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') {
			v = v * 10 + uint64_t(rest[i] - '0');
			i++;
			any = true;
		}
		if (!any)
			return;
		std::string_view unit = rest.substr(i);
		if (unit.find("kB") != std::string_view::npos)
			v *= 1024;
		f(key, v);
	});
}

} // namespace

MemRollup parse_smaps_rollup(std::string_view text)
{
	MemRollup r;
	for_each_kv(text, [&](std::string_view k, uint64_t v) {
		if (k == "Rss")
			r.rss = v;
		else if (k == "Pss")
			r.pss = v;
		else if (k == "Referenced")
			r.referenced = v;
		else if (k == "Anonymous")
			r.anonymous = v;
		else if (k == "AnonHugePages")
			r.anon_huge = v;
		else if (k == "ShmemPmdMapped") {
			r.shmem_pmd = v;
			r.has_shmem_pmd = true;
		} else if (k == "FilePmdMapped") {
			r.file_pmd = v;
			r.has_file_pmd = true;
		} else if (k == "Shared_Hugetlb")
			r.shared_hugetlb = v;
		else if (k == "Private_Hugetlb")
			r.private_hugetlb = v;
	});
	return r;
}

uint64_t sum_smaps_referenced(std::string_view text)
{
	uint64_t sum = 0;
	for_each_kv(text, [&](std::string_view k, uint64_t v) {
		if (k == "Referenced")
			sum += v;
	});
	return sum;
}

uint64_t sum_smaps_referenced_in(std::string_view text, uint64_t lo, uint64_t hi)
{
	uint64_t sum = 0;
	bool in = false;
	for_each_line(text, [&](std::string_view line) {
		unsigned long long a, b;
		char sp;
		// a VMA's first line: "start-end perms ..." (hex, no colon first)
		if (!line.empty() && isxdigit((unsigned char)line[0]) &&
		    sscanf(std::string(line.substr(0, 40)).c_str(), "%llx-%llx%c", &a, &b, &sp) ==
			    3 &&
		    sp == ' ') {
			in = a >= lo && b <= hi;
			return;
		}
		if (in)
			for_each_kv(line, [&](std::string_view k, uint64_t v) {
				if (k == "Referenced")
					sum += v;
			});
	});
	return sum;
}

ProcStatus parse_status(std::string_view text)
{
	ProcStatus s;
	for_each_kv(text, [&](std::string_view k, uint64_t v) {
		if (k == "VmPTE") {
			s.vm_pte = v;
			s.has_vm_pte = true;
		} else if (k == "VmRSS")
			s.vm_rss = v;
		else if (k == "VmHWM")
			s.vm_hwm = v;
		else if (k == "Threads")
			s.threads = unsigned(v);
	});
	return s;
}

MemInfo parse_meminfo(std::string_view text)
{
	MemInfo m;
	for_each_kv(text, [&](std::string_view k, uint64_t v) {
		if (k == "MemTotal")
			m.total = v;
		else if (k == "MemAvailable")
			m.available = v;
		else if (k == "HugePages_Free")
			m.hugepages_free = v;
		else if (k == "HugePages_Total")
			m.hugepages_total = v;
		else if (k == "Hugepagesize")
			m.hugepage_size = v;
	});
	return m;
}

WalkSize walk_size(const MemRollup &r, const ProcStatus &s, uint64_t hugetlb_page)
{
	WalkSize w;
	const uint64_t pmd = r.anon_huge + r.shmem_pmd + r.file_pmd;
	w.rss = r.rss;
	w.huge_bytes = pmd;
	// smaps_rollup's Rss excludes hugetlb; Rss includes PMD-mapped THP.
	const uint64_t small = r.rss > pmd ? r.rss - pmd : 0;
	w.ptes = small / 4096;
	w.pmd_entries = pmd / (2u << 20);
	const uint64_t hugetlb = r.shared_hugetlb + r.private_hugetlb;
	const uint64_t hugetlb_entries = hugetlb_page ? hugetlb / hugetlb_page : 0;
	w.entries = w.ptes + w.pmd_entries + hugetlb_entries;
	w.huge_bytes += hugetlb;
	w.pte_slots = s.vm_pte / 8;
	return w;
}

Json WalkSize::to_json() const
{
	Json j = Json::object();
	j["ptes"] = ptes;
	j["pmd_entries"] = pmd_entries;
	j["entries"] = entries;
	j["pte_slots"] = pte_slots;
	j["rss_bytes"] = rss;
	j["huge_bytes"] = huge_bytes;
	if (vmas)
		j["vmas"] = vmas;
	return j;
}

std::optional<WalkSize> measure_walk_size(pid_t pid, std::string *err)
{
	const std::string base = "/proc/" + std::to_string(pid);
	auto rollup = read_file(base + "/smaps_rollup", err);
	if (!rollup)
		return std::nullopt;
	auto status = read_file(base + "/status", err);
	if (!status)
		return std::nullopt;
	uint64_t hp = 0;
	if (auto mi = read_file("/proc/meminfo", nullptr))
		hp = parse_meminfo(*mi).hugepage_size;
	WalkSize w = walk_size(parse_smaps_rollup(*rollup), parse_status(*status), hp);
	if (auto maps = read_file(base + "/maps", nullptr))
		for (char c : *maps)
			w.vmas += c == '\n';
	return w;
}

Json parse_kernel_config(std::string_view text)
{
	static const char *const prefixes[] = {
		"CONFIG_PER_VMA_LOCK",
		"CONFIG_TRANSPARENT_HUGEPAGE",
		"CONFIG_PREEMPT",
		"CONFIG_MEM_SOFT_DIRTY",
		"CONFIG_PAGE_IDLE_FLAG",
		"CONFIG_IDLE_PAGE_TRACKING",
		"CONFIG_LOCK_STAT",
		"CONFIG_PROVE_LOCKING",
		"CONFIG_DEBUG_VM",
		"CONFIG_KASAN",
		"CONFIG_PROC_PAGE_MONITOR",
		"CONFIG_HUGETLBFS",
		"CONFIG_NUMA",
		"CONFIG_KPROBES",
		"CONFIG_TRACEPOINTS",
		"CONFIG_MODULES",
		"CONFIG_DAMON",
		"CONFIG_HZ",
		"CONFIG_PGTABLE_LEVELS",
		"CONFIG_MMU_GATHER",
		"CONFIG_LRU_GEN",
		"CONFIG_ARCH_HAS_PTE_SPECIAL",
	};
	Json out = Json::object();
	for_each_line(text, [&](std::string_view line) {
		std::string_view name, value;
		if (line.rfind("CONFIG_", 0) == 0) {
			size_t eq = line.find('=');
			if (eq == std::string_view::npos)
				return;
			name = line.substr(0, eq);
			value = line.substr(eq + 1);
		} else if (line.rfind("# CONFIG_", 0) == 0 &&
			   line.find(" is not set") != std::string_view::npos) {
			name = line.substr(2, line.find(' ', 2) - 2);
			value = "n";
		} else {
			return;
		}
		bool want = false;
		for (const char *p : prefixes) {
			std::string_view pv(p);
			// exact, or a sub-option (CONFIG_PREEMPT_RT, CONFIG_HZ_250)
			if (name == pv || (name.rfind(pv, 0) == 0 && name.size() > pv.size() &&
					   name[pv.size()] == '_'))
				want = true;
		}
		if (!want)
			return;
		if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
			value = value.substr(1, value.size() - 2);
		out[name] = std::string(value);
	});
	return out;
}

bool preempt_rt_version(std::string_view v)
{
	while (!v.empty()) {
		const size_t sp = v.find(' ');
		if (v.substr(0, sp) == "PREEMPT_RT")
			return true;
		if (sp == std::string_view::npos)
			break;
		v.remove_prefix(sp + 1);
	}
	return false;
}

bool kernel_is_preempt_rt()
{
	struct utsname u;
	if (uname(&u) == 0 && preempt_rt_version(u.version))
		return true;
	auto rt = read_file("/sys/kernel/realtime", nullptr);
	return rt && rt->rfind("1", 0) == 0;
}

std::pair<int, int> kernel_version(std::string_view rel)
{
	int maj = 0, min = 0;
	if (sscanf(std::string(rel).c_str(), "%d.%d", &maj, &min) != 2)
		return {0, 0};
	return {maj, min};
}

namespace {

std::optional<std::string> command_output(const std::string &cmd)
{
	FILE *p = popen(cmd.c_str(), "r");
	if (!p)
		return std::nullopt;
	std::string out;
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
		out.append(buf, n);
	if (pclose(p) != 0)
		return std::nullopt;
	return out;
}

std::string trim(std::string s)
{
	while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
		s.pop_back();
	return s;
}

} // namespace

KernelInfo kernel_info()
{
	KernelInfo k;
	struct utsname u;
	if (uname(&u) == 0)
		k.uname = KernelInfo::Uname{u.release, u.version, u.machine};
	std::optional<std::string> cfg;
	std::string source;
	if (access("/proc/config.gz", R_OK) == 0) {
		cfg = command_output("gzip -dc /proc/config.gz 2>/dev/null");
		source = "/proc/config.gz";
	}
	if (!cfg) {
		source = std::string("/boot/config-") + u.release;
		cfg = read_file(source, nullptr);
	}
	if (cfg) {
		k.config_source = source;
		k.config = parse_kernel_config(*cfg);
	}
	return k;
}

void to_json(Json::Value &j, const KernelInfo &k)
{
	j = Json::Value::object();
	if (k.uname) {
		j["release"] = k.uname->release;
		j["version"] = k.uname->version;
		j["machine"] = k.uname->machine;
	}
	if (k.config_source) {
		j["config_source"] = *k.config_source;
		j["config"] = k.config.value();
	} else {
		j["config_source"] = nullptr;
		j["config"] = Json::Value::object();
		j["config_note"] = "no /proc/config.gz or /boot/config-<release>: options unknown";
	}
}

std::optional<VmFacts> parse_vm_cmdline(std::string_view cmdline)
{
	VmFacts f;
	bool any = false;
	size_t i = 0;
	while (i < cmdline.size()) {
		while (i < cmdline.size() && isspace(static_cast<unsigned char>(cmdline[i])))
			i++;
		size_t e = i;
		while (e < cmdline.size() && !isspace(static_cast<unsigned char>(cmdline[e])))
			e++;
		const std::string_view word = cmdline.substr(i, e - i);
		i = e;
		const size_t eq = word.find('=');
		if (eq == std::string_view::npos)
			continue;
		const std::string_view key = word.substr(0, eq), val = word.substr(eq + 1);
		std::string *to = key == "ptwalk_accel"   ? &f.accel
				  : key == "ptwalk_clock" ? &f.clock
				  : key == "ptwalk_cpu"   ? &f.cpu
				  : key == "ptwalk_qemu"  ? &f.qemu
							  : nullptr;
		// a value is short printable text, or it is not ours
		if (!to || val.empty() || val.size() > 64 ||
		    !std::all_of(val.begin(), val.end(), [](char c) { return c > ' ' && c < 127; }))
			continue;
		*to = std::string(val);
		any = true;
	}
	if (!any)
		return std::nullopt;
	return f;
}

HostInfo host_info()
{
	HostInfo h;
	char name[256] = {};
	gethostname(name, sizeof(name) - 1);
	h.hostname = name;
	if (auto ci = read_file("/proc/cpuinfo", nullptr)) {
		size_t p = ci->find("model name");
		if (p != std::string::npos) {
			size_t c = ci->find(':', p), e = ci->find('\n', p);
			if (c != std::string::npos && c < e)
				h.cpu_model = trim(ci->substr(c + 2, e - c - 2));
		}
	}
	h.cpus = long(sysconf(_SC_NPROCESSORS_ONLN));
	if (auto mi = read_file("/proc/meminfo", nullptr))
		h.mem = parse_meminfo(*mi);
	const std::string tb = "/sys/kernel/mm/transparent_hugepage/";
	auto thp = [&](const char *f) -> std::optional<std::string> {
		if (auto v = read_file(tb + f, nullptr))
			return trim(*v);
		return std::nullopt;
	};
	h.thp_enabled = thp("enabled");
	h.thp_defrag = thp("defrag");
	h.thp_shmem_enabled = thp("shmem_enabled");
	if (auto cl = read_file("/proc/cmdline", nullptr))
		h.vm = parse_vm_cmdline(*cl);
	if (access("/proc/xen", F_OK) == 0)
		h.virtualized = "xen";
	else if (auto ci = read_file("/proc/cpuinfo", nullptr))
		if (ci->find(" hypervisor") != std::string::npos)
			h.virtualized = "hypervisor";
	return h;
}

void to_json(Json::Value &j, const HostInfo &h)
{
	// an unreadable setting is null, never left out
	auto or_null = [](const std::optional<std::string> &v) {
		return v ? Json::Value(*v) : Json::Value(nullptr);
	};
	j = Json::Value::object();
	j["hostname"] = h.hostname;
	put_optional(j, "cpu_model", h.cpu_model);
	j["cpus"] = int64_t(h.cpus);
	if (h.mem) {
		j["mem_total_bytes"] = h.mem->total;
		j["mem_available_bytes"] = h.mem->available;
		j["hugepages_total"] = h.mem->hugepages_total;
		j["hugepages_free"] = h.mem->hugepages_free;
		j["hugepage_size_bytes"] = h.mem->hugepage_size;
	}
	j["thp"] = {{"enabled", or_null(h.thp_enabled)},
		    {"defrag", or_null(h.thp_defrag)},
		    {"shmem_enabled", or_null(h.thp_shmem_enabled)}};
	j["virtualized"] = h.virtualized ? Json::Value(*h.virtualized) : Json::Value(false);
	if (h.vm) {
		auto word = [](const std::string &v) {
			return v.empty() ? Json::Value(nullptr) : Json::Value(v);
		};
		j["vm"] = {{"accel", word(h.vm->accel)},
			   {"clock", word(h.vm->clock)},
			   {"cpu", word(h.vm->cpu)},
			   {"qemu", word(h.vm->qemu)}};
	} else {
		j["vm"] = nullptr;
	}
}

} // namespace ptwalk
