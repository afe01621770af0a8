// SPDX-License-Identifier: GPL-2.0
// tracefs.hpp: an event's format file (and, once parsed, reading each of its
// fields from a record and a mmap_lock decoder built on it), and the
// mountinfo parser that finds tracefs. Seeds: userspace/testdata/tracefs.
#include <cstdint>
#include <string>
#include <string_view>

#include "ptwalk/mmap_lock_trace.hpp"
#include "ptwalk/tracefs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const std::string_view text(reinterpret_cast<const char *>(data), size);
	(void)ptwalk::mountinfo_mounts_of(text, "tracefs");
	std::string err;
	auto fmt = ptwalk::parse_event_format(text, &err);
	if (!fmt)
		return 0;
	uint8_t raw[64] = {};
	for (const auto &f : fmt->fields) {
		uint64_t v;
		(void)ptwalk::read_field_u64(f, raw, v);
	}
	ptwalk::MmapLockDecoder dec;
	if (dec.init(*fmt, *fmt, *fmt, &err)) {
		ptwalk::PerfSample s;
		s.raw = raw;
		ptwalk::LockEvent e;
		(void)dec.decode(s, e);
	}
	return 0;
}
