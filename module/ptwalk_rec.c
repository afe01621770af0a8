// SPDX-License-Identifier: GPL-2.0
/*
 * ptwalk records: the rings of finished walks and stalls, the counters and
 * histograms, and the probe miss total.  The bottom of the module: the
 * walk and lock files push into it, debugfs reads it, it calls none of
 * them.
 *
 * The push functions run in probe context (kprobe handler or tracepoint
 * probe, preemption disabled), also on PREEMPT_RT: a raw spinlock guards
 * the rings, nothing is allocated.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/kprobes.h>
#include <linux/sched.h>
#include <linux/spinlock.h>

#include "ptwalk.h"
#include "ptwalk_trace.h"

static DEFINE_RAW_SPINLOCK(ptw_ring_lock);
static struct ptw_walk_rec ptw_walk_ring[PTW_WALK_RING];
static u64 ptw_walk_head;	/* records ever pushed since reset */
static struct ptw_stall_rec ptw_stall_ring[PTW_STALL_RING];
static u64 ptw_stall_head;
static struct ptw_vma_wait_rec ptw_vma_wait_ring[PTW_VMA_WAIT_RING];
static u64 ptw_vma_wait_head;

struct ptw_stats ptw_stats;

void ptw_push_walk(const struct ptw_walk_rec *r)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&ptw_ring_lock, flags);
	ptw_walk_ring[ptw_walk_head % PTW_WALK_RING] = *r;
	ptw_walk_head++;
	raw_spin_unlock_irqrestore(&ptw_ring_lock, flags);
}
NOKPROBE_SYMBOL(ptw_push_walk);

void ptw_push_stall(const struct ptw_stall_rec *r)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&ptw_ring_lock, flags);
	ptw_stall_ring[ptw_stall_head % PTW_STALL_RING] = *r;
	ptw_stall_head++;
	raw_spin_unlock_irqrestore(&ptw_ring_lock, flags);
	atomic64_inc(&ptw_stats.stalls[r->kind]);
	ptw_hist_add(&ptw_stats.stall_ns[r->kind], r->wait_ns);
	trace_stall(r->kind, r->walk_seq, r->waiter_pid, r->waiter_comm,
		    r->target_tgid, r->wait_ns, r->write, r->walker_pid);
}
NOKPROBE_SYMBOL(ptw_push_stall);

void ptw_push_vma_wait(const struct ptw_vma_wait_rec *r)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&ptw_ring_lock, flags);
	ptw_vma_wait_ring[ptw_vma_wait_head % PTW_VMA_WAIT_RING] = *r;
	ptw_vma_wait_head++;
	raw_spin_unlock_irqrestore(&ptw_ring_lock, flags);
	if (r->behind_walk)
		atomic64_inc(&ptw_stats.vma_waits[r->kind]);
}
NOKPROBE_SYMBOL(ptw_push_vma_wait);

/* ---- probe misses ----------------------------------------------------- */

/*
 * The attached kprobes and kretprobes whose misses a walk record reports,
 * watched from registration to unregistration (ptwalk_hooks.c).  Entries
 * are published with a release of the count, so a probe reading the total
 * while hooks are still being registered sees whole entries only.
 */
#define PTW_MAX_WATCHED	32
static struct kprobe *ptw_watched_kp[PTW_MAX_WATCHED];
static struct kretprobe *ptw_watched_krp[PTW_MAX_WATCHED];
static unsigned int ptw_nr_watched_kp;
static unsigned int ptw_nr_watched_krp;

void ptw_rec_watch_kprobe(struct kprobe *kp)
{
	unsigned int n = ptw_nr_watched_kp;

	if (WARN_ON_ONCE(n >= PTW_MAX_WATCHED))
		return;
	ptw_watched_kp[n] = kp;
	smp_store_release(&ptw_nr_watched_kp, n + 1);	/* entry before count */
}

void ptw_rec_watch_kretprobe(struct kretprobe *krp)
{
	unsigned int n = ptw_nr_watched_krp;

	if (WARN_ON_ONCE(n >= PTW_MAX_WATCHED))
		return;
	ptw_watched_krp[n] = krp;
	smp_store_release(&ptw_nr_watched_krp, n + 1);	/* entry before count */
}

/* the probes are unregistered: none of them runs any more */
void ptw_rec_unwatch_all(void)
{
	WRITE_ONCE(ptw_nr_watched_kp, 0);
	WRITE_ONCE(ptw_nr_watched_krp, 0);
}

