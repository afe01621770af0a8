// SPDX-License-Identifier: GPL-2.0
// The stdout lines of a validation (validation.hpp).
#include "ptwalk/validation.hpp"

#include <cstdio>

#include "ptwalk/units.hpp"

namespace ptwalk {

namespace {

std::string one_line(const StallValidation &st)
{
	char buf[256];
	snprintf(buf, sizeof(buf),
		 "validation: victims' clocks vs %s: %llu/%llu slow operations "
		 "during walks explained, %llu/%llu stalls >= %.1f ms confirmed: %s",
		 name(st.view), (unsigned long long)st.recalled,
		 (unsigned long long)st.reference_ops, (unsigned long long)st.confirmed,
		 (unsigned long long)st.stalls_checked, double(st.threshold_ns) / 1e6,
		 st.agree ? "agree" : "DISAGREE");
	std::string out = buf;
	std::string apart;
	auto add = [&](uint64_t v, const char *what) {
		if (v)
			apart += (apart.empty() ? "" : ", ") + std::to_string(v) + " " + what;
	};
	add(st.slow_not_slept, "did not sleep (preempted)");
	add(st.other_victim_preempted, "overlapped a preempted victim");
	add(st.began_before_walk, "began before the walk");
	add(st.not_behind_walk.value_or(0), "not behind a walker hold (tracepoint view)");
	add(st.outside_walk_holds.value_or(0), "overlapped no hold of a walk");
	add(st.vma_lock_waits.value_or(0), "waited on a VMA lock (no view sees one)");
	if (!apart.empty())
		out += "\n  not in the reference: " + apart;
	for (const auto &d : st.disagreements)
		out += "\n  disagreement: " + d;
	return out;
}

} // namespace

std::string validation_line(const Validation &val)
{
	std::string out;
	if (!val.stalls.skipped)
		out = one_line(val.stalls);
	if (val.stalls_tracepoint)
		out += (out.empty() ? "" : "\n") + one_line(*val.stalls_tracepoint);
	if (const auto &v = val.views) {
		char buf[200];
		snprintf(buf, sizeof(buf),
			 "validation: module vs tracepoint view: %llu/%llu module stalls seen "
			 "by the tracepoints, %llu/%llu tracepoint stalls by the module",
			 (unsigned long long)v->module_in_tracepoint,
			 (unsigned long long)v->module_stalls,
			 (unsigned long long)v->tracepoint_in_module,
			 (unsigned long long)v->tracepoint_stalls);
		out += std::string("\n") + buf;
		if (v->module_behind_vma_locks)
			out += "\n  not compared: " + std::to_string(v->module_behind_vma_locks) +
			       " module stalls behind VMA locks, which the tracepoints do not see";
		if (v->module_late_unseen)
			out += "\n  not compared: " + std::to_string(v->module_late_unseen) +
			       " module stalls whose walk part ended before perf may have read "
			       "their start";
		if (v->split_compared) {
			snprintf(buf, sizeof(buf),
				 "validation: module vs tracepoint split: %llu/%llu stalls' "
				 "walk-held parts agree (largest difference %s)%s",
				 (unsigned long long)v->split_agree,
				 (unsigned long long)v->split_compared,
				 format_ns(v->split_max_diff_ns).c_str(),
				 v->split_agree == v->split_compared ? "" : ": DISAGREE");
			out += std::string("\n") + buf;
		}
	}
	return out;
}

} // namespace ptwalk
