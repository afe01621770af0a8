// SPDX-License-Identifier: GPL-2.0
// json.hpp, the writer of every result: any bytes as a string and as a key
// must dump as strict UTF-8 JSON that reads back to the same value, and any
// JSON text read into a ptwalk::Json must too (parse -> dump -> parse,
// compact and pretty). Seeds: result JSONs of scripts/tests/data/results,
// unpacked by scripts/fuzz.sh.
#include <cstdint>
#include <string>
#include <string_view>

#include "json_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const std::string text(reinterpret_cast<const char *>(data), size);
	fuzzjson::check_dump(ptwalk::Json(text));
	ptwalk::Json o = ptwalk::Json::object();
	o[text] = ptwalk::Json::array();
	o[text].push(text);
	fuzzjson::check_dump(o, true);
	if (auto j = fuzzjson::parse(text))
		fuzzjson::check_dump(*j, true);
	return 0;
}
