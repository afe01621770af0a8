// SPDX-License-Identifier: GPL-2.0
/*
 * ptwalk waits: every wait for an mmap_lock, whether a walker's hold
 * blocked it (a stall), and the split of each stall into the holds that
 * excluded it.  Called by ptwalk_lock.c, which owns the walkers and their
 * holds and passes a walker by pointer; this file calls nothing but the
 * records (ptwalk_rec.c).
 *
 * A wait (mmap_lock_start_locking .. mmap_lock_acquire_returned) of another
 * task on a walked mm is a stall when the walker held that mm's lock, in a
 * mode that excludes the waiter's, at some moment of the wait.  That is
 * decided from state recorded at two moments only: when the wait starts
 * (the walker holds it now) and when the walker takes the lock (it marks
 * every excluded waiter of that mm).  Both sides publish their own state,
 * then look at the other's (a full barrier between), so at least one of
 * them sees the overlap.  A wait that no walker hold excluded is not a
 * stall, nor is an attempt that failed (a trylock emits start_locking too,
 * then acquire_returned(success=0)): it is counted in failed_attempts and
 * taken back from the walk's stalls.  A wait that saw the walker's hold as
 * the walker released it, its split holding none of the walk's, is listed
 * with that part not known (waits_unblocked, at_release).  One chain is
 * followed: a reader that
 * arrives while a writer the walk blocks is queued waits behind that writer
 * (rwsem does not let readers pass a waiting writer), so the walk blocks it
 * too; not on PREEMPT_RT, whose rw_semaphore lets readers pass a writer
 * until it holds the lock.
 *
 * The split of a stall: each hold of a pending waiter's mm that ends (a
 * release, a downgrade) adds its part within the wait that excluded the
 * waiter: to walker_held for the stall's walk (the chain counts while the
 * writer is pending), else to others_held.  The holder table tracks every
 * holder of an mm walked or with a blocked waiter; an untracked hold's end
 * (taken before, or no slot) makes the waits it may overlap incomplete.
 * Overlapping read holds in a write wait are summed, then clamped so that
 * walker_held + others_held <= wait_ns.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/mm_types.h>

#include "ptwalk.h"
#include "ptwalk_lock.h"

static struct ptw_waiter ptw_wait[PTW_MAX_WAITERS];
static atomic_t ptw_wait_hw = ATOMIC_INIT(0);
atomic_t ptw_nr_waiting = ATOMIC_INIT(0);
static atomic_t ptw_nr_blocked = ATOMIC_INIT(0);	/* a hint, for fast paths */

/* the waiter slots to scan: those ever used */
static __always_inline unsigned int ptw_waiters_limit(void)
{
	return min_t(unsigned int, atomic_read(&ptw_wait_hw), PTW_MAX_WAITERS);
}

/* the same, but none while no wait is in flight (fast paths) */
static __always_inline unsigned int ptw_waiting_limit(void)
{
	return atomic_read(&ptw_nr_waiting) ? ptw_waiters_limit() : 0;
}

/* w is a published wait (not one being claimed) on mmk of a task but skip */
static __always_inline bool ptw_wait_on(struct ptw_waiter *w,
					unsigned long mmk, unsigned long skip)
{
	unsigned long tk = atomic_long_read_acquire(&w->task_key);

	return tk && !(tk & 1) && tk != skip && READ_ONCE(w->mm_key) == mmk;
}

/* blocked: 0 no, 2 being marked (walk fields in writing), 1 marked */
static __always_inline bool ptw_mark_claim(struct ptw_waiter *w)
{
	if (atomic_cmpxchg(&w->blocked, 0, 2) != 0)
		return false;
	atomic_inc(&ptw_nr_blocked);
	return true;
}

/* the claimed w's walk (act: its live walker, NULL once retired) */
static __always_inline void
ptw_mark_publish(struct ptw_waiter *w, struct ptw_walker *act, u64 seq,
		 u32 kind, bool write, pid_t pid, pid_t tgid)
{
	WRITE_ONCE(w->act, act);
	w->walk_seq = seq;
	w->kind = kind;
	w->walker_write = write;
	w->walker_pid = pid;
	w->target_tgid = tgid;
	atomic_set_release(&w->blocked, 1);
}

