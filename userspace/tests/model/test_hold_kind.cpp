// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/hold_kind.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

using namespace ptwalk;

namespace {

std::vector<ProcFile> every_proc_file()
{
	std::vector<ProcFile> v;
	for (const auto &k : kWalkKindInfo)
		if (file_kind(k.id) == k.id)
			v.push_back(k.id);
#define PTW_X(f) v.push_back(OtherProcFile::f);
	PTW_OTHER_PROC_FILES(PTW_X)
#undef PTW_X
	return v;
}

} // namespace

// A walk kind's file is carried as the first kind that uses it, and that
// kind is named as its file: the hold's text is the walked file's name.
TEST(HoldKind, AWalkKindsFileIsItsFirstKind)
{
	for (const auto &k : kWalkKindInfo) {
		const WalkKind first = file_kind(k.id);
		EXPECT_LE(size_t(first), size_t(k.id)) << k.kind;
		EXPECT_STREQ(info(first).file, k.file) << k.kind;
		EXPECT_STREQ(name(first), k.file) << k.kind;
		EXPECT_STREQ(name(ProcFile{k.id}), k.file) << k.kind;
		EXPECT_EQ(parse_proc_file(k.file), ProcFile{first}) << k.kind;
	}
	EXPECT_EQ(file_kind(WalkKind::softdirty), WalkKind::clear_refs);
	EXPECT_EQ(file_kind(WalkKind::pagemap_scan), WalkKind::pagemap);
}

TEST(HoldKind, FileNamesRoundTrip)
{
	std::set<std::string> names;
	for (const ProcFile &f : every_proc_file()) {
		names.insert(name(f));
		EXPECT_EQ(parse_proc_file(name(f)), f) << name(f);
		EXPECT_STREQ(name(hold_kind(f)), name(f));
	}
	EXPECT_EQ(names, (std::set<std::string>{"clear_refs", "smaps", "smaps_rollup", "maps",
						"numa_maps", "pagemap", "mem", "cmdline", "environ",
						"auxv", "status"}));
	EXPECT_EQ(hold_kind(ProcFile{OtherProcFile::mem}), HoldKind{OtherProcFile::mem});
	EXPECT_EQ(hold_kind(ProcFile{WalkKind::smaps}), HoldKind{WalkKind::smaps});
}

TEST(HoldKind, UnknownFileNamesAreRefused)
{
	for (const char *bad : {"", "pagemap_scan", "softdirty", "own", "exit", "unknown", "SMAPS",
				"smaps ", "task", "fd"})
		EXPECT_EQ(parse_proc_file(bad), std::nullopt) << bad;
}

// The results' "kind" values (results/SCHEMA.md): each hold kind's text is
// its own.
TEST(HoldKind, NamesAreDistinct)
{
	std::set<std::string> names;
	size_t n = 0;
	for (const ProcFile &f : every_proc_file()) {
		names.insert(name(hold_kind(f)));
		n++;
	}
#define PTW_X(c)                                    \
	names.insert(name(HoldKind{HoldCause::c})); \
	n++;
	PTW_HOLD_CAUSES(PTW_X)
#undef PTW_X
	EXPECT_EQ(names.size(), n);
	EXPECT_TRUE(names.count("own") && names.count("exit") && names.count("unknown"));
}
