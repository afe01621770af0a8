// SPDX-License-Identifier: GPL-2.0
// An event's `format` file, parsed by libtraceevent (tep_parse_format), the
// parser trace-cmd, perf and rtla use. In front of it, a check of each line's
// shape as the kernel prints it (kernel/trace/trace_events.c, f_show): Debian
// 12's libtraceevent 1.7.1 dereferences NULL on some malformed lines
// (testdata/tracefs/malformed/libtraceevent-null), and no kernel writes them.
// The check reads no field; every figure comes from libtraceevent.
#include "ptwalk/tracefs.hpp"

#include <cstring>
#include <memory>
#include <mutex>
#include <traceevent/event-parse.h>

namespace ptwalk {

namespace {

constexpr size_t kMaxName = 256; // event and field names, types
constexpr size_t kMaxDigits = 9; // ID, offset, size: far beyond any event

bool is_ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

bool is_ident(std::string_view s)
{
	if (s.empty() || s.size() > kMaxName || (s[0] >= '0' && s[0] <= '9'))
		return false;
	// macro names libtraceevent's tokenizer rewrites into strings (for old
	// mac80211 print formats), leaking a token in a declaration
	for (std::string_view m : {"LOCAL_PR_FMT", "STA_PR_FMT", "VIF_PR_FMT"})
		if (s == m)
			return false;
	for (char c : s)
		if (!is_ident_char(c))
			return false;
	return true;
}

bool is_number(std::string_view s)
{
	if (s.empty() || s.size() > kMaxDigits)
		return false;
	for (char c : s)
		if (c < '0' || c > '9')
			return false;
	return true;
}

// Cuts `prefix` off s; false when s does not start with it.
bool eat(std::string_view &s, std::string_view prefix)
{
	if (s.substr(0, prefix.size()) != prefix)
		return false;
	s.remove_prefix(prefix.size());
	return true;
}

// A type as the kernel prints one: identifiers, '*' and single spaces.
// "struct mm_struct *", "const char *const *", "unsigned long".
bool is_type(std::string_view t)
{
	if (t.empty() || !is_ident_char(t.front()))
		return false;
	size_t idents = 0;
	for (size_t i = 0; i < t.size();) {
		if (is_ident_char(t[i])) {
			size_t j = i;
			while (j < t.size() && is_ident_char(t[j]))
				j++;
			if (!is_ident(t.substr(i, j - i)))
				return false;
			idents++;
			i = j;
		} else if (t[i] == '*' || (t[i] == ' ' && t[i - 1] != ' ')) {
			i++;
		} else {
			return false;
		}
	}
	return idents > 0;
}

// A declaration in one of the forms the kernel prints: "TYPE NAME",
// "TYPE NAME[N]", "TYPE NAME[]", "__data_loc TYPE[] NAME", "__data_loc TYPE
// NAME" (and __rel_loc alike). Other bracket placements make libtraceevent
// 1.7.1 leak a token (fuzz_tracefs).
bool is_declaration(std::string_view d)
{
	if (d.size() > kMaxName)
		return false;
	bool loc = eat(d, "__data_loc ") || eat(d, "__rel_loc ");
	if (!loc && d.ends_with(']')) {
		size_t open = d.rfind('[');
		if (open == std::string_view::npos)
			return false;
		std::string_view n = d.substr(open + 1, d.size() - open - 2);
		if (!n.empty() && !is_number(n))
			return false;
		d = d.substr(0, open);
	}
	size_t sp = d.find_last_of(" *");
	if (sp == std::string_view::npos || !is_ident(d.substr(sp + 1)))
		return false;
	std::string_view type = d.substr(0, d[sp] == ' ' ? sp : sp + 1);
	if (loc && type.ends_with("[]"))
		type.remove_suffix(2);
	return is_type(type);
}

// "\tfield:DECL;\toffset:N;\tsize:N;\tsigned:0|1;", exactly
bool is_field_line(std::string_view l)
{
	if (!eat(l, "\tfield:"))
		return false;
	size_t semi = l.find(';');
	if (semi == std::string_view::npos || !is_declaration(l.substr(0, semi)))
		return false;
	l.remove_prefix(semi);
	for (std::string_view key : {";\toffset:", ";\tsize:"}) {
		if (!eat(l, key))
			return false;
		size_t end = l.find(';');
		if (end == std::string_view::npos || !is_number(l.substr(0, end)))
			return false;
		l.remove_prefix(end);
	}
	return l == ";\tsigned:0;" || l == ";\tsigned:1;";
}

// The text libtraceevent gets: the header and field lines as read, the
// blank line that ends the common fields where the kernel put it, and an
// empty print format (ptwalk reads fields, never prints an event, so the
// print-format expression parser is not given the file's).
std::optional<std::string> checked_format_text(std::string_view text, std::string *err)
{
	auto fail = [&](const std::string &why) {
		if (err)
			*err = why;
		return std::nullopt;
	};
	std::string out;
	bool have_name = false, have_id = false, in_fields = false, split = false;
	size_t fields = 0, lineno = 0, pos = 0;
	while (pos < text.size()) {
		size_t nl = text.find('\n', pos);
		std::string_view l = text.substr(
			pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
		pos = nl == std::string_view::npos ? text.size() : nl + 1;
		lineno++;
		std::string_view v = l;
		std::string where = "format line " + std::to_string(lineno) + ": ";
		if (l.starts_with("print fmt: "))
			break;
		if (eat(v, "name: ") && !have_name && !have_id && !in_fields) {
			if (!is_ident(v))
				return fail(where + "bad name");
			have_name = true;
		} else if (eat(v, "ID: ") && have_name && !have_id) {
			if (!is_number(v))
				return fail(where + "bad ID");
			have_id = true;
		} else if (l == "format:" && have_id && !in_fields) {
			in_fields = true;
		} else if (l.empty() && in_fields) {
			// the first blank line after a field ends the common ones
			if (fields == 0 || split)
				continue;
			split = true;
		} else if (in_fields && l.starts_with("\tfield:")) {
			if (!is_field_line(l))
				return fail(where + "not a field line as the kernel writes one");
			fields++;
		} else {
			std::string missing = !have_name ? "name" : !have_id ? "ID" : "format:";
			return fail(where + "unexpected (before it: " + missing + "?)");
		}
		out.append(l).push_back('\n');
	}
	if (!have_name || !have_id || fields == 0)
		return fail(std::string("format: missing ") + (!have_name ? "name"
							       : !have_id ? "ID"
									  : "fields"));
	if (!split)
		out.push_back('\n');
	out += "\nprint fmt: \"\"\n";
	return out;
}

struct TepFree {
	void operator()(tep_handle *t) const { tep_free(t); }
};

void add_fields(tep_format_field *f, bool common, std::vector<TraceField> &out)
{
	for (; f; f = f->next) {
		TraceField t;
		t.type = f->type ? f->type : "";
		t.name = f->name ? f->name : "";
		t.offset = f->offset >= 0 ? uint32_t(f->offset) : 0;
		t.size = f->size >= 0 ? uint32_t(f->size) : 0;
		t.data_loc = f->flags & TEP_FIELD_IS_DYNAMIC;
		t.rel_loc = f->flags & TEP_FIELD_IS_RELATIVE;
		t.array_len = (f->flags & TEP_FIELD_IS_ARRAY) && !t.data_loc ? f->arraylen : 0;
		t.is_signed = f->flags & TEP_FIELD_IS_SIGNED;
		t.common = common;
		out.push_back(std::move(t));
	}
}

} // namespace

const TraceField *TraceEventFormat::find(std::string_view field) const
{
	for (const auto &f : fields)
		if (f.name == field)
			return &f;
	return nullptr;
}

std::optional<TraceEventFormat> parse_event_format(std::string_view text, std::string *err)
{
	auto checked = checked_format_text(text, err);
	if (!checked)
		return std::nullopt;
	// libtraceevent's tokenizer keeps its input in static variables
	static std::mutex tep_lock;
	std::lock_guard<std::mutex> hold(tep_lock);
	static std::once_flag quiet;
	std::call_once(quiet, [] { tep_set_loglevel(TEP_LOG_NONE); });
	std::unique_ptr<tep_handle, TepFree> tep(tep_alloc());
	if (!tep) {
		if (err)
			*err = "format: libtraceevent: out of memory";
		return std::nullopt;
	}
	tep_event *ev = nullptr;
	tep_errno r = tep_parse_format(tep.get(), &ev, checked->data(), checked->size(), "ptwalk");
	if (r != 0 || !ev || !ev->name) {
		char why[160] = "no event";
		if (r != 0)
			tep_strerror(tep.get(), r, why, sizeof(why));
		if (err)
			*err = std::string("format: libtraceevent: ") + why;
		return std::nullopt;
	}
	TraceEventFormat fmt;
	fmt.name = ev->name;
	fmt.id = ev->id >= 0 ? uint32_t(ev->id) : 0;
	add_fields(ev->format.common_fields, true, fmt.fields);
	add_fields(ev->format.fields, false, fmt.fields);
	return fmt;
}

// A fixed-width read by the field's offset and size, kept rather than
// tep_read_number_field: that does not bound the read by the record's size.
bool read_field_u64(const TraceField &f, std::span<const uint8_t> raw, uint64_t &out) noexcept
{
	if (size_t(f.offset) + f.size > raw.size())
		return false;
	const uint8_t *p = raw.data() + f.offset;
	switch (f.size) {
	case 1:
		out = p[0];
		return true;
	case 2: {
		uint16_t v;
		std::memcpy(&v, p, 2);
		out = v;
		return true;
	}
	case 4: {
		uint32_t v;
		std::memcpy(&v, p, 4);
		out = v;
		return true;
	}
	case 8: {
		uint64_t v;
		std::memcpy(&v, p, 8);
		out = v;
		return true;
	}
	default:
		return false;
	}
}

} // namespace ptwalk
