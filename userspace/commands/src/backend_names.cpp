// SPDX-License-Identifier: GPL-2.0
// The --backend names of `ptwalk run` and `ptwalk monitor`, from their
// lists (PTW_RUN_BACKENDS, PTW_MONITOR_BACKENDS).
#include "ptwalk/monitor.hpp"
#include "ptwalk/run.hpp"

namespace ptwalk {

namespace {

template <typename E>
struct Named {
	E e;
	const char *name;
};

constexpr Named<RunBackend> kRun[] = {
#define PTW_X(e, n) {RunBackend::e, n},
	PTW_RUN_BACKENDS(PTW_X)
#undef PTW_X
};
constexpr Named<MonitorBackend> kMonitor[] = {
#define PTW_X(e, n) {MonitorBackend::e, n},
	PTW_MONITOR_BACKENDS(PTW_X)
#undef PTW_X
};

template <typename E, size_t N>
const char *name_of(const Named<E> (&t)[N], E e)
{
	for (const auto &x : t)
		if (x.e == e)
			return x.name;
	return "?";
}
template <typename E, size_t N>
std::optional<E> parse_of(const Named<E> (&t)[N], std::string_view s)
{
	for (const auto &x : t)
		if (s == x.name)
			return x.e;
	return std::nullopt;
}
template <typename E, size_t N>
std::string all_of(const Named<E> (&t)[N])
{
	std::string s;
	for (const auto &x : t)
		s += std::string(s.empty() ? "" : "|") + x.name;
	return s;
}

} // namespace

const char *name(RunBackend b)
{
	return name_of(kRun, b);
}
std::optional<RunBackend> parse_run_backend(std::string_view s)
{
	return parse_of(kRun, s);
}
std::string all_run_backends()
{
	return all_of(kRun);
}
const char *name(MonitorBackend b)
{
	return name_of(kMonitor, b);
}
std::optional<MonitorBackend> parse_monitor_backend(std::string_view s)
{
	return parse_of(kMonitor, s);
}
std::string all_monitor_backends()
{
	return all_of(kMonitor);
}

} // namespace ptwalk
