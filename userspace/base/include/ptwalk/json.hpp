// SPDX-License-Identifier: GPL-2.0
// ptwalk's JSON value: nlohmann::ordered_json (members keep their insertion
// order) behind the small interface the results are built with. The text is
// nlohmann's: its escaping, its numbers, invalid UTF-8 replaced by U+FFFD.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ptwalk {

class Json {
public:
	using Value = nlohmann::ordered_json;
	using Array = std::vector<Json>;
	using Object = std::vector<std::pair<std::string, Json>>; // keeps order

	Json() = default; // null
	Json(std::nullptr_t) {}
	Json(bool b) : v_(b) {}
	Json(int i) : v_(int64_t(i)) {}
	Json(long i) : v_(int64_t(i)) {}
	Json(long long i) : v_(int64_t(i)) {}
	Json(unsigned i) : v_(uint64_t(i)) {}
	Json(unsigned long i) : v_(uint64_t(i)) {}
	Json(unsigned long long i) : v_(uint64_t(i)) {}
	Json(double d) : v_(d) {}
	Json(const char *s) : v_(std::string(s)) {}
	Json(std::string s) : v_(std::move(s)) {}
	Json(std::string_view s) : v_(std::string(s)) {}
	Json(Array a) : v_(std::move(a)) {}
	Json(Object o) : v_(std::move(o)) {}
	// A value built with nlohmann (a typed struct's to_json).
	explicit Json(const Value &v);

	static Json array() { return Json(Array{}); }
	static Json object() { return Json(Object{}); }

	bool is_null() const { return std::holds_alternative<std::monostate>(v_); }
	bool is_object() const { return std::holds_alternative<Object>(v_); }
	bool is_array() const { return std::holds_alternative<Array>(v_); }

	// Object access: inserts a null member when missing (turns null into {}).
	Json &operator[](std::string_view key);
	// Object lookup without insertion; nullptr when missing.
	const Json *find(std::string_view key) const;
	// Array append (turns null into []).
	Json &push(Json v);
	size_t size() const;
	// Array element i (i < size()).
	const Json &at(size_t i) const;
	// Numeric value as double; nullopt for non-numbers.
	std::optional<double> number() const;
	// String value; nullopt for non-strings.
	std::optional<std::string> string() const;
	std::optional<bool> boolean() const;

	// Compact when indent < 0, else pretty with that many spaces (arrays of
	// scalars stay on one line). The text is nlohmann's (value()). Never
	// throws: bytes that are not UTF-8 (a comm or a path from the kernel)
	// become U+FFFD, NaN and Inf null.
	std::string dump(int indent = -1) const;
	// The same value as nlohmann's.
	Value value() const;

private:
	// The tree is ptwalk's own so that a member is a Json a caller can hold
	// a reference to; nlohmann writes it (value(), dump()).
	std::variant<std::monostate, bool, int64_t, uint64_t, double, std::string, Array, Object> v_;
};

// j[key] = *v; an empty optional leaves the member out (a typed struct's
// to_json, for what is present only sometimes).
template <typename T>
void put_optional(Json::Value &j, const char *key, const std::optional<T> &v)
{
	if (v)
		j[key] = *v;
}

// A string as JSON text without its quotes (nlohmann's escaping; bytes that
// are not valid UTF-8 become U+FFFD: the result stays readable as UTF-8).
std::string json_escape(std::string_view s);

} // namespace ptwalk
