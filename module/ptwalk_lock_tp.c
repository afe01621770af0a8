// SPDX-License-Identifier: GPL-2.0
/*
 * ptwalk locks, the probes: the mmap_lock and tlb tracepoints and their
 * typed registration.  They feed ptwalk_walk.c (a walk its walker's hold
 * begins, the tlb_flush counts) and the lock decisions of ptwalk_lock.c;
 * neither calls back.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/hash.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/tracepoint.h>
#include <linux/mm_types.h>
/* the kernel's own event headers, to validate our probe prototypes */
#include <trace/events/mmap_lock.h>
#include <trace/events/tlb.h>

#include "ptwalk.h"
#include "ptwalk_lock.h"
#include "compat/ptwalk_compat.h"

/*
 * Every probe of a tracepoint reads the clock for itself, and whatever
 * holds the CPU between two probes of one event (an interrupt, perf's own
 * wakeup; in a VM the vCPU not running: measured up to 11.7 ms between
 * perf's and ftrace's read of one event under TCG on a busy host) puts the
 * event at two instants.  A tracepoint calls its probes in priority order
 * (kernel/tracepoint.c, func_add()), so ours bracket every probe of
 * default priority (perf, ftrace, BPF): a stamp probe runs first and reads
 * the event's time, as our only probe did before; the probe that decides
 * runs last and knows how far apart the others may have read it (the
 * spread, reported per stall: KERNEL-FACTS.md entry 26).
 */
#define PTW_TP_PRIO_FIRST	(TRACEPOINT_DEFAULT_PRIO + 1)
#define PTW_TP_PRIO_LAST	(TRACEPOINT_DEFAULT_PRIO - 1)

/*
 * The stamp is the task's, not the CPU's.  From 7.0 a tracepoint calls its
 * probes under SRCU with preemption enabled (include/linux/tracepoint.h,
 * __DECLARE_TRACE(): guard(srcu_fast_notrace); 6.x: preemption off), and
 * Debian's 7.3 is PREEMPT_LAZY: a task can be preempted or migrate between
 * its stamp and its decision.  A per-CPU stamp was then lost, torn by
 * another task's, or, left on a CPU the task came back to, taken for a
 * later event's time; and this_cpu_ptr() in preemptible code is a splat
 * under DEBUG_PREEMPT.  So a slot per task (its thread id hashed), each on
 * a cache line of its own, holds in one word the id + 1 and the low 32 bits
 * of the time: written whole by the stamp, taken whole by the decision.
 * Every event's stamp overwrites its task's slot, so no stale stamp
 * outlives the next event.  Two tasks that share a slot and lock at the
 * same time lose one stamp: counted (tp_stamps_lost), that boundary read
 * now with spread 0 (KERNEL-FACTS.md 26).
 */
#define PTW_TP_SLOT_BITS	8

struct ptw_tp_slot {
	atomic64_t v;
} ____cacheline_aligned_in_smp;

static struct ptw_tp_slot ptw_tp_slots[1 << PTW_TP_SLOT_BITS];

static atomic64_t *ptw_tp_slot_of(u32 id)
{
	return &ptw_tp_slots[hash_32(id, PTW_TP_SLOT_BITS)].v;
}
NOKPROBE_SYMBOL(ptw_tp_slot_of);

/*
 * Our two probes are the tracepoint's only ones: no other probe reads the
 * clock between them, so the decision's own read is the event's time and
 * the stamp is not taken (a clock read and a store fewer per event; 7.3
 * pagemap under icount: bench_vm.py --overhead).  The probe array is read
 * as the tracepoint's iterator reads it, inside the same read-side section
 * (include/linux/tracepoint.h, __DO_TRACE()/__traceiter_*()).  A probe
 * attached between the two reads of one event leaves the decision without
 * a stamp: counted in tp_stamps_lost, as any lost stamp.
 */
static bool ptw_tp_alone(struct tracepoint *tp)
{
	struct tracepoint_func *f = rcu_dereference_raw(tp->funcs);

	return f && f[0].func && f[1].func && !f[2].func;
}
NOKPROBE_SYMBOL(ptw_tp_alone);

static void ptw_tp_stamp(struct tracepoint *tp)
{
	u32 id = (u32)current->pid + 1;

	if (ptw_tp_alone(tp))
		return;
	atomic64_set(ptw_tp_slot_of(id), (s64)((u64)id << 32 | (u32)ptw_now_ns()));
}
NOKPROBE_SYMBOL(ptw_tp_stamp);

/* a decision that needs no time: this task's stamp, if any, is never reused */
static void ptw_tp_drop(void)
{
	u32 id = (u32)current->pid + 1;
	atomic64_t *slot = ptw_tp_slot_of(id);
	s64 v = atomic64_read(slot);

	if ((u64)v >> 32 == id)
		atomic64_cmpxchg(slot, v, 0);
}
NOKPROBE_SYMBOL(ptw_tp_drop);

/*
 * The event's time, read by this task's stamp probe of it (now when none
 * was seen, or none was needed), and how long ago that was.
 */
