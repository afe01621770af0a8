// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/json.hpp"

#include <cmath>
#include <cstdio>

namespace ptwalk {

namespace {

// Length of the valid UTF-8 sequence starting at s[i] (shortest form, no
// surrogates, at most U+10FFFF); 0 when s[i] does not start one.
size_t utf8_len(std::string_view s, size_t i)
{
	auto cont = [&](size_t k) { return k < s.size() && (uint8_t(s[k]) & 0xc0) == 0x80; };
	const uint8_t c = uint8_t(s[i]);
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return cont(i + 1) ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		if (!cont(i + 1) || !cont(i + 2))
			return 0;
		const uint8_t c1 = uint8_t(s[i + 1]);
		return (c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 >= 0xa0) ? 0 : 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3))
			return 0;
		const uint8_t c1 = uint8_t(s[i + 1]);
		return (c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 >= 0x90) ? 0 : 4;
	}
	return 0;
}

} // namespace

// JSON text is UTF-8 (RFC 8259 8.1) and ptwalk compare/report read it as
// such: a byte that is not part of valid UTF-8 (a comm or a path from the
// kernel may hold any) becomes U+FFFD.
std::string json_escape(std::string_view s)
{
	std::string out;
	out.reserve(s.size() + 2);
	for (size_t i = 0; i < s.size(); i++) {
		const unsigned char c = uint8_t(s[i]);
		if (c >= 0x80) {
			const size_t n = utf8_len(s, i);
			if (n == 0) {
				out += "\xef\xbf\xbd"; // U+FFFD REPLACEMENT CHARACTER
			} else {
				out.append(s.substr(i, n));
				i += n - 1;
			}
			continue;
		}
		switch (c) {
		case '"': out += "\\\""; break;
		case '\\': out += "\\\\"; break;
		case '\b': out += "\\b"; break;
		case '\f': out += "\\f"; break;
		case '\n': out += "\\n"; break;
		case '\r': out += "\\r"; break;
		case '\t': out += "\\t"; break;
		default:
			if (c < 0x20) {
				char buf[8];
				snprintf(buf, sizeof(buf), "\\u%04x", c);
				out += buf;
			} else {
				out += char(c);
			}
		}
	}
	return out;
}

Json &Json::operator[](std::string_view key)
{
	if (is_null())
		v_ = Object{};
	auto &o = std::get<Object>(v_);
	for (auto &[k, v] : o)
		if (k == key)
			return v;
	o.emplace_back(std::string(key), Json());
	return o.back().second;
}

const Json *Json::find(std::string_view key) const
{
	if (!is_object())
		return nullptr;
	for (auto &[k, v] : std::get<Object>(v_))
		if (k == key)
			return &v;
	return nullptr;
}

Json &Json::push(Json v)
{
	if (is_null())
		v_ = Array{};
	auto &a = std::get<Array>(v_);
	a.push_back(std::move(v));
	return a.back();
}

size_t Json::size() const
{
	if (auto *a = std::get_if<Array>(&v_))
		return a->size();
	if (auto *o = std::get_if<Object>(&v_))
		return o->size();
	return 0;
}

const Json &Json::at(size_t i) const
{
	return std::get<Array>(v_).at(i);
}

std::optional<double> Json::number() const
{
	if (auto *i = std::get_if<int64_t>(&v_))
		return double(*i);
	if (auto *u = std::get_if<uint64_t>(&v_))
		return double(*u);
	if (auto *d = std::get_if<double>(&v_))
		return *d;
	return std::nullopt;
}

std::optional<std::string> Json::string() const
{
	if (auto *s = std::get_if<std::string>(&v_))
		return *s;
	return std::nullopt;
}

std::optional<bool> Json::boolean() const
{
	if (auto *b = std::get_if<bool>(&v_))
		return *b;
	return std::nullopt;
}

std::string Json::dump(int indent) const
{
	std::string out;
	dump_to(out, indent, 0);
	return out;
}

static void newline(std::string &out, int indent, int depth)
{
	if (indent < 0)
		return;
	out += '\n';
	out.append(size_t(indent * depth), ' ');
}

void Json::dump_to(std::string &out, int indent, int depth) const
{
	char buf[64];
	switch (v_.index()) {
	case 0:
		out += "null";
		break;
	case 1:
		out += std::get<bool>(v_) ? "true" : "false";
		break;
	case 2:
		snprintf(buf, sizeof(buf), "%lld", (long long)std::get<int64_t>(v_));
		out += buf;
		break;
	case 3:
		snprintf(buf, sizeof(buf), "%llu",
			 (unsigned long long)std::get<uint64_t>(v_));
		out += buf;
		break;
	case 4: {
		double d = std::get<double>(v_);
		if (!std::isfinite(d)) {
			out += "null"; // JSON has no NaN/Inf
		} else {
			snprintf(buf, sizeof(buf), "%.17g", d);
			out += buf;
		}
		break;
	}
	case 5:
		out += '"';
		out += json_escape(std::get<std::string>(v_));
		out += '"';
		break;
	case 6: {
		const auto &a = std::get<Array>(v_);
		// arrays of scalars stay on one line
		bool flat = true;
		for (auto &e : a)
			if (e.is_array() || e.is_object())
				flat = false;
		out += '[';
		for (size_t i = 0; i < a.size(); i++) {
			if (i)
				out += flat && indent >= 0 ? ", " : ",";
			if (!flat)
				newline(out, indent, depth + 1);
			a[i].dump_to(out, flat ? -1 : indent, depth + 1);
		}
		if (!flat && !a.empty())
			newline(out, indent, depth);
		out += ']';
		break;
	}
	case 7: {
		const auto &o = std::get<Object>(v_);
		out += '{';
		for (size_t i = 0; i < o.size(); i++) {
			if (i)
				out += ',';
			newline(out, indent, depth + 1);
			out += '"';
			out += json_escape(o[i].first);
			out += indent >= 0 ? "\": " : "\":";
			o[i].second.dump_to(out, indent, depth + 1);
		}
		if (!o.empty())
			newline(out, indent, depth);
		out += '}';
		break;
	}
	}
}

} // namespace ptwalk
