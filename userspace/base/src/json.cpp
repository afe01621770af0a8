// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/json.hpp"

namespace ptwalk {

namespace {

// nlohmann's text of one value, compact. ptwalk compare/report read results
// as UTF-8 (RFC 8259 8.1): a byte that is not part of valid UTF-8 becomes
// U+FFFD instead of throwing. NaN and Inf print as null.
std::string text(const Json::Value &v)
{
	return v.dump(-1, ' ', false, nlohmann::detail::error_handler_t::replace);
}

void newline(std::string &out, int indent, int depth)
{
	if (indent < 0)
		return;
	out += '\n';
	out.append(size_t(indent * depth), ' ');
}

} // namespace

std::string json_escape(std::string_view s)
{
	std::string q = text(Json::Value(std::string(s)));
	return q.substr(1, q.size() - 2);
}

Json::Json(Array a) : v_(Value::array())
{
	for (auto &e : a)
		v_.push_back(std::move(e.v_));
}

Json::Json(Object o) : v_(Value::object())
{
	for (auto &[k, e] : o)
		v_[k] = std::move(e.v_);
}

Json &Json::operator[](std::string_view key)
{
	return wrap(v_[std::string(key)]); // null turns into {}
}

const Json *Json::find(std::string_view key) const
{
	if (!v_.is_object())
		return nullptr;
	auto it = v_.find(key);
	return it == v_.end() ? nullptr : &wrap(*it);
}

Json &Json::push(Json v)
{
	v_.push_back(std::move(v.v_)); // null turns into []
	return wrap(v_.back());
}

size_t Json::size() const
{
	return v_.is_array() || v_.is_object() ? v_.size() : 0;
}

const Json &Json::at(size_t i) const
{
	if (!v_.is_array())
		throw std::out_of_range("ptwalk::Json::at: not an array");
	return wrap(v_.at(i));
}

std::optional<double> Json::number() const
{
	if (v_.is_number())
		return v_.get<double>();
	return std::nullopt;
}

std::optional<std::string> Json::string() const
{
	if (v_.is_string())
		return v_.get<std::string>();
	return std::nullopt;
}

std::optional<bool> Json::boolean() const
{
	if (v_.is_boolean())
		return v_.get<bool>();
	return std::nullopt;
}

std::string Json::dump(int indent) const
{
	if (indent < 0)
		return text(v_);
	std::string out;
	dump_to(out, indent, 0);
	return out;
}

// The pretty layout only (line breaks, indentation, arrays of scalars on one
// line); every key and scalar is nlohmann's text.
void Json::dump_to(std::string &out, int indent, int depth) const
{
	if (v_.is_object()) {
		out += '{';
		bool first = true;
		for (auto &[k, e] : v_.items()) {
			if (!first)
				out += ',';
			first = false;
			newline(out, indent, depth + 1);
			out += text(Value(k));
			out += ": ";
			wrap(e).dump_to(out, indent, depth + 1);
		}
		if (!v_.empty())
			newline(out, indent, depth);
		out += '}';
		return;
	}
	if (!v_.is_array()) {
		out += text(v_);
		return;
	}
	bool flat = true;
	for (auto &e : v_)
		if (e.is_structured())
			flat = false;
	out += '[';
	for (size_t i = 0; i < v_.size(); i++) {
		if (flat) {
			if (i)
				out += ", ";
			out += text(v_[i]);
			continue;
		}
		if (i)
			out += ',';
		newline(out, indent, depth + 1);
		wrap(v_[i]).dump_to(out, indent, depth + 1);
	}
	if (!flat && !v_.empty())
		newline(out, indent, depth);
	out += ']';
}

} // namespace ptwalk
