// SPDX-License-Identifier: GPL-2.0
/*
 * Walk cost per PTE, for each walker (clear_refs, smaps, smaps_rollup,
 * pagemap read, PAGEMAP_SCAN) over 4 KiB anonymous memory of 5 sizes
 * spanning 16x (default 64 MiB .. 1 GiB; PTWALK_MIN_MB / --min-mb, --long):
 * Each walker is a variant (clear_refs, smaps, smaps_rollup, pagemap,
 * pagemap_scan) of the fixture cost:
 *  - cost.<walker>.linear: least-squares fit (ptwalk_fit.c, the same code
 *    make qualify's cost-across-sizes fit loads) of the per-size minimum
 *    over PTWALK_REPS repetitions has R^2 >= linear_r2_min, and
 *    cost(16N)/cost(N) lies in [linear_ratio_min, linear_ratio_max];
 *    cost(N) is net of the fixed per-walk cost (the same walk of a process
 *    with a single-page region), which otherwise dominates small sizes in
 *    a TCG guest;
 *  - cost.<walker>.budget: whole-walk time / PTEs at the largest size (fixed
 *    cost included, so conservative) <= <walker>_ns_per_pte.
 * Cost is the CPU time of the walking thread (CLOCK_THREAD_CPUTIME_ID),
 * minimum over reps; a check fails only if all PTWALK_ATTEMPTS (4)
 * independent measurements fail it.
 * Budgets: --budget FILE, PTWALK_BUDGET, budgets/<host class>.budget,
 * budgets/default.budget (see README.md); budget_file checks the file.
 * Every test runs in its own child; the measurements are made once, by
 * the first test that needs them, into memory shared with the later
 * tests (a fresh measurement per test would multiply the run time by ten
 * and compare the checks on different data).
 */
#include <sys/mman.h>

#include "ptwalk_test.h"

#define MAX_ATTEMPTS	5
#define MAX_POINTS	16

/*
 * The measurements, shared by all tests of this program (MAP_SHARED,
 * mapped before the harness forks the first test): attempt a is made by
 * the first test that needs it, the later tests reuse it.
 */
struct cost_cache {
	unsigned int measured;		/* attempts made */
	bool failed;			/* a measurement failed: why */
	char why[512];
	struct ptw_cost_point pts[MAX_ATTEMPTS][MAX_POINTS];
};

static struct cost_cache *cache;

