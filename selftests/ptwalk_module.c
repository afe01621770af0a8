// SPDX-License-Identifier: GPL-2.0
/*
 * With the ptwalk module loaded (/sys/kernel/debug/ptwalk/ exists):
 *  - pte_slots.<backing>: the PTE slots the module counts for one walk
 *    (module/README.md: sum of (end - addr) / PAGE_SIZE over the walk's
 *    per-PMD-range callbacks) cover the mapped size of the walked target,
 *    and exceed it by at most one PTE table per VMA of the target;
 *  - walk_recorded_once.<backing>: every walk is recorded exactly once,
 *    with the right kind, walker and target.
 * SKIPs "ptwalk module not loaded" without the debugfs directory.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptwalk_abi.h"
#include "ptwalk_util.h"

#define PTWALK_DEBUGFS "/sys/kernel/debug/" PTW_DEBUGFS_DIR

static struct ptw_opts opts;

/* value of key in one "k1=v1 k2=v2 ..." record line, or NULL */
static const char *
ptw_kv_get(const char *line, const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);
	const char *p = line;

	while ((p = strstr(p, key))) {
		if ((p == line || p[-1] == ' ') && p[kl] == '=') {
			size_t n = strcspn(p + kl + 1, " \n");

			snprintf(buf, len, "%.*s", (int)n, p + kl + 1);
			return buf;
		}
		p += kl;
	}
	return NULL;
}

#define NWALKS 3

struct walk_rec {
	unsigned long long seq, pte_slots;
	long walker, target;
	char kind[32];
};

/* the module's walk records with seq > after; returns how many (<= max) */
static int read_walks(unsigned long long after, struct walk_rec *out, int max,
		      unsigned long long *max_seq)
{
	FILE *f = fopen(PTWALK_DEBUGFS "/walks", "r");
	char line[1024], v[64];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		struct walk_rec r = { 0 };

		if (!ptw_kv_get(line, PTW_WALK_KEY(seq), v, sizeof(v)))
			continue;
		r.seq = strtoull(v, NULL, 10);
		if (max_seq && r.seq > *max_seq)
			*max_seq = r.seq;
		if (r.seq <= after || n >= max)
			continue;
		if (ptw_kv_get(line, PTW_WALK_KEY(pte_slots), v, sizeof(v)))
			r.pte_slots = strtoull(v, NULL, 10);
		if (ptw_kv_get(line, PTW_WALK_KEY(walker_pid), v, sizeof(v)))
			r.walker = strtol(v, NULL, 10);
		if (ptw_kv_get(line, PTW_WALK_KEY(target_tgid), v, sizeof(v)))
			r.target = strtol(v, NULL, 10);
		ptw_kv_get(line, PTW_WALK_KEY(kind), r.kind, sizeof(r.kind));
		out[n++] = r;
	}
	fclose(f);
	return n;
}

static unsigned int count_vmas(pid_t pid)
{
	char path[64], line[512];
	unsigned int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n++;
	fclose(f);
	return n;
}

static enum ptw_result module_check(const struct ptw_case *c,
				    struct ptw_target *t, char *why,
				    size_t len)
{
	static const int kinds[] = { PW_CLEAR_REFS, PW_SMAPS_ROLLUP };
	struct walk_rec recs[256];
	unsigned long long seq0 = 0;
	unsigned long long pages = t->size / (unsigned long long)getpagesize();
	unsigned int vmas = count_vmas(t->pid), k, i;
	int n, mine[2] = { 0, 0 };

	if (read_walks(~0ULL, recs, 0, &seq0) < 0) {
		snprintf(why, len, "%s/walks: %m", PTWALK_DEBUGFS);
		return PTW_FAIL;
	}
	for (k = 0; k < 2; k++)
		for (i = 0; i < NWALKS; i++)
			if (!ptw_walk_target(kinds[k], t)) {
				snprintf(why, len, "%s walk of pid %d failed: %m",
					 ptw_walker_names[kinds[k]], t->pid);
				return PTW_FAIL;
			}
	n = read_walks(seq0, recs, 256, NULL);
	if (n < 0) {
		snprintf(why, len, "%s/walks: %m", PTWALK_DEBUGFS);
		return PTW_FAIL;
	}
	for (i = 0; i < (unsigned int)n; i++) {
		const struct walk_rec *r = &recs[i];

		if (r->target != t->pid)
			continue;	/* another walker on the host */
		if (r->walker != getpid()) {
			snprintf(why, len, "walk seq %llu of pid %d names walker %ld, not %d",
				 r->seq, t->pid, r->walker, getpid());
			return PTW_FAIL;
		}
		for (k = 0; k < 2; k++)
			if (!strcmp(r->kind, ptw_walker_names[kinds[k]]))
				mine[k]++;
		if (c->arg == 0 && (r->pte_slots < pages ||
				    r->pte_slots > pages + 512ULL * vmas)) {
			snprintf(why, len, "%s walk seq %llu: %llu PTE slots, want %llu.."
				 "%llu (%llu pages mapped, %u VMAs)", r->kind,
				 r->seq, r->pte_slots, pages, pages + 512ULL * vmas,
				 pages, vmas);
			return PTW_FAIL;
		}
	}
	for (k = 0; k < 2; k++)
		if (mine[k] != NWALKS) {
			snprintf(why, len, "%d %s walks of pid %d made, %d recorded",
				 NWALKS, ptw_walker_names[kinds[k]], t->pid, mine[k]);
			return PTW_FAIL;
		}
	ptw_diag("%d clear_refs + %d smaps_rollup walks of %llu pages, each recorded once%s",
		 NWALKS, NWALKS, pages, c->arg == 0 ? ", PTE slots within one table per VMA" : "");
	return PTW_PASS;
}

static enum ptw_result t_module(const struct ptw_case *c, char *why,
				size_t len)
{
	struct ptw_target t;
	enum ptw_result r;

	if (access(PTWALK_DEBUGFS, F_OK)) {
		snprintf(why, len, "ptwalk module not loaded");
		return PTW_SKIP;
	}
	if (c->backing == PTW_THP && !ptw_thp_usable(why, len))
		return PTW_SKIP;
	if (ptw_target_spawn(&t, c->backing, opts.small_mb << 20, why, len))
		return PTW_FAIL;
	r = module_check(c, &t, why, len);
	ptw_target_kill(&t);
	return r;
}

int main(int argc, char **argv)
{
	static const char *const kinds[] = { "pte_slots", "walk_recorded_once" };
	struct ptw_case cases[2 * PTW_NR_BACKINGS];
	unsigned int n = 0, k;
	int b;

	ptw_parse_opts(argc, argv, &opts);
	for (k = 0; k < 2; k++)
		for (b = 0; b < PTW_NR_BACKINGS; b++) {
			cases[n] = (struct ptw_case){ .fn = t_module,
						      .backing = b, .arg = k };
			snprintf(cases[n++].name, sizeof(cases[0].name),
				 "%s.%s", kinds[k], ptw_backing_name(b));
		}
	return ptw_run_cases(cases, n);
}