/* Sum of kprobe and kretprobe misses of the attached hooks. */
u64 ptw_missed_total(void)
{
	unsigned int i, nkrp, nkp;
	u64 n = 0;

	nkrp = smp_load_acquire(&ptw_nr_watched_krp);	/* count, then entries */
	for (i = 0; i < nkrp; i++)
		n += READ_ONCE(ptw_watched_krp[i]->nmissed) +
		     READ_ONCE(ptw_watched_krp[i]->kp.nmissed);
	nkp = smp_load_acquire(&ptw_nr_watched_kp);	/* count, then entries */
	for (i = 0; i < nkp; i++)
		n += READ_ONCE(ptw_watched_kp[i]->nmissed);
	return n;
}
NOKPROBE_SYMBOL(ptw_missed_total);

/* ---- snapshots and reset -------------------------------------------- */

/*
 * Copy at most PTW_SNAP_CHUNK records per hold of the ring lock, so no
 * reader keeps interrupts off for long; records overwritten between chunks
 * are skipped (the copy is oldest first, without duplicates).
 */
#define PTW_SNAP_CHUNK	32

#define PTW_RING_SNAPSHOT(fn, type, ring, head, size)			\
size_t fn(type *buf, size_t max)					\
{									\
	unsigned long flags;						\
	u64 i = 0, end, first, stop;					\
	size_t n = 0;							\
									\
	while (n < max) {						\
		raw_spin_lock_irqsave(&ptw_ring_lock, flags);		\
		end = head;						\
		first = end > (size) ? end - (size) : 0;		\
		if (i < first)						\
			i = first;					\
		stop = min_t(u64, end, i + PTW_SNAP_CHUNK);		\
		for (; i < stop && n < max; i++)			\
			buf[n++] = ring[i % (size)];			\
		raw_spin_unlock_irqrestore(&ptw_ring_lock, flags);	\
		if (i >= end)						\
			break;						\
		cond_resched();						\
	}								\
	return n;							\
}

PTW_RING_SNAPSHOT(ptw_walk_ring_snapshot, struct ptw_walk_rec, ptw_walk_ring,
		  ptw_walk_head, PTW_WALK_RING)
PTW_RING_SNAPSHOT(ptw_stall_ring_snapshot, struct ptw_stall_rec,
		  ptw_stall_ring, ptw_stall_head, PTW_STALL_RING)
PTW_RING_SNAPSHOT(ptw_vma_wait_ring_snapshot, struct ptw_vma_wait_rec,
		  ptw_vma_wait_ring, ptw_vma_wait_head, PTW_VMA_WAIT_RING)

static void ptw_hist_zero(struct ptw_hist *h)
{
	unsigned int i;

	for (i = 0; i < PTW_HIST_SLOTS; i++)
		atomic64_set(&h->slot[i], 0);
}

void ptw_reset(void)
{
	unsigned long flags;
	unsigned int k;

	for (k = 0; k < PTW_NR_KINDS; k++) {
		ptw_hist_zero(&ptw_stats.walk_ns[k]);
		ptw_hist_zero(&ptw_stats.ns_per_pte[k]);
		ptw_hist_zero(&ptw_stats.lock_hold_ns[k]);
		ptw_hist_zero(&ptw_stats.stall_ns[k]);
		atomic64_set(&ptw_stats.walks[k], 0);
		atomic64_set(&ptw_stats.pte_slots[k], 0);
		atomic64_set(&ptw_stats.stalls[k], 0);
		atomic64_set(&ptw_stats.vma_waits[k], 0);
	}
	atomic64_set(&ptw_stats.walks_dropped, 0);
	atomic64_set(&ptw_stats.waits_dropped, 0);
	atomic64_set(&ptw_stats.holders_dropped, 0);
	atomic64_set(&ptw_stats.failed_attempts, 0);
	atomic64_set(&ptw_stats.walks_open_unread, 0);
	atomic64_set(&ptw_stats.arg_faults, 0);
	atomic64_set(&ptw_stats.walks_missed, 0);
	atomic64_set(&ptw_stats.vma_waits_dropped, 0);
	atomic64_set(&ptw_stats.waits_unblocked, 0);
	atomic64_set(&ptw_stats.tp_stamps_lost, 0);
	atomic64_set(&ptw_stats.waits_marked_late, 0);
	atomic64_set(&ptw_stats.waits_split_late, 0);
	atomic64_set(&ptw_stats.waits_marked_retired, 0);

	raw_spin_lock_irqsave(&ptw_ring_lock, flags);
	ptw_walk_head = 0;
	ptw_stall_head = 0;
	ptw_vma_wait_head = 0;
	raw_spin_unlock_irqrestore(&ptw_ring_lock, flags);
}
