// SPDX-License-Identifier: GPL-2.0
// module_view.hpp: ptwalk.ko's debugfs records (key=value lines, %XX-escaped
// comms) as generic records, walks and stalls, and the matching of the walks
// with scanner spans made from them. Seeds: userspace/testdata/module.
#include <cstdint>
#include <string_view>
#include <vector>

#include "ptwalk/module_view.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const std::string_view text(reinterpret_cast<const char *>(data), size);
	(void)ptwalk::parse_records(text);
	(void)ptwalk::unescape_comm(text);
	(void)ptwalk::parse_module_stalls(text);
	const std::vector<ptwalk::ModuleWalk> walks = ptwalk::parse_module_walks(text);
	std::vector<ptwalk::WalkSpan> spans;
	for (const auto &w : walks)
		spans.push_back({w.kind, w.walker_pid, w.start_ns, w.end_ns});
	(void)ptwalk::match_walks(spans, walks, 1000);
	return 0;
}
