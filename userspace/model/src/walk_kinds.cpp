// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/walk_kinds.hpp"

#include <iterator>
#include <utility>

#include "ptwalk/module_abi.hpp"

namespace ptwalk {

namespace {

template <typename A>
constexpr bool names(const A &a, std::string_view s)
{
	for (std::string_view x : a)
		if (x == s)
			return true;
	return false;
}

// The table's facts against the module's contract (module/ptwalk_abi.h):
// each module kind one the module has, each of the module's kinds a walk
// kind that the module sees as itself (a lock mode is a LockMode, the
// module's list, or the table does not compile).
constexpr bool module_kinds_known()
{
	for (const auto &k : kWalkKindInfo)
		if (*k.module && !names(contract::kKinds, k.module))
			return false;
	return true;
}
constexpr bool module_kinds_covered()
{
	for (std::string_view m : contract::kKinds) {
		bool found = false;
		for (const auto &k : kWalkKindInfo)
			found |= m == k.kind && m == k.module;
		if (!found)
			return false;
	}
	return true;
}
constexpr bool in_order()
{
	for (size_t i = 0; i < std::size(kWalkKindInfo); i++)
		if (size_t(kWalkKindInfo[i].id) != i)
			return false;
	return true;
}
static_assert(module_kinds_known(), "walk_kinds.def: a module kind not in PTW_KINDS");
static_assert(module_kinds_covered(), "walk_kinds.def: a PTW_KINDS kind without its walk kind");
static_assert(in_order());

// "MAJOR.MINOR" (a change's releases) or uname -r's leading MAJOR.MINOR;
// {0, 0} when neither parses.
constexpr std::pair<int, int> release_of(std::string_view r)
{
	int v[2] = {0, 0};
	size_t i = 0;
	for (int part = 0; part < 2; part++) {
		if (i >= r.size() || r[i] < '0' || r[i] > '9')
			return {0, 0};
		while (i < r.size() && r[i] >= '0' && r[i] <= '9' && v[part] < 100000)
			v[part] = v[part] * 10 + (r[i++] - '0');
		if (part == 0 && (i >= r.size() || r[i++] != '.'))
			return {0, 0};
	}
	return {v[0], v[1]};
}

// Each change's releases parse, before < since, one change per kind.
constexpr bool changes_sound()
{
	for (size_t i = 0; i < std::size(kLockChanges); i++) {
		const LockChange &c = kLockChanges[i];
		if (release_of(c.before) == std::pair<int, int>{0, 0} ||
		    !(release_of(c.before) < release_of(c.since)))
			return false;
		for (size_t j = 0; j < i; j++)
			if (kLockChanges[j].kind == c.kind)
				return false;
	}
	return true;
}
static_assert(changes_sound(), "walk_kinds.def: PTW_LOCK_CHANGES: a release that does not "
			       "parse, before not before since, or two changes of one kind");

} // namespace

// The per-VMA walk's two ways back to mmap_lock, read in 7.2.13 and 7.3.4
// (identical there): lock_next_vma() takes it for a look-up where
// vma_start_read() fails or the tree changed, and drops it before the VMA
// is walked (lock_next_vma_under_mmap_lock()); only a vm_refcnt overflow
// returns -EAGAIN, and then proc_get_vma() keeps it to the read()'s
// m_stop() (fallback_to_mmap_lock(), unlock_vma_range()).
constexpr LockFallback kVmaLockFallback{
	"a VMA's vm_refcnt would overflow (lock_next_vma() -EAGAIN)",
	"the end of that read()",
	LockMode::read,
	"where a VMA cannot be read-locked as it is found, mmap_lock read for the look-up "
	"alone, no page table walked under it",
	"mm/mmap_lock.c lock_next_vma(), lock_next_vma_under_mmap_lock(); "
	"fs/proc/task_mmu.c proc_get_vma(), fallback_to_mmap_lock() (7.2.13, 7.3.4)",
};

LockingFact locking_fact(WalkKind k, std::string_view release)
{
	const WalkKindInfo &ki = info(k);
	LockingFact f;
	f.lock_mode = ki.lock_mode;
	f.unit = ki.unit;
	f.source = ki.source;
	for (const LockChange &c : kLockChanges) {
		if (c.kind != k)
			continue;
		f.change = &c;
		const auto rel = release_of(release);
		if (rel == std::pair<int, int>{0, 0}) {
			f.basis = LockBasis::unread;
		} else if (rel >= release_of(c.since)) {
			f.lock_mode = c.lock_mode;
			f.unit = c.unit;
			f.source = c.source;
			f.basis = LockBasis::changed;
		} else if (rel > release_of(c.before)) {
			f.basis = LockBasis::unread;
		}
		break;
	}
	if (f.unit == LockUnit::vma_lock)
		f.fallback = &kVmaLockFallback;
	return f;
}

const char *name(LockBasis b)
{
	switch (b) {
	case LockBasis::table:
		return "table";
	case LockBasis::changed:
		return "changed";
	case LockBasis::unread:
		return "unread";
	}
	return "?";
}

const WalkKindInfo &info(WalkKind k)
{
	return kWalkKindInfo[size_t(k)];
}

const char *name(WalkKind k)
{
	return info(k).kind;
}

const WalkKindInfo *walk_kind_info(std::string_view kind)
{
	for (const auto &k : kWalkKindInfo)
		if (kind == k.kind)
			return &k;
	return nullptr;
}

std::optional<WalkKind> parse_walk_kind(std::string_view s)
{
	if (const WalkKindInfo *k = walk_kind_info(s))
		return k->id;
	return std::nullopt;
}

std::optional<WalkKind> module_kind(WalkKind k)
{
	return *info(k).module ? parse_walk_kind(info(k).module) : std::nullopt;
}

} // namespace ptwalk
