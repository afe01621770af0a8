// SPDX-License-Identifier: GPL-2.0
#include <gtest/gtest.h>

#include "ptwalk/units.hpp"

using namespace ptwalk;

TEST(Units, SizesWithBinarySuffixes)
{
	EXPECT_EQ(parse_size("4096", nullptr), 4096u);
	EXPECT_EQ(parse_size("64K", nullptr), 65536u);
	EXPECT_EQ(parse_size("2G", nullptr), 2ull << 30);
	EXPECT_EQ(parse_size("1T", nullptr), 1ull << 40);
	EXPECT_EQ(parse_size("512MiB", nullptr), 512ull << 20);
	EXPECT_EQ(parse_size("1.5g", nullptr), 3ull << 29);
	EXPECT_EQ(parse_size("0", nullptr), 0u);
}

TEST(Units, BadSizesSayWhy)
{
	std::string err;
	EXPECT_FALSE(parse_size("12Q", &err));
	EXPECT_NE(err.find("suffix"), std::string::npos);
	EXPECT_FALSE(parse_size("", &err));
	EXPECT_FALSE(parse_size("-1G", &err));
	EXPECT_FALSE(parse_size("G", &err));
	EXPECT_FALSE(parse_size("99999999P", &err));
}

TEST(Units, Durations)
{
	EXPECT_EQ(parse_duration_ns("250ms", nullptr), 250000000u);
	EXPECT_EQ(parse_duration_ns("10s", nullptr), 10000000000u);
	EXPECT_EQ(parse_duration_ns("10", nullptr), 10000000000u);
	EXPECT_EQ(parse_duration_ns("2m", nullptr), 120000000000u);
	EXPECT_EQ(parse_duration_ns("500us", nullptr), 500000u);
	EXPECT_EQ(parse_duration_ns("1.5s", nullptr), 1500000000u);
	EXPECT_EQ(parse_duration_ns("0", nullptr), 0u);
	std::string err;
	EXPECT_FALSE(parse_duration_ns("-1s", &err));
	EXPECT_NE(err.find("negative"), std::string::npos);
	EXPECT_FALSE(parse_duration_ns("5 parsecs", &err));
	EXPECT_FALSE(parse_duration_ns("1fortnight", &err));
}

TEST(Units, Formatting)
{
	EXPECT_EQ(format_bytes(512), "512 B");
	EXPECT_EQ(format_bytes(2ull << 30), "2.0 GiB");
	EXPECT_EQ(format_ns(850), "850 ns");
	EXPECT_EQ(format_ns(1200000), "1.20 ms");
	EXPECT_EQ(format_ns(3400000000ull), "3.40 s");
}
