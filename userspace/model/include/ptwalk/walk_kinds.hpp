// SPDX-License-Identifier: GPL-2.0
// Walk kinds and their facts, from their one definition (walk_kinds.def):
// the enum, the names, how each takes mmap_lock, which ptwalk.ko kind sees
// it and which /proc file it uses.
#pragma once

#include <optional>
#include <string_view>

#include "ptwalk/lock_mode.hpp"
#include "ptwalk/walk_kinds.def"

namespace ptwalk {

enum class WalkKind {
#define PTW_X(name, module, mode, unit, file, source) name,
	PTW_WALK_KINDS(PTW_X)
#undef PTW_X
};

// How a walk of one kind holds the target's mmap_lock (walk_kinds.def,
// PTW_LOCK_UNITS, says what each means).
enum class LockUnit {
#define PTW_X(name, text) name,
	PTW_LOCK_UNITS(PTW_X)
#undef PTW_X
};

struct WalkKindInfo {
	const char *kind; // its name
	LockUnit unit;
	LockMode lock_mode; // write or read
	const char *source; // where in the kernel, per version
	WalkKind id;
	const char *module; // ptwalk.ko's kind (PTW_KINDS); "" when none sees it
	const char *file;   // the /proc/PID file it reads or writes
};

namespace walk_kinds_detail {
constexpr const char *none_is_empty(const char *s)
{
	return std::string_view(s) == "none" ? "" : s;
}
} // namespace walk_kinds_detail

// In the order tables and verdicts list them.
inline constexpr WalkKindInfo kWalkKindInfo[] = {
#define PTW_X(name, module, mode, unit, file, source)                       \
	{#name,  LockUnit::unit, LockMode::mode,                            \
	 source, WalkKind::name, walk_kinds_detail::none_is_empty(#module), \
	 #file},
	PTW_WALK_KINDS(PTW_X)
#undef PTW_X
};

// Every kind's name, in the same order.
inline constexpr const char *kWalkKinds[] = {
#define PTW_X(name, module, mode, unit, file, source) #name,
	PTW_WALK_KINDS(PTW_X)
#undef PTW_X
};

// One PTW_LOCK_CHANGES entry: a kind's locking from release `since` on.
struct LockChange {
	WalkKind kind;
	const char *before, *since; // "MAJOR.MINOR"
	LockMode lock_mode;
	LockUnit unit;
	const char *source;
};

inline constexpr LockChange kLockChanges[] = {
#define PTW_X(name, before, since, mode, unit, source) \
	{WalkKind::name, before, since, LockMode::mode, LockUnit::unit, source},
	PTW_LOCK_CHANGES(PTW_X)
#undef PTW_X
};

// How a kind's walks take mmap_lock on one kernel release, and on what
// that rests: `table` (kWalkKindInfo; no change known up to this release),
// `changed` (a PTW_LOCK_CHANGES entry, from its `since`), or `unread` (a
// release between a change's `before` and `since`, or one that does not
// parse: the table's fact, which the run's own view must confirm).
enum class LockBasis { table, changed, unread };
// Where a walk under per-VMA locks still takes mmap_lock (lookup: for a
// look-up alone, no page table walked; when: to the end of the read()).
struct LockFallback {
	const char *when;
	const char *held_until;
	LockMode lock_mode;
	const char *lookup;
	const char *source;
};
struct LockingFact {
	LockMode lock_mode = LockMode::none;
	LockUnit unit = LockUnit::whole_walk;
	const char *source = "";
	LockBasis basis = LockBasis::table;
	const LockChange *change = nullptr;     // the kind's change, when it has one
	const LockFallback *fallback = nullptr; // unit vma_lock: its ways back to mmap_lock
};
// For `release` as uname -r gives it ("7.3.4+deb13-amd64").
LockingFact locking_fact(WalkKind k, std::string_view release);
const char *name(LockBasis b);

const WalkKindInfo &info(WalkKind k);
const char *name(WalkKind k);
std::optional<WalkKind> parse_walk_kind(std::string_view s);
// nullptr for an unknown kind.
const WalkKindInfo *walk_kind_info(std::string_view kind);
// The ptwalk.ko kind whose hook sees a walk of kind k (module kinds are
// walk kinds: clear_refs for softdirty); nullopt when none does (maps).
std::optional<WalkKind> module_kind(WalkKind k);

} // namespace ptwalk
