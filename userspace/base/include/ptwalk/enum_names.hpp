// SPDX-License-Identifier: GPL-2.0
// An enumeration's text: one constexpr table of {value, name} per enum
// class, written from the enum's X-macro list, serves its name(), its
// parser and the "a|b|c" of messages; enum_in_order() lets a static_assert
// check that the table lists every value in the enum's order.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace ptwalk {

template <typename E>
struct EnumName {
	E value;
	const char *name;
};

// The name of e; "?" for a value the table does not list.
template <typename E, size_t N>
constexpr const char *enum_name(const EnumName<E> (&t)[N], E e)
{
	for (const auto &x : t)
		if (x.value == e)
			return x.name;
	return "?";
}

// The value named s; nullopt for any other text.
template <typename E, size_t N>
constexpr std::optional<E> enum_parse(const EnumName<E> (&t)[N], std::string_view s)
{
	for (const auto &x : t)
		if (s == x.name)
			return x.value;
	return std::nullopt;
}

// "a|b|c": every name, in the table's order.
template <typename E, size_t N>
std::string enum_names(const EnumName<E> (&t)[N])
{
	std::string s;
	for (const auto &x : t) {
		if (!s.empty())
			s += '|';
		s += x.name;
	}
	return s;
}

// The table lists the values 0, 1, ... N-1 in order, under distinct names.
template <typename E, size_t N>
constexpr bool enum_in_order(const EnumName<E> (&t)[N])
{
	for (size_t i = 0; i < N; i++) {
		if (size_t(t[i].value) != i)
			return false;
		for (size_t j = 0; j < i; j++)
			if (std::string_view(t[i].name) == t[j].name)
				return false;
	}
	return true;
}

} // namespace ptwalk
