// SPDX-License-Identifier: GPL-2.0
/*
 * ptwalk core: per-walk bookkeeping, record rings, histograms and the
 * mmap_lock / tlb tracepoint probes.
 *
 * Every probe here runs in atomic context (kprobe handler or tracepoint
 * probe with preemption disabled), also on PREEMPT_RT, so only atomics and
 * raw spinlocks are used and nothing is allocated.  Kernel pointers (file,
 * task, mm) are kept as opaque unsigned long keys: they are compared, never
 * dereferenced after the call that supplied them, and never printed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/fs.h>
#include <linux/dcache.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/proc_fs.h>
#include <linux/sched.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/tracepoint.h>
#include <linux/mm_types.h>

#include "ptwalk.h"
#include "compat/ptwalk_compat.h"
#include "ptwalk_trace.h"

enum { PTW_S_FREE = 0, PTW_S_BUSY, PTW_S_LIVE };

/* One walk in progress (call-scoped) or one open proc file (file-scoped). */
struct ptw_active {
	atomic_t state;
	unsigned long key;	/* opaque: struct file * or walker task */
	unsigned long mm_key;	/* opaque: target mm, compared only */
	unsigned long task_key;	/* opaque: task currently walking */
	atomic_t in_call;
	bool call_scoped;
	bool started;
	bool hold_used;
	u32 kind;
	u32 lock_mode;
	u64 lock_t0;		/* walker holds the target mmap_lock since */
	u64 lock_hold_ns;
	u64 wait_t0;		/* walker waits for the target mmap_lock since */
	u64 lock_wait_ns;
	u32 holds;		/* lock acquisitions by the walker */
	u64 seq;
	u64 start_ns;
	u64 end_ns;
	u64 duration_ns;
	u64 calls;
	atomic64_t pte_tables;
	atomic64_t pte_slots;
	atomic64_t tlb_flushes;
	atomic64_t waiters;
	pid_t walker_pid;
	pid_t target_tgid;
	char walker_comm[TASK_COMM_LEN];
};

/* One task waiting for an mm's mmap_lock while a walk of that mm runs. */
struct ptw_waiter {
	atomic_long_t task_key;	/* 0 = free */
	unsigned long mm_key;
	u64 t0;
	u64 walk_seq;
	unsigned int walk_slot;
	u32 walk_holds;		/* walker's lock acquisitions at wait start */
	pid_t walker_pid;
	pid_t target_tgid;
	u32 kind;
	u32 write;
};

static struct ptw_active ptw_act[PTW_MAX_ACTIVE];
static atomic_t ptw_act_hw = ATOMIC_INIT(0);	/* slots ever used */
static atomic_t ptw_nr_live = ATOMIC_INIT(0);

static struct ptw_waiter ptw_wait[PTW_MAX_WAITERS];
static atomic_t ptw_wait_hw = ATOMIC_INIT(0);
static atomic_t ptw_nr_waiting = ATOMIC_INIT(0);

static atomic64_t ptw_seq = ATOMIC64_INIT(0);

static DEFINE_RAW_SPINLOCK(ptw_ring_lock);
static struct ptw_walk_rec ptw_walk_ring[PTW_WALK_RING];
static u64 ptw_walk_head;	/* records ever pushed since reset */
static struct ptw_stall_rec ptw_stall_ring[PTW_STALL_RING];
static u64 ptw_stall_head;

struct ptw_stats ptw_stats;

/* ---- target identification ------------------------------------------ */

/*
 * The walked process is named by the /proc directory the file lives in:
 * /proc/PID/<file> or /proc/PID/task/TID/<file>.  proc pid directories are
 * never renamed, and short names live inline in the dentry, so reading the
 * parent's name under RCU is safe.  The number is resolved in the pid
 * namespace of that proc mount; the global tgid is reported.
 */
