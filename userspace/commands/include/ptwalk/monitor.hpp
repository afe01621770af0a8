// SPDX-License-Identifier: GPL-2.0
// `ptwalk monitor`: watch every mmap_lock hold on the system for a while and
// report the long ones as walks - who held whose mm, for how long, in which
// mode, and who waited behind it. The bpf backend (the mmap_lock
// tracepoints paired in the kernel), the tracepoint backend (every event
// through perf), or ptwalk.ko's records (module_monitor.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

// the model the command feeds (HoldCollector, WalkTracker, ...)
#include "ptwalk/json.hpp"
#include "ptwalk/monitor_json.hpp"
#include "ptwalk/monitor_model.hpp"

namespace ptwalk {

// --backend of `ptwalk monitor`: automatic (module when ptwalk.ko is
// loaded, else bpf, else tracepoint), or a backend that monitors
// (PTW_BACKENDS in result_enums.def, named as it names them).
#define PTW_MONITOR_BACKEND(e, run, monitor) PTW_IF_##monitor(e, )
enum class MonitorBackend { automatic, PTW_BACKENDS(PTW_MONITOR_BACKEND) };
#undef PTW_MONITOR_BACKEND
const char *name(MonitorBackend b);
std::optional<MonitorBackend> parse_monitor_backend(std::string_view s);
// The backend asked for; nullopt for automatic.
std::optional<BackendKind> backend_kind(MonitorBackend b);
std::string all_monitor_backends(); // "auto|module|..." for messages

struct MonitorOptions {
	uint64_t duration_ns = 10'000'000'000ull; // 0: until SIGINT/SIGTERM
	uint64_t min_hold_ns = 1'000'000;         // holds >= this are reported
	std::string out_path;                     // JSON (tmp file + rename); "" = none
	bool quiet = false;                       // no table on stdout
	// auto (module if loaded, else bpf, else tracepoint) | module | bpf |
	// tracepoint; with --serve/--textfile, auto never picks module
	MonitorBackend backend = MonitorBackend::automatic;
	// continuous mode
	std::string serve_host; // --serve HOST:PORT ("" = no server)
	int serve_port = 0;
	std::string web_config;   // --web-config FILE: TLS, basic auth
	std::string textfile_dir; // --textfile DIR ("" = none)
	uint64_t textfile_interval_ns = 15'000'000'000ull;
	size_t max_comms = 64; // distinct comm label values, then "other"
	// --bpf-run-time: count the bpf backend's programs' run time in the
	// kernel (BPF_ENABLE_STATS, host-wide while the monitor runs)
	bool bpf_run_time = false;
};

// Exit statuses of `ptwalk monitor`.
inline constexpr int kMonitorFailed = 1;
inline constexpr int kMonitorUnsupported = 4;

// A monitor result with what every one starts with (results/SCHEMA.md,
// ptwalk.monitor/1): the backend, the window and the hold threshold.
MonitorResult monitor_result(BackendKind backend, const MonitorOptions &o, uint64_t t0, uint64_t t1,
			     bool interrupted);

// The module flavour: every walk ptwalk.ko records on the host, with the
// stalls it attributed. Same schema, "backend": "module".
int run_module_monitor(const MonitorOptions &o);

// 0 ok; 1 when the tracepoint backend is unavailable (one line on stderr)
// or the JSON could not be written. SIGINT ends the watch early; what was
// seen is still printed and written.
int run_monitor(const MonitorOptions &o);

} // namespace ptwalk
