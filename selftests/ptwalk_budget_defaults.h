/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The selftests' budget keys and built-in defaults,
 * generated from results/budgets/default.json by scripts/gen_budgets.py: edit that.
 */
#ifndef PTWALK_BUDGET_DEFAULTS_H
#define PTWALK_BUDGET_DEFAULTS_H

/* X(enum name, key in a .budget file, default) */
#define PTW_BUDGET_KEYS(X) \
	X(PB_CLEAR_REFS, "clear_refs_ns_per_pte", 4000) \
	X(PB_SMAPS, "smaps_ns_per_pte", 4000) \
	X(PB_SMAPS_ROLLUP, "smaps_rollup_ns_per_pte", 4000) \
	X(PB_PAGEMAP, "pagemap_ns_per_pte", 2000) \
	X(PB_PAGEMAP_SCAN, "pagemap_scan_ns_per_pte", 2000) \
	X(PB_STALL_FACTOR, "stall_factor", 1.2) \
	X(PB_STALL_SLACK_NS, "stall_slack_ns", 50000000) \
	X(PB_THP_MIN_RATIO, "thp_min_ratio", 20) \
	X(PB_LINEAR_R2_MIN, "linear_r2_min", 0.9) \
	X(PB_LINEAR_RATIO_MIN, "linear_ratio_min", 8) \
	X(PB_LINEAR_RATIO_MAX, "linear_ratio_max", 32)

#endif