static void __attribute__((constructor)) cost_cache_map(void)
{
	cache = mmap(NULL, sizeof(*cache), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (cache == MAP_FAILED)
		cache = NULL;
}

FIXTURE(cost) {
	struct ptw_budget budget;
	unsigned int attempts;
	bool have_scan;
	char scan_why[256];
};

FIXTURE_VARIANT(cost) {
	int walker;		/* enum ptw_walker */
};

FIXTURE_VARIANT_ADD(cost, clear_refs) { .walker = PW_CLEAR_REFS };
FIXTURE_VARIANT_ADD(cost, smaps) { .walker = PW_SMAPS };
FIXTURE_VARIANT_ADD(cost, smaps_rollup) { .walker = PW_SMAPS_ROLLUP };
FIXTURE_VARIANT_ADD(cost, pagemap) { .walker = PW_PAGEMAP };
FIXTURE_VARIANT_ADD(cost, pagemap_scan) { .walker = PW_PAGEMAP_SCAN };

FIXTURE_SETUP(cost)
{
	ASSERT_NE(NULL, cache) TH_LOG("mmap of the shared measurements failed");
	if (ptw_opts.points > MAX_POINTS)
		ptw_opts.points = MAX_POINTS;
	self->attempts = ptw_attempts(4);
	if (self->attempts > MAX_ATTEMPTS)
		self->attempts = MAX_ATTEMPTS;
	self->have_scan = ptw_pagemap_scan_usable(self->scan_why,
						  sizeof(self->scan_why));
	/* a broken file fails budget_file; here what could be read is used */
	if (ptw_budget_load(&self->budget, ptw_opts.budget))
		TH_LOG("budget file broken (see budget_file): defaults for "
		       "what could not be read");
}

FIXTURE_TEARDOWN(cost)
{
}

/*
 * Run measurement attempt number `a` (0-based) if not done yet. Timing on
 * a shared 2-vCPU VM is noisy even in CPU time (the other tenant trashes
 * the caches), so a check is only failed when all PTWALK_ATTEMPTS
 * (default 4) independent measurements fail it; attempts after the first
 * are only made when some check needs them.
 */
static bool measure(struct __test_metadata *_metadata,
		    FIXTURE_DATA(cost) *self, unsigned int a, char *why,
		    size_t len)
{
	const struct ptw_opts *o = &ptw_opts;
	unsigned int k, w;

	while (!cache->failed && cache->measured <= a) {
		struct ptw_cost_point *p = cache->pts[cache->measured];

		if (!cache->measured) {
			TH_LOG("sizes %zu..%zu MiB (%u points), %u reps x %u "
			       "replicas, up to %u attempts, 4 KiB anon",
			       o->min_mb, ptw_max_mb(o), o->points, o->reps,
			       o->replicas, self->attempts);
			TH_LOG("cost clock: %s", ptw_cost_clock());
			if (ptw_cache_flush_init())
				TH_LOG("cold caches: %zu KiB read through before "
				       "each timed walk (PTWALK_FLUSH_MB)",
				       ptw_cache_flush_init() >> 10);
		}
		TH_LOG("measurement attempt %u of %u", cache->measured + 1,
		       self->attempts);
		if (ptw_measure_costs(o, cache->measured, p, self->have_scan,
				      cache->why, sizeof(cache->why))) {
			cache->failed = true;
			break;
		}
		for (k = 0; k < o->points; k++)
			for (w = 0; w < PW_NR; w++) {
				if (!p[k].ns[w])
					continue;
				TH_LOG("%-12s %8zu PTEs: min %10.3f ms "
				       "(%6.2f ns/PTE) median %10.3f ms",
				       ptw_walker_names[w], p[k].ptes,
				       p[k].ns[w] / 1e6,
				       (double)p[k].ns[w] / p[k].ptes,
				       p[k].med[w] / 1e6);
			}
		cache->measured++;
	}
	if (cache->failed)
		snprintf(why, len, "measurement failed: %s", cache->why);
	return !cache->failed;
}

static bool linear_once(struct __test_metadata *_metadata,
			const struct ptw_budget *budget, int w,
			const struct ptw_cost_point *p, char *why, size_t len)
{
	double x[MAX_POINTS], y[MAX_POINTS], ratio;
	struct ptw_fit f;
	unsigned int k, n = ptw_opts.points;
	const double *bv = budget->v;

	/* cost of walking N PTEs = walk time minus the fixed per-walk cost
	 * (same walk of a process with a 1-page region)
	 */
	for (k = 0; k < n; k++) {
		x[k] = p[k].ptes;
		y[k] = p[k].ns[w] > p[k].base[w] ? p[k].ns[w] - p[k].base[w] : 1;
	}
	if (ptw_fit_linear(x, y, n, &f)) {
		snprintf(why, len, "%s: no fit: %u sizes", ptw_walker_names[w], n);
		return false;
	}
	ratio = y[n - 1] / y[0];
	TH_LOG("%s: fixed %.1f us per walk; net fit %.3f ns/PTE + %.1f us, "
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

static bool budget_once(struct __test_metadata *_metadata,
			const struct ptw_budget *budget, int w,
			const struct ptw_cost_point *p, char *why, size_t len)
{
	unsigned int n = ptw_opts.points;
	enum ptw_budget_key key = ptw_walker_budget[w];
	double nspp = (double)p[n - 1].ns[w] / p[n - 1].ptes;
	double lim = budget->v[key];

	TH_LOG("%s: %.2f ns/PTE at %zu PTEs, budget %s = %g (%s)",
	       ptw_walker_names[w], nspp, p[n - 1].ptes,
	       ptw_budget_keys[key], lim, budget->source);
	if (nspp > lim) {
		snprintf(why, len, "%s: %.2f ns/PTE > budget %g ns/PTE "
			 "(%s in %s) at %zu PTEs (%.3f ms per walk)",
			 ptw_walker_names[w], nspp, lim, ptw_budget_keys[key],
			 budget->source, p[n - 1].ptes, p[n - 1].ns[w] / 1e6);
		return false;
	}
	return true;
}

typedef bool (*check_fn)(struct __test_metadata *_metadata,
			 const struct ptw_budget *budget, int w,
			 const struct ptw_cost_point *p, char *why, size_t len);

/* passes when one of the attempts passes `once`; the last reason fails it */
static void check(struct __test_metadata *_metadata, FIXTURE_DATA(cost) *self,
		  int w, check_fn once)
{
	char why[1024] = "";
	unsigned int a;
	bool ok = false;

	if (w == PW_PAGEMAP_SCAN && !self->have_scan)
		SKIP(return, "%s", self->scan_why);
	for (a = 0; a < self->attempts && !ok; a++) {
		ASSERT_TRUE(measure(_metadata, self, a, why, sizeof(why)))
			TH_LOG("%s", why);
		ok = once(_metadata, &self->budget, w, cache->pts[a], why,
			  sizeof(why));
		if (!ok && a + 1 < self->attempts)
			TH_LOG("attempt %u: %s", a + 1, why);
	}
	ASSERT_TRUE(ok) TH_LOG("%s", why);
}

PTW_BUDGET_FILE_TEST

TEST_F_TIMEOUT(cost, linear, PTW_TIMEOUT_LONG)
{
	check(_metadata, self, variant->walker, linear_once);
}

TEST_F_TIMEOUT(cost, budget, PTW_TIMEOUT_LONG)
{
	check(_metadata, self, variant->walker, budget_once);
}

#include "ptwalk_test_main.h"
