/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ptwalk locks, private to ptwalk_lock.c, ptwalk_lock_wait.c and
 * ptwalk_lock_tp.c: the walker, waiter and holder records, the split
 * accumulators, and the three mmap_lock event handlers the tracepoint
 * probes call.  ptwalk_lock.c owns the walker and holder tables,
 * ptwalk_lock_wait.c the waiter table; a walker is passed to the wait
 * side by pointer, the tables themselves are not shared.
 */
#ifndef _PTWALK_LOCK_H
#define _PTWALK_LOCK_H

#include <linux/atomic.h>
#include <linux/minmax.h>
#include <linux/mm_types.h>
#include <linux/types.h>

#include "ptwalk.h"

enum { PTW_S_FREE = 0, PTW_S_BUSY, PTW_S_LIVE };

/*
 * One walk in progress (call-scoped: clear_refs, smaps_rollup,
 * pagemap_scan) or one open proc file (file-scoped: smaps, pagemap), as
 * the lock side sees it: who walks, the hold, and the lock side of the
 * current pass.  The fields other than state are written by the walking
 * task in its own context (hooked calls and its own mmap_lock events);
 * other tasks read them.
 */
struct ptw_walker {
	atomic_t state;
	unsigned long key;	/* opaque: struct file * or walker task */
	unsigned long mm_key;	/* opaque: target mm, compared only */
	unsigned long task_key;	/* opaque: task currently walking */
	atomic_t in_call;
	bool hold_used;
	u32 kind;
	pid_t target_tgid;
	/* the walker's hold of the target's mmap_lock */
	u64 lock_t0;		/* holding since (0: not holding) */
	u64 lock_t0_spread;	/* the probes of its acquire read the clock so apart */
	bool lock_write;
	u64 wait_t0;		/* the walker itself waits since */
	/* the pass: the walk its stalls are attributed to, its lock figures */
	u64 seq;		/* 0 until the pass begins */
	pid_t walker_pid;
	u32 lock_mode;
	u64 lock_hold_ns;
	u64 lock_holds;
	u64 lock_wait_ns;
	u64 hold_end_ns;	/* the pass's last walk hold ended */
	atomic64_t stalls;
	/*
	 * The walker's last ended hold (ptw_hold_record()): a wait whose slot
	 * the release's scan did not see reads it (ptw_wait_late_hold()).
	 */
	u64 last_end;		/* written last; 0: none */
	u64 prev_end;		/* the hold before it ended */
	u64 last_t0;		/* the hold began */
	u64 last_seq;		/* the walk's, 0: the hold was not the walk's */
	bool last_write;
};

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
	struct ptw_walker *act;	/* the walk slot that marked it */
	/*
	 * The split, added to by the holders as their holds end: ns in the
	 * low PTW_ACC_SHIFT bits, the slot's generation above them, so that
	 * an add meant for a previous waiter of a reused slot is refused.
	 */
	atomic64_t walker_held;
	atomic64_t others_held;
	/*
	 * of others_held, while the holder (mmap_lock for write) waited for
	 * the walk's VMA read lock: the walk's by the chain (ptwalk_vma.c)
	 */
	atomic64_t vma_chain;
	/*
	 * The spread of the probes' clock reads (ptwalk_lock_tp.c) at the
	 * boundaries walker_held has: its own start, the walk's acquires and
	 * releases within it (same generations as above).
	 */
	u64 t0_spread;
	atomic64_t spread;
	atomic_t split_lost;	/* a hold within the wait was not seen */
	u64 seen_end;		/* the last walker release that saw this wait */
	atomic_long_t seen_by;	/* its walker's slot (0: none yet) */
	/*
	 * The waiter's own (ptw_wait_late_hold()): the walk's holds that
	 * ended before its slot, their part of the wait; out: the part is
	 * not known (an earlier hold ended in the wait too), or one ended
	 * after every other probe of the start had read the clock.
	 */
	u64 late_hold;
	u64 late_seq;
	bool late_out;
};

#define PTW_ACC_SHIFT	48
#define PTW_ACC_NS	((1ULL << PTW_ACC_SHIFT) - 1)

/*
 * A task other than the walker holding the mmap_lock of an mm being walked
 * or waited for by a blocked waiter (to adopt smaps' m_start hold, and for
 * the split of the stalls).
 */
struct ptw_holder {
	atomic_long_t task_key;	/* 0 = free */
	unsigned long mm_key;
	u64 t0;
	bool write;
};

static inline bool ptw_excludes(bool hold_write, bool wait_write)
{
	return hold_write || wait_write;
}

static __always_inline bool ptw_live(struct ptw_walker *a)
{
	return atomic_read_acquire(&a->state) == PTW_S_LIVE;
}

/* raise a high-water mark of slots ever used to at least to */
static inline void ptw_hw_raise(atomic_t *hw, int to)
{
	int cur = atomic_read(hw);

	while (cur < to && !atomic_try_cmpxchg(hw, &cur, to))
		;
}

/* the same for a 64-bit mark (a clock reading) */
static inline void ptw_raise64(atomic64_t *v, s64 to)
{
	s64 cur = atomic64_read(v);

	while (cur < to && !atomic64_try_cmpxchg(v, &cur, to))
		;
}

