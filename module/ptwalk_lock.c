// SPDX-License-Identifier: GPL-2.0
/*
 * ptwalk locks: the walkers (which task walks which mm, inside a hooked
 * call or not), their holds of the target's mmap_lock, and which waits of
 * other tasks they blocked (stalls).
 *
 * The walker table is kept here, not with the walks, because every
 * mmap_lock event of the system scans it.  ptwalk_walk.c claims and frees
 * its slots, keeps each slot's pass (PTE counts, times, record) in its own
 * array under the same slot number, and reads and resets the lock side of
 * the pass through the ptw_lock_*() functions below.  This file calls
 * nothing of ptwalk_walk.c: a walk that begins when its walker takes the
 * lock is begun by ptwalk_walk.c first (ptw_walk_lock_taken()).
 *
 * Which waits of other tasks the holds block, and the split of those
 * stalls, is decided in ptwalk_lock_wait.c, which this file calls.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/tracepoint.h>
#include <linux/mm_types.h>

#include "ptwalk.h"
#include "ptwalk_lock.h"
#include "compat/ptwalk_compat.h"

static struct ptw_walker ptw_walkers[PTW_MAX_ACTIVE];
static atomic_t ptw_walkers_hw = ATOMIC_INIT(0);	/* slots ever used */
static atomic_t ptw_nr_live = ATOMIC_INIT(0);

static struct ptw_holder ptw_hold[PTW_MAX_HOLDERS];
static atomic_t ptw_nr_holders = ATOMIC_INIT(0);

static __always_inline unsigned int ptw_walkers_limit(void)
{
	return min_t(unsigned int, atomic_read(&ptw_walkers_hw),
		     PTW_MAX_ACTIVE);
}

/* the same, but none while no walk is live (fast paths) */
static __always_inline unsigned int ptw_live_limit(void)
{
	return atomic_read(&ptw_nr_live) ? ptw_walkers_limit() : 0;
}

/*
 * The walker of a holds the lock since t0: publish it, then mark every
 * waiter it excludes (ptwalk_lock_wait.c).  The hold is the walk's inside a
 * hooked call, and for a file walk once its pass has begun (a->seq: its
 * reader's first lock begins it, in ptwalk_walk.c): smaps' last m_start
 * shows no VMA yet holds the lock for the walk, as the tracepoints see it.
 */
static void ptw_hold_begin(struct ptw_walker *a, u64 t0, bool write,
			   u64 spread)
{
	WRITE_ONCE(a->lock_write, write);
	a->lock_t0_spread = spread;
	WRITE_ONCE(a->lock_t0, t0);
	a->lock_holds++;
	a->hold_used = atomic_read(&a->in_call) > 0 || READ_ONCE(a->seq);
	smp_mb();	/* lock_t0 visible before we look at the waiters */
	ptw_waits_mark(a, write);
}
NOKPROBE_SYMBOL(ptw_hold_begin);

/*
 * The current task ends its hold of mmk now (a release, or a downgrade):
 * if it holds it for walks of mmk, split the hold into the waits and
 * account it to the walks.  False if it is no walker holding mmk.
 */
static bool ptw_walker_hold_end(unsigned long me, unsigned long mmk, u64 now,
				u64 spread)
{
	bool seen = false;
	unsigned int i, n;

	n = ptw_live_limit();
	for (i = 0; i < n; i++) {
		struct ptw_walker *a = &ptw_walkers[i];

		if (!ptw_live(a) || READ_ONCE(a->task_key) != me ||
		    READ_ONCE(a->mm_key) != mmk || !a->lock_t0)
			continue;
		ptw_hold_record(a, now);
		/* once for the task's hold, while every slot still has it */
		if (!seen)
			ptw_hold_end(me, mmk, a->lock_write, a->lock_t0, now, a,
				     spread);
		seen = true;
		if (ptw_hold_is_walks(a)) {
			a->lock_hold_ns += now - a->lock_t0;
			a->lock_mode |= a->lock_write ? PTW_LOCK_WRITE :
							PTW_LOCK_READ;
			a->hold_end_ns = max(a->hold_end_ns, now);
		}
		WRITE_ONCE(a->lock_t0, 0);
		a->hold_used = false;
	}
	return seen;
}
NOKPROBE_SYMBOL(ptw_walker_hold_end);

static struct ptw_holder *ptw_holder_find(unsigned long task, unsigned long mm)
{
	unsigned int i;

