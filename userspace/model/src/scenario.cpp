// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/scenario.hpp"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <utility>

#include "ptwalk/enum_names.hpp"

namespace ptwalk {

namespace {

constexpr EnumName<Profile> kProfiles[] = {
#define PTW_X(name, module, mode, unit, file, source) {Profile::name, #name},
	PTW_WALK_KINDS(PTW_X)
#undef PTW_X
#define PTW_X(name, ...) {Profile::name, #name},
		PTW_PROFILES(PTW_X)
#undef PTW_X
#define PTW_X(name, source) {Profile::name, #name},
			PTW_KERNEL_MONITORS(PTW_X)
#undef PTW_X
};
static_assert(enum_in_order(kProfiles));

} // namespace

std::optional<Profile> parse_profile(std::string_view s)
{
	return enum_parse(kProfiles, s);
}
const char *name(Profile p)
{
	return enum_name(kProfiles, p);
}
std::string all_profiles()
{
	return enum_names(kProfiles);
}

uint64_t fault_region_address(FaultRegion where, uint64_t base, uint64_t len, uint64_t bytes)
{
	constexpr uint64_t kAlign = 2ull << 20;
	const uint64_t span = (bytes + kAlign - 1) & ~(kAlign - 1);
	switch (where) {
	case FaultRegion::above:
		// the first 2 MiB boundary past the mapping, then a 2 MiB gap
		return ((base + len + kAlign - 1) & ~(kAlign - 1)) + kAlign;
	case FaultRegion::below: {
		const uint64_t top = base & ~(kAlign - 1); // at or below base
		if (top < span + 2 * kAlign)
			return 0;
		return top - kAlign - span;
	}
	case FaultRegion::any:
		break;
	}
	return 0;
}

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

std::vector<WalkKind> profile_walks(Profile p)
{
	switch (p) {
#define PTW_X(profile, ...)           \
	case Profile::profile: {      \
		using enum WalkKind;  \
		return {__VA_ARGS__}; \
	}
		PTW_PROFILES(PTW_X)
#undef PTW_X
#define PTW_X(name, source) case Profile::name:
		PTW_KERNEL_MONITORS(PTW_X)
#undef PTW_X
		return {};
	default:
		return {WalkKind(size_t(p))};
	}
}

bool is_kernel_monitor(Profile p)
{
	switch (p) {
#define PTW_X(name, source) case Profile::name:
		PTW_KERNEL_MONITORS(PTW_X)
#undef PTW_X
		return true;
	default:
		return false;
	}
}

} // namespace ptwalk