/*
 * The part of a hold's acquire spread a wait from t0 can see.  The
 * acquire's probes read the clock from h0 to h0 + spread, so another view
 * may put the hold's start anywhere in that window: within the wait it
 * moves by all of it when the hold began in the wait, and by the window's
 * part after t0 when it began before (a probe of the walker's acquire that
 * ran 172 us late put the start inside a wait that began after h0:
 * 7.3, CI 11-29).
 */
static inline u64 ptw_start_spread(u64 h0, u64 spread, u64 t0)
{
	if (h0 >= t0)
		return spread;
	return h0 + spread > t0 ? h0 + spread - t0 : 0;
}

/* the hold a walker has of its target since t0 is the walk's (used by it) */
static __always_inline bool ptw_hold_is_walks(struct ptw_walker *a)
{
	return a->hold_used || atomic_read(&a->in_call) > 0;
}

/*
 * The walker of a ends its hold now: record it for the waits whose slots
 * the release's scan of the waiters will not see (published after it), then
 * a full barrier before that scan (ptw_wait_late_hold() pairs with it).
 */
static __always_inline void ptw_hold_record(struct ptw_walker *a, u64 now)
{
	WRITE_ONCE(a->prev_end, a->last_end);
	WRITE_ONCE(a->last_write, a->lock_write);
	WRITE_ONCE(a->last_t0, a->lock_t0);
	WRITE_ONCE(a->last_seq, ptw_hold_is_walks(a) ? READ_ONCE(a->seq) : 0);
	smp_wmb();	/* the fields before the end that covers them */
	WRITE_ONCE(a->last_end, now);
	smp_mb();	/* the record visible before we look at the waiters */
}

/* a new waiter in the slot: its split starts at 0, in a new generation */
static __always_inline void ptw_acc_init(atomic64_t *acc)
{
	u64 gen = ((u64)atomic64_read(acc) >> PTW_ACC_SHIFT) + 1;

	atomic64_set(acc, (s64)(gen << PTW_ACC_SHIFT));
}

/*
 * Add ns to the split acc of the waiter whose generation seen was read
 * before its fields; false only when the add was lost to contention.
 */
static __always_inline bool ptw_acc_add(atomic64_t *acc, u64 seen, u64 ns)
{
	unsigned int tries;

	for (tries = 0; tries < 16; tries++) {
		u64 v = (u64)atomic64_read(acc);
		u64 lo;

		if ((v >> PTW_ACC_SHIFT) != (seen >> PTW_ACC_SHIFT))
			return true;	/* the slot has a new waiter */
		lo = min_t(u64, (v & PTW_ACC_NS) + ns, PTW_ACC_NS);
		if ((u64)atomic64_cmpxchg(acc, (s64)v,
					  (s64)((v & ~PTW_ACC_NS) | lo)) == v)
			return true;
	}
	return false;
}

/* ptwalk_lock_wait.c: the waits, which holds block them, their split */
extern atomic_t ptw_nr_waiting;		/* waits in flight (fast paths) */
struct ptw_waiter *ptw_wait_begin(unsigned long me, unsigned long mmk,
				  bool write, u64 t, u64 spread);
bool ptw_mark_blocked(struct ptw_waiter *w, struct ptw_walker *a);
/* A walk's hold that ended, as a waiter that missed it reads it. */
struct ptw_ended_hold {
	unsigned long mm_key, task_key;
	u64 seq;		/* the walk's; 0: not the walk's hold */
	u64 t0, end;
	u64 prev_end;		/* the walker's hold before it ended */
	u32 kind;
	pid_t walker_pid, target_tgid;
	bool write;
};

bool ptw_mark_blocked_by(struct ptw_waiter *w, const struct ptw_ended_hold *h);
bool ptw_blocked_writer_waits(unsigned long mmk, struct ptw_waiter *self,
			      u64 seq, u64 t0);
void ptw_waits_mark(struct ptw_walker *a, bool write);
void ptw_waits_vma_chain(struct ptw_walker *a, unsigned long writer, u64 t0,
			 u64 t1);
void ptw_hold_end(unsigned long holder, unsigned long mmk, bool hold_write,
		  u64 h0, u64 now, struct ptw_walker *wa, u64 spread);
void ptw_hold_unseen(unsigned long holder, unsigned long mmk,
		     bool hold_write, u64 now);
bool ptw_blocked_on(unsigned long mmk);
void ptw_wait_end(unsigned long me, unsigned long mmk, u64 now,
		  bool success, u64 spread);

/*
 * ptwalk_lock_late.c: a walk's holds that ended before a waiter's slot was
 * visible (a live walker's last one, retired walks' last ones)
 */
void ptw_wait_late_hold(struct ptw_waiter *w, struct ptw_walker *a);
void ptw_retired_push(struct ptw_walker *a);
void ptw_wait_retired(struct ptw_waiter *w, unsigned long me);

/* ptwalk_lock.c: the three mmap_lock events (probes in ptwalk_lock_tp.c) */
/*
 * t: the event's time, read by our first probe of it; spread: how long
 * before this call that was (every other probe of it read the clock in
 * between)
 */
void ptw_lock_start(struct mm_struct *mm, bool write, u64 t, u64 spread);
bool ptw_lock_tracking(void);
void ptw_lock_acquired(struct mm_struct *mm, bool write, bool success,
		       u64 t, u64 spread);
void ptw_lock_released(struct mm_struct *mm, bool write, u64 t, u64 spread);

#endif /* _PTWALK_LOCK_H */
