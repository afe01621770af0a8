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

Json::Json(const Value &v)
{
	switch (v.type()) {
	case Value::value_t::boolean:
		v_ = v.get<bool>();
		break;
	case Value::value_t::number_integer:
		v_ = v.get<int64_t>();
		break;
	case Value::value_t::number_unsigned:
		v_ = v.get<uint64_t>();
		break;
	case Value::value_t::number_float:
		v_ = v.get<double>();
		break;
	case Value::value_t::string:
		v_ = v.get<std::string>();
		break;
	case Value::value_t::array: {
		Array a;
		a.reserve(v.size());
		for (const auto &e : v)
			a.emplace_back(e);
		v_ = std::move(a);
		break;
	}
	case Value::value_t::object: {
		Object o;
		o.reserve(v.size());
		for (const auto &[k, e] : v.items())
			o.emplace_back(k, Json(e));
		v_ = std::move(o);
		break;
	}
	default:
		break; // null, binary, discarded: null
	}
}

Json::Value Json::value() const
{
	struct To {
		Value operator()(std::monostate) const { return nullptr; }
		Value operator()(bool b) const { return b; }
		Value operator()(int64_t i) const { return i; }
		Value operator()(uint64_t u) const { return u; }
		Value operator()(double d) const { return d; }
		Value operator()(const std::string &s) const { return s; }
		Value operator()(const Array &a) const
		{
			Value v = Value::array();
			for (const auto &e : a)
				v.push_back(e.value());
			return v;
		}
		Value operator()(const Object &o) const
		{
			Value v = Value::object();
			for (const auto &[k, e] : o)
				v[k] = e.value();
			return v;
		}
	};
	return std::visit(To{}, v_);
}

Json &Json::operator[](std::string_view key)
{
	if (is_null())
		v_ = Object{};
	auto &o = std::get<Object>(v_);
	for (auto &[k, v] : o)
		if (k == key)
			return v;
	o.emplace_back(std::string(key), Json());
	return o.back().second;
}

const Json *Json::find(std::string_view key) const
{
	if (!is_object())
		return nullptr;
	for (auto &[k, v] : std::get<Object>(v_))
		if (k == key)
			return &v;
	return nullptr;
}

Json &Json::push(Json v)
{
	if (is_null())
		v_ = Array{};
	auto &a = std::get<Array>(v_);
	a.push_back(std::move(v));
	return a.back();
}

size_t Json::size() const
{
	if (auto *a = std::get_if<Array>(&v_))
		return a->size();
	if (auto *o = std::get_if<Object>(&v_))
		return o->size();
	return 0;
}

const Json &Json::at(size_t i) const
{
	return std::get<Array>(v_).at(i);
}

std::optional<double> Json::number() const
{
	if (auto *i = std::get_if<int64_t>(&v_))
		return double(*i);
	if (auto *u = std::get_if<uint64_t>(&v_))
		return double(*u);
	if (auto *d = std::get_if<double>(&v_))
		return *d;
	return std::nullopt;
}

std::optional<std::string> Json::string() const
{
	if (auto *s = std::get_if<std::string>(&v_))
		return *s;
	return std::nullopt;
}

std::optional<bool> Json::boolean() const
{
	if (auto *b = std::get_if<bool>(&v_))
		return *b;
	return std::nullopt;
}

// The pretty layout only (line breaks, indentation, arrays of scalars on one
// line); every key and scalar is nlohmann's text.
static void pretty(const Json::Value &v, std::string &out, int indent, int depth)
{
	if (v.is_object()) {
		out += '{';
		bool first = true;
		for (auto &[k, e] : v.items()) {
			if (!first)
				out += ',';
			first = false;
			newline(out, indent, depth + 1);
			out += text(Json::Value(k));
			out += ": ";
			pretty(e, out, indent, depth + 1);
		}
		if (!v.empty())
			newline(out, indent, depth);
		out += '}';
		return;
	}
	if (!v.is_array()) {
		out += text(v);
		return;
	}
	bool flat = true;
	for (auto &e : v)
		if (e.is_structured())
			flat = false;
	out += '[';
	for (size_t i = 0; i < v.size(); i++) {
		if (flat) {
			if (i)
				out += ", ";
			out += text(v[i]);
			continue;
		}
		if (i)
			out += ',';
		newline(out, indent, depth + 1);
		pretty(v[i], out, indent, depth + 1);
	}
	if (!flat && !v.empty())
		newline(out, indent, depth);
	out += ']';
}

std::string Json::dump(int indent) const
{
	const Value v = value();
	if (indent < 0)
		return text(v);
	std::string out;
	pretty(v, out, indent, 0);
	return out;
}

} // namespace ptwalk