	for (i = 0; i < PTW_MAX_HOLDERS; i++) {
		struct ptw_holder *h = &ptw_hold[i];

		if (atomic_long_read_acquire(&h->task_key) == task &&
		    READ_ONCE(h->mm_key) == mm)
			return h;
	}
	return NULL;
}
NOKPROBE_SYMBOL(ptw_holder_find);

/*
 * A hooked call of a file walk begins and its task holds the target's lock
 * already (smaps: m_start() took it): that hold is the walk's, since t0.
 */
static struct ptw_holder *ptw_adoptable(struct ptw_walker *a)
{
	if (!atomic_read(&ptw_nr_holders))
		return NULL;
	return ptw_holder_find((unsigned long)current, a->mm_key);
}
NOKPROBE_SYMBOL(ptw_adoptable);

static void ptw_holder_add(unsigned long me, unsigned long mmk, u64 now,
			   bool write)
{
	unsigned int i;

	for (i = 0; i < PTW_MAX_HOLDERS; i++) {
		struct ptw_holder *h = &ptw_hold[i];

		if (atomic_long_cmpxchg(&h->task_key, 0, me) == 0) {
			h->mm_key = mmk;
			h->t0 = now;
			h->write = write;
			atomic_inc(&ptw_nr_holders);
			return;
		}
	}
	atomic64_inc(&ptw_stats.holders_dropped);
	ptw_hold_unseen(me, mmk, write, now);
}
NOKPROBE_SYMBOL(ptw_holder_add);

static void ptw_holder_remove(struct ptw_holder *h)
{
	atomic_dec(&ptw_nr_holders);
	atomic_long_set_release(&h->task_key, 0);
}
NOKPROBE_SYMBOL(ptw_holder_remove);

/* ---- the walker table, for ptwalk_walk.c ----------------------------- */

/* the lock side of a new pass; a hold in progress carries over */
static void ptw_walker_pass_reset(struct ptw_walker *a)
{
	a->seq = 0;
	a->walker_pid = 0;
	a->lock_mode = 0;
	a->lock_hold_ns = 0;
	a->lock_holds = a->lock_t0 ? 1 : 0;	/* a hold in progress */
	a->lock_wait_ns = 0;
	a->hold_end_ns = 0;
	atomic64_set(&a->stalls, 0);
}
NOKPROBE_SYMBOL(ptw_walker_pass_reset);

/*
 * Claim a free slot for a walk of mm_key by the current task: it stays
 * invisible (busy) until ptw_lock_publish().  -1: none free.
 */
int ptw_lock_claim(unsigned long key, unsigned long mm_key, u32 kind,
		   pid_t target_tgid)
{
	struct ptw_walker *a;
	int i;

	for (i = 0; i < PTW_MAX_ACTIVE; i++) {
		a = &ptw_walkers[i];
		if (atomic_cmpxchg(&a->state, PTW_S_FREE, PTW_S_BUSY) ==
		    PTW_S_FREE)
			goto found;
	}
	return -1;

found:
	a->key = key;
	a->task_key = (unsigned long)current;
	atomic_set(&a->in_call, 0);
	a->hold_used = false;
	a->kind = kind;
	a->lock_t0 = 0;
	a->lock_t0_spread = 0;
	a->lock_write = false;
	a->wait_t0 = 0;
	ptw_walker_pass_reset(a);
	a->target_tgid = target_tgid;
	a->mm_key = mm_key;
	return i;
}
NOKPROBE_SYMBOL(ptw_lock_claim);

/* the slot's pass is set up (ptwalk_walk.c): every probe may see it now */
void ptw_lock_publish(int slot)
{
	ptw_hw_raise(&ptw_walkers_hw, slot + 1);
	atomic_inc(&ptw_nr_live);
	atomic_set_release(&ptw_walkers[slot].state, PTW_S_LIVE);
}
NOKPROBE_SYMBOL(ptw_lock_publish);

/* the walk ends: hide the slot; false if someone else ended it already */
bool ptw_lock_retire(int slot)
{
	ptw_retired_push(&ptw_walkers[slot]);
	return atomic_cmpxchg(&ptw_walkers[slot].state, PTW_S_LIVE,
			      PTW_S_BUSY) == PTW_S_LIVE;
}
NOKPROBE_SYMBOL(ptw_lock_retire);

/* a retired slot's record is out: the slot may be claimed again */
void ptw_lock_free(int slot)
{
	atomic_dec(&ptw_nr_live);
	atomic_set_release(&ptw_walkers[slot].state, PTW_S_FREE);
}
NOKPROBE_SYMBOL(ptw_lock_free);

