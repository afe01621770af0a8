// SPDX-License-Identifier: GPL-2.0
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "ptwalk/monitor_model.hpp"

using namespace ptwalk;

// The names are the JSON's "basis" values and the metrics' label values.
TEST(MonitorBasis, NamesAreTheResultsValues)
{
	std::set<std::string> names;
#define PTW_X(b) names.insert(name(Basis::b));
	PTW_MONITOR_BASES(PTW_X)
#undef PTW_X
	EXPECT_EQ(names, (std::set<std::string>{"probe", "mm_owner", "fd_table", "exit", "exec",
						"unknown", "module"}));
	EXPECT_STREQ(name(LifeEnd::reused), "reused");
	EXPECT_STREQ(name(LifeEnd::exec), "exec");
}

TEST(MonitorBasis, ParsesItsNamesOnly)
{
#define PTW_X(b) EXPECT_EQ(parse_basis(name(Basis::b)), Basis::b);
	PTW_MONITOR_BASES(PTW_X)
#undef PTW_X
	EXPECT_FALSE(parse_basis("mm-owner"));
	EXPECT_FALSE(parse_basis(""));
}
