// SPDX-License-Identifier: GPL-2.0
// For the fuzz targets: a strict JSON reader (RFC 8259) and the check that
// what ptwalk::Json writes reads back. The library only writes JSON; ptwalk
// compare/report read it with Python's json module from UTF-8 text, so a
// dump must be JSON and valid UTF-8 whatever bytes the kernel gave us.
#pragma once

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "ptwalk/json.hpp"

// The checker is the oracle, not the code under test: no coverage
// instrumentation (it would guide the fuzzer, and triple its cost).
#pragma clang attribute push(__attribute__((no_sanitize("coverage"))), apply_to = function)

namespace fuzzjson {

class Reader {
public:
	// strict: strings must be valid UTF-8 (raw and \u-escaped); otherwise
	// any byte >= 0x20 is taken as is (a comm or a path from the kernel).
	Reader(std::string_view s, bool strict) : s_(s), c_(s.data()), strict_(strict) {}

	std::optional<ptwalk::Json> document()
	{
		auto v = value(0);
		ws();
		if (!v || p_ != s_.size())
			return std::nullopt;
		return v;
	}

private:
	static constexpr int kMaxDepth = 64;
	std::string_view s_;
	const char *c_; // s_.data(): plain indexing in the hot loops
	size_t p_ = 0;
	bool strict_;

	void ws()
	{
		while (p_ < s_.size() && (c_[p_] == ' ' || c_[p_] == '\t' ||
					  c_[p_] == '\n' || c_[p_] == '\r'))
			p_++;
	}
	bool eat(char c)
	{
		ws();
		if (p_ < s_.size() && c_[p_] == c) {
			p_++;
			return true;
		}
		return false;
	}
	bool word(std::string_view w)
	{
		if (s_.substr(p_, w.size()) != w)
			return false;
		p_ += w.size();
		return true;
	}

	std::optional<ptwalk::Json> value(int depth)
	{
		ws();
		if (p_ >= s_.size() || depth > kMaxDepth)
			return std::nullopt;
		char c = c_[p_];
		if (c == '{') {
			p_++;
			ptwalk::Json::Object o;
			if (eat('}'))
				return ptwalk::Json(std::move(o));
			do {
				ws();
				auto k = str();
				if (!k || !eat(':'))
					return std::nullopt;
				auto v = value(depth + 1);
				if (!v)
					return std::nullopt;
				o.emplace_back(std::move(*k), std::move(*v));
			} while (eat(','));
			if (!eat('}'))
				return std::nullopt;
			return ptwalk::Json(std::move(o));
		}
		if (c == '[') {
			p_++;
			ptwalk::Json::Array a;
			if (eat(']'))
				return ptwalk::Json(std::move(a));
			do {
				auto v = value(depth + 1);
				if (!v)
					return std::nullopt;
				a.push_back(std::move(*v));
			} while (eat(','));
			if (!eat(']'))
				return std::nullopt;
			return ptwalk::Json(std::move(a));
		}
		if (c == '"') {
			auto v = str();
			if (!v)
				return std::nullopt;
			return ptwalk::Json(std::move(*v));
		}
		if (word("null"))
			return ptwalk::Json();
		if (word("true"))
			return ptwalk::Json(true);
		if (word("false"))
			return ptwalk::Json(false);
		return number();
	}

	// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
	std::optional<ptwalk::Json> number()
	{
		const size_t b = p_;
		auto digits = [&] {
			size_t d = p_;
			while (p_ < s_.size() && c_[p_] >= '0' && c_[p_] <= '9')
				p_++;
			return p_ - d;
		};
		bool neg = p_ < s_.size() && c_[p_] == '-';
		if (neg)
			p_++;
		size_t lead = p_;
		size_t n = digits();
		if (n == 0 || (n > 1 && c_[lead] == '0'))
			return std::nullopt;
		bool integer = true;
		if (p_ < s_.size() && c_[p_] == '.') {
			p_++;
			integer = false;
			if (!digits())
				return std::nullopt;
		}
		if (p_ < s_.size() && (c_[p_] == 'e' || c_[p_] == 'E')) {
			p_++;
			integer = false;
			if (p_ < s_.size() && (c_[p_] == '+' || c_[p_] == '-'))
				p_++;
			if (!digits())
				return std::nullopt;
		}
		std::string_view t = s_.substr(b, p_ - b);
		// ptwalk::Json writes int64 with %lld, uint64 with %llu and
		// doubles with %.17g; read them back as the same types ("-0" is
		// the double -0.0, integers out of range are doubles).
		if (integer && t != "-0") {
			if (neg) {
				int64_t i;
				auto r = std::from_chars(t.data(), t.data() + t.size(), i);
				if (r.ec == std::errc() && r.ptr == t.data() + t.size())
					return ptwalk::Json(i);
			} else {
				uint64_t u;
				auto r = std::from_chars(t.data(), t.data() + t.size(), u);
				if (r.ec == std::errc() && r.ptr == t.data() + t.size())
					return ptwalk::Json(u);
			}
		}
		return ptwalk::Json(strtod(std::string(t).c_str(), nullptr));
	}

