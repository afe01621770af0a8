// SPDX-License-Identifier: GPL-2.0
// The module's VMA-lock view of a run (module/ptwalk_vma.c, module/README.md
// "vma_waits"): the walks' VMA read locks, the writers that waited for
// them, and the mmap_lock stalls that queued behind such a writer.
#include "ptwalk/module_view.hpp"

#include <algorithm>

#include "ptwalk/module_abi.hpp"

namespace ptwalk {

namespace {

// the hooks the view needs, by the status the module printed
constexpr const char *kVmaHooks[] = {"__vma_start_write", "lock_next_vma"};

std::string hook_field(const Record &h, const char *key)
{
	auto it = h.find(key);
	return it == h.end() ? "" : it->second;
}

// why the view is not there, or nothing when it is
std::optional<std::string> vma_view_missing(const std::vector<Record> &hooks)
{
	for (const char *sym : kVmaHooks) {
		auto it = std::find_if(hooks.begin(), hooks.end(), [&](const Record &h) {
			return hook_field(h, PTW_HOOK_KEY(hook)) == sym;
		});
		if (it == hooks.end())
			return "this ptwalk.ko has no VMA-lock view (no " + std::string(sym) +
			       " hook): rebuild it";
		const std::string st = hook_field(*it, PTW_HOOK_KEY(status));
		if (st == "disabled")
			return "not built into ptwalk.ko for this kernel: its VMA locks are not "
			       "reference counts (module/KERNEL-FACTS.md 29)";
		if (st != "attached")
			return "ptwalk.ko's " + std::string(sym) + " hook is " + st + " (err " +
			       hook_field(*it, PTW_HOOK_KEY(err)) + ")";
	}
	return std::nullopt;
}

} // namespace

void module_vma_view(const ModuleRecords &rec, const std::map<uint64_t, size_t> &seq_to_span,
		     std::vector<WalkKernelView> &views, KernelView &kv)
{
	VmaLockView &v = kv.vma_locks.emplace();
	if (auto why = vma_view_missing(rec.hooks)) {
		v.why = *why;
		return;
	}
	v.available = true;
	for (const auto &[seq, m] : rec.walks)
		if (auto it = seq_to_span.find(seq); it != seq_to_span.end())
			views[it->second].vma = VmaHolds{m.vma_locks, m.vma_hold_ns,
							 m.vma_hold_max_ns, m.vma_fallbacks};
	std::map<pid_t, Victim> victims;
	for (const auto &t : rec.threads)
		victims[t.tid] = t.victim;
	for (const auto &[key, x] : rec.vma_waits) {
		auto it = seq_to_span.find(x.walk_seq);
		if (it == seq_to_span.end())
			continue; // not a walk of this run's scanner
		if (!x.behind_walk) {
			v.waits_not_behind++;
			continue;
		}
		const auto vic = victims.find(x.writer_pid);
		v.list.push_back({x.writer_pid,
				  vic != victims.end() ? Waiter{vic->second, {}}
						       : Waiter{std::nullopt, x.writer_comm},
				  x.start_ns, x.wait_ns, x.walker_held_ns, uint64_t(it->second),
				  x.detach});
		v.waits_behind_walk++;
		v.max_wait_ns = std::max(v.max_wait_ns, x.wait_ns);
		v.max_walker_held_ns = std::max(v.max_walker_held_ns, x.walker_held_ns);
	}
	std::sort(v.list.begin(), v.list.end(),
		  [](const auto &a, const auto &b) { return a.wait_ns > b.wait_ns; });
	if (!kv.stalls)
		return;
	for (const auto &st : kv.stalls->list)
		if (st.vma_chain_ns && *st.vma_chain_ns) {
			v.chain_stalls++;
			v.chain_ns += *st.vma_chain_ns;
		}
}

} // namespace ptwalk