bool ptw_mark_blocked(struct ptw_waiter *w, struct ptw_walker *a)
{
	if (!ptw_mark_claim(w))
		return false;
	ptw_mark_publish(w, a, READ_ONCE(a->seq), a->kind,
			 READ_ONCE(a->lock_write), READ_ONCE(a->walker_pid),
			 a->target_tgid);
	/* taken back in ptw_wait_end() if the attempt fails */
	atomic64_inc(&a->stalls);
	return true;
}
NOKPROBE_SYMBOL(ptw_mark_blocked);

/* the same by a retired walk's record h (ptwalk_lock_late.c): no slot */
bool ptw_mark_blocked_by(struct ptw_waiter *w, const struct ptw_ended_hold *h)
{
	if (!ptw_mark_claim(w))
		return false;
	ptw_mark_publish(w, NULL, h->seq, h->kind, h->write, h->walker_pid,
			 h->target_tgid);
	return true;
}
NOKPROBE_SYMBOL(ptw_mark_blocked_by);

/* a walker marking w finishes in a few instructions: false if it did not */
static bool ptw_marked(struct ptw_waiter *w)
{
	unsigned int spins;

	for (spins = 0; atomic_read_acquire(&w->blocked) == 2 && spins < 10000;
	     spins++)
		cpu_relax();
	return atomic_read_acquire(&w->blocked) != 2;
}
NOKPROBE_SYMBOL(ptw_marked);

/*
 * The writer (a task holding the walked mm's mmap_lock for write) waited
 * from t0 to t1 for the VMA read lock of the walk of a (ptwalk_vma.c): every
 * wait on that mm's mmap_lock pending meanwhile was behind the writer, so
 * behind the walk, and still pending (the writer holds the lock past t1):
 * mark each the walk's stall, its part of [t0, t1) the chain's (a part of
 * the writer's hold, split as any other's: others_held).
 */
void ptw_waits_vma_chain(struct ptw_walker *a, unsigned long writer, u64 t0,
			 u64 t1)
{
	unsigned int i, n = ptw_waiting_limit();

	for (i = 0; i < n; i++) {
		struct ptw_waiter *w = &ptw_wait[i];
		u64 gc, from;

		if (!ptw_wait_on(w, a->mm_key, writer))
			continue;
		gc = (u64)atomic64_read(&w->vma_chain);
		smp_rmb();	/* the generation before the fields it covers */
		from = max(READ_ONCE(w->t0), t0);
		if (READ_ONCE(w->mm_key) != a->mm_key || t1 <= from)
			continue;
		ptw_mark_blocked(w, a);
		if (!ptw_acc_add(&w->vma_chain, gc, t1 - from))
			atomic_set(&w->split_lost, 1);
	}
}
NOKPROBE_SYMBOL(ptw_waits_vma_chain);

/*
 * A writer waits for mm since before t0, blocked by the walk seq, and a
 * reader arriving now queues behind it.  Not on PREEMPT_RT: its rwbase_rt
 * lets a reader in until the writer holds the lock (KERNEL-FACTS.md entry
 * 27), so there a read hold never blocks a reader, through a writer or not.
 */
bool ptw_blocked_writer_waits(unsigned long mmk, struct ptw_waiter *self,
			      u64 seq, u64 t0)
{
	unsigned int i, n;

	if (IS_ENABLED(CONFIG_PREEMPT_RT))
		return false;
	n = ptw_waiters_limit();
	for (i = 0; i < n; i++) {
		struct ptw_waiter *w = &ptw_wait[i];

		if (w != self && ptw_wait_on(w, mmk, 0) && READ_ONCE(w->write) &&
		    atomic_read_acquire(&w->blocked) == 1 &&
		    READ_ONCE(w->walk_seq) == seq && READ_ONCE(w->t0) <= t0)
			return true;
	}
	return false;
}
NOKPROBE_SYMBOL(ptw_blocked_writer_waits);

/*
 * The current task (me) starts waiting for mmk's lock: take a waiter slot
 * and publish it; NULL when none is free (counted).
 */
