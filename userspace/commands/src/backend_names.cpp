// SPDX-License-Identifier: GPL-2.0
// The --backend names of `ptwalk run` and `ptwalk monitor`: auto, then the
// backends each can use, named as PTW_BACKENDS names them.
#include "ptwalk/enum_names.hpp"
#include "ptwalk/monitor.hpp"
#include "ptwalk/run.hpp"

namespace ptwalk {

namespace {

#define PTW_RUN_NAME(e, run, monitor) PTW_IF_##run({RunBackend::e, #e}, )
#define PTW_MONITOR_NAME(e, run, monitor) PTW_IF_##monitor({MonitorBackend::e, #e}, )
constexpr EnumName<RunBackend> kRun[] = {{RunBackend::automatic, "auto"},
					 PTW_BACKENDS(PTW_RUN_NAME)};
constexpr EnumName<MonitorBackend> kMonitor[] = {{MonitorBackend::automatic, "auto"},
						 PTW_BACKENDS(PTW_MONITOR_NAME)};
static_assert(enum_in_order(kRun) && enum_in_order(kMonitor));

} // namespace

const char *name(RunBackend b)
{
	return enum_name(kRun, b);
}
std::optional<RunBackend> parse_run_backend(std::string_view s)
{
	return enum_parse(kRun, s);
}
std::string all_run_backends()
{
	return enum_names(kRun);
}
std::optional<BackendKind> backend_kind(RunBackend b)
{
	return parse_backend_kind(name(b));
}
const char *name(MonitorBackend b)
{
	return enum_name(kMonitor, b);
}
std::optional<MonitorBackend> parse_monitor_backend(std::string_view s)
{
	return enum_parse(kMonitor, s);
}
std::string all_monitor_backends()
{
	return enum_names(kMonitor);
}
std::optional<BackendKind> backend_kind(MonitorBackend b)
{
	return parse_backend_kind(name(b));
}

} // namespace ptwalk
