// SPDX-License-Identifier: GPL-2.0
// The names of the monitor's enumerations: its results' and metrics' text.
#include "ptwalk/monitor_model.hpp"

namespace ptwalk {

const char *name(Basis b)
{
	switch (b) {
#define PTW_X(x)       \
	case Basis::x: \
		return #x;
		PTW_MONITOR_BASES(PTW_X)
#undef PTW_X
	}
	return "?";
}

const char *name(LifeEnd e)
{
	switch (e) {
	case LifeEnd::exit:
		return "exit";
	case LifeEnd::exec:
		return "exec";
	case LifeEnd::reused:
		return "reused";
	}
	return "?";
}

} // namespace ptwalk
