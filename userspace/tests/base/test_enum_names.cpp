// SPDX-License-Identifier: GPL-2.0
#include <gtest/gtest.h>

#include "ptwalk/enum_names.hpp"

using namespace ptwalk;

namespace {

enum class Colour { red, green, blue };
constexpr EnumName<Colour> kColours[] = {
	{Colour::red, "red"},
	{Colour::green, "green"},
	{Colour::blue, "blue"},
};
constexpr EnumName<Colour> kSwapped[] = {{Colour::green, "green"}, {Colour::red, "red"}};
constexpr EnumName<Colour> kTwice[] = {{Colour::red, "red"}, {Colour::green, "red"}};
constexpr EnumName<Colour> kShort[] = {{Colour::red, "red"}};

} // namespace

TEST(EnumNames, NameParseAndList)
{
	EXPECT_STREQ(enum_name(kColours, Colour::green), "green");
	EXPECT_STREQ(enum_name(kShort, Colour::blue), "?"); // not in the table
	EXPECT_EQ(enum_parse(kColours, "blue"), Colour::blue);
	for (const char *bad : {"", "Blue", "blue ", "?"})
		EXPECT_FALSE(enum_parse(kColours, bad)) << bad;
	EXPECT_EQ(enum_names(kColours), "red|green|blue");
	EXPECT_EQ(enum_names(kShort), "red");
	static_assert(enum_parse(kColours, "red") == Colour::red); // constexpr
}

TEST(EnumNames, InOrderChecksOrderAndDistinctNames)
{
	static_assert(enum_in_order(kColours));
	static_assert(enum_in_order(kShort)); // a prefix is in order
	static_assert(!enum_in_order(kSwapped));
	static_assert(!enum_in_order(kTwice));
	SUCCEED();
}