static void ptw_target_from_file(const struct file *file, pid_t *tgid,
				 unsigned long *mm_key)
{
	struct dentry *parent;
	struct task_struct *task;
	const unsigned char *name;
	struct pid *pid;
	unsigned int i;
	int nr = 0;

	*tgid = 0;
	*mm_key = 0;
	if (!file)
		return;

	rcu_read_lock();
	parent = READ_ONCE(file->f_path.dentry->d_parent);
	name = READ_ONCE(parent->d_name.name);
	for (i = 0; i < 10 && name[i] >= '0' && name[i] <= '9'; i++)
		nr = nr * 10 + (name[i] - '0');
	if (i == 0 || i == 10 || name[i] != '\0')
		goto out;
	pid = find_pid_ns(nr, proc_pid_ns(file_inode(file)->i_sb));
	task = pid ? pid_task(pid, PIDTYPE_PID) : NULL;
	if (task) {
		*tgid = task_tgid_nr(task);
		*mm_key = (unsigned long)READ_ONCE(task->mm);
	}
out:
	rcu_read_unlock();
}

/* ---- active walk slots ---------------------------------------------- */

static inline unsigned int ptw_act_limit(void)
{
	return min_t(unsigned int, atomic_read(&ptw_act_hw), PTW_MAX_ACTIVE);
}

static inline bool ptw_live(struct ptw_active *a)
{
	return atomic_read_acquire(&a->state) == PTW_S_LIVE;
}

static int ptw_claim(enum ptw_kind kind, unsigned long key, const struct file *file,
		     bool call_scoped)
{
	struct ptw_active *a;
	int i, hw;

	for (i = 0; i < PTW_MAX_ACTIVE; i++) {
		a = &ptw_act[i];
		if (atomic_cmpxchg(&a->state, PTW_S_FREE, PTW_S_BUSY) ==
		    PTW_S_FREE)
			goto found;
	}
	atomic64_inc(&ptw_stats.walks_dropped);
	return -1;

found:
	a->key = key;
	a->task_key = (unsigned long)current;
	atomic_set(&a->in_call, 0);
	a->call_scoped = call_scoped;
	a->started = false;
	a->hold_used = false;
	a->kind = kind;
	a->lock_mode = 0;
	a->lock_t0 = 0;
	a->lock_hold_ns = 0;
	a->wait_t0 = 0;
	a->lock_wait_ns = 0;
	a->holds = 0;
	a->seq = 0;
	a->start_ns = 0;
	a->end_ns = 0;
	a->duration_ns = 0;
	a->calls = 0;
	atomic64_set(&a->pte_tables, 0);
	atomic64_set(&a->pte_slots, 0);
	atomic64_set(&a->tlb_flushes, 0);
	atomic64_set(&a->waiters, 0);
	a->walker_pid = 0;
	a->walker_comm[0] = '\0';
	ptw_target_from_file(file, &a->target_tgid, &a->mm_key);

	hw = atomic_read(&ptw_act_hw);
	while (hw < i + 1) {
		int old = atomic_cmpxchg(&ptw_act_hw, hw, i + 1);

		if (old == hw)
			break;
		hw = old;
	}
	atomic_inc(&ptw_nr_live);
	atomic_set_release(&a->state, PTW_S_LIVE);
	return i;
}

static struct ptw_active *ptw_find_key(unsigned long key)
{
	unsigned int i, n = ptw_act_limit();

	for (i = 0; i < n; i++) {
		struct ptw_active *a = &ptw_act[i];

		if (ptw_live(a) && READ_ONCE(a->key) == key)
			return a;
	}
	return NULL;
}

/* the walk the current task is inside of (a hooked call is running) */
static struct ptw_active *ptw_find_current_call(void)
{
	unsigned long me = (unsigned long)current;
	unsigned int i, n = ptw_act_limit();

	for (i = 0; i < n; i++) {
		struct ptw_active *a = &ptw_act[i];

		if (ptw_live(a) && READ_ONCE(a->task_key) == me &&
		    atomic_read(&a->in_call) > 0)
			return a;
	}
	return NULL;
}

/*
 * get_task_comm() takes task_lock(), a sleeping lock on PREEMPT_RT: copy
 * current->comm directly.  Only /proc/PID/comm writers race with this;
 * the copy is always NUL terminated.
 */
static void ptw_current_comm(char *buf)
{
	memcpy(buf, current->comm, TASK_COMM_LEN);
	buf[TASK_COMM_LEN - 1] = '\0';
}

static void ptw_push_walk(const struct ptw_walk_rec *r)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&ptw_ring_lock, flags);
	ptw_walk_ring[ptw_walk_head % PTW_WALK_RING] = *r;
	ptw_walk_head++;
	raw_spin_unlock_irqrestore(&ptw_ring_lock, flags);
}

