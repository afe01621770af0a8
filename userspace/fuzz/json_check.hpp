// SPDX-License-Identifier: GPL-2.0
// For the fuzz targets: the check that what ptwalk::Json writes is strict
// JSON (RFC 8259) in valid UTF-8 that reads back to the same value. ptwalk
// compare/report read results with Python's json module from UTF-8 text, so
// a dump must be that whatever bytes the kernel gave us. The reader is
// nlohmann's strict parser (json_check.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ptwalk/json.hpp"

namespace fuzzjson {

// text as strict JSON (strings valid UTF-8, \u escapes no lone surrogates);
// nullopt when it is not.
std::optional<ptwalk::Json> parse(std::string_view text);

[[noreturn]] void fail(const char *what, const std::string &text);

// j.dump() (and, with pretty, j.dump(1)) is strict JSON that reads back to
// j, compared as compact dumps. Aborts when not.
void check_dump(const ptwalk::Json &j, bool pretty = false);

} // namespace fuzzjson
