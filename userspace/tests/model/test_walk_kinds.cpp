// SPDX-License-Identifier: GPL-2.0
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "ptwalk/module_abi.hpp"
#include "ptwalk/monitor_model.hpp"
#include "ptwalk/scenario.hpp"
#include "ptwalk/vma_layout.hpp"
#include "ptwalk/walk_kinds.hpp"

using namespace ptwalk;

TEST(WalkKinds, EnumNamesAndTableAgree)
{
	ASSERT_EQ(std::size(kWalkKindInfo), std::size(kWalkKinds));
	for (size_t i = 0; i < std::size(kWalkKindInfo); i++) {
		const WalkKindInfo &k = kWalkKindInfo[i];
		EXPECT_EQ(size_t(k.id), i);
		EXPECT_STREQ(k.kind, kWalkKinds[i]);
		EXPECT_STREQ(name(k.id), k.kind);
		EXPECT_EQ(parse_walk_kind(k.kind), k.id);
		EXPECT_EQ(&info(k.id), &k);
		EXPECT_TRUE(k.lock_mode == LockMode::read || k.lock_mode == LockMode::write)
			<< k.kind;
		EXPECT_GT(std::string(k.source).size(), 20u) << k.kind;
	}
	EXPECT_EQ(parse_walk_kind("cadvisor"), std::nullopt);
	EXPECT_EQ(parse_walk_kind(""), std::nullopt);
	EXPECT_EQ(walk_kind_info("nope"), nullptr);
}

TEST(WalkKinds, EveryKindIsAProfileOfItsOwn)
{
	for (const auto &k : kWalkKindInfo) {
		auto p = parse_profile(k.kind);
		ASSERT_TRUE(p) << k.kind;
		EXPECT_EQ(size_t(*p), size_t(k.id)); // the kinds first, in order
		ASSERT_EQ(profile_walks(*p).size(), 1u);
		EXPECT_EQ(profile_walks(*p)[0], k.id);
		EXPECT_EQ(profile_of(k.id), *p);
	}
	// the profiles of several kinds walk kinds only
	for (Profile p : {Profile::cadvisor, Profile::wss}) {
		EXPECT_EQ(parse_walk_kind(name(p)), std::nullopt);
		EXPECT_EQ(profile_walks(p).size(), 2u);
		for (WalkKind k : profile_walks(p))
			EXPECT_EQ(parse_walk_kind(name(k)), k) << name(k);
	}
}

TEST(WalkKinds, ModuleKindsAreTheModules)
{
	std::set<std::string> seen;
	for (const auto &k : kWalkKindInfo)
		if (*k.module)
			seen.insert(k.module);
	std::set<std::string> module(contract::kKinds.begin(), contract::kKinds.end());
	EXPECT_EQ(seen, module);
}

TEST(WalkKinds, EachKindsFileIsAWalkFile)
{
	for (const auto &k : kWalkKindInfo) {
		auto f = parse_walk_file(std::string("/proc/42/") + k.file);
		ASSERT_TRUE(f) << k.kind;
		ASSERT_TRUE(f->file) << k.kind;
		EXPECT_STREQ(name(*f->file), k.file);
		EXPECT_EQ(f->pid, 42);
		EXPECT_EQ(kind_locking(k.kind), &k);
	}
	EXPECT_FALSE(parse_walk_file("/proc/42/pagemap_scan"));
}
