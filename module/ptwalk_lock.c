// SPDX-License-Identifier: GPL-2.0
/*
 * ptwalk locks: probes on the mmap_lock and tlb tracepoints; the walker's
 * holds of the target's mmap_lock, and which waits of other tasks they
 * blocked (stalls).
 *
 * A wait (mmap_lock_start_locking .. mmap_lock_acquire_returned) of another
 * task on a walked mm is a stall when the walker held that mm's lock, in a
 * mode that excludes the waiter's, at some moment of the wait.  That is
 * decided from state recorded at two moments only: when the wait starts
 * (the walker holds it now) and when the walker takes the lock (it marks
 * every excluded waiter of that mm).  Both sides publish their own state,
 * then look at the other's (a full barrier between), so at least one of
 * them sees the overlap.  A trylock emits no start_locking and is never a
 * wait; a wait that no walker hold excluded is not a stall.  One chain
 * is followed: a reader that arrives while a writer the walk blocks is
 * queued waits behind that writer (rwsem does not let readers pass a
 * waiting writer), so the walk blocks it too.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/tracepoint.h>
#include <linux/mm_types.h>
/* the kernel's own event headers, to validate our probe prototypes */
#include <trace/events/mmap_lock.h>
#include <trace/events/tlb.h>

#include "ptwalk.h"
#include "compat/ptwalk_compat.h"

/* A task waiting for a walked mm's mmap_lock. */
struct ptw_waiter {
	atomic_long_t task_key;	/* 0 = free */
	unsigned long mm_key;
	u64 t0;
	bool write;
	atomic_t blocked;	/* a walker hold excluded this wait */
	/* written by whoever set blocked, before the waiter can return */
	u64 walk_seq;
	u32 kind;
	u32 walker_write;
	pid_t walker_pid;
	pid_t target_tgid;
};

/* A task holding a walked mm's mmap_lock (to adopt smaps' m_start hold). */
struct ptw_holder {
	atomic_long_t task_key;	/* 0 = free */
	unsigned long mm_key;
	u64 t0;
	bool write;
};

static struct ptw_waiter ptw_wait[PTW_MAX_WAITERS];
static atomic_t ptw_wait_hw = ATOMIC_INIT(0);
static atomic_t ptw_nr_waiting = ATOMIC_INIT(0);

static struct ptw_holder ptw_hold[PTW_MAX_HOLDERS];
static atomic_t ptw_nr_holders = ATOMIC_INIT(0);

static inline bool ptw_excludes(bool hold_write, bool wait_write)
{
	return hold_write || wait_write;
}

static void ptw_hw_raise(atomic_t *hw, int to)
{
	int cur = atomic_read(hw);

	while (cur < to) {
		int old = atomic_cmpxchg(hw, cur, to);

		if (old == cur)
			break;
		cur = old;
	}
}
NOKPROBE_SYMBOL(ptw_hw_raise);

/* blocked: 0 no, 2 being marked (walk fields in writing), 1 marked */
static void ptw_mark_blocked(struct ptw_waiter *w, struct ptw_active *a)
{
	if (atomic_cmpxchg(&w->blocked, 0, 2) != 0)
		return;
	w->walk_seq = READ_ONCE(a->seq);
	w->kind = a->kind;
	w->walker_write = READ_ONCE(a->lock_write);
	w->walker_pid = READ_ONCE(a->walker_pid);
	w->target_tgid = a->target_tgid;
	atomic_set_release(&w->blocked, 1);
	atomic64_inc(&a->stalls);
}
NOKPROBE_SYMBOL(ptw_mark_blocked);

static bool ptw_blocked_writer_waits(unsigned long mmk, struct ptw_waiter *self,
				     u64 seq, u64 t0);

/*
 * The walker of a holds the lock since t0: mark every waiter it excludes,
 * then every reader queued behind a writer it blocks.
 */
