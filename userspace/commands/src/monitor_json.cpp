// SPDX-License-Identifier: GPL-2.0
#include "monitor_json.hpp"

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
	j["basis"] = t.basis;
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
	j["mode"] = w.mode;
}

void to_json(Json::Value &j, const MonitorHold &h)
{
	j = Json::Value::object();
	j["start_ns"] = h.start_ns;
	j["hold_ns"] = h.hold_ns;
	j["mode"] = h.mode;
	j["kind"] = h.kind;
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
	j["kind"] = h.kind;
	j["start_ns"] = h.start_ns;
	j["duration_ns"] = h.duration_ns;
	j["span_ns"] = h.span_ns;
	j["pte_tables"] = h.pte_tables;
	j["pte_slots"] = h.pte_slots;
	j["lock_hold_ns"] = h.lock_hold_ns;
	j["mode"] = h.mode;
	j["tlb_flushes"] = h.tlb_flushes;
	j["holder"] = h.holder;
	j["target"] = h.target;
	j["waiters"] = h.waiters;
}

} // namespace ptwalk
