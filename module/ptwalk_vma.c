// SPDX-License-Identifier: GPL-2.0
/*
 * ptwalk VMA locks: the per-VMA lock view, on kernels whose VMA locks are
 * reference counts (mm->vma_writer_wait; KERNEL-FACTS.md 29), where the
 * proc walkers read-lock one VMA at a time (maps 6.17, smaps 7.2) and no
 * tracepoint sees it.
 *
 * - The walker's read locks: lock_next_vma() returns the next VMA
 *   read-locked; the proc code (get_next_vma()) drops the previous one just
 *   before the call.  A hold is counted from the lock to the end of the
 *   hooked call that walks it, or to the next lock_next_vma() call
 *   (ptwalk_walk.c), and the walk remembers which VMA it was.
 * - The writers that wait for them: __vma_start_write() (a VMA write lock,
 *   taken with mmap_lock held for write) and
 *   __vma_exclude_readers_for_detach() (a VMA's removal) wait in
 *   rcuwait_wait_event() until no reader of that VMA is left.  The writer
 *   registers the VMA it waits for (ptw_walk_vma_writer_begin()); a walk's
 *   hold of that same VMA (the pointer lock_next_vma() returned) that ends
 *   during the wait marks the entry, and the wait up to that end is the
 *   walk's (walker_held_ns), and so is every mmap_lock wait queued behind
 *   the writer meanwhile (ptw_lock_vma_chain()).  The hold's end is the
 *   end of the call that walked the VMA; the release follows within the
 *   iteration step (m_next, m_stop), microseconds later.
 *
 * Only mms with a walk in progress are tracked: every other writer's entry
 * handler returns 1 (no return probe).  Kernel pointers are opaque keys,
 * compared and never printed; the VMA's mm is read with
 * get_kernel_nofault().  Every handler runs in probe context (preemption
 * disabled), also on PREEMPT_RT: nothing is allocated.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/kprobes.h>
#include <linux/ptrace.h>
#include <linux/err.h>
#include <linux/mm_types.h>
#include <linux/mmap_lock.h>
#include <linux/uaccess.h>
#include <linux/timekeeping.h>

#include "ptwalk.h"

#ifdef PTW_VMA_REFCNT_LOCKS
const bool ptw_vma_view_built = true;
/*
 * The hooked functions' prototypes, as the handlers read them, checked by
 * the compiler in unevaluated expressions: __vma_start_write()'s first
 * argument is the VMA, and lock_next_vma() takes the mm first and returns
 * the VMA it locked.
 */
static_assert(sizeof(__vma_start_write((struct vm_area_struct *)NULL, 0)) >= 0);
#ifdef PTW_HAVE_LOCK_NEXT_VMA
#define PTW_NEXT_VMA_RET typeof(lock_next_vma((struct mm_struct *)NULL, NULL, 0UL))
static_assert(__builtin_types_compatible_p(PTW_NEXT_VMA_RET,
					   struct vm_area_struct *));
#endif
#else
const bool ptw_vma_view_built;
#endif

/* a write lock's wait shorter than this is not kept */
#define PTW_VMA_WAIT_MIN_NS	10000ULL

static int ptw_vma_entry(struct kretprobe_instance *ri, struct pt_regs *regs,
			 bool detach)
{
#ifdef PTW_VMA_REFCNT_LOCKS
	/* __vma_start_write(vma, ...), __vma_exclude_readers_for_detach(vma) */
	struct vm_area_struct *vma =
		(struct vm_area_struct *)regs_get_kernel_argument(regs, 0);
	struct ptw_vma_ri *d = (struct ptw_vma_ri *)ri->data;
	struct mm_struct *mm;

	if (get_kernel_nofault(mm, &vma->vm_mm)) {
		atomic64_inc(&ptw_stats.arg_faults);
		return 1;
	}
	if (ptw_lock_mm_walked_from((unsigned long)mm, PTW_ALL_KINDS, 0) < 0)
		return 1;
	d->t0 = ptw_now_ns();
	d->mm_key = (unsigned long)mm;
	d->vma_key = (unsigned long)vma;
	d->detach = detach;
	d->idx = ptw_walk_vma_writer_begin(d->vma_key, d->t0);
	return d->idx < 0 ? 1 : 0;
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

/*
 * The wait is over: a walk of the mm (one that read-locks VMAs) whose hold
 * of this VMA ended within it kept the writer waiting until then.
 */
int ptw_vma_write_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct ptw_vma_ri *d = (struct ptw_vma_ri *)ri->data;
	struct ptw_vma_wait_rec r;
	u64 now = ptw_now_ns(), end;
	int slot;

	memset(&r, 0, sizeof(r));
	r.start_ns = d->t0;
	r.wait_ns = now - d->t0;
	r.detach = d->detach;
	if (ptw_walk_vma_writer_end(d->idx, d->mm_key, PTW_VMA_LOCK_KINDS, now,
				    &slot, &end) &&
	    ptw_lock_walk_id(slot, &r.walk_seq, &r.kind, &r.target_tgid)) {
		r.behind_walk = 1;
		r.walker_pid = ptw_lock_walker_pid(slot);
		r.walker_held_ns = min(end - min(end, d->t0), r.wait_ns);
		/* the mmap_lock waits queued behind us meanwhile */
		ptw_lock_vma_chain(slot, r.walk_seq, d->t0, end);
	} else {
		slot = ptw_lock_mm_walked_from(d->mm_key, PTW_VMA_LOCK_KINDS, 0);
		if (r.wait_ns < PTW_VMA_WAIT_MIN_NS || slot < 0 ||
		    !ptw_lock_walk_id(slot, &r.walk_seq, &r.kind,
				      &r.target_tgid))
			return 0;	/* short, or no walk to name */
	}
	r.writer_pid = task_pid_nr(current);
	ptw_current_comm(r.writer_comm);
	ptw_push_vma_wait(&r);
	return 0;
}
NOKPROBE_SYMBOL(ptw_vma_write_ret);

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

	d->slot = ptw_lock_walk_of(mm_key, PTW_VMA_LOCK_KINDS);
	if (d->slot < 0)
		return 1;
	d->key = mm_key;
	/* get_next_vma() dropped the previous VMA's lock just before */
	ptw_walk_vma_unlocking(d->slot, ptw_now_ns());
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
	/*
	 * Only -EAGAIN sends the reader on under mmap_lock (7.3
	 * fs/proc/task_mmu.c proc_get_vma(): fallback_to_mmap_lock()); -EINTR,
	 * a fatal signal in lock_next_vma_under_mmap_lock(), ends the read.
	 */
	ptw_walk_vma_locked(d->slot, ptw_now_ns(),
			    IS_ERR_OR_NULL(vma) ? 0 : (unsigned long)vma,
			    PTR_ERR_OR_ZERO(vma) == -EAGAIN);
	return 0;
}
NOKPROBE_SYMBOL(ptw_vma_next_ret);
