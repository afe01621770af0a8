// SPDX-License-Identifier: GPL-2.0
// A ptwalk.monitor/1 result (results/SCHEMA.md) as typed structs, each
// written by its nlohmann to_json in the schema's member order. The
// tracepoint, perf and bpf backends write MonitorHold, the module backend
// ModuleHold ("walks"); holder, target and waiter are shared, and a member
// a backend does not know (an empty optional) stays out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptwalk/bpf_lock_spans.hpp"
#include "ptwalk/hold_kind.hpp"
#include "ptwalk/json.hpp"
#include "ptwalk/lock_mode.hpp"
#include "ptwalk/walk_kinds.hpp"
#include "ptwalk/monitor_metrics.hpp"
#include "ptwalk/monitor_model.hpp"

namespace ptwalk {

struct MonitorHolder {
	int64_t pid = 0;
	std::optional<int64_t> tgid;
	std::string comm;
	std::optional<std::string> process_comm; // the thread group leader's
};

struct MonitorTarget {
	int64_t tgid = 0; // 0: unknown
	std::string comm;
	Basis basis = Basis::unknown; // its name in the JSON
	std::optional<bool> self;
	std::optional<std::string> why; // unknown: the reason
};

struct MonitorWaiter {
	int64_t pid = 0;
	std::optional<int64_t> tgid;
	std::string comm;
	std::optional<uint64_t> start_ns; // tracepoint and bpf
	uint64_t wait_ns = 0;
	LockMode mode = LockMode::none;
};

struct MonitorHold {
	uint64_t start_ns = 0, hold_ns = 0;
	LockMode mode = LockMode::none;
	HoldKind kind = HoldCause::unknown; // its name in the JSON
	std::string mm;
	MonitorHolder holder;
	MonitorTarget target;
	std::optional<std::string> walk_file;
	uint64_t waiters_total = 0;
	std::vector<MonitorWaiter> waiters; // longest first
};

struct ModuleHold {
	uint64_t seq = 0;
	WalkKind kind = WalkKind::clear_refs;
	uint64_t start_ns = 0, duration_ns = 0, span_ns = 0;
	uint64_t pte_tables = 0, pte_slots = 0, lock_hold_ns = 0;
	LockMode mode = LockMode::none;
	uint64_t tlb_flushes = 0;
	MonitorHolder holder;
	MonitorTarget target;
	std::vector<MonitorWaiter> waiters;
};

// What the tracepoint and bpf backends write after the window: members of
// the result itself, not an object of their own.
struct MonitorTraceResult {
	std::optional<std::string> bpf_unavailable; // auto read through perf: why
	std::optional<BpfLockStats> bpf;            // the kernel side, when BPF paired
	uint64_t min_wait_ns = kMonitorMinWaitNs;
	MonitorHealth health; // its backend and kernel_run_ns are /metrics' only
	std::string lifecycle_events, memcg_field;
	uint64_t ring_bytes_per_cpu = 0;
	std::vector<MonitorHold> holds; // by start
};

// The whole result: the window and the threshold, then either the trace's
// part (bpf, tracepoint) or the module's walks.
struct MonitorResult {
	BackendKind backend = BackendKind::tracepoint;
	uint64_t duration_ns = 0, requested_duration_ns = 0;
	bool interrupted = false;
	uint64_t start_ns = 0, min_hold_ns = 0;
	std::optional<MonitorTraceResult> trace;
	std::optional<std::vector<ModuleHold>> walks; // by seq
};

void to_json(Json::Value &j, const MonitorHolder &h);
void to_json(Json::Value &j, const MonitorTarget &t);
void to_json(Json::Value &j, const MonitorWaiter &w);
void to_json(Json::Value &j, const MonitorHold &h);
void to_json(Json::Value &j, const ModuleHold &h);
void to_json(Json::Value &j, const BpfLockStats &b);
void to_json(Json::Value &j, const MonitorResult &r);
Json monitor_result_json(const MonitorResult &r);

} // namespace ptwalk