bool ptw_lock_live(int slot)
{
	return ptw_live(&ptw_walkers[slot]);
}
NOKPROBE_SYMBOL(ptw_lock_live);

/* the live walk of key (a struct file * or a task); -1: none */
int ptw_lock_find_key(unsigned long key)
{
	unsigned int i, n = ptw_live_limit();

	for (i = 0; i < n; i++) {
		struct ptw_walker *a = &ptw_walkers[i];

		if (ptw_live(a) && READ_ONCE(a->key) == key)
			return i;
	}
	return -1;
}
NOKPROBE_SYMBOL(ptw_lock_find_key);

/* the live walk of mm_key by the current task of one of kinds; -1: none */
int ptw_lock_walk_of(unsigned long mm_key, u32 kinds)
{
	int slot;

	for (slot = ptw_lock_next_walk(mm_key, 0); slot >= 0;
	     slot = ptw_lock_next_walk(mm_key, slot + 1))
		if (BIT(READ_ONCE(ptw_walkers[slot].kind)) & kinds)
			return slot;
	return -1;
}
NOKPROBE_SYMBOL(ptw_lock_walk_of);

/* a live walk of mm_key by any task, of one of kinds, from slot from on */
int ptw_lock_mm_walked_from(unsigned long mm_key, u32 kinds, int from)
{
	unsigned int i, n = ptw_live_limit();

	if (!mm_key)
		return -1;
	for (i = max(from, 0); i < n; i++) {
		struct ptw_walker *a = &ptw_walkers[i];

		if (ptw_live(a) && READ_ONCE(a->mm_key) == mm_key &&
		    (BIT(READ_ONCE(a->kind)) & kinds))
			return i;
	}
	return -1;
}
NOKPROBE_SYMBOL(ptw_lock_mm_walked_from);

pid_t ptw_lock_walker_pid(int slot)
{
	return READ_ONCE(ptw_walkers[slot].walker_pid);
}
NOKPROBE_SYMBOL(ptw_lock_walker_pid);

/* the walk a slot's pass is (false: none has begun) */
bool ptw_lock_walk_id(int slot, u64 *seq, u32 *kind, pid_t *target_tgid)
{
	struct ptw_walker *a = &ptw_walkers[slot];

	*seq = READ_ONCE(a->seq);
	*kind = READ_ONCE(a->kind);
	*target_tgid = READ_ONCE(a->target_tgid);
	return ptw_live(a) && *seq;
}
NOKPROBE_SYMBOL(ptw_lock_walk_id);

/*
 * The current task, holding the mmap_lock of the walk in slot for write,
 * waited from t0 to t1 for the walk's VMA read lock: the waits queued
 * behind it meanwhile are the walk's (when the slot is still walk seq).
 */
void ptw_lock_vma_chain(int slot, u64 seq, u64 t0, u64 t1)
{
	struct ptw_walker *a;

	if (slot < 0 || slot >= PTW_MAX_ACTIVE)
		return;
	a = &ptw_walkers[slot];
	if (ptw_live(a) && READ_ONCE(a->seq) == seq)
		ptw_waits_vma_chain(a, (unsigned long)current, t0, t1);
}
NOKPROBE_SYMBOL(ptw_lock_vma_chain);

/* the walk the current task is inside of (a hooked call is running) */
int ptw_lock_current_walk(void)
{
	unsigned long me = (unsigned long)current;
	unsigned int i, n = ptw_live_limit();

	for (i = 0; i < n; i++) {
		struct ptw_walker *a = &ptw_walkers[i];

		if (ptw_live(a) && READ_ONCE(a->task_key) == me &&
		    atomic_read(&a->in_call) > 0)
			return i;
	}
	return -1;
}
NOKPROBE_SYMBOL(ptw_lock_current_walk);

/* the next live walk of mm_key by the current task from slot from on */
int ptw_lock_next_walk(unsigned long mm_key, int from)
{
	unsigned long me = (unsigned long)current;
	unsigned int i, n = ptw_live_limit();

	for (i = from; i < n; i++) {
		struct ptw_walker *a = &ptw_walkers[i];

		if (ptw_live(a) && READ_ONCE(a->mm_key) == mm_key &&
		    READ_ONCE(a->task_key) == me)
			return i;
	}
	return -1;
}
NOKPROBE_SYMBOL(ptw_lock_next_walk);

