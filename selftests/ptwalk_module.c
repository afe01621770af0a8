// SPDX-License-Identifier: GPL-2.0
/*
 * With the ptwalk module loaded (/sys/kernel/debug/ptwalk/ exists), per
 * backing (the variants anon, thp, shmem, file):
 *  - module.<backing>.pte_slots: the PTE slots the module counts for one walk
 *    (module/README.md: sum of (end - addr) / PAGE_SIZE over the walk's
 *    per-PMD-range callbacks) cover the mapped size of the walked target,
 *    and exceed it by at most one PTE table per VMA of the target;
 *  - module.<backing>.walk_recorded_once: every walk is recorded exactly once,
 *    with the right kind, walker and target.
 * SKIPs "ptwalk module not loaded" without the debugfs directory.
 */
#include "ptwalk_test.h"
#include "ptwalk_abi.h"

#define PTWALK_DEBUGFS "/sys/kernel/debug/" PTW_DEBUGFS_DIR

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

/*
 * NWALKS clear_refs and NWALKS smaps_rollup walks of t, each recorded
 * exactly once with the right kind, walker and target; with check_slots,
 * each record's PTE slots within [pages, pages + one table per VMA].
 */
static bool module_check(struct __test_metadata *_metadata,
			 struct ptw_target *t, bool check_slots, char *why,
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
		return false;
	}
	for (k = 0; k < 2; k++)
		for (i = 0; i < NWALKS; i++)
			if (!ptw_walk_target(kinds[k], t)) {
				snprintf(why, len, "%s walk of pid %d failed: %m",
					 ptw_walker_names[kinds[k]], t->pid);
				return false;
			}
	n = read_walks(seq0, recs, 256, NULL);
	if (n < 0) {
		snprintf(why, len, "%s/walks: %m", PTWALK_DEBUGFS);
		return false;
	}
	for (i = 0; i < (unsigned int)n; i++) {
		const struct walk_rec *r = &recs[i];

		if (r->target != t->pid)
			continue;	/* another walker on the host */
		if (r->walker != getpid()) {
			snprintf(why, len, "walk seq %llu of pid %d names walker %ld, not %d",
				 r->seq, t->pid, r->walker, getpid());
			return false;
		}
		for (k = 0; k < 2; k++)
			if (!strcmp(r->kind, ptw_walker_names[kinds[k]]))
				mine[k]++;
		if (check_slots && (r->pte_slots < pages ||
				    r->pte_slots > pages + 512ULL * vmas)) {
			snprintf(why, len, "%s walk seq %llu: %llu PTE slots, want %llu.."
				 "%llu (%llu pages mapped, %u VMAs)", r->kind,
				 r->seq, r->pte_slots, pages, pages + 512ULL * vmas,
				 pages, vmas);
			return false;
		}
	}
	for (k = 0; k < 2; k++)
		if (mine[k] != NWALKS) {
			snprintf(why, len, "%d %s walks of pid %d made, %d recorded",
				 NWALKS, ptw_walker_names[kinds[k]], t->pid, mine[k]);
			return false;
		}
	TH_LOG("%d clear_refs + %d smaps_rollup walks of %llu pages, each recorded once%s",
	       NWALKS, NWALKS, pages, check_slots ? ", PTE slots within one table per VMA" : "");
	return true;
}

/* a walk target of the variant's backing, spawned per test */
FIXTURE(module) {
	struct ptw_target t;
	bool spawned;
};

PTW_BACKING_VARIANTS(module);

FIXTURE_SETUP(module)
{
	char why[512];

	if (access(PTWALK_DEBUGFS, F_OK))
		SKIP(return, "ptwalk module not loaded");
	PTW_SKIP_UNLESS_THP(variant->backing, return);
	ASSERT_EQ(0, ptw_target_spawn(&self->t, variant->backing,
				      ptw_opts.small_mb << 20, why, sizeof(why)))
		TH_LOG("%s", why);
	self->spawned = true;
}

FIXTURE_TEARDOWN(module)
{
	if (self->spawned)
		ptw_target_kill(&self->t);
}

TEST_F_TIMEOUT(module, pte_slots, PTW_TIMEOUT_SHORT)
{
	char why[1024] = "";

	/* the 6.1 harness runs the test after a SKIP() in setup */
	if (!self->spawned)
		return;
	ASSERT_TRUE(module_check(_metadata, &self->t, true, why, sizeof(why)))
		TH_LOG("%s", why);
}

TEST_F_TIMEOUT(module, walk_recorded_once, PTW_TIMEOUT_SHORT)
{
	char why[1024] = "";

	if (!self->spawned)
		return;
	ASSERT_TRUE(module_check(_metadata, &self->t, false, why, sizeof(why)))
		TH_LOG("%s", why);
}

#include "ptwalk_test_main.h"