static void ptw_push_stall(const struct ptw_stall_rec *r)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&ptw_ring_lock, flags);
	ptw_stall_ring[ptw_stall_head % PTW_STALL_RING] = *r;
	ptw_stall_head++;
	raw_spin_unlock_irqrestore(&ptw_ring_lock, flags);
}

static void ptw_begin(struct ptw_active *a, u64 now)
{
	a->started = true;
	a->seq = atomic64_inc_return(&ptw_seq);
	/* smaps: m_start() took the lock before the first show_smap() */
	a->start_ns = a->lock_t0 ? a->lock_t0 : now;
	a->walker_pid = task_pid_nr(current);
	ptw_current_comm(a->walker_comm);
	trace_walk_start(a->kind, a->seq, a->walker_pid, a->walker_comm,
			 a->target_tgid);
}

/* Emit the record of a finished walk and free its slot. */
static void ptw_finish(struct ptw_active *a, bool emit)
{
	struct ptw_walk_rec r;

	if (atomic_cmpxchg(&a->state, PTW_S_LIVE, PTW_S_BUSY) != PTW_S_LIVE)
		return;
	if (!emit || !a->started) {
		if (!a->started)
			atomic64_inc(&ptw_stats.walks_open_unread);
		goto free;
	}

	memset(&r, 0, sizeof(r));
	r.seq = a->seq;
	r.kind = a->kind;
	r.start_ns = a->start_ns;
	r.end_ns = max(a->end_ns, a->start_ns);
	r.duration_ns = a->duration_ns;
	r.pte_tables = atomic64_read(&a->pte_tables);
	r.pte_slots = atomic64_read(&a->pte_slots);
	r.lock_hold_ns = a->lock_hold_ns;
	r.lock_wait_ns = a->lock_wait_ns;
	r.lock_mode = a->lock_mode;
	r.tlb_flushes = atomic64_read(&a->tlb_flushes);
	r.calls = a->calls;
	r.stalls = atomic64_read(&a->waiters);
	r.walker_pid = a->walker_pid;
	r.target_tgid = a->target_tgid;
	memcpy(r.walker_comm, a->walker_comm, TASK_COMM_LEN);

	ptw_push_walk(&r);
	atomic64_inc(&ptw_stats.walks[r.kind]);
	atomic64_add(r.pte_slots, &ptw_stats.pte_slots[r.kind]);
	ptw_hist_add(&ptw_stats.walk_ns[r.kind], r.duration_ns);
	if (r.pte_slots)
		ptw_hist_add(&ptw_stats.ns_per_pte[r.kind],
			     div64_u64(r.duration_ns, r.pte_slots));
	if (r.lock_mode)
		ptw_hist_add(&ptw_stats.lock_hold_ns[r.kind], r.lock_hold_ns);
	trace_walk_end(r.kind, r.seq, r.walker_pid, r.walker_comm,
		       r.target_tgid, r.pte_tables, r.pte_slots,
		       r.duration_ns, r.lock_hold_ns, r.lock_mode,
		       r.tlb_flushes);
free:
	atomic_dec(&ptw_nr_live);
	atomic_set_release(&a->state, PTW_S_FREE);
}

/* ---- entry points used by the kprobes ------------------------------ */

int ptw_walk_open(enum ptw_kind kind, unsigned long key, const struct file *file,
		  bool call_scoped)
{
	return ptw_claim(kind, key, file, call_scoped);
}

void ptw_walk_close(unsigned long key, bool emit)
{
	struct ptw_active *a;

	if (!atomic_read(&ptw_nr_live))
		return;
	a = ptw_find_key(key);
	if (a && !a->call_scoped)
		ptw_finish(a, emit);
}

int ptw_call_enter(enum ptw_kind kind, unsigned long key, const struct file *file,
		   u64 now)
{
	struct ptw_active *a;
	int slot;

	if (kind == PTW_CLEAR_REFS || kind == PTW_PAGEMAP_SCAN) {
		slot = ptw_claim(kind, key, file, true);
		if (slot < 0)
			return -1;
	} else {
		a = ptw_find_key(key);
		if (!a || a->kind != kind) {
			/* file opened before the module was loaded */
			slot = ptw_claim(kind, key, file, false);
			if (slot < 0)
				return -1;
		} else {
			slot = a - ptw_act;
		}
	}
	a = &ptw_act[slot];
	WRITE_ONCE(a->task_key, (unsigned long)current);
	if (!a->started)
		ptw_begin(a, now);
	if (a->lock_t0)
		a->hold_used = true;
	a->calls++;
	atomic_inc(&a->in_call);
	return slot;
}

