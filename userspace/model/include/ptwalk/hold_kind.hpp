// SPDX-License-Identifier: GPL-2.0
// What the monitor says an mmap_lock hold is ("kind" of its holds,
// results/SCHEMA.md): the target's /proc file the holder had open, the
// process's own work, the mm's teardown, or unknown. Text only where the
// JSON, the table and the metrics' labels are written, and where an fd's
// readlink is read (parse_walk_file).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>

#include "ptwalk/walk_kinds.hpp"

namespace ptwalk {

// The /proc/PID files beside the walk kinds' (walk_kinds.def) whose readers
// take the target's mmap_lock.
#define PTW_OTHER_PROC_FILES(X) X(mem) X(cmdline) X(environ) X(auxv) X(status)
enum class OtherProcFile : uint8_t {
#define PTW_X(f) f,
	PTW_OTHER_PROC_FILES(PTW_X)
#undef PTW_X
};

// A /proc/PID file a holder had open: a walk kind's, carried as the first
// kind that uses it (file_kind(): clear_refs, not softdirty), or another.
using ProcFile = std::variant<WalkKind, OtherProcFile>;

// A hold that is no file's walk.
#define PTW_HOLD_CAUSES(X) X(own) X(exit) X(unknown)
enum class HoldCause : uint8_t {
#define PTW_X(c) c,
	PTW_HOLD_CAUSES(PTW_X)
#undef PTW_X
};

// own: the process's own mmap/munmap/fault/exit; exit: the mm's teardown,
// by its owner or by the reader that dropped its last reference.
using HoldKind = std::variant<WalkKind, OtherProcFile, HoldCause>;

// The first walk kind whose file is k's: the one a ProcFile carries.
WalkKind file_kind(WalkKind k);

const char *name(OtherProcFile f);
const char *name(HoldCause c);
// The file's name under /proc/PID: "smaps", "clear_refs", "mem".
const char *name(const ProcFile &f);
// The results' text: the file's name, "own", "exit" or "unknown".
const char *name(const HoldKind &k);

// A file's name back (a walk kind's as its file_kind()); nullopt for any
// other text.
std::optional<ProcFile> parse_proc_file(std::string_view s);

// The hold of a walk of the file.
HoldKind hold_kind(const ProcFile &f);

} // namespace ptwalk
