// SPDX-License-Identifier: GPL-2.0
// The typed monitor result's JSON (monitor_json.hpp), in results/SCHEMA.md's
// member order, written once.
#include "ptwalk/monitor_json.hpp"

namespace ptwalk {

void to_json(Json::Value &j, const MonitorHolder &h)
{
	j = Json::Value::object();
	j["pid"] = h.pid;
	put_optional(j, "tgid", h.tgid);
	j["comm"] = h.comm;
	put_optional(j, "process_comm", h.process_comm);
}

void to_json(Json::Value &j, const MonitorTarget &t)
{
	j = Json::Value::object();
	j["tgid"] = t.tgid;
	j["comm"] = t.comm;
	j["basis"] = name(t.basis);
	put_optional(j, "self", t.self);
	put_optional(j, "why", t.why);
}

void to_json(Json::Value &j, const MonitorWaiter &w)
{
	j = Json::Value::object();
	j["pid"] = w.pid;
	put_optional(j, "tgid", w.tgid);
	j["comm"] = w.comm;
	put_optional(j, "start_ns", w.start_ns);
	j["wait_ns"] = w.wait_ns;
	j["mode"] = name(w.mode);
}

void to_json(Json::Value &j, const MonitorHold &h)
{
	j = Json::Value::object();
	j["start_ns"] = h.start_ns;
	j["hold_ns"] = h.hold_ns;
	j["mode"] = name(h.mode);
	j["kind"] = name(h.kind);
	j["mm"] = h.mm;
	j["holder"] = h.holder;
	j["target"] = h.target;
	put_optional(j, "walk_file", h.walk_file);
	j["waiters_total"] = h.waiters_total;
	j["waiters"] = h.waiters;
}

void to_json(Json::Value &j, const ModuleHold &h)
{
	j = Json::Value::object();
	j["seq"] = h.seq;
	j["kind"] = name(h.kind);
	j["start_ns"] = h.start_ns;
	j["duration_ns"] = h.duration_ns;
	j["span_ns"] = h.span_ns;
	j["pte_tables"] = h.pte_tables;
	j["pte_slots"] = h.pte_slots;
	j["lock_hold_ns"] = h.lock_hold_ns;
	j["mode"] = name(h.mode);
	j["tlb_flushes"] = h.tlb_flushes;
	j["holder"] = h.holder;
	j["target"] = h.target;
	j["waiters"] = h.waiters;
}

void to_json(Json::Value &j, const BpfLockStats &b)
{
	j = Json::Value::object();
	j["events"] = b.events;
	j["records"] = b.records;
	j["dropped"] = b.dropped;
	j["misses"] = b.misses;
	j["unpaired"] = b.unpaired;
	j["waits_behind_holds"] = b.waits_behind;
	j["run_time_counted"] = b.run_time_counted;
	j["run_ns"] = b.run_ns;
	j["run_count"] = b.run_count;
}

namespace {

// members of the result itself, after the window: no object of their own
void put_trace(Json::Value &j, const MonitorTraceResult &t)
{
	put_optional(j, "bpf_unavailable", t.bpf_unavailable);
	put_optional(j, "bpf", t.bpf);
	j["min_wait_ns"] = t.min_wait_ns;
	j["events"] = t.health.events;
	j["unpaired_events"] = t.health.unpaired;
	j["late_events"] = t.health.late;
	j["lost_events"] = t.health.lost;
	j["probes"] = t.health.probes;
	j["probe_facts"] = t.health.probe_facts;
	j["fd_scans"] = t.health.fd_scans;
	j["lifecycle_events"] = t.lifecycle_events;
	j["memcg_field"] = t.memcg_field;
	j["ring_bytes_per_cpu"] = t.ring_bytes_per_cpu;
	j["holds"] = t.holds;
}

} // namespace

void to_json(Json::Value &j, const MonitorResult &r)
{
	j = Json::Value::object();
	j["schema"] = "ptwalk.monitor/1";
	j["backend"] = name(r.backend);
	j["duration_ns"] = r.duration_ns;
	j["requested_duration_ns"] = r.requested_duration_ns;
	j["interrupted"] = r.interrupted;
	j["start_ns"] = r.start_ns;
	j["min_hold_ns"] = r.min_hold_ns;
	if (r.trace)
		put_trace(j, *r.trace);
	put_optional(j, "walks", r.walks);
}

Json monitor_result_json(const MonitorResult &r)
{
	Json::Value v;
	to_json(v, r);
	return Json(v);
}

} // namespace ptwalk
