// SPDX-License-Identifier: GPL-2.0
// The monitor's hold kinds and their text (hold_kind.hpp).
#include "ptwalk/hold_kind.hpp"

#include <string_view>

#include "ptwalk/enum_names.hpp"

namespace ptwalk {

namespace {

constexpr EnumName<OtherProcFile> kOtherFiles[] = {
#define PTW_X(x) {OtherProcFile::x, #x},
	PTW_OTHER_PROC_FILES(PTW_X)
#undef PTW_X
};
constexpr EnumName<HoldCause> kCauses[] = {
#define PTW_X(x) {HoldCause::x, #x},
	PTW_HOLD_CAUSES(PTW_X)
#undef PTW_X
};
static_assert(enum_in_order(kOtherFiles) && enum_in_order(kCauses));

} // namespace

const char *name(OtherProcFile f)
{
	return enum_name(kOtherFiles, f);
}

const char *name(HoldCause c)
{
	return enum_name(kCauses, c);
}

namespace {

// a file's or a hold's text: a walk kind's is its file
const char *text(WalkKind k)
{
	return info(k).file;
}
const char *text(OtherProcFile f)
{
	return name(f);
}
const char *text(HoldCause c)
{
	return name(c);
}

} // namespace

const char *name(const ProcFile &f)
{
	return std::visit([](auto x) { return text(x); }, f);
}

const char *name(const HoldKind &k)
{
	return std::visit([](auto x) { return text(x); }, k);
}

std::optional<ProcFile> parse_proc_file(std::string_view s)
{
	for (const auto &k : kWalkKindInfo)
		if (s == k.file)
			return k.id; // the first kind of the file
	if (auto f = enum_parse(kOtherFiles, s))
		return *f;
	return std::nullopt;
}

WalkKind file_kind(WalkKind k)
{
	return std::get<WalkKind>(*parse_proc_file(info(k).file));
}

HoldKind hold_kind(const ProcFile &f)
{
	return std::visit([](auto x) -> HoldKind { return x; }, f);
}

} // namespace ptwalk
