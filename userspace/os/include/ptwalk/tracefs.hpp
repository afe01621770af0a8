// SPDX-License-Identifier: GPL-2.0
// tracefs: find (or mount) it, read trace event ids and parse their `format`
// files into field offsets and sizes. Layouts differ across kernels (6.1's
// mmap_lock events carry `__data_loc char[] memcg_path`, 6.18's `u64
// memcg_id`), so decoders always go by the parsed format, never by a fixed
// struct.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ptwalk {

struct TraceField {
	std::string type; // "struct mm_struct *", "__data_loc char[]"
	std::string name; // "mm" (array suffix stripped)
	uint32_t offset = 0;
	uint32_t size = 0;
	uint32_t array_len = 0; // N of "name[N]", 0 when not an array
	bool is_signed = false;
	bool data_loc = false; // __data_loc or __rel_loc: a u32 (len << 16 | offset)
	bool rel_loc = false;  // __rel_loc: offset from the end of this field
	bool common = false;   // common_* header field
};

struct TraceEventFormat {
	std::string name;
	uint32_t id = 0;
	std::vector<TraceField> fields;
	const TraceField *find(std::string_view field) const;
};

// Parses the text of events/<system>/<event>/format with libtraceevent
// (os/src/trace_format.cpp), after checking each line has the shape the
// kernel writes (libtraceevent 1.7.1 crashes or leaks on some that do not).
// nullopt with *err set ("format line 5: not a field line as the kernel
// writes one", "format: missing ID") otherwise. Fields in file order, the
// common ones first; type strings as libtraceevent gives them ("char[16]").
std::optional<TraceEventFormat> parse_event_format(std::string_view text, std::string *err);

// Reads an unsigned little-endian field (size 1, 2, 4 or 8) from a raw
// tracepoint record; false when it does not fit in raw.
bool read_field_u64(const TraceField &f, std::span<const uint8_t> raw, uint64_t &out) noexcept;

// A tracefs mount: found in /proc/self/mountinfo (tracefs, or debugfs with
// tracing/ under it), else mounted by us on a directory of our own
// (/run/ptwalk-tracefs.XXXXXX, else under /tmp). Only a mount we made is
// unmounted, and its directory removed (release() or the destructor). Kept rather than
// libtracefs: tracefs_tracing_dir() mounts tracefs and leaves it mounted,
// and ptwalk restores every system setting it changes.
class Tracefs {
public:
	Tracefs() = default;
	Tracefs(const Tracefs &) = delete;
	Tracefs &operator=(const Tracefs &) = delete;
	Tracefs(Tracefs &&o) noexcept;
	Tracefs &operator=(Tracefs &&o) noexcept;
	~Tracefs() { release(); }

	// Finds or mounts tracefs. false with *err ("mount tracefs on
	// /run/ptwalk-tracefs.Ab12Cd: Operation not permitted", ...) when
	// impossible.
	static constexpr const char *kPrivatePrefix = "ptwalk-tracefs.";
	bool open(std::string *err);
	bool is_open() const { return !root_.empty(); }
	const std::string &root() const { return root_; } // ".../tracing"
	bool mounted_by_us() const { return mounted_by_us_; }

	// Reads and parses <root>/events/<system>/<event>/format.
	std::optional<TraceEventFormat>
	event_format(std::string_view system, std::string_view event, std::string *err) const;
	// Unmounts tracefs if (and only if) we mounted it. Idempotent.
	void release();

private:
	std::string root_;
	std::string mount_point_; // what we mounted, when mounted_by_us_
	bool mounted_by_us_ = false;
};

// Mount points of a filesystem type in mountinfo text (octal escapes
// decoded), in file order. Exposed for tests.
std::vector<std::string> mountinfo_mounts_of(std::string_view mountinfo, std::string_view fstype);

} // namespace ptwalk