struct ptw_waiter *ptw_wait_begin(unsigned long me, unsigned long mmk,
				  bool write, u64 t, u64 spread)
{
	struct ptw_waiter *w;
	unsigned int i;

	ptw_inject_wait(READ_ONCE(ptw_inject_slot_late_ns));
	for (i = 0; i < PTW_MAX_WAITERS; i++) {
		w = &ptw_wait[i];
		/* claimed busy (low bit: task pointers are aligned) */
		if (atomic_long_read(&w->task_key) == 0 &&
		    atomic_long_cmpxchg(&w->task_key, 0, me | 1) == 0)
			goto found;
	}
	atomic64_inc(&ptw_stats.waits_dropped);
	return NULL;

found:
	atomic_set(&w->blocked, 0);
	w->act = NULL;
	atomic_set(&w->split_lost, 0);
	ptw_acc_init(&w->walker_held);
	ptw_acc_init(&w->others_held);
	ptw_acc_init(&w->vma_chain);
	ptw_acc_init(&w->spread);
	w->t0_spread = spread;
	w->seen_end = 0;
	atomic_long_set(&w->seen_by, 0);
	w->late_hold = 0;
	w->late_seq = 0;
	w->late_out = false;
	smp_wmb();	/* new generations before the fields (ptw_hold_end) */
	w->mm_key = mmk;
	w->write = write;
	w->t0 = t;
	atomic_long_set_release(&w->task_key, me);	/* published */
	ptw_hw_raise(&ptw_wait_hw, i + 1);
	atomic_inc(&ptw_nr_waiting);
	ptw_inject_wait(READ_ONCE(ptw_inject_mark_late_ns));
	return w;
}
NOKPROBE_SYMBOL(ptw_wait_begin);

/*
 * The walker of a holds the lock since t0 (published, then a full barrier):
 * mark every waiter it excludes, then every reader queued behind a writer
 * it blocks (none on PREEMPT_RT: ptw_blocked_writer_waits()).
 */
void ptw_waits_mark(struct ptw_walker *a, bool write)
{
	unsigned int i, n = ptw_waiting_limit();

	for (i = 0; i < n; i++) {
		struct ptw_waiter *w = &ptw_wait[i];

		if (ptw_wait_on(w, a->mm_key, a->task_key) &&
		    ptw_excludes(write, READ_ONCE(w->write)))
			ptw_mark_blocked(w, a);
	}
	/* a write hold excluded every waiter; PREEMPT_RT queues no reader */
	if (write || IS_ENABLED(CONFIG_PREEMPT_RT))
		return;
	for (i = 0; i < n; i++) {
		struct ptw_waiter *w = &ptw_wait[i];

		if (!ptw_wait_on(w, a->mm_key, a->task_key) ||
		    READ_ONCE(w->write) || atomic_read(&w->blocked))
			continue;
		if (ptw_blocked_writer_waits(a->mm_key, w, READ_ONCE(a->seq),
					     READ_ONCE(w->t0)))
			ptw_mark_blocked(w, a);
	}
}
NOKPROBE_SYMBOL(ptw_waits_mark);

/*
 * The release of a walk's hold (holder wa, ending now, its probes spread)
 * sees the published wait w: it says so (seen_end: ptw_wait_late_hold()),
 * and decides what the waiter's own look at the walkers may not have yet.
 */
