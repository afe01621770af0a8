// SPDX-License-Identifier: GPL-2.0
// `ptwalk locking`: each walk kind's locking on one kernel release, from the
// one table (walk_kinds.def, locking_fact()), and whether a walk of that
// kind makes mmap_lock waiters wait: what a fleet reads before rolling an
// image ("does the monitor's smaps still stall our index on 7.3?").
#pragma once

#include <string>
#include <string_view>

#include "ptwalk/json.hpp"

namespace ptwalk {

// {"release", "kinds": {KIND: {lock_mode, lock_unit, basis,
// mmap_lock_waiters_wait (true/false; null where unread), changed?,
// source}}}.
Json locking_table_json(std::string_view release);
// The same as a table for people, sources left to --json.
std::string locking_table_text(std::string_view release);

} // namespace ptwalk