static void ptw_hold_begin(struct ptw_active *a, u64 t0, bool write)
{
	unsigned int i, n;

	WRITE_ONCE(a->lock_write, write);
	WRITE_ONCE(a->lock_t0, t0);
	a->lock_holds++;
	a->hold_used = atomic_read(&a->in_call) > 0;
	/* a file walk starts when its reader takes the lock for it (m_start) */
	if (!a->started)
		ptw_begin(a, t0);
	smp_mb();	/* lock_t0 visible before we look at the waiters */
	if (!atomic_read(&ptw_nr_waiting))
		return;
	n = min_t(unsigned int, atomic_read(&ptw_wait_hw), PTW_MAX_WAITERS);
	for (i = 0; i < n; i++) {
		struct ptw_waiter *w = &ptw_wait[i];
		unsigned long tk = atomic_long_read_acquire(&w->task_key);

		if (!tk || (tk & 1) || tk == a->task_key ||
		    READ_ONCE(w->mm_key) != a->mm_key)
			continue;
		if (ptw_excludes(write, READ_ONCE(w->write)))
			ptw_mark_blocked(w, a);
	}
	if (write)
		return;	/* every waiter is excluded already */
	for (i = 0; i < n; i++) {
		struct ptw_waiter *w = &ptw_wait[i];
		unsigned long tk = atomic_long_read_acquire(&w->task_key);

		if (!tk || (tk & 1) || tk == a->task_key ||
		    READ_ONCE(w->mm_key) != a->mm_key || READ_ONCE(w->write) ||
		    atomic_read(&w->blocked))
			continue;
		if (ptw_blocked_writer_waits(a->mm_key, w, READ_ONCE(a->seq),
					     READ_ONCE(w->t0)))
			ptw_mark_blocked(w, a);
	}
}
NOKPROBE_SYMBOL(ptw_hold_begin);

/* a writer waits for mm since before t0, blocked by the walk seq */
static bool ptw_blocked_writer_waits(unsigned long mmk, struct ptw_waiter *self,
				     u64 seq, u64 t0)
{
	unsigned int i, n;

	n = min_t(unsigned int, atomic_read(&ptw_wait_hw), PTW_MAX_WAITERS);
	for (i = 0; i < n; i++) {
		struct ptw_waiter *w = &ptw_wait[i];

		unsigned long tk = atomic_long_read_acquire(&w->task_key);

		if (w != self && tk && !(tk & 1) &&
		    READ_ONCE(w->mm_key) == mmk && READ_ONCE(w->write) &&
		    atomic_read_acquire(&w->blocked) == 1 &&
		    READ_ONCE(w->walk_seq) == seq && READ_ONCE(w->t0) <= t0)
			return true;
	}
	return false;
}
NOKPROBE_SYMBOL(ptw_blocked_writer_waits);

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
void ptw_adopt_hold(struct ptw_active *a)
{
	struct ptw_holder *h;

	if (!atomic_read(&ptw_nr_holders) || a->call_scoped)
		return;
	h = ptw_holder_find((unsigned long)current, a->mm_key);
	if (h)
		ptw_hold_begin(a, h->t0, h->write);
}
NOKPROBE_SYMBOL(ptw_adopt_hold);

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
}
NOKPROBE_SYMBOL(ptw_holder_add);

static void ptw_holder_remove(unsigned long me, unsigned long mmk)
{
	struct ptw_holder *h;

	if (!atomic_read(&ptw_nr_holders))
		return;
	h = ptw_holder_find(me, mmk);
	if (!h)
		return;
	atomic_dec(&ptw_nr_holders);
	atomic_long_set_release(&h->task_key, 0);
}
NOKPROBE_SYMBOL(ptw_holder_remove);

/* ---- the three mmap_lock events ----------------------------------- */

