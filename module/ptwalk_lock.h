/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ptwalk locks, private to ptwalk_lock.c and ptwalk_lock_tp.c: the waiter
 * and holder records, the split accumulators, and the three mmap_lock
 * event handlers the tracepoint probes call.
 */
#ifndef _PTWALK_LOCK_H
#define _PTWALK_LOCK_H

#include <linux/atomic.h>
#include <linux/minmax.h>
#include <linux/mm_types.h>
#include <linux/types.h>

#include "ptwalk.h"

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
	struct ptw_active *act;	/* the walk slot that marked it */
	/*
	 * The split, added to by the holders as their holds end: ns in the
	 * low PTW_ACC_SHIFT bits, the slot's generation above them, so that
	 * an add meant for a previous waiter of a reused slot is refused.
	 */
	atomic64_t walker_held;
	atomic64_t others_held;
	/*
	 * The spread of the probes' clock reads (ptwalk_lock_tp.c) at the
	 * boundaries walker_held has: its own start, the walk's acquires and
	 * releases within it (same generations as above).
	 */
	u64 t0_spread;
	atomic64_t spread;
	atomic_t split_lost;	/* a hold within the wait was not seen */
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

/* ptwalk_lock.c: the three mmap_lock events (probes in ptwalk_lock_tp.c) */
/*
 * t: the event's time, read by our first probe of it; spread: how long
 * before this call that was (every other probe of it read the clock in
 * between)
 */
void ptw_lock_start(struct mm_struct *mm, bool write, u64 t, u64 spread);
void ptw_lock_acquired(struct mm_struct *mm, bool write, bool success,
		       u64 t, u64 spread);
void ptw_lock_released(struct mm_struct *mm, bool write, u64 t, u64 spread);

#endif /* _PTWALK_LOCK_H */
