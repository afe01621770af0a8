// SPDX-License-Identifier: GPL-2.0
/*
 * ptwalk VMA locks: the per-VMA lock view, on kernels whose VMA locks are
 * reference counts (mm->vma_writer_wait; KERNEL-FACTS.md 29), where the proc walkers
 * read-lock one VMA at a time (maps 6.17, smaps 7.2) and no tracepoint
 * sees it.
 *
 * - The walker's read locks: lock_next_vma() returns the next VMA
 *   read-locked; the proc code (get_next_vma()) drops the previous one just
 *   before the call.  A hold is counted from the lock to the end of the
 *   hooked call that walks it, or to the next lock_next_vma() call
 *   (ptwalk_walk.c).
 * - The writers that wait for them: __vma_start_write() (a VMA write lock,
 *   taken with mmap_lock held for write) and
 *   __vma_exclude_readers_for_detach() (a VMA's removal) wait in
 *   rcuwait_wait_event() on the mm's vma_writer_wait until no reader is
 *   left; each reader's release during the wait calls
 *   rcuwait_wake_up(&mm->vma_writer_wait) (vma_refcount_put()).  A wake-up
 *   from a task walking that mm is the walk's release: the wait up to it is
 *   the walk's part (walker_held_ns).
 *
 * Only mms with a walk in progress are tracked: every other writer's entry
 * handler returns 1 (no return probe).  Kernel pointers are opaque keys,
 * compared and never printed; the VMA's mm is read with
 * get_kernel_nofault().  Every handler runs in probe context (preemption
 * disabled), also on PREEMPT_RT: atomics only, nothing allocated.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/kprobes.h>
#include <linux/ptrace.h>
#include <linux/err.h>
#include <linux/mm_types.h>
#include <linux/mmap_lock.h>
#include <linux/rcuwait.h>
#include <linux/uaccess.h>
#include <linux/timekeeping.h>

#include "ptwalk.h"

#ifdef PTW_VMA_REFCNT_LOCKS
const bool ptw_vma_view_built = true;
/*
 * The hooked functions' prototypes, as the handlers read them, checked by
 * the compiler in unevaluated expressions: __vma_start_write()'s first
 * argument is the VMA, rcuwait_wake_up()'s the mm's writer wait, and
 * lock_next_vma() takes the mm first and returns the VMA it locked.
 */
static_assert(sizeof(__vma_start_write((struct vm_area_struct *)NULL, 0)) >= 0);
static_assert(sizeof(rcuwait_wake_up(&((struct mm_struct *)NULL)->vma_writer_wait)) > 0);
#ifdef PTW_HAVE_LOCK_NEXT_VMA
#define PTW_NEXT_VMA_RET typeof(lock_next_vma((struct mm_struct *)NULL, NULL, 0UL))
static_assert(__builtin_types_compatible_p(PTW_NEXT_VMA_RET,
					   struct vm_area_struct *));
#endif
#else
const bool ptw_vma_view_built;
#endif

/* a write lock's wait shorter than this, with no wake-up, is not kept */
#define PTW_VMA_WAIT_MIN_NS	10000ULL

/* One writer waiting for the read locks of a walked mm's VMA. */
struct ptw_vma_writer {
	atomic_long_t task_key;	/* 0 = free */
	unsigned long mm_key;
	unsigned long wq_key;	/* &mm->vma_writer_wait */
	u64 t0;
	u64 wake_ns;		/* the last wake-up (0: none) */
	pid_t waker_pid;
	u64 walker_wake_ns;	/* the last wake-up by a walker of mm (0: none) */
	u64 walk_seq;
	int walk_slot;
	u32 walk_kind;
	pid_t target_tgid;
	bool detach;
};

static struct ptw_vma_writer ptw_vma_writers[PTW_MAX_VMA_WRITERS];
static atomic_t ptw_vma_nr_writers = ATOMIC_INIT(0);

