// SPDX-License-Identifier: GPL-2.0
// The names of the enumerations of result_enums.def: one table each.
#include "ptwalk/result_enums.hpp"

#include "ptwalk/enum_names.hpp"

namespace ptwalk {

namespace {

#define PTW_NAME(e, x, ...) {e::x, #x},
#define PTW_BACKEND_NAME(x, run, monitor) PTW_NAME(BackendKind, x)
#define PTW_BACKING_NAME(x) PTW_NAME(Backing, x)
#define PTW_VICTIM_NAME(x) PTW_NAME(Victim, x)
#define PTW_FAULT_REGION_NAME(x) PTW_NAME(FaultRegion, x)
#define PTW_STATUS_NAME(x) PTW_NAME(EstimateStatus, x)
#define PTW_WS_PATTERN_NAME(x) PTW_NAME(WsPattern, x)
#define PTW_SOURCE_NAME(x, text) {MeasuredStallSource::x, text},
#define PTW_BASIS_NAME(x) PTW_NAME(Basis, x)

constexpr EnumName<BackendKind> kBackends[] = {PTW_BACKENDS(PTW_BACKEND_NAME)};
constexpr EnumName<Backing> kBackings[] = {PTW_BACKINGS(PTW_BACKING_NAME)};
constexpr EnumName<Victim> kVictimNames[] = {PTW_VICTIMS(PTW_VICTIM_NAME)};
constexpr EnumName<FaultRegion> kFaultRegions[] = {PTW_FAULT_REGIONS(PTW_FAULT_REGION_NAME)};
constexpr EnumName<WsPattern> kWsPatterns[] = {PTW_WS_PATTERNS(PTW_WS_PATTERN_NAME)};
constexpr EnumName<EstimateStatus> kStatuses[] = {PTW_ESTIMATE_STATUSES(PTW_STATUS_NAME)};
constexpr EnumName<MeasuredStallSource> kSources[] = {PTW_MEASURED_STALL_SOURCES(PTW_SOURCE_NAME)};
constexpr EnumName<Basis> kBases[] = {PTW_MONITOR_BASES(PTW_BASIS_NAME)};

static_assert(enum_in_order(kBackends) && enum_in_order(kBackings) && enum_in_order(kVictimNames) &&
	      enum_in_order(kFaultRegions) && enum_in_order(kWsPatterns) &&
	      enum_in_order(kStatuses) && enum_in_order(kSources) && enum_in_order(kBases));

#define PTW_RUNS(x, run, monitor) run,
#define PTW_MONITORS(x, run, monitor) monitor,
constexpr bool kRuns[] = {PTW_BACKENDS(PTW_RUNS)};
constexpr bool kMonitors[] = {PTW_BACKENDS(PTW_MONITORS)};

} // namespace

const char *name(BackendKind b)
{
	return enum_name(kBackends, b);
}
std::optional<BackendKind> parse_backend_kind(std::string_view s)
{
	return enum_parse(kBackends, s);
}
bool runs(BackendKind b)
{
	return kRuns[size_t(b)];
}
bool monitors(BackendKind b)
{
	return kMonitors[size_t(b)];
}

const char *name(Backing b)
{
	return enum_name(kBackings, b);
}
const char *name(Victim v)
{
	return enum_name(kVictimNames, v);
}
const char *name(FaultRegion f)
{
	return enum_name(kFaultRegions, f);
}
std::optional<Backing> parse_backing(std::string_view s)
{
	return enum_parse(kBackings, s);
}
std::optional<Victim> parse_victim(std::string_view s)
{
	return enum_parse(kVictimNames, s);
}
std::optional<FaultRegion> parse_fault_region(std::string_view s)
{
	return enum_parse(kFaultRegions, s);
}
std::string all_backings()
{
	return enum_names(kBackings);
}
std::string all_victims()
{
	return enum_names(kVictimNames);
}
std::string all_fault_regions()
{
	return enum_names(kFaultRegions);
}

const char *name(WsPattern p)
{
	return enum_name(kWsPatterns, p);
}
std::optional<WsPattern> parse_ws_pattern(std::string_view s)
{
	return enum_parse(kWsPatterns, s);
}
std::string all_ws_patterns()
{
	return enum_names(kWsPatterns);
}

const char *name(EstimateStatus s)
{
	return enum_name(kStatuses, s);
}
std::optional<EstimateStatus> parse_estimate_status(std::string_view s)
{
	return enum_parse(kStatuses, s);
}
const char *name(MeasuredStallSource s)
{
	return enum_name(kSources, s);
}
std::optional<MeasuredStallSource> parse_measured_stall_source(std::string_view s)
{
	return enum_parse(kSources, s);
}

const char *name(Basis b)
{
	return enum_name(kBases, b);
}
std::optional<Basis> parse_basis(std::string_view s)
{
	return enum_parse(kBases, s);
}

} // namespace ptwalk
