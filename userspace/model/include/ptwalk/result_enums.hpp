// SPDX-License-Identifier: GPL-2.0
// The enumerations results and the monitor's JSON carry, from their lists
// in result_enums.def: each is text only at the JSON and command-line
// boundary, through name() and its parser (nullopt for anything else).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ptwalk/result_enums.def"

namespace ptwalk {

#define PTW_ENUM_MEMBER(x, ...) x,

// A kernel view ("backend"); runs(), monitors(): whether `ptwalk run`,
// `ptwalk monitor` can use it.
enum class BackendKind : uint8_t { PTW_BACKENDS(PTW_ENUM_MEMBER) };
const char *name(BackendKind b);
std::optional<BackendKind> parse_backend_kind(std::string_view s);
bool runs(BackendKind b);
bool monitors(BackendKind b);

// alias: one memfd of `physical` bytes mapped again and again to build
// incident-scale page tables on a small host; zeropage: anonymous memory
// read-faulted so every PTE maps the zero page (a lower bound: walks skip
// non-normal pages).
enum class Backing { PTW_BACKINGS(PTW_ENUM_MEMBER) };
enum class Victim { PTW_VICTIMS(PTW_ENUM_MEMBER) };
#define PTW_ENUM_VALUE(x) Victim::x,
inline constexpr Victim kVictims[] = {PTW_VICTIMS(PTW_ENUM_VALUE)}; // in the list's order
#undef PTW_ENUM_VALUE
// Where the fault victim maps its region: any (where mmap puts it), or
// below / above the walked mapping. A walk visits VMAs in address order,
// so the placement decides when the walk reaches the victim's VMA (on
// 6.12, clear_refs write-locks each VMA it reaches until the walk ends).
enum class FaultRegion { PTW_FAULT_REGIONS(PTW_ENUM_MEMBER) };
const char *name(Backing b);
const char *name(Victim v);
const char *name(FaultRegion f);
std::optional<Backing> parse_backing(std::string_view s);
std::optional<Victim> parse_victim(std::string_view s);
std::optional<FaultRegion> parse_fault_region(std::string_view s);
std::string all_backings(); // "anon|thp|..." for messages
std::string all_victims();
std::string all_fault_regions();
// The working set's pattern (ptwalk run --working-set FRACTION,PATTERN).
enum class WsPattern { PTW_WS_PATTERNS(PTW_ENUM_MEMBER) };
const char *name(WsPattern p);
std::optional<WsPattern> parse_ws_pattern(std::string_view s);
std::string all_ws_patterns();

// How a kind's stall estimate was made ("status" in the results): for
// distinct pages as measured, corrected by the alias calibration's ratios,
// a range of its factors, or the aliased cost uncorrected.
enum class EstimateStatus : uint8_t { PTW_ESTIMATE_STATUSES(PTW_ENUM_MEMBER) };
const char *name(EstimateStatus s);
std::optional<EstimateStatus> parse_estimate_status(std::string_view s);

// Where a kind's measured stall is from ("measured_stall_source"): the
// backend's attribution, or the mmap victim's worst during walks.
enum class MeasuredStallSource : uint8_t { PTW_MEASURED_STALL_SOURCES(PTW_ENUM_MEMBER) };
const char *name(MeasuredStallSource s);
std::optional<MeasuredStallSource> parse_measured_stall_source(std::string_view s);

// How the monitor knows a walk's target ("basis" in its results): a probe,
// mm_owner (the kernel's mm->owner, read by the bpf backend), the walker's
// fd_table, the mm's teardown by its owner's exit or exec, unknown, or
// module (ptwalk.ko named it: the module flavour).
enum class Basis { PTW_MONITOR_BASES(PTW_ENUM_MEMBER) };
const char *name(Basis b);
std::optional<Basis> parse_basis(std::string_view s);

#undef PTW_ENUM_MEMBER

} // namespace ptwalk