/* a hooked call of the walk begins (or ends) in the current task */
void ptw_lock_call_enter(int slot)
{
	struct ptw_walker *a = &ptw_walkers[slot];

	WRITE_ONCE(a->task_key, (unsigned long)current);
	atomic_inc(&a->in_call);
}
NOKPROBE_SYMBOL(ptw_lock_call_enter);

void ptw_lock_call_exit(int slot)
{
	atomic_dec(&ptw_walkers[slot].in_call);
}
NOKPROBE_SYMBOL(ptw_lock_call_exit);

/*
 * Since when the walker holds the target's lock for the walk: its hold,
 * or (adopt: a file walk) the hold its task took before the call, which
 * ptw_lock_call_hold() adopts; 0 if none.
 */
u64 ptw_lock_hold_since(int slot, bool adopt)
{
	struct ptw_walker *a = &ptw_walkers[slot];
	struct ptw_holder *h;

	if (a->lock_t0)
		return a->lock_t0;
	h = adopt ? ptw_adoptable(a) : NULL;
	return h ? h->t0 : 0;
}
NOKPROBE_SYMBOL(ptw_lock_hold_since);

/*
 * A hooked call of the walk, begun already: adopt the hold its task took
 * before the call (smaps: m_start), and a hold in progress is the walk's.
 */
void ptw_lock_call_hold(int slot, bool adopt)
{
	struct ptw_walker *a = &ptw_walkers[slot];

	if (!a->lock_t0 && adopt) {
		struct ptw_holder *h = ptw_adoptable(a);

		if (h)
			ptw_hold_begin(a, h->t0, h->write, 0);
	}
	if (a->lock_t0)
		a->hold_used = true;
}
NOKPROBE_SYMBOL(ptw_lock_call_hold);

/* the pass began: its stalls are attributed to walk seq of walker_pid */
void ptw_lock_walk_begins(int slot, u64 seq, pid_t walker_pid)
{
	struct ptw_walker *a = &ptw_walkers[slot];

	WRITE_ONCE(a->seq, seq);
	WRITE_ONCE(a->walker_pid, walker_pid);
}
NOKPROBE_SYMBOL(ptw_lock_walk_begins);

void ptw_lock_pass_reset(int slot)
{
	ptw_walker_pass_reset(&ptw_walkers[slot]);
}
NOKPROBE_SYMBOL(ptw_lock_pass_reset);

/* the lock side of the pass, for its record */
void ptw_lock_pass_read(int slot, struct ptw_lock_pass *p)
{
	struct ptw_walker *a = &ptw_walkers[slot];

	p->seq = a->seq;
	p->walker_pid = a->walker_pid;
	p->lock_mode = a->lock_mode;
	p->lock_hold_ns = a->lock_hold_ns;
	p->lock_holds = a->lock_holds;
	p->lock_wait_ns = a->lock_wait_ns;
	p->hold_end_ns = a->hold_end_ns;
	p->stalls = atomic64_read(&a->stalls);
}
NOKPROBE_SYMBOL(ptw_lock_pass_read);

/* a walk, a wait or a tracked holder is in flight */
bool ptw_lock_tracking(void)
{
	return atomic_read(&ptw_nr_waiting) || atomic_read(&ptw_nr_live) ||
	       atomic_read(&ptw_nr_holders);
}
NOKPROBE_SYMBOL(ptw_lock_tracking);

/* ---- the three mmap_lock events ----------------------------------- */

void ptw_lock_start(struct mm_struct *mm, bool write, u64 t, u64 spread)
{
	unsigned long me = (unsigned long)current;
	unsigned long mmk = (unsigned long)mm;
	struct ptw_waiter *w;
	unsigned int i, n;

	n = ptw_walkers_limit();
	if (atomic_read(&ptw_nr_live)) {
		for (i = 0; i < n; i++) {
			struct ptw_walker *a = &ptw_walkers[i];

			if (!ptw_live(a) || READ_ONCE(a->mm_key) != mmk ||
			    READ_ONCE(a->task_key) != me)
				continue;
			/* the walker itself waits for the target's lock */
			if (atomic_read(&a->in_call) > 0)
				a->wait_t0 = t;
			return;
		}
	}
	/*
	 * Every wait is tracked, not only waits on an mm walked right now: a
	 * walker that takes the lock ahead of a writer queued before the walk
	 * began (rwsem lock stealing) blocks that writer as surely.
	 */
	w = ptw_wait_begin(me, mmk, write, t, spread);
	if (!w)
		return;
	smp_mb();	/* our slot visible before we look at the walkers */
	for (i = 0; i < n; i++) {
		struct ptw_walker *a = &ptw_walkers[i];

		if (!ptw_live(a) || READ_ONCE(a->mm_key) != mmk ||
		    READ_ONCE(a->task_key) == me)
			continue;
		ptw_wait_late_hold(w, a);
		/* (the first walker to mark it is the walk it stalls) */
		if (READ_ONCE(a->lock_t0) &&
		    ptw_excludes(READ_ONCE(a->lock_write), write)) {
			ptw_mark_blocked(w, a);
			continue;
		}
		/*
		 * A reader queues behind a waiting writer this walk blocks
		 * (not on PREEMPT_RT: ptw_blocked_writer_waits()): the walk's.
		 */
		if (!write && ptw_blocked_writer_waits(mmk, w, READ_ONCE(a->seq),
						       w->t0))
			ptw_mark_blocked(w, a);
	}
	ptw_wait_retired(w, me);
}
NOKPROBE_SYMBOL(ptw_lock_start);

