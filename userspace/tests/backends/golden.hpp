// SPDX-License-Identifier: GPL-2.0
// Golden text for the perf tests: a document's text compared byte for byte
// with testdata/perf/golden/<name>.json (the text, then "\n"). With
// PTWALK_GOLDEN_UPDATE=1 in the environment the file is written instead:
// only to record the text of code known to be right.
#pragma once

#include <cstdlib>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <string>
#include <unistd.h>

#include "ptwalk/fd.hpp"
#include "ptwalk/json.hpp"
#include "ptwalk/procfs.hpp"

namespace ptwalk::golden {

// A recorded perf input: testdata/perf/<name>.
inline std::string perf_testdata(const char *name)
{
	std::string path = std::string(PTWALK_TESTDATA) + "/perf/" + name;
	std::string err;
	auto text = read_file(path, &err);
	EXPECT_TRUE(text) << err;
	return text ? *text : "";
}

// A typed document's text as the result file writes it (compact): through
// its to_json and ptwalk's Json, as result_json() does.
template <typename T>
std::string text_of(const T &v)
{
	Json::Value j;
	to_json(j, v);
	return Json(j).dump();
}

inline void expect_text(const std::string &name, const std::string &text)
{
	const std::string path = std::string(PTWALK_TESTDATA) + "/perf/golden/" + name + ".json";
	const std::string want_text = text + "\n";
	if (std::getenv("PTWALK_GOLDEN_UPDATE")) {
		Fd f(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
		ASSERT_TRUE(f) << path;
		ASSERT_EQ(write(f.get(), want_text.data(), want_text.size()),
			  ssize_t(want_text.size()));
		return;
	}
	std::string err;
	auto golden = read_file(path, &err);
	ASSERT_TRUE(golden) << err;
	EXPECT_EQ(want_text, *golden) << "golden: " << path;
}

} // namespace ptwalk::golden