static int ptw_vma_writer_claim(unsigned long mm_key, unsigned long wq_key,
				bool detach, u64 now)
{
	unsigned long me = (unsigned long)current;
	int i;

	for (i = 0; i < PTW_MAX_VMA_WRITERS; i++) {
		struct ptw_vma_writer *w = &ptw_vma_writers[i];

		if (atomic_long_cmpxchg(&w->task_key, 0, me) != 0)
			continue;
		w->mm_key = mm_key;
		w->t0 = now;
		w->wake_ns = 0;
		w->waker_pid = 0;
		w->walker_wake_ns = 0;
		w->walk_seq = 0;
		w->walk_slot = -1;
		w->walk_kind = 0;
		w->target_tgid = 0;
		w->detach = detach;
		/* the key last: a wake-up matches a whole entry */
		smp_store_release(&w->wq_key, wq_key);
		atomic_inc(&ptw_vma_nr_writers);
		return i;
	}
	atomic64_inc(&ptw_stats.vma_waits_dropped);
	return -1;
}
NOKPROBE_SYMBOL(ptw_vma_writer_claim);

static int ptw_vma_entry(struct kretprobe_instance *ri, struct pt_regs *regs,
			 bool detach)
{
#ifdef PTW_VMA_REFCNT_LOCKS
	/* __vma_start_write(vma, ...), __vma_exclude_readers_for_detach(vma) */
	struct vm_area_struct *vma =
		(struct vm_area_struct *)regs_get_kernel_argument(regs, 0);
	struct ptw_ri *d = (struct ptw_ri *)ri->data;
	struct mm_struct *mm;
	u64 now;

	if (get_kernel_nofault(mm, &vma->vm_mm)) {
		atomic64_inc(&ptw_stats.arg_faults);
		return 1;
	}
	if (ptw_lock_mm_walked((unsigned long)mm) < 0)
		return 1;
	now = ktime_get_ns();
	d->t0 = now;
	d->key = (unsigned long)mm;
	d->slot = ptw_vma_writer_claim((unsigned long)mm,
				       (unsigned long)&mm->vma_writer_wait,
				       detach, now);
	return d->slot < 0 ? 1 : 0;
#else
	return 1;
#endif
}

int ptw_vma_write_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	return ptw_vma_entry(ri, regs, false);
}
NOKPROBE_SYMBOL(ptw_vma_write_entry);

int ptw_vma_detach_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	return ptw_vma_entry(ri, regs, true);
}
NOKPROBE_SYMBOL(ptw_vma_detach_entry);

/* the wait is over: kept when it slept or lasted, the entry freed */
int ptw_vma_write_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct ptw_ri *d = (struct ptw_ri *)ri->data;
	struct ptw_vma_writer *w = &ptw_vma_writers[d->slot];
	struct ptw_vma_wait_rec r;
	u64 now = ktime_get_ns();
	u64 wake = READ_ONCE(w->wake_ns);
	u64 walker_wake = READ_ONCE(w->walker_wake_ns);
	int slot;

	memset(&r, 0, sizeof(r));
	r.start_ns = d->t0;
	r.wait_ns = now - d->t0;
	r.detach = w->detach;
	if (walker_wake) {
		r.behind_walk = 1;
		r.walk_seq = READ_ONCE(w->walk_seq);
		r.kind = READ_ONCE(w->walk_kind);
		r.target_tgid = READ_ONCE(w->target_tgid);
		r.walker_held_ns = min(walker_wake - min(walker_wake, d->t0),
				       r.wait_ns);
		/* the mmap_lock waits queued behind us meanwhile */
		ptw_lock_vma_chain(READ_ONCE(w->walk_slot), r.walk_seq, d->t0,
				   d->t0 + r.walker_held_ns);
	} else {
		/* the walk of the mm in progress, if any still is */
		slot = ptw_lock_mm_walked(d->key);
		if (slot < 0 || !ptw_lock_walk_id(slot, &r.walk_seq, &r.kind,
						  &r.target_tgid))
			r.walk_seq = 0;
	}
	r.waker_pid = wake ? READ_ONCE(w->waker_pid) : 0;
	/* free the entry: no wake-up matches it any more */
	WRITE_ONCE(w->wq_key, 0);
	atomic_dec(&ptw_vma_nr_writers);
	atomic_long_set_release(&w->task_key, 0);

	if (!wake && r.wait_ns < PTW_VMA_WAIT_MIN_NS)
		return 0;
	if (!r.walk_seq)
		return 0;	/* no walk to name: the walk ended before */
	r.writer_pid = task_pid_nr(current);
	ptw_current_comm(r.writer_comm);
	ptw_push_vma_wait(&r);
	return 0;
}
NOKPROBE_SYMBOL(ptw_vma_write_ret);