void ptw_call_exit(int slot, u64 t0, u64 now)
{
	struct ptw_active *a = &ptw_act[slot];

	if (!ptw_live(a))
		return;
	a->duration_ns += now - t0;
	a->end_ns = max(a->end_ns, now);
	atomic_dec(&a->in_call);
	if (a->call_scoped)
		ptw_finish(a, true);
}

void ptw_pte_range(unsigned long addr, unsigned long end, const void *walk_mm)
{
	struct ptw_active *a;
	unsigned long d;

	if (!atomic_read(&ptw_nr_live))
		return;
	a = ptw_find_current_call();
	if (!a)
		return;
	atomic64_inc(&a->pte_tables);
	if (end > addr)
		atomic64_add((end - addr) >> PAGE_SHIFT, &a->pte_slots);
	if (walk_mm)
		WRITE_ONCE(a->mm_key, (unsigned long)walk_mm);

	/*
	 * Busy-wait on the walk's own clock rather than ndelay(): udelay's
	 * loop calibration is unreliable in emulators, ktime is not.
	 */
	d = READ_ONCE(ptw_inject_delay_ns);
	if (d) {
		u64 until = ktime_get_ns() + d;

		while (ktime_get_ns() < until)
			cpu_relax();
	}
}

/* ---- mmap_lock and tlb tracepoint probes --------------------------- */

static void ptw_lock_acquired(struct mm_struct *mm, bool write, bool success)
{
	unsigned long me = (unsigned long)current;
	unsigned long mmk = (unsigned long)mm;
	u64 now = ktime_get_ns();
	unsigned int i, n;

	/* a waiter we were timing got (or gave up on) the lock */
	if (atomic_read(&ptw_nr_waiting)) {
		n = min_t(unsigned int, atomic_read(&ptw_wait_hw),
			  PTW_MAX_WAITERS);
		for (i = 0; i < n; i++) {
			struct ptw_waiter *w = &ptw_wait[i];
			struct ptw_stall_rec r;

			struct ptw_active *wa;
			bool live;

			if (atomic_long_read(&w->task_key) != me ||
			    w->mm_key != mmk)
				continue;
			/*
			 * A stall only if the walker held the lock at some
			 * point of this wait: it holds it now, took it since
			 * the wait began, or the walk has ended meanwhile
			 * (the wait began while the walker waited or held).
			 * Otherwise this task got the lock before the walker.
			 */
			wa = &ptw_act[w->walk_slot];
			live = ptw_live(wa) && READ_ONCE(wa->seq) == w->walk_seq;
			if (live && !READ_ONCE(wa->lock_t0) &&
			    READ_ONCE(wa->holds) == w->walk_holds) {
				atomic_dec(&ptw_nr_waiting);
				atomic_long_set_release(&w->task_key, 0);
				break;
			}
			if (live)
				atomic64_inc(&wa->waiters);
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
			r.success = success;
			atomic_dec(&ptw_nr_waiting);
			atomic_long_set_release(&w->task_key, 0);

			ptw_push_stall(&r);
			atomic64_inc(&ptw_stats.stalls[r.kind]);
			ptw_hist_add(&ptw_stats.stall_ns[r.kind], r.wait_ns);
			trace_stall(r.kind, r.walk_seq, r.waiter_pid,
				    r.waiter_comm, r.target_tgid, r.wait_ns,
				    r.write, r.walker_pid);
			break;
		}
	}

	if (!atomic_read(&ptw_nr_live))
		return;
	/* the walker took the target's lock: start timing the hold */
	n = ptw_act_limit();
	for (i = 0; i < n; i++) {
		struct ptw_active *a = &ptw_act[i];

		if (!ptw_live(a) || READ_ONCE(a->task_key) != me ||
		    READ_ONCE(a->mm_key) != mmk)
			continue;
		if (a->wait_t0) {
			a->lock_wait_ns += now - a->wait_t0;
			WRITE_ONCE(a->wait_t0, 0);
		}
		if (!success)
			continue;
		a->lock_t0 = now;
		a->holds++;
		a->hold_used = atomic_read(&a->in_call) > 0;
	}
}

