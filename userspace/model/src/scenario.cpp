// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/scenario.hpp"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <utility>

namespace ptwalk {

namespace {

constexpr std::array<std::pair<Backing, const char *>, 7> kBackings{{
	{Backing::anon, "anon"}, {Backing::thp, "thp"}, {Backing::shmem, "shmem"},
	{Backing::file, "file"}, {Backing::hugetlb, "hugetlb"},
	{Backing::alias, "alias"}, {Backing::zeropage, "zeropage"},
}};
constexpr std::array<std::pair<Victim, const char *>, 4> kVictims{{
	{Victim::read, "read"}, {Victim::write, "write"},
	{Victim::fault, "fault"}, {Victim::mmap, "mmap"},
}};
constexpr std::pair<Profile, const char *> kProfileList[] = {
#define PTW_X(name, module, mode, unit, file, source) {Profile::name, #name},
	PTW_WALK_KINDS(PTW_X)
#undef PTW_X
#define PTW_X(name, ...) {Profile::name, #name},
	PTW_PROFILES(PTW_X)
#undef PTW_X
};
constexpr auto kProfiles = std::to_array(kProfileList);

template <typename T, size_t N>
std::optional<T> lookup(const std::array<std::pair<T, const char *>, N> &a,
			std::string_view s)
{
	for (auto &[v, n] : a)
		if (s == n)
			return v;
	return std::nullopt;
}
template <typename T, size_t N>
const char *rlookup(const std::array<std::pair<T, const char *>, N> &a, T v)
{
	for (auto &[x, n] : a)
		if (x == v)
			return n;
	return "?";
}
template <typename T, size_t N>
std::string join(const std::array<std::pair<T, const char *>, N> &a)
{
	std::string s;
	for (auto &[v, n] : a) {
		if (!s.empty())
			s += '|';
		s += n;
	}
	return s;
}

} // namespace

std::optional<Backing> parse_backing(std::string_view s) { return lookup(kBackings, s); }
std::optional<Victim> parse_victim(std::string_view s) { return lookup(kVictims, s); }
std::optional<Profile> parse_profile(std::string_view s) { return lookup(kProfiles, s); }
const char *name(Backing b) { return rlookup(kBackings, b); }
const char *name(Victim v) { return rlookup(kVictims, v); }
const char *name(Profile p) { return rlookup(kProfiles, p); }
std::string all_backings() { return join(kBackings); }
std::string all_victims() { return join(kVictims); }
std::string all_profiles() { return join(kProfiles); }

Scenario default_scenario()
{
	Scenario sc;
	sc.size = 1ull << 30;
	sc.victims = {Victim::read, Victim::mmap};
	sc.interval_ns = 1'000'000'000ull;
	sc.duration_ns = 10'000'000'000ull;
	return sc;
}

uint64_t physical_bytes(const Scenario &sc)
{
	switch (sc.backing) {
	case Backing::alias:
		return std::min(sc.physical, sc.size);
	case Backing::zeropage:
		return 0;
	default:
		return sc.size;
	}
}

uint64_t page_table_bytes(const Scenario &sc)
{
	switch (sc.backing) {
	case Backing::thp:
		// PMD tables, and one PTE table per huge page set aside for a
		// later split (pgtable_trans_huge_deposit() in
		// __do_huge_pmd_anonymous_page(): mm/huge_memory.c, 6.1 and 6.12;
		// module/KERNEL-FACTS.md): as many PTE tables as 4 KiB pages need
		return sc.size / (512 * 512) + sc.size / 512;
	case Backing::hugetlb:
		return sc.size / (512 * 512); // PMD tables only
	default:
		return sc.size / 512;
	}
}

std::vector<const char *> profile_walks(Profile p)
{
	auto names = [](std::initializer_list<WalkKind> kinds) {
		std::vector<const char *> out;
		for (WalkKind k : kinds)
			out.push_back(name(k));
		return out;
	};
	switch (p) {
#define PTW_X(profile, ...)						\
	case Profile::profile: {					\
		using enum WalkKind;					\
		return names({__VA_ARGS__});				\
	}
	PTW_PROFILES(PTW_X)
#undef PTW_X
	default:
		return {name(p)};
	}
}

} // namespace ptwalk
