// SPDX-License-Identifier: GPL-2.0
// How a thread holds or waits for mmap_lock: ptwalk.ko's list
// (PTW_LOCK_MODES in module/ptwalk_abi.h), in its order, from its one
// definition with the results' names (lock_modes.def). Text only at the
// boundaries: the module's names when its records are read, the results'
// names (results/SCHEMA.md: a walk that took the lock both ways is
// "read+write") when JSON is written.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "ptwalk/lock_modes.def"

namespace ptwalk {

enum class LockMode : uint8_t {
#define PTW_X(mode, name) mode,
	PTW_LOCK_MODE_NAMES(PTW_X)
#undef PTW_X
};

// The results' name (lock_modes.def: mixed is read+write).
const char *name(LockMode m);
// A results' name back; nullopt for anything else.
std::optional<LockMode> parse_lock_mode(std::string_view s);
// A ptwalk.ko record's name (PTW_LOCK_MODES: mixed as the module names
// it); nullopt for anything else.
std::optional<LockMode> module_lock_mode(std::string_view s);

// The mode of one hold or wait: for writing or for reading.
constexpr LockMode held_mode(bool write)
{
	return write ? LockMode::write : LockMode::read;
}

// The mode of a walk that took the lock for reading, for writing, or both.
constexpr LockMode lock_mode(bool read, bool write)
{
	return read && write ? LockMode::mixed
	       : write       ? LockMode::write
	       : read        ? LockMode::read
			     : LockMode::none;
}

} // namespace ptwalk
