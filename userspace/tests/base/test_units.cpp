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

TEST(Units, OptionTextReadsBack)
{
	EXPECT_EQ(format_size_arg(1ull << 30), "1G");
	EXPECT_EQ(format_size_arg(64 << 10), "64K");
	EXPECT_EQ(format_size_arg(1ull << 50), "1024T");
	EXPECT_EQ(format_size_arg(4097), "4097");
	EXPECT_EQ(format_size_arg(0), "0");
	EXPECT_EQ(format_duration_arg(10'000'000'000ull), "10s");
	EXPECT_EQ(format_duration_arg(20'000), "20us");
	EXPECT_EQ(format_duration_arg(250'000'000), "250ms");
	EXPECT_EQ(format_duration_arg(1'500), "1500ns");
	EXPECT_EQ(format_duration_arg(0), "0s");
	std::string err;
	for (uint64_t b : {1ull << 30, 3ull << 20, 4097ull, 5ull << 40})
		EXPECT_EQ(parse_size(format_size_arg(b), &err), b) << err;
	for (uint64_t ns : {1ull, 20'000ull, 1'000'000ull, 15'000'000'000ull})
		EXPECT_EQ(parse_duration_ns(format_duration_arg(ns), &err), ns) << err;
}
