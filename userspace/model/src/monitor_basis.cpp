// SPDX-License-Identifier: GPL-2.0
// The names of the monitor's enumerations beside result_enums.def's: its
// results' and metrics' text.
#include "ptwalk/enum_names.hpp"
#include "ptwalk/monitor_model.hpp"

namespace ptwalk {

namespace {

constexpr EnumName<LifeEnd> kLifeEnds[] = {
	{LifeEnd::exit, "exit"},
	{LifeEnd::exec, "exec"},
	{LifeEnd::reused, "reused"},
};
static_assert(enum_in_order(kLifeEnds));

} // namespace

const char *name(LifeEnd e)
{
	return enum_name(kLifeEnds, e);
}

} // namespace ptwalk
