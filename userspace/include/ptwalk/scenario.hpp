// SPDX-License-Identifier: GPL-2.0
// The vocabulary of a ptwalk scenario: backings, victims, scanner profiles.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptwalk {

enum class Backing { anon, thp, shmem, file, hugetlb };
enum class Victim { read, write, fault, mmap };
enum class Profile {
	clear_refs, clear_refs_anon, clear_refs_file, softdirty, smaps,
	smaps_rollup, maps, numa_maps, pagemap, pagemap_scan, cadvisor, wss,
};

std::optional<Backing> parse_backing(std::string_view s);
std::optional<Victim> parse_victim(std::string_view s);
std::optional<Profile> parse_profile(std::string_view s);
const char *name(Backing b);
const char *name(Victim v);
const char *name(Profile p);
std::string all_backings();  // "anon|thp|..." for messages
std::string all_victims();
std::string all_profiles();

// The kinds of walk a profile performs, in order, per interval.
// cadvisor = {smaps, clear_refs}; wss = {clear_refs, (sleep), smaps}.
std::vector<const char *> profile_walks(Profile p);

struct Scenario {
	uint64_t size = 0;
	Backing backing = Backing::anon;
	std::string dir;                 // for Backing::file
	std::vector<Victim> victims;
	Profile profile = Profile::clear_refs;
	uint64_t interval_ns = 0;
	uint64_t duration_ns = 0;
	uint64_t op_interval_ns = 20000; // victims' pacing
	unsigned populate_threads = 0;   // 0: one per CPU
};

} // namespace ptwalk
