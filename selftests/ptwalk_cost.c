// SPDX-License-Identifier: GPL-2.0
/*
 * Walk cost per PTE, for each walker (clear_refs, smaps, smaps_rollup,
 * pagemap read, PAGEMAP_SCAN) over 4 KiB anonymous memory of 5 sizes
 * spanning 16x (default 64 MiB .. 1 GiB; PTWALK_MIN_MB / --min-mb, --long):
 *  - <walker>.linear: least-squares fit (ptwalk_fit.c, the same code
 *    make qualify's cost-across-sizes fit loads) of the per-size minimum
 *    over PTWALK_REPS repetitions has R^2 >= linear_r2_min, and
 *    cost(16N)/cost(N) lies in [linear_ratio_min, linear_ratio_max];
 *    cost(N) is net of the fixed per-walk cost (the same walk of a process
 *    with a single-page region), which otherwise dominates small sizes in
 *    a TCG guest;
 *  - <walker>.budget: whole-walk time / PTEs at the largest size (fixed
 *    cost included, so conservative) <= <walker>_ns_per_pte.
 * Cost is the CPU time of the walking thread (CLOCK_THREAD_CPUTIME_ID),
 * minimum over reps; a check fails only if all PTWALK_ATTEMPTS (4)
 * independent measurements fail it.
 * Budgets: --budget FILE, PTWALK_BUDGET, budgets/<host class>.budget,
 * budgets/default.budget (see README.md).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptwalk_util.h"

#define MAX_ATTEMPTS 5

static struct ptw_opts opts;
static struct ptw_budget budget;
static struct ptw_cost_point *pts[MAX_ATTEMPTS];
static unsigned int attempts = 4, measured;
static bool measure_failed, have_scan;
static char measure_why[512], scan_why[256];

/*
 * Run measurement attempt number `a` (0-based) if not done yet. Timing on
 * a shared 2-vCPU VM is noisy even in CPU time (the other tenant trashes
 * the caches), so a check is only failed when all PTWALK_ATTEMPTS
 * (default 3) independent measurements fail it; attempts after the first
 * are only made when some check needs them.
 */
static bool measure(unsigned int a, char *why, size_t len)
{
	unsigned int k, w;

	while (!measure_failed && measured <= a) {
		struct ptw_cost_point *p = pts[measured];

		ptw_diag("measurement attempt %u of %u", measured + 1, attempts);
		if (ptw_measure_costs(&opts, p, have_scan, measure_why,
				      sizeof(measure_why))) {
			measure_failed = true;
			break;
		}
		for (k = 0; k < opts.points; k++)
			for (w = 0; w < PW_NR; w++) {
				if (!p[k].ns[w])
					continue;
				ptw_diag("%-12s %8zu PTEs: min %10.3f ms "
					 "(%6.2f ns/PTE) median %10.3f ms",
					 ptw_walker_names[w], p[k].ptes,
					 p[k].ns[w] / 1e6,
					 (double)p[k].ns[w] / p[k].ptes,
					 p[k].med[w] / 1e6);
			}
		measured++;
	}
	if (measure_failed)
		snprintf(why, len, "measurement failed: %s", measure_why);
	return !measure_failed;
}

static bool linear_once(int w, const struct ptw_cost_point *p, char *why,
			size_t len)
{
	double x[16], y[16], ratio;
	struct ptw_fit f;
	unsigned int k, n = opts.points;
	const double *bv = budget.v;

	/* cost of walking N PTEs = walk time minus the fixed per-walk cost
	 * (same walk of a process with a 1-page region) */
	for (k = 0; k < n; k++) {
		x[k] = p[k].ptes;
		y[k] = p[k].ns[w] > p[k].base[w] ? p[k].ns[w] - p[k].base[w] : 1;
	}
	if (ptw_fit_linear(x, y, n, &f)) {
		snprintf(why, len, "%s: no fit: %u sizes", ptw_walker_names[w], n);
		return false;
	}
	ratio = y[n - 1] / y[0];
	ptw_diag("%s: fixed %.1f us per walk; net fit %.3f ns/PTE + %.1f us, "
		 "R^2 %.4f; cost(%zu)/cost(%zu) = %.2f for %.0fx the PTEs",
		 ptw_walker_names[w], p[0].base[w] / 1e3, f.b, f.a / 1e3, f.r2,
		 p[n - 1].ptes, p[0].ptes, ratio, x[n - 1] / x[0]);
	if (!(f.r2 >= bv[PB_LINEAR_R2_MIN])) {
		snprintf(why, len, "%s not linear in PTEs: R^2 %.4f < %.2f "
			 "(fit %.3f ns/PTE over %zu..%zu PTEs)",
			 ptw_walker_names[w], f.r2, bv[PB_LINEAR_R2_MIN], f.b,
			 p[0].ptes, p[n - 1].ptes);
		return false;
	}
	if (ratio < bv[PB_LINEAR_RATIO_MIN] || ratio > bv[PB_LINEAR_RATIO_MAX]) {
		snprintf(why, len, "%s: cost(%zu PTEs)/cost(%zu PTEs) = %.2f "
			 "outside [%.0f, %.0f]", ptw_walker_names[w],
			 p[n - 1].ptes, p[0].ptes, ratio,
			 bv[PB_LINEAR_RATIO_MIN], bv[PB_LINEAR_RATIO_MAX]);
		return false;
	}
	return true;
}

