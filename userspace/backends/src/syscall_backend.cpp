// SPDX-License-Identifier: GPL-2.0
// The fallback backend: nothing beyond the scanner's own syscall timing.
#include "ptwalk/backend.hpp"

namespace ptwalk {

namespace {

class SyscallBackend final : public Backend {
public:
	BackendKind kind() const override { return BackendKind::syscall; }
	std::string detail() const override
	{
		return "syscall timing only (CLOCK_MONOTONIC around the scanner's syscalls)";
	}
	bool start(pid_t, const std::vector<WatchedThread> &, pid_t) override { return true; }
	void stop() override {}
	std::vector<WalkKernelView> annotate(const std::vector<WalkSpan> &walks,
					     KernelView &kernel_view) override
	{
		kernel_view = KernelView{};
		kernel_view.source = "syscall timing only";
		return std::vector<WalkKernelView>(walks.size());
	}
};

} // namespace

std::unique_ptr<Backend> make_syscall_backend()
{
	return std::make_unique<SyscallBackend>();
}

} // namespace ptwalk
