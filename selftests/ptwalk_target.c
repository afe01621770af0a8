// SPDX-License-Identifier: GPL-2.0
/*
 * ptwalk selftests helpers: walk targets in child processes, the walk clock,
 * cache flushing, cost measurement.
 * Declared in ptwalk_util.h.
 */
#include <assert.h>

#include "ptwalk_util_int.h"
#include "ptwalk_abi.h"

/* ---- walks --------------------------------------------------------- */

/* the module's kinds (PTW_KINDS), one walker each, in their order */
#define PTW_WALKER_NAME(kind, name) name,
const char *const ptw_walker_names[PW_NR] = { PTW_KINDS(PTW_WALKER_NAME) };
static_assert(sizeof((const char *[]){ PTW_KINDS(PTW_WALKER_NAME) }) ==
	       PW_NR * sizeof(const char *), "one walker per PTW_KINDS kind");
#undef PTW_WALKER_NAME

const enum ptw_budget_key ptw_walker_budget[PW_NR] = {
	[PW_CLEAR_REFS] = PB_CLEAR_REFS,
	[PW_SMAPS] = PB_SMAPS,
	[PW_SMAPS_ROLLUP] = PB_SMAPS_ROLLUP,
	[PW_PAGEMAP] = PB_PAGEMAP,
	[PW_PAGEMAP_SCAN] = PB_PAGEMAP_SCAN,
};

static int read_all_discard(const char *path)
{
	static char chunk[65536];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	long long r;

	if (fd < 0)
		return -1;
	r = ptw_trigger_read_all(fd, chunk, sizeof(chunk), 0, NULL, NULL, NULL);
	close(fd);
	return r < 0 ? -1 : 0;
}

struct child_report {
	int err;
	uintptr_t addr;
	uint64_t anon_huge_kb;
	char why[256];
};

int ptw_target_spawn(struct ptw_target *t, int backing, size_t size,
		     char *why, size_t len)
{
	int rep[2];
	struct child_report cr;
	char path[64];
	ssize_t n;

	memset(t, 0, sizeof(*t));
	t->clear_fd = -1;
	t->pagemap_fd = -1;
	if (pipe2(rep, O_CLOEXEC)) {
		snprintf(why, len, "pipe: %s", strerror(errno));
		return -1;
	}
	fflush(stdout);
	t->pid = fork();
	if (t->pid < 0) {
		snprintf(why, len, "fork: %s", strerror(errno));
		return -1;
	}
	if (t->pid == 0) {
		struct ptw_region r;
		struct ptw_smaps s;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(rep[0]);
		memset(&cr, 0, sizeof(cr));
		if (ptw_region_map(&r, backing, size, cr.why, sizeof(cr.why))) {
			cr.err = 1;
		} else {
			ptw_touch(r.addr, size, true);
			cr.addr = (uintptr_t)r.addr;
			if (ptw_smaps_vma(r.addr, &s) == 0)
				cr.anon_huge_kb = s.anon_huge_kb;
		}
		if (write(rep[1], &cr, sizeof(cr)) != sizeof(cr))
			_exit(1);
		/* live until the parent kills us (or dies: PDEATHSIG) */
		for (;;)
			pause();
	}
	close(rep[1]);
	n = read(rep[0], &cr, sizeof(cr));
	close(rep[0]);
	if (n != sizeof(cr)) {
		snprintf(why, len, "child %d died while populating %zu MiB "
			 "(out of memory?)", t->pid, size >> 20);
		ptw_target_kill(t);
		return -1;
	}
	if (cr.err) {
		snprintf(why, len, "child: %s", cr.why);
		ptw_target_kill(t);
		return -1;
	}
	t->backing = backing;
	t->addr = (char *)cr.addr;
	t->size = size;
	t->anon_huge_kb = cr.anon_huge_kb;
	snprintf(path, sizeof(path), "/proc/%d/clear_refs", t->pid);
	t->clear_fd = open(path, O_WRONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/pagemap", t->pid);
	t->pagemap_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (t->clear_fd < 0 || t->pagemap_fd < 0) {
		snprintf(why, len, "open /proc/%d/{clear_refs,pagemap}: %s",
			 t->pid, strerror(errno));
		ptw_target_kill(t);
		return -1;
	}
	return 0;
}

void ptw_target_kill(struct ptw_target *t)
{
	if (t->clear_fd >= 0)
		close(t->clear_fd);
	if (t->pagemap_fd >= 0)
		close(t->pagemap_fd);
	if (t->pid > 0) {
		kill(t->pid, SIGKILL);
		waitpid(t->pid, NULL, 0);
	}
	t->clear_fd = -1;
	t->pagemap_fd = -1;
	t->pid = 0;
}

/* pagemap read buffer, in chunks so it stays small and cache-friendly */
#define PM_CHUNK 4096
static uint64_t pm_chunk[PM_CHUNK];

uint64_t ptw_last_wall_ns;

/*
 * Thread CPU time is only usable when it is fine grained: in some guests
 * (e.g. qemu TCG without a stable TSC) it advances per tick (4 ms), which
 * would turn sub-ms walks into 0 or one tick. Check empirically once.
 */
static int cpu_clock_ok = -1;
static double cpu_clock_step_ns;

/* x86: the task clock is only trustworthy on a stable TSC; a guest that
 * fell back to hpet/acpi_pm (qemu TCG) gave erratic thread CPU times
 */
static bool clocksource_ok(char *cs, size_t len)
{
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/"
			"current_clocksource", "r");
	bool ok = true;

	snprintf(cs, len, "unknown");
	if (!f)
		return true;
	if (fgets(cs, len, f)) {
		cs[strcspn(cs, "\n")] = 0;
#if defined(__x86_64__) || defined(__i386__)
		ok = !strcmp(cs, "tsc") || !strcmp(cs, "kvm-clock");
#endif
	}
	fclose(f);
	return ok;
}