/* rcuwait_wake_up(w): a reader's release woke a VMA writer (or any other
 * rcuwait user: only the keys of tracked writers match)
 */
int ptw_vma_wake_pre(struct kprobe *p, struct pt_regs *regs)
{
	unsigned long wq = regs_get_kernel_argument(regs, 0);
	u64 now = 0;
	int i;

	if (!atomic_read(&ptw_vma_nr_writers))
		return 0;
	for (i = 0; i < PTW_MAX_VMA_WRITERS; i++) {
		struct ptw_vma_writer *w = &ptw_vma_writers[i];
		u64 seq;
		u32 kind;
		pid_t tgid;
		int slot;

		/* pairs with the claim's release: a match sees a whole entry */
		if (smp_load_acquire(&w->wq_key) != wq || !wq)
			continue;
		if (!now)
			now = ktime_get_ns();
		WRITE_ONCE(w->waker_pid, task_pid_nr(current));
		WRITE_ONCE(w->wake_ns, now);
		/* the waker walks this mm: the release is the walk's */
		slot = ptw_lock_next_walk(w->mm_key, 0);
		if (slot >= 0 && ptw_lock_walk_id(slot, &seq, &kind, &tgid)) {
			WRITE_ONCE(w->walk_seq, seq);
			WRITE_ONCE(w->walk_slot, slot);
			WRITE_ONCE(w->walk_kind, kind);
			WRITE_ONCE(w->target_tgid, tgid);
			WRITE_ONCE(w->walker_wake_ns, now);
		}
	}
	return 0;
}
NOKPROBE_SYMBOL(ptw_vma_wake_pre);

/*
 * lock_next_vma(mm, vmi, from_addr): the walker moves to its next VMA.  It
 * is a call of the walk for the lock side: the mmap_lock it takes for a
 * moment when a VMA cannot be read-locked (lock_next_vma_under_mmap_lock())
 * is the walk's hold, as the tracepoints see it, not another holder's.
 */
int ptw_vma_next_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct ptw_ri *d = (struct ptw_ri *)ri->data;
	unsigned long mm_key = regs_get_kernel_argument(regs, 0);

	d->slot = ptw_lock_next_walk(mm_key, 0);
	if (d->slot < 0)
		return 1;
	d->key = mm_key;
	/* get_next_vma() dropped the previous VMA's lock just before */
	ptw_walk_vma_unlocking(mm_key, ktime_get_ns());
	ptw_lock_call_enter(d->slot);
	return 0;
}
NOKPROBE_SYMBOL(ptw_vma_next_entry);

int ptw_vma_next_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct ptw_ri *d = (struct ptw_ri *)ri->data;
	void *vma = (void *)regs_return_value(regs);

	if (ptw_lock_live(d->slot))
		ptw_lock_call_exit(d->slot);
	ptw_walk_vma_locked(d->key, ktime_get_ns(), !IS_ERR_OR_NULL(vma),
			    IS_ERR(vma));
	return 0;
}
NOKPROBE_SYMBOL(ptw_vma_next_ret);
