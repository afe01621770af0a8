// SPDX-License-Identifier: GPL-2.0
// The monitor's fd-table evidence (monitor_model.hpp): which of a holder's
// open /proc files names the walk and its target. Moved out of
// monitor_model.cpp.
#include "ptwalk/monitor_model.hpp"

#include "ptwalk/hold_kind.hpp"

namespace ptwalk {

// --- fd table ---------------------------------------------------------

// A holder's open /proc/TGID file is no evidence for a hold of an mm the
// facts say is not TGID's (MmOwners keeps those facts).
bool MmOwners::not_its_mm(pid_t tgid, uint64_t mm, uint64_t t) const
{
	if (auto it = by_tgid_.find(tgid); it != by_tgid_.end()) {
		bool other = false;
		for (uint64_t m : it->second) {
			if (m == mm)
				return false;
			auto l = lives_.find(m);
			if (l == lives_.end() || l->second.empty())
				continue;
			const MmLife &life = l->second.back();
			// an mm execve() is building is not yet the one its files show
			if (life.building || life.tgid != tgid)
				continue;
			// torn down since its fact (an exit or exec not seen): its
			// mm now is unknown
			if (auto td = torn_.find(m); td != torn_.end() && td->second <= t &&
						     life.first_fact_ns <= td->second)
				continue;
			const Owner o = owner_at(m, t, tgid);
			other = other || (o.tgid == tgid && !o.teardown);
		}
		return other;
	}
	// exited (not exec'd) by t: its files reach no mm but one it had
	auto e = ended_.find(tgid);
	auto x = execs_.find(tgid);
	auto last = last_mm_.find(tgid);
	if (e == ended_.end() || e->second > t || (x != execs_.end() && x->second == e->second) ||
	    last == last_mm_.end() || last->second == mm)
		return false;
	if (auto l = lives_.find(mm); l != lives_.end())
		for (const MmLife &life : l->second)
			if (life.tgid == tgid)
				return false;
	return true;
}

std::optional<WalkFile> pick_walk_file(const std::vector<WalkFile> &files, pid_t holder_tgid)
{
	std::vector<const WalkFile *> other, own;
	for (const auto &f : files)
		(f.pid != holder_tgid ? other : own).push_back(&f);
	const auto &v = other.empty() ? own : other;
	if (v.empty())
		return std::nullopt;
	WalkFile out = *v.back();
	for (const WalkFile *f : v) {
		if (f->pid != out.pid)
			out.pid = 0; // which one it walks now, the fds do not say
		if (f->file != out.file)
			out.file.reset();
	}
	if (!out.pid && !out.file)
		return std::nullopt;
	return out;
}

std::optional<WalkFile> parse_walk_file(std::string_view link)
{
	if (link.substr(0, 6) != "/proc/")
		return std::nullopt;
	link.remove_prefix(6);
	auto num = [](std::string_view &s) -> long {
		long n = 0;
		size_t i = 0;
		for (; i < s.size() && s[i] >= '0' && s[i] <= '9' && i < 9; i++)
			n = n * 10 + (s[i] - '0');
		if (i == 0 || i >= s.size() || s[i] != '/')
			return -1;
		s.remove_prefix(i + 1);
		return n;
	};
	long pid = num(link);
	if (pid <= 0)
		return std::nullopt;
	if (link.substr(0, 5) == "task/") {
		link.remove_prefix(5);
		if (num(link) <= 0)
			return std::nullopt;
	}
	// the walk kinds' files (walk_kinds.def), and others that take the
	// target's mmap_lock
	if (auto f = parse_proc_file(link))
		return WalkFile{pid_t(pid), *f};
	return std::nullopt;
}

} // namespace ptwalk
