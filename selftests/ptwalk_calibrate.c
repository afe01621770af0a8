// SPDX-License-Identifier: GPL-2.0
/*
 * Calibrate budgets for this host class and write a budget file:
 *   ptwalk_calibrate [--out FILE] [--min-mb N] [--reps N]
 *   ptwalk_calibrate --class     (print this host's class name)
 * Without --out the file goes to stdout. Measures the same walks as
 * ptwalk_cost (3 rounds, median of the per-round minimum ns/PTE at the
 * largest size) and the worst 64 KiB mmap/munmap latency of an idle
 * process (2 s). Written budgets:
 *   <walker>_ns_per_pte = HEADROOM (3) x measured median
 *   stall_slack_ns      = max(3 x worst idle mmap/munmap, 50 ms)
 * The dimensionless bounds (stall_factor, thp_min_ratio, linear_*) are
 * the specification and copied from the defaults.
 * Not a test: it is built (TEST_GEN_FILES) but not run by run_tests.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>

#include "ptwalk_util.h"

#define HEADROOM	3.0
#define ROUNDS		3
#define SLACK_FLOOR_NS	50e6

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double idle_mmap_worst_ns(double seconds)
{
	uint64_t end = ptw_now_ns() + (uint64_t)(seconds * 1e9), worst = 0;
	struct timespec ts = { 0, 100000 };

	while (ptw_now_ns() < end) {
		uint64_t t0 = ptw_now_ns(), t1, t2;
		void *p = mmap(NULL, 64 << 10, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		t1 = ptw_now_ns();
		if (p != MAP_FAILED)
			munmap(p, 64 << 10);
		t2 = ptw_now_ns();
		if (t1 - t0 > worst)
			worst = t1 - t0;
		if (t2 - t1 > worst)
			worst = t2 - t1;
		nanosleep(&ts, NULL);
	}
	return worst;
}

int main(int argc, char **argv)
{
	struct ptw_opts o;
	struct ptw_cost_point *pts;
	double v[PB_NR_KEYS], meas[PW_NR][ROUNDS], med[PW_NR], slack;
	char why[512], cls[200], scan_why[256];
	bool have_scan;
	unsigned int r, w, n;
	struct utsname u;
	time_t now = time(NULL);
	FILE *out = stdout;
	int k;

	if (argc == 2 && !strcmp(argv[1], "--class")) {
		ptw_host_class(cls, sizeof(cls));
		printf("%s\n", cls);
		return 0;
	}
	ptw_parse_opts(argc, argv, &o);
	n = o.points;
	pts = calloc(n, sizeof(*pts));
	if (!pts)
		return 1;
	have_scan = ptw_pagemap_scan_usable(scan_why, sizeof(scan_why));
	for (r = 0; r < ROUNDS; r++) {
		if (ptw_measure_costs(&o, r, pts, have_scan, why, sizeof(why))) {
			fprintf(stderr, "ptwalk_calibrate: %s\n", why);
			return 1;
		}
		for (w = 0; w < PW_NR; w++)
			meas[w][r] = (double)pts[n - 1].ns[w] / pts[n - 1].ptes;
		fprintf(stderr, "round %u: clear_refs %.2f smaps %.2f "
			"smaps_rollup %.2f pagemap %.2f pagemap_scan %.2f ns/PTE\n",
			r + 1, meas[0][r], meas[1][r], meas[2][r], meas[3][r],
			meas[4][r]);
	}
	for (w = 0; w < PW_NR; w++) {
		qsort(meas[w], ROUNDS, sizeof(double), cmp_d);
		med[w] = meas[w][ROUNDS / 2];
	}
	slack = idle_mmap_worst_ns(2.0);
	fprintf(stderr, "idle 64 KiB mmap/munmap worst: %.3f ms\n", slack / 1e6);

	for (k = 0; k < PB_NR_KEYS; k++)
		v[k] = ptw_budget_defaults[k];
	for (w = 0; w < PW_NR; w++)
		if (med[w] > 0)
			v[ptw_walker_budget[w]] = HEADROOM * med[w];
	v[PB_STALL_SLACK_NS] = HEADROOM * slack > SLACK_FLOOR_NS ?
			       HEADROOM * slack : SLACK_FLOOR_NS;

	if (o.out) {
		out = fopen(o.out, "w");
		if (!out) {
			fprintf(stderr, "ptwalk_calibrate: %s: %s\n", o.out,
				strerror(errno));
			return 1;
		}
	}
	ptw_host_class(cls, sizeof(cls));
	uname(&u);
	fprintf(out, "# ptwalk budget for host class %s\n", cls);
	fprintf(out, "# made by ptwalk_calibrate on %s", ctime(&now));
	fprintf(out, "# kernel %s %s; sizes %zu..%zu MiB, %u reps x %u "
		"replicas, %d rounds\n", u.release, u.machine, o.min_mb,
		ptw_max_mb(&o), o.reps, o.replicas, ROUNDS);
	fprintf(out, "# clock: %s\n", ptw_cost_clock());
	fprintf(out, "# walk budgets = %.0fx the median measured ns/PTE "
		"at %zu PTEs; stall slack = max(%.0fx idle worst, %.0f ms)\n",
		HEADROOM, pts[n - 1].ptes, HEADROOM, SLACK_FLOOR_NS / 1e6);
	if (!have_scan)
		fprintf(out, "# %s: pagemap_scan keeps the default\n", scan_why);
	for (k = 0; k < PB_NR_KEYS; k++) {
		const char *note = "";

		if (k < PB_STALL_FACTOR) {
			for (w = 0; w < PW_NR; w++)
				if ((int)ptw_walker_budget[w] == k)
					break;
			if (w < PW_NR && med[w] > 0) {
				static char buf[64];

				snprintf(buf, sizeof(buf),
					 "\t# measured %.2f", med[w]);
				note = buf;
			}
		}
		if (k == PB_STALL_SLACK_NS) {
			fprintf(out, "%s=%.0f\t# idle worst %.0f\n",
				ptw_budget_keys[k], v[k], slack);
			continue;
		}
		fprintf(out, "%s=%.4g%s\n", ptw_budget_keys[k], v[k], note);
	}
	if (out != stdout)
		fclose(out);
	return 0;
}
