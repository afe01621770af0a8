// SPDX-License-Identifier: GPL-2.0
// The typed monitor result writes the very text the string-keyed assembly
// it replaced wrote: the expected texts below are that code's output over
// the same values (keys, their order, what is left out, number types).
#include <gtest/gtest.h>

#include "ptwalk/monitor.hpp"
#include "ptwalk/monitor_json.hpp"

using namespace ptwalk;

namespace {

MonitorHold hold_a()
{
	return {.start_ns = 1000,
		.hold_ns = 2500000,
		.mode = LockMode::read,
		.kind = WalkKind::smaps,
		.mm = "mm1",
		.holder = {101, 100, "cadvisor", "cadvisor"},
		.target = {200, "postgres", Basis::fd_table, false, std::nullopt},
		.walk_file = "/proc/200/smaps",
		.waiters_total = 3,
		.waiters = {{201, 200, "pg_worker", 1100, 2000000, LockMode::write}}};
}

MonitorHold hold_b()
{
	return {.start_ns = 5000,
		.hold_ns = 1000000,
		.mode = LockMode::write,
		.kind = HoldCause::unknown,
		.mm = "mm2",
		.holder = {300, 300, "x\"y", "x\"y"},
		.target = {0, "?", Basis::unknown, false, std::string("no fd evidence")}};
}

MonitorResult trace_result(bool bpf, bool interrupted)
{
	MonitorOptions o;
	o.duration_ns = 3000000000ull;
	o.min_hold_ns = 1000000;
	MonitorResult r = monitor_result(bpf ? BackendKind::bpf : BackendKind::tracepoint, o, 111,
					 3000000222ull, interrupted);
	MonitorTraceResult &t = r.trace.emplace();
	if (bpf) {
		t.bpf = BpfLockStats{.events = 10,
				     .unpaired = 11,
				     .records = 12,
				     .dropped = 13,
				     .waits_behind = 14,
				     .run_ns = 15,
				     .run_count = 16,
				     .run_time_counted = true,
				     .misses = 17};
	} else {
		t.bpf_unavailable = "bpf_prog_load: EPERM";
	}
	t.health = {.events = 21,
		    .lost = 23,
		    .unpaired = 22,
		    .late = 27,
		    .probes = 24,
		    .probe_facts = 25,
		    .fd_scans = 26};
	t.lifecycle_events = "exit,exec,fork";
	t.memcg_field = "memcg_id";
	t.ring_bytes_per_cpu = 2u << 20;
	if (bpf)
		t.holds = {hold_a(), hold_b()};
	return r;
}

} // namespace

TEST(MonitorJson, BpfResultAsTheOldAssemblyWroteIt)
{
	EXPECT_EQ(monitor_result_json(trace_result(true, false)).dump(2), R"({
  "schema": "ptwalk.monitor/1",
  "backend": "bpf",
  "duration_ns": 3000000111,
  "requested_duration_ns": 3000000000,
  "interrupted": false,
  "start_ns": 111,
  "min_hold_ns": 1000000,
  "bpf": {
    "events": 10,
    "records": 12,
    "dropped": 13,
    "misses": 17,
    "unpaired": 11,
    "waits_behind_holds": 14,
    "run_time_counted": true,
    "run_ns": 15,
    "run_count": 16
  },
  "min_wait_ns": 1000,
  "events": 21,
  "unpaired_events": 22,
  "late_events": 27,
  "lost_events": 23,
  "probes": 24,
  "probe_facts": 25,
  "fd_scans": 26,
  "lifecycle_events": "exit,exec,fork",
  "memcg_field": "memcg_id",
  "ring_bytes_per_cpu": 2097152,
  "holds": [
    {
      "start_ns": 1000,
      "hold_ns": 2500000,
      "mode": "read",
      "kind": "smaps",
      "mm": "mm1",
      "holder": {
        "pid": 101,
        "tgid": 100,
        "comm": "cadvisor",
        "process_comm": "cadvisor"
      },
      "target": {
        "tgid": 200,
        "comm": "postgres",
        "basis": "fd_table",
        "self": false
      },
      "walk_file": "/proc/200/smaps",
      "waiters_total": 3,
      "waiters": [
        {
          "pid": 201,
          "tgid": 200,
          "comm": "pg_worker",
          "start_ns": 1100,
          "wait_ns": 2000000,
          "mode": "write"
        }
      ]
    },
    {
      "start_ns": 5000,
      "hold_ns": 1000000,
      "mode": "write",
      "kind": "unknown",
      "mm": "mm2",
      "holder": {
        "pid": 300,
        "tgid": 300,
        "comm": "x\"y",
        "process_comm": "x\"y"
      },
      "target": {
        "tgid": 0,
        "comm": "?",
        "basis": "unknown",
        "self": false,
        "why": "no fd evidence"
      },
      "waiters_total": 0,
      "waiters": []
    }
  ]
})");
}