const char *ptw_cost_clock(void)
{
	static char desc[160];
	const char *env = getenv("PTWALK_CLOCK");
	char cs[64];

	if (cpu_clock_ok < 0 && env && (!strcmp(env, "cpu") ||
					!strcmp(env, "wall"))) {
		cpu_clock_ok = !strcmp(env, "cpu");
		snprintf(desc, sizeof(desc), "%s (PTWALK_CLOCK)",
			 cpu_clock_ok ? "CPU time of the walking thread" :
			 "wall time");
	}
	if (cpu_clock_ok < 0 && !clocksource_ok(cs, sizeof(cs))) {
		cpu_clock_ok = 0;
		snprintf(desc, sizeof(desc), "wall time: clocksource %s, the "
			 "thread CPU clock is not trusted (PTWALK_CLOCK=cpu "
			 "overrides)", cs);
	}
	if (cpu_clock_ok < 0) {
		uint64_t end = ptw_now_ns() + 3000000, c0 = ptw_cpu_ns();
		uint64_t a = c0, b;
		unsigned int changes = 0;

		while (ptw_now_ns() < end) {
			b = ptw_cpu_ns();
			if (b != a)
				changes++;
			a = b;
		}
		cpu_clock_step_ns = changes ? (double)(a - c0) / changes : 1e9;
		cpu_clock_ok = changes >= 100 && cpu_clock_step_ns < 10000;
		if (cpu_clock_ok)
			snprintf(desc, sizeof(desc), "CPU time of the walking "
				 "thread (CLOCK_THREAD_CPUTIME_ID)");
		else
			snprintf(desc, sizeof(desc), "wall time: the thread CPU "
				 "clock is coarse here (%u steps of ~%.0f us in 3 "
				 "ms)", changes, cpu_clock_step_ns / 1e3);
	}
	return desc;
}

