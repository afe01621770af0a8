// SPDX-License-Identifier: GPL-2.0
// perf_session.hpp: `perf report --stdio` and `perf stat -x,` output, and
// what the typed results' to_json (perf_summary.hpp) write of them: strict
// UTF-8 JSON (json_check.hpp). Not "reads back the same": two event names
// that differ only in bytes that are not UTF-8 are one name once those
// bytes are U+FFFD, a member written twice (as the untyped results did).
// Seeds: userspace/testdata/perf.
#include <cstdint>
#include <string>
#include <string_view>

#include "json_check.hpp"
#include "ptwalk/perf_session.hpp"

namespace {

template <typename T>
void check_written(const T &v)
{
	ptwalk::Json::Value j;
	to_json(j, v);
	const std::string d = ptwalk::Json(j).dump();
	if (!fuzzjson::parse(d))
		fuzzjson::fail("dump() is not strict UTF-8 JSON", d);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const std::string_view text(reinterpret_cast<const char *>(data), size);
	check_written(ptwalk::parse_perf_report_symbols(text, 15));
	check_written(ptwalk::parse_perf_stat_csv(text));
	return 0;
}