static void ptw_lock_released(struct mm_struct *mm, bool write)
{
	unsigned long me = (unsigned long)current;
	unsigned long mmk = (unsigned long)mm;
	unsigned int i, n;
	u64 now;

	if (!atomic_read(&ptw_nr_live))
		return;
	now = ktime_get_ns();
	n = ptw_act_limit();
	for (i = 0; i < n; i++) {
		struct ptw_active *a = &ptw_act[i];

		if (!ptw_live(a) || READ_ONCE(a->task_key) != me ||
		    READ_ONCE(a->mm_key) != mmk || !a->lock_t0)
			continue;
		if (a->hold_used || atomic_read(&a->in_call) > 0) {
			a->lock_hold_ns += now - a->lock_t0;
			a->lock_mode |= write ? PTW_LOCK_WRITE : PTW_LOCK_READ;
			a->end_ns = max(a->end_ns, now);
		}
		a->lock_t0 = 0;
		a->hold_used = false;
	}
}

static void ptw_lock_start(struct mm_struct *mm, bool write)
{
	unsigned long me = (unsigned long)current;
	unsigned long mmk = (unsigned long)mm;
	struct ptw_active *walk = NULL;
	struct ptw_waiter *w;
	unsigned int i, n;
	u64 seq;
	int hw;

	if (!atomic_read(&ptw_nr_live))
		return;
	n = ptw_act_limit();
	for (i = 0; i < n; i++) {
		struct ptw_active *a = &ptw_act[i];

		if (!ptw_live(a) || READ_ONCE(a->mm_key) != mmk)
			continue;
		if (READ_ONCE(a->task_key) == me) {
			/* the walker itself waits for the target's lock */
			if (atomic_read(&a->in_call) > 0)
				a->wait_t0 = ktime_get_ns();
			continue;
		}
		if (!READ_ONCE(a->started))
			continue;
		/*
		 * Candidate: the walker holds the lock for the walk, or waits
		 * for it inside a walk call (then this waiter queues with it).
		 */
		if ((READ_ONCE(a->lock_t0) && (READ_ONCE(a->hold_used) ||
					       atomic_read(&a->in_call) > 0)) ||
		    READ_ONCE(a->wait_t0)) {
			walk = a;
			break;
		}
	}
	if (!walk)
		return;

	for (i = 0; i < PTW_MAX_WAITERS; i++) {
		w = &ptw_wait[i];
		if (atomic_long_cmpxchg(&w->task_key, 0, me) == 0)
			goto found;
	}
	atomic64_inc(&ptw_stats.waits_dropped);
	return;

found:
	seq = READ_ONCE(walk->seq);
	w->mm_key = mmk;
	w->walk_seq = seq;
	w->walk_slot = walk - ptw_act;
	w->walk_holds = READ_ONCE(walk->holds);
	w->walker_pid = READ_ONCE(walk->walker_pid);
	w->target_tgid = READ_ONCE(walk->target_tgid);
	w->kind = READ_ONCE(walk->kind);
	w->write = write;
	w->t0 = ktime_get_ns();
	/* the walk may have been recycled meanwhile: then it is not ours */
	if (!ptw_live(walk) || READ_ONCE(walk->seq) != seq) {
		atomic_long_set_release(&w->task_key, 0);
		return;
	}
	hw = atomic_read(&ptw_wait_hw);
	while (hw < (int)i + 1) {
		int old = atomic_cmpxchg(&ptw_wait_hw, hw, i + 1);

		if (old == hw)
			break;
		hw = old;
	}
	atomic_inc(&ptw_nr_waiting);
}

static void ptw_tp_start_locking(void *data, PTW_MMAP_LOCK_ARGS)
{
	ptw_lock_start(mm, write);
}

static void ptw_tp_acquire_returned(void *data, PTW_MMAP_LOCK_ACQ_ARGS)
{
	ptw_lock_acquired(mm, write, success);
}

static void ptw_tp_released(void *data, PTW_MMAP_LOCK_ARGS)
{
	ptw_lock_released(mm, write);
}

/*
 * tlb:tlb_flush.  Counted: flushes performed or initiated (IPI sent) by
 * the walker itself while it is inside a hooked walk call.  Flushes on
 * context switch are not walk costs and are skipped.
 */
