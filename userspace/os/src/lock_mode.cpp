// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/lock_mode.hpp"

#include <iterator>

#include "ptwalk/enum_names.hpp"
#include "ptwalk/module_abi.hpp"

namespace ptwalk {

namespace {

constexpr EnumName<LockMode> kNames[] = {
#define PTW_X(mode, name) {LockMode::mode, name},
	PTW_LOCK_MODE_NAMES(PTW_X)
#undef PTW_X
};
static_assert(enum_in_order(kNames));

// the enum is the module's list, in its order
static_assert(std::size(contract::kLockModes) == std::size(kNames));
static_assert(contract::kLockModes[size_t(LockMode::none)] == "none");
static_assert(contract::kLockModes[size_t(LockMode::read)] == "read");
static_assert(contract::kLockModes[size_t(LockMode::write)] == "write");
static_assert(contract::kLockModes[size_t(LockMode::mixed)] == "mixed");

} // namespace

const char *name(LockMode m)
{
	return enum_name(kNames, m);
}

std::optional<LockMode> parse_lock_mode(std::string_view s)
{
	return enum_parse(kNames, s);
}

std::optional<LockMode> module_lock_mode(std::string_view s)
{
	for (size_t i = 0; i < std::size(contract::kLockModes); i++)
		if (s == contract::kLockModes[i])
			return LockMode(i);
	return std::nullopt;
}

} // namespace ptwalk
