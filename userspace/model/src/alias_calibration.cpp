// SPDX-License-Identifier: GPL-2.0
// The verdict of an aliasing calibration, and its JSON (alias_calibration.hpp).
#include "ptwalk/alias_calibration.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "ptwalk/scenario.hpp"

namespace ptwalk {

namespace {

std::optional<double> of(const PerKind &p, WalkKind kind)
{
	for (const auto &[k, v] : p)
		if (k == kind)
			return v;
	return std::nullopt;
}

std::string pct(double x)
{
	char b[32];
	snprintf(b, sizeof(b), "%.0f%%", x * 100);
	return b;
}

std::string fmt2(double x)
{
	char b[32];
	snprintf(b, sizeof(b), "%.2f", x);
	return b;
}

// A kind's cost ratio and stall model ratio (NaN: no stall seen) per size.
using Ratios = std::vector<std::pair<double, double>>;

struct Judged {
	KindVerdict verdict;
	std::optional<double> ratio, stall_ratio;
};

Judged judge_kind(WalkKind kind, const Ratios &v, double tol)
{
	double clo = INFINITY, chi = -INFINITY, slo = INFINITY, shi = -INFINITY;
	double flo = INFINITY, fhi = -INFINITY, csum = 0, ssum = 0;
	bool stall_ok = true;
	for (auto &[cost, stall] : v) {
		clo = std::min(clo, cost);
		chi = std::max(chi, cost);
		csum += cost;
		if (std::isnan(stall) || stall <= 0) {
			stall_ok = false;
			continue;
		}
		slo = std::min(slo, stall);
		shi = std::max(shi, stall);
		ssum += stall;
		flo = std::min(flo, cost * stall);
		fhi = std::max(fhi, cost * stall);
	}
	Judged out;
	KindVerdict &e = out.verdict;
	e.kind = kind;
	e.sizes = v.size();
	e.cost_ratio_range = {clo, chi};
	const double cspread = clo > 0 ? (chi - clo) / clo : INFINITY;
	if (std::isfinite(cspread))
		e.cost_spread = cspread;
	const bool cost_ok = v.size() >= 2 && cspread <= tol;
	std::string why;
	if (v.size() < 2)
		why = "one size only: agreement between sizes cannot be checked";
	else if (!cost_ok)
		why = "cost ratio differs between sizes by " + pct(cspread) + " (" + fmt2(clo) +
		      " to " + fmt2(chi) + "; more than " + pct(tol) + ")";
	double sspread = INFINITY;
	if (stall_ok && slo > 0) {
		sspread = (shi - slo) / slo;
		e.stall_model_ratio_range = {slo, shi};
		e.stall_spread = sspread;
		e.factor_range = {flo, fhi};
	} else {
		e.factor_range = {clo, chi};
		why += (why.empty() ? "" : "; ") +
		       std::string("no stall seen by the mmap victim at some size");
	}
	const bool s_ok = stall_ok && v.size() >= 2 && sspread <= tol;
	if (stall_ok && v.size() >= 2 && !s_ok)
		why += (why.empty() ? "" : "; ") +
		       std::string("stall vs model differs between sizes by ") + pct(sspread) +
		       " (" + fmt2(slo) + " to " + fmt2(shi) + "; more than " + pct(tol) + ")";
	e.cost_corrected = cost_ok;
	e.stall_corrected = cost_ok && s_ok;
	if (!why.empty())
		e.why = why;
	if (cost_ok)
		out.ratio = csum / double(v.size());
	if (cost_ok && s_ok)
		out.stall_ratio = ssum / double(v.size());
	return out;
}

} // namespace

std::optional<double> AliasCalibration::ratio_of(WalkKind kind) const
{
	return of(ratio, kind);
}

std::optional<double> AliasCalibration::stall_ratio_of(WalkKind kind) const
{
	return of(stall_ratio, kind);
}

const KindVerdict *AliasCalibration::verdict(WalkKind kind) const
{
	for (const auto &k : kinds)
		if (k.kind == kind)
			return &k;
	return nullptr;
}

void judge_alias_bias(AliasCalibration &cal, double tol)
{
	std::map<WalkKind, Ratios> per;
	std::vector<WalkKind> order;
	for (const auto &s : cal.sizes)
		for (const WalkKindInfo &ki : kWalkKindInfo)
			for (const WalkKind k = ki.id; const auto &e : s.kinds) {
				if (e.kind != k)
					continue;
				if (!per.count(k))
					order.push_back(k);
				per[k].push_back({e.cost_ratio, e.stall_model_ratio.value_or(NAN)});
				break;
			}
	cal.tolerance = tol;
	cal.kinds.clear();
	cal.ratio.clear();
	cal.stall_ratio.clear();
	for (const auto &k : order) {
		Judged j = judge_kind(k, per[k], tol);
		cal.kinds.push_back(std::move(j.verdict));
		if (j.ratio)
			cal.ratio.push_back({k, *j.ratio});
		if (j.stall_ratio)
			cal.stall_ratio.push_back({k, *j.stall_ratio});
	}
}

namespace {

Json::Value per_kind(const PerKind &p)
{
	Json::Value j = Json::Value::object();
	for (const auto &[k, v] : p)
		j[name(k)] = v;
	return j;
}

void to_json(Json::Value &j, const KindCalibration &e)
{
	j = Json::Value::object();
	j["distinct_ns_per_pte"] = e.distinct_ns_per_pte;
	j["aliased_ns_per_pte"] = e.aliased_ns_per_pte;
	j["cost_ratio"] = e.cost_ratio;
	j["distinct_walk_max_ns"] = e.distinct_walk_max_ns;
	j["aliased_walk_max_ns"] = e.aliased_walk_max_ns;
	j["distinct_stall_max_ns"] = e.distinct_stall_max_ns;
	j["aliased_stall_max_ns"] = e.aliased_stall_max_ns;
	j["distinct_stall_ops"] = e.distinct_stall_ops;
	j["aliased_stall_ops"] = e.aliased_stall_ops;
	j["predicted_distinct_stall_ns"] = e.predicted_distinct_stall_ns;
	j["predicted_aliased_stall_ns"] = e.predicted_aliased_stall_ns;
	put_optional(j, "stall_model_ratio", e.stall_model_ratio);
	put_optional(j, "aliased_model_ratio", e.aliased_model_ratio);
}

void to_json(Json::Value &j, const SizeCalibration &s)
{
	j = Json::Value::object();
	j["size_bytes"] = s.size_bytes;
	j["aliased_physical_bytes"] = s.aliased_physical_bytes;
	j["aliased_vmas"] = s.aliased_vmas;
	Json::Value kinds = Json::Value::object();
	for (const auto &k : s.kinds)
		to_json(kinds[name(k.kind)], k);
	j["kinds"] = std::move(kinds);
}

void to_json(Json::Value &j, const KindVerdict &e)
{
	j = Json::Value::object();
	j["sizes"] = e.sizes;
	j["cost_ratio_range"] = e.cost_ratio_range;
	j["cost_spread"] = e.cost_spread ? Json::Value(*e.cost_spread) : Json::Value(nullptr);
	put_optional(j, "stall_model_ratio_range", e.stall_model_ratio_range);
	put_optional(j, "stall_spread", e.stall_spread);
	j["factor_range"] = e.factor_range;
	j["cost_corrected"] = e.cost_corrected;
	j["stall_corrected"] = e.stall_corrected;
	put_optional(j, "why", e.why);
}

} // namespace

void to_json(Json::Value &j, const AliasCalibration &c)
{
	j = Json::Value::object();
	if (c.skipped) {
		j["skipped"] = *c.skipped;
		return;
	}
	j["size_bytes"] = c.size_bytes;
	j["reps"] = c.reps;
	j["aliased_physical_bytes"] = c.aliased_physical_bytes;
	j["distinct_ns_per_pte"] = per_kind(c.distinct_ns_per_pte);
	j["aliased_ns_per_pte"] = per_kind(c.aliased_ns_per_pte);
	Json::Value sizes = Json::Value::array();
	for (const auto &s : c.sizes)
		to_json(sizes.emplace_back(), s);
	j["sizes"] = std::move(sizes);
	j["tolerance"] = c.tolerance;
	Json::Value kinds = Json::Value::object();
	for (const auto &k : c.kinds)
		to_json(kinds[name(k.kind)], k);
	j["kinds"] = std::move(kinds);
	j["ratio"] = per_kind(c.ratio);
	j["stall_ratio"] = per_kind(c.stall_ratio);
}

} // namespace ptwalk
