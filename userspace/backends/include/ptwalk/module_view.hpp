// SPDX-License-Identifier: GPL-2.0
// ptwalk.ko's debugfs records (module/README.md) and their matching with the
// walks the scanner made. Parsing is pure so it is tested on recorded files.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "ptwalk/module_abi.hpp"
#include "ptwalk/backend.hpp"

namespace ptwalk {

// where ptwalk.ko keeps its records (module/ptwalk_abi.h)
inline constexpr const char *kModuleDir = "/sys/kernel/debug/" PTW_DEBUGFS_DIR;

// One debugfs line: key=value tokens; *_comm values %XX-unescaped.
using Record = std::map<std::string, std::string>;
std::vector<Record> parse_records(std::string_view text);
std::string unescape_comm(std::string_view s);

struct ModuleWalk {
	uint64_t seq = 0;
	WalkKind kind = WalkKind::clear_refs; // one of the module's (PTW_KINDS)
	std::string walker_comm;
	int32_t walker_pid = 0, target_tgid = 0;
	uint64_t start_ns = 0, end_ns = 0;
	uint64_t call_ns = 0;     // inside the hooked calls (the syscall part)
	uint64_t duration_ns = 0; // = call_ns (name kept for older readers)
	uint64_t walk_ns = 0;     // inside walk_page_range/walk_page_vma
	bool walk_timed = false;  // walk_ns was measured
	uint64_t pte_revisits = 0, tlb_ipis = 0, probe_missed = 0, lock_wait_ns = 0;
	uint64_t lock_holds = 0;
	uint64_t pte_tables_mmap_locked = 0; // of pte_tables, walked holding mmap_lock
	uint64_t pte_tables = 0, pte_slots = 0, lock_hold_ns = 0, tlb_flushes = 0;
	uint64_t calls = 0, stalls = 0;
	LockMode lock_mode = LockMode::none;
	// the VMA-lock view's (0 where it is not built): the VMA read locks
	// the walker took, their holds, and lock_next_vma()'s give-ups
	uint64_t vma_locks = 0, vma_hold_ns = 0, vma_hold_max_ns = 0, vma_fallbacks = 0;
};
struct ModuleStall {
	uint64_t walk_seq = 0;
	WalkKind kind = WalkKind::clear_refs;
	std::string waiter_comm;
	LockMode mode = LockMode::none, walker_mode = LockMode::none;
	int32_t waiter_pid = 0, target_tgid = 0, walker_pid = 0;
	uint64_t start_ns = 0, wait_ns = 0;
	bool acquired = true;
	// the wait split by who kept the lock (module keys walker_held_ns,
	// others_held_ns): unset where the module does not print them, or
	// prints split_complete=0 (a hold within the wait was not seen)
	std::optional<uint64_t> walker_held_ns, others_held_ns;
	// how far apart other probes may have read the clock at the
	// boundaries walker_held_ns has (module key clock_spread_ns)
	std::optional<uint64_t> clock_spread_ns;
	// of others_held_ns, while a writer waited for the walk's VMA read
	// lock (module key vma_chain_ns, where the VMA-lock view is)
	std::optional<uint64_t> vma_chain_ns;
	// the walk's only part: its holds that ended before the waiter's own
	// decision on the start, when other probes (perf's) may have read the
	// start after them (module key late_hold_ns; split_complete=0)
	std::optional<uint64_t> late_hold_ns;
	// the wait began as the walk's hold was being released: whether the
	// walk held it then is within the probes' spread, its part not known
	// (module key at_release; split_complete=0)
	bool at_release = false;
};
// One wait of a writer for a walked mm's VMA read locks (debugfs
// vma_waits, module/README.md): the writer holds mmap_lock for write.
struct ModuleVmaWait {
	uint64_t walk_seq = 0;
	WalkKind kind = WalkKind::clear_refs;
	std::string writer_comm;
	int32_t writer_pid = 0, target_tgid = 0, walker_pid = 0;
	uint64_t start_ns = 0, wait_ns = 0;
	uint64_t walker_held_ns = 0; // up to the end of the walk's hold of the VMA
	bool behind_walk = false, detach = false;
};
// A record whose kind is not one of the module's kinds is left out.
std::vector<ModuleWalk> parse_module_walks(std::string_view text);
std::vector<ModuleStall> parse_module_stalls(std::string_view text);
// A record whose walker-held part exceeds its wait is left out too.
std::vector<ModuleVmaWait> parse_module_vma_waits(std::string_view text);

// Matches each scanner walk with at most one module record of the same
// walker and kind lying within it (± slack_ns); returns, per span, the index
// into `mw` or -1. Each record is used at most once.
std::vector<int> match_walks(const std::vector<WalkSpan> &spans, const std::vector<ModuleWalk> &mw,
			     uint64_t slack_ns);

// What the module recorded of one run (this run's records only) and whose
// they are: module_kernel_view's input, kept apart from debugfs so that
// recorded text tests it.
struct ModuleRecords {
	std::map<uint64_t, ModuleWalk> walks;                                  // by seq
	std::map<std::tuple<uint64_t, int32_t, uint64_t>, ModuleStall> stalls; // walk, waiter, start
	std::map<std::tuple<uint64_t, int32_t, uint64_t>, ModuleVmaWait>
		vma_waits; // walk, writer, start
	std::vector<Record> hooks;
	std::string counters_text;
	pid_t walker = 0, target = 0;
	pid_t self = 0; // ptwalk: its smaps_rollup of the stopped workload is the reference walk
	std::vector<WatchedThread> threads;
};

// The VMA-lock view (kv.vma_locks, the views' vma; the listed stalls'
// vma_chain_ns are the module's) from the records, given which module
// walk is which span.
void module_vma_view(const ModuleRecords &rec, const std::map<uint64_t, size_t> &seq_to_span,
		     std::vector<WalkKernelView> &views, KernelView &kv);

// The module backend's per-walk views and kernel_view from its records.
std::vector<WalkKernelView> module_kernel_view(const std::vector<WalkSpan> &spans,
					       const ModuleRecords &rec, KernelView &kv);

std::unique_ptr<Backend> make_module_backend();
// Whether ptwalk.ko is loaded (/sys/module/ptwalk).
bool module_loaded();

} // namespace ptwalk
