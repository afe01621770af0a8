// SPDX-License-Identifier: GPL-2.0
// vma_layout.hpp: /proc/PID/maps (with and without a mapping name), its
// summary and the hold model over it, and the --vma-layout spec.
// Seeds: userspace/testdata/proc (smaps carries maps lines).
#include <cstdint>
#include <string>
#include <string_view>

#include "ptwalk/vma_layout.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const std::string_view text(reinterpret_cast<const char *>(data), size);
	for (std::string_view name : {"", "ptwalk"}) {
		const ptwalk::VmaLayout l = ptwalk::parse_vma_layout(text, name);
		(void)ptwalk::layout_summary(l);
		for (auto u : {ptwalk::LockUnit::whole_walk, ptwalk::LockUnit::vma_when_contended,
			       ptwalk::LockUnit::read_chunk, ptwalk::LockUnit::pmd_chunk,
			       ptwalk::LockUnit::vma_per_call})
			(void)ptwalk::hold_bytes(u, l.mapping_bytes(), l.mapping.size(),
						 l.largest(), 3);
	}
	std::string err;
	if (auto spec = ptwalk::parse_layout_spec(text, &err))
		(void)ptwalk::describe(*spec);
	return 0;
}