static void ptw_tp_tlb_flush(void *data, int reason, unsigned long pages)
{
	struct ptw_active *a;

	if (reason == TLB_FLUSH_ON_TASK_SWITCH || !atomic_read(&ptw_nr_live))
		return;
	a = ptw_find_current_call();
	if (a)
		atomic64_inc(&a->tlb_flushes);
}

struct ptw_tp_hook ptw_tp_hooks[] = {
	{ .name = "mmap_lock_start_locking",
	  .probe = ptw_tp_start_locking },
	{ .name = "mmap_lock_acquire_returned",
	  .probe = ptw_tp_acquire_returned },
	{ .name = "mmap_lock_released",
	  .probe = ptw_tp_released },
	{ .name = "tlb_flush",
	  .probe = ptw_tp_tlb_flush },
};

const unsigned int ptw_nr_tp_hooks = ARRAY_SIZE(ptw_tp_hooks);

static void ptw_tp_lookup(struct tracepoint *tp, void *priv)
{
	unsigned int i;

	for (i = 0; i < ptw_nr_tp_hooks; i++)
		if (!strcmp(tp->name, ptw_tp_hooks[i].name))
			ptw_tp_hooks[i].tp = tp;
}

/* ---- snapshots and reset -------------------------------------------- */

size_t ptw_walk_ring_snapshot(struct ptw_walk_rec *buf, size_t max)
{
	unsigned long flags;
	u64 first, i;
	size_t n = 0;

	raw_spin_lock_irqsave(&ptw_ring_lock, flags);
	first = ptw_walk_head > PTW_WALK_RING ? ptw_walk_head - PTW_WALK_RING : 0;
	for (i = first; i < ptw_walk_head && n < max; i++)
		buf[n++] = ptw_walk_ring[i % PTW_WALK_RING];
	raw_spin_unlock_irqrestore(&ptw_ring_lock, flags);
	return n;
}

size_t ptw_stall_ring_snapshot(struct ptw_stall_rec *buf, size_t max)
{
	unsigned long flags;
	u64 first, i;
	size_t n = 0;

	raw_spin_lock_irqsave(&ptw_ring_lock, flags);
	first = ptw_stall_head > PTW_STALL_RING ?
		ptw_stall_head - PTW_STALL_RING : 0;
	for (i = first; i < ptw_stall_head && n < max; i++)
		buf[n++] = ptw_stall_ring[i % PTW_STALL_RING];
	raw_spin_unlock_irqrestore(&ptw_ring_lock, flags);
	return n;
}

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
	}
	atomic64_set(&ptw_stats.walks_dropped, 0);
	atomic64_set(&ptw_stats.waits_dropped, 0);
	atomic64_set(&ptw_stats.walks_open_unread, 0);

	raw_spin_lock_irqsave(&ptw_ring_lock, flags);
	ptw_walk_head = 0;
	ptw_stall_head = 0;
	raw_spin_unlock_irqrestore(&ptw_ring_lock, flags);
}

/* ---- init / exit ----------------------------------------------------- */

int ptw_core_init(void)
{
	unsigned int i;
	int nr = 0;

	for_each_kernel_tracepoint(ptw_tp_lookup, NULL);
	for (i = 0; i < ptw_nr_tp_hooks; i++) {
		struct ptw_tp_hook *h = &ptw_tp_hooks[i];

		if (!h->tp) {
			h->err = -ENOENT;
			pr_info("tracepoint %s: missing, hook disabled\n",
				h->name);
			continue;
		}
		h->err = tracepoint_probe_register(h->tp, h->probe, NULL);
		if (h->err) {
			pr_info("tracepoint %s: register failed (%d), hook disabled\n",
				h->name, h->err);
			continue;
		}
		h->attached = true;
		nr++;
		pr_info("tracepoint %s: attached\n", h->name);
	}
	return nr;
}

void ptw_core_exit(void)
{
	unsigned int i;

	for (i = 0; i < ptw_nr_tp_hooks; i++) {
		struct ptw_tp_hook *h = &ptw_tp_hooks[i];

		if (h->attached)
			tracepoint_probe_unregister(h->tp, h->probe, NULL);
		h->attached = false;
	}
	/* no probe of ours may still run once we return */
	tracepoint_synchronize_unregister();
}
