// SPDX-License-Identifier: GPL-2.0
// A scratch directory for one test, removed after it (test code only;
// tests/<layer>/test_*.cpp include it as "temp_dir.hpp").
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

struct TempDir {
	std::string path;
	TempDir()
	{
		char t[] = "/tmp/ptwalk-test-XXXXXX";
		if (mkdtemp(t))
			path = t;
	}
	~TempDir()
	{
		if (!path.empty())
			std::filesystem::remove_all(path);
	}
	TempDir(const TempDir &) = delete;
	TempDir &operator=(const TempDir &) = delete;
	std::string file(const char *name) const { return path + "/" + name; }
};