	static void utf8(std::string &out, uint32_t cp)
	{
		if (cp < 0x80) {
			out += char(cp);
		} else if (cp < 0x800) {
			out += char(0xc0 | (cp >> 6));
			out += char(0x80 | (cp & 0x3f));
		} else if (cp < 0x10000) {
			out += char(0xe0 | (cp >> 12));
			out += char(0x80 | ((cp >> 6) & 0x3f));
			out += char(0x80 | (cp & 0x3f));
		} else {
			out += char(0xf0 | (cp >> 18));
			out += char(0x80 | ((cp >> 12) & 0x3f));
			out += char(0x80 | ((cp >> 6) & 0x3f));
			out += char(0x80 | (cp & 0x3f));
		}
	}

	bool hex4(uint32_t &v)
	{
		if (s_.size() - p_ < 4)
			return false;
		v = 0;
		for (int i = 0; i < 4; i++) {
			char c = c_[p_++];
			int d = c >= '0' && c <= '9'   ? c - '0'
				: c >= 'a' && c <= 'f' ? c - 'a' + 10
				: c >= 'A' && c <= 'F' ? c - 'A' + 10
						       : -1;
			if (d < 0)
				return false;
			v = v * 16 + uint32_t(d);
		}
		return true;
	}

	// Length of the valid UTF-8 sequence at s[i] (of n), 0 when invalid.
	static size_t utf8_len(const char *s, size_t n, size_t i)
	{
		auto cont = [&](size_t k) { return k < n && (uint8_t(s[k]) & 0xc0) == 0x80; };
		uint8_t c = uint8_t(s[i]);
		if (c < 0x80)
			return 1;
		if (c >= 0xc2 && c <= 0xdf)
			return cont(i + 1) ? 2 : 0;
		if (c >= 0xe0 && c <= 0xef) {
			if (!cont(i + 1) || !cont(i + 2))
				return 0;
			uint8_t c1 = uint8_t(s[i + 1]);
			if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 >= 0xa0))
				return 0; // overlong, surrogate
			return 3;
		}
		if (c >= 0xf0 && c <= 0xf4) {
			if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3))
				return 0;
			uint8_t c1 = uint8_t(s[i + 1]);
			if ((c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 >= 0x90))
				return 0; // overlong, > U+10FFFF
			return 4;
		}
		return 0;
	}

	std::optional<std::string> str()
	{
		if (p_ >= s_.size() || c_[p_] != '"')
			return std::nullopt;
		p_++;
		std::string out;
		while (p_ < s_.size()) {
			// a run of plain characters
			const size_t run = p_;
			while (p_ < s_.size()) {
				uint8_t c = uint8_t(c_[p_]);
				if (c == '"' || c == '\\' || c < 0x20)
					break;
				size_t n = strict_ ? utf8_len(c_, s_.size(), p_) : 1;
				if (n == 0)
					return std::nullopt;
				p_ += n;
			}
			out.append(c_ + run, p_ - run);
			if (p_ >= s_.size() || uint8_t(c_[p_]) < 0x20)
				return std::nullopt;
			if (c_[p_] == '"') {
				p_++;
				return out;
			}
			if (++p_ >= s_.size())
				return std::nullopt;
			char e = c_[p_++];
			switch (e) {
			case '"': out += '"'; break;
			case '\\': out += '\\'; break;
			case '/': out += '/'; break;
			case 'b': out += '\b'; break;
			case 'f': out += '\f'; break;
			case 'n': out += '\n'; break;
			case 'r': out += '\r'; break;
			case 't': out += '\t'; break;
			case 'u': {
				uint32_t cp;
				if (!hex4(cp))
					return std::nullopt;
				if (cp >= 0xd800 && cp < 0xdc00 && s_.substr(p_, 2) == "\\u") {
					size_t save = p_;
					uint32_t lo;
					p_ += 2;
					if (hex4(lo) && lo >= 0xdc00 && lo < 0xe000)
						cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
					else
						p_ = save;
				}
				if (cp >= 0xd800 && cp < 0xe000 && strict_)
					return std::nullopt; // a lone surrogate
				utf8(out, cp); // lenient: WTF-8, invalid UTF-8 on purpose
				break;
			}
			default:
				return std::nullopt;
			}
		}
		return std::nullopt;
	}
};

inline std::optional<ptwalk::Json> parse(std::string_view text, bool strict)
{
	return Reader(text, strict).document();
}

[[noreturn]] inline void fail(const char *what, const std::string &text)
{
	fprintf(stderr, "json check: %s\n%.2000s\n", what, text.c_str());
	abort();
}

// j.dump() (and, with pretty, j.dump(1)) is strict JSON that reads back to
// j, compared as compact dumps.
inline void check_dump(const ptwalk::Json &j, bool pretty = false)
{
	const std::string d = j.dump();
	auto back = parse(d, true);
	if (!back)
		fail("dump() is not strict UTF-8 JSON", d);
	if (back->dump() != d)
		fail("dump() does not read back to the same value", d);
	if (!pretty)
		return;
	const std::string p = j.dump(1);
	auto back2 = parse(p, true);
	if (!back2)
		fail("dump(1) is not strict UTF-8 JSON", p);
	if (back2->dump() != d)
		fail("dump(1) does not read back to the same value", p);
}

} // namespace fuzzjson

#pragma clang attribute pop
