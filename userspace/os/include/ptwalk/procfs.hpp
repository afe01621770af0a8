// SPDX-License-Identifier: GPL-2.0
// Parsers for the /proc and /sys files ptwalk reads, and the host/kernel
// description stored in every result. Parsers take text so they are tested
// on recorded files from several kernels.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>

#include "ptwalk/json.hpp"

namespace ptwalk {

// Calls f(line) for every '\n'-separated line of text, the newline left out
// (a last line without one included).
template <typename F>
void for_each_line(std::string_view text, F f)
{
	size_t pos = 0;
	while (pos < text.size()) {
		size_t eol = text.find('\n', pos);
		if (eol == std::string_view::npos)
			eol = text.size();
		f(text.substr(pos, eol - pos));
		pos = eol + 1;
	}
}

// Reads a whole (proc) file; nullopt with *err = "path: strerror" on failure.
std::optional<std::string> read_file(const std::string &path, std::string *err);

// smaps_rollup (or one smaps block): sizes in bytes. Fields a kernel does not
// have stay 0 and their has_* flag false.
struct MemRollup {
	uint64_t rss = 0, pss = 0, referenced = 0, anonymous = 0;
	uint64_t anon_huge = 0, shmem_pmd = 0, file_pmd = 0;
	uint64_t shared_hugetlb = 0, private_hugetlb = 0;
	bool has_shmem_pmd = false, has_file_pmd = false;
};
MemRollup parse_smaps_rollup(std::string_view text);
// Sum of every "Referenced:" line of a full smaps file, in bytes.
uint64_t sum_smaps_referenced(std::string_view text);
// The same, of the VMAs within [lo, hi) only.
uint64_t sum_smaps_referenced_in(std::string_view text, uint64_t lo, uint64_t hi);

// /proc/PID/status fields in bytes (VmPTE, VmRSS) and thread count.
struct ProcStatus {
	uint64_t vm_pte = 0, vm_rss = 0, vm_hwm = 0;
	unsigned threads = 0;
	bool has_vm_pte = false;
};
ProcStatus parse_status(std::string_view text);

// /proc/meminfo, bytes.
struct MemInfo {
	uint64_t total = 0, available = 0, hugepages_free = 0, hugepages_total = 0,
		 hugepage_size = 0;
};
MemInfo parse_meminfo(std::string_view text);

// The size of a walk: leaf entries the walk visits. 4 KiB-mapped pages count
// one PTE each; PMD-mapped huge pages count one entry per 2 MiB; hugetlb
// one per huge page. pte_slots is every slot of the allocated PTE tables
// (VmPTE / 8), present or not.
struct WalkSize {
	uint64_t ptes = 0;        // 4 KiB leaf PTEs
	uint64_t pmd_entries = 0; // PMD-mapped huge entries
	uint64_t entries = 0;     // ptes + pmd_entries (+ hugetlb)
	uint64_t pte_slots = 0;   // VmPTE / 8
	uint64_t rss = 0;
	uint64_t huge_bytes = 0;
	uint64_t vmas = 0; // lines of /proc/PID/maps (0: not read)
	Json to_json() const;
};
WalkSize walk_size(const MemRollup &r, const ProcStatus &s, uint64_t hugetlb_page);
// Reads smaps_rollup and status of pid.
std::optional<WalkSize> measure_walk_size(pid_t pid, std::string *err);

// Kernel config text ("CONFIG_X=y" lines) -> the options ptwalk reports.
Json parse_kernel_config(std::string_view text);
// A result's "kernel": uname's, and the config options ptwalk reports.
struct KernelInfo {
	struct Uname {
		std::string release, version, machine;
	};
	std::optional<Uname> uname; // absent when uname(2) failed
	// where the config was read; empty: none found (null, with a note)
	std::optional<std::string> config_source;
	Json config = Json::object(); // parse_kernel_config's
};
void to_json(Json::Value &j, const KernelInfo &k);
KernelInfo kernel_info();

// A result's "host": what the figures depend on.
// A guest booted by scripts/ptwalk-vm, as its kernel command line says
// (ptwalk_accel=tcg ptwalk_clock=icount ptwalk_cpu=max,la57=off
// ptwalk_qemu=10.0.2): what its figures can be compared with.
struct VmFacts {
	std::string accel, clock, cpu, qemu; // "" when that word is absent
};
// The words of /proc/cmdline's text; nullopt when it names none of them.
std::optional<VmFacts> parse_vm_cmdline(std::string_view cmdline);

struct HostInfo {
	std::string hostname;
	std::optional<std::string> cpu_model;
	long cpus = 0;
	std::optional<MemInfo> mem; // absent when /proc/meminfo is unreadable
	// transparent_hugepage's settings; empty: unreadable (null)
	std::optional<std::string> thp_enabled, thp_defrag, thp_shmem_enabled;
	std::optional<std::string> virtualized; // "xen", "hypervisor"; empty: false
	std::optional<VmFacts> vm;              // a ptwalk-vm guest; empty: null
};
void to_json(Json::Value &j, const HostInfo &h);
HostInfo host_info();
// "6.18.44-fc" -> {6,18}; {0,0} when unparsable.
std::pair<int, int> kernel_version(std::string_view release);
// uname's version names PREEMPT_RT as a word ("#1 SMP PREEMPT_RT Debian
// 6.1.192-2": the kernel's scripts/mkcompile_h adds it with CONFIG_PREEMPT_RT).
bool preempt_rt_version(std::string_view uname_version);
// The running kernel is PREEMPT_RT, by uname's version or
// /sys/kernel/realtime ("1"): its rw_semaphore lets readers pass a waiting
// writer (module/KERNEL-FACTS.md entry 27).
bool kernel_is_preempt_rt();

} // namespace ptwalk
