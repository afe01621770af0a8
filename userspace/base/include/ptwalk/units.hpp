// SPDX-License-Identifier: GPL-2.0
// Parsing and printing of sizes (binary suffixes) and durations.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ptwalk {

// "4096", "64K", "2G", "1T", "1.5G", "512MiB": binary multiples of bytes.
// On failure returns nullopt and sets *err to a short reason.
std::optional<uint64_t> parse_size(std::string_view s, std::string *err);
// "250ms", "10s", "2m", "500us", "100ns", "1.5s"; a bare number is seconds.
std::optional<uint64_t> parse_duration_ns(std::string_view s, std::string *err);

std::string format_bytes(uint64_t bytes); // "2.0 GiB", "64.0 KiB", "512 B"
std::string format_ns(uint64_t ns);       // "850 ns", "12.3 us", "1.20 ms", "3.40 s"
// As an option is written, exact, in the largest unit that divides it:
// "1G", "64K", "4097"; "10s", "20us", "0s". parse_size/parse_duration_ns
// read them back.
std::string format_size_arg(uint64_t bytes);
std::string format_duration_arg(uint64_t ns);

} // namespace ptwalk
