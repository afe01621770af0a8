// SPDX-License-Identifier: GPL-2.0
// The memory shared by `ptwalk run` and the processes it forks: control
// flags, the walk sequence counter victims use to attribute operations, the
// victims' histograms and the scanner's walk records. Fixed size, created
// before fork, so nothing is serialized and a killed child loses nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <sys/types.h>

#include "ptwalk/histogram.hpp"
#include "ptwalk/scenario.hpp"
#include "ptwalk/walk_kinds.hpp"

namespace ptwalk {

constexpr unsigned kMaxVictims = 8;
constexpr unsigned kMaxWalks = 1u << 16;
// Victims' own log of slow operations (the independent view the kernel
// views are validated against): every operation of kSlowOpNs or more, the
// first kMaxSlowOps per victim (later ones are counted, not kept).
constexpr unsigned kMaxSlowOps = 4096;
constexpr uint64_t kSlowOpNs = 500000;

constexpr uint32_t kOpSlept = 1;     // a voluntary context switch (it waited)
constexpr uint32_t kOpPreempted = 2; // an involuntary one (it was preempted)
constexpr uint32_t kSleepUnknown = 4;
constexpr uint32_t kOpDuring = 1;      // overlapped a walk
constexpr uint32_t kOpBeganDuring = 2; // began while a walk was in progress
// Not the victim's operation but its upkeep between operations (the fault
// victim's MADV_DONTNEED, which takes mmap_lock): logged for the validation,
// never in the latency histograms.
constexpr uint32_t kOpUpkeep = 4;
struct SlowOp {
	uint64_t start_ns, end_ns; // CLOCK_MONOTONIC around the operation
	uint32_t during;           // kOpDuring | kOpBeganDuring (the victim's own
				   // verdict) | kOpUpkeep
	uint32_t slept;            // kOpSlept | kOpPreempted, or kSleepUnknown
				   // (not tracked: read/write victims)
};

enum WorkloadState : int {
	kStarting = 0,
	kPopulating = 1,
	kReady = 2,
	kFailed = 3,
	kSkipped = 4,
	kStopped = 5, // victims joined; waiting for exit_now
};

struct VictimSlot {
	Victim victim;
	std::atomic<int32_t> tid;
	Histogram outside;           // operations that overlapped no walk
	Histogram during;            // operations that overlapped a walk
	std::atomic<uint32_t> nslow; // slow operations seen (may exceed kMaxSlowOps)
	SlowOp slow[kMaxSlowOps];
	// the thread's time runnable but not on a CPU from the go to its
	// stop, by the kernel's own account (run_delay of
	// /proc/thread-self/schedstat); valid once run_delay_known is 1
	std::atomic<uint64_t> run_delay_ns;
	std::atomic<uint32_t> run_delay_known;
};

struct WalkRecord {
	WalkKind kind;
	int32_t walker_pid;
	int32_t error; // errno of a failed walk, 0 when fine
	uint64_t start_ns, end_ns;
	uint64_t bytes;      // bytes read (read walks)
	uint64_t referenced; // smaps Referenced: sum in bytes (cadvisor, wss)
	uint64_t rollup_rss; // smaps_rollup Rss: in bytes, as the walk read it
	uint64_t iteration;  // scanner interval number
	// --working-set: the toucher's position read just before the walk
	// began and just after it ended, and (smaps) the Referenced bytes of
	// the walked mapping's VMAs alone
	uint64_t ws_pos_before, ws_pos_after;
	uint64_t referenced_mapping;
	// time inside the walking syscalls (write/read/pread/ioctl), without
	// open and close
	uint64_t syscall_ns;
};

// --working-set: the workload's toucher (toucher.hpp) and how far it got.
// Its timeline: every kTouchStride touches, the time they were done by, so
// that a window whose edges fall between the scanner's own reads of the
// position (DAMON's aggregations) still has a truth.
constexpr unsigned kTouchStride = 64;
constexpr unsigned kTouchTimeline = 1u << 17;
struct TouchState {
	std::atomic<uint64_t> position; // touches done (the sequence's index)
	std::atomic<uint64_t> start_ns; // its first touch, 0 before
	std::atomic<uint64_t> stop_ns;  // when it stopped, 0 before
	std::atomic<uint32_t> ntimeline;
	uint64_t timeline_ns[kTouchTimeline]; // [i]: touches i * stride done by then
};

// --scanner damon: each read of an aggregation's regions (damon.hpp), the
// toucher's position around it, and the kdamond's CPU time at its end.
struct DamonCall {
	uint64_t write_ns, return_ns;   // the update request's write, its return
	uint64_t pos_before, pos_after; // the toucher's position at those
	uint64_t accessed_bytes;        // regions with accesses, in the mapping
	uint64_t kdamond_cpu_ns;        // its sum_exec_runtime, at return_ns
	uint32_t nr_regions;
};
constexpr unsigned kMaxDamonCalls = 1u << 14;

struct DamonState {
	std::atomic<int> started; // the scanner turned a kdamond on
	std::atomic<int> stopped; // and removed it again
	int32_t kdamond_pid;
	uint64_t sample_us, aggr_us, update_us;
	// how long after the aggregation it reports a read may return
	// (damon.cpp: 6.12 polls every 100 ms; 6.14+ completes at once)
	uint64_t return_slack_us;
	// reads that came back empty: the kernel's update ended on its timeout
	// before an apply (before 6.14, damon.cpp), not recorded in calls
	std::atomic<uint32_t> update_timeouts;
	std::atomic<uint32_t> ncalls;
	DamonCall calls[kMaxDamonCalls];
};

struct Shared {
	// Odd while a walk is in progress: victims read it before and after
	// each operation; a change or an odd value means the op overlapped.
	std::atomic<uint64_t> walk_seq;
	std::atomic<int> workload_state;
	std::atomic<int> victims_go; // set by the parent: start operating
	std::atomic<int> stop;       // set by the parent: wind down
	std::atomic<int> exit_now;   // set by the parent: workload may exit
	std::atomic<int> scanner_go; // set by the parent once observed
	std::atomic<uint64_t> populated_bytes;
	std::atomic<uint64_t> populate_ns;
	uint64_t mapping_bytes;
	uint64_t mapping_base; // the walked mapping's address in the workload
	TouchState touch;
	uint64_t scanner_hwm;      // scanner's peak RSS at its exit
	char message[256];         // workload's failure/skip reason
	char scanner_message[256]; // scanner's failure/skip reason
	unsigned nvictims;
	VictimSlot victims[kMaxVictims];
	std::atomic<uint32_t> nwalks;
	std::atomic<uint32_t> walks_dropped;
	WalkRecord walks[kMaxWalks];
	DamonState damon;
};

// Maps a zeroed Shared (MAP_SHARED | MAP_ANONYMOUS); nullptr on failure.
Shared *create_shared();
void destroy_shared(Shared *s);

} // namespace ptwalk
