// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/walk_kinds.hpp"

#include <iterator>

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

} // namespace

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
