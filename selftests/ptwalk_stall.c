// SPDX-License-Identifier: GPL-2.0
/*
 * stall.mmap_stall_during_clear_refs: while a clear_refs walk of this process holds mmap_lock
 * for write (5.11+: 29a951dfb3c3), a thread of the process doing 64 KiB
 * mmap/munmap in a loop waits. Each of its calls is timed; every call
 * overlapping a walk must take at most
 *     walk duration * stall_factor (1.2) + stall_slack_ns,
 * and calls overlapping no walk at most stall_slack_ns.
 * The walked region is the largest cost size (PTWALK_MIN_MB << 4, 4 KiB
 * anon); PTWALK_WALKS walks (default 12) with idle gaps between them.
 * budget_file checks the budget file the bound comes from.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>

#include "ptwalk_test.h"

#define MAX_EVENTS	(1 << 16)
#define EVENT_MIN_NS	20000ULL	/* record calls longer than 20 us */

struct span {
	uint64_t start, end;
	int op;			/* 0 mmap, 1 munmap, 2 walk */
};

static struct span events[MAX_EVENTS];
static atomic_uint nevents;
static atomic_bool stop;
static uint64_t nops, op_errors;

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { ns / 1000000000ULL, ns % 1000000000ULL };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* hot path: no allocation, no locks; events[] is preallocated */
static void note(uint64_t s, uint64_t e, int op)
{
	unsigned int i;

	if (e - s < EVENT_MIN_NS)
		return;
	i = atomic_fetch_add(&nevents, 1);
	if (i < MAX_EVENTS)
		events[i] = (struct span){ s, e, op };
}

static void *mapper(void *arg)
{
	const size_t sz = 64 << 10;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t t0 = ptw_now_ns(), t1, t2;
		void *p = mmap(NULL, sz, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		t1 = ptw_now_ns();
		if (p == MAP_FAILED) {
			op_errors++;
			continue;
		}
		munmap(p, sz);
		t2 = ptw_now_ns();
		note(t0, t1, 0);
		note(t1, t2, 1);
		nops++;
		/* a victim, not a CPU hog: leave the walker its CPU */
		sleep_ns(100000);
	}
	return NULL;
}

static int cmp_dur(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	uint64_t dx = x->end - x->start, dy = y->end - y->start;

	return dx < dy ? -1 : dx > dy;
}

/*
 * The walks, timed, of a region of size bytes while the mapper thread runs:
 * false, with why, when they could not start. *walks_ok false, with why,
 * when a walk failed.
 */
static bool walk_under_mapper(struct span *walks, unsigned int nwalks,
			      size_t size, bool *walks_ok, char *why, size_t len)
{
	struct ptw_region r;
	unsigned int i;
	pthread_t th;
	uint64_t gap;

	if (ptw_region_map(&r, PTW_ANON, size, why, len))
		return false;
	ptw_touch(r.addr, size, true);
	ptw_clear_refs("1");		/* warm-up walk */
	atomic_store(&nevents, 0);
	atomic_store(&stop, false);
	nops = 0;
	op_errors = 0;
	if (pthread_create(&th, NULL, mapper, NULL)) {
		snprintf(why, len, "pthread_create failed");
		ptw_region_unmap(&r);
		return false;
	}
	sleep_ns(50000000);
	for (i = 0; i < nwalks; i++) {
		walks[i].start = ptw_now_ns();
		if (ptw_clear_refs("1")) {
			snprintf(why, len, "clear_refs: %s", strerror(errno));
			*walks_ok = false;
		}
		walks[i].end = ptw_now_ns();
		walks[i].op = 2;
		/* idle gap, so every waiter gets the lock between walks */
		gap = 2 * (walks[i].end - walks[i].start);
		sleep_ns(gap < 20000000 ? 20000000 : gap);
	}
	atomic_store(&stop, true);
	pthread_join(th, NULL);
	ptw_region_unmap(&r);
	return true;
}

/* The mapper's slow calls against the walks and their bounds. */
struct stall_verdict {
	unsigned int n, n_in;		/* slow calls, of them during a walk */
	uint64_t max_in, max_out;	/* longest during a walk, outside */
	double worst, worst_bound;	/* highest duration / bound, its bound */
	unsigned int worst_i;		/* its event */
};

static void judge_events(const struct span *walks, unsigned int nwalks,
			 double factor, double slack, struct stall_verdict *v)
{
	unsigned int i, j, n = atomic_load(&nevents);

	*v = (struct stall_verdict){ .worst = -1 };
	if (n > MAX_EVENTS)
		n = MAX_EVENTS;
	v->n = n;
	for (j = 0; j < n; j++) {
		uint64_t d = events[j].end - events[j].start, wd = 0;
		bool in = false;
		double bound;

		for (i = 0; i < nwalks; i++)
			if (walks[i].start < events[j].end &&
			    walks[i].end > events[j].start) {
				in = true;
				if (walks[i].end - walks[i].start > wd)
					wd = walks[i].end - walks[i].start;
			}
		bound = in ? wd * factor + slack : slack;
		if (in) {
			v->n_in++;
			v->max_in = d > v->max_in ? d : v->max_in;
		} else {
			v->max_out = d > v->max_out ? d : v->max_out;
		}
		if (d / bound > v->worst) {
			v->worst = d / bound;
			v->worst_bound = bound;
			v->worst_i = j;
		}
	}
}

