// SPDX-License-Identifier: GPL-2.0
// Aliasing bias: walks over one physical page mapped many times keep struct
// pages cache-hot but meet pages mapped many times (mapcounts, shared
// young bits), so their ns/PTE differs from walks over distinct pages, in
// either direction depending on the walk and the kernel. This measures the
// factor on this host, in the same run, so an aliased figure is always
// shown with it and never passed off as a distinct-page one.
#pragma once

#include <csignal>
#include <cstdint>

#include "ptwalk/json.hpp"
#include "ptwalk/scenario.hpp"

namespace ptwalk {

// Walks `reps` times each kind of sc.profile over a memfd of `size` bytes
// mapped once (distinct pages) and over `size` bytes aliased onto size/8
// bytes of memfd: same mapping type, 4 KiB pages, only aliasing differs. Returns {"size_bytes","reps","aliased_physical_bytes",
// "distinct_ns_per_pte":{kind:..},"aliased_ns_per_pte":{..},
// "ratio":{kind: distinct/aliased}} or {"skipped": reason}.
// Stops early (returning {"skipped":"interrupted"}) once *stop is set.
Json calibrate_alias(const Scenario &sc, uint64_t size, int reps,
		     const volatile sig_atomic_t *stop);

// Default calibration size: 8 GiB, or what fits next to nothing else.
uint64_t default_calibration_size(uint64_t mem_available);

} // namespace ptwalk
