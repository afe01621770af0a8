// SPDX-License-Identifier: GPL-2.0
// procfs.hpp: every /proc and /sys text parser on each input (smaps_rollup,
// smaps, status, meminfo, a kernel config, a release string) and walk_size
// over their figures. Seeds: userspace/testdata/proc.
#include <cstdint>
#include <string_view>

#include "ptwalk/procfs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const std::string_view text(reinterpret_cast<const char *>(data), size);
	const ptwalk::MemRollup r = ptwalk::parse_smaps_rollup(text);
	const ptwalk::ProcStatus s = ptwalk::parse_status(text);
	const ptwalk::MemInfo m = ptwalk::parse_meminfo(text);
	(void)ptwalk::sum_smaps_referenced(text);
	(void)ptwalk::sum_smaps_referenced_in(text, 0x7f0000000000, 0x7f0000400000);
	(void)ptwalk::walk_size(r, s, m.hugepage_size).to_json();
	(void)ptwalk::parse_kernel_config(text);
	(void)ptwalk::kernel_version(text);
	return 0;
}