static void ptw_release_saw(struct ptw_waiter *w, struct ptw_walker *wa,
			    unsigned long mmk, bool hold_write, u64 now,
			    u64 spread)
{
	u64 gs = (u64)atomic64_read(&w->spread), t0, seq = READ_ONCE(wa->seq);
	bool wr;

	smp_rmb();	/* the generation before the fields it covers */
	if (READ_ONCE(w->mm_key) != mmk)
		return;
	t0 = READ_ONCE(w->t0);
	wr = READ_ONCE(w->write);

	/*
	 * (we hold the lock past this probe: an excluded waiter is still
	 * there, unless it gave up)
	 */
	WRITE_ONCE(w->seen_end, now);
	/*
	 * The first release of this walker to see w (its walks share the
	 * slot and prev_end; another walker's release between counts as
	 * none: at worst an incomplete split): a hold of this walker that
	 * ended in w before it was released unseen (w's slot not visible
	 * yet), the waiter's own look reads only the last one (6.12-rt,
	 * 11-29: four holds, 196 us of a 1.38 ms wait lost): split lacks it.
	 */
	if (atomic_long_xchg(&w->seen_by, (long)wa) != (long)wa &&
	    wa->prev_end > t0) {
		atomic_set(&w->split_lost, 1);
		atomic64_inc(&ptw_stats.waits_split_late);
	}
	/*
	 * A wait that began after the release's stamp, by less than the
	 * release's spread: another view may put the walk's hold end inside
	 * it (perf read 758 us late: 6.12, 11-29).
	 */
	if (now <= t0) {
		if (now + spread > t0 &&
		    !ptw_acc_add(&w->spread, gs, now + spread - t0))
			atomic_set(&w->split_lost, 1);
		return;
	}
	/*
	 * The walk's hold excluded a wait (or held it behind a writer the
	 * walk blocks: the chain) whose waiter has not marked it yet: the
	 * waiter is between its slot and its look at the walkers
	 * (ptw_lock_start()), or was descheduled there (a vCPU not run).  It
	 * is the walk's stall: mark it before its split is added to.
	 */
	if (max(READ_ONCE(wa->lock_t0), t0) < now && ptw_hold_is_walks(wa) &&
	    seq && !atomic_read(&w->blocked) &&
	    (ptw_excludes(hold_write, wr) ||
	     (!wr && ptw_blocked_writer_waits(mmk, w, seq, t0))) &&
	    ptw_mark_blocked(w, wa))
		atomic64_inc(&ptw_stats.waits_marked_late);
}
NOKPROBE_SYMBOL(ptw_release_saw);

/*
 * ptw_release_saw() for every published wait on mmk but the holder's:
 * the writers first, so that a reader queued behind a writer this release
 * marks is marked by the chain too (as ptw_waits_mark() does).
 */
static void ptw_release_sees(unsigned long holder, unsigned long mmk,
			     bool hold_write, u64 now, struct ptw_walker *wa,
			     u64 spread)
{
	unsigned int i, pass, n = ptw_waiting_limit();

	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < n; i++) {
			struct ptw_waiter *w = &ptw_wait[i];

			if (ptw_wait_on(w, mmk, holder) &&
			    READ_ONCE(w->write) == !pass)
				ptw_release_saw(w, wa, mmk, hold_write, now,
						spread);
		}
	}
}
NOKPROBE_SYMBOL(ptw_release_sees);

/*
 * holder (a task) ends a hold of mm mmk held since h0 in mode hold_write:
 * add the part of it within each pending wait on mmk that it excluded.
 * wa: the holder is a walker of mmk holding it (wa the first of its walk
 * slots), which ends the holds of all its walks of mmk at once (their
 * slots still hold lock_t0).
 */
void ptw_hold_end(unsigned long holder, unsigned long mmk,
		  bool hold_write, u64 h0, u64 now, struct ptw_walker *wa,
		  u64 spread)
{
	unsigned int i, n = ptw_waiting_limit();

	if (wa)
		ptw_release_sees(holder, mmk, hold_write, now, wa, spread);
	for (i = 0; i < n; i++) {
		struct ptw_waiter *w = &ptw_wait[i];
		unsigned long tk = atomic_long_read_acquire(&w->task_key);
		struct ptw_walker *act;
		u64 gw, go, gs, t0, from, lt0;
		bool wr, ok = true;

		if (!tk || (tk & 1) || tk == holder)
			continue;
		gw = (u64)atomic64_read(&w->walker_held);
		go = (u64)atomic64_read(&w->others_held);
		gs = (u64)atomic64_read(&w->spread);
		smp_rmb();	/* the generations before the fields they cover */
		if (READ_ONCE(w->mm_key) != mmk)
			continue;
		t0 = READ_ONCE(w->t0);
		wr = READ_ONCE(w->write);
		from = max(h0, t0);
		if (now <= from)
			continue;
		if (wa && !ptw_marked(w)) {
			atomic_set(&w->split_lost, 1);
			continue;
		}
		act = wa && atomic_read_acquire(&w->blocked) == 1 ?
		      READ_ONCE(w->act) : NULL;
		/*
		 * The stall's walk is one of this walker's, the hold its (the
		 * walk's lock_hold_ns has it).  A hold of another walk, the
		 * next one of the same walker or file included, is another's.
		 */
		if (act && ptw_live(act) && READ_ONCE(act->task_key) == holder &&
		    READ_ONCE(act->mm_key) == mmk &&
		    READ_ONCE(act->seq) == READ_ONCE(w->walk_seq) &&
		    (lt0 = READ_ONCE(act->lock_t0)) && ptw_hold_is_walks(act)) {
			from = max(lt0, t0);
			if (now > from &&
			    (ptw_excludes(hold_write, wr) ||
			     (!wr && ptw_blocked_writer_waits(mmk, w, act->seq, t0)))) {
				ok = ptw_acc_add(&w->walker_held, gw, now - from);
				/* the boundaries of it the other probes saw apart */
				ok &= ptw_acc_add(&w->spread, gs, spread +
						  ptw_start_spread(lt0, act->lock_t0_spread, t0));
			}
		} else if (ptw_excludes(hold_write, wr)) {
			ok = ptw_acc_add(&w->others_held, go, now - from);
		}
		if (!ok)
			atomic_set(&w->split_lost, 1);
	}
}
NOKPROBE_SYMBOL(ptw_hold_end);