static u64 ptw_tp_time(struct tracepoint *tp, u64 *spread)
{
	u32 id = (u32)current->pid + 1, ago;
	atomic64_t *slot = ptw_tp_slot_of(id);
	u64 now = ptw_now_ns();
	s64 v;

	*spread = 0;
	if (ptw_tp_alone(tp)) {
		/* a stamp of ours from before the others left: never reused */
		ptw_tp_drop();
		return now;
	}
	v = atomic64_read(slot);
	if ((u64)v >> 32 != id || atomic64_cmpxchg(slot, v, 0) != v) {
		atomic64_inc(&ptw_stats.tp_stamps_lost);
		return now;
	}
	/* the low 32 bits wrap every 4.29 s; a stamp is microseconds old */
	ago = (u32)now - (u32)v;
	if (ago > U32_MAX / 2) {
		atomic64_inc(&ptw_stats.tp_stamps_lost);
		return now;
	}
	*spread = ago;
	return now - ago;
}
NOKPROBE_SYMBOL(ptw_tp_time);

/* Probe prototypes: see compat/ptwalk_compat.h (checked by the compiler). */
/*
 * (test only: a writer's vCPU not run after the stamp, before the other
 * probes read the clock: inject_stamp_late_ns)
 */
static void ptw_tp_stamp_start(void *data, PTW_MMAP_LOCK_ARGS)
{
	ptw_tp_stamp(&__tracepoint_mmap_lock_start_locking);
	if (write)
		ptw_inject_wait(READ_ONCE(ptw_inject_stamp_late_ns));
}
NOKPROBE_SYMBOL(ptw_tp_stamp_start);

/*
 * Not filtered on ptw_lock_tracking(), as the decision is: every wait is
 * tracked, so that flips all the time, and a stamp skipped while the
 * decision then tracks is a boundary lost (tried: 112-116 stamps lost a
 * run of the 7.3 smaps cross-check, the module up to 160 us from ftrace).
 */
static void ptw_tp_stamp_acquire(void *data, PTW_MMAP_LOCK_ACQ_ARGS)
{
	ptw_tp_stamp(&__tracepoint_mmap_lock_acquire_returned);
}
NOKPROBE_SYMBOL(ptw_tp_stamp_acquire);

static void ptw_tp_stamp_released(void *data, PTW_MMAP_LOCK_ARGS)
{
	ptw_tp_stamp(&__tracepoint_mmap_lock_released);
}
NOKPROBE_SYMBOL(ptw_tp_stamp_released);

static void ptw_tp_start_locking(void *data, PTW_MMAP_LOCK_ARGS)
{
	u64 spread, t = ptw_tp_time(&__tracepoint_mmap_lock_start_locking, &spread);

	ptw_lock_start(mm, write, t, spread);
}
NOKPROBE_SYMBOL(ptw_tp_start_locking);

/*
 * A walk that begins with its walker's hold (smaps: m_start) is begun
 * first, so that ptwalk_lock.c marks the waits the hold blocks with its
 * seq; with nothing in flight the event returns after a few atomic reads.
 */
static void ptw_tp_acquire_returned(void *data, PTW_MMAP_LOCK_ACQ_ARGS)
{
	u64 spread, t;

	if (!ptw_lock_tracking()) {
		ptw_tp_drop();
		return;
	}
	t = ptw_tp_time(&__tracepoint_mmap_lock_acquire_returned, &spread);
	if (success)
		ptw_walk_lock_taken((unsigned long)mm, t);
	ptw_lock_acquired(mm, write, success, t, spread);
}
NOKPROBE_SYMBOL(ptw_tp_acquire_returned);

static void ptw_tp_released(void *data, PTW_MMAP_LOCK_ARGS)
{
	u64 spread, t;

	if (!ptw_lock_tracking()) {
		ptw_tp_drop();
		return;
	}
	t = ptw_tp_time(&__tracepoint_mmap_lock_released, &spread);
	ptw_lock_released(mm, write, t, spread);
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
	if (reason != TLB_LOCAL_SHOOTDOWN && reason != TLB_LOCAL_MM_SHOOTDOWN &&
	    reason != TLB_REMOTE_SEND_IPI)
		return;
	ptw_walk_tlb_flush(reason == TLB_REMOTE_SEND_IPI);
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

	err = register_trace_prio_mmap_lock_start_locking(ptw_tp_start_locking,
							  NULL, PTW_TP_PRIO_LAST);
	if (err)
		return err;
	err = register_trace_prio_mmap_lock_acquire_returned(ptw_tp_acquire_returned,
							     NULL, PTW_TP_PRIO_LAST);
	if (err)
		goto err_start;
	err = register_trace_prio_mmap_lock_released(ptw_tp_released, NULL,
						     PTW_TP_PRIO_LAST);
	if (err)
		goto err_acquired;
	err = register_trace_prio_mmap_lock_start_locking(ptw_tp_stamp_start,
							  NULL, PTW_TP_PRIO_FIRST);
	if (err)
		goto err_released;
	err = register_trace_prio_mmap_lock_acquire_returned(ptw_tp_stamp_acquire,
							     NULL, PTW_TP_PRIO_FIRST);
	if (err)
		goto err_stamp_start;
	err = register_trace_prio_mmap_lock_released(ptw_tp_stamp_released,
						     NULL, PTW_TP_PRIO_FIRST);
	if (err)
		goto err_stamp_acquire;
	return 0;

err_stamp_acquire:
	unregister_trace_mmap_lock_acquire_returned(ptw_tp_stamp_acquire, NULL);
err_stamp_start:
	unregister_trace_mmap_lock_start_locking(ptw_tp_stamp_start, NULL);
err_released:
	unregister_trace_mmap_lock_released(ptw_tp_released, NULL);
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
		unregister_trace_mmap_lock_released(ptw_tp_stamp_released, NULL);
		unregister_trace_mmap_lock_acquire_returned(ptw_tp_stamp_acquire,
							    NULL);
		unregister_trace_mmap_lock_start_locking(ptw_tp_stamp_start,
							 NULL);
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
