// SPDX-License-Identifier: GPL-2.0
// The aliasing bias of a run (results/SCHEMA.md, "alias_calibration"),
// typed: what `ptwalk run --calibrate-size` measured at each size
// (commands/src/alias_bias.cpp), and the verdict per walk kind over the
// sizes: a correction only where the sizes agree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptwalk/json.hpp"
#include "ptwalk/walk_kinds.hpp"

namespace ptwalk {

// Sizes agree when (largest - smallest) / smallest <= this.
constexpr double kAliasBiasTolerance = 0.15;

// A figure per walk kind, in the order the kinds were met.
using PerKind = std::vector<std::pair<WalkKind, double>>;

// One walk kind at one size: distinct pages against aliased ones.
struct KindCalibration {
	WalkKind kind = WalkKind::clear_refs;
	double distinct_ns_per_pte = 0, aliased_ns_per_pte = 0, cost_ratio = 0;
	uint64_t distinct_walk_max_ns = 0, aliased_walk_max_ns = 0;
	uint64_t distinct_stall_max_ns = 0, aliased_stall_max_ns = 0;
	uint64_t distinct_stall_ops = 0, aliased_stall_ops = 0;
	uint64_t predicted_distinct_stall_ns = 0, predicted_aliased_stall_ns = 0;
	std::optional<double> stall_model_ratio;   // the victim saw the distinct side
	std::optional<double> aliased_model_ratio; // ... and the aliased side
};

struct SizeCalibration {
	uint64_t size_bytes = 0, aliased_physical_bytes = 0, aliased_vmas = 0;
	std::vector<KindCalibration> kinds;
};

// One walk kind over the sizes.
struct KindVerdict {
	WalkKind kind = WalkKind::clear_refs;
	uint64_t sizes = 0;
	std::pair<double, double> cost_ratio_range;
	std::optional<double> cost_spread; // null when not finite
	std::optional<std::pair<double, double>> stall_model_ratio_range;
	std::optional<double> stall_spread;
	std::pair<double, double> factor_range;
	bool cost_corrected = false, stall_corrected = false;
	std::optional<std::string> why;
};

struct AliasCalibration {
	std::optional<std::string> skipped; // not calibrated: why, and nothing else
	// the largest size, with its medians per kind: what the walks' raw
	// figures compare with
	uint64_t size_bytes = 0;
	int reps = 0;
	uint64_t aliased_physical_bytes = 0;
	PerKind distinct_ns_per_pte, aliased_ns_per_pte;
	std::vector<SizeCalibration> sizes;
	// judge_alias_bias()'s verdict
	double tolerance = 0;
	std::vector<KindVerdict> kinds;
	PerKind ratio, stall_ratio; // kinds whose sizes agree

	std::optional<double> ratio_of(WalkKind kind) const;
	std::optional<double> stall_ratio_of(WalkKind kind) const;
	const KindVerdict *verdict(WalkKind kind) const;
};

// The per-kind verdict from the per-size figures (cal.sizes): kinds
// (ranges, spreads, corrected or not and why), ratio (cost, kinds whose
// sizes agree) and stall_ratio (stall model, kinds whose sizes agree).
void judge_alias_bias(AliasCalibration &cal, double tolerance = kAliasBiasTolerance);

void to_json(Json::Value &j, const AliasCalibration &c);

} // namespace ptwalk