/*
 * A hold of mmk in mode hold_write that was not tracked ends now (or one
 * could not be tracked): the waits it may have excluded lose their split.
 */
void ptw_hold_unseen(unsigned long holder, unsigned long mmk,
		     bool hold_write, u64 now)
{
	unsigned int i, n = ptw_waiting_limit();

	for (i = 0; i < n; i++) {
		struct ptw_waiter *w = &ptw_wait[i];

		if (!ptw_wait_on(w, mmk, holder) || READ_ONCE(w->t0) >= now ||
		    !ptw_excludes(hold_write, READ_ONCE(w->write)))
			continue;
		atomic_set(&w->split_lost, 1);
	}
}
NOKPROBE_SYMBOL(ptw_hold_unseen);

/* a waiter on mmk is blocked by a walk (its lock holders are tracked) */
bool ptw_blocked_on(unsigned long mmk)
{
	unsigned int i, n;

	if (atomic_read(&ptw_nr_blocked) <= 0)
		return false;
	n = ptw_waiters_limit();
	for (i = 0; i < n; i++) {
		struct ptw_waiter *w = &ptw_wait[i];

		if (ptw_wait_on(w, mmk, 0) && atomic_read(&w->blocked))
			return true;
	}
	return false;
}
NOKPROBE_SYMBOL(ptw_blocked_on);

/* a wait marked blocked is no stall: take it back from the walk's count */
static void ptw_stall_take_back(struct ptw_waiter *w)
{
	struct ptw_walker *a = w->act;

	/* (once the walk's record is out, its count stays) */
	if (a && ptw_live(a) && READ_ONCE(a->seq) == w->walk_seq)
		atomic64_dec(&a->stalls);
}
NOKPROBE_SYMBOL(ptw_stall_take_back);

/*
 * The chained reader w, its split empty, got the lock while the walk, by
 * our table, still holds it for read: the walk released it and the
 * release's decision, which adds its part to w, is still in flight (6.1's
 * rwsem lets a reader in the slow path steal a lock no other reader holds,
 * ahead of the woken writer: rwsem_down_read_slowpath()).  That part ends
 * at the release's stamp, not known here (read at our acquire: 107 us too
 * many, stop 47): missing, not none (the tracepoints: 13.5 us, 6.1 CI
 * 11-29).  No need to ask if the writer is still queued: if it got the
 * lock, this is a later hold of the walk, and the part of the one before,
 * which held us through the writer, is missing just the same.
 */
static bool ptw_chain_holds(struct ptw_waiter *w)
{
	struct ptw_walker *a = READ_ONCE(w->act);

	return a && ptw_live(a) && READ_ONCE(a->seq) == w->walk_seq &&
	       READ_ONCE(a->lock_t0) && !READ_ONCE(a->lock_write);
}
NOKPROBE_SYMBOL(ptw_chain_holds);

/*
 * The blocked writer w leaves the queue without the lock (a killable wait
 * interrupted).  The readers queued behind it (the chain, entry 27) had
 * the walk's read hold as theirs while it waited; the walk's hold in
 * progress now stops being theirs, and its part so far is not added at
 * its end: their split is incomplete.
 */