/* (called when ptw_lock_tracking(); a walk its hold begins is begun) */
void ptw_lock_acquired(struct mm_struct *mm, bool write, bool success,
		       u64 now, u64 spread)
{
	unsigned long me = (unsigned long)current;
	unsigned long mmk = (unsigned long)mm;
	bool walked = false, walker = false, in_call = false;
	struct ptw_holder *h;
	unsigned int i, n;

	/* (waits are tracked from start_locking: see ptw_lock_start()) */
	if (atomic_read(&ptw_nr_waiting))
		ptw_wait_end(me, mmk, now, success, spread);

	/* a downgrade (no released event): a walker's write hold ends */
	if (success && atomic_read(&ptw_nr_live))
		ptw_walker_hold_end(me, mmk, now, spread);
	n = ptw_live_limit();
	/*
	 * A task in a hooked call of a walk of mm takes the lock for it, not
	 * for another walk it has open (the pagemap file of a PAGEMAP_SCAN)
	 */
	for (i = 0; i < n; i++) {
		struct ptw_walker *a = &ptw_walkers[i];

		if (ptw_live(a) && READ_ONCE(a->mm_key) == mmk &&
		    READ_ONCE(a->task_key) == me && atomic_read(&a->in_call) > 0)
			in_call = true;
	}
	for (i = 0; i < n; i++) {
		struct ptw_walker *a = &ptw_walkers[i];

		if (!ptw_live(a) || READ_ONCE(a->mm_key) != mmk)
			continue;
		walked = true;
		if (READ_ONCE(a->task_key) != me)
			continue;
		walker = true;
		if (a->wait_t0) {
			a->lock_wait_ns += now - a->wait_t0;
			a->wait_t0 = 0;
		}
		if (success && (!in_call || atomic_read(&a->in_call) > 0))
			ptw_hold_begin(a, now, write, spread);
	}
	if (!success || walker)
		return;
	h = atomic_read(&ptw_nr_holders) ? ptw_holder_find(me, mmk) : NULL;
	if (h) {
		/* a downgrade: the write hold ends, a read hold begins */
		ptw_hold_end(me, mmk, h->write, h->t0, now, NULL, spread);
		h->t0 = now;
		h->write = write;
		return;
	}
	/*
	 * Another task holds an mm being walked (it may read a file walk of
	 * it, or block its waiters) or waited for by a blocked waiter:
	 * remember its hold.
	 */
	if (walked || ptw_blocked_on(mmk))
		ptw_holder_add(me, mmk, now, write);
}
NOKPROBE_SYMBOL(ptw_lock_acquired);

void ptw_lock_released(struct mm_struct *mm, bool write, u64 t, u64 spread)
{
	unsigned long me = (unsigned long)current;
	unsigned long mmk = (unsigned long)mm;
	struct ptw_holder *h;
	bool seen;
	u64 now;

	if (!atomic_read(&ptw_nr_live) && !atomic_read(&ptw_nr_holders) &&
	    !atomic_read(&ptw_nr_waiting))
		return;
	now = t;
	seen = ptw_walker_hold_end(me, mmk, now, spread);
	h = atomic_read(&ptw_nr_holders) ? ptw_holder_find(me, mmk) : NULL;
	if (h) {
		/* (a walker's adopted hold was ended above, as the walk's) */
		if (!seen)
			ptw_hold_end(me, mmk, h->write, h->t0, now, NULL,
				     spread);
		ptw_holder_remove(h);
		seen = true;
	}
	if (!seen)
		ptw_hold_unseen(me, mmk, write, now);
}
NOKPROBE_SYMBOL(ptw_lock_released);