static bool budget_once(int w, const struct ptw_cost_point *p, char *why,
			size_t len)
{
	unsigned int n = opts.points;
	enum ptw_budget_key key = ptw_walker_budget[w];
	double nspp = (double)p[n - 1].ns[w] / p[n - 1].ptes;
	double lim = budget.v[key];

	ptw_diag("%s: %.2f ns/PTE at %zu PTEs, budget %s = %g (%s)",
		 ptw_walker_names[w], nspp, p[n - 1].ptes,
		 ptw_budget_keys[key], lim, budget.source);
	if (nspp > lim) {
		snprintf(why, len, "%s: %.2f ns/PTE > budget %g ns/PTE "
			 "(%s in %s) at %zu PTEs (%.3f ms per walk)",
			 ptw_walker_names[w], nspp, lim, ptw_budget_keys[key],
			 budget.source, p[n - 1].ptes, p[n - 1].ns[w] / 1e6);
		return false;
	}
	return true;
}

static enum ptw_result check(const struct ptw_case *c, char *why, size_t len,
			     bool (*once)(int, const struct ptw_cost_point *,
					  char *, size_t))
{
	unsigned int a;

	if (c->arg == PW_PAGEMAP_SCAN && !have_scan) {
		snprintf(why, len, "%s", scan_why);
		return PTW_SKIP;
	}
	for (a = 0; a < attempts; a++) {
		if (!measure(a, why, len))
			return PTW_FAIL;
		if (once(c->arg, pts[a], why, len))
			return PTW_PASS;
		if (a + 1 < attempts)
			ptw_diag("attempt %u: %s", a + 1, why);
	}
	return PTW_FAIL;
}

static enum ptw_result t_linear(const struct ptw_case *c, char *why,
				size_t len)
{
	return check(c, why, len, linear_once);
}

static enum ptw_result t_budget(const struct ptw_case *c, char *why,
				size_t len)
{
	return check(c, why, len, budget_once);
}

int main(int argc, char **argv)
{
	struct ptw_case cases[2 * PW_NR + 1];
	unsigned int n = 0;
	int w;

	ptw_parse_opts(argc, argv, &opts);
	if (opts.points > 16)
		opts.points = 16;
	if (getenv("PTWALK_ATTEMPTS") && atoi(getenv("PTWALK_ATTEMPTS")) > 0)
		attempts = atoi(getenv("PTWALK_ATTEMPTS"));
	if (attempts > MAX_ATTEMPTS)
		attempts = MAX_ATTEMPTS;
	for (w = 0; w < MAX_ATTEMPTS; w++) {
		pts[w] = calloc(opts.points, sizeof(*pts[w]));
		if (!pts[w])
			return KSFT_FAIL;
	}
	have_scan = ptw_pagemap_scan_usable(scan_why, sizeof(scan_why));
	ptw_budget_load_case(&budget, opts.budget, cases, &n);
	for (w = 0; w < PW_NR; w++) {
		cases[n] = (struct ptw_case){ .fn = t_linear, .arg = w };
		snprintf(cases[n++].name, sizeof(cases[0].name), "%s.linear",
			 ptw_walker_names[w]);
		cases[n] = (struct ptw_case){ .fn = t_budget, .arg = w };
		snprintf(cases[n++].name, sizeof(cases[0].name), "%s.budget",
			 ptw_walker_names[w]);
	}
	ptw_diag("sizes %zu..%zu MiB (%u points), %u reps x %u replicas, up to "
		 "%u attempts, 4 KiB anon", opts.min_mb, ptw_max_mb(&opts),
		 opts.points, opts.reps, opts.replicas, attempts);
	ptw_diag("cost clock: %s", ptw_cost_clock());
	if (ptw_cache_flush_init())
		ptw_diag("cold caches: %zu KiB read through before each timed "
			 "walk (PTWALK_FLUSH_MB)", ptw_cache_flush_init() >> 10);
	return ptw_run_cases(cases, n);
}
