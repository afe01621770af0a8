// SPDX-License-Identifier: GPL-2.0
// Kernel-view backends: what ptwalk learns from the kernel about each walk
// beyond the scanner's own syscall timing.
//
//   syscall    - nothing beyond CLOCK_MONOTONIC around the scanner's syscalls
//   tracepoint - mmap_lock tracepoints through perf_event_open: lock hold of
//                each walk, waits of the workload's threads, attribution
//   module     - ptwalk.ko's debugfs records (exact PTE tables/slots, kernel
//                side duration, stalls attributed in the kernel)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

#include "ptwalk/kernel_view.hpp"
#include "ptwalk/lock_mode.hpp"
#include "ptwalk/result_enums.hpp"
#include "ptwalk/scenario.hpp"
#include "ptwalk/walk_kinds.hpp"

namespace ptwalk {

// One walk as the scanner saw it (user side, CLOCK_MONOTONIC).
struct WalkSpan {
	WalkKind kind = WalkKind::clear_refs;
	pid_t walker_pid = 0;
	uint64_t start_ns = 0;
	uint64_t end_ns = 0;
};

// A thread of the workload whose lock waits are attributed (a victim).
struct WatchedThread {
	pid_t tid = 0;
	Victim victim = Victim::read;
};

// What a backend adds to one walk; fields a backend cannot see stay unset
// and are not written to the result (never a fake zero).
struct WalkKernelView {
	bool seen = false; // the backend observed this walk
	bool has_lock = false;
	uint64_t lock_hold_ns = 0; // sum of the walker's holds of the target lock
	uint64_t lock_wait_ns = 0; // the walker's own wait to acquire it
	uint32_t lock_acquisitions = 0;
	LockMode lock_mode = LockMode::none;
	uint32_t stalls = 0; // waits by watched threads attributed here
	uint64_t max_stall_ns = 0;
	// the largest walker-held part of those waits, when the view splits
	// them (KernelStall::walker_held_ns)
	std::optional<uint64_t> max_stall_walker_held_ns;
	// module backend only
	bool has_module = false;
	uint64_t kernel_duration_ns = 0; // inside the hooked calls (syscall part)
	uint64_t kernel_walk_ns = 0;     // the walk proper (walk_page_*)
	bool walk_timed = false;
	uint64_t pte_tables = 0, pte_slots = 0, tlb_flushes = 0;
	uint64_t pte_revisits = 0, tlb_ipis = 0, probe_missed = 0;
	uint64_t pte_tables_mmap_locked = 0; // of pte_tables, walked holding mmap_lock
	std::optional<VmaHolds> vma;         // where the module's VMA-lock view is
};

struct Backend {
	virtual ~Backend() = default;
	// syscall, tracepoint or module.
	virtual BackendKind kind() const = 0;
	// One line: what is in use, or why something is missing.
	virtual std::string detail() const = 0;
	// Begin observing. target = the workload's tgid; threads = its watched
	// threads; walker = the scanner's pid. Returns false (and detail() says
	// why) when the backend cannot run; the caller then falls back.
	virtual bool start(pid_t target, const std::vector<WatchedThread> &threads,
			   pid_t walker) = 0;
	// Stop observing (idempotent; safe from a signal-interrupted run).
	virtual void stop() = 0;
	// After stop(): per-walk views (same order/length as walks) and the
	// result's kernel_view (stalls, per-thread waits, lost events, ...).
	virtual std::vector<WalkKernelView> annotate(const std::vector<WalkSpan> &walks,
						     KernelView &kernel_view) = 0;
};

std::unique_ptr<Backend> make_syscall_backend();
// Tracepoint backend (mmap_lock via perf_event_open). Never nullptr; start()
// reports whether it works here.
std::unique_ptr<Backend> make_tracepoint_backend();

} // namespace ptwalk
