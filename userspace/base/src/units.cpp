// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/units.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ptwalk {

namespace {

// Splits "1.5G" into 1.5 and "G". Rejects signs, spaces and empty numbers.
bool split_number(std::string_view s, double *num, std::string_view *suffix, std::string *err)
{
	size_t i = 0;
	bool digits = false, dot = false;
	while (i < s.size() && (isdigit((unsigned char)s[i]) || (s[i] == '.' && !dot))) {
		if (s[i] == '.')
			dot = true;
		else
			digits = true;
		i++;
	}
	if (!digits) {
		*err = s.empty() ? "empty value" : "not a number";
		return false;
	}
	std::string n(s.substr(0, i));
	*num = strtod(n.c_str(), nullptr);
	*suffix = s.substr(i);
	return true;
}

} // namespace

std::optional<uint64_t> parse_size(std::string_view s, std::string *err)
{
	std::string dummy;
	if (!err)
		err = &dummy;
	double num;
	std::string_view suf;
	if (!split_number(s, &num, &suf, err))
		return std::nullopt;
	unsigned shift = 0;
	std::string u;
	for (char c : suf)
		u += char(toupper((unsigned char)c));
	if (u.empty() || u == "B")
		shift = 0;
	else if (u == "K" || u == "KB" || u == "KIB")
		shift = 10;
	else if (u == "M" || u == "MB" || u == "MIB")
		shift = 20;
	else if (u == "G" || u == "GB" || u == "GIB")
		shift = 30;
	else if (u == "T" || u == "TB" || u == "TIB")
		shift = 40;
	else if (u == "P" || u == "PB" || u == "PIB")
		shift = 50;
	else {
		*err = "unknown size suffix '" + std::string(suf) + "' (use K, M, G, T)";
		return std::nullopt;
	}
	double v = std::ldexp(num, int(shift));
	if (v >= 18446744073709551616.0) {
		*err = "size too large";
		return std::nullopt;
	}
	return uint64_t(v);
}

std::optional<uint64_t> parse_duration_ns(std::string_view s, std::string *err)
{
	std::string dummy;
	if (!err)
		err = &dummy;
	if (!s.empty() && s[0] == '-') {
		*err = "negative duration";
		return std::nullopt;
	}
	double num;
	std::string_view suf;
	if (!split_number(s, &num, &suf, err))
		return std::nullopt;
	double mult;
	if (suf.empty() || suf == "s")
		mult = 1e9;
	else if (suf == "ms")
		mult = 1e6;
	else if (suf == "us")
		mult = 1e3;
	else if (suf == "ns")
		mult = 1;
	else if (suf == "m" || suf == "min")
		mult = 60e9;
	else if (suf == "h")
		mult = 3600e9;
	else {
		*err = "unknown duration unit '" + std::string(suf) + "' (use ns, us, ms, s, m, h)";
		return std::nullopt;
	}
	double v = num * mult;
	if (v >= 9.2e18) {
		*err = "duration too large";
		return std::nullopt;
	}
	return uint64_t(std::llround(v));
}

std::string format_bytes(uint64_t b)
{
	static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = double(b);
	unsigned u = 0;
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	char buf[32];
	if (u == 0)
		snprintf(buf, sizeof(buf), "%llu B", (unsigned long long)b);
	else
		snprintf(buf, sizeof(buf), "%.1f %s", v, units[u]);
	return buf;
}

std::string format_ns(uint64_t ns)
{
	char buf[32];
	double v = double(ns);
	if (ns < 1000)
		snprintf(buf, sizeof(buf), "%llu ns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(buf, sizeof(buf), "%.1f us", v / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, sizeof(buf), "%.2f ms", v / 1e6);
	else
		snprintf(buf, sizeof(buf), "%.2f s", v / 1e9);
	return buf;
}

std::string format_size_arg(uint64_t bytes)
{
	static const char kSuffix[] = "KMGT";
	int i = -1;
	while (bytes && i < 3 && bytes % 1024 == 0) {
		bytes /= 1024;
		i++;
	}
	return std::to_string(bytes) + (i < 0 ? "" : std::string(1, kSuffix[i]));
}

std::string format_duration_arg(uint64_t ns)
{
	if (ns == 0)
		return "0s";
	if (ns % 1'000'000'000 == 0)
		return std::to_string(ns / 1'000'000'000) + "s";
	if (ns % 1'000'000 == 0)
		return std::to_string(ns / 1'000'000) + "ms";
	if (ns % 1'000 == 0)
		return std::to_string(ns / 1'000) + "us";
	return std::to_string(ns) + "ns";
}

} // namespace ptwalk