static void ptw_lock_start(struct mm_struct *mm, bool write)
{
	unsigned long me = (unsigned long)current;
	unsigned long mmk = (unsigned long)mm;
	struct ptw_waiter *w;
	unsigned int i, n;

	n = ptw_act_limit();
	if (atomic_read(&ptw_nr_live)) {
		for (i = 0; i < n; i++) {
			struct ptw_active *a = &ptw_act[i];

			if (!ptw_live(a) || READ_ONCE(a->mm_key) != mmk ||
			    READ_ONCE(a->task_key) != me)
				continue;
			/* the walker itself waits for the target's lock */
			if (atomic_read(&a->in_call) > 0)
				a->wait_t0 = ktime_get_ns();
			return;
		}
	}
	/*
	 * Every wait is tracked, not only waits on an mm walked right now: a
	 * walker that takes the lock ahead of a writer queued before the walk
	 * began (rwsem lock stealing) blocks that writer as surely.
	 */
	for (i = 0; i < PTW_MAX_WAITERS; i++) {
		w = &ptw_wait[i];
		/* claimed busy (low bit: task pointers are aligned) */
		if (atomic_long_read(&w->task_key) == 0 &&
		    atomic_long_cmpxchg(&w->task_key, 0, me | 1) == 0)
			goto found;
	}
	atomic64_inc(&ptw_stats.waits_dropped);
	return;

found:
	atomic_set(&w->blocked, 0);
	w->mm_key = mmk;
	w->write = write;
	w->t0 = ktime_get_ns();
	atomic_long_set_release(&w->task_key, me);	/* published */
	ptw_hw_raise(&ptw_wait_hw, i + 1);
	atomic_inc(&ptw_nr_waiting);
	smp_mb();	/* our slot visible before we look at the walkers */
	for (i = 0; i < n; i++) {
		struct ptw_active *a = &ptw_act[i];

		if (!ptw_live(a) || READ_ONCE(a->mm_key) != mmk ||
		    READ_ONCE(a->task_key) == me)
			continue;
		if (READ_ONCE(a->lock_t0) &&
		    ptw_excludes(READ_ONCE(a->lock_write), write)) {
			ptw_mark_blocked(w, a);
			break;
		}
		/*
		 * A reader queues behind a waiting writer (rwsem readers do
		 * not pass one): behind a writer this walk blocks, the walk
		 * blocks the reader too.
		 */
		if (!write && ptw_blocked_writer_waits(mmk, w, READ_ONCE(a->seq),
						       w->t0)) {
			ptw_mark_blocked(w, a);
			break;
		}
	}
}
NOKPROBE_SYMBOL(ptw_lock_start);

static void ptw_wait_end(unsigned long me, unsigned long mmk, u64 now,
			 bool success)
{
	unsigned int i, n, spins;

	n = min_t(unsigned int, atomic_read(&ptw_wait_hw), PTW_MAX_WAITERS);
	for (i = 0; i < n; i++) {
		struct ptw_waiter *w = &ptw_wait[i];
		struct ptw_stall_rec r;

		if (atomic_long_read(&w->task_key) != me || w->mm_key != mmk)
			continue;
		/* a walker marking us finishes in a few instructions */
		for (spins = 0; atomic_read_acquire(&w->blocked) == 2 &&
		     spins < 10000; spins++)
			cpu_relax();
		if (atomic_read_acquire(&w->blocked) != 1)
			goto free;
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
		ptw_push_stall(&r);
free:
		atomic_dec(&ptw_nr_waiting);
		atomic_long_set_release(&w->task_key, 0);
		return;
	}
}
NOKPROBE_SYMBOL(ptw_wait_end);

