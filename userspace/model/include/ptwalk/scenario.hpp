// SPDX-License-Identifier: GPL-2.0
// The vocabulary of a ptwalk scenario: backings, victims, scanner profiles.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptwalk/result_enums.hpp"
#include "ptwalk/walk_kinds.hpp"

namespace ptwalk {

// Backing, Victim, FaultRegion: result_enums.hpp.
// Every walk kind (walk_kinds.def), then the profiles of several kinds.
enum class Profile {
#define PTW_X(name, module, mode, unit, file, source) name,
	PTW_WALK_KINDS(PTW_X)
#undef PTW_X
#define PTW_X(name, ...) name,
		PTW_PROFILES(PTW_X)
#undef PTW_X
#define PTW_X(name, source) name,
			PTW_KERNEL_MONITORS(PTW_X)
#undef PTW_X
};

// The profile of one walk kind: the enum begins with them, in their order.
#define PTW_X(name, module, mode, unit, file, source) \
	static_assert(size_t(Profile::name) == size_t(WalkKind::name));
PTW_WALK_KINDS(PTW_X)
#undef PTW_X
constexpr Profile profile_of(WalkKind k)
{
	return Profile(size_t(k));
}

std::optional<Profile> parse_profile(std::string_view s);
const char *name(Profile p);
std::string all_profiles(); // "clear_refs|..." for messages

// The kinds of walk a profile performs, in order, per interval.
// cadvisor = {smaps, clear_refs}; wss = {clear_refs, (sleep), smaps};
// a kernel monitor's (damon): none.
std::vector<WalkKind> profile_walks(Profile p);
bool is_kernel_monitor(Profile p);

// --working-set FRACTION[,PATTERN]: the workload's toucher writes that
// share of the walked mapping's pages each --interval (working_set.hpp).
struct WorkingSetSpec {
	double fraction = 0;
	WsPattern pattern = WsPattern::uniform;
};

struct Scenario {
	uint64_t size = 0;
	Backing backing = Backing::anon;
	std::string dir; // for Backing::file
	std::vector<Victim> victims;
	Profile profile = Profile::clear_refs;
	uint64_t interval_ns = 0;
	uint64_t duration_ns = 0;
	uint64_t op_interval_ns = 20000; // victims' pacing
	unsigned populate_threads = 0;   // 0: one per CPU
	uint64_t physical = 1ull << 30;  // Backing::alias: bytes of real memory
	uint64_t max_iterations = 0;     // scanner intervals; 0: until duration
	FaultRegion fault_region = FaultRegion::any;
	std::optional<WorkingSetSpec> working_set;
};

// `ptwalk run`'s scenario before any option changes it (its usage text
// shows these defaults).
Scenario default_scenario();

// The address at which the fault victim maps `bytes` for `where`, given the
// walked mapping [base, base + len): 2 MiB aligned, with at least 2 MiB of
// gap so the two VMAs never merge or share a PTE table; 0 for `any` (the
// kernel chooses), or when `below` has no room under base.
uint64_t fault_region_address(FaultRegion where, uint64_t base, uint64_t len, uint64_t bytes);

// Bytes of physical memory a scenario's mapping uses (page cache included).
uint64_t physical_bytes(const Scenario &sc);
// Bytes of PTE tables it builds (8 bytes per 4 KiB page).
uint64_t page_table_bytes(const Scenario &sc);

} // namespace ptwalk
