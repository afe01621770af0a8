// SPDX-License-Identifier: GPL-2.0
// The oracle of fuzz_json: built without coverage instrumentation (fuzz/
// CMakeLists.txt): it is not the code under test, its coverage would guide
// the fuzzer and triple its cost.
#include "json_check.hpp"

#include <cstdio>
#include <cstdlib>

namespace fuzzjson {

std::optional<ptwalk::Json> parse(std::string_view text)
{
	auto v = ptwalk::Json::Value::parse(text.begin(), text.end(), nullptr,
					    /*allow_exceptions=*/false);
	if (v.is_discarded())
		return std::nullopt;
	return ptwalk::Json(std::move(v));
}

void fail(const char *what, const std::string &text)
{
	fprintf(stderr, "json check: %s\n%.2000s\n", what, text.c_str());
	abort();
}

void check_dump(const ptwalk::Json &j, bool pretty)
{
	const std::string d = j.dump();
	auto back = parse(d);
	if (!back)
		fail("dump() is not strict UTF-8 JSON", d);
	if (back->dump() != d)
		fail("dump() does not read back to the same value", d);
	if (!pretty)
		return;
	const std::string p = j.dump(1);
	auto back2 = parse(p);
	if (!back2)
		fail("dump(1) is not strict UTF-8 JSON", p);
	if (back2->dump() != d)
		fail("dump(1) does not read back to the same value", p);
}

} // namespace fuzzjson
