// SPDX-License-Identifier: GPL-2.0
// perf_session.hpp: `perf report --stdio` and `perf stat -x,` output.
// Seeds: userspace/testdata/perf.
#include <cstdint>
#include <string_view>

#include "ptwalk/perf_session.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const std::string_view text(reinterpret_cast<const char *>(data), size);
	(void)ptwalk::parse_perf_report_symbols(text, 15);
	(void)ptwalk::parse_perf_stat_csv(text);
	return 0;
}
