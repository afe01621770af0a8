// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/locking_table.hpp"

#include <optional>

#include "ptwalk/vma_layout.hpp"
#include "ptwalk/walk_kinds.hpp"

namespace ptwalk {

namespace {

// Whether an mmap_lock waiter waits for a walk under this fact: under
// mmap_lock, writers wait for it (and readers queue behind a waiting writer,
// KERNEL-FACTS 27); under per-VMA locks none does; unread: not known.
std::optional<bool> waiters_wait(const LockingFact &f)
{
	if (f.basis == LockBasis::unread)
		return std::nullopt;
	return f.unit != LockUnit::vma_lock;
}

} // namespace

Json locking_table_json(std::string_view release)
{
	Json j = Json::object();
	j["release"] = release;
	Json &kinds = j["kinds"];
	kinds = Json::object();
	for (const WalkKindInfo &ki : kWalkKindInfo) {
		const LockingFact f = locking_fact(ki.id, release);
		Json &k = kinds[ki.kind];
		k["lock_mode"] = name(f.lock_mode);
		k["lock_unit"] = name(f.unit);
		k["basis"] = name(f.basis);
		const auto w = waiters_wait(f);
		k["mmap_lock_waiters_wait"] = w ? Json(*w) : Json();
		if (f.change) {
			Json c = Json::object();
			c["before"] = f.change->before;
			c["since"] = f.change->since;
			c["lock_mode"] = name(f.change->lock_mode);
			c["lock_unit"] = name(f.change->unit);
			k["changed"] = std::move(c);
		}
		if (f.fallback) {
			Json fb = Json::object();
			fb["when"] = f.fallback->when;
			fb["lock_mode"] = name(f.fallback->lock_mode);
			fb["held_until"] = f.fallback->held_until;
			fb["lookup"] = f.fallback->lookup;
			fb["source"] = f.fallback->source;
			k["fallback"] = std::move(fb);
		} else {
			k["fallback"] = Json();
		}
		k["source"] = f.source;
	}
	return j;
}

std::string locking_table_text(std::string_view release)
{
	std::string out =
		"walk kinds' locking on " +
		(release.empty() ? std::string("an unknown kernel") : std::string(release)) + "\n";
	char line[256];
	snprintf(line, sizeof(line), "%-16s %-9s %-18s %-8s %s\n", "kind", "mmap_lock", "held per",
		 "basis", "mmap_lock waiters wait for the walk");
	out += line;
	for (const WalkKindInfo &ki : kWalkKindInfo) {
		const LockingFact f = locking_fact(ki.id, release);
		const auto w = waiters_wait(f);
		std::string says =
			!w ? std::string("unknown: release unread (") + f.change->before + " .. " +
					f.change->since + "); a run here tells"
			: *w ? std::string("yes")
			     : std::string("no (per-VMA locks from ") + f.change->since +
					"; a writer to the walked VMA waits" +
					(f.fallback ? "; where a VMA cannot be locked, mmap_lock "
						      "read for the look-up, to the end of that "
						      "read() only on a refcount overflow"
						    : "") +
					")";
		if (w && *w && f.change)
			says += std::string(" (per-VMA locks from ") + f.change->since + ")";
		snprintf(line, sizeof(line), "%-16s %-9s %-18s %-8s ", ki.kind,
			 f.unit == LockUnit::vma_lock ? "none" : name(f.lock_mode),
			 held_per(f.unit), name(f.basis));
		out += line + says + "\n";
	}
	out += "sources and the releases each fact was read on: ptwalk locking --json\n";
	return out;
}

} // namespace ptwalk