uint64_t ptw_walk_target(int w, const struct ptw_target *t)
{
	uint64_t t0, t1, c0, c1;
	size_t npages = t->size / ptw_page_size;
	struct page_region vec[8];
	char path[64];
	int rc = 0;

	if (w == PW_SMAPS)
		snprintf(path, sizeof(path), "/proc/%d/smaps", t->pid);
	else if (w == PW_SMAPS_ROLLUP)
		snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", t->pid);
	t0 = ptw_now_ns();
	c0 = ptw_cpu_ns();
	switch (w) {
	case PW_CLEAR_REFS:
		rc = ptw_trigger_clear_refs(t->clear_fd, "1") ? -1 : 0;
		break;
	case PW_SMAPS:
	case PW_SMAPS_ROLLUP:
		rc = read_all_discard(path);
		break;
	case PW_PAGEMAP:
		rc = ptw_trigger_pagemap(t->pagemap_fd, (uintptr_t)t->addr,
					 (uintptr_t)t->addr + npages * ptw_page_size, pm_chunk,
					 sizeof(pm_chunk), NULL, NULL) ==
		     (long long)(npages * 8) ? 0 : -1;
		break;
	case PW_PAGEMAP_SCAN: {
		struct pm_scan_arg arg = {
			.start = (uintptr_t)t->addr,
			.end = (uintptr_t)t->addr + t->size,
			.vec = (uintptr_t)vec,
			.vec_len = 8,
			.category_mask = PAGE_IS_PRESENT,
			.return_mask = PAGE_IS_PRESENT,
		};

		rc = ptw_trigger_pagemap_scan(t->pagemap_fd, &arg) < 0 ? -1 : 0;
		break;
	}
	default:
		rc = -1;
	}
	c1 = ptw_cpu_ns();
	t1 = ptw_now_ns();
	if (rc)
		return 0;
	ptw_last_wall_ns = t1 - t0;
	if (cpu_clock_ok < 0)
		ptw_cost_clock();
	if (!cpu_clock_ok)
		return t1 - t0 ? t1 - t0 : 1;
	return c1 - c0 ? c1 - c0 : 1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Opt-in cold-cache walks (PTWALK_FLUSH_MB=N, or =llc for twice the
 * last-level cache): read through a buffer before each timed walk, then
 * re-warm the common path (proc file, task, mm, code) with an untimed walk
 * of the 1-page baseline, so only the region's page tables and struct
 * pages are cold. Off by default: on the 6.18 dev VM a cold walk carried
 * a ~0.6-1 ms size-independent extra cost, which pulls cost(16N)/cost(N)
 * down to 8-10, closer to the bound than warm walks (~15-20).
 */
static size_t llc_bytes(void)
{
	size_t best = 0;
	int i;

	for (i = 0; i < 8; i++) {
		char path[96], buf[32];
		FILE *f;
		size_t v;
		char unit = 0;

		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) &&
		    sscanf(buf, "%zu%c", &v, &unit) >= 1) {
			if (unit == 'K')
				v <<= 10;
			else if (unit == 'M')
				v <<= 20;
			if (v > best)
				best = v;
		}
		fclose(f);
	}
	return best;
}

static char *flush_buf;
static size_t flush_size;

