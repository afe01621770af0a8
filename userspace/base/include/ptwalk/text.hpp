// SPDX-License-Identifier: GPL-2.0
// Small text helpers shared by the perf session and the parsers of perf's
// output (perf_control.cpp, perf_session.cpp, perf_output.cpp).
#pragma once

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptwalk::text {

inline std::string_view trim(std::string_view s)
{
	while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
		s.remove_prefix(1);
	while (!s.empty() &&
	       (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
		s.remove_suffix(1);
	return s;
}

inline std::vector<std::string_view> split_lines(std::string_view text)
{
	std::vector<std::string_view> out;
	while (!text.empty()) {
		size_t nl = text.find('\n');
		out.push_back(text.substr(0, nl));
		if (nl == std::string_view::npos)
			break;
		text.remove_prefix(nl + 1);
	}
	return out;
}

inline std::optional<uint64_t> parse_u64(std::string_view s)
{
	s = trim(s);
	uint64_t v = 0;
	auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
	if (ec != std::errc() || p != s.data() + s.size() || s.empty())
		return std::nullopt;
	return v;
}

inline std::optional<double> parse_double(std::string_view s)
{
	s = trim(s);
	if (s.empty())
		return std::nullopt;
	std::string tmp(s);
	char *end = nullptr;
	errno = 0;
	double v = std::strtod(tmp.c_str(), &end);
	if (errno != 0 || end != tmp.c_str() + tmp.size())
		return std::nullopt;
	return v;
}

} // namespace ptwalk::text
