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

/* one attempt: false, with why, when a call breached its bound */
static bool one_attempt(struct __test_metadata *_metadata,
			const struct ptw_budget *budget, char *why, size_t len)
{
	const struct ptw_opts *o = &ptw_opts;
	size_t size = ptw_max_mb(o) << 20;
	struct span *walks = calloc(o->walks, sizeof(*walks));
	double factor = budget->v[PB_STALL_FACTOR];
	double slack = budget->v[PB_STALL_SLACK_NS];
	uint64_t max_in = 0, max_out = 0, wmax = 0, gap;
	double worst = -1, worst_bound = 0;
	unsigned int i, j, n, n_in = 0, worst_i = 0;
	bool res = true;
	struct ptw_region r;
	pthread_t th;
	struct span *sorted;

	if (!walks || ptw_region_map(&r, PTW_ANON, size, why, len)) {
		if (!walks)
			snprintf(why, len, "out of memory");
		free(walks);
		return false;
	}
	ptw_touch(r.addr, size, true);
	ptw_clear_refs("1");		/* warm-up walk */
	atomic_store(&nevents, 0);
	atomic_store(&stop, false);
	nops = op_errors = 0;
	if (pthread_create(&th, NULL, mapper, NULL)) {
		snprintf(why, len, "pthread_create failed");
		ptw_region_unmap(&r);
		free(walks);
		return false;
	}
	sleep_ns(50000000);
	for (i = 0; i < o->walks; i++) {
		walks[i].start = ptw_now_ns();
		if (ptw_clear_refs("1")) {
			snprintf(why, len, "clear_refs: %s", strerror(errno));
			res = false;
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

	n = atomic_load(&nevents);
	if (n > MAX_EVENTS)
		n = MAX_EVENTS;
	for (j = 0; j < n; j++) {
		uint64_t d = events[j].end - events[j].start, wd = 0;
		bool in = false;
		double bound;

		for (i = 0; i < o->walks; i++)
			if (walks[i].start < events[j].end &&
			    walks[i].end > events[j].start) {
				in = true;
				if (walks[i].end - walks[i].start > wd)
					wd = walks[i].end - walks[i].start;
			}
		bound = in ? wd * factor + slack : slack;
		if (in) {
			n_in++;
			max_in = d > max_in ? d : max_in;
		} else {
			max_out = d > max_out ? d : max_out;
		}
		if (d / bound > worst) {
			worst = d / bound;
			worst_bound = bound;
			worst_i = j;
		}
	}
	sorted = malloc(o->walks * sizeof(*sorted));
	if (sorted) {
		memcpy(sorted, walks, o->walks * sizeof(*sorted));
		qsort(sorted, o->walks, sizeof(*sorted), cmp_dur);
		wmax = sorted[o->walks - 1].end - sorted[o->walks - 1].start;
		TH_LOG("%u clear_refs walks of %zu MiB (%zu PTEs): min %.2f "
			 "median %.2f max %.2f ms", o->walks, size >> 20,
			 size / ptw_page_size,
			 (sorted[0].end - sorted[0].start) / 1e6,
			 (sorted[o->walks / 2].end -
			  sorted[o->walks / 2].start) / 1e6, wmax / 1e6);
		free(sorted);
	}
	TH_LOG("%llu mmap+munmap pairs (%llu mmap errors); calls > 20 us: "
		 "%u, %u of them during a walk; longest during a walk %.2f ms, "
		 "outside %.2f ms", (unsigned long long)nops,
		 (unsigned long long)op_errors, n, n_in, max_in / 1e6,
		 max_out / 1e6);
	TH_LOG("bound: walk x %.2f + %.2f ms slack (%s)", factor,
		 slack / 1e6, budget->source);
	if (!nops) {
		snprintf(why, len, "mapper thread made no progress");
		res = false;
	}
	if (worst > 1.0) {
		struct span *e = &events[worst_i];

		snprintf(why, len, "%s stalled %.2f ms > bound %.2f ms "
			 "(longest overlapping walk x %.2f + slack %.2f ms; "
			 "walk of %zu PTEs, longest walk %.2f ms)",
			 e->op ? "munmap" : "mmap", (e->end - e->start) / 1e6,
			 worst_bound / 1e6, factor, slack / 1e6,
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
	const char *s = getenv("PTWALK_ATTEMPTS");
	unsigned int i, attempts = s && atoi(s) > 0 ? atoi(s) : 3;
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
