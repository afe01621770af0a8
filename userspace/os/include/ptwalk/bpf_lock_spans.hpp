// SPDX-License-Identifier: GPL-2.0
// The monitor's BPF program (os/bpf/lock_spans.bpf.c) loaded, attached to
// the three mmap_lock tracepoints (raw: no tracefs, no perf) and read: long holds, the waits behind
// them, walks of another process's mm as they begin, and the prober's
// acquisitions, as ptw_bpf_rec records (ptwalk/bpf_lock_record.h). Pairing
// in the kernel is what makes the monitor cheap enough to leave on: the
// per-event cost is paid in the program, and reported (run_ns).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <sys/types.h>

#include "ptwalk/bpf_lock_record.h"

namespace ptwalk {

struct BpfLockSpansConfig {
	uint64_t min_hold_ns = 1'000'000;
	uint64_t min_wait_ns = 1000;
	pid_t prober_tid = 0; // its acquisitions are handed on as PROBE records
	// Counts the programs' run time (BPF_ENABLE_STATS: on while the
	// returned fd is open, so it ends with the process, however it ends).
	// Off unless asked: the switch is the kernel's, for every BPF program
	// on the host, each of which then reads the clock twice a run.
	bool run_time_stats = false;
};

struct BpfLockStats {
	uint64_t events = 0; // mmap_lock tracepoint hits the program saw
	uint64_t unpaired = 0;
	uint64_t records = 0; // handed on
	uint64_t dropped = 0; // lost: the ring buffer was full
	uint64_t waits_behind = 0;
	uint64_t run_ns = 0; // the programs' run time (0: not counted)
	uint64_t run_count = 0;
	bool run_time_counted = false;
	// runs the kernel skipped (a program already running on that CPU):
	// events the program never saw, lost like a full ring's
	uint64_t misses = 0;
};

class BpfLockSpans {
public:
	BpfLockSpans();
	~BpfLockSpans();
	BpfLockSpans(const BpfLockSpans &) = delete;
	BpfLockSpans &operator=(const BpfLockSpans &) = delete;

	// Loads and attaches. false with *err (one line: what failed and the
	// kernel's or libbpf's reason) when BPF cannot be used here.
	bool open(const BpfLockSpansConfig &c, std::string *err);
	// Hands every record in the ring now to f, in ring order (the order
	// the program emitted them), without blocking. Returns how many.
	size_t consume(const std::function<void(const ptw_bpf_rec &)> &f);
	BpfLockStats stats() const;
	// Readable when records wait (for poll); -1 when not open.
	int wake_fd() const;
	// Detaches and unloads; idempotent (the destructor calls it).
	void close();
	bool is_open() const;

private:
	struct Impl;
	std::unique_ptr<Impl> impl_;
};

} // namespace ptwalk
