// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/lock_mode.hpp"

#include <gtest/gtest.h>
#include <string>

using namespace ptwalk;

TEST(LockMode, NamesRoundTripAtEachBoundary)
{
	for (LockMode m : {LockMode::none, LockMode::read, LockMode::write, LockMode::mixed})
		EXPECT_EQ(parse_lock_mode(name(m)), m) << name(m);
	// the results call the module's "mixed" read+write, and only that
	EXPECT_STREQ(name(LockMode::mixed), "read+write");
	EXPECT_EQ(module_lock_mode("mixed"), LockMode::mixed);
	EXPECT_EQ(module_lock_mode("none"), LockMode::none);
	EXPECT_EQ(parse_lock_mode("mixed"), std::nullopt);
	EXPECT_EQ(module_lock_mode("read+write"), std::nullopt);
	for (const char *bad : {"", "READ", "read ", "writer", "r"}) {
		EXPECT_EQ(parse_lock_mode(bad), std::nullopt) << bad;
		EXPECT_EQ(module_lock_mode(bad), std::nullopt) << bad;
	}
}

TEST(LockMode, OfAWalkAndOfOneHold)
{
	static_assert(lock_mode(true, true) == LockMode::mixed);
	static_assert(lock_mode(false, true) == LockMode::write);
	static_assert(lock_mode(true, false) == LockMode::read);
	static_assert(lock_mode(false, false) == LockMode::none);
	EXPECT_STREQ(name(held_mode(true)), "write");
	EXPECT_STREQ(name(held_mode(false)), "read");
}
