// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/tracefs.hpp"

#include <cerrno>
#include <cstring>
#include <sys/mount.h>
#include <sys/stat.h>
#include <utility>

#include "ptwalk/procfs.hpp"

namespace ptwalk {

namespace {

std::string decode_octal(std::string_view s)
{
	std::string out;
	for (size_t i = 0; i < s.size(); i++) {
		if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7' &&
		    s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
			out += char((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 +
				    (s[i + 3] - '0'));
			i += 3;
		} else {
			out += s[i];
		}
	}
	return out;
}

bool is_dir(const std::string &p)
{
	struct stat st;
	return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

} // namespace

std::vector<std::string> mountinfo_mounts_of(std::string_view mountinfo, std::string_view fstype)
{
	// "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw"
	std::vector<std::string> out;
	for_each_line(mountinfo, [&](std::string_view line) {
		size_t sep = line.find(" - ");
		if (sep == std::string_view::npos)
			return;
		std::string_view tail = line.substr(sep + 3);
		std::string_view type = tail.substr(0, tail.find(' '));
		if (type != fstype)
			return;
		// field 5 (1-based) of the head is the mount point
		std::string_view head = line.substr(0, sep);
		size_t p = 0;
		for (int i = 0; i < 4 && p != std::string_view::npos; i++) {
			p = head.find(' ', p);
			if (p != std::string_view::npos)
				p++;
		}
		if (p == std::string_view::npos)
			return;
		std::string_view mp = head.substr(p, head.find(' ', p) - p);
		out.push_back(decode_octal(mp));
	});
	return out;
}

Tracefs::Tracefs(Tracefs &&o) noexcept
	: root_(std::move(o.root_)), mount_point_(std::move(o.mount_point_)),
	  mounted_by_us_(std::exchange(o.mounted_by_us_, false))
{
	o.root_.clear();
}

Tracefs &Tracefs::operator=(Tracefs &&o) noexcept
{
	if (this != &o) {
		release();
		root_ = std::move(o.root_);
		mount_point_ = std::move(o.mount_point_);
		mounted_by_us_ = std::exchange(o.mounted_by_us_, false);
		o.root_.clear();
	}
	return *this;
}

bool Tracefs::open(std::string *err)
{
	if (is_open())
		return true;
	std::string rerr;
	auto mi = read_file("/proc/self/mountinfo", &rerr);
	if (mi) {
		for (const auto &mp : mountinfo_mounts_of(*mi, "tracefs")) {
			// another ptwalk's own mount goes away when it is done
			if (mp.find(kPrivatePrefix) != std::string::npos)
				continue;
			if (is_dir(mp + "/events")) {
				root_ = mp;
				return true;
			}
		}
		for (const auto &mp : mountinfo_mounts_of(*mi, "debugfs")) {
			// debugfs automounts tracefs at tracing/
			if (is_dir(mp + "/tracing/events")) {
				root_ = mp + "/tracing";
				return true;
			}
		}
	}
	if (!is_dir("/sys/kernel/tracing")) {
		if (err)
			*err = std::string("/sys/kernel/tracing: ") + std::strerror(ENOENT) +
			       " (kernel without CONFIG_TRACING?)";
		return false;
	}
	// Our own mount point, not /sys/kernel/tracing: two ptwalks starting
	// at once would both mount there, and the second gets EBUSY (the same
	// filesystem on the same mount point), or read the first's mount as
	// it goes away.
	std::string target;
	for (const char *dir : {"/run", "/tmp"}) {
		std::string t = std::string(dir) + "/" + kPrivatePrefix + "XXXXXX";
		if (mkdtemp(t.data())) {
			target = t;
			break;
		}
	}
	if (target.empty()) {
		if (err)
			*err = std::string("a directory to mount tracefs on (/run, /tmp): ") +
			       std::strerror(errno);
		return false;
	}
	if (mount("nodev", target.c_str(), "tracefs", 0, nullptr) != 0) {
		int e = errno;
		rmdir(target.c_str());
		if (err) {
			*err = "mount tracefs on " + target + ": " + std::strerror(e);
			if (e == EPERM)
				*err += " (needs root / CAP_SYS_ADMIN)";
			else if (e == ENODEV)
				*err += " (kernel without tracefs)";
		}
		return false;
	}
	if (!is_dir(target + "/events")) {
		umount2(target.c_str(), MNT_DETACH);
		rmdir(target.c_str());
		if (err)
			*err = target + "/events: missing after mounting tracefs";
		return false;
	}
	root_ = target;
	mount_point_ = target;
	mounted_by_us_ = true;
	return true;
}

std::optional<TraceEventFormat>
Tracefs::event_format(std::string_view system, std::string_view event, std::string *err) const
{
	if (!is_open()) {
		if (err)
			*err = "tracefs not open";
		return std::nullopt;
	}
	std::string path =
		root_ + "/events/" + std::string(system) + "/" + std::string(event) + "/format";
	auto text = read_file(path, err);
	if (!text)
		return std::nullopt;
	std::string perr;
	auto fmt = parse_event_format(*text, &perr);
	if (!fmt && err)
		*err = path + ": " + perr;
	return fmt;
}

void Tracefs::release()
{
	if (mounted_by_us_) {
		// detached even if a reader is still inside; then the empty
		// directory goes too
		umount2(mount_point_.c_str(), MNT_DETACH);
		rmdir(mount_point_.c_str());
		mounted_by_us_ = false;
	}
	root_.clear();
	mount_point_.clear();
}

} // namespace ptwalk
