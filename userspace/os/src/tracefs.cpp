// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/tracefs.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <sys/mount.h>
#include <sys/stat.h>
#include <utility>

#include "ptwalk/procfs.hpp"

namespace ptwalk {

namespace {

std::string_view trim(std::string_view s)
{
	while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
		s.remove_prefix(1);
	while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
		s.remove_suffix(1);
	return s;
}

bool parse_u32(std::string_view s, uint32_t &out)
{
	s = trim(s);
	if (s.empty())
		return false;
	auto r = std::from_chars(s.data(), s.data() + s.size(), out);
	return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// "key:value" out of one tab-separated part of a field line
bool part_value(std::string_view part, std::string_view key, std::string_view &value)
{
	part = trim(part);
	if (part.substr(0, key.size()) != key || part.size() <= key.size() ||
	    part[key.size()] != ':')
		return false;
	value = part.substr(key.size() + 1);
	return true;
}

// "\tfield:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;"
bool parse_field_line(std::string_view line, TraceField &f, std::string *why)
{
	std::vector<std::string_view> parts;
	size_t pos = 0;
	while (pos < line.size()) {
		size_t semi = line.find(';', pos);
		if (semi == std::string_view::npos) {
			if (!trim(line.substr(pos)).empty())
				parts.push_back(line.substr(pos));
			break;
		}
		parts.push_back(line.substr(pos, semi - pos));
		pos = semi + 1;
	}
	if (parts.size() < 3) {
		*why = "too few parts";
		return false;
	}
	std::string_view decl;
	if (!part_value(parts[0], "field", decl)) {
		*why = "no field:";
		return false;
	}
	decl = trim(decl);
	size_t sp = decl.find_last_of(" \t*");
	if (sp == std::string_view::npos || sp + 1 >= decl.size()) {
		*why = "no field name";
		return false;
	}
	std::string_view name = decl.substr(sp + 1);
	std::string_view type = trim(decl.substr(0, sp + 1));
	if (size_t br = name.find('['); br != std::string_view::npos) {
		std::string_view n = name.substr(br + 1);
		if (!n.empty() && n.back() == ']')
			n.remove_suffix(1);
		uint32_t len = 0;
		if (!n.empty() && parse_u32(n, len))
			f.array_len = len;
		name = name.substr(0, br);
	}
	if (name.empty() || type.empty()) {
		*why = "empty name or type";
		return false;
	}
	f.name = std::string(name);
	f.type = std::string(type);
	f.rel_loc = type.substr(0, 9) == "__rel_loc";
	f.data_loc = f.rel_loc || type.substr(0, 10) == "__data_loc";
	f.common = name.substr(0, 7) == "common_";
	bool have_off = false, have_size = false;
	for (size_t i = 1; i < parts.size(); i++) {
		std::string_view v;
		uint32_t n = 0;
		if (part_value(parts[i], "offset", v)) {
			have_off = parse_u32(v, n);
			f.offset = n;
		} else if (part_value(parts[i], "size", v)) {
			have_size = parse_u32(v, n);
			f.size = n;
		} else if (part_value(parts[i], "signed", v)) {
			if (parse_u32(v, n))
				f.is_signed = n != 0;
		}
	}
	if (!have_off || !have_size) {
		*why = "no offset or size";
		return false;
	}
	return true;
}

std::string decode_octal(std::string_view s)
{
	std::string out;
	for (size_t i = 0; i < s.size(); i++) {
		if (s[i] == '\\' && i + 3 < s.size() &&
		    s[i + 1] >= '0' && s[i + 1] <= '7' && s[i + 2] >= '0' &&
		    s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
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

const TraceField *TraceEventFormat::find(std::string_view field) const
{
	for (const auto &f : fields)
		if (f.name == field)
			return &f;
	return nullptr;
}

std::optional<TraceEventFormat> parse_event_format(std::string_view text,
						   std::string *err)
{
	TraceEventFormat fmt;
	bool have_name = false, have_id = false;
	size_t pos = 0, lineno = 0;
	while (pos < text.size()) {
		size_t nl = text.find('\n', pos);
		std::string_view line = text.substr(
			pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
		pos = nl == std::string_view::npos ? text.size() : nl + 1;
		lineno++;
		std::string_view t = trim(line);
		std::string_view v;
		if (part_value(t, "name", v)) {
			fmt.name = std::string(trim(v));
			have_name = !fmt.name.empty();
		} else if (part_value(t, "ID", v)) {
			have_id = parse_u32(v, fmt.id);
			if (!have_id) {
				if (err)
					*err = "format line " + std::to_string(lineno) +
					       ": bad ID";
				return std::nullopt;
			}
		} else if (t.substr(0, 6) == "field:") {
			TraceField f;
			std::string why;
			if (!parse_field_line(t, f, &why)) {
				if (err)
					*err = "format line " + std::to_string(lineno) +
					       ": " + why;
				return std::nullopt;
			}
			fmt.fields.push_back(std::move(f));
		} else if (t.substr(0, 11) == "print fmt: ") {
			break;
		}
	}
	if (!have_name || !have_id || fmt.fields.empty()) {
		if (err)
			*err = std::string("format: missing ") +
			       (!have_name ? "name" : !have_id ? "ID" : "fields");
		return std::nullopt;
	}
	return fmt;
}

bool read_field_u64(const TraceField &f, std::span<const uint8_t> raw,
		    uint64_t &out) noexcept
{
	if (size_t(f.offset) + f.size > raw.size())
		return false;
	const uint8_t *p = raw.data() + f.offset;
	switch (f.size) {
	case 1: out = p[0]; return true;
	case 2: { uint16_t v; std::memcpy(&v, p, 2); out = v; return true; }
	case 4: { uint32_t v; std::memcpy(&v, p, 4); out = v; return true; }
	case 8: { uint64_t v; std::memcpy(&v, p, 8); out = v; return true; }
	default: return false;
	}
}

std::vector<std::string> mountinfo_mounts_of(std::string_view mountinfo,
					     std::string_view fstype)
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

std::optional<TraceEventFormat> Tracefs::event_format(std::string_view system,
						      std::string_view event,
						      std::string *err) const
{
	if (!is_open()) {
		if (err)
			*err = "tracefs not open";
		return std::nullopt;
	}
	std::string path = root_ + "/events/" + std::string(system) + "/" +
			   std::string(event) + "/format";
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