size_t ptw_cache_flush_init(void)
{
	const char *e = getenv("PTWALK_FLUSH_MB");

	if (flush_buf || flush_size == (size_t)-1)
		return flush_buf ? flush_size : 0;
	if (!e || !*e)
		flush_size = 0;		/* off by default, see above */
	else if (!strcmp(e, "llc"))
		flush_size = 2 * (llc_bytes() ? llc_bytes() : (32UL << 20));
	else
		flush_size = strtoul(e, NULL, 0) << 20;
	if (flush_size > (256UL << 20))
		flush_size = 256UL << 20;
	if (!flush_size) {
		flush_size = (size_t)-1;
		return 0;
	}
	/* not inherited by the walk targets forked later (MADV_DONTFORK):
	 * it would add its PTEs to every walk
	 */
	flush_buf = mmap(NULL, flush_size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (flush_buf == MAP_FAILED || madvise(flush_buf, flush_size,
					       MADV_DONTFORK)) {
		if (flush_buf != MAP_FAILED)
			munmap(flush_buf, flush_size);
		flush_buf = NULL;
		flush_size = (size_t)-1;
		return 0;
	}
	memset(flush_buf, 1, flush_size);
	return flush_size;
}

bool ptw_cache_flush(void)
{
	/* read, not write: dirty lines would add writeback to the walk */
	volatile const char *p = flush_buf;
	size_t i;
	char sink = 0;

	if (!flush_buf)
		return false;
	for (i = 0; i < flush_size; i += 64)
		sink += p[i];
	(void)sink;
	return true;
}

/*
 * The targets of ptw_measure_costs: nsz = o->points x nrep populated
 * children (index k * nrep + r for size k), then the 1-page baseline, all
 * alive at once; pts[].ptes set. *spawned: how many to kill afterwards.
 * Spawned replica by replica (every size's replica 0, then every size's
 * replica 1, ...): replicas of one size populated back to back would take
 * neighbouring physical memory from the allocator, and so share whatever
 * makes a region slow (its backing on the host), which they are there to
 * rule out. Measured on this VM: one size ~1.5x slower per PTE in every
 * walker that touches the pages (pagemap_scan, which reads PTEs alone, was
 * not), in two measurements one after the other: each measurement frees
 * its children and the next, spawning in the same order, got the same
 * memory back. So the order of sizes is rotated by `attempt` too.
 */
static int spawn_cost_targets(const struct ptw_opts *o, struct ptw_target *t,
			      unsigned int nrep, unsigned int attempt,
			      struct ptw_cost_point *pts, unsigned int *spawned,
			      char *why, size_t len)
{
	unsigned int nsz = o->points * nrep, i;

	for (i = 0; i <= nsz; i++) {
		/* i-th spawn: replica i / points of the (i + attempt)-th size */
		unsigned int sz = (i % o->points + attempt) % o->points;
		unsigned int k = i < nsz ? sz * nrep + i / o->points : nsz;
		size_t size = k < nsz ? (o->min_mb << (k / nrep)) << 20 :
			      ptw_page_size;

		if (ptw_target_spawn(&t[k], PTW_ANON, size, why, len))
			return -1;
		(*spawned)++;
		if (t[k].anon_huge_kb) {
			snprintf(why, len, "4 KiB region got %llu kB "
				 "AnonHugePages despite MADV_NOHUGEPAGE",
				 (unsigned long long)t[k].anon_huge_kb);
			return -1;
		}
		if (k < nsz)
			pts[k / nrep].ptes = size / ptw_page_size;
	}
	return 0;
}

/* warm-up: one walk of each kind per target */
static int warm_up_targets(struct ptw_target *t, unsigned int nt,
			   bool with_scan, char *why, size_t len)
{
	unsigned int k, w;

	for (k = 0; k < nt; k++)
		for (w = 0; w < PW_NR; w++) {
			if (w == PW_PAGEMAP_SCAN && !with_scan)
				continue;
			if (!ptw_walk_target(w, &t[k])) {
				snprintf(why, len, "%s walk of pid %d failed: %s",
					 ptw_walker_names[w], t[k].pid,
					 strerror(errno));
				return -1;
			}
		}
	return 0;
}

/*
 * The timed walks into samples: per size and walker, ns = o->reps x nrep
 * samples (the baseline's: o->reps).
 */
static void time_cost_walks(const struct ptw_opts *o, struct ptw_target *t,
			    unsigned int nrep, bool with_scan,
			    uint64_t *samples)
{
	unsigned int nsz = o->points * nrep, nt = nsz + 1, base = nsz;
	unsigned int ns = o->reps * nrep;
	unsigned int k, rep, w;

	/*
	 * Sizes and walkers interleaved within each repetition, so a slow
	 * phase of this noisy machine hits all sizes alike and the
	 * per-size minimum stays representative.
	 */
	for (rep = 0; rep < o->reps; rep++)
		for (k = 0; k < nt; k++)
			for (w = 0; w < PW_NR; w++) {
				unsigned int sz = k < nsz ? k / nrep : o->points;
				unsigned int idx = k < nsz ? rep * nrep + k % nrep :
						   rep;

				if (w == PW_PAGEMAP_SCAN && !with_scan)
					continue;
				/*
				 * Every timed walk (the baseline's too) follows
				 * an untimed walk of the baseline, so all start
				 * from the same state of the common path (proc
				 * file, task, mm, code; in TCG also qemu's soft
				 * TLB): without it the baseline, walked right
				 * after the largest size, measured 2x its real
				 * fixed cost in a 6.1 TCG guest. Opt-in cold
				 * caches: flush first.
				 */
				ptw_cache_flush();
				ptw_walk_target(w, &t[base]);
				samples[(sz * PW_NR + w) * ns + idx] =
					ptw_walk_target(w, &t[k]);
			}
}

/* Per size and walker: the minimum and median; the baseline's minimum. */
static void summarize_cost_samples(const struct ptw_opts *o, unsigned int ns,
				   bool with_scan, uint64_t *samples,
				   struct ptw_cost_point *pts)
{
	unsigned int k, w, r;

	for (k = 0; k <= o->points; k++)
		for (w = 0; w < PW_NR; w++) {
			uint64_t *s0 = samples + (k * PW_NR + w) * ns;
			unsigned int cnt = k < o->points ? ns : o->reps;

			if (w == PW_PAGEMAP_SCAN && !with_scan) {
				if (k < o->points) {
					pts[k].ns[w] = 0;
					pts[k].med[w] = 0;
				}
				continue;
			}
			qsort(s0, cnt, sizeof(*s0), cmp_u64);
			if (k < o->points) {
				pts[k].ns[w] = s0[0];
				pts[k].med[w] = s0[cnt / 2];
			} else {
				for (r = 0; r < o->points; r++)
					pts[r].base[w] = s0[0];
			}
		}
}

int ptw_measure_costs(const struct ptw_opts *o, unsigned int attempt,
		      struct ptw_cost_point *pts, bool with_scan, char *why,
		      size_t len)
{
	/*
	 * Targets: o->replicas independently populated children per size
	 * (index k * replicas + r), then the 1-page baseline. Replicas guard
	 * against one child whose memory happens to be slow for the whole
	 * measurement (seen on this VM: one size 1.8x slower per PTE in every
	 * repetition); the per-size minimum is over reps x replicas.
	 */
	unsigned int nrep = o->replicas ? o->replicas : 1;
	unsigned int nsz = o->points * nrep, nt = nsz + 1;
	unsigned int ns = o->reps * nrep;	/* samples per size and walker */
	uint64_t *samples = calloc((size_t)ns * PW_NR * (o->points + 1),
				   sizeof(uint64_t));
	struct ptw_target *t = calloc(nt, sizeof(*t));
	unsigned int k, spawned = 0;
	int ret = -1;

	if (!samples || !t) {
		snprintf(why, len, "out of memory");
		goto out;
	}
	/* spawned out of index order: each one killable, spawned or not */
	for (k = 0; k < nt; k++)
		t[k] = (struct ptw_target){ .pid = 0, .clear_fd = -1, .pagemap_fd = -1 };
	ptw_cache_flush_init();
	if (spawn_cost_targets(o, t, nrep, attempt, pts, &spawned, why, len) ||
	    warm_up_targets(t, nt, with_scan, why, len))
		goto out;
	time_cost_walks(o, t, nrep, with_scan, samples);
	summarize_cost_samples(o, ns, with_scan, samples, pts);
	ret = 0;
out:
	for (k = 0; t && spawned && k < nt; k++)
		ptw_target_kill(&t[k]);
	free(samples);
	free(t);
	return ret;
}
