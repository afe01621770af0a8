// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/prom.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace ptwalk::prom {

std::string escape_label(std::string_view v)
{
	std::string o;
	o.reserve(v.size());
	for (char c : v) {
		if (c == '\\')
			o += "\\\\";
		else if (c == '"')
			o += "\\\"";
		else if (c == '\n')
			o += "\\n";
		else
			o += c;
	}
	return o;
}

std::string format_value(double v)
{
	if (std::isnan(v))
		return "NaN";
	if (std::isinf(v))
		return v > 0 ? "+Inf" : "-Inf";
	if (v == std::floor(v) && std::fabs(v) < 1e15) {
		char b[32];
		snprintf(b, sizeof(b), "%.0f", v);
		return b;
	}
	char b[64];
	auto r = std::to_chars(b, b + sizeof(b), v);
	return std::string(b, r.ptr);
}

void Exposition::family(std::string_view name, std::string_view type, std::string_view help)
{
	out_ += "# HELP ";
	out_ += name;
	out_ += ' ';
	for (char c : help) // HELP escapes backslash and newline
		out_ += c == '\n'   ? std::string("\\n")
			: c == '\\' ? std::string("\\\\")
				    : std::string(1, c);
	out_ += "\n# TYPE ";
	out_ += name;
	out_ += ' ';
	out_ += type;
	out_ += '\n';
}

void Exposition::sample(std::string_view name, const Labels &labels, double value)
{
	out_ += name;
	if (!labels.empty()) {
		out_ += '{';
		bool first = true;
		for (const auto &[k, v] : labels) {
			if (!first)
				out_ += ',';
			first = false;
			out_ += k;
			out_ += "=\"";
			out_ += escape_label(v);
			out_ += '"';
		}
		out_ += '}';
	}
	out_ += ' ';
	out_ += format_value(value);
	out_ += '\n';
}

Histogram::Histogram(std::vector<double> bounds)
	: bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0)
{
}

void Histogram::observe(double v)
{
	size_t i = 0;
	while (i < bounds_.size() && v > bounds_[i])
		i++;
	counts_[i]++;
	sum_ += v;
	count_++;
}

void Histogram::render(Exposition &x, std::string_view name, const Labels &labels) const
{
	const std::string n(name);
	uint64_t cum = 0;
	for (size_t i = 0; i <= bounds_.size(); i++) {
		cum += counts_[i];
		Labels l = labels;
		l.emplace_back("le", i < bounds_.size() ? format_value(bounds_[i]) : "+Inf");
		x.sample(n + "_bucket", l, double(cum));
	}
	x.sample(n + "_sum", labels, sum_);
	x.sample(n + "_count", labels, double(count_));
}

std::vector<double> walk_seconds_buckets()
{
	return {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10};
}

std::string sanitize(std::string_view v)
{
	std::string o;
	for (unsigned char c : v)
		o += (c >= 0x20 && c < 0x7f) ? char(c) : '?';
	return o.empty() ? std::string("?") : o;
}

std::string LabelFolder::fold(std::string_view v)
{
	std::string s = sanitize(v);
	if (always_.count(s) || seen_.count(s))
		return s;
	if (seen_.size() < limit_) {
		seen_.insert(s);
		return s;
	}
	folded_++;
	return "other";
}

} // namespace ptwalk::prom
