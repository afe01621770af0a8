// SPDX-License-Identifier: GPL-2.0
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ptwalk/monitor.hpp"
#include "ptwalk/result_enums.hpp"
#include "ptwalk/run.hpp"

using namespace ptwalk;

namespace {

std::vector<std::string> all_backends()
{
	std::vector<std::string> v;
#define PTW_X(b, run, monitor) v.push_back(name(BackendKind::b));
	PTW_BACKENDS(PTW_X)
#undef PTW_X
	return v;
}

} // namespace

// The results' and the monitor JSON's "backend" values, and which command
// can use each.
TEST(BackendNames, KindsRoundTrip)
{
	EXPECT_EQ(all_backends(),
		  (std::vector<std::string>{"module", "bpf", "tracepoint", "syscall"}));
	for (const auto &n : all_backends())
		EXPECT_STREQ(name(*parse_backend_kind(n)), n.c_str());
	EXPECT_FALSE(parse_backend_kind("auto"));
	EXPECT_FALSE(parse_backend_kind("ebpf"));
	EXPECT_TRUE(runs(BackendKind::syscall) && !monitors(BackendKind::syscall));
	EXPECT_TRUE(!runs(BackendKind::bpf) && monitors(BackendKind::bpf));
	EXPECT_TRUE(runs(BackendKind::module) && monitors(BackendKind::module));
	EXPECT_TRUE(runs(BackendKind::tracepoint) && monitors(BackendKind::tracepoint));
}

// --backend: auto, then the backends the command can use, by their names.
TEST(BackendNames, CommandChoicesAreTheBackendsTheyCanUse)
{
	EXPECT_EQ(all_run_backends(), "auto|module|tracepoint|syscall");
	EXPECT_EQ(all_monitor_backends(), "auto|module|bpf|tracepoint");
	EXPECT_EQ(parse_run_backend("auto"), RunBackend::automatic);
	EXPECT_FALSE(backend_kind(RunBackend::automatic));
	EXPECT_FALSE(backend_kind(MonitorBackend::automatic));
	EXPECT_FALSE(parse_run_backend("bpf"));
	EXPECT_FALSE(parse_monitor_backend("syscall"));
	for (const auto &n : all_backends()) {
		const BackendKind b = *parse_backend_kind(n);
		auto r = parse_run_backend(n);
		ASSERT_EQ(bool(r), runs(b)) << n;
		if (r) {
			EXPECT_EQ(backend_kind(*r), b);
		}
		auto m = parse_monitor_backend(n);
		ASSERT_EQ(bool(m), monitors(b)) << n;
		if (m) {
			EXPECT_EQ(backend_kind(*m), b);
		}
	}
}
