// SPDX-License-Identifier: GPL-2.0
// Not `ptwalk calibrate`, which writes the selftests' budgets for a host
// class (selftests/ptwalk_calibrate.c): this is `ptwalk run --calibrate-size`.
// Aliasing bias: walks over one physical page mapped many times keep struct
// pages cache-hot but meet pages mapped many times (mapcounts, shared
// young bits), so their ns/PTE differs from walks over distinct pages, in
// either direction depending on the walk and the kernel. And the aliased
// mapping is many VMAs, so walks that give mmap_lock up between VMAs stall
// a writer for less than they would over one VMA. This measures both on
// this host, in the same run, at two or more sizes, so an aliased figure is
// always shown with its correction and never passed off as a distinct-page
// one; a correction is applied only where the sizes agree.
#pragma once

#include <csignal>
#include <cstdint>
#include <vector>

#include "ptwalk/alias_calibration.hpp"
#include "ptwalk/scenario.hpp"

namespace ptwalk {

// For each size and each walk kind of sc.profile, one workload of `size`
// bytes of memfd mapped once (distinct pages, one VMA) and one of `size`
// bytes aliased onto the run's sc.physical bytes (at most size/2: two VMAs or
// more; the aliased cost depends on how many struct pages the walk meets, so
// the physical size is the run's), each walked `reps` times with
// an mmap victim: the ns/PTE (cost) and the victim's worst wait (stall).
// Returns what results/SCHEMA.md describes under alias_calibration, judged
// (judge_alias_bias), or only why it was skipped. Stops early (skipped:
// "interrupted") once *stop is set.
AliasCalibration measure_alias_bias(const Scenario &sc, const std::vector<uint64_t> &sizes,
				    int reps, const volatile sig_atomic_t *stop);

// Default largest calibration size: 8 GiB, or what fits next to nothing else.
uint64_t default_alias_bias_size(uint64_t mem_available);
// The sizes calibrated for a largest size: 2 GiB (half of it when it is 4 GiB
// or less) and the largest, 2 MiB aligned, ascending.
std::vector<uint64_t> alias_bias_sizes(uint64_t largest);

} // namespace ptwalk
