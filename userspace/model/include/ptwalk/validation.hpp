// SPDX-License-Identifier: GPL-2.0
// Cross-validation of a run's kernel view against the victims' own clocks.
//
// The reference: every victim operation of `threshold_ns` or more that
// began while a walk was in progress (the victim's own CLOCK_MONOTONIC and
// the walk sequence counter) and in which it slept (a voluntary context switch,
// getrusage): a lock wait sleeps; an operation that was only preempted,
// or a whole guest frozen by its host, is slow without waiting for anyone
// and is counted apart (slow_not_slept), not in the reference. Operations
// that began before a walk and ended in it are reported apart too
// (began_before_walk, with their own recall): such a wait may be behind
// another holder that the walk merely queued after. So are operations
// across which another victim was slow and preempted
// (other_victim_preempted): that victim may have held the lock while
// preempted, and the wait be its doing, not the walk's. The view under test: the stalls a backend attributed
// to walks (tracepoint or module). A reference operation is recalled when
// an attributed stall of the same thread lies within it (± tol_ns); an
// attributed stall of `threshold_ns` or more is confirmed when an operation
// of that thread that the victim logged contains it. Walk-level checks
// (module): every scanner walk matched once, walk proper <= syscall, PTE
// slots within one table per VMA of the mapping.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

#include "ptwalk/json.hpp"
#include "ptwalk/result_types.hpp"
#include "ptwalk/scenario.hpp"

namespace ptwalk {

struct VictimOp {
	pid_t tid = 0;
	Victim victim = Victim::read;
	uint64_t start_ns = 0, end_ns = 0;
	bool during = false;       // overlapped a walk
	bool began_during = false; // began while a walk was in progress
	int slept = -1;            // 1 slept, 0 did not (preempted/frozen), -1 unknown
	int preempted = -1;        // 1 was preempted during it, 0 not, -1 unknown
	bool upkeep = false;       // the victim's upkeep between operations, not one
};

struct ViewStall {
	pid_t tid = 0;
	uint64_t start_ns = 0, wait_ns = 0;
	// behind a VMA lock (the module's VMA-lock view: a writer's wait for
	// it, or a wait queued behind such a writer with no walker hold of
	// mmap_lock in it): the mmap_lock tracepoints cannot see it
	bool vma = false;
	// the module's walk part only before its decision on the start
	// (KernelStall::late_hold_ns): a view whose probe read the start
	// after it may not list it
	bool late = false;
};

struct ValidationInput {
	BackendKind view = BackendKind::tracepoint; // tracepoint or module
	std::vector<VictimOp> ops;                  // the victims' slow operations
	uint64_t ops_dropped = 0;                   // slow operations not kept
	std::vector<ViewStall> stalls;              // attributed stalls (all or the largest)
	uint64_t stalls_total = 0;                  // attributed stalls in all
	// the list holds every attributed stall of this many ns or more
	// (kernel_view "stalls_complete_above_ns"; absent: only what it shows)
	uint64_t complete_above_ns = UINT64_MAX;
	uint64_t threshold_ns = 1000000;
	uint64_t tol_ns = 200000;
	// the second view's stalls (adjudication), when there is one
	const std::vector<ViewStall> *second = nullptr;
	double min_recall = 0.95, min_precision = 0.95;
	// The run walked a kind that, on its kernel, holds VMA read locks
	// rather than mmap_lock (locking_fact() unit vma_lock): the walker
	// read-locks each VMA it shows, and no view sees VMA locks (the
	// module's VMA-lock view, where it is, clears this). A slow
	// operation no view explains of a victim that write-locks a VMA (mmap:
	// its own, to unmap it; vma: the walked one) then waited on a VMA
	// lock: counted apart (vma_lock_waits), not in the reference.
	bool vma_lock_unseen = false;
	// those walks, [start, end): an operation counts apart only when it
	// overlapped one (a cadvisor run's clear_refs holds mmap_lock on the
	// same kernel); empty: every walk
	std::vector<std::pair<uint64_t, uint64_t>> vma_walk_spans;
	// the module's VMA-lock view is there: its waits are in stalls, and
	// no wait is set apart as unseen
	bool vma_view = false;
	// the walks' holds of the target mm by the view under test, [start,
	// end) in start order (StallsView::walk_holds). Without a second
	// view, a slow operation it has no stall for that overlapped none of
	// them waited for no walk (a walk's syscall outlives its last hold, by
	// milliseconds where its vCPU is not run), and is counted apart
	// (outside_walk_holds), not in the reference
	const std::vector<std::pair<uint64_t, uint64_t>> *walk_holds = nullptr;
	// every stall the view attributed, however short, where it gives them
	// (StallsView::every_stall): the recall looks for an operation's
	// stall there. A slow operation's wait can be shorter than the
	// threshold the list is complete above (6.18 cloud, pagemap: a 1.006
	// ms mmap whose write wait, behind the walk, was 0.903 ms; a 6.58 ms
	// one whose wait was 0.62 ms, its vCPU not run after it).
	std::optional<std::vector<ViewStall>> every_stall;
};

// One view's stalls judged; recall/precision are empty (null, and not
// judged) when there is nothing to measure them on.
StallValidation validate_stalls(const ValidationInput &in);

// The stdout lines of a validation ("" when there are none).
std::string validation_line(const Validation &validation);

} // namespace ptwalk

namespace ptwalk {

// Walk-level agreement of the module's records (the kernel view's
// walks_matched, reference_walk, ...) with the scanner's walks in a result
// (its walks, workload size and scenario size); empty without module data.
std::optional<WalkValidation> validate_walks(const RunResult &result);

// Sets result.validation from the victims' slow operations and the
// result's kernel view (its stalls).
//
// second: the tracepoint view's kernel_view beside the module's (--cross-check)
// or nullptr. With it, operations that were preempted rather than slept
// (a waiter spinning on a running owner: rt_mutex, rwsem optimistic
// spinning) are candidates too, and no operation is set apart because
// another victim was preempted: the second view adjudicates instead. A
// reference operation the module did not attribute
// is adjudicated: when the tracepoint view saw no wait of that thread
// overlapping a walker hold within it either, the operation was not behind
// the walk (a wake-up late, a holder that is not the walker) and leaves the
// reference (not_behind_walk); the views' agreement is reported too
// ("views": module stalls >= threshold seen by the tracepoint view, and the
// reverse).
void add_validation(RunResult &result, const std::vector<VictimOp> &ops, uint64_t ops_dropped,
		    const KernelView *second = nullptr);

// Whether a kind the run walked holds VMA read locks, not mmap_lock, on
// the run's kernel (locking_fact() unit vma_lock).
bool walks_under_vma_locks(const RunResult &result);

} // namespace ptwalk
