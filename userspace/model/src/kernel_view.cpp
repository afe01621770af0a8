// SPDX-License-Identifier: GPL-2.0
// The kernel view's JSON (kernel_view.hpp), written once. Each backend's
// view keeps the member order it has always had: the module's begins with
// its reference walk and stall count, the tracepoint's with its source.
#include "ptwalk/kernel_view.hpp"

namespace ptwalk {

std::string waiter_name(const Waiter &w)
{
	return w.victim ? name(*w.victim) : w.comm;
}

void to_json(Json::Value &j, const KernelStall &s)
{
	j = Json::Value::object();
	j["tid"] = s.tid;
	if (s.waiter.victim)
		j["victim"] = name(*s.waiter.victim);
	else
		j["waiter_comm"] = s.waiter.comm;
	j["start_ns"] = s.start_ns;
	j["wait_ns"] = s.wait_ns;
	j["mode"] = name(s.mode);
	j["walk"] = s.walk;
	put_optional(j, "acquired", s.acquired);
	put_optional(j, "walker_held_ns", s.walker_held_ns);
	put_optional(j, "others_held_ns", s.others_held_ns);
	put_optional(j, "free_ns", s.free_ns);
	put_optional(j, "clock_spread_ns", s.clock_spread_ns);
	put_optional(j, "walker_off_cpu_ns", s.walker_off_cpu_ns);
	put_optional(j, "waiter_runnable_ns", s.waiter_runnable_ns);
	put_optional(j, "vma_chain_ns", s.vma_chain_ns);
	put_optional(j, "late_hold_ns", s.late_hold_ns);
	put_optional(j, "at_release", s.at_release);
}

void to_json(Json::Value &j, const VmaLockView &v)
{
	j = Json::Value::object();
	j["available"] = v.available;
	if (!v.available) {
		j["why"] = v.why.value_or("");
		return;
	}
	j["waits_behind_walk"] = v.waits_behind_walk;
	j["waits_not_behind"] = v.waits_not_behind;
	j["max_wait_ns"] = v.max_wait_ns;
	j["max_walker_held_ns"] = v.max_walker_held_ns;
	j["chain_stalls"] = v.chain_stalls;
	j["chain_ns"] = v.chain_ns;
	Json::Value list = Json::Value::array();
	for (const auto &w : v.list) {
		Json::Value o = Json::Value::object();
		o["tid"] = w.tid;
		if (w.writer.victim)
			o["victim"] = name(*w.writer.victim);
		else
			o["writer_comm"] = w.writer.comm;
		o["start_ns"] = w.start_ns;
		o["wait_ns"] = w.wait_ns;
		o["walker_held_ns"] = w.walker_held_ns;
		o["walk"] = w.walk;
		o["detach"] = w.detach;
		list.push_back(std::move(o));
	}
	j["waits"] = std::move(list);
}

namespace {

Json::Value threads_json(const std::vector<ThreadWaits> &threads)
{
	Json::Value th = Json::Value::object();
	for (const auto &t : threads) {
		Json::Value &o = th[waiter_name(t.waiter)];
		if (t.unknown_why) {
			o["waits"] = nullptr;
			o["attributed"] = nullptr;
			o["why"] = *t.unknown_why;
			continue;
		}
		o["waits"] = t.waits.to_json().value();
		o["attributed"] = t.attributed;
		o["max_attributed_ns"] = t.max_attributed_ns;
		put_optional(o, "max_attributed_walker_held_ns", t.max_attributed_walker_held_ns);
	}
	return th;
}

void put_stall_count(Json::Value &j, const StallsView &s)
{
	put_optional(j, "stalls_total", s.total);
	put_optional(j, "stalls_complete_above_ns", s.complete_above_ns);
}

void put_module(Json::Value &j, const KernelView &v, const ModuleKernelView &m)
{
	if (m.reference_walk)
		j["reference_walk"] = {{"pte_slots", m.reference_walk->pte_slots},
				       {"lock_holds", m.reference_walk->lock_holds}};
	if (v.stalls)
		put_stall_count(j, *v.stalls);
	j["source"] = v.source;
	j["walks_matched"] = m.walks_matched;
	j["walks_hookable"] = m.walks_hookable;
	j["module_walks_unmatched"] = m.module_walks_unmatched;
	if (v.stalls) {
		j["threads"] = threads_json(v.stalls->threads);
		j["stalls"] = v.stalls->list;
	}
	Json::Value hooks = Json::Value::array();
	for (const auto &h : m.hooks) {
		Json::Value o = Json::Value::object();
		for (const auto &[k, x] : h)
			o[k] = x;
		hooks.push_back(std::move(o));
	}
	j["hooks"] = std::move(hooks);
	j["nmissed"] = m.nmissed;
	Json::Value counters = Json::Value::object();
	for (const auto &[k, n] : m.counters)
		counters[k] = n;
	j["counters"] = std::move(counters);
	if (v.vma_locks)
		j["vma_locks"] = *v.vma_locks;
}

void put_tracepoint(Json::Value &j, const KernelView &v, const TracepointView &t)
{
	j["events"] = t.events;
	j["lost_events"] = t.lost_events;
	j["target_mm_found"] = t.target_mm_found;
	put_optional(j, "target_mm_basis", t.target_mm_basis);
	if (v.stalls) {
		j["threads"] = threads_json(v.stalls->threads);
		put_stall_count(j, *v.stalls);
		j["stalls"] = v.stalls->list;
	}
	j["unpaired_events"] = t.unpaired_events;
	j["failed_acquires"] = t.failed_acquires;
	if (v.vma_locks)
		j["vma_locks"] = *v.vma_locks;
	if (const auto &s = t.session) {
		put_optional(j, "lost_note", s->lost_note);
		j["late_events"] = s->late_events;
		j["undecoded_events"] = s->undecoded_events;
		j["filter"] = s->filter;
		j["ring_bytes_per_cpu"] = s->ring_bytes_per_cpu;
		j["memcg_field"] = s->memcg_field;
		if (const auto &x = s->sched) {
			Json::Value o = Json::Value::object();
			o["available"] = x->available;
			put_optional(o, "why", x->why);
			put_optional(o, "filter", x->filter);
			put_optional(o, "waiters", x->waiters);
			put_optional(o, "waiters_why", x->waiters_why);
			put_optional(o, "spans_dropped", x->spans_dropped);
			j["sched_events"] = std::move(o);
		}
	}
}

} // namespace

void to_json(Json::Value &j, const KernelView &v)
{
	j = Json::Value::object();
	if (v.module) {
		put_module(j, v, *v.module);
		return;
	}
	j["source"] = v.source;
	if (v.unavailable) {
		j["available"] = false;
		j["why"] = *v.unavailable;
	}
	if (v.tracepoint)
		put_tracepoint(j, v, *v.tracepoint);
}

} // namespace ptwalk