static void ptw_chain_left(struct ptw_waiter *w)
{
	struct ptw_walker *a = READ_ONCE(w->act);
	unsigned int i, n = ptw_waiters_limit();

	if (IS_ENABLED(CONFIG_PREEMPT_RT) || !a || !ptw_live(a) ||
	    READ_ONCE(a->seq) != w->walk_seq || !READ_ONCE(a->lock_t0))
		return;
	for (i = 0; i < n; i++) {
		struct ptw_waiter *r = &ptw_wait[i];

		if (r != w && ptw_wait_on(r, w->mm_key, 0) &&
		    !READ_ONCE(r->write) &&
		    atomic_read_acquire(&r->blocked) == 1 &&
		    READ_ONCE(r->walk_seq) == w->walk_seq &&
		    READ_ONCE(r->t0) >= w->t0)
			atomic_set(&r->split_lost, 1);
	}
}
NOKPROBE_SYMBOL(ptw_chain_left);

void ptw_wait_end(unsigned long me, unsigned long mmk, u64 now,
		  bool success, u64 spread)
{
	unsigned int i, n;
	u64 wh, oh, sp;

	n = ptw_waiters_limit();
	for (i = 0; i < n; i++) {
		struct ptw_waiter *w = &ptw_wait[i];
		struct ptw_stall_rec r;

		if (atomic_long_read(&w->task_key) != me || w->mm_key != mmk)
			continue;
		if (!ptw_marked(w) || atomic_read_acquire(&w->blocked) != 1)
			goto free;
		atomic_dec(&ptw_nr_blocked);
		if (!success) {
			/* a trylock, or a killable wait interrupted */
			atomic64_inc(&ptw_stats.failed_attempts);
			if (w->write)
				ptw_chain_left(w);
			ptw_stall_take_back(w);
			goto free;
		}
		memset(&r, 0, sizeof(r));
		r.walk_seq = w->walk_seq;
		r.start_ns = w->t0;
		r.wait_ns = now - w->t0;
		r.waiter_pid = task_pid_nr(current);
		ptw_current_comm(r.waiter_comm);
		r.target_tgid = w->target_tgid;
		r.walker_pid = w->walker_pid;
		r.kind = w->kind;
		r.write = w->write;
		r.walker_write = w->walker_write;
		r.success = success;
		/*
		 * Every hold that held us has ended (a read hold of the walk
		 * now is not ours: it began after the writer we queued behind
		 * took the lock, or its release's decision is in flight).
		 */
		wh = (u64)atomic64_read(&w->walker_held) & PTW_ACC_NS;
		sp = ((u64)atomic64_read(&w->spread) & PTW_ACC_NS) +
		     w->t0_spread + spread;
		oh = (u64)atomic64_read(&w->others_held) & PTW_ACC_NS;
		r.walker_held_ns = min(wh, r.wait_ns);
		r.others_held_ns = min(oh, r.wait_ns - r.walker_held_ns);
		r.vma_chain_ns = min((u64)atomic64_read(&w->vma_chain) &
				     PTW_ACC_NS, r.wait_ns - r.walker_held_ns);
		r.split_complete = !atomic_read(&w->split_lost);
		r.clock_spread_ns = sp;
		/* the walk's only part: holds that ended before our slot */
		if (!wh && w->late_seq == w->walk_seq && !w->late_out)
			r.late_hold_ns = min(w->late_hold, r.wait_ns);
		/*
		 * A complete split no hold of the walk is in: the waiter read
		 * the walk's lock_t0 as the walk released it, the release's
		 * stamp before the wait's.  The walk's up_read() follows the
		 * probes, each read of the clock as late as its vCPU is run:
		 * the walk may have held it for part of the wait or not (7.3:
		 * the tracepoints split such waits 0 and 0.05-0.34 ms the
		 * walk's).  Listed, its walk part not known (at_release).
		 */
		if (!wh && !w->write && ptw_chain_holds(w))
			r.split_complete = 0;
		if (r.split_complete && !wh && !r.vma_chain_ns) {
			atomic64_inc(&ptw_stats.waits_unblocked);
			r.split_complete = 0;
			r.at_release = 1;
		}
		ptw_push_stall(&r);
free:
		atomic_dec(&ptw_nr_waiting);
		atomic_long_set_release(&w->task_key, 0);
		return;
	}
}
NOKPROBE_SYMBOL(ptw_wait_end);
