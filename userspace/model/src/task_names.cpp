// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/task_names.hpp"

namespace ptwalk {

// a run of weeks sees millions of tasks: names are re-read when needed
void TaskNames::bound()
{
	if (names_.size() > 262144)
		names_.clear();
}

void TaskNames::lookup(pid_t pid)
{
	if (pid <= 0)
		return;
	auto [it, fresh] = names_.try_emplace(pid);
	if (!fresh)
		return;
	it->second.comm = read_(pid);
	// what /proc says now is newer than any record still in a ring; a
	// task already gone tells nothing, and any record may name it
	it->second.t = it->second.comm.empty() ? 0 : now_();
}

void TaskNames::set(pid_t tid, std::string_view comm, uint64_t t)
{
	bound();
	Name &n = names_[tid];
	if (t < n.t)
		return; // an older record, read after a newer one
	n.comm = std::string(comm);
	n.t = t;
}

void TaskNames::fork(pid_t ptid, pid_t tid, uint64_t t)
{
	bound();
	lookup(ptid);
	auto it = names_.find(tid);
	if (it != names_.end() && it->second.t >= t)
		return; // the child's own exec or rename, read first
	const std::string parent = names_[ptid].comm;
	names_[tid] = Name{parent, t};
}

std::string TaskNames::comm(pid_t pid) const
{
	auto it = names_.find(pid);
	return it == names_.end() || it->second.comm.empty() ? "?" : it->second.comm;
}

uint64_t TaskNames::since(pid_t pid) const
{
	auto it = names_.find(pid);
	return it == names_.end() ? 0 : it->second.t;
}

} // namespace ptwalk