TEST(MonitorJson, FallbackToPerfWithoutHoldsAsTheOldAssemblyWroteIt)
{
	// compact: the pretty layout is the test above's
	EXPECT_EQ(
		monitor_result_json(trace_result(false, true)).dump(),
		R"({"schema":"ptwalk.monitor/1","backend":"tracepoint","duration_ns":3000000111,"requested_duration_ns":3000000000,"interrupted":true,"start_ns":111,"min_hold_ns":1000000,"bpf_unavailable":"bpf_prog_load: EPERM","min_wait_ns":1000,"events":21,"unpaired_events":22,"late_events":27,"lost_events":23,"probes":24,"probe_facts":25,"fd_scans":26,"lifecycle_events":"exit,exec,fork","memcg_field":"memcg_id","ring_bytes_per_cpu":2097152,"holds":[]})");
}

TEST(MonitorJson, ModuleResultAsTheOldAssemblyWroteIt)
{
	MonitorOptions o;
	o.duration_ns = 2000000000ull;
	o.min_hold_ns = 500000;
	MonitorResult r = monitor_result(BackendKind::module, o, 7, 2000000009ull, false);
	const ModuleHold h{
		.seq = 42,
		.kind = WalkKind::smaps_rollup,
		.start_ns = 8,
		.duration_ns = 900,
		.span_ns = 950,
		.pte_tables = 3,
		.pte_slots = 1536,
		.lock_hold_ns = 800,
		.mode = LockMode::read,
		.tlb_flushes = 1,
		.holder = {55, std::nullopt, "walker", std::nullopt},
		.target = {66, "victim", Basis::module, std::nullopt, std::nullopt},
		.waiters = {{67, std::nullopt, "victim", std::nullopt, 700, LockMode::write}}};
	r.walks.emplace().push_back(h);
	EXPECT_EQ(monitor_result_json(r).dump(1), R"({
 "schema": "ptwalk.monitor/1",
 "backend": "module",
 "duration_ns": 2000000002,
 "requested_duration_ns": 2000000000,
 "interrupted": false,
 "start_ns": 7,
 "min_hold_ns": 500000,
 "walks": [
  {
   "seq": 42,
   "kind": "smaps_rollup",
   "start_ns": 8,
   "duration_ns": 900,
   "span_ns": 950,
   "pte_tables": 3,
   "pte_slots": 1536,
   "lock_hold_ns": 800,
   "mode": "read",
   "tlb_flushes": 1,
   "holder": {
    "pid": 55,
    "comm": "walker"
   },
   "target": {
    "tgid": 66,
    "comm": "victim",
    "basis": "module"
   },
   "waiters": [
    {
     "pid": 67,
     "comm": "victim",
     "wait_ns": 700,
     "mode": "write"
    }
   ]
  }
 ]
})");
}

TEST(MonitorJson, ModuleResultWithoutWalksKeepsAnEmptyArray)
{
	MonitorResult r = monitor_result(BackendKind::module, MonitorOptions{}, 0, 0, false);
	r.walks.emplace();
	const Json j = monitor_result_json(r);
	ASSERT_NE(j.find("walks"), nullptr);
	EXPECT_TRUE(j.find("walks")->is_array());
	EXPECT_EQ(j.find("holds"), nullptr);
	EXPECT_EQ(j.find("events"), nullptr);
}
