// SPDX-License-Identifier: GPL-2.0
// The module's record contract (module/ptwalk_abi.h) for C++ readers: the
// key lists and names as arrays; PTW_WALK_KEY(k) and PTW_STALL_KEY(k) give a
// key's name and do not compile for a key the module does not print.
#pragma once

#include <array>
#include <string_view>

#include "ptwalk_abi.h"

namespace ptwalk::contract {

#define PTW_CXX_KEY(key, conv) std::string_view(#key),
inline constexpr std::array kWalkKeys{PTW_WALK_KEYS(PTW_CXX_KEY)};
inline constexpr std::array kStallKeys{PTW_STALL_KEYS(PTW_CXX_KEY)};
inline constexpr std::array kVmaWaitKeys{PTW_VMA_WAIT_KEYS(PTW_CXX_KEY)};
inline constexpr std::array kHistKeys{PTW_HIST_KEYS(PTW_CXX_KEY)};
#undef PTW_CXX_KEY
#define PTW_CXX_NAME(value, name) std::string_view(name),
inline constexpr std::array kKinds{PTW_KINDS(PTW_CXX_NAME)};
inline constexpr std::array kLockModes{PTW_LOCK_MODES(PTW_CXX_NAME)};
#undef PTW_CXX_NAME
inline constexpr std::string_view kDebugfsDir = PTW_DEBUGFS_DIR;

} // namespace ptwalk::contract