/* Logs the walks' min, median and max; the longest walk (0: unknown). */
static uint64_t log_walks(struct __test_metadata *_metadata,
			  const struct span *walks, unsigned int nwalks,
			  size_t size)
{
	struct span *sorted = malloc(nwalks * sizeof(*sorted));
	uint64_t wmax;

	if (!sorted)
		return 0;
	memcpy(sorted, walks, nwalks * sizeof(*sorted));
	qsort(sorted, nwalks, sizeof(*sorted), cmp_dur);
	wmax = sorted[nwalks - 1].end - sorted[nwalks - 1].start;
	TH_LOG("%u clear_refs walks of %zu MiB (%zu PTEs): min %.2f "
		 "median %.2f max %.2f ms", nwalks, size >> 20,
		 size / ptw_page_size,
		 (sorted[0].end - sorted[0].start) / 1e6,
		 (sorted[nwalks / 2].end -
		  sorted[nwalks / 2].start) / 1e6, wmax / 1e6);
	free(sorted);
	return wmax;
}

/* one attempt: false, with why, when a call breached its bound */
static bool one_attempt(struct __test_metadata *_metadata,
			const struct ptw_budget *budget, char *why, size_t len)
{
	const struct ptw_opts *o = &ptw_opts;
	size_t size = ptw_max_mb(o) << 20;
	struct span *walks = calloc(o->walks, sizeof(*walks));
	double factor = budget->v[PB_STALL_FACTOR];
	double slack = budget->v[PB_STALL_SLACK_NS];
	struct stall_verdict v;
	uint64_t wmax;
	bool res = true;

	if (!walks) {
		snprintf(why, len, "out of memory");
		return false;
	}
	if (!walk_under_mapper(walks, o->walks, size, &res, why, len)) {
		free(walks);
		return false;
	}
	judge_events(walks, o->walks, factor, slack, &v);
	wmax = log_walks(_metadata, walks, o->walks, size);
	TH_LOG("%llu mmap+munmap pairs (%llu mmap errors); calls > 20 us: "
		 "%u, %u of them during a walk; longest during a walk %.2f ms, "
		 "outside %.2f ms", (unsigned long long)nops,
		 (unsigned long long)op_errors, v.n, v.n_in, v.max_in / 1e6,
		 v.max_out / 1e6);
	TH_LOG("bound: walk x %.2f + %.2f ms slack (%s)", factor,
	       slack / 1e6, budget->source);
	if (!nops) {
		snprintf(why, len, "mapper thread made no progress");
		res = false;
	}
	if (v.worst > 1.0) {
		struct span *e = &events[v.worst_i];

		snprintf(why, len, "%s stalled %.2f ms > bound %.2f ms "
			 "(longest overlapping walk x %.2f + slack %.2f ms; "
			 "walk of %zu PTEs, longest walk %.2f ms)",
			 e->op ? "munmap" : "mmap", (e->end - e->start) / 1e6,
			 v.worst_bound / 1e6, factor, slack / 1e6,
			 size / ptw_page_size, wmax / 1e6);
		res = false;
	}
	free(walks);
	return res;
}

FIXTURE(stall) {
	struct ptw_budget budget;
};

FIXTURE_SETUP(stall)
{
	/* a broken file fails budget_file; here what could be read is used */
	if (ptw_budget_load(&self->budget, ptw_opts.budget))
		TH_LOG("budget file broken (see budget_file): defaults for "
		       "what could not be read");
}

FIXTURE_TEARDOWN(stall)
{
}

PTW_BUDGET_FILE_TEST

/*
 * Wall-clock bounds on a shared 2-vCPU VM: one attempt can lose 100+ ms
 * to other tenants. A breach is only reported when PTWALK_ATTEMPTS
 * (default 3) independent attempts all breach; a kernel whose stalls
 * really exceed the bound fails every attempt.
 */
TEST_F_TIMEOUT(stall, mmap_stall_during_clear_refs, PTW_TIMEOUT_LONG)
{
	unsigned int i, attempts = ptw_attempts(3);
	char why[1024] = "";
	bool ok = false;

	for (i = 1; i <= attempts && !ok; i++) {
		TH_LOG("attempt %u of %u", i, attempts);
		ok = one_attempt(_metadata, &self->budget, why, sizeof(why));
		if (!ok)
			TH_LOG("attempt %u breached: %s", i, why);
	}
	ASSERT_TRUE(ok) TH_LOG("%s", why);
}

#include "ptwalk_test_main.h"
