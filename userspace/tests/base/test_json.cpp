// SPDX-License-Identifier: GPL-2.0
#include <gtest/gtest.h>

#include <cmath>

#include "ptwalk/json.hpp"

using ptwalk::Json;

TEST(Json, EscapesControlAndQuotes)
{
	EXPECT_EQ(ptwalk::json_escape("a\"b\\c\n\t\x01"), "a\\\"b\\\\c\\n\\t\\u0001");
}

TEST(Json, ObjectsKeepInsertionOrderAndTypes)
{
	Json j = Json::object();
	j["schema"] = "ptwalk.result/1";
	j["n"] = 42;
	j["u"] = uint64_t(18446744073709551615ull);
	j["neg"] = -3;
	j["f"] = 0.5;
	j["t"] = true;
	j["null"] = nullptr;
	j["arr"] = Json::array();
	j["arr"].push(1);
	j["arr"].push("x");
	EXPECT_EQ(j.dump(),
		  "{\"schema\":\"ptwalk.result/1\",\"n\":42,\"u\":18446744073709551615,"
		  "\"neg\":-3,\"f\":0.5,\"t\":true,\"null\":null,\"arr\":[1,\"x\"]}");
	j["n"] = 43; // overwrite keeps position
	EXPECT_EQ(j.dump().find("\"n\":43"), 28u);
}

TEST(Json, NonFiniteBecomesNull)
{
	Json j = Json::object();
	j["nan"] = std::nan("");
	j["inf"] = INFINITY;
	EXPECT_EQ(j.dump(), "{\"nan\":null,\"inf\":null}");
}

TEST(Json, PrettyPrintIsStillJson)
{
	Json j = Json::object();
	j["a"] = Json::object();
	j["a"]["b"] = Json::array();
	j["a"]["b"].push(Json(Json::Array{Json(1), Json(2)}));
	EXPECT_EQ(j.dump(1), "{\n \"a\": {\n  \"b\": [\n   [1, 2]\n  ]\n }\n}");
}

TEST(Json, Accessors)
{
	Json j = Json::object();
	j["s"] = "x";
	j["d"] = 2.5;
	EXPECT_EQ(j.find("s")->string(), "x");
	EXPECT_FALSE(j.find("s")->number());
	EXPECT_EQ(j.find("d")->number(), 2.5);
	EXPECT_EQ(j.find("missing"), nullptr);
}
