// SPDX-License-Identifier: GPL-2.0
// System-wide tracepoint sampling through perf_event_open: one event per
// (tracepoint, CPU) with pid=-1, sample_period=1, PERF_SAMPLE_TID|TIME|CPU|RAW
// and CLOCK_MONOTONIC timestamps (comparable with clock_gettime in
// userspace). Each CPU has one mmap'd ring; the other events of that CPU are
// redirected into it. A reader thread drains the rings and hands samples to
// a sink; PERF_RECORD_LOST is counted, never hidden.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace ptwalk {

struct PerfSample {
	uint64_t time_ns = 0; // CLOCK_MONOTONIC
	pid_t pid = 0;        // tgid of the task
	pid_t tid = 0;
	uint32_t cpu = 0;
	std::span<const uint8_t> raw; // the tracepoint record (common_type first)
};

// Called on the reader thread only.
class PerfSink {
public:
	virtual ~PerfSink() = default;
	virtual void sample(const PerfSample &s) = 0;
	// After each drain of all rings. Every sample the kernel timestamped
	// before drained_at_ns - a few microseconds is delivered by now (per
	// CPU in ring order); final is true for the last call, after stop.
	virtual void round_end(uint64_t drained_at_ns, bool final) = 0;
	// With PerfTracepointConfig::track_tasks: a task changed its comm
	// (exec, prctl) / a task was created (PERF_RECORD_COMM / _FORK), at
	// time_ns (the samples' clock). Per CPU in ring order like the
	// samples: a task's records from two CPUs may come out of order.
	virtual void task_comm(pid_t pid, pid_t tid, std::string_view comm, uint64_t time_ns)
	{
		(void)pid, (void)tid, (void)comm, (void)time_ns;
	}
	virtual void task_fork(pid_t pid, pid_t ppid, pid_t tid, pid_t ptid, uint64_t time_ns)
	{
		(void)pid, (void)ppid, (void)tid, (void)ptid, (void)time_ns;
	}
	// How long the reader may sleep before the next round (ms), asked
	// after each round; poll_ms unless the sink needs to look sooner.
	virtual int next_poll_ms(int poll_ms) { return poll_ms; }
};

struct PerfTracepointConfig {
	std::vector<uint32_t> tracepoint_ids;       // from tracefs format "ID:"
	size_t ring_bytes_per_cpu = 8u << 20;       // rounded down to 2^n pages
	size_t min_ring_bytes_per_cpu = 256u << 10; // retry smaller down to this
	std::string filter;                         // PERF_EVENT_IOC_SET_FILTER text
	// Per tracepoint (parallel to tracepoint_ids) when not empty: event i
	// gets filters[i] instead of filter. Events sharing one text are one
	// group: a group whose text any event refuses stays unfiltered, the
	// other groups keep theirs.
	std::vector<std::string> filters;
	int poll_ms = 20;
	bool track_tasks = false; // attr.comm + attr.task on each CPU's ring
	// Other fds whose readiness ends the reader's sleep early (a BPF ring
	// buffer's epoll fd); the sink reads them in round_end.
	std::vector<int> wake_fds;
};

class PerfTracepoints {
public:
	PerfTracepoints();
	~PerfTracepoints();
	PerfTracepoints(const PerfTracepoints &) = delete;
	PerfTracepoints &operator=(const PerfTracepoints &) = delete;

	// Opens the events (disabled) on every online CPU and maps the rings.
	// false with *err ("perf_event_open(tracepoint 677, cpu 0): Permission
	// denied") on failure. A rejected filter is not an error: the events
	// stay unfiltered and filter_error() says why.
	bool open(const PerfTracepointConfig &cfg, std::string *err);
	// Enables the events and starts the reader thread.
	bool start(PerfSink &sink, std::string *err);
	// Disables the events, drains what is left, joins the reader
	// (round_end(.., true) is the last sink call). Idempotent.
	void stop();

	// of the first tracepoint's filter group (filter_applied(i): event i's)
	bool filter_applied() const;
	const std::string &filter_error() const;
	bool filter_applied(size_t i) const;
	const std::string &filter_error(size_t i) const;
	unsigned cpus() const;
	size_t ring_bytes_per_cpu() const;
	uint64_t samples() const;
	uint64_t lost() const;         // sum of PERF_RECORD_LOST
	uint64_t lost_records() const; // number of PERF_RECORD_LOST records

private:
	struct Impl;
	std::unique_ptr<Impl> impl_;
};

// Online CPUs from /sys/devices/system/cpu/online ("0-3,5"); falls back to
// 0..sysconf(_SC_NPROCESSORS_CONF)-1.
std::vector<int> online_cpus();
// Parses a CPU list ("0-3,5,7-8"). Exposed for tests.
std::vector<int> parse_cpu_list(std::string_view s);

} // namespace ptwalk
