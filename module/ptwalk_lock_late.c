// SPDX-License-Identifier: GPL-2.0
/*
 * ptwalk late waits: a walk's hold that ended after a wait began but before
 * the waiter's slot was visible to the release (the waiter's decision on
 * its start ran late: a vCPU not run between its probes, 0.3-2.9 ms under
 * TCG, KERNEL-FACTS.md 26).  The waiter reads, after its slot is visible,
 * the last ended hold of each live walker (ptw_hold_record()) and of the
 * walks retired since (a ring written at retirement, before the slot
 * leaves the live set), and makes such a hold's walk the stall's.  Called
 * by ptwalk_lock.c; calls ptwalk_lock_wait.c and the records.
 */
#include <linux/atomic.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/kprobes.h>
#include <linux/sched.h>

#include "ptwalk.h"
#include "ptwalk_lock.h"

/*
 * Retired walks' last holds: a few, overwritten in turn (a wait reads
 * only the holds that ended after it began).  gen: odd while written.
 */
#define PTW_RETIRED	16

struct ptw_retired {
	atomic_t gen;
	struct ptw_ended_hold h;
};

static struct ptw_retired ptw_retired[PTW_RETIRED];
static atomic_t ptw_retired_next = ATOMIC_INIT(0);
static atomic64_t ptw_retired_end = ATOMIC64_INIT(0);	/* latest end kept */

/*
 * The walk's hold h ended after the wait w began, and its release did not
 * see w's slot: if it excluded w, or held it behind a writer the walk
 * still blocks (the chain), w is the walk's stall: mark it (by the live
 * walker a, else by the retired walk's record), and keep the hold's part
 * (late_hold: another view whose probe read the start after the hold ended
 * sees no stall; not known when an earlier hold of the walker ended in the
 * wait too: only the last is read).  Either way the split is incomplete: a
 * read hold may have held w through a writer gone since.
 */
static void ptw_late_apply(struct ptw_waiter *w, const struct ptw_ended_hold *h,
			   struct ptw_walker *a)
{
	bool excl = ptw_excludes(h->write, w->write);

	/* not the walk's hold: an excluding one is others_held's */
	if (!h->seq && !excl)
		return;
	if (h->seq && (!a || READ_ONCE(a->seq) == h->seq) &&
	    (excl || (!w->write && ptw_blocked_writer_waits(w->mm_key, w, h->seq,
							    w->t0)))) {
		if (a)
			ptw_mark_blocked(w, a);
		else if (ptw_mark_blocked_by(w, h))
			atomic64_inc(&ptw_stats.waits_marked_retired);
		w->late_hold += h->end - max(h->t0, w->t0);
		/* (two walks of the mm: the sum is not one walk's part) */
		w->late_out |= (w->late_seq && w->late_seq != h->seq) ||
			       h->end > w->t0 + w->t0_spread ||
			       h->prev_end > w->t0;
		w->late_seq = h->seq;
	}
	atomic_set(&w->split_lost, 1);
	atomic64_inc(&ptw_stats.waits_split_late);
}
NOKPROBE_SYMBOL(ptw_late_apply);

/*
 * The waiter w (its slot published, then a full barrier) looks at the last
 * ended hold of the live walker a (ptw_hold_record(), a full barrier before
 * the release scans the waiters).  A release whose scan did see w, but had
 * not written seen_end yet, makes an incomplete split too: never a wrong
 * one.
 */
void ptw_wait_late_hold(struct ptw_waiter *w, struct ptw_walker *a)
{
	struct ptw_ended_hold h;

	/* the end before the fields it covers (ptw_hold_record()'s wmb) */
	h.end = smp_load_acquire(&a->last_end);
	if (h.end <= w->t0 || READ_ONCE(w->seen_end) == h.end)
		return;
	h.seq = READ_ONCE(a->last_seq);
	h.write = READ_ONCE(a->last_write);
	h.t0 = READ_ONCE(a->last_t0);
	h.prev_end = READ_ONCE(a->prev_end);
	smp_rmb();	/* the fields before the end that covers them again */
	if (READ_ONCE(a->last_end) != h.end) {
		/* a later hold ended meanwhile: these fields may be its */
		atomic_set(&w->split_lost, 1);
		atomic64_inc(&ptw_stats.waits_split_late);
		return;
	}
	ptw_late_apply(w, &h, a);
}
NOKPROBE_SYMBOL(ptw_wait_late_hold);

/*
 * The walker a retires (its slot leaves the live set after this; the
 * caller's cmpxchg of its state is a full barrier): keep its last hold,
 * if it was the walk's.  An entry another retirement is writing is
 * skipped: that hold is lost to the waits that would read it.
 */
void ptw_retired_push(struct ptw_walker *a)
{
	u64 end = READ_ONCE(a->last_end), seq = READ_ONCE(a->last_seq);
	struct ptw_retired *e;
	int g;

	if (!end || !seq || seq != READ_ONCE(a->seq))
		return;
	e = &ptw_retired[(unsigned int)atomic_inc_return(&ptw_retired_next) %
			 PTW_RETIRED];
	g = atomic_read(&e->gen);
	if ((g & 1) || atomic_cmpxchg(&e->gen, g, g + 1) != g)
		return;
	smp_wmb();	/* odd before the fields */
	e->h.mm_key = a->mm_key;
	e->h.task_key = a->task_key;
	e->h.seq = seq;
	e->h.t0 = READ_ONCE(a->last_t0);
	e->h.end = end;
	e->h.prev_end = READ_ONCE(a->prev_end);
	e->h.kind = a->kind;
	e->h.walker_pid = a->walker_pid;
	e->h.target_tgid = a->target_tgid;
	e->h.write = READ_ONCE(a->last_write);
	atomic_set_release(&e->gen, g + 2);
	ptw_raise64(&ptw_retired_end, (s64)end);
}
NOKPROBE_SYMBOL(ptw_retired_push);

/*
 * The waiter w (its slot published, then a full barrier; the live walkers
 * looked at) reads the retired walks' last holds: one of its mm by another
 * task that ended after w began, its walk not one w has from a live slot.
 */
void ptw_wait_retired(struct ptw_waiter *w, unsigned long me)
{
	struct ptw_ended_hold h;
	unsigned int i;

	if ((u64)atomic64_read(&ptw_retired_end) <= w->t0)
		return;
	for (i = 0; i < PTW_RETIRED; i++) {
		struct ptw_retired *e = &ptw_retired[i];
		int g = atomic_read_acquire(&e->gen);

		if (!g || (g & 1))
			continue;
		h = e->h;
		smp_rmb();	/* the fields before the gen that covers them */
		if (atomic_read(&e->gen) != g || h.mm_key != w->mm_key ||
		    h.task_key == me || h.end <= w->t0 ||
		    h.seq == w->late_seq || READ_ONCE(w->seen_end) == h.end)
			continue;
		ptw_late_apply(w, &h, NULL);
	}
}
NOKPROBE_SYMBOL(ptw_wait_retired);
