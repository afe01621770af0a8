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
 * A third child maps one huge page only: its walk is the fixed cost of a
 * walk (the syscall, the rest of the process's VMAs), which is subtracted
 * from both before the per-byte ratio is taken. Under qemu TCG that fixed
 * cost is a third of a 512 MiB THP walk and alone pulled the raw ratio to
 * 18x; both ratios are printed, the net one is judged.
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
static struct ptw_target t4k, thp, base;
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
			     sizeof(setup_why)) ||
	    ptw_target_spawn(&base, PTW_THP, ptw_pmd_size, setup_why,
			     sizeof(setup_why))) {
		setup_res = PTW_FAIL;
		goto out;
	}
	ptw_diag("cost clock: %s", ptw_cost_clock());
	ptw_diag("%zu MiB: 4 KiB child AnonHugePages %llu kB, THP child "
		 "AnonHugePages %llu kB, fixed-cost child %llu kB", size >> 20,
		 (unsigned long long)t4k.anon_huge_kb,
		 (unsigned long long)thp.anon_huge_kb,
		 (unsigned long long)base.anon_huge_kb);
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
	uint64_t min4k = UINT64_MAX, minthp = UINT64_MAX, minbase = UINT64_MAX;
	uint64_t v, fixed = 0;
	double raw, ratio, lim = budget.v[PB_THP_MIN_RATIO];
	unsigned int i;

	if (res != PTW_PASS)
		return res;
	ptw_walk_target(c->arg, &t4k);	/* warm-up */
	ptw_walk_target(c->arg, &thp);
	ptw_walk_target(c->arg, &base);
	for (i = 0; i < opts.reps; i++) {
		v = ptw_walk_target(c->arg, &t4k);
		if (v && v < min4k)
			min4k = v;
		v = ptw_walk_target(c->arg, &thp);
		if (v && v < minthp)
			minthp = v;
		v = ptw_walk_target(c->arg, &base);
		if (v && v < minbase)
			minbase = v;
	}
	if (min4k == UINT64_MAX || minthp == UINT64_MAX ||
	    minbase == UINT64_MAX) {
		snprintf(why, len, "%s walk failed", ptw_walker_names[c->arg]);
		return PTW_FAIL;
	}
	/*
	 * The fixed cost: the one-huge-page child's walk, when its page is
	 * huge (else it also walked 512 PTEs and would overstate it).
	 */
	if (base.anon_huge_kb * 1024 >= ptw_pmd_size)
		fixed = minbase;
	raw = (double)min4k / minthp;
	if (min4k <= fixed) {
		snprintf(why, len, "%s: the 4 KiB walk (%.3f ms) is no longer "
			 "than a one-huge-page walk (%.3f ms)",
			 ptw_walker_names[c->arg], min4k / 1e6, fixed / 1e6);
		return PTW_FAIL;
	}
	/* a THP walk within the fixed cost is cheaper than any ratio */
	ratio = minthp > fixed ? (double)(min4k - fixed) / (minthp - fixed) : 1e9;
	ptw_diag("%s over %zu MiB: 4 KiB %.3f ms (%zu PTEs), THP %.3f ms "
		 "(%zu PMDs), fixed %.3f ms per walk (one huge page): "
		 "%.1fx cheaper per byte net of it (raw %.1fx), need >= %.1fx",
		 ptw_walker_names[c->arg], t4k.size >> 20, min4k / 1e6,
		 t4k.size / ptw_page_size, minthp / 1e6,
		 thp.size / ptw_pmd_size, fixed / 1e6, ratio, raw, lim);
	if (ratio < lim) {
		snprintf(why, len, "%s: THP walk only %.1fx cheaper per byte "
			 "than 4 KiB net of the fixed %.3f ms (raw %.1fx: %.3f vs "
			 "%.3f ms over %zu MiB = %zu PTEs); %s = %.1f (%s)",
			 ptw_walker_names[c->arg], ratio, fixed / 1e6, raw,
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
	ptw_target_kill(&base);
	return rc;
}