static void ptw_lock_acquired(struct mm_struct *mm, bool write, bool success)
{
	unsigned long me = (unsigned long)current;
	unsigned long mmk = (unsigned long)mm;
	bool file_walk = false, walker = false;
	unsigned int i, n;
	u64 now;

	if (!atomic_read(&ptw_nr_waiting) && !atomic_read(&ptw_nr_live))
		return;
	now = ktime_get_ns();
	/* (waits are tracked from start_locking: see ptw_lock_start()) */
	if (atomic_read(&ptw_nr_waiting))
		ptw_wait_end(me, mmk, now, success);

	if (!atomic_read(&ptw_nr_live))
		return;
	n = ptw_act_limit();
	for (i = 0; i < n; i++) {
		struct ptw_active *a = &ptw_act[i];

		if (!ptw_live(a) || READ_ONCE(a->mm_key) != mmk)
			continue;
		if (READ_ONCE(a->task_key) != me) {
			file_walk |= !a->call_scoped;
			continue;
		}
		walker = true;
		if (a->wait_t0) {
			a->lock_wait_ns += now - a->wait_t0;
			a->wait_t0 = 0;
		}
		if (success)
			ptw_hold_begin(a, now, write);
	}
	/* another task may read a file walk of this mm: remember its hold */
	if (success && file_walk && !walker)
		ptw_holder_add(me, mmk, now, write);
}
NOKPROBE_SYMBOL(ptw_lock_acquired);

static void ptw_lock_released(struct mm_struct *mm, bool write)
{
	unsigned long me = (unsigned long)current;
	unsigned long mmk = (unsigned long)mm;
	unsigned int i, n;
	u64 now;

	if (!atomic_read(&ptw_nr_live) && !atomic_read(&ptw_nr_holders))
		return;
	now = ktime_get_ns();
	ptw_holder_remove(me, mmk);
	n = ptw_act_limit();
	for (i = 0; i < n; i++) {
		struct ptw_active *a = &ptw_act[i];

		if (!ptw_live(a) || READ_ONCE(a->task_key) != me ||
		    READ_ONCE(a->mm_key) != mmk || !a->lock_t0)
			continue;
		if (a->hold_used || atomic_read(&a->in_call) > 0) {
			a->lock_hold_ns += now - a->lock_t0;
			a->lock_mode |= a->lock_write ? PTW_LOCK_WRITE :
							PTW_LOCK_READ;
			a->end_ns = max(a->end_ns, now);
		}
		WRITE_ONCE(a->lock_t0, 0);
		a->hold_used = false;
	}
}
NOKPROBE_SYMBOL(ptw_lock_released);

/* Probe prototypes: see compat/ptwalk_compat.h (checked by the compiler). */
static void ptw_tp_start_locking(void *data, PTW_MMAP_LOCK_ARGS)
{
	ptw_lock_start(mm, write);
}
NOKPROBE_SYMBOL(ptw_tp_start_locking);

static void ptw_tp_acquire_returned(void *data, PTW_MMAP_LOCK_ACQ_ARGS)
{
	ptw_lock_acquired(mm, write, success);
}
NOKPROBE_SYMBOL(ptw_tp_acquire_returned);

static void ptw_tp_released(void *data, PTW_MMAP_LOCK_ARGS)
{
	ptw_lock_released(mm, write);
}
NOKPROBE_SYMBOL(ptw_tp_released);

/*
 * tlb:tlb_flush, in the walker's own context inside a walk call.  Counted:
 * local flushes it did (TLB_LOCAL_SHOOTDOWN, TLB_LOCAL_MM_SHOOTDOWN) and
 * flush IPIs it sent (TLB_REMOTE_SEND_IPI).  Not counted: flushes on task
 * switch, and TLB_REMOTE_SHOOTDOWN, a flush this CPU received for another
 * CPU's request, which the walk did not issue.
 */
static void ptw_tp_tlb_flush(void *data, int reason, unsigned long pages)
{
	struct ptw_active *a;

	if (!atomic_read(&ptw_nr_live))
		return;
	if (reason != TLB_LOCAL_SHOOTDOWN && reason != TLB_LOCAL_MM_SHOOTDOWN &&
	    reason != TLB_REMOTE_SEND_IPI)
		return;
	a = ptw_find_current_call();
	if (!a)
		return;
	if (reason == TLB_REMOTE_SEND_IPI)
		atomic64_inc(&a->tlb_ipis);
	else
		atomic64_inc(&a->tlb_flushes);
}
NOKPROBE_SYMBOL(ptw_tp_tlb_flush);

