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
	EXPECT_EQ(j.dump(), "{\"schema\":\"ptwalk.result/1\",\"n\":42,\"u\":18446744073709551615,"
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

// nlohmann's numbers: the shortest text that reads back to the same double
// (an integral double keeps its ".0"), integers as integers.
TEST(Json, DoublesPrintShortestRoundTrip)
{
	Json j = Json::object();
	j["a"] = 0.1;
	j["b"] = 2.0;
	j["c"] = 1e300;
	j["d"] = -0.0;
	j["i"] = int64_t(-9223372036854775807ll - 1);
	EXPECT_EQ(j.dump(), "{\"a\":0.1,\"b\":2.0,\"c\":1e+300,\"d\":-0.0,"
			    "\"i\":-9223372036854775808}");
}

// A sequence cut short is one U+FFFD (its maximal valid prefix, as Python's
// decoder with errors="replace" does), keys too, and dump never throws.
TEST(Json, InvalidUtf8BecomesReplacementCharacter)
{
	const std::string fffd = "\xef\xbf\xbd";
	EXPECT_EQ(ptwalk::json_escape("\xe2\x82"
				      "A"),
		  fffd + "A");
	EXPECT_EQ(ptwalk::json_escape("\xf0\x9f\x98"), fffd);
	Json j = Json::object();
	j["k\xff"] = Json::array();
	j["k\xff"].push("v\xc0");
	EXPECT_EQ(j.dump(), "{\"k" + fffd + "\":[\"v" + fffd + "\"]}");
	EXPECT_EQ(j.dump(1), "{\n \"k" + fffd + "\": [\"v" + fffd + "\"]\n}");
}

TEST(Json, PrettyLayout)
{
	Json j = Json::object();
	j["e"] = Json::object();
	j["ea"] = Json::array();
	j["m"] = Json(Json::Array{Json(1), Json::object(), Json("x")});
	EXPECT_EQ(j.dump(2), "{\n  \"e\": {},\n  \"ea\": [],\n  \"m\": [\n    1,\n    {},\n"
			     "    \"x\"\n  ]\n}");
}
