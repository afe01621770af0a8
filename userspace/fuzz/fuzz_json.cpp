// SPDX-License-Identifier: GPL-2.0
// json.hpp, the writer of every result: any JSON text read (leniently: any
// bytes in strings) into a ptwalk::Json must dump as strict UTF-8 JSON that
// reads back to the same value (parse -> dump -> parse, compact and pretty),
// and any bytes as one string must too (json_escape). Seeds: result JSONs of
// scripts/tests/data/results, unpacked by scripts/fuzz.sh.
#include <cstdint>
#include <string>
#include <string_view>

#include "json_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const std::string_view text(reinterpret_cast<const char *>(data), size);
	fuzzjson::check_dump(ptwalk::Json(std::string(text)));
	if (auto j = fuzzjson::parse(text, false))
		fuzzjson::check_dump(*j, true);
	return 0;
}