/*
 * Registration.  The mmap_lock tracepoints are exported: register with the
 * kernel's typed register_trace_*(), so a prototype change fails the
 * build.  tlb_flush is not exported to modules: it is found by name, and
 * its prototype is checked against the kernel's register_trace_tlb_flush()
 * in an unevaluated sizeof (type checked, never referenced).
 */
enum { PTW_TP_START, PTW_TP_ACQUIRED, PTW_TP_RELEASED, PTW_TP_TLB };

struct ptw_tp_hook ptw_tp_hooks[] = {
	[PTW_TP_START] = { .name = "mmap_lock_start_locking" },
	[PTW_TP_ACQUIRED] = { .name = "mmap_lock_acquire_returned" },
	[PTW_TP_RELEASED] = { .name = "mmap_lock_released" },
	[PTW_TP_TLB] = { .name = "tlb_flush" },
};

const unsigned int ptw_nr_tp_hooks = ARRAY_SIZE(ptw_tp_hooks);

static struct tracepoint *ptw_tlb_tp;

static void ptw_tp_lookup(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "tlb_flush"))
		ptw_tlb_tp = tp;
}

static int ptw_mmap_lock_register(void)
{
	int err;

	err = register_trace_mmap_lock_start_locking(ptw_tp_start_locking,
						      NULL);
	if (err)
		return err;
	err = register_trace_mmap_lock_acquire_returned(ptw_tp_acquire_returned,
							NULL);
	if (err)
		goto err_start;
	err = register_trace_mmap_lock_released(ptw_tp_released, NULL);
	if (err)
		goto err_acquired;
	return 0;

err_acquired:
	unregister_trace_mmap_lock_acquire_returned(ptw_tp_acquire_returned,
						    NULL);
err_start:
	unregister_trace_mmap_lock_start_locking(ptw_tp_start_locking, NULL);
	return err;
}

int ptw_lock_init(void)
{
	unsigned int i;
	int err, nr = 0;

	BUILD_BUG_ON(sizeof(register_trace_tlb_flush(ptw_tp_tlb_flush, NULL)) !=
		     sizeof(int));

	/* the three mmap_lock probes attach all or nothing */
	err = ptw_mmap_lock_register();
	for (i = PTW_TP_START; i <= PTW_TP_RELEASED; i++) {
		ptw_tp_hooks[i].err = err;
		ptw_tp_hooks[i].attached = !err;
	}
	if (err)
		pr_info("mmap_lock tracepoints: register failed (%d), lock hooks disabled\n",
			err);
	else
		nr += 3;

	for_each_kernel_tracepoint(ptw_tp_lookup, NULL);
	if (!ptw_tlb_tp)
		err = -ENOENT;
	else
		err = tracepoint_probe_register(ptw_tlb_tp, ptw_tp_tlb_flush,
						NULL);
	ptw_tp_hooks[PTW_TP_TLB].err = err;
	ptw_tp_hooks[PTW_TP_TLB].attached = !err;
	if (err)
		pr_info("tracepoint tlb_flush: missing (%d), hook disabled\n",
			err);
	else
		nr++;
	return nr;
}

void ptw_lock_exit(void)
{
	unsigned int i;

	if (ptw_tp_hooks[PTW_TP_START].attached) {
		unregister_trace_mmap_lock_released(ptw_tp_released, NULL);
		unregister_trace_mmap_lock_acquire_returned(ptw_tp_acquire_returned,
							    NULL);
		unregister_trace_mmap_lock_start_locking(ptw_tp_start_locking,
							 NULL);
	}
	if (ptw_tp_hooks[PTW_TP_TLB].attached)
		tracepoint_probe_unregister(ptw_tlb_tp, ptw_tp_tlb_flush, NULL);
	for (i = 0; i < ptw_nr_tp_hooks; i++)
		ptw_tp_hooks[i].attached = false;
	/* one grace period for all: no probe of ours runs once we return */
	tracepoint_synchronize_unregister();
}
