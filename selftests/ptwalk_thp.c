// SPDX-License-Identifier: GPL-2.0
/*
 * THP walks are cheap: walking a PMD-mapped THP region costs at least
 * thp_min_ratio (default 20) times less per mapped byte than walking the
 * same size mapped with 4 KiB PTEs (512 PTEs per PMD; 50-80x measured on
 * a 6.18 VM at 1 GiB). Two children hold the same size (PTWALK_THP_MB,
 * default the largest cost size but at least 256 MiB, since the fixed
 * per-walk cost of the rest of the process must stay small next to the
 * THP walk) as 4 KiB pages (MADV_NOHUGEPAGE) and as THP
 * (MADV_HUGEPAGE); the walk CPU time is the minimum over PTWALK_REPS.
 * SKIPs when THP is unavailable or the pages did not become huge
 * (AnonHugePages < 90% of the region). Changes no THP setting.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptwalk_util.h"

static struct ptw_opts opts;
static struct ptw_budget budget;
static struct ptw_target t4k, thp;
static bool ready;
static enum ptw_result setup_res = PTW_PASS;
static char setup_why[512];

static enum ptw_result setup(char *why, size_t len)
{
	size_t size = opts.thp_mb << 20;

	if (ready)
		goto out;
	ready = true;
	if (!ptw_thp_usable(setup_why, sizeof(setup_why))) {
		setup_res = PTW_SKIP;
		goto out;
	}
	if (size < 16 * ptw_pmd_size) {
		snprintf(setup_why, sizeof(setup_why), "region %zu MiB too "
			 "small for a THP ratio (need >= 16 huge pages)",
			 size >> 20);
		setup_res = PTW_SKIP;
		goto out;
	}
	if (ptw_target_spawn(&t4k, PTW_ANON, size, setup_why,
			     sizeof(setup_why)) ||
	    ptw_target_spawn(&thp, PTW_THP, size, setup_why,
			     sizeof(setup_why))) {
		setup_res = PTW_FAIL;
		goto out;
	}
	ptw_diag("cost clock: %s", ptw_cost_clock());
	ptw_diag("%zu MiB: 4 KiB child AnonHugePages %llu kB, THP child "
		 "AnonHugePages %llu kB", size >> 20,
		 (unsigned long long)t4k.anon_huge_kb,
		 (unsigned long long)thp.anon_huge_kb);
	if (t4k.anon_huge_kb) {
		snprintf(setup_why, sizeof(setup_why), "4 KiB region got huge "
			 "pages despite MADV_NOHUGEPAGE");
		setup_res = PTW_FAIL;
	} else if (thp.anon_huge_kb * 1024 < size / 10 * 9) {
		snprintf(setup_why, sizeof(setup_why), "pages did not become "
			 "huge (AnonHugePages %llu of %zu kB)",
			 (unsigned long long)thp.anon_huge_kb, size >> 10);
		setup_res = PTW_SKIP;
	}
out:
	if (setup_res != PTW_PASS)
		snprintf(why, len, "%s", setup_why);
	return setup_res;
}

static enum ptw_result t_ratio(const struct ptw_case *c, char *why,
			       size_t len)
{
	enum ptw_result res = setup(why, len);
	uint64_t min4k = UINT64_MAX, minthp = UINT64_MAX, v;
	double ratio, lim = budget.v[PB_THP_MIN_RATIO];
	unsigned int i;

	if (res != PTW_PASS)
		return res;
	ptw_walk_target(c->arg, &t4k);	/* warm-up */
	ptw_walk_target(c->arg, &thp);
	for (i = 0; i < opts.reps; i++) {
		v = ptw_walk_target(c->arg, &t4k);
		if (v && v < min4k)
			min4k = v;
		v = ptw_walk_target(c->arg, &thp);
		if (v && v < minthp)
			minthp = v;
	}
	if (min4k == UINT64_MAX || minthp == UINT64_MAX) {
		snprintf(why, len, "%s walk failed", ptw_walker_names[c->arg]);
		return PTW_FAIL;
	}
	ratio = (double)min4k / minthp;
	ptw_diag("%s over %zu MiB: 4 KiB %.3f ms (%zu PTEs), THP %.3f ms "
		 "(%zu PMDs): %.1fx cheaper per byte, need >= %.1fx",
		 ptw_walker_names[c->arg], t4k.size >> 20, min4k / 1e6,
		 t4k.size / ptw_page_size, minthp / 1e6,
		 thp.size / ptw_pmd_size, ratio, lim);
	if (ratio < lim) {
		snprintf(why, len, "%s: THP walk only %.1fx cheaper per byte "
			 "than 4 KiB (%.3f vs %.3f ms over %zu MiB = %zu PTEs); "
			 "%s = %.1f (%s)", ptw_walker_names[c->arg], ratio,
			 minthp / 1e6, min4k / 1e6, t4k.size >> 20,
			 t4k.size / ptw_page_size,
			 ptw_budget_keys[PB_THP_MIN_RATIO], lim, budget.source);
		return PTW_FAIL;
	}
	return PTW_PASS;
}

int main(int argc, char **argv)
{
	struct ptw_case cases[3];
	unsigned int n = 0;
	int rc;

	ptw_parse_opts(argc, argv, &opts);
	ptw_budget_load_case(&budget, opts.budget, cases, &n);
	cases[n] = (struct ptw_case){ .fn = t_ratio, .arg = PW_CLEAR_REFS };
	snprintf(cases[n++].name, sizeof(cases[0].name), "clear_refs.thp_vs_4k");
	cases[n] = (struct ptw_case){ .fn = t_ratio, .arg = PW_SMAPS_ROLLUP };
	snprintf(cases[n++].name, sizeof(cases[0].name),
		 "smaps_rollup.thp_vs_4k");
	rc = ptw_run_cases(cases, n);
	ptw_target_kill(&t4k);
	ptw_target_kill(&thp);
	return rc;
}
